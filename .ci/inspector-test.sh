#!/usr/bin/env bash
# The session inspector in a real browser: pages for known sessions, opened in headless Chromium, a dispatch
# selected by clicking its row, and what the page shows read back from the document its script left: the model,
# the changes, a verification's divergence, undo moves and replaced branches, filters, an empty session, hostile
# strings and file names, a file that fails a check, and a script error. Screenshots are kept in .build/artifacts/.
set -euo pipefail
command -v chromium > /dev/null || { apt-get update -qq && apt-get install -y -qq chromium > /dev/null; }
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time > /dev/null; }
# Python's own interpreter, not a version manager's shim in front of it (pyenv's, on CI's machine): the shim took
# 0.15 s a call, and this test makes over 300 calls.
py=$(python3 -c 'import sys; print(sys.executable)')
[ -x "$py" ] || py=$(command -v python3)
python3() { "$py" -S "$@"; }  # -S: the standard library only, and no site start-up (0.09 s a call)
# One product a build: given two, `swift build` builds the last only.
swift build --product todo
swift build --product dispatchstore-inspect
bin=$(swift build --show-bin-path)
work=$(mktemp -d)
# One headless Chromium for every page (.ci/browser.py), ended with the script: starting one for each page took most
# of the four seconds a page cost (two and a half minutes for the test).
mkfifo "$work/browser-ready"
# Not through the function above: in the background, a function runs in a subshell, and `$!` would be the subshell's
# process, which the trap ends, leaving Python and its Chromium running after the test.
"$py" -S "$PWD/.ci/browser.py" serve "$work/browser.sock" > "$work/browser-ready" &
browser=$!
trap 'kill "$browser" 2> /dev/null || true; wait "$browser" 2> /dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
read -r -t 60 ready < "$work/browser-ready" || true
[ "${ready:-}" = ready ] || { echo "inspector: the browser did not start within 60 s" >&2; exit 1; }
export INSPECTOR_BROWSER_SOCKET="$work/browser.sock"
artifacts="$PWD/.build/artifacts"
mkdir -p "$artifacts"

url() {  # PATH: its file URL, percent-encoded
  python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).as_uri())' "$1"
}
# Opens PAGE at FRAGMENT (#click=N clicks the row of dispatch N) and writes the document as the page's script left
# it, after 5,000 ms of virtual time (as Chromium's --virtual-time-budget).
dom() {
  python3 .ci/browser.py dom "$(url "$1")$2"
}
# Opens two pages at FRAGMENT: PAGE1 PAGE2 FRAGMENT OUT1 OUT2.
dom2() {
  dom "$1" "$3" > "$4"
  dom "$2" "$3" > "$5"
}
# Writes a 1400x860 screenshot of PAGE at FRAGMENT to PNG: PAGE FRAGMENT PNG.
shot() {
  python3 .ci/browser.py shot "$(url "$1")$2" "$3"
}
fail() { echo "inspector: $*" >&2; exit 1; }
expect() {  # FILE PATTERN WHAT
  grep -q -- "$2" "$1" || fail "expected $3 in $1"
}
refuse() {  # FILE PATTERN WHAT: the document, styles and script included
  ! grep -q -- "$2" "$1" || fail "did not expect $3 in $1"
}

# Reads a dumped document with Python's HTML parser: `rows DOM` prints each timeline row as
# "NUMBER|CLASSES|ACTION|TAGS"; `text DOM ID` prints the text of the element with that id (or the first of that
# tag); `hostile DOM NAME TITLE...` checks a page
# of a session named NAME whose todos are TITLE...
cat > "$work/dom.py" << 'EOF'
import html.parser, json, sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.children = tag, dict(attrs), []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def classes(self):
        return (self.attrs.get("class") or "").split()


class Parser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root, self.stack, self.comments = Node("#document", []), [], 0

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs)
        (self.stack[-1] if self.stack else self.root).children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        (self.stack[-1] if self.stack else self.root).children.append(Node(tag, attrs))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop().tag != tag:
            pass

    def handle_data(self, data):
        (self.stack[-1] if self.stack else self.root).children.append(data)

    def handle_comment(self, data):
        self.comments += 1


