"""The graph stream capture would make of an eager iteration (analyzers.eager_graph), on hand-built
SYNTHETIC operation lists with the edges worked out by hand, and on the real dag recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers.eager_graph import EagerOps, EventCalls, build_eager_graph, iteration_graph, window_activity
from graphmode.analyzers.calibration import predicted_graph
from graphmode.tracer.calibrate import program, shapes
from graphmode.tracer.store import load
from tests.conftest import DATA


def ops(*rows: tuple[str, int, int]) -> EagerOps:
    """(kind, stream, launch time) per op, thread 1; names K0, K1, ... by position."""
    kind = np.array([r[0] for r in rows], dtype=object)
    return EagerOps(kind, np.array([f"K{i}" for i in range(len(rows))], dtype=object), np.array([r[1] for r in rows], dtype=np.int64),
                    np.array([r[2] for r in rows], dtype=np.int64), np.ones(len(rows), dtype=np.int64))


def events(records: list[tuple[int, int, int]] = (), waits: list[tuple[int, int, int]] = ()) -> EventCalls:  # type: ignore[assignment]
    """records: (time, stream or -1, event or -1); waits: (time, waiting stream, event)."""
    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return EventCalls(i64([r[0] for r in records]), np.ones(len(records), dtype=np.int64), i64([r[1] for r in records]),
                      i64([r[2] for r in records]), i64([w[0] for w in waits]), i64([w[1] for w in waits]), i64([w[2] for w in waits]))


def edges(g) -> set[tuple[int, int]]:  # type: ignore[no-untyped-def]
    return set(zip(g.edge_from.tolist(), g.edge_to.tolist()))


def test_one_stream_is_a_chain() -> None:
    g = build_eager_graph(ops(("kernel", 7, 10), ("memset", 7, 20), ("kernel", 7, 30)), EventCalls.none())
    assert edges(g) == {(0, 1), (1, 2)}
    assert (g.nodes, g.streams, g.cross_stream_edges, g.event_pairing, g.uncaptured) == (3, 1, 0, "none", 0)
    assert g.counts() == {"kernel": 2, "memcpy": 0, "memset": 1, "host": 0}


# A fork/join as the dag workload issues it: head on stream 1, two branches on 2 and 3, join on 1.
#   t=10 memset(s1)  t=11 record(e1, s1)  t=12 wait(s2, e1)  t=13 K(s2)  t=14 record(e2, s2)
#   t=15 wait(s3, e1)  t=16 K(s3)  t=17 record(e3, s3)  t=18 wait(s1, e2)  t=19 wait(s1, e3)  t=20 K(s1)
FORK_OPS = (("memset", 1, 10), ("kernel", 2, 13), ("kernel", 3, 16), ("kernel", 1, 20))
# head -> both branches (their waits), both branches -> join (the join's waits), head -> join (stream 1's own order)
FORK_EDGES = {(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)}


def test_fork_join_with_exact_events() -> None:
    g = build_eager_graph(ops(*FORK_OPS), events([(11, 1, 1), (14, 2, 2), (17, 3, 3)], [(12, 2, 1), (15, 3, 1), (18, 1, 2), (19, 1, 3)]))
    assert edges(g) == FORK_EDGES
    assert (g.streams, g.cross_stream_edges, g.event_pairing, g.unjoined_streams, g.external_waits) == (3, 4, "exact", (), 0)


def test_fork_join_with_inferred_record_streams_and_events() -> None:
    # What the trace gives today: no stream or event on a record. Each record's stream is that of the
    # thread's last launch before it; each waited event takes the earliest unmatched record before its
    # first wait: e1 -> record at 11, e2 -> 14, e3 -> 17. Same graph.
    g = build_eager_graph(ops(*FORK_OPS), events([(11, -1, -1), (14, -1, -1), (17, -1, -1)],
                                                 [(12, 2, 1), (15, 3, 1), (18, 1, 2), (19, 1, 3)]))
    assert edges(g) == FORK_EDGES
    assert g.event_pairing == "inferred"


def test_a_stream_that_never_joined_the_capture_is_left_out() -> None:
    # stream 9 launches without waiting on anything recorded in the capture: its kernel runs eagerly
    g = build_eager_graph(ops(("kernel", 1, 10), ("kernel", 9, 20), ("kernel", 1, 30)), EventCalls.none())
    assert g.captured.tolist() == [True, False, True]
    assert g.uncaptured == 1 and edges(g) == {(0, 2)}


def test_a_branch_not_joined_back_is_reported() -> None:
    # fork to stream 2, which is never waited on by stream 1: cudaErrorStreamCaptureUnjoined
    g = build_eager_graph(ops(("kernel", 1, 10), ("kernel", 2, 13), ("kernel", 1, 20)), events([(11, 1, 1)], [(12, 2, 1)]))
    assert edges(g) == {(0, 1), (0, 2)}
    assert g.unjoined_streams == (2,)


def test_a_join_at_the_very_end_counts_as_joined() -> None:
    # the origin waits on the branch after its last op: no edge, but the branch is joined
    g = build_eager_graph(ops(("kernel", 1, 10), ("kernel", 2, 13)), events([(11, 1, 1), (14, 2, 2)], [(12, 2, 1), (15, 1, 2)]))
    assert edges(g) == {(0, 1)} and g.unjoined_streams == ()


def test_a_wait_on_an_event_recorded_before_the_iteration_crosses_the_capture_boundary() -> None:
    g = build_eager_graph(ops(("kernel", 1, 10), ("kernel", 1, 20)), events([], [(15, 1, 4)]))
    assert g.external_waits == 1 and edges(g) == {(0, 1)}


def test_waits_propagate_through_a_stream_with_no_work_of_its_own() -> None:
    # s2 runs K1; s3 waits on it and, without launching anything, records e3; s1 waits on e3:
    # the capture dependencies pass through s3, so K1 -> K2 (and K0 -> K1 from the fork)
    g = build_eager_graph(ops(("kernel", 1, 10), ("kernel", 2, 13), ("kernel", 1, 30)),
                          events([(11, 1, 1), (14, 2, 2), (17, 3, 3)], [(12, 2, 1), (16, 3, 2), (18, 1, 3)]))
    assert edges(g) == {(0, 1), (0, 2), (1, 2)}
    assert g.unjoined_streams == ()


def test_a_host_function_takes_the_stream_of_the_launch_before_it() -> None:
    g = build_eager_graph(ops(("kernel", 4, 10), ("host", -1, 20), ("kernel", 4, 30)), EventCalls.none())
    assert g.ops.stream.tolist() == [4, 4, 4]
    assert edges(g) == {(0, 1), (1, 2)} and g.counts()["host"] == 1


def test_ops_must_be_in_launch_order() -> None:
    with pytest.raises(ValueError, match="launch order"):
        build_eager_graph(ops(("kernel", 1, 20), ("kernel", 1, 10)), EventCalls.none())


@pytest.mark.parametrize("shape", shapes(), ids=lambda s: s.name)
def test_calibration_shapes_have_the_graphs_worked_out_by_hand(shape) -> None:  # type: ignore[no-untyped-def]
    # forkjoin W x D: memset + W*D + join nodes; W (fork) + W*(D-1) + W (join) + 1 (head -> join) edges.
    # layers W x L: memset + W*L + join nodes; W + W*W*(L-1) + W + 1 edges. Chains: n - 1 edges.
    f = predicted_graph(program(shape))
    w, d = shape.width, shape.depth
    if shape.kind == "forkjoin":
        assert (f["nodes"], f["edges"], f["path_kernel"], f["path_memset"]) == (w * d + 2, w * d + w + 1, d + 1, 1)
        # beside the path: the other W-1 branches; the memset -> kernel hand-over is the path's one switch of type
        assert (f["off_nodes"], f["path_switches"]) == ((w - 1) * d, 1)
        wide = shape.op == "kernel_wide"
        assert (f["path_kernel_wide"], f["off_kernel_wide"]) == ((d, (w - 1) * d) if wide else (0, 0))
    elif shape.kind == "layers":
        assert (f["nodes"], f["edges"], f["path_kernel"]) == (w * d + 2, 2 * w + w * w * (d - 1) + 1, d + 1)
    elif shape.kind == "event_chain":
        assert (f["nodes"], f["event"], f["edges"], f["record_calls"], f["wait_calls"]) == (3 * d, 2 * d, 3 * d - 1, d, d)
    else:
        assert (f["nodes"], f["edges"], f["off_nodes"]) == (len(shape.ops), len(shape.ops) - 1, 0)
        assert f["path_switches"] == sum(a != b for a, b in zip(shape.ops, shape.ops[1:]))  # mixed chains switch at every node
        assert f["path_kernel_wide"] == shape.ops.count("kernel_wide")


# ---- the real dag recording (H200): 4 branches x 3 kernels between a memset and a join kernel + memcpy


def _dag_iteration(path: Path) -> tuple:  # type: ignore[type-arg]
    t = load(path)
    traced = t.pass_by_detail("node", "graph")
    assert traced is not None
    it = t.sql("SELECT start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration' AND mode = 'eager' ORDER BY start_ns",
               [traced.pass_id])
    act = window_activity(t, traced.pass_id, it["start_ns"], it["end_ns"])
    return act, iteration_graph(act, 5), it["start_ns"].size


def test_dag_recording_becomes_the_fork_join_its_explicit_graph_has_plus_the_head_to_join_edge() -> None:
    act, g, n_it = _dag_iteration(DATA / "dag-node.gmtrace")
    kinds, streams, names = g.ops.kind.astype(str), g.ops.stream, g.ops.name.astype(str)
    assert (g.nodes, g.streams, g.uncaptured, g.unjoined_streams, g.external_waits) == (15, 5, 0, (), 0)
    assert g.counts() == {"kernel": 13, "memcpy": 1, "memset": 1, "host": 0}
    memset = int(np.flatnonzero(kinds == "memset")[0])
    join = int(np.flatnonzero(names == "join_sum")[0])
    memcpy = int(np.flatnonzero(kinds == "memcpy")[0])
    e = edges(g)
    branch_streams = sorted(set(streams[names == "branch_step"].tolist()))
    assert len(branch_streams) == 4
    for s in branch_streams:  # each branch: memset -> k1 -> k2 -> k3 -> join
        ks = np.flatnonzero((streams == s) & (names == "branch_step")).tolist()
        assert len(ks) == 3
        assert {(memset, ks[0]), (ks[0], ks[1]), (ks[1], ks[2]), (ks[2], join)} <= e
    # the explicit graph has 17 edges; a capture of the eager twin also keeps memset -> join (stream order on s0)
    assert (memset, join) in e and (join, memcpy) in e
    assert g.edges == 18 and g.cross_stream_edges == 8
    assert g.event_pairing == "inferred"
    # every eager iteration launched the same 15 operations
    assert np.bincount(act.op_iteration[act.op_iteration >= 0], minlength=n_it).tolist() == [15] * n_it
