"""Per-kernel GPU totals eager vs graph (analyzers/kernel_totals.py) and tiny samples (analyzers/sample_size.py)."""

from __future__ import annotations

from pathlib import Path

from synthetic import SyntheticTrace

from graphmode.analyzers.kernel_totals import kernel_totals
from graphmode.analyzers.notes import note
from graphmode.analyzers.sample_size import TINY_SAMPLE, tiny_sample_note
from graphmode.reports.notes import word
from graphmode.tracer.store import load


def test_totals_by_hand(tmp_path: Path) -> None:
    """SYNTHETIC node pass: eager A 100, 300, 500 ns and B 50 ns; graph nodes A 200, 400 ns and C 70 ns."""
    t = SyntheticTrace().add_pass(1, "node")
    for k, (name, dur) in enumerate((("A", 100), ("A", 300), ("A", 500), ("B", 50))):
        corr = t.api(1, "cudaLaunchKernel", "kernel_launch", 1_000 * k, 1_000 * k + 10)
        t.span(1, name, 1_000 * k + 20, 1_000 * k + 20 + dur, corr)
    t.graph(1, 1, "g", [(101, "kernel", "A"), (102, "kernel", "C")], [(101, 102)])
    for r, (da, dc) in enumerate(((200, 70), (400, 70))):
        base = 10_000 * (r + 1)
        corr = t.api(1, "cudaGraphLaunch", "graph_launch", base, base + 5)
        t.span(1, "A", base + 10, base + 10 + da, corr, graph_id=1, node_id=101)
        t.span(1, "C", base + 700, base + 700 + dc, corr, graph_id=1, node_id=102)
    totals = kernel_totals(load(t.write(tmp_path / "synthetic.gmtrace")), 1, "node")
    got = [(k.name, k.eager_count, k.eager_total_ns, k.eager_median_ns, k.graph_count, k.graph_total_ns, k.graph_median_ns)
           for k in totals.kernels]
    assert got == [
        ("A", 3, 900.0, 300.0, 2, 600.0, 300.0),  # 900 + 600 = 1500 ns: most GPU time first
        ("C", 0, 0.0, None, 2, 140.0, 70.0),
        ("B", 1, 50.0, 50.0, 0, 0.0, None),
    ]
    assert totals.graph_timed and totals.distinct == 3


def test_graph_detail_pass_has_no_graph_side() -> None:
    totals = kernel_totals(load(Path(__file__).parent / "data" / "chain-graph.gmtrace"), 1, "graph")
    assert not totals.graph_timed
    assert all(k.graph_total_ns is None and k.graph_count == 0 for k in totals.kernels)
    assert totals.kernels and all(k.eager_count > 0 for k in totals.kernels)


def test_tiny_sample_threshold() -> None:
    assert TINY_SAMPLE == 5
    assert tiny_sample_note("eager", 2) == note("tiny_sample", mode="eager", iterations=2)
    assert word(note("tiny_sample", mode="eager", iterations=2)) == "eager median from 2 iterations: tiny sample"
    assert word(note("tiny_sample", mode="eager", iterations=1)) == "eager median from 1 iteration: tiny sample"
    assert tiny_sample_note("graph", 5) is None and tiny_sample_note("graph", 0) is None