def parse(path):
    parser = Parser()
    parser.feed(open(path, encoding="utf-8").read())
    return parser


def by_id(root, identifier):
    return next((n for n in root.walk() if n.attrs.get("id") == identifier), None)


def rows(root):
    for node in root.walk():
        if "row" in node.classes():
            part = lambda cls: next((n for n in node.walk() if cls in n.classes()), Node("", []))
            tags = " ".join(n.text() for n in part("tags").walk() if "tag" in n.classes())
            number = node.attrs.get("data-dispatch") or "move " + node.attrs.get("data-move", "?")
            yield number, " ".join(node.classes()), part("num").text(), part("act").text(), tags


def fail(message):
    sys.exit("inspector: " + message)


command, path = sys.argv[1], sys.argv[2]
parsed = parse(path)
root = parsed.root
if command == "rows":
    for number, classes, label, action, tags in rows(root):
        # A dispatch's row is labelled with its number, which opens it: one numbering.
        if not number.startswith("move") and label != number:
            fail("the row of dispatch %s is labelled %s" % (number, label))
        print("|".join([number, classes, action, tags]))
elif command == "text":
    node = by_id(root, sys.argv[3]) or next((n for n in root.walk() if n.tag == sys.argv[3]), None)
    print(node.text() if node else "(no element %s)" % sys.argv[3])
elif command == "hostile":
    name, titles = sys.argv[3], sys.argv[4:]
    body = next(n for n in root.walk() if n.tag == "body")
    if body.attrs.get("data-state") != "ready":
        failure = by_id(root, "failure")
        fail("the page is %s, not ready: %s" % (body.attrs.get("data-state"), failure.text() if failure else ""))
    # The structure is the template's: its elements are there, and nothing else became markup.
    for identifier in ["summary", "overview", "timeline", "filter", "count", "rows", "spacer", "detail",
                       "detail-title", "detail-changes", "detail-models"]:
        if by_id(root, identifier) is None:
            fail("no element #" + identifier)
    scripts = [n for n in root.walk() if n.tag == "script"]
    if len(scripts) != 2 or by_id(root, "session") is not None:
        fail("%d script elements, the session data's still there: %s" % (len(scripts), by_id(root, "session")))
    if parsed.comments:
        fail("%d comments in the document" % parsed.comments)
    allowed = {"#document", "html", "head", "meta", "title", "style", "script", "body", "header", "h1", "small",
               "div", "canvas", "main", "section", "input", "span", "button", "b", "h2", "h3", "table", "tbody",
               "tr", "th", "td", "details", "summary", "pre"}
    unexpected = {n.tag for n in root.walk()} - allowed
    if unexpected:
        fail("unexpected elements: %s" % unexpected)
    # Each string is text where it belongs: the title, the heading, the rows, the models.
    title = next(n for n in root.walk() if n.tag == "title").text()
    if title != name + " · DispatchStore session":
        fail("the title is %r" % title)
    heading = next(n for n in root.walk() if n.tag == "h1").text()
    if heading != name + " DispatchStore session":
        fail("the heading is %r" % heading)
    actions = [action for _, _, _, action, _ in rows(root)]
    expected = ["add(%s)" % json.dumps(t, ensure_ascii=False) for t in titles]
    if actions != expected:
        fail("the rows show %r, not %r" % (actions, expected))
    models = by_id(root, "detail-models").text()
    for t in titles:
        if '"title": %s' % json.dumps(t, ensure_ascii=False) not in models:
            fail("the model does not show the title %r: %r" % (t, models))
    if by_id(root, "detail-title").text() != "Dispatch %d: %s" % (len(titles), expected[-1]):
        fail("the detail is %r" % by_id(root, "detail-title").text())
    print("inspector: %d hostile titles and the file name are text where they belong" % len(titles))
EOF
rows() { python3 "$work/dom.py" rows "$1"; }
text() { python3 "$work/dom.py" text "$1" "$2"; }

