// graphmode charts, on both pages: plotly.js is gzipped in the page (id gm-plotly, reports/html_plotly.py) and
// starts when the browser is idle, never because the reader scrolled. Its steps (plotly's core, then each trace
// type the page's charts use) run one per idle callback, and each chart is drawn in a task of its own, so no
// main-thread task of the page lasts long whatever the reader does meanwhile.
(function () {
  "use strict";
  // An idle callback runs at the latest this long after it was asked for: where the browser gives a frame no
  // idle time (a sandboxed frame, as in a notebook), each step waits this long.
  const IDLE_TIMEOUT_MS = 250;

  // Resolves in a new task once the browser has nothing more urgent to do (input, a frame to draw).
  function idle() {
    return new Promise((resolve) => {
      if (typeof requestIdleCallback === "function") requestIdleCallback(() => resolve(), { timeout: IDLE_TIMEOUT_MS });
      else setTimeout(resolve, 30); // no idle callbacks (Safari): a timer
    });
  }

  // A base64 block of the page, gunzipped by the browser's own DecompressionStream (off the main thread).
  async function inflate(id) {
    const b64 = document.getElementById(id).textContent;
    let bytes;
    try {
      bytes = await (await fetch("data:application/octet-stream;base64," + b64)).blob();
    } catch (e) { // fetch of a data: URL refused: decode by hand
      const bin = atob(b64), a = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i);
      bytes = new Blob([a]);
    }
    return new Response(bytes.stream().pipeThrough(new DecompressionStream("gzip")));
  }

  // A script from a blob: URL is compiled off the main thread (Chromium streams it); a frame that refuses blob:
  // scripts compiles it in place.
  function runScript(code) {
    return new Promise((resolve) => {
      const inline = () => { const s = document.createElement("script"); s.text = code; document.head.appendChild(s); resolve(); };
      let url;
      try { url = URL.createObjectURL(new Blob([code], { type: "text/javascript" })); } catch (e) { inline(); return; }
      const s = document.createElement("script");
      s.async = true;
      s.onload = () => { URL.revokeObjectURL(url); resolve(); };
      s.onerror = () => { URL.revokeObjectURL(url); s.remove(); inline(); };
      s.src = url;
      document.head.appendChild(s);
    });
  }

  let started = null;
  function startPlotly() {
    if (!started) {
      started = (async () => {
        if (window.Plotly) return;
        performance.mark("gm-plotly-start");
        const code = await (await inflate("gm-plotly")).text();
        performance.mark("gm-plotly-inflated");
        await idle();
        await runScript(code);
        const boot = window.GMPlotlyBoot; // the stepped bundle; plotly.js as shipped sets window.Plotly itself
        if (boot) {
          for (const step of boot.steps) { await idle(); step(); }
          window.Plotly = boot.done();
          delete window.GMPlotlyBoot;
        }
        await warmUp();
        performance.mark("gm-plotly-loaded");
      })();
    }
    return started;
  }

  const CONFIG = { displaylogo: false, responsive: true };

  // V8 compiles plotly's functions the first time they run: the page's first chart took 0.25-0.4 s in one task.
  // Small charts in a hidden box first, one per idle callback (axes, then lines and markers with a legend, then
  // each other trace type the charts use), spread that compiling over several short tasks.
  async function warmUp() {
    const box = document.createElement("div");
    box.setAttribute("aria-hidden", "true");
    box.style.cssText = "position:absolute;left:-10000px;top:0;width:480px;height:320px;visibility:hidden";
    document.body.append(box);
    const layout = { width: 480, height: 320, showlegend: true };
    const steps = [
      [],
      [{ type: "scatter", mode: "lines", x: [0, 1], y: [0, 1], name: "a" }],
      [{ type: "scatter", mode: "markers+text", x: [0, 1], y: [1, 0], text: ["a", "b"], name: "b" }],
    ];
    try {
      for (const data of steps) { await idle(); await Plotly.newPlot(box, data, layout, { staticPlot: false }); }
    } finally {
      Plotly.purge(box);
      box.remove();
    }
  }

  // Draws the charts ({div, figure}) one per idle callback, in page order; `drawn(p)` after each.
  async function draw(charts, drawn) {
    if (!charts.length) return;
    await startPlotly();
    for (const p of charts) {
      await idle();
      const el = document.getElementById(p.div);
      el.replaceChildren();
      await Plotly.newPlot(el, p.figure.data, p.figure.layout, CONFIG);
      performance.mark("gm-chart-" + p.div);
      if (drawn) drawn(p);
    }
  }

  window.GMCharts = { idle, inflate, startPlotly, draw };
})();
