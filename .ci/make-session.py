#!/usr/bin/env python3
"""Writes DispatchStore session files (format version 2) for the inspector's browser test, independently of the
library: if the library loads them, its hash chain is the one the DocC article documents.

  make-session.py diverging PATH   a todo session whose third record disagrees with today's reducer
  make-session.py big N [PAD] PATH N records of one todo store, with small models (titles PAD characters longer)
  make-session.py story PATH       seven dispatches: one failed, one cancelled, undo and redo moves, a dispatch
                                   replaced after an undo, one undone at the end, a recorded effect
  make-session.py forged PATH      the story, its sixth line (dispatch 4) replaced by one that is not JSON and
                                   re-hashed: its hash is valid, its content is not
  make-session.py empty PATH       a header and a first snapshot: no record yet
  make-session.py lists PATH       the story in format version 3: its todo list written in list forms, whole or as
                                   the changes from the store's previous record line; dispatch 3 read the todos
                                   as record #1 left them (a read line)
  make-session.py bigstory PATH    the story with its todos' ids past 2^53 (2^53 + 1 to 2^53 + 4), which a double
                                   rounds: 2^53 + 3 and 2^53 + 4 are the same double
  make-session.py biglists PATH    the same in format version 3, with list forms
  make-session.py outline PATH     an outline of sections of rows with tags, lists inside the elements of lists:
                                   rows and tags added, changed, moved and removed, a section added and removed, an
                                   undo and a dispatch after it
  make-session.py outlinelists PATH  the same in format version 3, every list in its list form, the lists inside a
                                   changed element as the changes from the element it replaces
  make-session.py outlineroot PATH, outlinerootlists PATH  the same two with the model the list of sections itself
"""
import json
import sys

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK = 0xFFFFFFFFFFFFFFFF


def line_hash(data: bytes, previous: int) -> int:
    """The DocC article's definition: FNV-1a's step over the previous hash, each 8-byte little-endian word of the
    object (the last zero-padded), and its length."""
    value = ((FNV_OFFSET ^ previous) * FNV_PRIME) & MASK
    for start in range(0, len(data), 8):
        word = int.from_bytes(data[start:start + 8].ljust(8, b"\0"), "little")
        value = ((value ^ word) * FNV_PRIME) & MASK
    return ((value ^ len(data)) * FNV_PRIME) & MASK


def write(path, lines):
    """Writes the lines, each an object without its hash, with their hashes chained."""
    previous = 0
    with open(path, "wb") as file:
        for text in lines:
            data = text.encode()
            assert data.endswith(b"}")
            previous = line_hash(data, previous)
            file.write(data[:-1] + (',"h":"%016x"}\n' % previous).encode())


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


HEADER = compact({"format": "DispatchStore.session", "version": 2,
                  "stores": [{"identifier": "todos", "model": "todo.TodoList", "action": "todo.TodoAction"}]})
START = 1795000000000000000


def record(index, action, model, error=None, cancelled=False, time=None):
    text = '{"k":"r","i":%d,"t":%d,"s":"todos","a":%s,"m":%s' % (index, time or START + index * 1000,
                                                               compact(action), compact(model))
    if error:
        text += ',"e":' + json.dumps(error)
    if cancelled:
        text += ',"c":true'
    return text + "}"


def move(index):
    return '{"k":"m","i":%d}' % index


def story(line, base=0):
    """Dispatches 1-7 and three moves; the comments number the dispatches as the inspector does. The todos' ids are
    `base` + 1 to 4."""
    def item(identifier, title, done):
        return {"id": base + identifier, "title": title, "done": done}
    milk, dog = item(1, "buy milk", False), item(2, "walk the dog", False)
    at = iter(range(START, START + 10**12, 10**9))  # one second apart
    line(record(0, {"add": {"_0": "buy milk"}}, {"items": [milk], "nextID": 2}, time=next(at)))  # 1
    line(record(1, {"add": {"_0": "walk the dog"}}, {"items": [milk, dog], "nextID": 3}, time=next(at)))  # 2
    milk = item(1, "buy milk", True)
    line(record(2, {"complete": {"_0": base + 1}}, {"items": [milk, dog], "nextID": 3}, time=next(at)))  # 3
    line(record(3, {"complete": {"_0": base + 7}}, {"items": [milk, dog], "nextID": 3}, "there is no item 7",
                       time=next(at)))  # 4: failed
    fetched = next(at)
    line('{"k":"e","d":%d,"key":"weather","v":{"rain":true}}' % fetched)
    line(record(4, {"add": {"_0": "call mum"}}, {"items": [milk, dog], "nextID": 3}, "CancellationError()",
                       cancelled=True, time=fetched))  # 5: cancelled, then replaced
    line(move(2))  # undo dispatches 4 and 5
    line(move(3))  # redo dispatch 4
    plants = item(3, "water the plants", False)
    line(record(4, {"add": {"_0": "water the plants"}}, {"items": [milk, dog, plants], "nextID": 4},
                       time=next(at)))  # 6: replaces dispatch 5
    book = item(4, "read a book", False)
    line(record(5, {"add": {"_0": "read a book"}}, {"items": [milk, dog, plants, book], "nextID": 5},
                       time=next(at)))  # 7: undone below
    line(move(4))  # undo dispatch 7