# 1. A session the todo example records: the third dispatch marks "buy milk" done; the fourth fails.
export TODO_SESSION="$work/todo.jsonl"
"$bin/todo" add "buy milk" > /dev/null
"$bin/todo" add "walk the dog" > /dev/null
"$bin/todo" done 1 > /dev/null
"$bin/todo" done 7 2> /dev/null && fail "done 7 must fail"
"$bin/todo" inspect --output "$work/todo.html" | grep -q "verify matched every state"
dom "$work/todo.html" "#click=3" > "$work/todo.dom"
expect "$work/todo.dom" '<h2 id="detail-title">Dispatch 3: complete(1)</h2>' "the clicked dispatch's title"
expect "$work/todo.dom" '<tr data-path="items\[0\].done" class=""><td>items\[0\].done</td><td class="before">false</td><td class="after">true</td></tr>' "its field change"
expect "$work/todo.dom" '"title"</span>: <span class="s">"buy milk"</span>' "the model after it"
rows "$work/todo.dom" > "$work/todo.rows"
expect "$work/todo.rows" '^3|row selected|complete(1)|todos$' "the clicked row, selected"
expect "$work/todo.rows" '^4|row failed|complete(7)|todos failed cursor$' "the failed dispatch's row, at the cursor"
shot "$work/todo.html" "#click=3" "$artifacts/inspector-todo.png"

# 2. A session recorded by another build, which today's reducer re-runs differently: the divergence is shown.
python3 .ci/make-session.py diverging "$work/diverging.jsonl"
export TODO_SESSION="$work/diverging.jsonl"
"$bin/todo" inspect --output "$work/diverging.html" | grep -q "verify diverged"
dom "$work/diverging.html" "#click=3" > "$work/diverging.dom"
expect "$work/diverging.dom" '<div class="banner" id="banner">Verify (dispatch 3): Record #2' "the divergence banner"
expect "$work/diverging.dom" '<tr class="diverged" data-path="items\[0\].done"><td>items\[0\].done</td><td class="before">false</td><td class="after">true</td></tr>' "the diverged field"
expect "$work/diverging.dom" '<span class="tag fail">diverged</span>' "the diverged dispatch's tag"
shot "$work/diverging.html" "#click=3" "$artifacts/inspector-divergence.png"
unset TODO_SESSION

# 3. Undo and redo, a dispatch replaced after an undo, one undone at the end, a failure and a cancellation
#    (.ci/make-session.py story numbers them): each is in the timeline, marked, and the numbers are one scheme.
python3 .ci/make-session.py story "$work/story.jsonl"
"$bin/dispatchstore-inspect" "$work/story.jsonl" -o "$work/story.html"
dom "$work/story.html" "#click=5" > "$work/story.dom"
rows "$work/story.dom" > "$work/story.rows"
cat > "$work/story.expected" << 'EOF'
1|row|add("buy milk")|todos
2|row|add("walk the dog")|todos
3|row|complete(1)|todos
4|row failed|complete(7)|todos failed
5|row selected replaced cancelled|add("call mum")|todos cancelled replaced
move 1|row move|Undo to record #2 (from record #4)|undo
move 2|row move|Redo to record #3 (from record #2)|redo
6|row|add("water the plants")|todos cursor
7|row undone|add("read a book")|todos undone
move 3|row move|Undo to record #4 (from record #5)|undo
EOF
diff "$work/story.expected" "$work/story.rows" || fail "the story's timeline differs (above)"
expect "$work/story.dom" '<h2 id="detail-title">Dispatch 5: add("call mum")</h2>' "row 5 opening dispatch 5"
note="Undone, then replaced by dispatch 6 (record #4): it is no longer in the history. The models below are those"
[ "$(text "$work/story.dom" detail-replaced)" = "$note it left at the time." ] \
  || fail "the replaced dispatch's note: $(text "$work/story.dom" detail-replaced)"
