"""tracer.lifecycle.derive_graphs names a graph by the line that began its capture (SYNTHETIC callbacks and
API records, built here: what a stream capture inside a step function looks like to the tracer)."""

from __future__ import annotations

import numpy as np

from graphmode.tracer.cupti_session import RawActivity, ResourceEvent
from graphmode.tracer.lifecycle import derive_graphs


def _api(rows: list[tuple[str, int, int, str]]) -> dict[str, np.ndarray]:
    from graphmode.tracer.decode import api_category

    names = [r[0] for r in rows]
    return {"name": np.array(names, dtype=object), "api": np.array(["runtime"] * len(rows), dtype=object),
            "category": np.array([api_category(n) for n in names], dtype=object),
            "start_ns": np.array([r[1] for r in rows], dtype=np.int64), "end_ns": np.array([r[2] for r in rows], dtype=np.int64),
            "thread_id": np.full(len(rows), 7, dtype=np.int64), "source": np.array([r[3] for r in rows], dtype=object),
            "correlation_id": np.arange(1, len(rows) + 1, dtype=np.int64), "return_code": np.zeros(len(rows), dtype=np.int64)}


def test_a_captured_graph_is_named_by_the_line_that_began_the_capture() -> None:
    raw = RawActivity()
    raw.resource_events = [
        ResourceEvent("GRAPH_CREATED", ts=150, thread_id=7, graph_id=1),  # inside cudaStreamBeginCapture
        ResourceEvent("GRAPHNODE_CREATED", ts=300, thread_id=7, graph_id=1, node_id=11, node_type=0,
                      stack="train.py:23 step"),  # the kernel's line, inside the step function
    ]
    api = _api([("cudaStreamBeginCapture_v10000", 100, 200, "train.py:42 <module>"),
                ("cudaLaunchKernel_v7000", 290, 310, ""),
                ("cudaStreamEndCapture_v10000", 400, 500, "train.py:42 <module>")])
    graphs = derive_graphs(raw, api).graphs
    assert graphs["origin"] == ["capture"] and graphs["label"] == ["graph 1 (captured at train.py:42)"]


def test_a_graph_built_node_by_node_is_named_by_its_first_node() -> None:
    raw = RawActivity()
    raw.resource_events = [
        ResourceEvent("GRAPH_CREATED", ts=150, thread_id=7, graph_id=2),
        ResourceEvent("GRAPHNODE_CREATED", ts=300, thread_id=7, graph_id=2, node_id=21, node_type=0, stack="build.py:9 make"),
    ]
    api = _api([("cuGraphCreate", 100, 200, "build.py:8 make"), ("cuGraphAddKernelNode_v2", 290, 310, "")])
    graphs = derive_graphs(raw, api).graphs
    assert graphs["origin"] == ["explicit"] and graphs["label"] == ["graph 2 (built at build.py:9)"]


