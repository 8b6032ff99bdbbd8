// graphmode timeline: spans on a canvas, drawn at the level of detail the zoom needs.
//
// Spans arrive as columns sorted by (lane, start). A redraw walks only the spans that overlap the
// visible range (binary search on the start, and on a running maximum of the end so that long
// spans that began earlier are found). A span at least WIDE_PX wide is drawn exactly; narrower ones
// add their width to their pixel column, and each column is shaded by how busy the lane is there:
// zoomed out the view aggregates, zoomed in it shows every span as it was. Hover looks spans up by
// interval (the innermost span under the pointer, else the nearest within a few pixels). User strings
// reach the DOM through textContent only.
(function () {
  "use strict";
  const DT = { u1: Uint8Array, u2: Uint16Array, u4: Uint32Array, i4: Int32Array, f4: Float32Array, f8: Float64Array };
  const WIDE_PX = 3;
  const TOL_PX = 4;
  const FADE_ALPHA = 0.28;
  const NOMATCH = "#d0d0d0";
  const SELECT = "#ffb000";
  const HATCH = "#8a8f98";

  // ---- columns -------------------------------------------------------------------------------
  // Decoding is a generator that yields every CHUNK values, so that the page can spread a million-span
  // decode over many short tasks (report.js runs it); decode() drains it at once.
  const CHUNK = 1 << 16;
  function* rawColumn(buf, c) {
    if (!c.shuffled) return new DT[c.dtype](buf, c.offset, c.length);
    // byte planes (every value's byte 0, then every byte 1, ...) back into values
    const T = DT[c.dtype], size = T.BYTES_PER_ELEMENT, n = c.length, src = new Uint8Array(buf, c.offset, n * size);
    const out = new Uint8Array(n * size);
    for (let b = 0; b < size; b++) {
      const plane = b * n;
      for (let i0 = 0; i0 < n; i0 += CHUNK) {
        const i1 = Math.min(n, i0 + CHUNK);
        for (let i = i0; i < i1; i++) out[i * size + b] = src[plane + i];
        yield;
      }
    }
    return new T(out.buffer);
  }
  function* column(buf, c, n, T) {
    if (Object.prototype.hasOwnProperty.call(c, "const")) { const a = new T(n); a.fill(c.const); return a; }
    return yield* rawColumn(buf, c);
  }
  function* accessor(buf, c) {
    if (Object.prototype.hasOwnProperty.call(c, "const")) { const v = c.const; return () => v; }
    const a = yield* rawColumn(buf, c);
    return (i) => a[i];
  }

  function* decodeSteps(spec, buf) {
    const n = spec.n, C = spec.columns, bounds = spec.lane_bounds;
    const start = new Float64Array(n), end = new Float64Array(n), pmax = new Float64Array(n);
    const s = yield* rawColumn(buf, C.start), base = C.start.base;
    const dur = yield* column(buf, C.dur, n, Float64Array);
    for (let L = 0; L + 1 < bounds.length; L++) {
      let acc = 0, m = -Infinity;
      for (let i0 = bounds[L]; i0 < bounds[L + 1]; i0 += CHUNK) {
        const i1 = Math.min(bounds[L + 1], i0 + CHUNK);
        for (let i = i0; i < i1; i++) {
          if (C.start.delta) { acc += s[i]; start[i] = base + acc; } else start[i] = base + s[i];
          end[i] = start[i] + dur[i];
          if (end[i] > m) m = end[i];
          pmax[i] = m;
        }
        yield;
      }
    }
    let corr;
    if (C.corr.zigzag) {
      const z = yield* rawColumn(buf, C.corr);
      corr = new Float64Array(n);
      let acc = 0;
      for (let i0 = 0; i0 < n; i0 += CHUNK) {
        const i1 = Math.min(n, i0 + CHUNK);
        for (let i = i0; i < i1; i++) { const v = z[i]; acc += v % 2 ? -(v + 1) / 2 : v / 2; corr[i] = acc; }
        yield;
      }
    } else corr = yield* column(buf, C.corr, n, Float64Array);
    const fields = {}, text = {};
    for (const k of Object.keys(C.fields)) fields[k] = yield* accessor(buf, C.fields[k]);
    for (const k of Object.keys(C.text)) text[k] = yield* accessor(buf, C.text[k]);
    return {
      n, start, end, pmax, corr, fields, text,
      group: yield* column(buf, C.group, n, Uint16Array), name: yield* column(buf, C.name, n, Uint32Array),
      outside: yield* column(buf, C.outside, n, Uint8Array),
    };
  }
  function decode(spec, buf) {
    const it = decodeSteps(spec, buf);
    for (;;) { const r = it.next(); if (r.done) return r.value; }
  }

  // first index in [lo, hi) with a[i] >= v (a sorted ascending there), else hi
  function lowerBound(a, v, lo, hi) {
    while (lo < hi) { const m = (lo + hi) >>> 1; if (a[m] < v) lo = m + 1; else hi = m; }
    return lo;
  }
  // first index in [lo, hi) with a[i] > v
  function upperBound(a, v, lo, hi) {
    while (lo < hi) { const m = (lo + hi) >>> 1; if (a[m] <= v) lo = m + 1; else hi = m; }
    return lo;
  }

  // ---- time formatting -----------------------------------------------------------------------
  const UNITS = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];
  function fmtDur(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(2) + " µs";
    return ns.toFixed(0) + " ns";
  }
  function niceStep(span, target) {
    const raw = span / Math.max(1, target), p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function tickLabel(t, step) {
    const [u, name] = UNITS.find(([u]) => step >= u) || UNITS[3];
    const digits = Math.max(0, Math.ceil(-Math.log10(step / u) - 1e-9));
    return (t / u).toFixed(Math.min(digits, 6)) + " " + name;
  }
  // A time to the precision of `step`, in the unit of its own size: the offset of relative ticks.
  function offsetLabel(t, step) {
    const [u, name] = UNITS.find(([u]) => Math.abs(t) >= u) || UNITS[3];
    const digits = Math.max(0, Math.ceil(Math.log10(u / step) - 1e-9));
    return (t / u).toFixed(Math.min(digits, 9)) + " " + name;
  }
  // Ticks of the range [t0, t1] over `pw` pixels. Zoomed in far from the origin, absolute labels would need
  // many digits ("14334770 µs"): past RELATIVE_AT steps from the origin they count from the first tick,
  // whose time is returned as `offset` (the axis prints it once).
  const RELATIVE_AT = 1000;
  function axisTicks(t0, t1, pw) {
    const step = niceStep(t1 - t0, Math.max(2, pw / 110)), first = Math.ceil(t0 / step) * step;
    const relative = Math.max(Math.abs(t0), Math.abs(t1)) / step >= RELATIVE_AT;
    const ticks = [];
    for (let k = 0, t = first; t <= t1; k++, t = first + k * step) {
      ticks.push([t, relative ? (k ? "+" + tickLabel(k * step, step) : "0") : tickLabel(t, step)]);
    }
    return { ticks, offset: relative ? offsetLabel(first, step) : null };
  }

  // A detail's text as is, or past LONG_TEXT characters {short, full}: its short form (`short`, else its
  // start), and the whole.
  const LONG_TEXT = 160;
  function longText(full, short) {
    if (full.length <= LONG_TEXT) return full;
    let s = short && short.length < full.length ? short : full;
    if (s.length > LONG_TEXT) s = s.slice(0, LONG_TEXT - 1) + "…";
    return { short: s, full };
  }

  // ---- the view ------------------------------------------------------------------------------
  class Timeline {
    constructor(root, spec, data, opts) {
      this.spec = spec; this.d = data; this.opts = opts || {};
      this.compact = !!this.opts.compact;
      this.laneH = this.opts.laneH || (this.compact ? 6 : 22); // opts.laneH: the rank page's lanes (LANE_PX)
      this.gutter = this.opts.gutter !== undefined ? this.opts.gutter : this.compact ? 0 : 200;
      this.right = this.compact ? 0 : 8;
      this.top = this.compact ? 1 : 6;
      this.axisH = this.compact ? 1 : 34;
      this.initial = spec.range.slice();
      this.range = spec.range.slice();
      this.match = null; // Uint8Array over name ids while a search is active
      this.hover = -1; this.pinned = -1; this.linked = [];
      this.region = null; // the hatched stretch under the pointer (drawLeftOut)
      this.used = new Set();
      this.listeners = [];
      this.root = root;
      this.canvas = document.createElement("canvas");
      this.canvas.className = this.compact ? "gm-minimap" : "gm-canvas";
      this.canvas.setAttribute("role", "img");
      this.canvas.setAttribute("aria-label", spec.title || "timeline");
      root.appendChild(this.canvas);
      this.ctx = this.canvas.getContext("2d", { alpha: false });
      this.height = this.top + this.laneH * Math.max(spec.lanes.length, 1) + this.axisH;
      this.resize();
      if (!this.compact) this.attach();
      if (typeof ResizeObserver !== "undefined") new ResizeObserver(() => this.resize(true)).observe(root);
    }

    resize(redraw) {
      const w = Math.max(200, this.root.clientWidth || 800);
      if (w === this.width) return;
      const dpr = window.devicePixelRatio || 1;
      this.width = w; this.dpr = dpr;
      this.canvas.width = Math.round(w * dpr); this.canvas.height = Math.round(this.height * dpr);
      this.canvas.style.width = w + "px"; this.canvas.style.height = this.height + "px";
      this.plotW = Math.max(10, Math.floor(w - this.gutter - this.right));
      this.cov = new Float32Array((2 * this.spec.hover.groups.length + 1) * this.plotW);
      if (redraw) this.schedule();
    }

    k() { return this.plotW / (this.range[1] - this.range[0]); }
    xOf(t) { return this.gutter + (t - this.range[0]) * this.k(); }
    tOf(x) { return this.range[0] + (x - this.gutter) / this.k(); }
    laneAt(y) { const L = Math.floor((y - this.top) / this.laneH); return L >= 0 && L < this.spec.lanes.length ? L : -1; }

    onRange(fn) { this.listeners.push(fn); }
    setRange(a, b, quiet) {
      const full = this.spec.full, minSpan = 20;
      const span0 = full[1] - full[0];
      let lo = a, hi = b;
      if (hi - lo < minSpan) { const c = (lo + hi) / 2; lo = c - minSpan / 2; hi = c + minSpan / 2; }
      const slack = Math.max(span0 * 0.05, this.initial[1] - this.initial[0]);
      if (hi - lo > span0 + 2 * slack) { lo = full[0] - slack; hi = full[1] + slack; }
      this.range = [lo, hi];
      this.schedule();
      if (!quiet) for (const fn of this.listeners) fn(lo, hi, this);
    }
    zoom(factor, atT) {
      const [a, b] = this.range, t = atT === undefined ? (a + b) / 2 : atT;
      this.setRange(t - (t - a) * factor, t + (b - t) * factor);
    }
    pan(dxPx) { const dt = dxPx / this.k(); this.setRange(this.range[0] + dt, this.range[1] + dt); }
    reset() { this.setRange(this.initial[0], this.initial[1]); }

    schedule() {
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => { this.pending = false; this.draw(); });
    }

    // ---- drawing ----
    draw() {
      const ctx = this.ctx, d = this.d, spec = this.spec, groups = spec.hover.groups;
      const W = this.width, H = this.height, pw = this.plotW, gx = this.gutter;
      ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
      ctx.globalAlpha = 1;
      ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, W, H);
      if (this.compact) { ctx.fillStyle = "#f4f5f7"; ctx.fillRect(gx, 0, pw, H); }
      const [t0, t1] = this.range, k = pw / (t1 - t0);
      const nL = spec.lanes.length, lh = this.laneH, pad = this.compact ? 0 : 3, bh = lh - 2 * pad;
      const used = new Set();
      // coverage rows: [0, G) each group, [G, 2G) each group faded (outside the iteration), 2G not matching the search
      const cov = this.cov, G = groups.length, match = this.match;
      for (let L = 0; L < nL; L++) {
        const y = this.top + L * lh;
        if (!this.compact && L % 2 === 1) { ctx.fillStyle = "#f6f7f9"; ctx.fillRect(gx, y, pw, lh); }
        const b = spec.lane_bounds[L], e = spec.lane_bounds[L + 1];
        if (b === e) continue;
        const i0 = lowerBound(d.pmax, t0, b, e), i1 = upperBound(d.start, t1, b, e);
        const touched = new Uint8Array(2 * G + 1);
        const wide = [];
        for (let i = i0; i < i1; i++) {
          const en = d.end[i];
          if (en < t0) continue;
          const x0 = (d.start[i] - t0) * k, x1 = (en - t0) * k;
          if (x1 - x0 >= WIDE_PX) { wide.push(i); continue; }
          const c = x0 < 0 ? 0 : Math.floor(x0);
          if (c >= pw) continue;
          const slot = match && !match[d.name[i]] ? 2 * G : d.outside[i] ? G + d.group[i] : d.group[i];
          cov[slot * pw + c] += (x1 - x0) || 0.01;
          touched[slot] = 1;
        }
        for (let s = 0; s <= 2 * G; s++) {
          if (!touched[s]) continue;
          const key = s === 2 * G ? "nomatch" : s >= G ? "faded" : null;
          const colour = s === 2 * G ? NOMATCH : groups[s % G].colour;
          this.shade(ctx, cov, s * pw, pw, gx, y + pad, bh, colour, used, key, s >= G && s < 2 * G);
        }
        for (const i of wide) {
          const nomatch = match && !match[d.name[i]];
          const colour = nomatch ? NOMATCH : groups[d.group[i]].colour;
          const a = Math.max(gx, gx + (d.start[i] - t0) * k), z = Math.min(gx + pw, gx + (d.end[i] - t0) * k);
          const faded = d.outside[i] && !nomatch;
          ctx.globalAlpha = faded ? FADE_ALPHA : 1;
          ctx.fillStyle = colour; ctx.fillRect(a, y + pad, z - a, bh);
          used.add(nomatch ? "nomatch" : faded ? "faded" : colour);
          if (this.compact) continue;
          ctx.globalAlpha = 1;
          if (z - a >= 6) { ctx.fillStyle = "#ffffff"; ctx.fillRect(a, y + pad, 1, bh); } // neighbours stay apart
          if (z - a >= 48) this.label(ctx, i, a + 3, z - 3, y + lh / 2);
        }
        ctx.globalAlpha = 1;
      }
      this.drawLeftOut(ctx, k, used);
      if (!this.compact) { this.drawHighlights(ctx, k); this.drawFrame(ctx, k); }
      else if (this.gutter > 0) {
        ctx.globalAlpha = 1; ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, this.gutter, H);
        ctx.fillStyle = "#333"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle"; ctx.textAlign = "right";
        ctx.fillText("whole pass, " + fmtDur(t1 - t0), this.gutter - 6, H / 2);
        ctx.textAlign = "left";
      }
      this.used = used;
      this.drawnAt = performance.now();
    }

    // one row of pixel columns: busy share as opacity (at least 35% where anything ran), equal shades merged
    shade(ctx, cov, off, pw, gx, y, h, colour, used, key, faded) {
      let runStart = -1, runLevel = 0;
      const flush = (end) => {
        if (runStart < 0 || runLevel === 0) return;
        ctx.globalAlpha = (faded ? FADE_ALPHA : 1) * runLevel / 8;
        ctx.fillStyle = colour; ctx.fillRect(gx + runStart, y, end - runStart, h);
        used.add(key || colour);
      };
      for (let c = 0; c < pw; c++) {
        const v = cov[off + c];
        if (v !== 0) cov[off + c] = 0;
        const level = v > 0 ? Math.min(8, 3 + Math.round(5 * Math.min(1, v))) : 0;
        if (level !== runLevel) { flush(c); runStart = c; runLevel = level; }
      }
      flush(pw);
      ctx.globalAlpha = 1;
    }

    label(ctx, i, x0, x1, yMid) {
      const names = this.spec.hover.short_names;
      let text = names[this.d.name[i]] || "";
      const fit = Math.floor((x1 - x0) / 6.2);
      if (fit < 3) return;
      if (text.length > fit) text = text.slice(0, fit - 1) + "…";
      ctx.save();
      ctx.beginPath(); ctx.rect(x0, yMid - 8, x1 - x0, 16); ctx.clip();
      ctx.fillStyle = "#111"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
      ctx.fillText(text, x0, yMid);
      ctx.restore();
    }

    // Stretches whose spans the page does not hold (its span limit): hatched over every lane and labelled with
    // how many spans they hold and how to see them, so that they do not read as an idle GPU.
    drawLeftOut(ctx, k, used) {
      const regions = this.spec.left_out || [];
      this.leftOutDrawn = [];
      if (!regions.length) return;
      const [t0, t1] = this.range, gx = this.gutter, pw = this.plotW, y0 = this.top, h = this.laneH * this.spec.lanes.length;
      for (const r of regions) {
        if (r.end < t0 || r.start > t1) continue;
        const a = Math.max(gx, gx + (r.start - t0) * k), z = Math.min(gx + pw, gx + (r.end - t0) * k);
        if (z - a < 1) continue;
        ctx.save();
        ctx.beginPath(); ctx.rect(a, y0, z - a, h); ctx.clip();
        ctx.globalAlpha = 0.85; ctx.fillStyle = "#ffffff"; ctx.fillRect(a, y0, z - a, h);
        ctx.globalAlpha = 1; ctx.strokeStyle = HATCH; ctx.lineWidth = 1;
        ctx.beginPath();
        for (let x = a - h - ((a - gx) % 8); x < z; x += 8) { ctx.moveTo(x, y0 + h); ctx.lineTo(x + h, y0); }
        ctx.stroke();
        let label = "";
        if (!this.compact) { // the label on one line, else on two (at '; '), else its count alone
          ctx.font = "12px system-ui, sans-serif";
          const fits = (lines) => lines.length * 16 <= h && lines.every((t) => ctx.measureText(t).width + 12 <= z - a);
          const lines = [[r.label], r.label.split("; "), [r.short || r.spans.toLocaleString("en-US") + " spans not drawn"]].find(fits) || [];
          const yTop = y0 + Math.max(0, Math.min(h / 2, 40) - lines.length * 8);
          lines.forEach((t, n) => {
            const w = ctx.measureText(t).width, x = (a + z) / 2 - w / 2, y = yTop + 8 + 16 * n;
            ctx.fillStyle = "#ffffff"; ctx.fillRect(x - 4, y - 8, w + 8, 16);
            ctx.fillStyle = "#333"; ctx.textBaseline = "middle"; ctx.textAlign = "left"; ctx.fillText(t, x, y);
          });
          label = lines.join("; ");
        }
        ctx.restore();
        used.add("left-out");
        this.leftOutDrawn.push({ x0: a, x1: z, label });
      }
    }

    drawHighlights(ctx, k) {
      const sel = this.pinned >= 0 ? this.pinned : this.hover;
      if (sel < 0) return;
      const d = this.d, lh = this.laneH, t0 = this.range[0], gx = this.gutter;
      const box = (i) => {
        const L = this.laneOf(i), y = this.top + L * lh;
        const a = gx + (d.start[i] - t0) * k, z = gx + (d.end[i] - t0) * k;
        return [Math.max(gx - 2, Math.min(gx + this.plotW + 2, a)), y, Math.max(2, Math.min(gx + this.plotW + 2, z) - Math.max(gx - 2, a)), L];
      };
      ctx.save();
      ctx.beginPath(); ctx.rect(gx, 0, this.plotW, this.height - this.axisH); ctx.clip();
      ctx.strokeStyle = SELECT; ctx.lineWidth = 2;
      const spans = this.linked.length ? this.linked : [sel];
      for (const i of spans) { const [x, y, w] = box(i); ctx.strokeRect(x - 1, y + 1, w + 2, lh - 2); }
      // one arrow from each launch call to the first GPU work it caused (same correlation id)
      const groups = this.spec.hover.groups;
      const cpu = spans.filter((i) => groups[d.group[i]].source === "api");
      const gpu = spans.filter((i) => groups[d.group[i]].source === "gpu").sort((a, b) => d.start[a] - d.start[b]);
      this.arrows = 0;
      if (gpu.length) {
        ctx.strokeStyle = "#000"; ctx.fillStyle = "#000"; ctx.lineWidth = 1.2;
        for (const c of cpu) {
          const [x0, y0, , L0] = box(c), [x1, y1, , L1] = box(gpu[0]);
          const ya = y0 + (L1 > L0 ? lh - 2 : 2), yb = y1 + (L1 > L0 ? 2 : lh - 2);
          ctx.beginPath(); ctx.moveTo(x0, ya); ctx.lineTo(x1, yb); ctx.stroke();
          ctx.beginPath(); ctx.arc(x1, yb, 2.5, 0, 2 * Math.PI); ctx.fill();
          this.arrows++;
        }
      }
      ctx.restore();
      this.used.add("selected");
    }

    drawFrame(ctx, k) {
      const spec = this.spec, gx = this.gutter, pw = this.plotW, lh = this.laneH;
      const yAxis = this.top + lh * spec.lanes.length;
      ctx.globalAlpha = 1;
      ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, gx, this.height); ctx.fillRect(gx + pw, 0, this.right, this.height);
      ctx.fillStyle = "#333"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle"; ctx.textAlign = "right";
      for (let L = 0; L < spec.lanes.length; L++) {
        let text = spec.lanes[L];
        if (text.length > 34) text = text.slice(0, 33) + "…";
        ctx.fillText(text, gx - 6, this.top + L * lh + lh / 2);
      }
      ctx.strokeStyle = "#999"; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(gx, yAxis + 0.5); ctx.lineTo(gx + pw, yAxis + 0.5); ctx.stroke();
      const [t0, t1] = this.range, axis = axisTicks(t0, t1, pw);
      ctx.textAlign = "center"; ctx.textBaseline = "top"; ctx.fillStyle = "#333";
      for (const [t, text] of axis.ticks) {
        const x = gx + (t - t0) * k;
        ctx.fillRect(Math.round(x), yAxis, 1, 4);
        ctx.fillText(text, x, yAxis + 6);
      }
      ctx.textAlign = "right"; ctx.fillStyle = "#666";
      ctx.fillText(axis.offset ? "ticks: time after " + axis.offset + " from " + spec.origin : "time from " + spec.origin,
        gx + pw, yAxis + 20);
      this.axis = { ticks: axis.ticks.map(([, text]) => text), offset: axis.offset };
      ctx.textAlign = "left";
      ctx.fillText("showing " + fmtDur(t1 - t0), gx, yAxis + 20);
      if (this.boxTo) {
        ctx.globalAlpha = 0.2; ctx.fillStyle = "#1f77b4";
        ctx.fillRect(Math.min(...this.boxTo), this.top, Math.abs(this.boxTo[1] - this.boxTo[0]), yAxis - this.top);
        ctx.globalAlpha = 1;
      }
    }

    leftOutAt(px, py) {
      if (this.laneAt(py) < 0 || px < this.gutter || px > this.gutter + this.plotW) return null;
      const t = this.tOf(px);
      return (this.spec.left_out || []).find((r) => r.start <= t && t <= r.end) || null;
    }

    laneOf(i) { return upperBound(this.spec.lane_bounds, i, 0, this.spec.lane_bounds.length) - 1; }

    // ---- looking spans up ----
    hit(px, py) {
      const L = this.laneAt(py);
      if (L < 0 || px < this.gutter || px > this.gutter + this.plotW) return -1;
      const d = this.d, t = this.tOf(px), tol = TOL_PX / this.k();
      const b = this.spec.lane_bounds[L], e = this.spec.lane_bounds[L + 1];
      let best = -1, bestDist = Infinity, bestDur = Infinity, steps = 0;
      for (let j = upperBound(d.start, t + tol, b, e) - 1; j >= b && d.pmax[j] >= t - tol && steps < 500000; j--, steps++) {
        const s = d.start[j], en = d.end[j];
        const dist = t < s ? s - t : t > en ? t - en : 0;
        if (dist > tol) continue;
        const dur = en - s;
        if (dist < bestDist || (dist === bestDist && dur < bestDur)) { best = j; bestDist = dist; bestDur = dur; }
      }
      return best;
    }

    corrIndex() {
      if (this._corr) return this._corr;
      const d = this.d, n = d.n, order = new Uint32Array(n);
      let maxCorr = 0;
      for (let i = 0; i < n; i++) if (d.corr[i] > maxCorr) maxCorr = d.corr[i];
      if (n < 2097152 && maxCorr < 4294967296) { // pack (corr, index) in one float64 and sort natively
        const keys = new Float64Array(n);
        for (let i = 0; i < n; i++) keys[i] = d.corr[i] * 2097152 + i;
        keys.sort();
        for (let i = 0; i < n; i++) order[i] = keys[i] % 2097152;
      } else {
        for (let i = 0; i < n; i++) order[i] = i;
        order.sort((a, b) => d.corr[a] - d.corr[b]);
      }
      this._corr = order;
      return order;
    }
    sameCorrelation(i) {
      const c = this.d.corr[i];
      if (!c) return [i];
      const order = this.corrIndex(), corr = this.d.corr;
      let lo = 0, hi = order.length;
      while (lo < hi) { const m = (lo + hi) >>> 1; if (corr[order[m]] < c) lo = m + 1; else hi = m; }
      const out = [];
      for (let k = lo; k < order.length && corr[order[k]] === c && out.length < 5000; k++) out.push(order[k]);
      return out;
    }

    details(i) {
      // duration, where and the correlation id first: a templated kernel's name can run to thousands of
      // characters, which then come shortened, the whole name one click away (report.js draws {short, full})
      const d = this.d, h = this.spec.hover, g = h.groups[d.group[i]], f = d.fields;
      const out = [["duration", fmtDur(d.end[i] - d.start[i])], ["lane", h.lanes[this.laneOf(i)]]];
      if (d.corr[i]) out.push(["correlation id", String(d.corr[i])]);
      const name = h.names[d.name[i]], mangled = h.mangled[d.name[i]];
      out.push(["name", longText(name, h.short_names[d.name[i]])]);
      if (mangled) out.push(["mangled name", longText(mangled)]);
      out.push(["what", g.legend], ["start", fmtDur(d.start[i]) + " from " + this.spec.origin]);
      if (f.grid_x(i)) out.push(["grid", [f.grid_x(i), f.grid_y(i), f.grid_z(i)].join("×")]);
      if (f.block_x(i)) out.push(["block", [f.block_x(i), f.block_y(i), f.block_z(i)].join("×")]);
      if (f.graph_id(i)) out.push(["graph", String(f.graph_id(i)) + (f.node(i) ? ", node " + (f.node(i) - 1) : "")]);
      if (f.bytes(i)) out.push(["bytes", f.bytes(i).toLocaleString("en-US")]);
      if (f.return_code(i)) out.push(["return code", String(f.return_code(i))]);
      const api = g.text_fields.api[d.text.api(i)];
      if (api) out.push(["API", api]);
      const src = g.text_fields.source[d.text.source(i)];
      if (src) out.push(["source line", src]);
      if (d.outside[i]) out.push(["note", "starts outside the iteration this view shows (drawn faded)"]);
      return out;
    }

    select(i, pin) {
      if (pin) this.pinned = i;
      else this.hover = i;
      const sel = this.pinned >= 0 ? this.pinned : this.hover;
      this.linked = sel >= 0 ? this.sameCorrelation(sel) : [];
      const r = this.region, region = sel < 0 && r
        ? [[r.kind === "untraced" ? "not recorded" : "not drawn", r.label], ["where", fmtDur(r.start) + " – " + fmtDur(r.end) + " from " + this.spec.origin]] : null;
      if (this.opts.onSelect) this.opts.onSelect(sel >= 0 ? this.details(sel) : region, this);
      this.schedule();
    }

    // ---- input ----
    attach() {
      const cv = this.canvas;
      const pos = (e) => { const r = cv.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
      cv.addEventListener("wheel", (e) => {
        const [x] = pos(e);
        if (x < this.gutter) return;
        e.preventDefault();
        const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
        const dx = e.deltaX * unit, dy = e.deltaY * unit;
        if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) this.pan(e.shiftKey ? dy || dx : dx);
        else this.zoom(Math.exp(dy * 0.0025), this.tOf(x));
      }, { passive: false });
      let drag = null;
      cv.addEventListener("pointerdown", (e) => {
        if (e.button !== 0) return;
        const [x, y] = pos(e);
        drag = { x, y, range: this.range.slice(), box: e.shiftKey, moved: false };
        cv.setPointerCapture(e.pointerId);
      });
      cv.addEventListener("pointermove", (e) => {
        const [x, y] = pos(e);
        if (!drag) {
          // over a hatched stretch, what it left out (the spans reaching into it lie under the hatch)
          const region = this.leftOutAt(x, y), i = region ? -1 : this.hit(x, y);
          cv.style.cursor = i >= 0 ? "pointer" : "grab";
          const moved = region !== this.region;
          this.region = region;
          if ((i !== this.hover || moved) && this.pinned < 0) this.select(i, false);
          return;
        }
        if (Math.abs(x - drag.x) > 2) drag.moved = true;
        if (drag.box) { this.boxTo = [drag.x, x]; this.schedule(); return; }
        const dt = (x - drag.x) * (drag.range[1] - drag.range[0]) / this.plotW;
        this.setRange(drag.range[0] - dt, drag.range[1] - dt);
        cv.style.cursor = "grabbing";
      });
      cv.addEventListener("pointerup", (e) => {
        const [x, y] = pos(e);
        const was = drag;
        drag = null;
        if (!was) return;
        if (was.box && was.moved) {
          const a = this.tOf(Math.min(was.x, x)), b = this.tOf(Math.max(was.x, x));
          this.boxTo = null;
          this.setRange(a, b);
        } else if (!was.moved) {
          const i = this.leftOutAt(x, y) ? -1 : this.hit(x, y);
          this.select(i, true);
          if (i < 0) { this.pinned = -1; this.select(-1, false); }
        }
      });
      cv.addEventListener("pointerleave", () => {
        if (!drag && this.pinned < 0 && (this.hover >= 0 || this.region)) { this.region = null; this.select(-1, false); }
      });
      cv.addEventListener("dblclick", (e) => { e.preventDefault(); this.reset(); if (this.opts.onReset) this.opts.onReset(this); });
    }
  }

  // ---- search: which name ids match a query --------------------------------------------------
  function matchNames(spec, query) {
    const q = query.trim().toLowerCase();
    if (!q) return null;
    const h = spec.hover, m = new Uint8Array(h.names.length);
    for (let k = 0; k < m.length; k++) {
      m[k] = h.names[k].toLowerCase().includes(q) || (h.mangled[k] && h.mangled[k].toLowerCase().includes(q)) ? 1 : 0;
    }
    return m;
  }

  window.GMTimeline = { Timeline, decode, decodeSteps, matchNames, fmtDur, lowerBound, upperBound };
})();