# The models as that branch left them: without the item of the dispatch that replaced it.
grep -q '"walk the dog"' <<< "$(text "$work/story.dom" detail-models)" || fail "the replaced branch's model"
! grep -q '"water the plants"' <<< "$(text "$work/story.dom" detail-models)" || fail "the model of a later branch"
shot "$work/story.html" "#click=5" "$artifacts/inspector-undo.png"
dom "$work/story.html" "#move=1" > "$work/move.dom"
[ "$(text "$work/move.dom" detail-title)" = "↶ Undo to record #2 (from record #4)" ] || fail "the move's title"
note="Undid dispatches 4 and 5: their records stay in the file until a new dispatch replaces them."
[ "$(text "$work/move.dom" detail-move)" = "$note" ] \
  || fail "the move's note: $(text "$work/move.dom" detail-move)"
for number in 1 4 6 7; do
  dom "$work/story.html" "#click=$number" > "$work/click.dom"
  opened=$(text "$work/click.dom" detail-title)
  [[ "$opened" == "Dispatch $number: "* ]] || fail "the row of dispatch $number opened $opened"
done
# Filters: by state, as words in the filter (or by clicking a summary chip, which fills it in).
# Format 3: the same story with its todo list in list forms (whole, or the changes from the previous record line)
# shows the same rows, changes and models for every dispatch and move.
python3 .ci/make-session.py lists "$work/lists.jsonl"
"$bin/dispatchstore-inspect" "$work/lists.jsonl" -o "$work/lists.html"
grep -q '"~set"' "$work/lists.jsonl" || fail "the lists story holds no list changes"
for fragment in "#click=1" "#click=2" "#click=3" "#click=4" "#click=5" "#click=6" "#click=7" "#move=1" "#move=3"; do
  dom2 "$work/story.html" "$work/lists.html" "$fragment" "$work/story-click.dom" "$work/lists-click.dom"
  [ "$(rows "$work/lists-click.dom")" = "$(rows "$work/story-click.dom")" ] || fail "list forms: rows differ at $fragment"
  for part in detail-title detail-changes detail-models; do
    [ "$(text "$work/lists-click.dom" $part)" = "$(text "$work/story-click.dom" $part)" ] \
      || fail "list forms: $part differs at $fragment: $(text "$work/lists-click.dom" $part)"
  done
done
grep -q '"walk the dog"' <<< "$(text "$work/lists-click.dom" detail-models)" || fail "the lists story's models"
# Its read line: dispatch 3 read the todos as record #1 left them; the version 2 twin has none.
dom2 "$work/story.html" "$work/lists.html" "#click=3" "$work/story-click.dom" "$work/lists-click.dom"
expect "$work/lists-click.dom" '<tr><td>todos</td><td>todos</td><td>#1</td></tr>' "dispatch 3's read"
refuse "$work/story-click.dom" 'id="detail-reads"' "a read in the version 2 story"
echo "inspector: a format 3 session with list forms shows what its version 2 twin shows"
# Lists inside the elements of lists (an outline's sections, their rows, the rows' tags): every list in its list form,
# a changed element's lists as the changes from the element it replaces; the page shows what the version 2 twin shows.
for kind in outline outlinelists; do
  python3 .ci/make-session.py $kind "$work/$kind.jsonl"
  "$bin/dispatchstore-inspect" "$work/$kind.jsonl" -o "$work/$kind.html"
done
grep -q '"rows":{"~set":\[\[11,{"done":true,"id":11,"tags":{"~order"' "$work/outlinelists.jsonl" \
  || fail "the outline holds no list changes inside a changed element"
for fragment in "#click=2" "#click=4" "#move=1" "#click=6" "#click=7" "#click=8"; do
  dom2 "$work/outline.html" "$work/outlinelists.html" "$fragment" "$work/outline-click.dom" "$work/outlinelists-click.dom"
  [ "$(rows "$work/outlinelists-click.dom")" = "$(rows "$work/outline-click.dom")" ] \
    || fail "nested list forms: rows differ at $fragment"
  for part in detail-title detail-changes detail-models; do
    [ "$(text "$work/outlinelists-click.dom" $part)" = "$(text "$work/outline-click.dom" $part)" ] \
      || fail "nested list forms: $part differs at $fragment: $(text "$work/outlinelists-click.dom" $part)"
  done
