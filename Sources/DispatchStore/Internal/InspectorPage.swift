// The session inspector's page (``SessionInspector``): one file, its styles and script inline, the session embedded
// where `/*SESSION*/null` stands. Kept apart from the Swift that fills it, so that the page reads as a page.

enum InspectorPage {
  static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title><!--TITLE--> · DispatchStore session</title>
    <style>
    :root {
      --bg: #f6f7f9; --panel: #fff; --ink: #1d2330; --muted: #6b7385; --line: #e3e6ec; --accent: #3b5bdb;
      --accent-soft: #e8edff; --fail: #c92a2a; --fail-soft: #fff0f0; --cancel: #b7791f; --cancel-soft: #fff8e6;
      --add: #2b8a3e; --add-soft: #ebfbee; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
      --sans: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
    }
    @media (prefers-color-scheme: dark) {
      :root { --bg: #12151c; --panel: #1a1f29; --ink: #e6e9ef; --muted: #98a1b3; --line: #2a3140;
        --accent: #8ea2ff; --accent-soft: #232b45; --fail: #ff8787; --fail-soft: #3a2024; --cancel: #f2c14e;
        --cancel-soft: #3a3220; --add: #8ce99a; --add-soft: #1f3326; }
    }
    * { box-sizing: border-box; }
    body { margin: 0; font: 14px/1.45 var(--sans); color: var(--ink); background: var(--bg); height: 100vh;
      display: flex; flex-direction: column; }
    header { padding: 14px 20px; background: var(--panel); border-bottom: 1px solid var(--line); }
    header h1 { margin: 0 0 6px; font-size: 17px; font-weight: 600; }
    header h1 small { color: var(--muted); font-weight: 400; }
    .chips { display: flex; flex-wrap: wrap; gap: 6px; }
    .chip { padding: 2px 9px; border-radius: 999px; background: var(--accent-soft); color: var(--accent);
      font-size: 12px; white-space: nowrap; }
    .chip.fail { background: var(--fail-soft); color: var(--fail); }
    .chip.cancel { background: var(--cancel-soft); color: var(--cancel); }
    .banner { margin-top: 10px; padding: 8px 12px; border-radius: 8px; background: var(--fail-soft); color: var(--fail);
      font-family: var(--mono); font-size: 12px; white-space: pre-wrap; cursor: pointer; }
    main { flex: 1; display: grid; grid-template-columns: minmax(340px, 42%) 1fr; min-height: 0; }
    #timeline { display: flex; flex-direction: column; border-right: 1px solid var(--line); min-height: 0;
      background: var(--panel); }
    #filter { margin: 10px; padding: 7px 10px; border: 1px solid var(--line); border-radius: 8px;
      background: var(--bg); color: var(--ink); font: inherit; }
    #count { padding: 0 12px 6px; color: var(--muted); font-size: 12px; }
    #rows { flex: 1; overflow-y: auto; position: relative; outline: none; }
    #spacer { position: relative; }
    .row { position: absolute; left: 0; right: 0; height: 34px; display: grid;
      grid-template-columns: 58px 84px 1fr auto; gap: 8px; align-items: center; padding: 0 12px;
      border-bottom: 1px solid var(--line); cursor: pointer; font-size: 13px; }
    .row:hover { background: var(--bg); }
    .row.selected { background: var(--accent-soft); box-shadow: inset 3px 0 0 var(--accent); }
    .row.undone { opacity: .45; }
    .row.failed .act { color: var(--fail); }
    .row .num { color: var(--muted); font-family: var(--mono); font-size: 12px; }
    .row .time { color: var(--muted); font-family: var(--mono); font-size: 12px; }
    .row .act { font-family: var(--mono); font-size: 12px; overflow: hidden; text-overflow: ellipsis;
      white-space: nowrap; }
    .row .tags { display: flex; gap: 4px; }
    .tag { font-size: 11px; padding: 1px 6px; border-radius: 5px; background: var(--bg); color: var(--muted);
      border: 1px solid var(--line); }
    .tag.fail { color: var(--fail); border-color: var(--fail); }
    .tag.cancel { color: var(--cancel); border-color: var(--cancel); }
    .tag.cursor { color: var(--accent); border-color: var(--accent); }
    #detail { overflow-y: auto; padding: 18px 22px; min-height: 0; }
    #detail h2 { margin: 0 0 4px; font-size: 16px; }
    #detail .meta { color: var(--muted); font-size: 12px; margin-bottom: 14px; font-family: var(--mono); }
    .card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; margin-bottom: 14px;
      overflow: hidden; }
    .card > h3 { margin: 0; padding: 9px 14px; font-size: 13px; border-bottom: 1px solid var(--line);
      display: flex; gap: 8px; align-items: center; }
    .card > h3 .store { font-family: var(--mono); }
    .card .body { padding: 10px 14px; }
    .error { color: var(--fail); font-family: var(--mono); font-size: 12px; margin-bottom: 8px; }
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
    .empty { color: var(--muted); padding: 40px; text-align: center; }
    </style>
    </head>
    <body>
    <header>
      <h1><!--TITLE--> <small>DispatchStore session</small></h1>
      <div class="chips" id="summary"></div>
      <div class="banner" id="banner" hidden></div>
    </header>
    <main>
      <section id="timeline">
        <input id="filter" type="search" placeholder="Filter by store, action or error" aria-label="Filter">
        <div id="count"></div>
        <div id="rows" tabindex="0"><div id="spacer"></div></div>
      </section>
      <section id="detail"><div class="empty">Select a dispatch.</div></section>
    </main>
    <script type="application/json" id="session">/*SESSION*/null</script>
    <script>
    "use strict";
    const S = JSON.parse(document.getElementById("session").textContent);
    const ROW = 34;
    const $ = (id) => document.getElementById(id);
    const el = (tag, attrs, ...children) => {
      const node = document.createElement(tag);
      for (const [key, value] of Object.entries(attrs || {})) {
        if (key === "class") node.className = value; else node.setAttribute(key, value);
      }
      for (const child of children) node.append(child);
      return node;
    };

    // Records, by position; the dispatches they belong to, in the order they started.
    const records = S.records;
    const positionOf = new Map(records.map((r, offset) => [r.i, offset]));
    const byStore = new Map();
    records.forEach((r, offset) => {
      if (!byStore.has(r.s)) byStore.set(r.s, []);
      byStore.get(r.s).push(offset);
    });
    const groups = [];
    const groupOf = new Map();
    for (const r of records) {
      const id = r.d || r.t;
      let group = groupOf.get(id);
      if (!group) {
        group = { id, records: [], stores: [], failed: false, cancelled: false, longest: 0 };
        groupOf.set(id, group);
        groups.push(group);
      }
      group.records.push(r);
      if (!group.stores.includes(r.s)) group.stores.push(r.s);
      if (r.e) group.failed = true;
      if (r.c) group.cancelled = true;
      group.longest = Math.max(group.longest, Number(r.f || 0));
    }
    groups.forEach((group, number) => {
      group.number = number + 1;
      group.last = group.records[group.records.length - 1].i;
      group.first = group.records[0].i;
      group.text = (group.stores.join(" ") + " " + JSON.stringify(group.records[0].a) + " " +
        group.records.map((r) => r.e || "").join(" ")).toLowerCase();
      if (S.divergence && S.divergence.index !== undefined && group.records.some((r) => r.i === S.divergence.index)) {
        group.diverged = true;
      }
    });

    // Models at a position: the newest of a store's latest record and its latest snapshot.
    function latestRecord(store, position) {
      const offsets = byStore.get(store) || [];
      let low = 0, high = offsets.length - 1, found = -1;
      while (low <= high) {
        const middle = (low + high) >> 1;
        if (records[offsets[middle]].i <= position) { found = middle; low = middle + 1; } else high = middle - 1;
      }
      return found < 0 ? null : records[offsets[found]];
    }
    function modelAt(store, position) {
      const record = latestRecord(store, position);
      let snapshot = null;
      for (const s of S.snapshots) if (s.i <= position + 1 && s.m && store in s.m) snapshot = s;
      if (snapshot && (!record || snapshot.i > record.i)) return { model: snapshot.m[store], from: "snapshot" };
      return record ? { model: record.m, from: "#" + record.i } : null;
    }

    // Field differences, by key path, as the library reports them.
    function differences(before, after, path, out) {
      const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
      if (isObject(before) && isObject(after)) {
        const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
        for (const key of keys) differences(before[key], after[key], path ? path + "." + key : key, out);
      } else if (Array.isArray(before) && Array.isArray(after)) {
        const count = Math.max(before.length, after.length);
        for (let i = 0; i < count; i++) differences(before[i], after[i], path + "[" + i + "]", out);
      } else if (JSON.stringify(before) !== JSON.stringify(after)) {
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
      if (action === null || typeof action !== "object") return JSON.stringify(action);
      const keys = Object.keys(action);
      if (keys.length !== 1) return JSON.stringify(action);
      const payload = action[keys[0]];
      if (payload && typeof payload === "object" && !Array.isArray(payload)) {
        const values = Object.entries(payload).map(([k, v]) => (k.startsWith("_") ? "" : k + ": ") + JSON.stringify(v));
        return keys[0] + "(" + values.join(", ") + ")";
      }
      return keys[0] + "(" + JSON.stringify(payload) + ")";
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

    // Summary and divergence.
    const cursorGroup = groups.find((g) => g.records.some((r) => r.i === S.cursor));
    const failed = groups.filter((g) => g.failed).length;
    const cancelled = groups.filter((g) => g.cancelled).length;
    $("summary").append(
      el("span", { class: "chip" }, records.length + " records"),
      el("span", { class: "chip" }, groups.length + " dispatches"),
      el("span", { class: "chip" }, S.stores.length + " stores: " + S.stores.join(", ")),
      el("span", { class: "chip" + (failed ? " fail" : "") }, failed + " failed"),
      el("span", { class: "chip" + (cancelled ? " cancel" : "") }, cancelled + " cancelled"),
      el("span", { class: "chip" }, "cursor #" + S.cursor),
      el("span", { class: "chip" }, S.snapshots.length + " snapshots"));
    if (S.divergence) {
      $("banner").hidden = false;
      $("banner").textContent = "Verify: " + S.divergence.message;
      $("banner").onclick = () => {
        const group = groups.find((g) => g.diverged);
        if (group) select(group, true);
      };
    }

    // The timeline: only the rows in view are in the document.
    let shown = groups;
    let selected = null;
    const rows = $("rows"), spacer = $("spacer");
    function render() {
      spacer.style.height = shown.length * ROW + "px";
      const first = Math.max(0, Math.floor(rows.scrollTop / ROW) - 15);
      const last = Math.min(shown.length, Math.ceil((rows.scrollTop + rows.clientHeight) / ROW) + 15);
      spacer.replaceChildren();
      for (let n = first; n < last; n++) {
        const group = shown[n];
        const tags = el("span", { class: "tags" });
        for (const store of group.stores.slice(0, 3)) tags.append(el("span", { class: "tag" }, store));
        if (group.stores.length > 3) tags.append(el("span", { class: "tag" }, "+" + (group.stores.length - 3)));
        if (group.longest) tags.append(el("span", { class: "tag" }, duration(group.longest)));
        if (group.failed) tags.append(el("span", { class: "tag fail" }, "failed"));
        if (group.cancelled) tags.append(el("span", { class: "tag cancel" }, "cancelled"));
        if (group.diverged) tags.append(el("span", { class: "tag fail" }, "diverged"));
        if (group === cursorGroup) tags.append(el("span", { class: "tag cursor" }, "cursor"));
        const row = el("div", {
          class: "row" + (group === selected ? " selected" : "") + (group.first > S.cursor ? " undone" : "") +
            (group.failed || group.diverged ? " failed" : ""),
          "data-dispatch": String(group.number), style: "top:" + n * ROW + "px",
        }, el("span", { class: "num" }, "#" + group.first), el("span", { class: "time" }, clock(group.records[0].t)),
          el("span", { class: "act" }, actionText(group.records[0].a)), tags);
        row.addEventListener("click", () => select(group, false));
        spacer.append(row);
      }
      $("count").textContent = shown.length === groups.length ? groups.length + " dispatches"
        : shown.length + " of " + groups.length + " dispatches";
    }
    rows.addEventListener("scroll", () => requestAnimationFrame(render));
    window.addEventListener("resize", render);
    $("filter").addEventListener("input", (event) => {
      const words = event.target.value.toLowerCase().split(/\s+/).filter(Boolean);
      shown = words.length ? groups.filter((g) => words.every((w) => g.text.includes(w))) : groups;
      rows.scrollTop = 0;
      render();
    });
    rows.addEventListener("keydown", (event) => {
      if (!shown.length || (event.key !== "ArrowDown" && event.key !== "ArrowUp")) return;
      event.preventDefault();
      const at = selected ? shown.indexOf(selected) : -1;
      const next = Math.max(0, Math.min(shown.length - 1, at + (event.key === "ArrowDown" ? 1 : -1)));
      select(shown[next], true);
    });

    // The selected dispatch: each transaction's changes, then every store's models after it.
    function select(group, scroll) {
      selected = group;
      if (scroll) {
        const n = shown.indexOf(group);
        if (n >= 0 && (n * ROW < rows.scrollTop || (n + 1) * ROW > rows.scrollTop + rows.clientHeight)) {
          rows.scrollTop = n * ROW - rows.clientHeight / 2;
        }
      }
      render();
      const detail = $("detail");
      detail.replaceChildren();
      const status = group.failed ? "failed" : group.cancelled ? "cancelled" : "succeeded";
      detail.append(el("h2", { id: "detail-title" }, "Dispatch " + group.number + ": " + actionText(group.records[0].a)),
        el("div", { class: "meta" }, "id " + hex(group.id) + " · " + timeOf(group.records[0].t).toISOString() +
          " · records #" + group.first + (group.last !== group.first ? "–#" + group.last : "") + " · " + status +
          (group.first > S.cursor ? " · undone (after the cursor)" : "")));
      const divergence = group.diverged ? S.divergence : null;
      const changes = el("div", { id: "detail-changes" });
      for (const r of group.records) {
        const before = modelAt(r.s, r.i - 1);
        const fields = differences(before ? before.model : undefined, r.m, "", []);
        const card = el("div", { class: "card", "data-store": r.s });
        const title = el("h3", {}, el("span", { class: "store" }, r.s), "← " + actionText(r.a));
        if (r.f) title.append(el("span", { class: "tag" }, duration(Number(r.f))));
        if (r.c) title.append(el("span", { class: "tag cancel" }, "cancelled"));
        card.append(title);
        const body = el("div", { class: "body" });
        if (r.e) body.append(el("div", { class: "error" }, "failed: " + r.e));
        if (!fields.length) body.append(el("div", { class: "nochange" }, "No field changed."));
        else {
          const table = el("table", { class: "diff" }, el("tr", {}, el("th", {}, "field"), el("th", {}, "before"),
            el("th", {}, "after")));
          const marked = divergence && divergence.index === r.i ? divergence.fields.map((f) => f.path) : [];
          for (const f of fields) {
            table.append(el("tr", { "data-path": f.path, class: marked.includes(f.path) ? "diverged" : "" },
              el("td", {}, f.path || "(model)"),
              el("td", { class: "before" }, f.before === undefined ? "(absent)" : JSON.stringify(f.before)),
              el("td", { class: "after" }, f.after === undefined ? "(absent)" : JSON.stringify(f.after))));
          }
          body.append(table);
        }
        card.append(body);
        changes.append(card);
      }
      detail.append(changes);
      if (divergence) {
        const table = el("table", { class: "diff", id: "detail-divergence" }, el("tr", {}, el("th", {}, "field"),
          el("th", {}, "recorded"), el("th", {}, "re-run")));
        for (const f of divergence.fields) {
          table.append(el("tr", { class: "diverged", "data-path": f.path }, el("td", {}, f.path || "(model)"),
            el("td", { class: "before" }, f.expected), el("td", { class: "after" }, f.actual)));
        }
        detail.append(el("div", { class: "card" }, el("h3", {}, "Verify diverged at #" + divergence.index + " in ",
          el("span", { class: "store" }, divergence.store)), el("div", { class: "body" }, table)));
      }
      const models = el("div", { id: "detail-models" });
      for (const store of S.stores) {
        const at = modelAt(store, group.last);
        const changed = group.stores.includes(store);
        const box = el("details", { class: "card", "data-store": store });
        if (changed) box.open = true;
        box.append(el("summary", {}, store + (changed ? " (changed)" : "") + (at ? " · from " + at.from : " · no model")));
        if (at) box.append(el("div", { class: "body" }, el("pre", { class: "json" }, jsonTree(at.model))));
        models.append(box);
      }
      detail.append(el("h2", { style: "margin-top:20px" }, "Models after this dispatch"), models);
      history.replaceState(null, "", "#dispatch=" + group.number);
    }

    // Open at the dispatch in the address (#dispatch=N), or click its row (#click=N), or at the cursor.
    render();
    const wanted = /#(dispatch|click)=(\d+)/.exec(location.hash);
    const start = wanted ? groups[Number(wanted[2]) - 1] : (cursorGroup || groups[groups.length - 1]);
    if (start && wanted && wanted[1] === "click") {
      rows.scrollTop = Math.max(0, shown.indexOf(start) * ROW - 100);
      render();
      document.querySelector('.row[data-dispatch="' + start.number + '"]').click();
    } else if (start) {
      select(start, true);
    }
    // For tests: how long the page took to show its first dispatch.
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    </script>
    </body>
    </html>
    """#
}
