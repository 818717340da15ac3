#!/usr/bin/env bash
# The session inspector in a real browser: pages for known sessions, opened in headless Chromium, a dispatch
# selected by clicking its row, and the model, the field changes and a verification's divergence read back from
# the page. Screenshots are kept in .build/artifacts/.
set -euo pipefail
command -v chromium > /dev/null || { apt-get update -qq && apt-get install -y -qq chromium > /dev/null; }
swift build --product todo --product dispatchstore-inspect
bin=$(swift build --show-bin-path)
work=$(mktemp -d)
artifacts="$PWD/.build/artifacts"
mkdir -p "$artifacts"

# Opens PAGE at FRAGMENT (#click=N clicks row N) and writes the document as the page's script left it.
dom() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 \
    --dump-dom "file://$1$2" 2> /dev/null
}
shot() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=5000 \
    --window-size=1400,860 --screenshot="$3" "file://$1$2" 2> /dev/null > /dev/null
}
expect() {  # FILE PATTERN WHAT
  grep -q -- "$2" "$1" || { echo "inspector: expected $3 in $1" >&2; exit 1; }
}

# 1. A session the todo example records: the third dispatch marks "buy milk" done; the fourth fails.
export TODO_SESSION="$work/todo.jsonl"
"$bin/todo" add "buy milk" > /dev/null
"$bin/todo" add "walk the dog" > /dev/null
"$bin/todo" done 1 > /dev/null
"$bin/todo" done 7 2> /dev/null && { echo "done 7 must fail" >&2; exit 1; }
"$bin/todo" inspect --output "$work/todo.html" | grep -q "verify matched every state"
dom "$work/todo.html" "#click=3" > "$work/todo.dom"
expect "$work/todo.dom" '<h2 id="detail-title">Dispatch 3: complete(1)</h2>' "the clicked dispatch's title"
expect "$work/todo.dom" '<tr data-path="items\[0\].done" class=""><td>items\[0\].done</td><td class="before">false</td><td class="after">true</td></tr>' "its field change"
expect "$work/todo.dom" '"title"</span>: <span class="s">"buy milk"</span>' "the model after it"
expect "$work/todo.dom" '<div class="row selected' "the clicked row, selected"
expect "$work/todo.dom" 'data-dispatch="4"' "the failed dispatch's row"
expect "$work/todo.dom" '<span class="tag fail">failed</span>' "the failure's tag"
shot "$work/todo.html" "#click=3" "$artifacts/inspector-todo.png"

# 2. A session recorded by another build, which today's reducer re-runs differently: the divergence is shown.
python3 .ci/make-session.py diverging "$work/diverging.jsonl"
export TODO_SESSION="$work/diverging.jsonl"
"$bin/todo" inspect --output "$work/diverging.html" | grep -q "verify diverged"
dom "$work/diverging.html" "#click=3" > "$work/diverging.dom"
expect "$work/diverging.dom" '<div class="banner" id="banner">Verify: Record #2' "the divergence banner"
expect "$work/diverging.dom" '<tr class="diverged" data-path="items\[0\].done"><td>items\[0\].done</td><td class="before">false</td><td class="after">true</td></tr>' "the diverged field"
expect "$work/diverging.dom" '<span class="tag fail">diverged</span>' "the diverged dispatch's tag"
shot "$work/diverging.html" "#click=3" "$artifacts/inspector-divergence.png"
unset TODO_SESSION

# 3. 100,000 records: the page opens, and the last dispatch can be selected.
python3 .ci/make-session.py big 100000 "$work/big.jsonl"
"$bin/dispatchstore-inspect" "$work/big.jsonl" -o "$work/big.html"
dom "$work/big.html" "#click=100000" > "$work/big.dom"
expect "$work/big.dom" '<h2 id="detail-title">Dispatch 100000: complete(1)</h2>' "the last of 100,000 dispatches"
rows=$(grep -o 'class="row' "$work/big.dom" | wc -l)
[ "$rows" -lt 200 ] || { echo "inspector: $rows rows in the document; the timeline must draw only those in view" >&2; exit 1; }
echo "inspector: 100,000 records ready in $(grep -o 'data-ready-ms="[0-9]*"' "$work/big.dom" | tr -dc 0-9) ms," \
  "$rows rows in the document"
shot "$work/big.html" "#click=100000" "$artifacts/inspector-100k.png"
rm -rf "$work"
echo "inspector: screenshots in $artifacts"