done
grep -q '"write report"' <<< "$(text "$work/outlinelists-click.dom" detail-models)" || fail "the outline's models"
# The same with the model the list of sections itself (its forms' paths start with "~all" or "~set").
for kind in outlineroot outlinerootlists; do
  python3 .ci/make-session.py $kind "$work/$kind.jsonl"
  "$bin/dispatchstore-inspect" "$work/$kind.jsonl" -o "$work/$kind.html"
done
grep -q '"l":\[\["~set",0,1,"rows","~set",0,1,"tags"\]' "$work/outlinerootlists.jsonl" \
  || fail "the root outline holds no list changes inside a changed element"
for fragment in "#click=4" "#click=7"; do
  dom2 "$work/outlineroot.html" "$work/outlinerootlists.html" "$fragment" "$work/outline-click.dom" "$work/outlinelists-click.dom"
  for part in detail-changes detail-models; do
    [ "$(text "$work/outlinelists-click.dom" $part)" = "$(text "$work/outline-click.dom" $part)" ] \
      || fail "nested list forms of a list model: $part differs at $fragment: $(text "$work/outlinelists-click.dom" $part)"
  done
done
grep -q '"green"' <<< "$(text "$work/outlinelists-click.dom" detail-models)" || fail "the root outline's models"
echo "inspector: lists inside the elements of lists show what their version 2 twin shows"
# Ids past 2^53 (64-bit ids), which a double rounds (2^53 + 3 and 2^53 + 4 are one double): the list forms rebuild
# what the version 2 twin shows, and both show the ids' exact digits, in models, changes and actions.
for kind in bigstory biglists; do
  python3 .ci/make-session.py $kind "$work/$kind.jsonl"
  "$bin/dispatchstore-inspect" "$work/$kind.jsonl" -o "$work/$kind.html"
