"""`graphmode view` in a real headless Chromium, driven with real mouse and wheel input.

On every committed recording (tests/data/*.gmtrace, tests/data/scripts/*.gmtrace and the bundled
graphmode/data/chain-h200.gmtrace): no error in any frame (the sandboxed CPU-profile frame included),
hover anywhere along a span shows that span, the shared scale of the iteration views survives a
double-click reset, every colour drawn has a legend entry, the CPU profile renders. Synthetic traces
(meta workload='synthetic') with known counts check counts, links, search, escaping and windows.
Skips with a reason where no Chromium is installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Chromium, find_chromium
from synthetic_timeline import write_synthetic_trace
from typer.testing import CliRunner

from graphmode.cli import app
from graphmode.views import html_page, write_page
from graphmode.reports.timeline_plot import COLOURS
from graphmode.analyzers import analyze
from graphmode.tracer.store import load

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = (sorted((ROOT / "tests" / "data").glob("*.gmtrace")) + sorted((ROOT / "tests" / "data" / "scripts").glob("*.gmtrace"))
              + [ROOT / "graphmode" / "data" / "chain-h200.gmtrace"])
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


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """fixture path -> its page, written once per test module (analysis and the CPU profile take seconds)."""
    pages: dict[Path, Path] = {}
    folder = tmp_path_factory.mktemp("pages")

    def page(fixture: Path) -> Path:
        if fixture not in pages:
            with load(fixture) as trace:
                write_page(trace, folder / f"{fixture.parent.name}-{fixture.stem}.html")
            pages[fixture] = folder / f"{fixture.parent.name}-{fixture.stem}.html"
        return pages[fixture]
    return page


def _open(browser: Chromium, page: Path) -> dict[str, Any]:
    browser.errors.clear()
    browser.dialogs.clear()
    state = browser.open(page)
    assert "error" not in state, state
    browser.evaluate("window.graphmode.loadCharts()")  # plotly charts load lazily; draw them all
    return state


def _js(browser: Chromium, call: str) -> Any:
    return browser.evaluate(f"window.graphmode.{call}")


def _page_data(path: Path) -> dict[str, Any]:
    m = re.search(r"<script type='application/json' id='gm-data'>(.*?)</script>", path.read_text(), re.S)
    assert m
    data: dict[str, Any] = json.loads(m.group(1))
    return data


# where every canvas and docked details box sits on the page, and how tall the page is
LAYOUT = ("JSON.stringify([document.documentElement.scrollHeight, ...Array.from(document.querySelectorAll('canvas, .details'),"
          " (e) => { const r = e.getBoundingClientRect(); return [e.id || e.parentNode.id, r.top + scrollY, r.height]; })])")


def _hover_along(browser: Chromium, div: str, source: str, label: str, k: int) -> None:
    """Moves the mouse to 5%, 50% and 95% of span k of a group: each time the page shows that span, and
    nothing on the page moves (a details box that grew with its text pushed everything below it down)."""
    _js(browser, f"unpin('{div}')")
    for frac in (0.05, 0.5, 0.95):
        p = _js(browser, f"spanPoint('{div}', '{source}', '{label}', {k}, {frac})")
        before = browser.evaluate(LAYOUT)
        browser.mouse_move(p["x"], p["y"])
        got = _js(browser, f"hovered('{div}')")
        assert got == p["index"], f"{div}: hovering {frac:.0%} along {source}/{label} #{k} showed span {got}, not {p['index']}"
        after = browser.evaluate(LAYOUT)
        assert after == before, f"{div}: hovering {source}/{label} #{k} moved the page: {before} -> {after}"


def _check_legends(browser: Chromium, divs: list[str]) -> None:
    """Every colour a timeline drew has an entry in the legend under it."""
    for div in divs:
        browser.next_frame()
        used = set(_js(browser, f"used('{div}')"))
        legend = set(_js(browser, f"legend('{'gm-iter-legend' if div.startswith('gm-iter') else div + '-legend'}')"))
        assert used and used <= legend, f"{div}: drawn {sorted(used - legend)} without a legend entry"


def _check_reset(browser: Chromium, data: dict[str, Any]) -> None:
    """Wheel-zoom one iteration view: all follow; double-click one: all return to the shared range."""
    iters = [p["div"] for p in data["plots"] if p.get("sync") == "iterations"]
    if len(iters) < 2:
        return
    first = data["plots"][[p["div"] for p in data["plots"]].index(iters[0])]
    shared = first["range"]
    p = _js(browser, f"spanPoint('{iters[0]}', 'marker', 'iteration', 0, 0.5)")
    if not p or p.get("x") is None:  # script traces mark no iterations: any span of the view will do
        source, label = next((g["source"], g["label"]) for g in first["hover"]["groups"] if g["count"])
        p = _js(browser, f"spanPoint('{iters[0]}', '{source}', '{label}', 0, 0.5)")
    _js(browser, f"unpin('{iters[0]}')")
    browser.wheel(p["x"], p["y"], delta_y=-300)
    browser.next_frame()
    zoomed = [_js(browser, f"range('{d}')") for d in iters]
    assert all(r == zoomed[0] for r in zoomed) and zoomed[0] != shared
    browser.click(p["x"], p["y"], count=2)
    browser.next_frame()
    assert [_js(browser, f"range('{d}')") for d in iters] == [shared] * len(iters)


# ---- synthetic traces: known counts --------------------------------------------------------------

@needs_chromium
def test_small_trace_draws_every_span_without_errors(browser: Chromium, tmp_path: Path) -> None:
    counts = write_synthetic_trace(tmp_path / "t.gmtrace", iterations=5, kernels_per_iteration=6)
    with load(tmp_path / "t.gmtrace") as trace:
        summary = write_page(trace, tmp_path / "t.html")
    state = _open(browser, tmp_path / "t.html")
    assert browser.errors == [] and browser.dialogs == [], (browser.errors, browser.dialogs)
    assert summary.note == ""
    assert state["kernelSpansDrawn"] == counts.kernels == 60, state
    assert state["apiCallsDrawn"] == counts.api_calls
    assert 0 < state["firstPaintMs"] <= state["renderedMs"]
    # The page opens offline: no script or stylesheet is fetched from anywhere.
    text = (tmp_path / "t.html").read_text()
    assert "<script src=" not in text and "<link" not in text
    browser.evaluate("window.scrollTo(0, 0)")
    import numpy as np
    from PIL import Image

    kernel_green = np.array([0, 158, 115])  # COLOURS[('gpu','kernel')] on the timelines' canvases
    for _ in range(5):  # the lazily loaded charts change the layout and the timelines redraw: wait for a settled frame
        browser.next_frame()
        browser.next_frame()
        shot = browser.screenshot(tmp_path / "t.png")
        pixels = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
        green = int((np.abs(pixels - kernel_green).max(axis=2) < 12).sum())
        if green > 500:
            break
    assert green > 500, f"{green} kernel-green pixels in a {pixels.shape} screenshot"


@needs_chromium
def test_hover_links_launch_and_kernel(browser: Chromium, tmp_path: Path) -> None:
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=3, kernels_per_iteration=4, kernel_name="axpy_kernel")
    with load(tmp_path / "t.gmtrace") as trace:
        write_page(trace, tmp_path / "t.html")
    _open(browser, tmp_path / "t.html")
    div = "gm-timeline-full"
    _hover_along(browser, div, "api", "kernel_launch", 2)
    info = _js(browser, f"details('{div}')")
    assert "name: cudaLaunchKernel" in info and "correlation id: 3\n" in info
    browser.next_frame()
    assert _js(browser, f"linked('{div}')") == 2  # the launch call and its kernel light up
    assert _js(browser, f"arrows('{div}')") == 1  # one arrow from the call to the kernel
    _hover_along(browser, div, "gpu", "kernel", 0)
    info = _js(browser, f"details('{div}')")
    assert "name: axpy_kernel" in info and "grid: 128×1×1" in info and "block: 256×1×1" in info
    assert "lane: GPU 0 · stream 7" in info
    # a graph replay (one cudaGraphLaunch) links to all 4 of its node kernels
    _js(browser, f"showSpan('{div}', 'api', 'graph_launch', 1)")
    assert _js(browser, f"linked('{div}')") == 5
    _check_legends(browser, [div, "gm-iter-0", "gm-iter-1"])
    assert browser.errors == []


@needs_chromium
def test_search_greys_out_the_rest_and_filters_the_kernel_table(browser: Chromium, tmp_path: Path) -> None:
    counts = write_synthetic_trace(tmp_path / "t.gmtrace", iterations=4, kernels_per_iteration=5, kernel_name="axpy_kernel")
    with load(tmp_path / "t.gmtrace") as trace:
        write_page(trace, tmp_path / "t.html")
    _open(browser, tmp_path / "t.html")
    assert _js(browser, "search('AXPY')") == counts.kernels == 40  # case-insensitive, eager kernels and graph nodes
    assert _js(browser, "search('cudaGraphLaunch')") == 4 + 1  # 4 replays and the first launch
    _check_legends(browser, ["gm-timeline-full"])
    assert "nomatch" in _js(browser, "used('gm-timeline-full')")
    rows = browser.evaluate("Array.from(document.querySelectorAll('#gm-kernels tbody tr')).filter(r => !r.hidden).length")
    assert rows == 0  # the only kernel does not match cudaGraphLaunch
    assert _js(browser, "search('')") == 0
    assert browser.evaluate("Array.from(document.querySelectorAll('#gm-kernels tbody tr')).filter(r => !r.hidden).length") == 1
    browser.evaluate("document.getElementById('gm-next').click()")
    assert browser.errors == []


@needs_chromium
def test_user_strings_are_escaped(browser: Chromium, tmp_path: Path) -> None:
    write_synthetic_trace(tmp_path / "x.gmtrace", kernel_name=XSS_KERNEL, nvtx_message=XSS_NVTX)
    with load(tmp_path / "x.gmtrace") as trace:
        write_page(trace, tmp_path / "x.html")
    text = (tmp_path / "x.html").read_text()
    assert XSS_KERNEL not in text and XSS_NVTX not in text
    _open(browser, tmp_path / "x.html")
    assert XSS_KERNEL in _js(browser, "showSpan('gm-timeline-full', 'gpu', 'kernel', 0)")
    assert XSS_NVTX in _js(browser, "showSpan('gm-timeline-full', 'marker', 'nvtx', 0)")
    # Plotly's own hover label on a topology node (plotly renders that text as HTML).
    browser.evaluate("(() => { const gd = document.getElementById('gm-topo-0');"
                     " const c = gd.data.findIndex(t => t.hovertemplate);"
                     " Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: 0}]); return true; })()")
    hover_text = browser.evaluate("Array.from(document.querySelectorAll('.hoverlayer text')).map(t => t.textContent).join(' ')")
    assert XSS_KERNEL in hover_text
    assert XSS_KERNEL in browser.evaluate("document.getElementById('gm-kernels').textContent")
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    assert browser.dialogs == [] and browser.errors == []


@needs_chromium
def test_bounded_page_says_what_it_left_out(browser: Chromium, tmp_path: Path) -> None:
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=20, kernels_per_iteration=10)
    with load(tmp_path / "t.gmtrace") as trace:
        summary = write_page(trace, tmp_path / "t.html", max_spans=100)
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


@needs_chromium
def test_spans_left_out_are_hatched_and_labelled(browser: Chromium, tmp_path: Path) -> None:
    """SYNTHETIC: 20 iterations of 10 kernels per mode, a page limit of 100 spans: the page holds the first
    iterations of each mode; the rest of each mode is hatched with its span count and the --window to see it."""
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=20, kernels_per_iteration=10)
    with load(tmp_path / "t.gmtrace") as trace:
        summary = write_page(trace, tmp_path / "t.html", max_spans=100)
    full = next(p for p in _page_data(tmp_path / "t.html")["plots"] if p["div"] == "gm-timeline-full")
    gaps = full["left_out"]
    assert gaps and sum(g["spans"] for g in gaps) == summary.spans_total - summary.spans_drawn
    assert full["full"][0] == 0 and full["full"][1] >= max(g["end"] for g in gaps)  # the whole pass, not just what is drawn
    _open(browser, tmp_path / "t.html")
    # it opens on what it holds, from the first eager to the last graph iteration drawn: the eager iterations
    # between them that it does not hold are hatched in the middle (they looked like an idle GPU)
    middle = _js(browser, "leftOut('gm-timeline-full')")
    assert [d["label"] for d in middle] == [g["label"] for g in gaps if g["start"] > 0 and g["end"] < full["full"][1]] != []
    box = browser.evaluate("(() => { const c = document.querySelector('#gm-timeline-full canvas'); c.scrollIntoView({block: 'center'});"
                           " const r = c.getBoundingClientRect(); return [r.left, r.top]; })()")
    browser.mouse_move(box[0] + (middle[0]["x0"] + middle[0]["x1"]) / 2, box[1] + 20)
    assert f"not drawn: {middle[0]['label']}" in _js(browser, "details('gm-timeline-full')")  # hovering it says so too
    _js(browser, f"setRange('gm-timeline-full', {full['full'][0]}, {full['full'][1]})")
    drawn = _js(browser, "leftOut('gm-timeline-full')")
    assert [d["label"].split(" (")[0] for d in drawn] == [f"{g['spans']:,} spans not drawn" for g in gaps]  # narrow: the count
    for g in gaps:
        _js(browser, f"setRange('gm-timeline-full', {g['start'] - 1000}, {g['end'] + 1000})")
        (d,) = _js(browser, "leftOut('gm-timeline-full')")
        assert d["label"] == g["label"], (d, g)
        assert re.fullmatch(rf"{g['spans']:,} spans not drawn \(page limit\); open with --window [\d.]+:[\d.]+ to see them", g["label"])
        # hatched: the hatch's grey in the region's pixels, across the lanes
        grey = browser.evaluate(f"""(() => {{ const c = document.querySelector('#gm-timeline-full canvas'), x = Math.round({d["x0"]} + 2);
            const px = c.getContext('2d').getImageData(x, 0, Math.max(1, Math.round({d["x1"] - d["x0"]}) - 4), c.height).data;
            let n = 0; for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i] - 0x8a) < 24 && Math.abs(px[i + 2] - 0x98) < 24 && px[i] < px[i + 2]) n++;
            return n; }})()""")
        assert grey > 50, (d, grey)
    _check_legends(browser, ["gm-timeline-full"])
    assert "left-out" in _js(browser, "legend('gm-timeline-full-legend')")
    assert browser.errors == []
    # the window a label names holds the spans it counts: a page of that window draws them all
    a, b = map(float, re.search(r"--window ([\d.]+):([\d.]+)", gaps[0]["label"]).groups())  # type: ignore[union-attr]
    with load(tmp_path / "t.gmtrace") as trace:
        window = write_page(trace, tmp_path / "w.html", window_ms=(a, b))
    assert window.spans_drawn >= gaps[0]["spans"]


@needs_chromium
def test_deep_zoom_ticks_count_from_an_offset(browser: Chromium, tmp_path: Path) -> None:
    """SYNTHETIC trace. Zoomed to 5 us at 1.2 ms into the pass (a tick every 1 us, 1,200 steps from the origin),
    ticks count from the first tick, whose time the axis prints once (absolute, they read like '1201 µs', and
    at 14 s into a run '14334770 µs'); zoomed out they are absolute again."""
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=20, kernels_per_iteration=10)
    with load(tmp_path / "t.gmtrace") as trace:
        write_page(trace, tmp_path / "t.html")
    _open(browser, tmp_path / "t.html")
    div = "gm-timeline-full"
    _js(browser, f"setRange('{div}', 1200000, 1205000)")
    axis = _js(browser, f"ticks('{div}')")
    assert axis == {"offset": "1.200 ms", "ticks": ["0", "+1 µs", "+2 µs", "+3 µs", "+4 µs", "+5 µs"]}, axis
    full = next(p for p in _page_data(tmp_path / "t.html")["plots"] if p["div"] == div)["full"]
    _js(browser, f"setRange('{div}', {full[0]}, {full[1]})")
    axis = _js(browser, f"ticks('{div}')")
    assert axis["offset"] is None and axis["ticks"][:2] == ["0 µs", "500 µs"] and "+" not in "".join(axis["ticks"]), axis
    assert browser.errors == []


@needs_chromium
def test_details_lead_with_duration_lane_and_correlation_and_fold_a_long_name(browser: Chromium, tmp_path: Path) -> None:
    """SYNTHETIC trace whose kernel has a 3,001-character name (templated kernels' names run that long)."""
    long_name = "k" + "_a" * 1500
    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=3, kernels_per_iteration=4, kernel_name=long_name)
    with load(tmp_path / "t.gmtrace") as trace:
        write_page(trace, tmp_path / "t.html")
    _open(browser, tmp_path / "t.html")
    _js(browser, "showSpan('gm-timeline-full', 'gpu', 'kernel', 1)")
    box = browser.evaluate("""(() => { const box = document.getElementById('gm-timeline-full-details');
        const dd = Array.from(box.querySelectorAll('dt')).find((dt) => dt.textContent === 'name').nextSibling;
        const more = dd.querySelector('details');
        return { keys: Array.from(box.querySelectorAll('dt'), (dt) => dt.textContent), shown: dd.firstChild.textContent,
                 open: more && more.open, whole: more && more.querySelector('.whole').textContent,
                 summary: more && more.querySelector('summary').textContent, visible: box.innerText.length }; })()""")
    assert box["keys"][:4] == ["duration", "lane", "correlation id", "name"], box["keys"]
    # shortened in its middle (reports.names.shorten: the start and the end of a name tell kernels apart)
    assert box["shown"].startswith("k_a_a") and len(box["shown"]) <= 160 and "…" in box["shown"]
    assert box["open"] is False and box["whole"] == long_name and box["summary"] == "whole name (3,001 characters)"
    assert box["visible"] < 600  # folded: the duration and the rest stay in view
    # a short name is shown as is, after the same three
    _js(browser, "showSpan('gm-timeline-full', 'api', 'kernel_launch', 0)")
    info = _js(browser, "details('gm-timeline-full')").splitlines()
    assert [ln.split(": ")[0] for ln in info[:4]] == ["duration", "lane", "correlation id", "name"]
    assert info[3] == "name: cudaLaunchKernel"
    assert browser.errors == []


