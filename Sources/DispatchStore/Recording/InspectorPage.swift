// The session inspector's page (``SessionInspector``): one file, its styles and script inline. The page is
// assembled from these parts in order, and nothing is ever replaced in it afterwards:
//
//   beforeTitle  TITLE  afterTitle  TITLE  afterHeading  PLACEHOLDER  beforeData  SESSION  afterData
//
// TITLE and PLACEHOLDER are HTML text (escaped by `SessionInspector`); SESSION is JSON in which `<`, `>`, `&`,
// U+2028 and U+2029 are escaped, so that it cannot end its script element. The first script, in the head, shows any
// error of the page's own script in the page: a page is never blank.

enum InspectorPage {
  static let beforeTitle = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>
    """#

  static let afterTitle = #"""
     · DispatchStore session</title>
    <style>
    :root {
      --bg: #f4f5f8; --panel: #fff; --ink: #1b2130; --muted: #687086; --line: #e2e5ec; --accent: #3b5bdb;
      --accent-soft: #e8edff; --fail: #c92a2a; --fail-soft: #fff0f0; --cancel: #b7791f; --cancel-soft: #fff6e0;
      --add: #2b8a3e; --add-soft: #ebfbee; --undo: #7048e8; --undo-soft: #f1ecff; --gone: #9aa1b1;
      --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
      --sans: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
    }
    @media (prefers-color-scheme: dark) {
      :root { --bg: #11141b; --panel: #191e28; --ink: #e6e9ef; --muted: #98a1b3; --line: #2a3140;
        --accent: #8ea2ff; --accent-soft: #232b45; --fail: #ff8787; --fail-soft: #3a2024; --cancel: #f2c14e;
        --cancel-soft: #3a3220; --add: #8ce99a; --add-soft: #1f3326; --undo: #b197fc; --undo-soft: #2a2342;
        --gone: #5c6475; }
    }
    * { box-sizing: border-box; }
    [hidden] { display: none !important; }
    body[data-state="error"] #filter, body[data-state="empty"] #filter { display: none; }
    body { margin: 0; font: 14px/1.45 var(--sans); color: var(--ink); background: var(--bg); height: 100vh;
      display: flex; flex-direction: column; }
    header { padding: 14px 20px 12px; background: var(--panel); border-bottom: 1px solid var(--line); }
    header h1 { margin: 0 0 8px; font-size: 17px; font-weight: 650; overflow-wrap: anywhere; }
    header h1 small { color: var(--muted); font-weight: 400; font-size: 13px; margin-left: 6px; }
    .chips { display: flex; flex-wrap: wrap; gap: 6px; }
    .chip { padding: 2px 10px; border-radius: 999px; background: var(--bg); color: var(--muted); font-size: 12px;
      white-space: nowrap; border: 1px solid var(--line); }
    .chip b { color: var(--ink); font-weight: 600; }
    button.chip { font: inherit; font-size: 12px; cursor: pointer; }
    button.chip:hover { border-color: var(--accent); }
    button.chip.active { box-shadow: 0 0 0 2px var(--accent); }
    .chip.fail { background: var(--fail-soft); color: var(--fail); border-color: transparent; }
    .chip.fail b, .chip.cancel b, .chip.undo b { color: inherit; }
    .chip.cancel { background: var(--cancel-soft); color: var(--cancel); border-color: transparent; }
    .chip.undo { background: var(--undo-soft); color: var(--undo); border-color: transparent; }
    .chip.cursor { background: var(--accent-soft); color: var(--accent); border-color: transparent; }
    .banner { margin-top: 10px; padding: 8px 12px; border-radius: 8px; background: var(--fail-soft); color: var(--fail);
      font-family: var(--mono); font-size: 12px; white-space: pre-wrap; cursor: pointer; }
    #failure { cursor: default; font-family: var(--sans); font-size: 13px; }
    #failure b { display: block; margin-bottom: 2px; }
    #overview { display: block; width: 100%; height: 18px; margin-top: 10px; border-radius: 4px; cursor: pointer;
      background: var(--bg); }
    main { flex: 1; display: grid; grid-template-columns: minmax(360px, 44%) 1fr; min-height: 0; }
    #timeline { display: flex; flex-direction: column; border-right: 1px solid var(--line); min-height: 0;
      background: var(--panel); }
    #filter { margin: 10px 10px 4px; padding: 7px 10px; border: 1px solid var(--line); border-radius: 8px;
      background: var(--bg); color: var(--ink); font: inherit; }
    #count { padding: 2px 12px 6px; color: var(--muted); font-size: 12px; }
    #rows { flex: 1; overflow-y: auto; position: relative; outline: none; border-top: 1px solid var(--line); }
    #spacer { position: relative; }
    .row { position: absolute; left: 0; right: 0; height: 34px; display: grid;
      grid-template-columns: 52px 84px 1fr auto; gap: 8px; align-items: center; padding: 0 12px 0 9px;
      border-bottom: 1px solid var(--line); border-left: 3px solid transparent; cursor: pointer; font-size: 13px; }
    .row:hover { background: var(--bg); }
    .row.selected { background: var(--accent-soft); border-left-color: var(--accent); }
    .row.failed { border-left-color: var(--fail); }
    .row.cancelled { border-left-color: var(--cancel); }
    .row.undone .act, .row.undone .time { color: var(--gone); }
    .row.replaced { background: repeating-linear-gradient(135deg, transparent 0 8px, var(--undo-soft) 8px 10px); }
    .row.replaced .act { color: var(--gone); text-decoration: line-through; }
    .row.failed .act { color: var(--fail); }
    td.threw { color: var(--fail); }
    .row.move { background: var(--undo-soft); color: var(--undo); border-left-color: var(--undo); }
    .row.move.selected { box-shadow: inset 0 0 0 1px var(--undo); }
    .row.move .act { font-family: var(--sans); font-style: italic; color: var(--undo); }
    .row .num { color: var(--muted); font-family: var(--mono); font-size: 12px; text-align: right; }
    .row.move .num { color: var(--undo); font-size: 15px; }
    .row .time { color: var(--muted); font-family: var(--mono); font-size: 12px; }
    .row .act { font-family: var(--mono); font-size: 12px; overflow: hidden; text-overflow: ellipsis;
      white-space: nowrap; }
    .row .tags { display: flex; gap: 4px; }
    .tag { font-size: 11px; padding: 1px 6px; border-radius: 5px; background: var(--panel); color: var(--muted);
      border: 1px solid var(--line); white-space: nowrap; }
    .tag.fail { color: var(--fail); border-color: var(--fail); }
    .tag.cancel { color: var(--cancel); border-color: var(--cancel); }
    .tag.cursor { color: #fff; background: var(--accent); border-color: var(--accent); }
    .tag.undo { color: var(--undo); border-color: var(--undo); }
    #detail { overflow-y: auto; padding: 18px 22px; min-height: 0; }
    #detail h2 { margin: 0 0 4px; font-size: 16px; overflow-wrap: anywhere; }
    #detail .meta { color: var(--muted); font-size: 12px; margin-bottom: 14px; font-family: var(--mono); }
    .note { padding: 9px 12px; border-radius: 8px; margin-bottom: 14px; font-size: 13px; }
    .note.undo { background: var(--undo-soft); color: var(--undo); }
    .note.fail { background: var(--fail-soft); color: var(--fail); }
    .card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; margin-bottom: 14px;
      overflow: hidden; }
    .card > h3 { margin: 0; padding: 9px 14px; font-size: 13px; border-bottom: 1px solid var(--line);
      display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
    .card > h3 .store { font-family: var(--mono); }
    .card .body { padding: 10px 14px; }
    .error { color: var(--fail); font-family: var(--mono); font-size: 12px; margin-bottom: 8px; white-space: pre-wrap; }
    .error.cancel { color: var(--cancel); }
    table.diff { width: 100%; border-collapse: collapse; font-family: var(--mono); font-size: 12px; }
    table.diff th { text-align: left; color: var(--muted); font-weight: 500; padding: 3px 6px; }
    table.diff td { padding: 3px 6px; border-top: 1px solid var(--line); vertical-align: top; word-break: break-all; }
    table.diff td.before { background: var(--fail-soft); }
    table.diff td.after { background: var(--add-soft); }
    table.diff tr.diverged td { outline: 2px solid var(--fail); outline-offset: -2px; }
    .nochange { color: var(--muted); font-size: 12px; }
    pre.json { margin: 0; font: 12px/1.5 var(--mono); white-space: pre-wrap; word-break: break-all; }
    .k { color: var(--accent); } .s { color: var(--add); } .n { color: var(--cancel); } .b { color: var(--fail); }
    details > summary { cursor: pointer; padding: 9px 14px; font-family: var(--mono); font-size: 13px; }
    .empty { color: var(--muted); padding: 48px 24px; text-align: center; font-size: 15px; }
    .empty b { display: block; color: var(--ink); font-size: 17px; margin-bottom: 6px; }
    .empty.fail { color: var(--fail); font-family: var(--mono); font-size: 13px; white-space: pre-wrap;
      text-align: left; }
    .empty.fail b { color: var(--fail); font-family: var(--sans); }
    </style>
    <script>
    "use strict";
    // Any error of the page's own script is shown in the page, instead of leaving it blank.
    function showFailure(message, heading = "This page failed") {
      const show = () => {
        document.body.dataset.state = "error";
        const banner = document.getElementById("failure");
        banner.replaceChildren(Object.assign(document.createElement("b"), { textContent: heading }),
          String(message));
        banner.hidden = false;
        const detail = document.getElementById("detail");
        const box = Object.assign(document.createElement("div"), { className: "empty fail", id: "page-error" });
        box.append(Object.assign(document.createElement("b"), { textContent: heading }),
          String(message));
        document.getElementById("count").textContent = "";
        detail.replaceChildren(box);
      };
      if (document.getElementById("detail")) show(); else document.addEventListener("DOMContentLoaded", show);
    }
    window.addEventListener("error", (event) => showFailure(event.error && event.error.stack || event.message));
    window.addEventListener("unhandledrejection", (event) => showFailure(event.reason));
    </script>
    </head>
    <body data-state="loading">
    <header>
      <h1>
    """#

  static let afterHeading = #"""
     <small>DispatchStore session</small></h1>
      <div class="chips" id="summary"></div>
      <canvas id="overview" hidden title="Every dispatch, oldest on the left: click to go there"></canvas>
      <div class="banner" id="banner" hidden></div>
      <div class="banner" id="failure" role="alert" hidden></div>
    </header>
    <main>
      <section id="timeline">
        <input id="filter" type="search" placeholder="Filter: store, action, error, or failed, cancelled, rolled back, undone, replaced, move"
          aria-label="Filter">
        <div id="count"></div>
        <div id="rows" tabindex="0"><div id="spacer"></div></div>
      </section>
      <section id="detail"><div class="empty" id="placeholder">
    """#

  static let beforeData = #"""
    </div></section>
    </main>
    <script type="application/json" id="session">
    """#

  static let afterData = #"""
    </script>
    <script>
    "use strict";
    class SessionFailure extends Error {}
    try {
    const dataElement = document.getElementById("session");
    // Integers past 2^53 in models and actions (64-bit ids) are kept exact, as their digits: a double would round
    // them, and two ids one apart would become one. A reviver is slower, so only a page whose data has a number that
    // long is read with it (transaction identifiers are written as strings).
    class Exact {
      constructor(digits) { this.digits = digits; }
      toJSON() { return "\u0000exact:" + this.digits; }
    }
    const stringify = (value) => JSON.stringify(value)?.replace(/"\\u0000exact:(-?\d+)"/g, "$1");
    const exact = (key, value, context) =>
      typeof value === "number" && !Number.isSafeInteger(value) && context !== undefined
        && /^-?\d+$/.test(context.source) ? new Exact(context.source) : value;
    let S;
    try {
      const text = dataElement.textContent;
      S = /[:,\[]-?\d{16}/.test(text) ? JSON.parse(text, exact) : JSON.parse(text);
    } catch (error) {
      throw new SessionFailure("The page's session data is not valid JSON (" + error.message + ").");
    }
    // Parsed: the text is not needed any more (a long session's is large).
    dataElement.remove();
    const ROW = 34;
    const wanted = new URLSearchParams(location.hash.slice(1));
    // The tallest the list of rows gets, in pixels: browsers lay out no taller element (Firefox about 17.9 million).
    // A longer timeline is scrolled in proportion, each pixel of the scroll bar more than one of rows. (A test can
    // lower it with #listHeight=PIXELS.)
    const LIST_HEIGHT = Number(wanted.get("listHeight")) || 15000000;
    const $ = (id) => document.getElementById(id);
    const el = (tag, attrs, ...children) => {
      const node = document.createElement(tag);
      for (const [key, value] of Object.entries(attrs || {})) {
        if (key === "class") node.className = value; else node.setAttribute(key, value);
      }
      for (const child of children) node.append(child);
      return node;
    };
    const plural = (count, word, words) => count.toLocaleString("en-US") + " " + (count === 1 ? word : words || word + "s");

    if (S.error) {
      // The file failed a check: the page shows why, and nothing else.
      throw new SessionFailure(S.error.message, { cause: "file" });
    }

    // Every record and move, in the order of the file. A record replaced by a later one at its position or before
    // (a dispatch after an undo) carries "x", the line of that record; "n" is each line's own number.
    const records = [];
    const entries = [];
    const groupOf = new Map();
    const groups = [];
    let cursor = S.firstIndex - 1;
    let anyReplaced = false;
    let last = null;
    // An operation whose records were filed at its changes, then failed or was cancelled: its outcome line gives
    // every record of its transaction the error.
    const outcomes = new Map((S.outcomes || []).map((o) => [o.t, o]));
    // Each store's latest record line: the base of the next one's list changes ("z").
    const previousOfStore = new Map();
    for (const line of S.lines) {
      if (line.k === "m") {
        entries.push({ kind: "move", line, from: cursor, to: line.i, back: line.i < cursor });
        cursor = line.i;
        continue;
      }
      if (line.z !== undefined) {
        const base = previousOfStore.get(line.s);
        if (!base || base.i !== line.z) {
          throw new SessionFailure("Line " + line.n + ": the base of its lists, record #" + line.z +
            ", is not its store's previous record line.", { cause: "file" });
        }
        line.base = base;
      }
      previousOfStore.set(line.s, line);
      const outcome = outcomes.size ? outcomes.get(line.t) : undefined;
      if (outcome) {
        if (outcome.e !== undefined) line.e = outcome.e;
        if (outcome.c) line.c = true;
      }
      records.push(line);
      cursor = line.i;
      if (line.x) anyReplaced = true;
      const id = line.d || line.t;
      // A dispatch's records are usually next to each other: the map only for those that are not.
      let group = last && last.id === id ? last : groupOf.get(id);
      if (!group) {
        group = { kind: "dispatch", id, records: [], stores: [], failed: false, cancelled: false, longest: 0,
          unchanged: true };
        groupOf.set(id, group);
        groups.push(group);
        entries.push(group);
      }
      last = group;
      group.records.push(line);
      if (!group.stores.includes(line.s)) group.stores.push(line.s);
      // A cancelled transaction also carries its error (a CancellationError): it counts as cancelled, not failed.
      if (line.e !== undefined && !line.c) group.failed = true;
      if (line.c) group.cancelled = true;
      if (!line.u) group.unchanged = false;
      if (line.p) group.redacted = true;
      if (line.b) group.rolledBack = true;
      group.longest = Math.max(group.longest, Number(line.f || 0));
    }
    let moveNumber = 0;
    for (const entry of entries) if (entry.kind === "move") entry.number = ++moveNumber;
    const divergence = S.divergence;
    groups.forEach((group, offset) => {
      group.number = offset + 1;
      group.first = group.records[0];
      group.last = group.records[group.records.length - 1];
      group.replaced = group.records.some((r) => r.x);
      group.undone = !group.replaced && group.records.some((r) => r.i > S.cursor);
      group.current = group.records.some((r) => !r.x && r.i === S.cursor);
      group.diverged = !!divergence && divergence.index !== undefined &&
        group.records.some((r) => !r.x && r.i === divergence.index);
    });
    const cursorGroup = groups.find((g) => g.current);

    // The history as it stood when line `at` was written: the records and snapshots written by then and not yet
    // dropped. A store's model at a position is the newest of its latest record and its latest snapshot there.
    const keptByStore = new Map(), allByStore = new Map();
    for (const r of records) {
      if (!allByStore.has(r.s)) { allByStore.set(r.s, []); keptByStore.set(r.s, []); }
      allByStore.get(r.s).push(r);
      if (!r.x) keptByStore.get(r.s).push(r);
    }
    const alive = (line, at) => line.n <= at && !(line.x && line.x <= at);
    function latestRecord(store, position, at) {
      if (!anyReplaced) {
        const kept = keptByStore.get(store) || [];
        let low = 0, high = kept.length - 1, found = -1;
        while (low <= high) {
          const middle = (low + high) >> 1;
          if (kept[middle].i <= position) { found = middle; low = middle + 1; } else high = middle - 1;
        }
        return found < 0 ? null : kept[found];
      }
      let found = null;
      for (const r of allByStore.get(store) || []) {
        if (r.n > at) break;
        if (alive(r, at) && r.i <= position && (!found || r.i > found.i)) found = r;
      }
      return found;
    }
    function modelAt(store, position, at) {
      const record = latestRecord(store, position, at);
      let snapshot = null;
      for (const s of S.snapshots) {
        if (s.n > at) break;
        if (alive(s, at) && s.i <= position + 1 && s.m && Object.hasOwn(s.m, store) && (!snapshot || s.i >= snapshot.i)) {
          snapshot = s;
        }
      }
      if (snapshot && (!record || snapshot.i > record.i)) {
        return { model: snapshot.m[store], from: "the snapshot before record #" + snapshot.i };
      }
      return record ? { model: modelOf(record), from: "record #" + record.i } : null;
    }
    // A record's model. A line of format 3 may hold IdentifiedLists in their list forms ("l" lists their paths):
    // whole, {"~ids","~all"}, or as changes from the same list in its base line, {"~set","~remove","~order"}. A list
    // inside an element of a form is in a form too, at its path through the form (["sections","~set",0,1,"rows"]):
    // whole in an element written whole, and in a changed element the changes from the same list in the element it
    // replaces. The model with plain arrays is rebuilt from the line whose lists are whole, or from the last one
    // rebuilt.
    const idKey = (id) => stringify(id);
    // A list rebuilt: its ids' keys in order, and its elements by key. An element holding lists holds them rebuilt
    // (and is in `holdsLists`) until a model is made of it.
    class Listed {
      constructor(ids, byKey) { this.ids = ids; this.byKey = byKey; }
      copy() { return new Listed(this.ids.slice(), new Map(this.byKey)); }
    }
    const holdsLists = new WeakSet();
    let lastLists = null;
    const remembered = [];
    function at(value, path) {
      for (const key of path) value = value === null || typeof value !== "object" ? undefined : value[key];
      return value;
    }
    // The forms of a line: for each listed path, the path of the list form whose element holds it (none for a list
    // of the model's own), and the lists held directly by each element, by the element's path.
    function formsOf(line) {
      const listed = new Set((line.l || []).map((path) => JSON.stringify(path)));
      const parents = new Map(), held = new Map(), top = [];
      for (const path of line.l || []) {
        let parent = null, element = null;
        for (let n = path.length - 2; n >= 0 && !parent; n--) {
          if (path[n] === "~all" || path[n] === "~set") {
            const prefix = path.slice(0, n);
            if (listed.has(JSON.stringify(prefix))) {
              parent = prefix;
              element = path.slice(0, path[n] === "~all" ? n + 2 : n + 3);
            }
          }
        }
        if (!parent) { top.push(path); continue; }
        parents.set(JSON.stringify(path), parent);
        const key = JSON.stringify(element);
        if (!held.has(key)) held.set(key, []);
        held.get(key).push(path.slice(element.length));
      }
      return { parents, held, top };
    }
    // Rebuilds the lists of `line` over `lists`, the lists of its base line (changed in place): returns the lists of
    // the model's own.
    function rebuild(line, lists) {
      const { parents, held, top } = formsOf(line);
      const fail = (name, why) => {
        throw new SessionFailure("Line " + line.n + ": the list at " + name + " " + why + ".", { cause: "file" });
      };
      // The list the form at `path` changes: the base line's, or the one in the element its element replaces.
      function baseOf(path) {
        const name = JSON.stringify(path), parent = parents.get(name);
        if (!parent) return lists.get(name);
        const step = path[parent.length];
        const form = at(line.m, parent);
        if (step !== "~set" || !form || !Array.isArray(form["~set"])) return undefined;
        const pair = form["~set"][path[parent.length + 1]];
        const outer = baseOf(parent);
        const replaced = pair && outer ? outer.byKey.get(idKey(pair[0])) : undefined;
        // Not through an array inside the element (the writer writes such a list whole).
        const rest = path.slice(parent.length + 3);
        if (rest.some((key) => typeof key === "number")) return undefined;
        const list = at(replaced, rest);
        return list instanceof Listed ? list : undefined;
      }
      // The element at `path` with the lists it holds rebuilt.
      function withLists(element, path) {
        if (!held.size) return element;
        const inner = held.get(JSON.stringify(path));
        if (!inner) return element;
        const copy = Array.isArray(element) ? element.slice() : Object.assign({}, element);
        for (const rest of inner) {
          let node = copy;
          for (const key of rest.slice(0, -1)) {
            node[key] = Array.isArray(node[key]) ? node[key].slice() : Object.assign({}, node[key]);
            node = node[key];
          }
          node[rest[rest.length - 1]] = rebuilt(path.concat(rest));
        }
        holdsLists.add(copy);
        return copy;
      }
      function rebuilt(path) {
        const name = JSON.stringify(path), form = at(line.m, path);
        if (form === null || typeof form !== "object" || Array.isArray(form)) fail(name, "is not in a list form");
        let list;
        if (form["~all"] !== undefined) {
          const ids = (form["~ids"] || []).map(idKey);
          if (!Array.isArray(form["~all"]) || ids.length !== form["~all"].length) {
            fail(name, "does not have as many ids as elements");
          }
          list = new Listed(ids, new Map(ids.map((key, n) => [key, withLists(form["~all"][n], path.concat(["~all", n]))])));
        } else {
          const base = baseOf(path);
          if (!base) fail(name, "changes a list its base does not hold");
          // A list of the model's own is changed in place (it is the base line's, copied once); one inside an
          // element, copied if it changed: the element it replaces keeps its own.
          const changed = form["~set"] || form["~remove"] || form["~order"];
          list = parents.has(name) && changed ? base.copy() : base;
          (form["~set"] || []).forEach(([id, element], n) => {
            list.byKey.set(idKey(id), withLists(element, path.concat(["~set", n, 1])));
          });
          for (const id of form["~remove"] || []) list.byKey.delete(idKey(id));
          for (const [position, removing, added] of form["~order"] || []) {
            list.ids = list.ids.slice(0, position).concat(added.map(idKey), list.ids.slice(position + removing));
          }
          if (list.ids.length !== list.byKey.size) fail(name, "does not fit its base");
        }
        return list;
      }
      const seen = new Map();
      for (const path of top) seen.set(JSON.stringify(path), rebuilt(path));
      return seen;
    }
    function listsOf(r) {
      const chain = [];
      let start = null;
      for (let line = r; line; line = line.base) {
        if (lastLists && lastLists.line === line) { start = lastLists.lists; break; }
        chain.push(line);
        if (line.z === undefined) break;
      }
      // The lists by path: their ids' keys in order, and their elements by key.
      const lists = new Map();
      for (const [path, list] of start || []) lists.set(path, list.copy());
      for (const line of chain.reverse()) {
        const seen = rebuild(line, lists);
        lists.clear();
        for (const [name, list] of seen) lists.set(name, list);
      }
      lastLists = { line: r, lists };
      return lists;
    }
    // A value with the lists it holds as plain arrays.
    function plain(value) {
      if (value instanceof Listed) return value.ids.map((key) => plain(value.byKey.get(key)));
      if (!holdsLists.has(value)) return value;
      const out = Array.isArray(value) ? value.slice() : Object.assign({}, value);
      for (const key of Object.keys(out)) {
        const v = out[key];
        if (v instanceof Listed || (v !== null && typeof v === "object")) out[key] = deepPlain(v);
      }
      return out;
    }
    function deepPlain(value) {
      if (value instanceof Listed || holdsLists.has(value)) return plain(value);
      if (value === null || typeof value !== "object" || value instanceof Exact) return value;
      const out = Array.isArray(value) ? value.slice() : Object.assign({}, value);
      for (const key of Object.keys(out)) out[key] = deepPlain(out[key]);
      return out;
    }
    function modelOf(r) {
      if (!r.l || !r.l.length) return r.m;
      if (r.full !== undefined) return r.full;
      const lists = listsOf(r);
      const elements = (path) => { const list = lists.get(JSON.stringify(path)); return list.ids.map((key) => plain(list.byKey.get(key))); };
      // A model that is itself a list has the empty path.
      const { top } = formsOf(r);
      const root = top.some((path) => !path.length);
      const model = root ? elements([]) : Array.isArray(r.m) ? r.m.slice() : Object.assign({}, r.m);
      for (const path of root ? [] : top) {
        let node = model;
        for (const key of path.slice(0, -1)) {
          node[key] = Array.isArray(node[key]) ? node[key].slice() : Object.assign({}, node[key]);
          node = node[key];
        }
        node[path[path.length - 1]] = elements(path);
      }
      // Kept for the lines most recently shown only: a long session's models are not all held at once.
      remembered.push(r);
      if (remembered.length > 64) delete remembered.shift().full;
      r.full = model;
      return model;
    }

    // The line at number `n`, found in the file's order.
    function lineNumbered(n) {
      let low = 0, high = S.lines.length - 1;
      while (low <= high) {
        const middle = (low + high) >> 1;
        if (S.lines[middle].n === n) return S.lines[middle];
        if (S.lines[middle].n < n) low = middle + 1; else high = middle - 1;
      }
      return null;
    }

    // Field differences, by key path, as the library reports them.
    function differences(before, after, path, out) {
      const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Exact);
      if (isObject(before) && isObject(after)) {
        const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
        for (const key of keys) {
          differences(Object.hasOwn(before, key) ? before[key] : undefined,
            Object.hasOwn(after, key) ? after[key] : undefined, path ? path + "." + key : key, out);
        }
      } else if (Array.isArray(before) && Array.isArray(after)) {
        const count = Math.max(before.length, after.length);
        for (let i = 0; i < count; i++) differences(before[i], after[i], path + "[" + i + "]", out);
      } else if (stringify(before) !== stringify(after)) {
        out.push({ path, before, after });
      }
      return out;
    }

    const hex = (id) => BigInt(id).toString(16).padStart(16, "0");
    const timeOf = (id) => new Date(Number(BigInt(id) / 1000000n));
    const clock = (id) => timeOf(id).toISOString().slice(11, 23);
    const duration = (ns) => ns >= 1e9 ? (ns / 1e9).toFixed(2) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(1) + " ms"
      : ns > 0 ? "<1 ms" : "";
    function actionText(action) {
      if (action === null || typeof action !== "object" || action instanceof Exact) return stringify(action);
      const keys = Object.keys(action);
      if (keys.length !== 1) return stringify(action);
      const payload = action[keys[0]];
      if (payload && typeof payload === "object" && !Array.isArray(payload) && !(payload instanceof Exact)) {
        const values = Object.entries(payload).map(([k, v]) => (k.startsWith("_") ? "" : k + ": ") + stringify(v));
        return keys[0] + "(" + values.join(", ") + ")";
      }
      return keys[0] + "(" + stringify(payload) + ")";
    }
    function jsonTree(value, indent = "") {
      const span = (cls, text) => el("span", { class: cls }, text);
      const out = document.createDocumentFragment();
      if (Array.isArray(value)) {
        if (!value.length) { out.append("[]"); return out; }
        out.append("[\n");
        value.forEach((item, i) => {
          out.append(indent + "  ", jsonTree(item, indent + "  "), i < value.length - 1 ? ",\n" : "\n");
        });
        out.append(indent + "]");
      } else if (value instanceof Exact) {
        out.append(span("n", value.digits));
      } else if (value !== null && typeof value === "object") {
        const keys = Object.keys(value).sort();
        if (!keys.length) { out.append("{}"); return out; }
        out.append("{\n");
        keys.forEach((key, i) => {
          out.append(indent + "  ", span("k", JSON.stringify(key)), ": ", jsonTree(value[key], indent + "  "),
            i < keys.length - 1 ? ",\n" : "\n");
        });
        out.append(indent + "}");
      } else {
        out.append(span(typeof value === "string" ? "s" : typeof value === "number" ? "n" : "b", JSON.stringify(value)));
      }
      return out;
    }
    const statusOf = (group) => group.failed ? "failed" : group.cancelled ? "cancelled" : "succeeded";
    const moveText = (move) => (move.back ? "Undo" : "Redo") + " to " +
      (move.to < S.firstIndex ? "the start" : "record #" + move.to) + " (from " +
      (move.from < S.firstIndex ? "the start" : "record #" + move.from) + ")";
    // What the filter matches: stores, action, errors, and words for the state of each row.
    function textOf(entry) {
      if (entry.text === undefined) {
        if (entry.kind === "move") {
          entry.text = ("move " + (entry.back ? "undo back " : "redo forward ") + moveText(entry)).toLowerCase();
        } else {
          entry.text = [entry.stores.join(" "), actionText(entry.first.a), stringify(entry.first.a),
            ...entry.records.map((r) => r.e === undefined ? "" : r.e), statusOf(entry), entry.cancelled ? "cancelled" : "",
            entry.rolledBack ? "rolled back" : "",
            entry.undone ? "undone" : "", entry.replaced ? "replaced undone" : "", entry.diverged ? "diverged" : "",
            entry.current ? "cursor" : ""].join(" ").toLowerCase();
        }
      }
      return entry.text;
    }

    // Summary: counts, each state a filter.
    const count = (test) => groups.reduce((n, g) => n + (test(g) ? 1 : 0), 0);
    const failed = count((g) => g.failed), cancelled = count((g) => g.cancelled);
    const undone = count((g) => g.undone), replaced = count((g) => g.replaced);
    const chip = (text, number, word, cls, filter) => {
      const node = el(filter ? "button" : "span", { class: "chip" + (number && cls ? " " + cls : "") },
        el("b", {}, number.toLocaleString("en-US")), " " + text);
      if (filter) {
        node.dataset.filter = filter;
        node.title = "Show only " + word;
        node.addEventListener("click", () => applyFilter($("filter").value === filter ? "" : filter));
      }
      return node;
    };
    // Failures and cancellations are counted even when there are none; the rarer states only when they occur.
    $("summary").append(
      chip(groups.length === 1 ? "dispatch" : "dispatches", groups.length),
      chip(records.length === 1 ? "record" : "records", records.length),
      chip(S.stores.length === 1 ? "store" : "stores", S.stores.length));
    if (groups.length) {
      $("summary").append(chip("failed", failed, "failed dispatches", "fail", "failed"),
        chip("cancelled", cancelled, "cancelled dispatches", "cancel", "cancelled"));
    }
    if (moveNumber) {
      $("summary").append(chip(moveNumber === 1 ? "move (undo, redo)" : "moves (undo, redo)", moveNumber, "moves",
        "undo", "move"));
    }
    if (undone) $("summary").append(chip("undone", undone, "undone dispatches", "undo", "undone"));
    if (replaced) $("summary").append(chip("replaced after an undo", replaced, "replaced dispatches", "undo", "replaced"));
    $("summary").append(chip(S.snapshots.length === 1 ? "snapshot" : "snapshots", S.snapshots.length));
    if (S.effects.length) $("summary").append(chip(S.effects.length === 1 ? "effect" : "effects", S.effects.length));
    if (records.length) {
      $("summary").append(el("span", { class: "chip cursor" },
        S.cursor < S.firstIndex ? "cursor before the first record" : "cursor at record #" + S.cursor));
    }
    if (divergence) {
      $("banner").hidden = false;
      // The message names the record and the dispatch's id; the page's number for the dispatch comes first.
      const group = groups.find((g) => g.diverged);
      $("banner").textContent = "Verify" + (group ? " (dispatch " + group.number + ")" : "") + ": " + divergence.message;
      $("banner").onclick = () => { if (group) select(group, true); };
    }
    const effectsOf = new Map();
    for (const effect of S.effects) {
      if (!effectsOf.has(effect.d)) effectsOf.set(effect.d, []);
      effectsOf.get(effect.d).push(effect);
    }
    // Reads of other stores' models, by the transaction that read.
    const readsOf = new Map();
    for (const read of S.reads || []) {
      if (!readsOf.has(read.t)) readsOf.set(read.t, []);
      readsOf.get(read.t).push(read);
    }

    // The timeline: only the rows in view are in the document.
    let shown = entries;
    let selected = null;
    const rows = $("rows"), spacer = $("spacer");
    function rowFor(entry, n) {
      const tags = el("span", { class: "tags" });
      let row;
      if (entry.kind === "move") {
        if (entry.back) tags.append(el("span", { class: "tag undo" }, "undo"));
        else tags.append(el("span", { class: "tag undo" }, "redo"));
        row = el("div", { class: "row move" + (entry === selected ? " selected" : ""), "data-move": String(entry.number) },
          el("span", { class: "num", title: "A move of the cursor: not a dispatch" }, entry.back ? "↶" : "↷"),
          el("span", { class: "time" }, ""), el("span", { class: "act" }, moveText(entry)), tags);
      } else {
        for (const store of entry.stores.slice(0, 2)) tags.append(el("span", { class: "tag" }, store));
        if (entry.stores.length > 2) tags.append(el("span", { class: "tag" }, "+" + (entry.stores.length - 2)));
        if (entry.longest) tags.append(el("span", { class: "tag" }, duration(entry.longest)));
        if (entry.failed) tags.append(el("span", { class: "tag fail" }, "failed"));
        if (entry.cancelled) tags.append(el("span", { class: "tag cancel" }, "cancelled"));
        if (entry.rolledBack) {
          tags.append(el("span", { class: "tag fail", title: "An all-or-nothing dispatch that failed: every store it changed was put back" }, "rolled back"));
        }
        if (entry.redacted) {
          tags.append(el("span", { class: "tag", title: "Values redacted by the recorder's privacy settings" }, "redacted"));
        }
        if (entry.unchanged) {
          tags.append(el("span", { class: "tag", title: "Changed no model: undo and redo step over it" }, "no change"));
        }
        if (entry.diverged) tags.append(el("span", { class: "tag fail" }, "diverged"));
        if (entry.replaced) tags.append(el("span", { class: "tag undo" }, "replaced"));
        else if (entry.undone) tags.append(el("span", { class: "tag undo" }, "undone"));
        if (entry.current) tags.append(el("span", { class: "tag cursor" }, "cursor"));
        row = el("div", {
          class: "row" + (entry === selected ? " selected" : "") + (entry.undone ? " undone" : "") +
            (entry.replaced ? " replaced" : "") + (entry.failed || entry.diverged ? " failed" : "") +
            (entry.cancelled && !entry.failed ? " cancelled" : ""),
          "data-dispatch": String(entry.number),
        }, el("span", { class: "num" }, String(entry.number)), el("span", { class: "time" }, clock(entry.first.t)),
          el("span", { class: "act" }, actionText(entry.first.a)), tags);
      }
      row.style.top = n * ROW - offset() + rows.scrollTop + "px";
      row.addEventListener("click", () => select(entry, false));
      return row;
    }
    // How far down the rows the list is scrolled: its scroll position, in proportion when the rows are taller than
    // the list.
    function scale() {
      const total = shown.length * ROW, view = rows.clientHeight;
      return total <= LIST_HEIGHT ? 1 : (total - view) / Math.max(1, LIST_HEIGHT - view);
    }
    const offset = () => rows.scrollTop * scale();
    const scrollTo = (position) => { rows.scrollTop = Math.max(0, position) / scale(); };
    function render() {
      spacer.style.height = Math.min(shown.length * ROW, LIST_HEIGHT) + "px";
      const first = Math.max(0, Math.floor(offset() / ROW) - 15);
      const last = Math.min(shown.length, Math.ceil((offset() + rows.clientHeight) / ROW) + 15);
      spacer.replaceChildren();
      for (let n = first; n < last; n++) spacer.append(rowFor(shown[n], n));
      if (!entries.length) {
        spacer.append(el("div", { class: "empty", id: "no-rows" }, "No dispatches recorded"));
      } else if (!shown.length) {
        spacer.append(el("div", { class: "empty", id: "no-rows" }, "Nothing matches the filter"));
      }
      const dispatches = shown === entries ? groups.length : shown.filter((e) => e.kind === "dispatch").length;
      const moves = shown === entries ? moveNumber : shown.length - dispatches;
      $("count").textContent = (shown === entries ? "" : dispatches.toLocaleString("en-US") + " of ") +
        plural(groups.length, "dispatch", "dispatches") + (moves ? " · " + plural(moves, "move") : "");
    }
    rows.addEventListener("scroll", () => requestAnimationFrame(render));
    window.addEventListener("resize", () => { render(); drawOverview(); });
    function applyFilter(value) {
      $("filter").value = value;
      const words = value.toLowerCase().split(/\s+/).filter(Boolean);
      shown = words.length ? entries.filter((e) => words.every((w) => textOf(e).includes(w))) : entries;
      for (const node of document.querySelectorAll("button.chip")) {
        node.classList.toggle("active", node.dataset.filter === value);
      }
      rows.scrollTop = 0;
      render();
    }
    $("filter").addEventListener("input", (event) => applyFilter(event.target.value));
    rows.addEventListener("keydown", (event) => {
      if (!shown.length || (event.key !== "ArrowDown" && event.key !== "ArrowUp")) return;
      event.preventDefault();
      const at = selected ? shown.indexOf(selected) : -1;
      const next = Math.max(0, Math.min(shown.length - 1, at + (event.key === "ArrowDown" ? 1 : -1)));
      select(shown[next], true);
    });

    // The overview: every row of the timeline, oldest on the left. Each column stacks, from the bottom, the share of
    // its rows that failed, were cancelled, moved the cursor, or were undone or replaced; a share is at least 2 px
    // high, so that one failure among thousands still shows.
    const overview = $("overview");
    function drawOverview() {
      if (!entries.length) return;
      overview.hidden = false;
      const width = overview.clientWidth, height = overview.clientHeight, scale = window.devicePixelRatio || 1;
      overview.width = Math.max(1, Math.round(width * scale));
      overview.height = Math.max(1, Math.round(height * scale));
      const context = overview.getContext("2d");
      context.scale(scale, scale);
      const style = getComputedStyle(document.documentElement);
      const kinds = [["fail", "--fail"], ["cancel", "--cancel"], ["move", "--undo"], ["gone", "--gone"]]
        .map(([kind, name]) => [kind, style.getPropertyValue(name).trim()]);
      const kindOf = (e) => e.kind === "move" ? "move" : e.failed || e.diverged ? "fail" : e.cancelled ? "cancel"
        : e.replaced || e.undone ? "gone" : "ok";
      const columns = Math.max(1, Math.min(entries.length, Math.floor(width / 2)));
      const columnWidth = width / columns;
      context.fillStyle = style.getPropertyValue("--accent").trim();
      context.globalAlpha = 0.28;
      context.fillRect(0, 0, width, height);
      context.globalAlpha = 1;
      for (let column = 0; column < columns; column++) {
        const from = Math.floor(column * entries.length / columns);
        const to = Math.max(from + 1, Math.floor((column + 1) * entries.length / columns));
        const counts = { ok: 0, fail: 0, cancel: 0, move: 0, gone: 0 };
        for (let n = from; n < to; n++) counts[kindOf(entries[n])]++;
        let bottom = height;
        for (const [kind, colour] of kinds) {
          if (!counts[kind]) continue;
          const share = Math.min(bottom, Math.max(2, height * counts[kind] / (to - from)));
          context.fillStyle = colour;
          context.fillRect(column * columnWidth, bottom - share, Math.max(1, columnWidth - (columns < width / 3 ? 1 : 0)),
            share);
          bottom -= share;
        }
      }
    }
    overview.addEventListener("click", (event) => {
      const rect = overview.getBoundingClientRect();
      const entry = entries[Math.min(entries.length - 1, Math.floor((event.clientX - rect.left) / rect.width * entries.length))];
      if (entry) { if (shown !== entries) applyFilter(""); select(entry, true); }
    });

    function modelsCard(position, at, changed) {
      const models = el("div", { id: "detail-models" });
      for (const store of S.stores) {
        const model = modelAt(store, position, at);
        const box = el("details", { class: "card", "data-store": store });
        if (changed.includes(store)) box.open = true;
        box.append(el("summary", {}, store + (changed.includes(store) ? " (changed)" : "") +
          (model ? " · from " + model.from : " · no model yet")));
        if (model) box.append(el("div", { class: "body" }, el("pre", { class: "json" }, jsonTree(model.model))));
        models.append(box);
      }
      return models;
    }

    // The selected row: a dispatch's transactions and their changes, or a move; then every store's models after it.
    function select(entry, scroll) {
      selected = entry;
      if (scroll) {
        const n = shown.indexOf(entry);
        if (n >= 0 && (n * ROW < offset() || (n + 1) * ROW > offset() + rows.clientHeight)) {
          scrollTo(n * ROW - rows.clientHeight / 2);
        }
      }
      render();
      const detail = $("detail");
      detail.replaceChildren();
      if (entry.kind === "move") {
        showMove(entry, detail);
        history.replaceState(null, "", "#move=" + entry.number);
        return;
      }
      const group = entry;
      const status = statusOf(group);
      detail.append(el("h2", { id: "detail-title" }, "Dispatch " + group.number + ": " + actionText(group.first.a)),
        el("div", { class: "meta" }, "dispatch id " + hex(group.id) + " · " + timeOf(group.first.t).toISOString() +
          " · record #" + group.first.i + (group.last.i !== group.first.i ? "–#" + group.last.i : "") + " · " + status));
      if (group.replaced) {
        const replacer = lineNumbered(group.records.find((r) => r.x).x);
        const by = replacer && groupOf.get(replacer.d || replacer.t);
        detail.append(el("div", { class: "note undo", id: "detail-replaced" }, "Undone, then replaced" +
          (by ? " by dispatch " + by.number + " (record #" + replacer.i + ")" : "") +
          ": it is no longer in the history. The models below are those it left at the time."));
      } else if (group.undone) {
        detail.append(el("div", { class: "note undo", id: "detail-undone" },
          "Undone: after the cursor (record #" + S.cursor + "), so not in the current state; a redo would restore it."));
      }
      const diverged = group.diverged ? divergence : null;
      const changes = el("div", { id: "detail-changes" });
      for (const r of group.records) {
        const before = modelAt(r.s, r.i - 1, r.n);
        const fields = differences(before ? before.model : undefined, modelOf(r), "", []);
        const card = el("div", { class: "card", "data-store": r.s });
        const title = el("h3", {}, el("span", { class: "store" }, r.s), "← " + actionText(r.a),
          el("span", { class: "tag" }, "record #" + r.i));
        if (r.f) title.append(el("span", { class: "tag" }, duration(Number(r.f))));
        if (r.c) title.append(el("span", { class: "tag cancel" }, "cancelled"));
        if (r.b) title.append(el("span", { class: "tag fail" }, "rolled back"));
        if (r.e !== undefined && !r.c) title.append(el("span", { class: "tag fail" }, "failed"));
        card.append(title);
        const body = el("div", { class: "body" });
        if (r.e !== undefined) {
          body.append(el("div", { class: r.c ? "error cancel" : "error" }, (r.c ? "cancelled: " : "failed: ") + r.e));
        }
        if (!fields.length) body.append(el("div", { class: "nochange" }, "No field changed."));
        else {
          const table = el("table", { class: "diff" }, el("tr", {}, el("th", {}, "field"), el("th", {}, "before"),
            el("th", {}, "after")));
          const marked = diverged && diverged.index === r.i && !r.x ? diverged.fields.map((f) => f.path) : [];
          for (const f of fields) {
            table.append(el("tr", { "data-path": f.path, class: marked.includes(f.path) ? "diverged" : "" },
              el("td", {}, f.path || "(model)"),
              el("td", { class: "before" }, f.before === undefined ? "(absent)" : stringify(f.before)),
              el("td", { class: "after" }, f.after === undefined ? "(absent)" : stringify(f.after))));
          }
          body.append(table);
        }
        card.append(body);
        changes.append(card);
      }
      detail.append(changes);
      const effects = effectsOf.get(group.id) || [];
      if (effects.length) {
        const table = el("table", { class: "diff", id: "detail-effects" }, el("tr", {}, el("th", {}, "key"),
          el("th", {}, "recorded value")));
        for (const effect of effects) {
          table.append(el("tr", {}, el("td", {}, effect.key),
            "e" in effect ? el("td", { class: "threw" }, "threw " + effect.e)
              : el("td", {}, stringify(effect.v))));
        }
        detail.append(el("div", { class: "card" }, el("h3", {}, "Recorded effects"), el("div", { class: "body" }, table)));
      }
      const transactions = [...new Set(group.records.map((r) => r.t))];
      const reads = transactions.flatMap((t) => readsOf.get(t) || []);
      if (reads.length) {
        const table = el("table", { class: "diff", id: "detail-reads" }, el("tr", {}, el("th", {}, "reader"),
          el("th", {}, "store read"), el("th", {}, "as record")));
        for (const read of reads) {
          const reader = group.records.find((r) => r.t === read.t);
          table.append(el("tr", {}, el("td", {}, reader ? reader.s : ""), el("td", {}, read.s),
            el("td", {}, read.i < S.firstIndex ? "before the history" : "#" + read.i)));
        }
        detail.append(el("div", { class: "card" }, el("h3", {}, "Models read from other stores"),
          el("div", { class: "body" }, table)));
      }
      if (diverged && diverged.fields) {
        const table = el("table", { class: "diff", id: "detail-divergence" }, el("tr", {}, el("th", {}, "field"),
          el("th", {}, "recorded"), el("th", {}, "re-run")));
        for (const f of diverged.fields) {
          table.append(el("tr", { class: "diverged", "data-path": f.path }, el("td", {}, f.path || "(model)"),
            el("td", { class: "before" }, f.expected), el("td", { class: "after" }, f.actual)));
        }
        detail.append(el("div", { class: "card" }, el("h3", {}, "Verify diverged at record #" + diverged.index + " in ",
          el("span", { class: "store" }, diverged.store)), el("div", { class: "body" }, table)));
      }
      detail.append(el("h2", { style: "margin-top:20px" }, "Models after this dispatch"),
        modelsCard(group.last.i, group.last.n, group.stores));
      history.replaceState(null, "", "#dispatch=" + group.number);
    }

    function showMove(move, detail) {
      detail.append(el("h2", { id: "detail-title" }, (move.back ? "↶ " : "↷ ") + moveText(move)),
        el("div", { class: "meta" }, "a move of the cursor (undo, redo or jump) · line " + move.line.n +
          " of the file · no reducer ran"));
      // The dispatches it stepped over, as the history stood then.
      const low = Math.min(move.from, move.to), high = Math.max(move.from, move.to);
      const over = [];
      for (const r of records) {
        if (r.n > move.line.n) break;
        const group = groupOf.get(r.d || r.t);
        if (alive(r, move.line.n) && r.i > low && r.i <= high && !over.includes(group)) over.push(group);
      }
      const numbers = over.map((g) => g.number);
      detail.append(el("div", { class: "note undo", id: "detail-move" }, (move.back ? "Undid " : "Redid ") +
        (numbers.length > 1 ? "dispatches " + numbers.slice(0, -1).join(", ") + " and " + numbers[numbers.length - 1]
          : numbers.length ? "dispatch " + numbers[0] : "nothing") +
        (move.back ? ": their records stay in the file until a new dispatch replaces them." : ".")));
      detail.append(el("h2", { style: "margin-top:20px" }, "Models after this move"),
        modelsCard(move.to, move.line.n, [...new Set(over.flatMap((g) => g.stores))]));
    }

    // Open at what the address names (#dispatch=N, #move=N, #click=N clicks the row of dispatch N, #filter=TEXT), at
    // the cursor, or at the last row.
    drawOverview();
    if (wanted.has("filter")) applyFilter(wanted.get("filter"));
    else render();
    const number = (key) => wanted.has(key) ? Number(wanted.get(key)) : NaN;
    const moves = entries.filter((e) => e.kind === "move");
    let start = groups[number("dispatch") - 1] || groups[number("click") - 1] || moves[number("move") - 1];
    if (!start && !wanted.has("filter")) start = cursorGroup || entries[entries.length - 1];
    if (!start && wanted.has("filter")) start = shown[0];
    if (start && wanted.has("click") && start.kind === "dispatch") {
      scrollTo(shown.indexOf(start) * ROW - 100);
      render();
      const row = document.querySelector('.row[data-dispatch="' + start.number + '"]');
      if (row) row.click();
    } else if (start) {
      select(start, true);
    } else if (!entries.length) {
      $("detail").replaceChildren(el("div", { class: "empty", id: "empty-session" },
        el("b", {}, "No dispatches recorded"),
        "This session has no record or move yet" +
        (S.snapshots.length ? ", only " + plural(S.snapshots.length, "snapshot") : "") + "."));
    } else {
      $("detail").replaceChildren(el("div", { class: "empty" }, "Select a dispatch."));
    }
    document.body.dataset.state = entries.length ? "ready" : "empty";
    // For tests: how long the page took to show its first dispatch.
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    } catch (error) {
      if (error instanceof SessionFailure) {
        showFailure(error.message, error.cause === "file" ? "The session file failed a check" : "This page failed");
      } else {
        showFailure(error instanceof Error ? error.name + ": " + error.message + "\n" +
          (error.stack || "").split("\n").slice(1, 4).join("\n") : error);
      }
    }
    </script>
    </body>
    </html>
    """#
}