done
for fragment in "#click=3" "#click=7" "#move=3"; do
  name=${fragment//[#=]/}
  dom2 "$work/bigstory.html" "$work/biglists.html" "$fragment" "$work/bigstory-$name.dom" "$work/biglists-$name.dom"
  [ "$(rows "$work/biglists-$name.dom")" = "$(rows "$work/bigstory-$name.dom")" ] \
    || fail "ids past 2^53: rows differ at $fragment"
  for part in detail-title detail-changes detail-models; do
    [ "$(text "$work/biglists-$name.dom" $part)" = "$(text "$work/bigstory-$name.dom" $part)" ] \
      || fail "ids past 2^53: $part differs at $fragment: $(text "$work/biglists-$name.dom" $part)"
  done
done
for id in 9007199254740993 9007199254740994 9007199254740995 9007199254740996; do
  grep -q "\"id\": $id," <<< "$(text "$work/biglists-click7.dom" detail-models)" || fail "id $id in the models"
done
grep -q "^3|.*|complete(9007199254740993)|" <<< "$(rows "$work/biglists-click7.dom")" || fail "the action's id, exact"
grep -q "items\[0\].done" <<< "$(text "$work/biglists-click3.dom" detail-changes)" || fail "the change of dispatch 3"
echo "inspector: ids past 2^53 show exact, in list forms as in whole models"

filtered() {  # FILTER: the rows it leaves, one line
  dom "$work/story.html" "#filter=$1" > "$work/filter.dom"
  rows "$work/filter.dom" | cut -d'|' -f1 | paste -sd, -
}
[ "$(filtered failed)" = "4" ] || fail "filtering for failed finds $(filtered failed)"
[ "$(filtered cancelled)" = "5" ] || fail "filtering for cancelled finds $(filtered cancelled)"
[ "$(filtered replaced)" = "5" ] || fail "filtering for replaced finds $(filtered replaced)"
[ "$(filtered undone)" = "5,7" ] || fail "filtering for undone finds $(filtered undone)"
[ "$(filtered move)" = "move 1,move 2,move 3" ] || fail "filtering for moves finds $(filtered move)"
[ "$(filtered 'todos failed')" = "4" ] || fail "filtering for two words finds $(filtered 'todos failed')"
[ "$(text "$work/filter.dom" count)" = "1 of 7 dispatches" ] || fail "the count: $(text "$work/filter.dom" count)"
dom "$work/story.html" "#filter=failed" > "$work/filter.dom"
expect "$work/filter.dom" '<button class="chip fail active" data-filter="failed"' "the failed chip, active"
shot "$work/story.html" "#filter=cancelled" "$artifacts/inspector-filter.png"

# 4. Hostile strings: todo titles and a session file name that end or escape a script element, the old title
#    placeholder, quotes, an ampersand, U+2028 and U+2029 (a file name cannot hold "/", so no "</script>" there).
ls=$'\xe2\x80\xa8' ps=$'\xe2\x80\xa9'
titles=('<!--<script>' '</script><script>document.body.remove()</script>' '<!--TITLE-->' 'say "hi"' "it's"
  'salt & pepper' "line${ls}separator" "paragraph${ps}separator" "all: <!--<script></script>\"'&${ls}${ps}")
name="hostile <!--<script> <!--TITLE--> \"q\" 'a' & ${ls}${ps}.jsonl"
for title in "${titles[@]}"; do "$bin/todo" --session "$work/$name" add "$title" > /dev/null; done
# The page beside the session, under its name: `todo inspect` writes SESSION.html.
"$bin/todo" --session "$work/$name" inspect | grep -q "verify matched every state"
dom "$work/$name.html" "#click=${#titles[@]}" > "$work/hostile.dom"
python3 "$work/dom.py" hostile "$work/hostile.dom" "$name" "${titles[@]}"
"$bin/dispatchstore-inspect" "$work/$name" -o "$work/hostile.html"
cmp -s "$work/$name.html" "$work/hostile.html" || fail "the command and the todo example wrote different pages"
shot "$work/$name.html" "#click=${#titles[@]}" "$artifacts/inspector-hostile.png"

# 5. A line whose hash is valid but which is not JSON (re-hashed after an edit): both commands fail, naming it,
#    and the page written shows the error, not a blank page, nor "no dispatches".
python3 .ci/make-session.py forged "$work/forged.jsonl"
"$bin/dispatchstore-inspect" "$work/forged.jsonl" -o "$work/forged.html" 2> "$work/forged.err" \
  && fail "dispatchstore-inspect must fail on a forged line"
error="Line 6 is corrupt: not JSON: expected a value at column 132"
expect "$work/forged.err" "^dispatchstore-inspect: $error$" "the error"
"$bin/dispatchstore-inspect" "$work/forged.jsonl" > "$work/forged.out" 2> /dev/null \
  && fail "dispatchstore-inspect must fail on a forged line, also to standard output"
[ ! -s "$work/forged.out" ] || fail "a page went to standard output for a forged file"
"$bin/todo" --session "$work/forged.jsonl" inspect --output "$work/forged-todo.html" 2> "$work/forged-todo.err" \
  && fail "todo inspect must fail on a forged line"
# todo reads the records to restore the list, before it makes the page: its decoder names the line too.
expect "$work/forged-todo.err" "Line 6 is corrupt" "todo's error"
dom "$work/forged.html" "" > "$work/forged.dom"
expect "$work/forged.dom" '<body data-state="error"' "the page's error state"
[ "$(text "$work/forged.dom" page-error)" = "The session file failed a check$error" ] \
  || fail "the page's error: $(text "$work/forged.dom" page-error)"
! grep -q "No dispatches" <<< "$(text "$work/forged.dom" main)" || fail "an empty session's message on a broken page"
shot "$work/forged.html" "" "$artifacts/inspector-forged.png"

# 6. Any error of the page's script is shown: session data that is not JSON, and data that makes rendering throw.
python3 - "$work/story.html" "$work/broken-json.html" "$work/broken-render.html" << 'EOF'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
start = page.index('<script type="application/json" id="session">')
data = page.index('{"title":', start)
open(sys.argv[2], "w", encoding="utf-8").write(page[:data] + '{"title":,' + page[data + 9:])
lines = page.index('"lines":[', start)
open(sys.argv[3], "w", encoding="utf-8").write(page[:lines] + '"lines":7,"unused":[' + page[lines + 9:])
EOF
dom "$work/broken-json.html" "" > "$work/broken.dom"
expect "$work/broken.dom" '<body data-state="error"' "the error state of a page whose data is not JSON"
grep -q "^This page failedThe page's session data is not valid JSON" <<< "$(text "$work/broken.dom" page-error)" \
  || fail "the page's error: $(text "$work/broken.dom" page-error)"
dom "$work/broken-render.html" "" > "$work/broken.dom"
expect "$work/broken.dom" '<body data-state="error"' "the error state of a page whose script threw"
grep -q "^This page failedTypeError: " <<< "$(text "$work/broken.dom" page-error)" \
  || fail "the page's error: $(text "$work/broken.dom" page-error)"
shot "$work/broken-render.html" "" "$artifacts/inspector-script-error.png"

# 7. An empty session says so, and is not taken for a broken one.
python3 .ci/make-session.py empty "$work/empty.jsonl"
"$bin/dispatchstore-inspect" "$work/empty.jsonl" -o "$work/empty.html"
dom "$work/empty.html" "" > "$work/empty.dom"
expect "$work/empty.dom" '<body data-state="empty"' "the empty state"
note="This session has no record or move yet, only 1 snapshot."
[ "$(text "$work/empty.dom" empty-session)" = "No dispatches recorded$note" ] \
  || fail "the empty session's message: $(text "$work/empty.dom" empty-session)"
refuse "$work/empty.dom" 'id="page-error"' "an error on an empty session's page"
refuse "$work/empty.dom" '<div class="banner" id="failure" role="alert">' "the failure banner, shown"
shot "$work/empty.html" "" "$artifacts/inspector-empty.png"

# 8. 100,000 records: the command stays within 3 times the file's size in memory, the page is ready within 5 s and
#    the last dispatch can be selected.
python3 .ci/make-session.py big 100000 "$work/big.jsonl"
size=$(stat -c %s "$work/big.jsonl")
for output in "-o $work/big.html" ""; do
  # shellcheck disable=SC2086 # the output option, or none
  /usr/bin/time -f %M -o "$work/rss" "$bin/dispatchstore-inspect" "$work/big.jsonl" $output > "$work/stdout.html"
  rss=$(( $(cat "$work/rss") * 1024 ))
  echo "inspector: dispatchstore-inspect${output:+ -o}: peak RSS $((rss / 1048576)) MiB," \
    "for a session of $((size / 1048576)) MiB"
  [ "$rss" -le $((3 * size)) ] || fail "peak RSS $rss bytes exceeds 3 times the file's $size bytes"
done
cmp -s "$work/big.html" "$work/stdout.html" || fail "the page to standard output differs from the one written with -o"
# Real time, not virtual: how long the page took to show its first dispatch.
timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "$(url "$work/big.html")#click=100000" \
  2> /dev/null > "$work/big.dom"
expect "$work/big.dom" '<h2 id="detail-title">Dispatch 100000: complete(1)</h2>' "the last of 100,000 dispatches"
rows=$(grep -o 'class="row' "$work/big.dom" | wc -l)
[ "$rows" -lt 200 ] || fail "$rows rows in the document; the timeline must draw only those in view"
ready=$(grep -o 'data-ready-ms="[0-9]*"' "$work/big.dom" | tr -dc 0-9)
echo "inspector: 100,000 records ready in $ready ms, $rows rows in the document"
[ "$ready" -lt 5000 ] || fail "100,000 records took $ready ms to show, more than 5 s"
# Browsers lay out no element taller than some 17.9 million pixels (1,030,000 rows at 34 px would need 35): past a
# height, the list is scrolled in proportion. Here that height is lowered to a million pixels (29,411 rows).
for number in 100000 50000 2; do
  dom "$work/big.html" "#click=$number&listHeight=1000000" > "$work/scaled.dom"
  grep -q "^$number|row selected" <<< "$(rows "$work/scaled.dom")" \
    || fail "the row of dispatch $number, clicked in a list scrolled in proportion"
  [ "$(text "$work/scaled.dom" detail-title)" = "Dispatch $number: complete(1)" ] \
    || fail "dispatch $number, opened in a list scrolled in proportion: $(text "$work/scaled.dom" detail-title)"
done
shot "$work/big.html" "#click=100000" "$artifacts/inspector-100k.png"
echo "inspector: screenshots in $artifacts"
