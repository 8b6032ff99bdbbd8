"""Regenerates the README's pictures from real recordings: run from the repository root.

    python docs/img/regenerate.py

- report.svg: what `graphmode demo` prints on a machine without a GPU (the bundled H200 recording),
  captured from the command itself (ANSI colours, 100 columns) and drawn by rich;
- timeline.png, whole-run.png, topology-breakeven.png: `graphmode view` of tests/data/dag-node.gmtrace
  (the `dag` workload recorded on an H200), screenshots from headless Chromium (tests/browser.py).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "img"
sys.path.insert(0, str(ROOT / "tests"))

from browser import Chromium  # noqa: E402

from graphmode.views import write_page  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

RECORDING = ROOT / "tests" / "data" / "dag-node.gmtrace"
SHOTS = {  # file: (first element, last element) of the page
    "timeline.png": ("header", "#gm-iterations"),
    "whole-run.png": ("#gm-run", "#gm-kernel-table"),
    "topology-breakeven.png": ("#gm-topology", "#gm-break-even-section"),
}


def report_svg() -> None:
    from rich.console import Console
    from rich.text import Text

    env = dict(os.environ, FORCE_COLOR="1", COLUMNS="100", TERM="xterm-256color")
    env["CUDA_VISIBLE_DEVICES"] = ""  # the no-GPU path, which shows the bundled recording
    out = subprocess.run([sys.executable, "-m", "graphmode", "demo"], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True)
    console = Console(record=True, width=100, file=open(os.devnull, "w"), force_terminal=True)
    console.print(Text.from_ansi(out.stdout), end="")  # wrapped at 100 columns, as a terminal would
    console.save_svg(str(OUT / "report.svg"), title="graphmode demo")


def page_shots() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "dag.html"
        with load(RECORDING) as trace:
            write_page(trace, page)
        with Chromium(width=1400, height=1000) as browser:
            browser.open(page)
            browser.evaluate("window.graphmode.loadCharts()")
            browser.next_frame()
            if browser.errors:
                raise SystemExit(f"errors on the page: {browser.errors}")
            for name, (first, last) in SHOTS.items():
                top, bottom = browser.evaluate(
                    f"(() => {{ const a = document.querySelector('{first}').getBoundingClientRect(),"
                    f" b = document.querySelector('{last}').getBoundingClientRect();"
                    " return [a.top + window.scrollY - 8, b.bottom + window.scrollY + 8]; })()")
                shot = browser.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                    clip={"x": 0, "y": top, "width": 1400, "height": bottom - top, "scale": 1})
                (OUT / name).write_bytes(base64.b64decode(shot["data"]))


if __name__ == "__main__":
    report_svg()
    page_shots()
    print("regenerated:", ", ".join(sorted(["report.svg", *SHOTS])))
