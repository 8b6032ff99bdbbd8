// graphmode report page: paints its text first; then inflates the span columns and draws the timelines
// (timeline.js), decoding in slices and drawing one view per task; plotly.js starts for the charts when the
// browser is idle (charts.js). Search, legends, docked details, sortable tables. window.graphmode appears when
// the timelines are on screen (tests wait for it). User strings (kernel names, NVTX messages, source lines) are
// only ever written with textContent.
(function () {
  "use strict";
  const T = window.GMTimeline, C = window.GMCharts;
  let spec = null; // the page's JSON, parsed after the first paint
  const state = { plots: 0, views: {}, errors: [] };
  window.graphmode = undefined; // set when the timelines are on screen (the test harness waits for it)

  // Long work (decoding a million spans) runs in slices: after SLICE_MS the page gives the browser a new task
  // (input, a frame) before it goes on, so no task of its own lasts long.
  const SLICE_MS = 30;
  const nextTask = () => new Promise((r) => setTimeout(r, 0));
  let sliceStart = performance.now();
  async function newSlice() { await nextTask(); sliceStart = performance.now(); }
  async function run(steps) {
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
      if (performance.now() - sliceStart > SLICE_MS) await newSlice();
    }
  }
  const nextFrame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

  // ---- legends and details ----
  function legendItem(key, colour, text, alpha) {
    const item = document.createElement("span");
    item.className = "item"; item.dataset.key = key;
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = colour;
    if (alpha !== undefined) sw.style.opacity = alpha;
    if (key === "selected") { sw.style.background = "transparent"; sw.style.border = "2px solid " + colour; }
    item.append(sw, document.createTextNode(text));
    return item;
  }
  function buildLegend(el, views) {
    if (!el) return;
    const seen = new Map();
    let faded = false;
    for (const v of views) {
      for (const g of v.spec.hover.groups) {
        if (g.count > 0 && !seen.has(g.colour)) seen.set(g.colour, g.legend);
      }
      for (let i = 0; i < v.d.n && !faded; i++) if (v.d.outside[i]) faded = true;
    }
    el.replaceChildren();
    for (const [colour, text] of seen) el.append(legendItem(colour, colour, text));
    if (faded) el.append(legendItem("faded", "#888", "pale: " + views[0].spec.fade_note, 0.35));
    if (views.some((v) => (v.spec.left_out || []).length)) {
      el.append(legendItem("left-out", "repeating-linear-gradient(135deg, #8a8f98 0 1px, #ffffff 1px 4px)",
        "hatched: spans this page does not hold; the label says how many and how to see them"));
    }
    const nm = legendItem("nomatch", "#d0d0d0", "grey: not matching the search");
    nm.hidden = true; nm.classList.add("search-only");
    el.append(nm, legendItem("selected", "#ffb000", "outlined: the span under the pointer and the work with its correlation id"));
  }
  function showDetails(box, fields) {
    if (!box) return;
    box.replaceChildren();
    box.scrollTop = 0; // a long entry scrolls inside the box (report.css): each new one starts at its top
    if (!fields) {
      const p = document.createElement("p"); p.className = "hint"; p.textContent = "Hover a span for its details; click to keep them.";
      box.append(p); return;
    }
    const dl = document.createElement("dl");
    for (const [k, v] of fields) {
      const dt = document.createElement("dt"); dt.textContent = k;
      const dd = document.createElement("dd");
      if (typeof v === "string") dd.textContent = v;
      else { // a long text: shortened, the whole of it in a collapsed element under it
        const more = document.createElement("details"), summary = document.createElement("summary"), whole = document.createElement("div");
        summary.textContent = "whole " + k + " (" + v.full.length.toLocaleString("en-US") + " characters)";
        whole.className = "whole"; whole.textContent = v.full;
        more.append(summary, whole);
        dd.append(document.createTextNode(v.short), more);
      }
      dl.append(dt, dd);
    }
    box.append(dl);
  }

  // ---- timelines ----
  async function drawTimelines() {
    const views = spec.plots.filter((p) => p.kind === "timeline");
    if (!views.length) return [];
    const buf = await (await C.inflate("gm-spans")).arrayBuffer();
    const made = [];
    const syncGroups = {};
    for (const v of views) {
      await newSlice(); // each view decoded and drawn in tasks of its own
      const root = document.getElementById(v.div);
      const data = await run(T.decodeSteps(v, buf));
      const sync = v.sync;
      const detailsBox = document.getElementById(sync ? "gm-iter-details" : v.div + "-details");
      const tl = new T.Timeline(root, v, data, {
        onSelect: (fields, who) => {
          showDetails(detailsBox, fields);
          if (sync) for (const o of syncGroups[sync]) if (o !== who && (o.hover >= 0 || o.pinned >= 0)) { o.hover = -1; o.pinned = -1; o.linked = []; o.schedule(); }
        },
      });
      if (sync) {
        (syncGroups[sync] = syncGroups[sync] || []).push(tl);
        tl.onRange((a, b, who) => { for (const o of syncGroups[sync]) if (o !== who) o.setRange(a, b, true); });
      }
      state.views[v.div] = tl;
      made.push(tl);
      tl.draw();
      performance.mark("gm-view-" + v.div);
    }
    for (const g of Object.values(syncGroups)) buildLegend(document.getElementById("gm-iter-legend"), g);
    const full = state.views["gm-timeline-full"];
    if (full) {
      buildLegend(document.getElementById("gm-timeline-full-legend"), [full]);
      await newSlice();
      attachWholeRun(full);
    }
    return made;
  }

  function attachWholeRun(full) {
    const miniRoot = document.getElementById("gm-minimap");
    if (miniRoot) {
      const miniSpec = Object.assign({}, full.spec, { range: full.spec.full.slice() });
      const mini = new T.Timeline(miniRoot, miniSpec, full.d, { compact: true, gutter: full.gutter });
      mini.draw();
      const win = document.createElement("div");
      win.className = "window";
      miniRoot.append(win);
      const place = () => {
        const [a, b] = full.range, k = mini.plotW / (miniSpec.full[1] - miniSpec.full[0]);
        const x0 = Math.max(0, (a - miniSpec.full[0]) * k), x1 = Math.min(mini.plotW, (b - miniSpec.full[0]) * k);
        win.style.left = mini.gutter + x0 + "px"; win.style.width = Math.max(3, x1 - x0) + "px";
      };
      place();
      full.onRange(place);
      const go = (e) => {
        const r = mini.canvas.getBoundingClientRect();
        if (e.clientX - r.left < mini.gutter) return;
        const t = mini.tOf(e.clientX - r.left), half = (full.range[1] - full.range[0]) / 2;
        full.setRange(t - half, t + half);
      };
      miniRoot.addEventListener("pointerdown", (e) => { go(e); miniRoot.setPointerCapture(e.pointerId); miniRoot._drag = true; });
      miniRoot.addEventListener("pointermove", (e) => { if (miniRoot._drag) go(e); });
      miniRoot.addEventListener("pointerup", () => { miniRoot._drag = false; });
      state.minimap = mini;
    }
    const on = (id, fn) => { const el = document.getElementById(id); if (el) el.addEventListener("click", fn); };
    on("gm-zoom-out", () => full.zoom(2));
    on("gm-reset", () => full.reset());
    on("gm-whole", () => full.setRange(full.spec.full[0], full.spec.full[1]));
    // search: every timeline greys out what does not match; the kernel table keeps the matching rows
    const input = document.getElementById("gm-search"), count = document.getElementById("gm-search-count");
    let timer = 0;
    const apply = () => {
      const q = input.value;
      let n = 0;
      for (const tl of Object.values(state.views)) {
        tl.match = T.matchNames(tl.spec, q);
        tl.schedule();
      }
      if (full.match) for (let i = 0; i < full.d.n; i++) n += full.match[full.d.name[i]];
      count.textContent = full.match ? n.toLocaleString("en-US") + " matching spans in the whole run" : "";
      for (const el of document.querySelectorAll(".legend .search-only")) el.hidden = !full.match;
      const rows = document.querySelectorAll("#gm-kernels tbody tr"), ql = q.trim().toLowerCase();
      for (const r of rows) r.hidden = ql !== "" && !r.dataset.name.includes(ql);
      state.searchMatches = n;
    };
    if (input) input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 120); });
    const jump = (dir) => {
      if (!full.match) return;
      const d = full.d, mid = (full.range[0] + full.range[1]) / 2;
      let best = -1;
      for (let i = 0; i < d.n; i++) {
        if (!full.match[d.name[i]]) continue;
        const s = d.start[i];
        if (dir > 0 ? s > mid + 1 && (best < 0 || s < d.start[best]) : s < mid - 1 && (best < 0 || s > d.start[best])) best = i;
      }
      if (best < 0) return;
      const w = Math.max(full.range[1] - full.range[0], 1), dur = d.end[best] - d.start[best];
      const half = dur * 3 > w ? dur * 2 : w / 2, c = d.start[best] + dur / 2;
      full.setRange(c - half, c + half);
      full.select(best, true);
    };
    on("gm-next", () => jump(1));
    on("gm-prev", () => jump(-1));
    state.applySearch = (q) => { input.value = q; apply(); };
  }

  // ---- sortable tables ----
  function attachSorting() {
    for (const table of document.querySelectorAll("table.sortable")) {
      const heads = table.querySelectorAll("thead th");
      heads.forEach((th, col) => {
        th.tabIndex = 0;
        th.addEventListener("click", () => {
          const asc = th.getAttribute("aria-sort") !== "ascending" && (th.getAttribute("aria-sort") === "descending" || th.dataset.type === "text");
          heads.forEach((h) => h.removeAttribute("aria-sort"));
          th.setAttribute("aria-sort", asc ? "ascending" : "descending");
          const text = th.dataset.type === "text";
          const rows = Array.from(table.tBodies[0].rows);
          const key = (r) => { const v = r.cells[col].dataset.sort; return text ? v : parseFloat(v); };
          rows.sort((a, b) => { const x = key(a), y = key(b); const c = x < y ? -1 : x > y ? 1 : 0; return asc ? c : -c; });
          table.tBodies[0].append(...rows);
        });
      });
    }
  }

  // ---- for tests and benchmarks ----
  function spansOf(div, source, label) {
    const tl = state.views[div], groups = tl.spec.hover.groups, d = tl.d, out = [];
    for (let i = 0; i < d.n; i++) { const g = groups[d.group[i]]; if (g.source === source && g.label === label) out.push(i); }
    return out.sort((a, b) => d.start[a] - d.start[b] || a - b);
  }
  function detailsText(div) { // 'key: value' lines of the details box a view writes to
    const box = document.getElementById(state.views[div].spec.sync ? "gm-iter-details" : div + "-details");
    return Array.from(box.querySelectorAll("dt")).map((dt) => dt.textContent + ": " + dt.nextSibling.textContent).join("\n");
  }
  const api = {
    range: (div) => state.views[div].range.slice(),
    initial: (div) => state.views[div].initial.slice(),
    count: (div, source, label) => spansOf(div, source, label).length,
    // page coordinates of the point at `frac` along the k-th span (start order) of a group, after bringing it into view
    spanPoint: (div, source, label, k, frac) => {
      const tl = state.views[div], i = spansOf(div, source, label)[k], d = tl.d;
      const s = d.start[i], e = d.end[i];
      tl.canvas.scrollIntoView({ block: "center" });
      if (s < tl.range[0] || e > tl.range[1] || (e - s) * tl.k() < 40) { // bring it in and make it wide
        const w = Math.max(e - s, 1) * 4;
        tl.setRange(s - w, e + w);
        tl.draw();
      }
      const r = tl.canvas.getBoundingClientRect(), t = s + (e - s) * frac;
      return { x: r.left + tl.xOf(t), y: r.top + tl.top + tl.laneOf(i) * tl.laneH + tl.laneH / 2, index: i, start: s, end: e };
    },
    showSpan: (div, source, label, k) => {
      const tl = state.views[div], i = spansOf(div, source, label)[k];
      tl.select(i, true);
      return detailsText(div);
    },
    hovered: (div) => { const tl = state.views[div]; return tl.pinned >= 0 ? tl.pinned : tl.hover; },
    unpin: (div) => { const tl = state.views[div]; tl.pinned = -1; tl.select(-1, false); return true; },
    details: (div) => detailsText(div),
    linked: (div) => state.views[div].linked.length,
    arrows: (div) => state.views[div].arrows || 0,
    used: (div) => Array.from(state.views[div].used),
    legend: (id) => Array.from(document.querySelectorAll("#" + id + " .item")).filter((e) => !e.hidden).map((e) => e.dataset.key),
    search: (q) => { state.applySearch(q); return state.searchMatches; },
    drawnAt: (div) => state.views[div].drawnAt,
    leftOut: (div) => state.views[div].leftOutDrawn || [],
    ticks: (div) => state.views[div].axis,
    setRange: (div, a, b) => { const tl = state.views[div]; tl.setRange(a, b); tl.draw(); return tl.range.slice(); },
  };

  // plotly.js starts when the browser is idle after the timelines are drawn (never because the reader
  // scrolled), and draws the charts one per task (charts.js); tests ask for them with loadCharts().
  let charts = null;
  const loadCharts = () => {
    if (!charts) {
      charts = C.draw(spec.plots.filter((p) => p.kind === "plotly")).then(() => {
        if (window.graphmode) window.graphmode.chartsMs = performance.now();
        document.body.setAttribute("data-charts", "1");
        return performance.now();
      });
    }
    return charts;
  };
  api.loadCharts = loadCharts;

  function start() {
    const t0 = performance.now();
    spec = JSON.parse(document.getElementById("gm-data").textContent);
    state.plots = spec.plots.length;
    attachSorting();
    drawTimelines().then(async (made) => {
      await nextFrame();
      const firstPaintMs = performance.now();
      const full = state.views["gm-timeline-full"];
      const count = (source, label) => {
        if (!full) return 0;
        let n = 0;
        const g = full.spec.hover.groups;
        for (const x of g) if (x.source === source && (label === null || x.label === label)) n += x.count;
        return n;
      };
      window.graphmode = Object.assign(api, {
        firstPaintMs, renderedMs: firstPaintMs, scriptStartMs: t0, timelines: made.length, plots: state.plots,
        kernelSpansDrawn: count("gpu", "kernel"), gpuSpansDrawn: count("gpu", null), apiCallsDrawn: count("api", null),
      });
      document.body.setAttribute("data-rendered", "1");
      C.idle().then(loadCharts);
    }).catch((err) => {
      window.graphmode = { error: String(err && err.stack || err) };
      throw err;
    });
  }
  // The text first: the page's own work starts after the frame that paints it (a timer too, in case frames
  // are throttled, as in a frame scrolled out of view).
  let begun = false;
  const begin = () => { if (!begun) { begun = true; start(); } };
  requestAnimationFrame(() => setTimeout(begin, 0));
  setTimeout(begin, 1000);
})();