def item(identifier, title, done):
    return {"id": identifier, "title": title, "done": done}


def outline(line, root=False):
    """Seven dispatches and a move over an outline: sections hold rows, rows hold tags. With `root`, the model is
    the list of sections itself."""
    def row(identifier, title, done=False, tags=()):
        return {"id": identifier, "title": title, "done": done, "tags": [{"id": t, "color": c} for t, c in tags]}

    def model(*sections):
        listed = [{"id": i, "name": n, "rows": list(r)} for i, n, r in sections]
        return listed if root else {"title": "Outline", "sections": listed}
    at = iter(range(START, START + 10**12, 10**9))
    milk, dog = row(11, "buy milk"), row(12, "walk the dog")
    line(record(0, {"addSection": {"_0": "Home"}}, model((1, "Home", [milk])), time=next(at)))  # 1
    line(record(1, {"addRow": {"_0": "walk the dog"}}, model((1, "Home", [milk, dog])), time=next(at)))  # 2
    milk = row(11, "buy milk", True)
    line(record(2, {"toggle": {"_0": 11}}, model((1, "Home", [milk, dog])), time=next(at)))  # 3
    milk = row(11, "buy milk", True, [("red", 1)])
    line(record(3, {"tag": {"_0": 11}}, model((1, "Home", [milk, dog])), time=next(at)))  # 4
    report = row(21, "write report", tags=[("blue", 3)])
    line(record(4, {"addSection": {"_0": "Work"}}, model((1, "Home", [milk, dog]), (2, "Work", [report])),
                time=next(at)))  # 5: undone below
    line(move(3))  # undo dispatch 5
    milk = row(11, "buy milk", True, [("red", 2), ("green", 4)])
    line(record(4, {"tag": {"_0": 11}}, model((1, "Home", [milk, dog])), time=next(at)))  # 6: replaces dispatch 5
    milk = row(11, "buy milk", True, [("green", 4)])
    line(record(5, {"untag": {"_0": 11}}, model((1, "Home", [dog, milk])), time=next(at)))  # 7: moved, untagged
    line(record(6, {"addSection": {"_0": "Work"}}, model((2, "Work", [report]), (1, "Home", [dog, milk])),
                time=next(at)))  # 8: a section before the first


# Where an outline's lists are: the model's "sections", each section's "rows", each row's "tags".
OUTLINE_LISTS = {(): ["sections"], ("sections",): ["rows"], ("sections", "rows"): ["tags"]}


def list_form(items, previous, kind, path, paths):
    """The list form of `items` at `path` (a list of `kind`): whole if there is no `previous` (the same list in the
    base line, or in the element this element replaces), otherwise its changes from it. Lists inside its elements
    are written in their forms too; `paths` gets each form's path."""
    if previous is None:
        form = {"~ids": [i["id"] for i in items],
                "~all": [element_forms(i, None, kind, path + ["~all", n], paths) for n, i in enumerate(items)]}
    else:
        old = {key(i["id"]): i for i in previous}
        new = {key(i["id"]): i for i in items}
        form = {}
        updated = sorted((k, i) for k, i in new.items() if old.get(k) != i)
        if updated:
            form["~set"] = [[i["id"], element_forms(i, old.get(k), kind, path + ["~set", n, 1], paths)]
                            for n, (k, i) in enumerate(updated)]
        removed = sorted(k for k in old if k not in new)
        if removed:
            form["~remove"] = [json.loads(k) for k in removed]
        before, after = [key(i["id"]) for i in previous], [key(i["id"]) for i in items]
        if before != after:
            start = 0
            while start < min(len(before), len(after)) and before[start] == after[start]:
                start += 1
            end = 0
            while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
                end += 1
            form["~order"] = [[start, len(before) - start - end,
                               [json.loads(k) for k in after[start:len(after) - end]]]]
    paths.append(path)
    return form


def element_forms(element, replaced, kind, path, paths):
    """`element` with the lists it holds in their forms: against the lists of `replaced`, if there is one."""
    element = dict(element)
    for name in OUTLINE_LISTS.get(kind, []):
        previous = replaced.get(name) if replaced is not None else None
        element[name] = list_form(element[name], previous, kind + (name,), path + [name], paths)
    return element


def key(value):
    return compact(value)


