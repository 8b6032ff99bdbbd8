"""HTML scale: `graphmode view` of a synthetic trace of a million kernels, opened in headless Chromium.

Measures what a person waits for: the page's size, the time from navigation to the first frame with the
headline and every timeline drawn (first paint), to every plotly chart drawn (plotly.js starts when the browser is idle; here
it is asked for right after the first paint), and how long one zoom (a real
mouse-wheel notch) and one pan (a real drag step) of the whole-run timeline take, from the input event
to the next frame drawn, while the whole run (every span) is in view and zoomed in. Chromium runs
headless with software rendering (no GPU); run it on the machine whose numbers you want (the ones in
docs/benchmarks.md come from a 2-core VM). The trace is SYNTHETIC (tests/synthetic_timeline.py): an
eager loop and the same chain as node-detail graph replays, durations jittered by a seeded RNG so the
page's compression sees non-repeating timestamps.

    python benchmarks/html_scale.py [--kernels 1000000] [--runs 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import Chromium, find_chromium  # noqa: E402
from synthetic_timeline import write_synthetic_trace  # noqa: E402

from graphmode.views import write_page  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

KERNELS_PER_ITERATION = 100
DIV = "gm-timeline-full"
TARGETS = {"first_paint_s": 4.0, "zoom_s": 0.5, "pan_s": 0.5, "page_mb": 25.0}


def _timed(browser: Chromium, action: Any) -> float:
    """Seconds from sending an input event to the end of the next frame the page draws after it."""
    t = time.perf_counter()
    action()
    browser.next_frame()
    return time.perf_counter() - t


def measure_page(html_path: Path, steps: int) -> dict[str, Any]:
    with Chromium(width=1600, height=1000) as browser:
        state = browser.open(html_path, timeout_s=180)
        if browser.errors or "error" in state:
            raise SystemExit(f"JavaScript errors: {browser.errors or state}")
        charts_s = browser.evaluate("window.graphmode.loadCharts()") / 1e3  # plotly starts when the browser is idle, or when asked
        fcp = browser.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
        box = browser.evaluate(f"(() => {{ const c = document.querySelector('#{DIV} canvas'); c.scrollIntoView({{block: 'center'}});"
                               " const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()")
        x0, y0 = box[0] + 200 + (box[2] - 200) / 2, box[1] + 40  # the plot's middle, on a lane near the top
        browser.next_frame()
        whole = browser.evaluate(f"window.graphmode.range('{DIV}')")
        zoom_out, pan_out, zoom_in, pan_in = [], [], [], []
        for _ in range(steps):  # everything in view: every span of the run is walked on each redraw
            zoom_out.append(_timed(browser, lambda: browser.wheel(x0, y0, delta_y=-100)))
            zoom_out.append(_timed(browser, lambda: browser.wheel(x0, y0, delta_y=100)))
        browser.mouse_move(x0, y0)
        browser.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left", buttons=1, clickCount=1)
        for k in range(steps):
            dx = 40 if k % 2 == 0 else -40
            pan_out.append(_timed(browser, lambda: browser.mouse_move(x0 + dx, y0, buttons=1)))
        browser.send("Input.dispatchMouseEvent", type="mouseReleased", x=x0, y=y0, button="left", buttons=0, clickCount=1)
        for _ in range(8):  # zoom far in: a few hundred spans in view, drawn one by one
            browser.wheel(x0, y0, delta_y=-400)
        browser.next_frame()
        deep = browser.evaluate(f"window.graphmode.range('{DIV}')")
        for _ in range(steps):
            zoom_in.append(_timed(browser, lambda: browser.wheel(x0, y0, delta_y=-100)))
            zoom_in.append(_timed(browser, lambda: browser.wheel(x0, y0, delta_y=100)))
        browser.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left", buttons=1, clickCount=1)
        for k in range(steps):
            dx = 40 if k % 2 == 0 else -40
            pan_in.append(_timed(browser, lambda: browser.mouse_move(x0 + dx, y0, buttons=1)))
        browser.send("Input.dispatchMouseEvent", type="mouseReleased", x=x0, y=y0, button="left", buttons=0, clickCount=1)
        return {
            "first_paint_s": state["firstPaintMs"] / 1e3, "all_drawn_s": charts_s,
            "first_contentful_paint_s": fcp / 1e3 if fcp else None,
            "zoom_whole_run_s": zoom_out, "pan_whole_run_s": pan_out, "zoom_deep_s": zoom_in, "pan_deep_s": pan_in,
            "whole_range_ms": [v / 1e6 for v in whole], "deep_range_us": [v / 1e3 for v in deep],
            "errors": browser.errors,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000, help="kernels in the trace (eager + graph nodes)")
    ap.add_argument("--runs", type=int, default=3, help="fresh browsers, each loading the page once")
    ap.add_argument("--steps", type=int, default=5, help="zooms and pans measured per run and zoom level")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    args = ap.parse_args()
    iterations = max(1, args.kernels // (2 * KERNELS_PER_ITERATION))
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = Path(tmp) / "scale.gmtrace"
        t = time.perf_counter()
        counts = write_synthetic_trace(trace_path, iterations=iterations, kernels_per_iteration=KERNELS_PER_ITERATION,
                                       jitter_seed=13)
        gen_s = time.perf_counter() - t
        html_path = Path(tmp) / "scale.html"
        with load(trace_path) as trace:
            t = time.perf_counter()
            summary = write_page(trace, html_path)
            view_s = time.perf_counter() - t
        trace_mb = trace_path.stat().st_size / 1e6
        print(f"machine: {os.cpu_count()} CPUs; Chromium headless, software rendering")
        print(f"trace: {counts.kernels:,} kernels, {counts.api_calls:,} API calls, {summary.spans_total:,} spans "
              f"({trace_mb:.1f} MB; generated in {gen_s:.1f} s)")
        print(f"view: {view_s:.2f} s; page {summary.bytes / 1e6:.1f} MB; {summary.spans_drawn:,} of {summary.spans_total:,} spans in the page")
        result: dict[str, Any] = {"kernels": counts.kernels, "spans": summary.spans_total, "spans_in_page": summary.spans_drawn,
                                  "page_mb": summary.bytes / 1e6, "view_s": view_s, "trace_mb": trace_mb, "runs": []}
        if find_chromium() is None:
            print("browser: no Chromium found (apt-get install chromium)")
            return
        for _ in range(args.runs):
            result["runs"].append(measure_page(html_path, args.steps))
    runs = result["runs"]

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    def pooled(key: str) -> tuple[float, float]:
        values = [v for r in runs for v in r[key]]
        return statistics.median(values), max(values)

    each = ", ".join(f"{r['first_paint_s']:.2f}" for r in runs)
    print(f"first paint (navigation to headline and every timeline drawn), median of {len(runs)}: {med('first_paint_s'):.2f} s "
          f"({each}); target {TARGETS['first_paint_s']:g} s")
    print(f"first contentful paint: {med('first_contentful_paint_s'):.2f} s; every chart drawn, plotly.js loaded right "
          f"after the first paint: {med('all_drawn_s'):.2f} s")
    for key, what in (("zoom_whole_run_s", "zoom, whole run in view"), ("pan_whole_run_s", "pan, whole run in view"),
                      ("zoom_deep_s", "zoom, zoomed in"), ("pan_deep_s", "pan, zoomed in")):
        m, worst = pooled(key)
        print(f"{what}: median {m * 1e3:.0f} ms, worst {worst * 1e3:.0f} ms (input event to next frame drawn)")
    print(f"whole-run view {runs[0]['whole_range_ms'][1] - runs[0]['whole_range_ms'][0]:,.1f} ms wide; zoomed-in view "
          f"{runs[0]['deep_range_us'][1] - runs[0]['deep_range_us'][0]:,.1f} us wide")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