@needs_chromium
def test_sortable_kernel_table(browser: Chromium, rendered: Any) -> None:
    _open(browser, rendered(ROOT / "tests" / "data" / "scripts" / "torch_cudagraph.gmtrace"))
    column = ("(col) => Array.from(document.querySelectorAll('#gm-kernels tbody tr'))"
              ".map(r => r.cells[col].dataset.sort)")
    totals = browser.evaluate(f"({column})(2).map(Number)")
    assert totals == sorted(totals, reverse=True)  # most eager GPU time first, as the analyzer orders them
    browser.evaluate("document.querySelectorAll('#gm-kernels thead th')[3].click()")
    medians = browser.evaluate(f"({column})(3).map(Number)")
    assert medians == sorted(medians, reverse=True) and medians != totals
    browser.evaluate("document.querySelectorAll('#gm-kernels thead th')[3].click()")
    assert browser.evaluate(f"({column})(3).map(Number)") == sorted(medians)
    browser.evaluate("document.querySelectorAll('#gm-kernels thead th')[0].click()")
    names = browser.evaluate(f"({column})(0)")
    assert names == sorted(names)
    assert "_ZN" not in browser.evaluate("document.getElementById('gm-kernels').innerText")  # demangled


def test_view_cli_in_process_and_as_subprocess(tmp_path: Path) -> None:
    trace = tmp_path / "t.gmtrace"
    write_synthetic_trace(trace, iterations=6)
    runner = CliRunner()
    result = runner.invoke(app, ["view", str(trace), "-o", str(tmp_path / "a.html"), "--iterations", "1:3"])
    assert result.exit_code == 0, result.output
    assert "iterations 1:3 of each mode" in result.output
    payload = _page_data(tmp_path / "a.html")
    assert {p["div"] for p in payload["plots"]} >= {"gm-iter-0", "gm-iter-1", "gm-timeline-full", "gm-break-even"}
    bad = runner.invoke(app, ["view", str(trace), "--iterations", "50:60"])
    assert bad.exit_code == 2 and "eager 0:6" in bad.output
    assert runner.invoke(app, ["view", str(trace), "--window", "oops"]).exit_code == 2
    proc = subprocess.run([sys.executable, "-m", "graphmode", "view", str(trace), "--window", "0:0.05"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # 6 iterations of 10 kernels, 5 us apart: the window 0-0.05 ms holds the first ones only (synthetic_timeline.py)
    drawn, total = map(int, re.search(r"draws the window 0–0.05 ms: (\d+) of the pass's (\d+) spans", proc.stdout).groups())
    assert 0 < drawn < total


# ---- every committed recording ------------------------------------------------------------------

@needs_chromium
@pytest.mark.parametrize("fixture", RECORDINGS, ids=[f"{p.parent.name}/{p.name}" for p in RECORDINGS])
def test_recording_page_in_a_browser(browser: Chromium, rendered: Any, fixture: Path) -> None:
    page = rendered(fixture)
    with load(fixture) as trace:
        from graphmode.analyzers.timeline import traced_pass

        pass_id = traced_pass(trace).pass_id  # type: ignore[union-attr]  # the pass the page draws
        kernels = trace.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'kernel' AND pass_id = ?", [pass_id])[0][0]
        first_gpu, last_gpu = trace.rows("SELECT min(start_ns), max(end_ns) FROM gpu_spans WHERE pass_id = ?", [pass_id])[0]
        start = next(p.start_ns for p in trace.passes if p.pass_id == pass_id)
        has_profile = isinstance(trace.meta.get("cpu_profile"), dict)
    data = _page_data(page)
    state = _open(browser, page)
    browser.pump(1.0)  # the CPU-profile frame runs in its own process: let its errors arrive
    assert browser.errors == [] and browser.dialogs == []
    assert "gm-window-note" not in page.read_text() and state["kernelSpansDrawn"] == kernels
    # The whole-run view opens on the CUDA activity: every GPU span is inside the initial range.
    lo, hi = _js(browser, "initial('gm-timeline-full')")
    assert lo <= first_gpu - start and last_gpu - start <= hi
    timelines = [p for p in data["plots"] if p["kind"] == "timeline"]
    for p in timelines:  # every kind of GPU work and launch, the middle span of each
        for source, label in {(g["source"], g["label"]) for g in p["hover"]["groups"] if g["count"] and
                              (g["source"] == "gpu" or g["label"] in ("kernel_launch", "graph_launch", "sync"))}:
            n = _js(browser, f"count('{p['div']}', '{source}', '{label}')")
            _hover_along(browser, p["div"], source, label, n // 2)
    _check_reset(browser, data)
    _check_legends(browser, [p["div"] for p in timelines])
    if has_profile:
        browser.evaluate("document.querySelector('iframe.pyinstrument').scrollIntoView()")
        browser.pump(1.0)
        (frame,) = browser.frames[-1:]
        text = browser.evaluate("document.body.innerText", frame)
        assert "Samples:" in text and "run_script" in text, text[:300]
    assert browser.errors == []


@pytest.mark.parametrize("fixture", RECORDINGS, ids=[f"{p.parent.name}/{p.name}" for p in RECORDINGS])
def test_recording_page_structure(rendered: Any, fixture: Path) -> None:
    size = fixture.stat().st_size
    page = rendered(fixture).read_text()
    data = _page_data(rendered(fixture))
    # in proportion: plotly.js (gzipped, ~1.9 MB) plus a few times the trace file
    assert len(page) < 2_200_000 + 3 * size, (len(page), size)
    assert page.count("id='gm-verdict'") == 1
    assert not re.search(r"graph (\d+) \(graph \1\b", page)  # no repeated labels
    iters = [p for p in data["plots"] if p.get("sync") == "iterations"]
    for L, lane in enumerate(iters[0]["lanes"] if iters else []):  # no lane empty in every mode's iteration
        assert all(p["lanes"] == iters[0]["lanes"] for p in iters)
        assert any(p["lane_bounds"][L + 1] > p["lane_bounds"][L] for p in iters), f"{lane}: empty in every iteration view"
    for p in data["plots"]:
        if p["kind"] != "plotly":
            continue
        traces = p["figure"]["data"]
        legend = {c for t in traces if t.get("showlegend", True) for c in _colours(t)}
        for t in traces:
            assert set(_colours(t)) <= legend | {"#ffffff", "#999999", "#333333"}, (p["div"], t.get("name"))
        if p["div"].startswith("gm-topo"):
            layout = p["figure"]["layout"]
            assert layout["xaxis"]["dtick"] == 1 and layout["xaxis"]["tickformat"] == "d"
            hover = " ".join(h for t in traces for h in t.get("text", []) if isinstance(h, str))
            assert not re.search(r"\d{10,}", hover)  # no raw 64-bit node ids
            measured = any("median" in h for t in traces for h in t.get("text", []) if isinstance(h, str))
            assert measured == any("median duration" in t.get("name", "") for t in traces if t.get("showlegend", True))


def _colours(trace: dict[str, Any]) -> list[str]:
    out = []
    for part in ("line", "marker"):
        c = trace.get(part, {}).get("color")
        out += c if isinstance(c, list) else [c] if c else []
    return out


# ---- what the page says about particular recordings ---------------------------------------------

def _text(fixture: str, rendered: Any) -> str:
    return re.sub(r"<[^>]+>", " ", rendered(ROOT / "tests" / "data" / fixture).read_text().split("<script")[0])


def test_lanes_idle_in_every_iteration_view_are_left_out_of_them(rendered: Any) -> None:
    plots = {p["div"]: p for p in _page_data(rendered(ROOT / "tests" / "data" / "scripts" / "torch_cudagraph.gmtrace"))["plots"]}
    # the recording's streams 14 and 18 (PyTorch's side streams) ran nothing in either mode's middle iteration
    idle = {"GPU 0 · stream 14", "GPU 0 · stream 18"}
    assert idle <= set(plots["gm-timeline-full"]["lanes"])
    assert not idle & set(plots["gm-iter-0"]["lanes"]) and plots["gm-iter-0"]["lanes"] == plots["gm-iter-1"]["lanes"]
    assert len(plots["gm-iter-0"]["lanes"]) == len(plots["gm-timeline-full"]["lanes"]) - 2


@pytest.mark.parametrize("fixture", ["scripts/cuda_python_eager_only.gmtrace", "scripts/timed/cuda_python_eager_only.gmtrace.xz"])
def test_eager_only_trace_leads_with_its_prediction(tmp_path: Path, fixture: str) -> None:
    import lzma

    path = ROOT / "tests" / "data" / fixture
    if path.suffix == ".xz":  # committed compressed (xz -9), as tests/test_script_fixtures.py opens them
        (tmp_path / path.stem).write_bytes(lzma.decompress(path.read_bytes()))
        path = tmp_path / path.stem
    with load(path) as trace:
        page, _ = html_page(trace)
    text = page.split("<script")[0]
    order = [text.index(f"id='{i}'") for i in ("gm-prediction", "gm-verdict", "gm-headline")]
    assert order == sorted(order), order  # the prediction first, then the verdict (no comparison) and the numbers
    assert text.count("id='gm-prediction'") == 1 and "<h2>Prediction: what a CUDA graph would cost and save</h2>" in text
    assert "No CUDA graph was built" in text and "would cost and save, predicted from the eager work" in text


def test_a_measured_comparison_still_leads_with_its_verdict(rendered: Any) -> None:
    text = rendered(ROOT / "tests" / "data" / "dag-node.gmtrace").read_text().split("<script")[0]
    order = [text.index(f"id='{i}'") for i in ("gm-verdict", "gm-headline", "gm-break-even-section", "gm-prediction")]
    assert order == sorted(order), order


def test_failed_capture_has_no_one_time_cost_row(rendered: Any) -> None:
    text = _text("scripts/broken_capture.gmtrace", rendered)
    assert "Stream capture broken" in text and "one-time cost of" not in text and "No headline numbers" in text


def test_tiny_sample_is_flagged(rendered: Any) -> None:
    text = " ".join(_text("scripts/torch_compile.gmtrace", rendered).split())
    # torch.compile's only eager run of each shape is its one warm-up call, a first call and no baseline: the page
    # states no eager iteration; the saving is predicted (analyzers.counterfactual) and says so; each graph replays
    # 49-99 times
    assert "eager iteration (median" not in text and "break-even vs eager, predicted (no eager twin ran)" in text
    assert "predicted (replay" in text and "launched one by one by Inductor" in text
    assert "graph iteration (median" in text and "graph median from" not in text


def test_never_replayed_graph_is_noted(rendered: Any) -> None:
    text = _text("scripts/torch_compile.gmtrace", rendered)
    assert "graph 1 (captured): no topology recorded; never replayed in this run" in text


def test_break_even_marks_this_runs_replays_and_histogram_drops_outliers(rendered: Any) -> None:
    plots = {p["div"]: p for p in _page_data(rendered(ROOT / "tests" / "data" / "scripts" / "torch_cudagraph.gmtrace"))["plots"]}
    run = [t for t in plots["gm-break-even"]["figure"]["data"] if t["name"].startswith("this run")]
    assert run and run[0]["x"] == [20, 20] and run[0]["name"] == "this run: 20 replays"
    hist = plots["gm-iteration-times"]["figure"]
    # the eager iterations include one far longer than the rest (the first, with cuBLAS set-up): the axis
    # stops far below it, and the title says how long it took
    with load(ROOT / "tests" / "data" / "scripts" / "torch_cudagraph.gmtrace") as trace:
        a = analyze(trace)
    walls = [m.wall for m in a.modes if m.wall is not None]
    slowest = max(w.max for w in walls)
    assert slowest > 20 * max(w.median for w in walls)
    longest = f"{slowest / 1e3:,.1f}"
    assert all(t["xbins"]["end"] < slowest / 1e3 / 10 for t in hist["data"])
    assert f"not drawn; the longest took {longest}" in hist["layout"]["title"]["text"]


def test_every_span_kind_has_its_own_colour_and_words() -> None:
    assert len(set(COLOURS.values())) == len(COLOURS)  # instantiate and the op marker once shared one
    from graphmode.reports.timeline_plot import LEGEND

    assert set(LEGEND) == set(COLOURS) and len(set(LEGEND.values())) == len(LEGEND)


def test_a_long_chain_has_a_tick_every_few_levels(tmp_path: Path) -> None:
    """SYNTHETIC: a 100-kernel chain has 100 dependency levels; a tick per level made plotly measure 100 tick
    labels (0.4-0.7 s in one task): at most MAX_LEVEL_TICKS ticks, on round numbers of levels."""
    from graphmode.analyzers.page import graph_nodes
    from graphmode.reports.html_charts import MAX_LEVEL_TICKS, topology_figure

    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=2, kernels_per_iteration=100)
    with load(tmp_path / "t.gmtrace") as trace:
        nodes = graph_nodes(trace, 1, 1)
        assert nodes is not None
        figure = topology_figure(1, nodes, None)
    assert figure is not None
    axis = figure["layout"]["xaxis"]
    assert axis["tick0"] == 0 and axis["dtick"] == 5 and 100 / axis["dtick"] <= MAX_LEVEL_TICKS


@needs_chromium
def test_an_untraced_window_is_hatched_as_not_recorded(browser: Chromium, tmp_path: Path) -> None:
    """A real recording of the one run with an untraced window (tests/data/scripts/windows_s24/decode_one: a Llama
    decode loop, 32 steps with CUPTI detached): the whole-run timeline hatches the window and hovering it says nothing
    was recorded there, not that the page left spans out."""
    import lzma

    trace_path = tmp_path / "decode.gmtrace"
    trace_path.write_bytes(lzma.decompress((ROOT / "tests/data/scripts/windows_s24/decode_one.gmtrace.xz").read_bytes()))
    with load(trace_path) as trace:
        write_page(trace, tmp_path / "d.html")
    full = next(p for p in _page_data(tmp_path / "d.html")["plots"] if p["div"] == "gm-timeline-full")
    (w,) = [g for g in full["left_out"] if g.get("kind") == "untraced"]
    _open(browser, tmp_path / "d.html")
    _js(browser, f"setRange('gm-timeline-full', {w['start'] - 1_000_000}, {w['end'] + 1_000_000})")
    (d,) = _js(browser, "leftOut('gm-timeline-full')")
    assert d["label"] == w["label"] and w["label"].startswith("untraced window: CUPTI detached, nothing recorded")
    box = browser.evaluate("(() => { const c = document.querySelector('#gm-timeline-full canvas'); c.scrollIntoView({block: 'center'});"
                           " const r = c.getBoundingClientRect(); return [r.left, r.top]; })()")
    browser.mouse_move(box[0] + (d["x0"] + d["x1"]) / 2, box[1] + 20)
    assert f"not recorded: {w['label']}" in _js(browser, "details('gm-timeline-full')")
    assert browser.errors == []
