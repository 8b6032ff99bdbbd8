"""Source-line attribution (issue 5): each graph node and each eager kernel traced to the user's line.

The real H200 recordings of the examples (tests/data/scripts/) carry graph-node sources; none yet
carries eager launch sources (`--launch-sources`), so that path is checked on a SYNTHETIC trace built
here, whose numbers are chosen by hand.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from browser import Chromium, find_chromium
from rich.console import Console

from graphmode.analyzers import analyze, to_dict
from graphmode.analyzers.sources import kernel_sources, source_lines
from graphmode.views import html_page, write_page
from graphmode.reports.terminal import print_report
from tests.conftest import DATA, ROOT
from tests.synthetic import SyntheticTrace
from graphmode.tracer.store import load
from graphmode.tracer.validate import validate_trace

SCRIPTS = DATA / "scripts"


def _marked(example: str) -> set[str]:
    """'example.py:N' for each line of examples/<example> tagged `# LINE`."""
    lines = (ROOT / "examples" / example).read_text().splitlines()
    return {f"{example}:{i + 1}" for i, line in enumerate(lines) if "# LINE" in line}


def _short(source: str) -> str:
    """'/path/to/file.py:23 step' -> 'file.py:23' (recordings hold the recording machine's paths)."""
    m = re.match(r"(.*):(\d+) \S+$", source)
    assert m, source
    return f"{Path(m.group(1)).name}:{m.group(2)}"


def _terminal(trace_path: Path) -> str:
    out = io.StringIO()
    print_report(analyze(load(trace_path)), Console(file=out, width=200, color_system=None))
    return out.getvalue()


# ---- real recordings -------------------------------------------------------------------------------

@pytest.mark.parametrize("example", ["torch_cudagraph", "cuda_python_capture", "cupy_graph"])
def test_graph_nodes_are_attributed_to_the_marked_lines(example: str) -> None:
    a = analyze(load(SCRIPTS / f"{example}.gmtrace"))
    nodes = [s for s in a.source_lines if s.kind == "graph node"]
    assert {_short(s.source) for s in nodes} == _marked(f"{example}.py")
    assert all(s.graph_id != 0 and s.count >= 1 and s.kernels for s in nodes)


def test_torch_cudagraph_lines_own_their_kernels() -> None:
    t = load(SCRIPTS / "torch_cudagraph.gmtrace")
    by_line = {_short(s.source): s for s in analyze(t).source_lines}
    # examples/torch_cudagraph.py: line 23 is `relu(inp @ w1)`, 24 `tanh(h @ w2)`: a GEMM and an elementwise each
    for line, elementwise in (("torch_cudagraph.py:23", "clamp"), ("torch_cudagraph.py:24", "tanh")):
        names = by_line[line].kernels
        assert any("gemm" in k for k in names) and any(elementwise in k for k in names), names
    # the graph-detail pass records a replay as one span: nodes are counted, not timed
    assert all(s.gpu_spans == 0 and s.gpu_median_ns is None for s in by_line.values())
    # the per-kernel comparison names the lines too
    gemm = next(k for k in analyze(t).kernels if "gemm" in k.name)
    assert {_short(s) for s in gemm.sources} <= {"torch_cudagraph.py:23", "torch_cudagraph.py:24"} and gemm.sources


def test_node_detail_recording_times_each_line() -> None:
    t = load(SCRIPTS / "cuda_python_capture.gmtrace")
    (line,) = analyze(t).source_lines
    # every node span of the pass belongs to a node created on line 49, so the line owns all of them
    n_spans, total, median = t.rows("SELECT count(*), sum(end_ns - start_ns), quantile_cont(end_ns - start_ns, 0.5) "
                                    "FROM gpu_spans WHERE graph_node_id <> 0")[0]
    (n_nodes,) = t.rows("SELECT count(*) FROM graph_nodes WHERE node_type = 'kernel'")[0]
    assert (line.count, line.gpu_spans, line.gpu_total_ns, line.gpu_median_ns) == (n_nodes, n_spans, total, median)
    assert line.kernels == ("axpb",)


def test_terminal_report_shows_where_the_work_comes_from() -> None:
    text = _terminal(SCRIPTS / "torch_cudagraph.gmtrace")
    assert "Where the GPU work comes from" in text
    table = text[text.index("Where the GPU work comes from"):]
    for line in _marked("torch_cudagraph.py"):
        assert line in table


def test_terminal_report_has_no_source_table_without_sources() -> None:
    assert "Where the GPU work comes from" not in _terminal(DATA / "chain-node.gmtrace")


def _page_data(page: str) -> dict[str, Any]:
    m = re.search(r"<script type='application/json' id='gm-data'>(.*?)</script>", page, re.S)
    assert m
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_html_span_hover_carries_the_node_lines() -> None:
    page, _ = html_page(load(SCRIPTS / "cuda_python_capture.gmtrace"))
    data = _page_data(page)
    texts = [s for p in data["plots"] if p["hover"] for g in p["hover"]["groups"] if g["source"] == "gpu"
             for s in g["text_fields"].get("source", [])]
    assert {_short(s) for s in texts if s} == _marked("cuda_python_capture.py")


def test_html_topology_hover_carries_the_node_lines() -> None:
    data = _page_data(html_page(load(SCRIPTS / "torch_cudagraph.gmtrace"))[0])
    (topo,) = [p for p in data["plots"] if p["div"].startswith("gm-topo")]
    hover = [t for tr in topo["figure"]["data"] for t in tr.get("text", [])]
    kernel_lines = {_short(h.split("<br>")[-1]) for h in hover if "node" in h and ".py:" in h}
    assert kernel_lines == _marked("torch_cudagraph.py")


# ---- SYNTHETIC trace: eager launch sources (no recording has them yet) ----------------------------

L10, L12, L20 = "/home/u/train.py:10 step", "/home/u/train.py:12 step", "/home/u/model.py:20 body"


def _with_source(t: SyntheticTrace, table: str, index: int, source: str) -> None:
    t.rows[table][index]["source"] = source


def synthetic_sources(path: Path, hostile: str = "") -> Path:
    """SYNTHETIC. Node pass 1: one eager iteration, then two replays of a 3-node graph.

    eager: line 10 launches A (100 ns) and A (300 ns) and B (500 ns); line 12 launches C (50 ns);
    one more launch (D) has no recorded source. Graph 1: nodes 101 (A) and 102 (B) from model.py:20,
    node 103 (C) with no source; replays: 101 takes 200 then 400 ns, 102 100 and 100, 103 70 and 70.
    """
    t = SyntheticTrace().add_pass(1, "node")
    t.iteration(1, "eager", 0, 1_000, 5_000)
    eager = [("A", L10, 1_100, 1_200), ("A", L10, 1_300, 1_600), ("B", hostile or L10, 1_700, 2_200),
             ("C", L12, 2_300, 2_350), ("D", "", 2_400, 2_500)]
    for k, (name, src, start, end) in enumerate(eager):
        corr = t.call_with_driver(1, "cudaLaunchKernel", "kernel_launch", 1_000 + 10 * k, 1_005 + 10 * k,
                                  1_001 + 10 * k, 1_004 + 10 * k)
        _with_source(t, "api_calls", -2, src)  # the runtime call, whose correlation id the kernel carries
        t.span(1, name, start, end, corr)
    t.api(1, "cudaStreamSynchronize", "sync", 1_100, 4_900)
    t.graph(1, 1, "g", [(101, "kernel", "A"), (102, "kernel", "B"), (103, "kernel", "C")], [(101, 103), (102, 103)])
    for index, src in enumerate((L20, L20, "")):
        _with_source(t, "graph_nodes", index, src)
    for i, (d101, d102, d103) in enumerate(((200, 100, 70), (400, 100, 70))):
        base = 10_000 + 10_000 * i
        t.iteration(1, "graph", i, base, base + 2_000)
        corr = t.api(1, "cudaGraphLaunch", "graph_launch", base, base + 50)
        t.span(1, "A", base + 100, base + 100 + d101, corr, graph_id=1, node_id=101)
        t.span(1, "B", base + 100, base + 100 + d102, corr, stream=8, graph_id=1, node_id=102)
        t.span(1, "C", base + 600, base + 600 + d103, corr, graph_id=1, node_id=103)
        t.api(1, "cudaStreamSynchronize", "sync", base + 60, base + 1_900)
    return t.write(path)


def test_synthetic_eager_and_node_lines_by_hand(tmp_path: Path) -> None:
    trace = load(synthetic_sources(tmp_path / "synthetic.gmtrace"))
    assert validate_trace(trace) == []
    lines, truncated = source_lines(trace, 1)
    assert not truncated
    got = [(s.source, s.kind, s.graph_id, s.kernels, s.count, s.gpu_spans, s.gpu_median_ns, s.gpu_total_ns) for s in lines]
    assert got == [
        # line 10: A 100 + A 300 + B 500 = 900 ns over 3 launches, median 300; B has more GPU time than A (400)
        (L10, "eager launch", 0, ("B", "A"), 3, 3, 300.0, 900.0),
        # model.py:20: nodes 101, 102 over 2 replays: 200, 400, 100, 100 -> total 800, median (100 + 200) / 2
        (L20, "graph node", 1, ("A", "B"), 2, 4, 150.0, 800.0),
        (L12, "eager launch", 0, ("C",), 1, 1, 50.0, 50.0),
    ]  # D (no launch source) and node 103 (no node source) are not attributed
    assert kernel_sources(trace, 1) == {"A": (L20, L10), "B": (L20, L10), "C": (L12,)}
    a = analyze(trace)
    assert a.source_lines == lines
    assert {k.name: k.sources for k in a.kernels} == {"A": (L20, L10), "B": (L20, L10), "C": (L12,), "D": ()}
    assert to_dict(a)["source_lines"][0]["kernels"] == ["B", "A"]


def test_synthetic_eager_sources_in_terminal_and_html(tmp_path: Path) -> None:
    path = synthetic_sources(tmp_path / "synthetic.gmtrace")
    text = _terminal(path)
    table = text[text.index("Where the GPU work comes from"):]
    assert "train.py:10 step" in table and "eager launch" in table and "model.py:20 body" in table
    page, _ = html_page(load(path))
    data = _page_data(page)
    hover = {s for p in data["plots"] if p["hover"] for g in p["hover"]["groups"]
             for s in g["text_fields"].get("source", [])}
    assert {L10, L12, L20} <= hover  # eager kernels via their launch, graph kernels via their node, API calls


HOSTILE = "/tmp/</script><img src=x onerror=alert(1)>[bold red]x.py:7 f"


def test_hostile_source_is_escaped(tmp_path: Path) -> None:
    path = synthetic_sources(tmp_path / "synthetic.gmtrace", hostile=HOSTILE)
    text = _terminal(path)
    assert "[bold red]x.py:7" in text  # rich printed it as text, not as markup
    page, _ = html_page(load(path))
    assert "<img src=x" not in page and "</script><img" not in page
    data = _page_data(page)
    assert any(HOSTILE in json.dumps(p["hover"]) for p in data["plots"] if p["hover"])


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium (Debian: apt-get install chromium); HTML not checked in a browser")
def test_hover_box_shows_the_source_line_in_a_browser(tmp_path: Path) -> None:
    path = synthetic_sources(tmp_path / "synthetic.gmtrace", hostile=HOSTILE)
    with load(path) as trace:
        write_page(trace, tmp_path / "s.html")

    def hover(source: str, label: str, row: int) -> str:
        # the page's details box for span `row` (start order) of the group drawn as (source, label)
        text: str = browser.evaluate(f"window.graphmode.showSpan('gm-timeline-full', '{source}', '{label}', {row})")
        return text

    with Chromium() as browser:
        browser.open(tmp_path / "s.html")
        # GPU kernels in start order: eager A, A, B (hostile line), C, D, then replay 0's A (node 101)
        assert "source line: " + L10 in hover("gpu", "kernel", 0)
        assert "source line: " + HOSTILE in hover("gpu", "kernel", 2)
        assert "source line" not in hover("gpu", "kernel", 4)  # D: its launch has no recorded line
        assert "source line: " + L20 in hover("gpu", "kernel", 5)
        assert "source line: " + L10 in hover("api", "kernel_launch", 0)  # the launch call itself
        assert browser.evaluate("document.querySelectorAll('img').length") == 0
        assert browser.errors == [] and browser.dialogs == []


@pytest.mark.parametrize("which", ["synthetic", "torch_cudagraph", "cuda_python_capture"])
def test_json_report_with_source_lines_follows_the_schema(which: str, tmp_path: Path) -> None:
    import jsonschema

    from graphmode.reports.json_report import load_schema, render_json

    path = synthetic_sources(tmp_path / "s.gmtrace") if which == "synthetic" else SCRIPTS / f"{which}.gmtrace"
    doc = json.loads(render_json(analyze(load(path))))
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    assert doc["source_lines"] and all(k["sources"] for k in doc["kernels"] if k["name"] != "D")
