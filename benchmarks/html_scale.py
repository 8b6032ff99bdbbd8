"""HTML scale benchmark (issue 4): a generated 1,000,000-kernel trace through `graphmode view`.

Measures the time `view` takes, the HTML size, and the first render in headless Chromium (time
from navigation until every plot has drawn, as the page reports it; median of 3 fresh loads).
Run: /work/venv/bin/python benchmarks/html_scale.py [--kernels 1000000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import Chromium, find_chromium  # noqa: E402
from synthetic_timeline import write_synthetic_trace  # noqa: E402

from graphmode.reports.html import write_html  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

KERNELS_PER_ITERATION = 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000, help="kernels in the trace (eager + graph nodes)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    iterations = max(1, args.kernels // (2 * KERNELS_PER_ITERATION))
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = Path(tmp) / "scale.gmtrace"
        t = time.perf_counter()
        counts = write_synthetic_trace(trace_path, iterations=iterations, kernels_per_iteration=KERNELS_PER_ITERATION)
        gen_s = time.perf_counter() - t
        trace = load(trace_path)
        html_path = Path(tmp) / "scale.html"
        t = time.perf_counter()
        summary = write_html(trace, html_path)
        view_s = time.perf_counter() - t
        print(f"trace: {counts.kernels:,} kernels, {counts.api_calls:,} API calls (generated in {gen_s:.1f} s)")
        print(f"view: {view_s:.2f} s, HTML {summary.bytes / 1e6:.1f} MB, {summary.spans_drawn:,} of {summary.spans_total:,} spans drawn")
        if find_chromium() is None:
            print("first render: no Chromium found (apt-get install chromium)")
            return
        renders = []
        for _ in range(args.runs):
            with Chromium() as browser:
                state = browser.open(html_path, timeout_s=120)
                if browser.errors:
                    raise SystemExit(f"JavaScript errors: {browser.errors}")
                renders.append(state["renderedMs"] / 1e3)
        print(f"first render in headless Chromium: median {statistics.median(renders):.2f} s "
              f"(runs: {', '.join(f'{r:.2f}' for r in renders)})")


if __name__ == "__main__":
    main()
