"""Per-graph sections of the page, from a SYNTHETIC per-graph analysis.

The per-graph results (analyzers.results.GraphResult, Period, GraphTotals) are built here by hand, and
every number in them is invented for this test (none was measured). The page must show one section
per graph when `graphs` is non-empty and today's view when it is not.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.notes import note
from graphmode.analyzers.results import BreakEven, GraphCost, GraphResult, GraphTotals, Period, Stat, TraceAnalysis
from graphmode.views import html_page
from graphmode.tracer.store import load

TRACE = Path(__file__).parent / "data" / "scripts" / "torch_cudagraph.gmtrace"


def WithGraphs(analysis: TraceAnalysis, graphs: tuple[GraphResult, ...], totals: GraphTotals | None) -> TraceAnalysis:
    """The analysis of the real trace with the synthetic per-graph results in place of its own."""
    return dataclasses.replace(analysis, graphs=graphs, totals=totals)


def _period(mode: str, n: int, median: float, cpu: float, busy: float, bound: str, share: float) -> Period:
    return Period(mode, n, _stat(median), _stat(median), _stat(cpu), _stat(busy), None, bound, share, 0, "measure", 1)


def _stat(median: float) -> Stat:
    return Stat(10, median, 0.9 * median, 1.2 * median, median, 0.8 * median, 1.5 * median)


def _cost(graph_id: int, total: float, instantiate: float | None) -> GraphCost:
    return GraphCost(0, graph_id, "", "graph_events", total - (instantiate or 0), instantiate, None, None, None, None, total)


# SYNTHETIC: graph 1 saves 100 us per replay (150 eager, 50 graph), costs 5 ms, pays back after 50 replays
# [45, 60]; it was replayed 80 times. Graph 2 was built (2 ms) and never replayed. Graph 3's capture failed.
BE = BreakEven("eager", 150_000.0, 50_000.0, 5_000_000.0, 100_000.0, 50, False, None, 45, 60, False, 80, 2.0, 2000, 1)
GRAPHS = (
    GraphResult(1, "graph 1 (captured at /home/u/train.py:23)", "/home/u/train.py:23 step", "capture", "replayed", 80, 1,
                12, _period("eager", 2, 150_000.0, 150_000.0, 40_000.0, "cpu", 0.0),
                _period("graph", 79, 50_000.0, 20_000.0, 45_000.0, "gpu", 0.9),
                note("eager_kernel_sequence", kernels=12, units_per_replay=1), 3, _cost(1, 5_000_000.0, 3_000_000.0), BE,
                7_900_000.0, (note("tiny_sample", mode="eager", iterations=2),)),
    GraphResult(2, "", "/home/u/train.py:40 evaluate", "capture", "never_replayed", 0, 1, 12, None, None, None, 0,
                _cost(2, 2_000_000.0, 1_500_000.0), None, None, ()),
    GraphResult(3, "graph 3 (captured at /home/u/train.py:60)", "/home/u/train.py:60 broken", "capture", "capture_failed", 0, 1,
                3, None, None, None, 0, _cost(3, 700_000.0, None), None, None, ()),
)
TOTALS = GraphTotals(3, 1, 80, 2_700_000.0, 7_700_000.0, 8_000_000.0, 300_000.0)


@pytest.fixture(scope="module")
def page() -> str:
    with load(TRACE) as trace:
        text, _ = html_page(trace, WithGraphs(analyze(trace), GRAPHS, TOTALS))  # type: ignore[arg-type]
    return text


def _section(page: str, graph_id: int) -> str:
    m = re.search(rf"<section class='graph' id='gm-graph-{graph_id}'>(.*?)</section>", page, re.S)
    assert m, f"no section for graph {graph_id}"
    return re.sub(r"<[^>]+>", " ", m.group(1))


def test_one_section_per_graph(page: str) -> None:
    assert page.count("<section class='graph'") == 3
    assert "<h2>Per graph</h2>" in page


def test_replayed_graph_section(page: str) -> None:
    s = " ".join(_section(page, 1).split())
    assert ("graph 1 (captured at /home/u/train.py:23) saves 100.0 us per replay (150.0 us eager vs 50.0 us as a graph), "
            "costs 5.00 ms once, and pays back after 50 replays (95% interval 45 – 60); this run replayed it 80 times, "
            "so it paid back.") in s
    assert "CPU-bound: the GPU waited for the next launch" in s and "GPU-bound: launches ran ahead of the GPU" in s
    assert "(90% of iterations GPU-bound)" in s
    assert "eager median from 2 iterations: tiny sample" in s  # flagged on the period and listed as a note
    assert "5.00 ms = build 2.00 ms + instantiate 3.00 ms" in s
    assert "break-even 50 replays (95% interval 45 – 60)" in s
    assert "its sequence of 12 kernels run eagerly" in s and "3 eager iterations right before the capture" in s
    assert "replayed, 80 replays in the run" in s
    assert "graph 1 (graph 1" not in s


def test_never_replayed_and_failed_graphs(page: str) -> None:
    s2 = " ".join(_section(page, 2).split())
    assert "graph 2 was built but never replayed: its one-time cost of 2.00 ms bought nothing." in s2
    text = " ".join(re.sub(r"<[^>]+>", " ", page.split("<script")[0]).split())
    assert "Never replayed: graph 2." in text
    s3 = " ".join(_section(page, 3).split())
    assert "The capture of graph 3 (captured at /home/u/train.py:60) failed" in s3
    assert "one-time cost" not in s3 and "break-even" not in s3


def test_totals_line(page: str) -> None:
    text = " ".join(re.sub(r"<[^>]+>", " ", page.split("<script")[0]).split())
    assert ("3 graphs built, 1 replayed (80 replays); one-time cost 7.70 ms, saved 8.00 ms in replays; net 300.0 us.") in text


def test_without_per_graph_results_the_page_is_todays() -> None:
    with load(TRACE) as trace:
        a = analyze(trace)
        text, _ = html_page(trace, WithGraphs(a, (), None))  # type: ignore[arg-type]
    assert "<section class='graph'" not in text and "<h2>Per graph</h2>" not in text
    assert "id='gm-iter-0'" in text and "id='gm-verdict'" in text
