#!/usr/bin/env bash
# The todo example against the paths, processes and crashes a user's files meet: nothing is replaced, truncated or
# written by a command that only reads, every refusal is a typed error, and nothing acknowledged is lost.
# Usage: .ci/todo-files.sh PATH-TO-TODO
set -euo pipefail
todo="$1"
dir=$(mktemp -d)
chmod 755 "$dir"   # so that the unreadable-file check fails on the file, not on the folder
trap 'rm -rf "$dir"' EXIT
cd "$dir"
unset TODO_SESSION

# Runs todo, which must fail (not hang: 10 s at most) with a message containing $2; the rest are its arguments.
refused() {
  local expected="$1"; shift
  local status=0
  timeout 10 "$todo" "$@" > out.txt 2> err.txt || status=$?
  [ "$status" -eq 1 ] || { echo "todo $* exited $status, expected a refusal; stderr:"; cat err.txt; exit 1; } >&2
  grep -qF -- "$expected" err.txt || { echo "todo $*: expected '$expected' in:"; cat err.txt; exit 1; } >&2
}

echo "- special files are refused and stay what they were"
mkfifo fifo
for command in list add; do refused "is a FIFO, not a regular file" --session fifo $command x; done
[ -p fifo ]
mkdir folder && touch folder/inside
for command in list add; do refused "is a directory, not a regular file" --session folder $command x; done
[ -d folder ] && [ -e folder/inside ]
ln -s loop-b loop-a && ln -s loop-a loop-b
for command in list add; do refused "Cannot read session file" --session loop-a $command x; done
[ "$(readlink loop-a)" = loop-b ] && [ "$(readlink loop-b)" = loop-a ]
for command in list add; do refused "is a character device, not a regular file" --session /dev/null $command x; done
[ -c /dev/null ]

echo "- an unreadable file is an error, never an empty session"
"$todo" --session private.jsonl add "secret" > /dev/null
chmod 600 private.jsonl
cp private.jsonl private.copy
for command in list add; do
  setpriv --reuid=65534 --regid=65534 --clear-groups "$todo" --session "$dir/private.jsonl" $command x \
    > /dev/null 2> err.txt && { echo "todo $command read a file it may not read" >&2; exit 1; }
  grep -qF "Cannot read session file $dir/private.jsonl: Permission denied" err.txt \
    || { cat err.txt; exit 1; } >&2
done
cmp private.jsonl private.copy

echo "- a mistyped path says so and creates nothing"
for command in list history verify inspect; do refused "no session file at $dir/typo.jsonl yet" --session typo.jsonl $command; done
[ ! -e typo.jsonl ]

echo "- commands that read never write, even to drop a torn last line"
"$todo" --session s.jsonl add "one" > /dev/null
"$todo" --session s.jsonl add "two" > /dev/null
printf '{"k":"r","i":2,"t":1' >> s.jsonl   # a write cut short by a crash
cp s.jsonl s.copy
"$todo" --session s.jsonl list | grep -q "2. two"
"$todo" --session s.jsonl history > /dev/null
"$todo" --session s.jsonl verify | grep -q "every recorded state matched"
"$todo" --session s.jsonl inspect | grep -q "Wrote $dir/s.jsonl.html"
cmp s.jsonl s.copy
"$todo" --session s.jsonl add "three" > /dev/null   # a change drops the torn line, then appends
"$todo" --session s.jsonl list | grep -q "3. three"

echo "- inspect never writes over a session"
"$todo" --session notes.html add "a session named like a page" > /dev/null
cp notes.html notes.copy
"$todo" --session notes.html inspect | grep -q "Wrote $dir/notes.html.html"
cmp notes.html notes.copy
refused "notes.html is a session file: it was not written over" --session notes.html inspect --output notes.html
refused "s.jsonl is a session file: it was not written over" --session notes.html inspect --output s.jsonl
refused "is a FIFO, not a regular file" --session notes.html inspect --output fifo
[ -p fifo ]
cmp notes.html notes.copy

echo "- two processes adding at once: every acknowledged add is kept, every other one refused with the typed error"
for p in 1 2; do
  (
    for i in $(seq 50); do
      if "$todo" --session two.jsonl add "p$p-$i" > /dev/null 2>> "err$p.txt"; then echo "p$p-$i" >> acked.txt; fi
    done
  ) &
done
wait
acked=$(wc -l < acked.txt)
"$todo" --session two.jsonl list > list.txt
[ "$(grep -c '^\[ \]' list.txt)" -eq "$acked" ] || { echo "acknowledged $acked adds, the list has:"; cat list.txt; exit 1; } >&2
while read -r title; do grep -q " $title\$" list.txt || { echo "acknowledged add $title was lost" >&2; exit 1; }; done < acked.txt
refusals=$(cat err1.txt err2.txt | wc -l)
[ "$refusals" -eq $((100 - acked)) ]
[ "$refusals" -eq 0 ] || ! grep -v "is being changed by another todo; nothing was changed, try again" err1.txt err2.txt
"$todo" --session two.jsonl verify > /dev/null
echo "  $acked of 100 adds acknowledged, $refusals refused"

echo "- kill -9 while importing: every acknowledged add is on disk (.eachRecord)"
seq 1 20000 | sed 's/^/item /' > items.txt
"$todo" --session crash.jsonl import items.txt > imported.txt &
pid=$!
for _ in $(seq 300); do   # up to 30 s for 300 acknowledged adds
  [ "$(wc -l < imported.txt)" -ge 300 ] && break
  sleep 0.1
done
kill -9 "$pid"
wait "$pid" || true
acked=$(wc -l < imported.txt)
[ "$acked" -ge 300 ]
kept=$("$todo" --session crash.jsonl list | grep -c '^\[ \]')
[ "$kept" -ge "$acked" ] || { echo "acknowledged $acked adds before the kill, the session kept $kept" >&2; exit 1; }
echo "  killed after $acked acknowledged adds; the session kept $kept"
echo "todo files: ok"
