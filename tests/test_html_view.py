"""`graphmode view` in a real headless Chromium: draws without errors, counts, links, escaping, windows.

Synthetic traces (meta workload='synthetic') with known counts; real recordings under
tests/data/*.gmtrace when present. Skips with a reason where no Chromium is installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Chromium, find_chromium
from synthetic_timeline import write_synthetic_trace
from typer.testing import CliRunner

from graphmode.cli import app
from graphmode.reports.html import write_html
from graphmode.tracer.store import load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "tests" / "data").glob("*.gmtrace"))
XSS_KERNEL = "<img src=x onerror=alert(1)>"
XSS_NVTX = "</script><script>alert(2)</script>"

needs_chromium = pytest.mark.skipif(find_chromium() is None,
                                    reason="no Chromium (Debian: apt-get install chromium); HTML not checked in a browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    if find_chromium() is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium)")
    with Chromium() as b:
        yield b


def _open(browser: Chromium, page: Path) -> dict:
    browser.errors.clear()
    browser.dialogs.clear()
    return browser.open(page)


def _emit(gd_id: str, source: str, label: str, row: int) -> str:
    """JS that sends plotly_hover for span `row` of the trace drawing (source, label), as a real hover does."""
    return (f"(() => {{ const gd = document.getElementById('{gd_id}'); "
            f"const c = gd.data.findIndex(t => t.meta && t.meta.source === '{source}' && t.meta.label === '{label}'); "
            f"gd.emit('plotly_hover', {{points: [{{curveNumber: c, pointNumber: 3 * {row}, data: gd.data[c]}}]}}); "
            f"return true; }})()")


@needs_chromium
def test_small_trace_draws_every_span_without_errors(browser: Chromium, tmp_path: Path) -> None:
    counts = write_synthetic_trace(tmp_path / "t.gmtrace", iterations=5, kernels_per_iteration=6)
    with load(tmp_path / "t.gmtrace") as trace:
        summary = write_html(trace, tmp_path / "t.html")
    state = _open(browser, tmp_path / "t.html")
    assert browser.errors == [] and browser.dialogs == []
    assert summary.note == ""
    assert state["kernelSpansDrawn"] == counts.kernels == 60
    assert state["apiCallsDrawn"] == counts.api_calls
    # The page opens offline: no script or stylesheet is fetched from anywhere.
    text = (tmp_path / "t.html").read_text()
    assert "<script src=" not in text and "<link" not in text
    shot = browser.screenshot(tmp_path / "t.png")
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
    kernel_green = np.array([0, 158, 115])  # COLOURS[('gpu','kernel')] drawn by WebGL on the timelines
    assert int((np.abs(pixels - kernel_green).max(axis=2) < 12).sum()) > 500


@needs_chromium
def test_hover_links_launch_and_kernel(browser: Chromium, tmp_path: Path) -> None:
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=3, kernels_per_iteration=4, kernel_name="axpy_kernel")
    with load(tmp_path / "t.gmtrace") as trace:
        write_html(trace, tmp_path / "t.html")
    _open(browser, tmp_path / "t.html")
    browser.evaluate(_emit("gm-timeline-full", "api", "kernel_launch", 2))
    info = browser.evaluate("document.getElementById('gm-info').textContent")
    assert "cudaLaunchKernel" in info and "correlation id: 3" in info
    linked = browser.evaluate(
        "(() => { const gd = document.getElementById('gm-timeline-full');"
        " const l = gd.data.find(t => t.meta && t.meta.role === 'linked');"
        " const a = gd.data.find(t => t.meta && t.meta.role === 'arrows');"
        " return [Array.from(l.x).filter(Number.isFinite).length / 2, Array.from(a.x).filter(Number.isFinite).length / 2]; })()")
    assert linked == [2, 1]  # the launch call and its kernel light up; one arrow between them
    browser.evaluate(_emit("gm-timeline-full", "gpu", "kernel", 0))
    info = browser.evaluate("document.getElementById('gm-info').textContent")
    assert "axpy_kernel" in info and "grid: 128×1×1" in info and "block: 256×1×1" in info and "stream id: 7" in info


@needs_chromium
def test_user_strings_are_escaped(browser: Chromium, tmp_path: Path) -> None:
    write_synthetic_trace(tmp_path / "x.gmtrace", kernel_name=XSS_KERNEL, nvtx_message=XSS_NVTX)
    with load(tmp_path / "x.gmtrace") as trace:
        write_html(trace, tmp_path / "x.html")
    text = (tmp_path / "x.html").read_text()
    assert XSS_KERNEL not in text and XSS_NVTX not in text
    _open(browser, tmp_path / "x.html")
    browser.evaluate(_emit("gm-timeline-full", "gpu", "kernel", 0))
    assert XSS_KERNEL in browser.evaluate("document.getElementById('gm-info').textContent")
    browser.evaluate(_emit("gm-timeline-full", "marker", "nvtx", 0))
    assert XSS_NVTX in browser.evaluate("document.getElementById('gm-info').textContent")
    # Plotly's own hover label on a topology node (plotly renders that text as HTML).
    browser.evaluate("(() => { const gd = document.getElementById('gm-topo-0');"
                     " Plotly.Fx.hover(gd, [{curveNumber: 2, pointNumber: 0}]); return true; })()")
    hover_text = browser.evaluate("Array.from(document.querySelectorAll('.hoverlayer text')).map(t => t.textContent).join(' ')")
    assert XSS_KERNEL in hover_text
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    assert browser.dialogs == [] and browser.errors == []


@needs_chromium
def test_bounded_page_says_what_it_left_out(browser: Chromium, tmp_path: Path) -> None:
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=20, kernels_per_iteration=10)
    with load(tmp_path / "t.gmtrace") as trace:
        summary = write_html(trace, tmp_path / "t.html", max_spans=100)
        # Kernels in the iterations the page chose, counted with SQL over the iteration markers.
        n = int(summary.note.split("iterations 0:")[1].split(" ")[0])
        expected = trace.rows(
            "SELECT count(*) FROM gpu_spans s WHERE s.pass_id = 1 AND s.kind = 'kernel' AND EXISTS (SELECT 1 FROM markers m "
            "WHERE m.pass_id = 1 AND m.kind = 'iteration' AND m.iteration < ? AND s.start_ns BETWEEN m.start_ns AND m.end_ns)",
            [n])[0][0]
    assert "--iterations A:B" in summary.note and "--window START_MS:END_MS" in summary.note
    assert summary.spans_drawn <= 100 < summary.spans_total
    state = _open(browser, tmp_path / "t.html")
    assert browser.errors == []
    assert state["kernelSpansDrawn"] == expected == 2 * n * 10
    assert "--iterations" in browser.evaluate("document.getElementById('gm-window-note').textContent")


def test_view_cli_in_process_and_as_subprocess(tmp_path: Path) -> None:
    trace = tmp_path / "t.gmtrace"
    write_synthetic_trace(trace, iterations=6)
    runner = CliRunner()
    result = runner.invoke(app, ["view", str(trace), "-o", str(tmp_path / "a.html"), "--iterations", "1:3"])
    assert result.exit_code == 0, result.output
    assert "iterations 1:3 of each mode" in result.output
    data = (tmp_path / "a.html").read_text()
    payload = json.loads(data.split("id='gm-data'>")[1].split("</script>")[0])
    assert {p["div"] for p in payload["plots"]} >= {"gm-iter-0", "gm-iter-1", "gm-timeline-full", "gm-break-even"}
    bad = runner.invoke(app, ["view", str(trace), "--iterations", "50:60"])
    assert bad.exit_code == 2 and "eager 0:6" in bad.output
    assert runner.invoke(app, ["view", str(trace), "--window", "oops"]).exit_code == 2
    proc = subprocess.run([sys.executable, "-m", "graphmode", "view", str(trace), "--window", "0:0.05"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "t.html").read_text()
    payload = json.loads(page.split("id='gm-data'>")[1].split("</script>")[0])
    assert "gm-timeline-full" in {p["div"] for p in payload["plots"]}
    # 6 iterations of 10 kernels, 5 us apart: the window 0-0.05 ms holds the first ones only (synthetic_timeline.py)
    drawn, total = map(int, re.search(r"draws the window 0–0.05 ms: (\d+) of the pass's (\d+) spans", proc.stdout).groups())
    assert 0 < drawn < total


@needs_chromium
@pytest.mark.skipif(not FIXTURES, reason="no real recordings under tests/data/*.gmtrace yet")
@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_real_fixture_renders(browser: Chromium, tmp_path: Path, fixture: Path) -> None:
    with load(fixture) as trace:
        summary = write_html(trace, tmp_path / "f.html")
        kernels_in_window = trace.count("gpu_spans") if not summary.note else None
        kernels = trace.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'kernel' AND pass_id = "
                             "(SELECT max(pass_id) FROM passes WHERE detail IN ('graph', 'node'))")[0][0]
    state = _open(browser, tmp_path / "f.html")
    assert browser.errors == [] and browser.dialogs == []
    if kernels_in_window is not None:
        assert state["kernelSpansDrawn"] == kernels
    else:
        assert 0 < state["kernelSpansDrawn"] <= kernels