def with_list_forms(lines):
    """The lines in format version 3: each record's "items" as the changes from the previous record line's (named
    by "z"), or whole after a move; written from the version 3 section of the DocC article, not from the library."""
    out, previous = [], None
    for text in lines:
        value = json.loads(text)
        if value.get("format"):
            value["version"] = 3
            out.append(compact(value))
            continue
        if value["k"] == "m":
            previous = None
        if value["k"] != "r":
            out.append(text)
            continue
        items = value["m"]["items"]
        form = list_form(items, previous[1] if previous else None, ("items",), ["items"], [])
        head = '{"k":"r","i":%d,"t":%d,"s":"todos"' % (value["i"], value["t"])
        if previous is not None:
            head += ',"z":%d' % previous[0]
        model = dict(value["m"], items=form)
        rest = {k: v for k, v in value.items() if k not in ("k", "i", "t", "s", "m")}
        text = head + ',"a":%s,"m":%s,"l":[["items"]]' % (compact(rest.pop("a")), compact(model))
        for field, field_value in rest.items():
            text += ',"%s":%s' % (field, json.dumps(field_value))
        out.append(text + "}")
        previous = (value["i"], items)
    return out


def with_nested_list_forms(lines, root=False):
    """The outline's lines in format version 3, every list in its list form (OUTLINE_LISTS); written from the DocC
    article's version 3 section, not from the library. With `root`, the model is the list of sections."""
    out, previous = [], None
    for text in lines:
        value = json.loads(text)
        if value.get("format"):
            value["version"] = 3
            out.append(compact(value))
            continue
        if value["k"] == "m":
            previous = None
        if value["k"] != "r":
            out.append(text)
            continue
        paths = []
        if root:
            model = list_form(value["m"], previous[1] if previous else None, ("sections",), [], paths)
        else:
            model = element_forms(value["m"], previous[1] if previous else None, (), [], paths)
        head = '{"k":"r","i":%d,"t":%d,"s":"todos"' % (value["i"], value["t"])
        if previous is not None:
            head += ',"z":%d' % previous[0]
        out.append(head + ',"a":%s,"m":%s,"l":%s}' % (compact(value["a"]), compact(model), compact(paths)))
        previous = (value["i"], value["m"])
    return out


def main():
    lines = [HEADER, '{"k":"s","i":0,"m":{"todos":{"items":[],"nextID":1}},"a":{}}']
    if sys.argv[1] == "diverging":
        milk = item(1, "buy milk", False)
        dog = item(2, "walk the dog", False)
        lines.append(record(0, {"add": {"_0": "buy milk"}}, {"items": [milk], "nextID": 2}))
        lines.append(record(1, {"add": {"_0": "walk the dog"}}, {"items": [milk, dog], "nextID": 3}))
        # Recorded by a build whose `complete` forgot to mark the item: today's reducer does.
        lines.append(record(2, {"complete": {"_0": 1}}, {"items": [milk, dog], "nextID": 3}))
    elif sys.argv[1] in ("story", "forged", "lists", "bigstory", "biglists"):
        story(lines.append, base=2**53 if sys.argv[1].startswith("big") else 0)
        if sys.argv[1] in ("lists", "biglists"):
            lines = with_list_forms(lines)
            # Format 3's read line: dispatch 3's transaction read the todos as record #1 left them.
            third = next(n for n, text in enumerate(lines) if text.startswith('{"k":"r","i":2,'))
            transaction = json.loads(lines[third])["t"]
            lines.insert(third + 1, '{"k":"w","i":1,"t":%d,"s":"todos"}' % transaction)
        if sys.argv[1] == "forged":
            # A record that is not JSON (its model is cut short by markup), hashed as if a recorder wrote it.
            lines[5] = ('{"k":"r","i":3,"t":%d,"s":"todos","a":{"complete":{"_0":7}},"m":{"items":[' % START +
                        '{"id":1,"title":"buy milk","done":true},</script><!--<script>}')
    elif sys.argv[1] in ("outline", "outlinelists", "outlineroot", "outlinerootlists"):
        root = sys.argv[1].startswith("outlineroot")
        lines[1] = '{"k":"s","i":0,"m":{"todos":%s},"a":{}}' % ("[]" if root else '{"sections":[],"title":"Outline"}')
        outline(lines.append, root)
        if sys.argv[1].endswith("lists"):
            lines = with_nested_list_forms(lines, root)
    elif sys.argv[1] == "big":
        count = int(sys.argv[2])
        title = "water the plants" + ("." * int(sys.argv[3]) if len(sys.argv) > 4 else "")
        lines.append(record(0, {"add": {"_0": title}}, {"items": [item(1, title, False)], "nextID": 2}))
        for index in range(1, count):
            done = index % 2 == 1
            error = None if done else "item 1 is already done"
            lines.append(record(index, {"complete": {"_0": 1}}, {"items": [item(1, title, True)], "nextID": 2},
                                error))
    elif sys.argv[1] != "empty":
        sys.exit(__doc__)
    write(sys.argv[-1], lines)


main()
