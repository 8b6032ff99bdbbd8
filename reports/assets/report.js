// graphmode report page: draws the plots described in #gm-data, shows span details on hover,
// links a CPU launch to the GPU work it caused (same correlation id), keeps aligned views in step.
// User strings (kernel names, NVTX messages) are only ever written with textContent.
(function () {
  "use strict";
  const spec = JSON.parse(document.getElementById("gm-data").textContent);
  const info = document.getElementById("gm-info");
  const DTYPES = { f8: Float64Array, f4: Float32Array, i4: Int32Array, i2: Int16Array, i1: Int8Array };

  function decode(col) {
    if (col === undefined || col === null) return null;
    if (Object.prototype.hasOwnProperty.call(col, "const")) return { constant: col.const };
    const bin = atob(col.bdata);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return { array: new DTYPES[col.dtype](bytes.buffer) };
  }
  function at(col, i) { return col === null ? null : ("constant" in col ? col.constant : col.array[i]); }

  function prepareHover(h) {
    if (!h) return null;
    for (const g of h.groups) {
      g.cols = { name_id: decode(g.name_id), lane: decode(g.lane), correlation_id: decode(g.correlation_id) };
      g.fieldCols = {};
      for (const k of Object.keys(g.fields)) g.fieldCols[k] = decode(g.fields[k]);
      g.textCols = {};
      for (const k of Object.keys(g.text_codes)) g.textCols[k] = decode(g.text_codes[k]);
    }
    return h;
  }

  function fmtDur(ns) {
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    if (ns >= 1e3) return (ns / 1e3).toFixed(2) + " µs";
    return ns.toFixed(0) + " ns";
  }

  // Reads a span's fields: x holds (start, end, NaN) per span in the plot's unit.
  function spanFields(gd, h, traceIndex, row) {
    const tr = gd.data[traceIndex];
    const g = h.groups[tr.meta.group];
    const scale = h.unit === "us" ? 1e3 : 1e6;
    const x = tr.x;
    const start = x[3 * row] * scale, end = x[3 * row + 1] * scale;
    const out = [["name", h.names[at(g.cols.name_id, row)]], ["what", g.label + " (" + g.source + ")"],
      ["duration", fmtDur(end - start)], ["start", fmtDur(start) + " after " + (h.unit === "us" ? "the iteration start" : "the pass start")],
      ["lane", h.lanes[at(g.cols.lane, row)]]];
    const corr = at(g.cols.correlation_id, row);
    if (corr) out.push(["correlation id", String(corr)]);
    const f = g.fieldCols;
    if (f.grid_x && at(f.grid_x, row)) out.push(["grid", [at(f.grid_x, row), at(f.grid_y, row), at(f.grid_z, row)].join("×")]);
    if (f.block_x && at(f.block_x, row)) out.push(["block", [at(f.block_x, row), at(f.block_y, row), at(f.block_z, row)].join("×")]);
    for (const k of ["stream_id", "graph_id", "graph_node_id", "bytes", "return_code"]) {
      if (f[k] && at(f[k], row)) out.push([k.replace(/_/g, " "), String(at(f[k], row))]);
    }
    for (const k of Object.keys(g.textCols)) {
      const v = g.text_fields[k][at(g.textCols[k], row)];
      // source: the user's line that launched the work (or created its graph node); '' when not recorded
      if (v !== undefined && v !== "") out.push([k === "source" ? "source line" : k, v]);
    }
    return { fields: out, start: start, corr: corr, lane: at(g.cols.lane, row), source: g.source };
  }

  function showInfo(fields) {
    info.replaceChildren();
    for (const [k, v] of fields) {
      const line = document.createElement("div");
      const key = document.createElement("b");
      key.textContent = k + ": ";
      line.appendChild(key);
      line.appendChild(document.createTextNode(v));
      info.appendChild(line);
    }
  }

  // Spans with the same correlation id: the launch call (CPU) and the kernels/copies/graph it caused.
  function linkedSpans(gd, h, corr) {
    if (!gd._gmCorr) {
      const m = new Map();
      gd.data.forEach((tr, ti) => {
        if (!tr.meta || tr.meta.group === undefined) return;
        const c = h.groups[tr.meta.group].cols.correlation_id;
        const n = tr.x.length / 3;
        for (let r = 0; r < n; r++) {
          const v = at(c, r);
          if (!v) continue;
          if (!m.has(v)) m.set(v, []);
          m.get(v).push([ti, r]);
        }
      });
      gd._gmCorr = m;
    }
    return gd._gmCorr.get(corr) || [];
  }

  function highlight(gd, h, picked) {
    const idxLinked = gd.data.findIndex((t) => t.meta && t.meta.role === "linked");
    const idxArrows = gd.data.findIndex((t) => t.meta && t.meta.role === "arrows");
    const lx = [], ly = [], ax = [], ay = [];
    if (picked.corr) {
      const spans = linkedSpans(gd, h, picked.corr).map(([ti, r]) => {
        const tr = gd.data[ti];
        return { x0: tr.x[3 * r], x1: tr.x[3 * r + 1], y: tr.y[3 * r], src: h.groups[tr.meta.group].source };
      });
      for (const s of spans) { lx.push(s.x0, s.x1, NaN); ly.push(s.y, s.y, NaN); }
      for (const cpu of spans.filter((s) => s.src === "api")) {
        for (const g of spans.filter((s) => s.src === "gpu")) { ax.push(cpu.x0, g.x0, NaN); ay.push(cpu.y, g.y, NaN); }
      }
    }
    Plotly.restyle(gd, { x: [lx, ax], y: [ly, ay] }, [idxLinked, idxArrows]);
  }

  function attachTimeline(gd, h) {
    const onPoint = (ev) => {
      const p = ev.points && ev.points[0];
      if (!p || !p.data.meta || p.data.meta.group === undefined) return;
      const picked = spanFields(gd, h, p.curveNumber, Math.floor(p.pointNumber / 3));
      showInfo(picked.fields);
      highlight(gd, h, picked);
    };
    gd.on("plotly_hover", onPoint);
    gd.on("plotly_click", onPoint);
  }

  // Views in one sync group share the x range (the eager iteration and the graph replay).
  const syncGroups = {};
  function attachSync(gd, group) {
    (syncGroups[group] = syncGroups[group] || []).push(gd);
    gd.on("plotly_relayout", (ev) => {
      if (gd._gmSyncing) return;
      const upd = {};
      for (const k of ["xaxis.range[0]", "xaxis.range[1]", "xaxis.autorange"]) if (k in ev) upd[k] = ev[k];
      if (!Object.keys(upd).length) return;
      for (const other of syncGroups[group]) {
        if (other === gd) continue;
        other._gmSyncing = true;
        Plotly.relayout(other, upd).then(() => { other._gmSyncing = false; });
      }
    });
  }

  function countSegments(gd, source, label) {
    let n = 0;
    for (const tr of gd.data) {
      if (!tr.meta || tr.meta.source !== source || (label && tr.meta.label !== label)) continue;
      for (let i = 0; i < tr.x.length; i += 3) if (Number.isFinite(tr.x[i])) n++;
    }
    return n;
  }

  const config = { displaylogo: false, scrollZoom: true, responsive: true };
  const drawn = [];
  for (const plot of spec.plots) {
    const gd = document.getElementById(plot.div);
    const hover = prepareHover(plot.hover);
    // Decode span coordinates here so gd.data holds typed arrays the hover code can index.
    for (const tr of plot.figure.data) {
      if (tr.type !== "scattergl") continue;
      for (const k of ["x", "y"]) if (tr[k] && tr[k].bdata !== undefined) tr[k] = decode(tr[k]).array;
    }
    drawn.push(Plotly.newPlot(gd, plot.figure.data, plot.figure.layout, config).then(() => {
      if (hover) attachTimeline(gd, hover);
      if (plot.sync) attachSync(gd, plot.sync);
      return gd;
    }));
  }
  Promise.all(drawn).then(() => {
    const full = document.getElementById("gm-timeline-full");
    window.graphmode = {
      renderedMs: performance.now(),
      kernelSpansDrawn: full ? countSegments(full, "gpu", "kernel") : 0,
      gpuSpansDrawn: full ? countSegments(full, "gpu", null) : 0,
      apiCallsDrawn: full ? countSegments(full, "api", null) : 0,
      plots: spec.plots.length,
    };
    document.body.setAttribute("data-rendered", "1");
  }, (err) => {
    window.graphmode = { error: String(err) };
    throw err;
  });
})();