def test_a_graph_captured_while_cupti_was_detached_is_adopted_from_its_first_replay() -> None:
    """SYNTHETIC. The one run's untraced capture (tracer.untraced_windows.CaptureController): CUPTI was detached from
    the program's capture_begin to after its capture_end, so no callback named the graph; the first executable id
    launched after that capture ended on its thread is its graph, with its first replay's nodes in order and no edges;
    its capture is capture_begin to capture_end, its instantiation capture_end itself. (graphmode's own empty graph,
    run right after attaching, fires no callback the session records: tests/test_cupti_own_work.py.)"""
    from graphmode.tracer.lifecycle import ReplayNodes

    raw = RawActivity()
    capture = {"thread_id": 7, "begin_ns": 120, "body_end_ns": 400, "end_ns": 500, "source": "train.py:42 <module>",
               "reason": "capture_end"}
    replays = {2: ReplayNodes(first_ns=900, launch_ns=850, thread_id=7,
                              nodes=((11, "kernel", "gemm"), (12, "kernel", "softmax"), (13, "memcpy", "memcpy DtoD"))),
               1: ReplayNodes(first_ns=300, launch_ns=0, thread_id=0, nodes=((1, "kernel", "before"),))}  # before its end
    out = derive_graphs(raw, None, [capture], replays)
    assert out.graphs["graph_id"] == [2] and out.graphs["origin"] == ["capture"]
    assert out.graphs["label"] == ["graph 2 (captured at train.py:42)"] and out.graphs["num_edges"] == [0]
    assert out.nodes["name"] == ["gemm", "softmax", "memcpy DtoD"] and out.nodes["node_index"] == [0, 1, 2]
    events = {e: (s, t) for e, s, t in zip(out.events["event"], out.events["start_ns"], out.events["end_ns"])}
    assert events == {"capture": (120, 400), "instantiate": (400, 500)}
    assert out.untraced == {120: 2} and out.exec_to_graph == {2: 2}
    # replayed only from another thread, or a capture that failed: nothing adopted, nothing invented
    other = {2: ReplayNodes(first_ns=900, launch_ns=850, thread_id=8, nodes=((11, "kernel", "gemm"),))}
    for caps, reps in (([capture], other), ([dict(capture, reason="capture_end_failed")], replays)):
        out = derive_graphs(raw, None, caps, reps)
        assert out.graphs["graph_id"] == [] and out.events["event"] == [] and out.untraced == {120: 0}


def test_a_graphs_first_replay_gives_its_nodes_in_order_with_the_drivers_copy_kernels_as_copies() -> None:
    """SYNTHETIC: tracer.decode.first_replays on unfolded node records of two launches of graph 2 (correlations 40 and
    41) and an eager kernel: the first launch's records by start; the kernel the driver ran for a copy node
    ('memcpy32_post', seen on the H200) is that copy node."""
    import numpy as np

    from graphmode.tracer.decode import first_replays

    spans = {"kind": np.array(["kernel", "kernel", "kernel", "kernel", "kernel"], dtype=object),
             "name": np.array(["softmax", "gemm", "memcpy32_post", "gemm", "eager_add"], dtype=object),
             "graph_id": np.array([2, 2, 2, 2, 0]), "graph_node_id": np.array([12, 11, 13, 11, 0]),
             "correlation_id": np.array([40, 40, 40, 41, 30]), "start_ns": np.array([520, 500, 540, 900, 100])}
    calls = {"correlation_id": np.array([40, 41, 30]), "category": np.array(["graph_launch", "graph_launch", "kernel_launch"]),
             "start_ns": np.array([450, 880, 90]), "thread_id": np.array([7, 7, 7])}
    (only,) = first_replays(spans, calls).items()
    gid, r = only
    assert gid == 2 and (r.first_ns, r.launch_ns, r.thread_id) == (500, 450, 7)
    assert r.nodes == ((11, "kernel", "gemm"), (12, "kernel", "softmax"), (13, "memcpy", "memcpy32_post"))


def test_without_pytorchs_ids_captures_in_turn_take_executables_in_turn_whatever_order_they_replay_in() -> None:
    """SYNTHETIC: two untraced captures and no executable id from PyTorch (before 2.8): the second graph (executable 9)
    is replayed before the first (executable 2); CUPTI numbers executables in the order they are made, so the first
    capture takes 2 and the second 9."""
    from graphmode.tracer.lifecycle import ReplayNodes

    caps = [{"thread_id": 7, "begin_ns": 100, "body_end_ns": 150, "end_ns": 200, "source": "a.py:3 f", "reason": "capture_end"},
            {"thread_id": 7, "begin_ns": 300, "body_end_ns": 350, "end_ns": 400, "source": "a.py:5 f", "reason": "capture_end"}]
    replays = {9: ReplayNodes(first_ns=500, launch_ns=490, thread_id=7, nodes=((91, "kernel", "large"),)),
               2: ReplayNodes(first_ns=600, launch_ns=590, thread_id=7, nodes=((21, "kernel", "small"),))}
    out = derive_graphs(RawActivity(), None, caps, replays)
    assert out.untraced == {100: 2, 300: 9}
    assert dict(zip(out.nodes["graph_id"], out.nodes["name"])) == {2: "small", 9: "large"}
