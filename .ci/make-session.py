#!/usr/bin/env python3
"""Writes DispatchStore session files (format version 2) for the inspector's browser test, independently of the
library: if the library loads them, its hash chain is the one the DocC article documents.

  make-session.py diverging PATH   a todo session whose third record disagrees with today's reducer
  make-session.py big N PATH       N records of one todo store, with small models
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


class Writer:
    def __init__(self, path):
        self.file = open(path, "wb")
        self.previous = 0

    def line(self, text: str):
        data = text.encode()
        assert data.endswith(b"}")
        self.previous = line_hash(data, self.previous)
        self.file.write(data[:-1] + (',"h":"%016x"}\n' % self.previous).encode())


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


HEADER = compact({"format": "DispatchStore.session", "version": 2,
                  "stores": [{"identifier": "todos", "model": "todo.TodoList", "action": "todo.TodoAction"}]})
START = 1795000000000000000


def record(index, action, model, error=None):
    text = '{"k":"r","i":%d,"t":%d,"s":"todos","a":%s,"m":%s' % (index, START + index * 1000, compact(action),
                                                               compact(model))
    if error:
        text += ',"e":' + json.dumps(error)
    return text + "}"


def item(identifier, title, done):
    return {"id": identifier, "title": title, "done": done}


def main():
    writer = Writer(sys.argv[-1])
    writer.line(HEADER)
    writer.line('{"k":"s","i":0,"m":{"todos":{"items":[],"nextID":1}},"a":{}}')
    if sys.argv[1] == "diverging":
        milk = item(1, "buy milk", False)
        dog = item(2, "walk the dog", False)
        writer.line(record(0, {"add": {"_0": "buy milk"}}, {"items": [milk], "nextID": 2}))
        writer.line(record(1, {"add": {"_0": "walk the dog"}}, {"items": [milk, dog], "nextID": 3}))
        # Recorded by a build whose `complete` forgot to mark the item: today's reducer does.
        writer.line(record(2, {"complete": {"_0": 1}}, {"items": [milk, dog], "nextID": 3}))
    else:
        count = int(sys.argv[2])
        writer.line(record(0, {"add": {"_0": "water the plants"}}, {"items": [item(1, "water the plants", False)],
                                                                    "nextID": 2}))
        for index in range(1, count):
            done = index % 2 == 1
            error = None if done else "item 1 is already done"
            writer.line(record(index, {"complete": {"_0": 1}},
                               {"items": [item(1, "water the plants", True)], "nextID": 2}, error))


main()
