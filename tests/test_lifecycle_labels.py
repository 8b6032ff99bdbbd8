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
