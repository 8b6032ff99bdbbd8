"""The page stays responsive: no main-thread task over LONG_TASK_MS after the first paint (issue 31).

Measured with the browser's own long-task timing (a PerformanceObserver installed before the page's scripts
run, tests/browser.py `watch_main_thread`) while the page is scrolled to every section as a reader would and
its charts are drawn; on a real recording and on a large SYNTHETIC page (tests/synthetic_timeline.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Chromium, find_chromium
from synthetic_timeline import write_synthetic_trace

from graphmode.views import write_page
from graphmode.reports.html_plotly import plotly_bundle, stepped_bundle, trace_types
from graphmode.tracer.store import load

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
LONG_TASK_MS = 200.0  # the requirement; a slower machine that cannot meet it must say so, not loosen it
PAGE_TYPES = frozenset({"scatter", "histogram", "heatmap", "scattergl"})  # every trace type reports/ draws


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    if find_chromium() is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium)")
    with Chromium() as b:
        b.watch_main_thread()
        yield b


def tasks_after_first_paint(browser: Chromium, page: Path) -> tuple[list[tuple[float, float]], dict[str, Any]]:
    """Opens the page, scrolls to every section, waits for every chart, scrolls through again; the long tasks
    that began after the first contentful paint, and what the page marked (for the failure message)."""
    browser.errors.clear()
    state = browser.open(page, timeout_s=120)
    assert "error" not in state, state
    browser.visit_sections()
    browser.evaluate("window.graphmode.loadCharts()")  # already under way (idle): waits for the last chart
    browser.visit_sections(pause_s=0.1)
    browser.next_frame()
    fcp = browser.paint_ms()
    assert fcp is not None
    marks = browser.evaluate("Object.fromEntries(performance.getEntriesByType('mark').map(m => [m.name, Math.round(m.startTime)]))")
    assert browser.errors == []
    return [(s, d) for s, d in browser.long_tasks() if s >= fcp], {"first_contentful_paint": round(fcp), **marks}


def _check(tasks: list[tuple[float, float]], marks: dict[str, Any]) -> None:
    worst = max((d for _, d in tasks), default=0.0)
    assert worst <= LONG_TASK_MS, (f"a main-thread task took {worst:.0f} ms (> {LONG_TASK_MS:.0f} ms) after the first paint; "
                                   f"tasks (start, ms): {[(round(s), round(d)) for s, d in tasks]}; page marks: {json.dumps(marks)}")


def test_installed_plotly_starts_in_steps() -> None:
    """The page's plotly.js is the installed plotly.py's bundle rewritten to start in steps (html_plotly.py):
    when a plotly upgrade changes the bundle's shape the page falls back to one long start, and this says so."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    code = stepped_bundle(js, PAGE_TYPES)
    assert code is not None, "plotly.js's bundle no longer has the shape html_plotly.py rewrites: the page starts it in one task"
    assert plotly_bundle(PAGE_TYPES).stepped
    assert "window.GMPlotlyBoot=" in code and "window.Plotly = Plotly;\nreturn Plotly;" not in code
    assert code.count("gmCore.register(") == len(PAGE_TYPES - {"scatter"})  # scatter is in plotly's core
    assert stepped_bundle(js, frozenset({"no_such_trace"})) is None  # a type it cannot find: plotly.js as shipped
    assert trace_types([{"data": [{"x": [1]}, {"type": "heatmap"}]}, None]) == {"scatter", "heatmap"}


@pytest.mark.parametrize("fixture", ["scripts/torch_cudagraph.gmtrace", "dag-node.gmtrace"])
def test_real_recording_page_has_no_long_task_while_scrolled(browser: Chromium, tmp_path: Path, fixture: str) -> None:
    with load(DATA / fixture) as trace:
        write_page(trace, tmp_path / "page.html")
    tasks, marks = tasks_after_first_paint(browser, tmp_path / "page.html")
    assert "gm-chart-gm-break-even" in marks  # the charts were drawn while the tasks were watched
    _check(tasks, marks)


def test_synthetic_large_page_has_no_long_task_while_scrolled(browser: Chromium, tmp_path: Path) -> None:
    """SYNTHETIC: 200,000 kernels (1,000 eager iterations and 1,000 node-detail replays of a 100-kernel chain),
    305,014 spans in the page: decoding them at once was one 0.27 s task, its 100-level topology another 0.5 s."""
    counts = write_synthetic_trace(tmp_path / "t.gmtrace", iterations=1000, kernels_per_iteration=100, jitter_seed=13)
    with load(tmp_path / "t.gmtrace") as trace:
        summary = write_page(trace, tmp_path / "page.html")
    assert summary.note == "" and summary.spans_drawn == summary.spans_total == 305_014
    tasks, marks = tasks_after_first_paint(browser, tmp_path / "page.html")
    assert browser.evaluate("window.graphmode.kernelSpansDrawn") == counts.kernels == 200_000
    _check(tasks, marks)


def test_notebook_frame_draws_its_charts(tmp_path: Path) -> None:
    """In the notebook's sandboxed frame the browser gives the page no idle time: each start-up step waits
    for its idle callback's timeout, so the charts come within seconds only because that timeout is short
    (at 1.5 s they took ~15 s)."""
    import time

    from graphmode.analyzers import analyze
    from graphmode.views import notebook_html

    if find_chromium() is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium)")
    with load(DATA / "dag-node.gmtrace") as trace:
        a = analyze(trace)
    (tmp_path / "cell.html").write_text("<!DOCTYPE html><html><body>" + notebook_html(a) + "</body></html>", encoding="utf-8")
    with Chromium() as b:
        b.navigate(tmp_path / "cell.html")
        deadline, at = time.monotonic() + 60, None
        while time.monotonic() < deadline and not b.frames:  # the sandboxed frame runs in a process of its own
            b.pump(0.1)
        b.evaluate("document.querySelector('iframe').scrollIntoView()")
        while time.monotonic() < deadline and at is None:
            time.sleep(0.2)
            at = b.evaluate("(performance.getEntriesByName('gm-chart-gm-iteration-times')[0] || {}).startTime || null", b.frames[0])
        assert b.errors == []
    assert at is not None and at < 10_000, at  # ms from the frame's start to its last chart drawn
