"""What the two-rank programs (examples/ranks_*.py) must show, checked on a live GPU run
(tests/test_gpu_ranks.py) and on the committed recordings (tests/test_ranks_fixtures.py).

END_TOLERANCE_NS: the same all-reduce must end within this on both ranks of one host. Both ranks
stamp with the host's CLOCK_REALTIME (CUPTI's Linux default), and a ring all-reduce cannot end on
one rank before the other's last chunk has arrived, so what is left is CUPTI's interpolation of
each GPU's timestamps onto the host clock plus NCCL's last step: microseconds. 50 us is an order of
magnitude above that and a tenth of the 2 ms the straggler makes the other rank wait.
"""

from __future__ import annotations

from graphmode.analyzers.rank_results import CollectiveSummary, RankSetAnalysis

END_TOLERANCE_NS = 50_000
CLOCK_TOLERANCE_NS = 1_000_000  # |CUPTI - CLOCK_REALTIME| read at start: CUPTI's clock is CLOCK_REALTIME


def _graph_allreduce(a: RankSetAnalysis) -> CollectiveSummary:
    found = [c for c in a.collectives if c.where == "graph" and c.op == "AllReduce"]
    assert found, f"no all-reduce inside a graph: {[(c.kernel, c.where) for c in a.collectives]}"
    return found[0]


def _eager_allreduce_calls(a: RankSetAnalysis) -> float:
    """Calls per rank of the most called eager all-reduce kernel (the warm-up's; checks may add others)."""
    return max((c.calls.min for c in a.collectives if c.where == "eager" and c.op == "AllReduce" and c.calls), default=0.0)


def check_two_ranks_one_host(a: RankSetAnalysis) -> None:
    assert [s.identity.rank for s in a.ranks] == [0, 1] and a.world_size == 2 and a.missing_ranks == ()
    ids = [s.identity for s in a.ranks]
    assert all(i.status == "complete" for i in ids), [i.status for i in ids]
    assert all(i.launcher == "torchrun" and i.local_rank == i.rank for i in ids)
    assert len({i.host for i in ids}) == 1 and a.alignment.method == "one host"
    assert [i.gpu_index for i in ids] == [0, 1] and len({i.gpu_uuid for i in ids}) == 2 and all(i.gpu_uuid for i in ids)
    # `graphmode run` makes one run per rank of a job (--runs auto): collectives and timelines are that run's
    assert [s.run for s in a.ranks] == ["single", "single"], [(s.pass_id, s.run) for s in a.ranks]
    for i in ids:
        assert i.cupti_minus_realtime_ns is not None and abs(i.cupti_minus_realtime_ns) < CLOCK_TOLERANCE_NS, i
    assert not [h for h in a.hang_risks if h.kind in ("capture_mismatch", "collective_mismatch")], a.hang_risks


def check_allreduce_job(a: RankSetAnalysis, replays: int, straggler_ms: float = 2.0) -> None:
    check_two_ranks_one_host(a)
    graphs = [g for g in a.graphs if g.key == "graph #1"]
    assert len(graphs) == 2 and all(g.replays == replays and g.collectives >= 1 for g in graphs), graphs
    ar = _graph_allreduce(a)
    assert ar.ranks == 2 and ar.calls is not None and ar.calls.min == ar.calls.max and ar.calls.min % replays == 0
    assert ar.end_skew is not None and ar.end_skew.n >= replays and ar.end_skew.median < END_TOLERANCE_NS, ar.end_skew
    assert _eager_allreduce_calls(a) >= 3  # the warm-up steps
    assert a.alignment.residual is not None and a.alignment.anchors >= replays
    waits = {w.rank: w for w in a.waits}
    assert a.straggler is not None and a.straggler.rank == 1 and a.straggler.last_arrivals >= 0.75 * replays
    # rank 0's all-reduce waits for rank 1's sleep in every replay
    assert ar.wait is not None and ar.wait.max >= 0.5 * straggler_ms * 1e6
    assert waits[0].wait_total_ns >= 0.5 * replays * straggler_ms * 1e6 > waits[1].wait_total_ns


def check_ddp_job(a: RankSetAnalysis, replays: int, warmup: int = 12) -> None:
    check_two_ranks_one_host(a)
    graphs = [g for g in a.graphs if g.replays > 0]
    assert len(graphs) == 2 and {g.key for g in graphs} == {"graph #1"}, graphs
    assert all(g.replays == replays and g.collectives >= 1 for g in graphs)  # DDP's bucket all-reduce is in the graph
    ar = _graph_allreduce(a)
    assert ar.calls is not None and ar.calls.min == ar.calls.max and ar.calls.min % replays == 0
    assert ar.end_skew is not None and ar.end_skew.median < END_TOLERANCE_NS, ar.end_skew
    assert _eager_allreduce_calls(a) >= warmup  # DDP's all-reduces in the eager warm-up
