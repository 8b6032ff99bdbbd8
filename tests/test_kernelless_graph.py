"""SYNTHETIC: the decoder and pass writer on a program whose graphs hold no kernel node, without a GPU.

The program (as `tests/test_gpu_store.py` runs it for real): builds a graph of two memset nodes,
instantiates it, replays it, then tries `cuGraphExecUpdate` with a second memset graph, which fails
with CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE (910), so it instantiates the second graph and replays
that. At graph detail CUPTI reports each replay as one GRAPH_TRACE record, so no GPU record carries a
node id: `passes.map_graph_ids` used to fail with KeyError 'graph_node_id' and the trace was lost.

The raw CUPTI buffer is built here from cupti-python's own record dtypes (the layout decode() reads),
with hand-chosen ids and times; the expected rows follow from them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cupti", reason="cupti-python gives the record layouts")

from graphmode.tracer.cupti_session import RawActivity, ResourceEvent, cupti_module, record_dtypes  # noqa: E402
from graphmode.tracer.script import write_script_pass  # noqa: E402
from graphmode.tracer.store import PassInfo, TraceWriter, load  # noqa: E402
from graphmode.tracer.validate import validate_trace  # noqa: E402

TID = 77
G1, G2 = 5, 6  # graph ids
X1, X2 = 50, 60  # executable graph ids
MEMSET = 2  # CU_GRAPH_NODE_TYPE_MEMSET


def _records(kind: int, rows: list[dict[str, int]]) -> bytes:
    dt = record_dtypes()[kind]
    arr = np.zeros(len(rows), dtype=dt)
    for i, row in enumerate(rows):
        arr[i]["kind"] = kind
        for k, v in row.items():
            arr[i][k] = v
    return arr.tobytes()


def _api(name: str, corr: int, start: int, end: int, rc: int = 0) -> dict[str, int]:
    cbid = int(getattr(cupti_module().driver_api_trace_cbid, name))
    return {"cbid": cbid, "correlation_id": corr, "start": start, "end": end, "process_id": 1, "thread_id": TID,
            "return_value": rc}


def _raw() -> RawActivity:
    K = cupti_module().ActivityKind
    calls = [
        _api("cuGraphCreate", 1, 100, 110), _api("cuGraphAddMemsetNode", 2, 120, 130), _api("cuGraphAddMemsetNode", 3, 140, 150),
        _api("cuGraphInstantiateWithFlags", 4, 200, 300),
        _api("cuGraphLaunch", 5, 400, 410), _api("cuGraphLaunch", 6, 500, 510),
        _api("cuGraphCreate", 7, 600, 610), _api("cuGraphAddMemsetNode", 8, 620, 630), _api("cuGraphAddMemsetNode", 9, 640, 650),
        _api("cuGraphExecUpdate_v2", 10, 700, 720, rc=910),
        _api("cuGraphInstantiateWithFlags", 11, 800, 900),
        _api("cuGraphLaunch", 12, 1000, 1010),
    ]
    # GRAPH_TRACE records carry the executable's id (H200, CUPTI 13.0); one per replay
    traces = [{"correlation_id": c, "start": s, "end": s + 50, "graph_id": x, "device_id": 0, "context_id": 1, "stream_id": 7}
              for c, s, x in ((5, 420, X1), (6, 520, X1), (12, 1020, X2))]
    chunk = _records(int(K.DRIVER), calls) + _records(int(K.GRAPH_TRACE), traces)
    ev = [ResourceEvent("GRAPH_CREATED", 105, TID, graph_id=G1),
          ResourceEvent("GRAPHNODE_CREATED", 125, TID, graph_id=G1, node_id=51, node_type=MEMSET),
          ResourceEvent("GRAPHNODE_CREATED", 145, TID, graph_id=G1, node_id=52, node_type=MEMSET),
          ResourceEvent("GRAPHNODE_DEPENDENCY_CREATED", 146, TID, graph_id=G1, node_id=52, dependency_id=51),
          ResourceEvent("GRAPHEXEC_CREATE_STARTING", 210, TID, graph_id=G1),
          ResourceEvent("GRAPHEXEC_CREATED", 290, TID, graph_id=G1, exec_id=X1),
          ResourceEvent("GRAPH_CREATED", 605, TID, graph_id=G2),
          ResourceEvent("GRAPHNODE_CREATED", 625, TID, graph_id=G2, node_id=61, node_type=MEMSET),
          ResourceEvent("GRAPHNODE_CREATED", 645, TID, graph_id=G2, node_id=62, node_type=MEMSET),
          ResourceEvent("GRAPHEXEC_CREATE_STARTING", 810, TID, graph_id=G2),
          ResourceEvent("GRAPHEXEC_CREATED", 890, TID, graph_id=G2, exec_id=X2)]
    return RawActivity(chunks=[chunk], resource_events=ev)


def test_a_program_of_memset_graphs_with_a_failed_update_leaves_a_complete_trace(tmp_path: Path) -> None:
    path = tmp_path / "memset.gmtrace"
    with TraceWriter(path, {"workload": "synthetic", "dropped_records": 0}) as w:
        write_script_pass(w, _raw(), PassInfo(0, "script", "graph", 0, 2000, 0, "complete"))
    with load(path) as t:
        assert validate_trace(t) == []
        graphs = t.rows("SELECT graph_id, num_nodes, num_edges FROM graphs ORDER BY graph_id")
        assert graphs == [(G1, 2, 1), (G2, 2, 0)]
        assert t.rows("SELECT node_type, count(*) FROM graph_nodes GROUP BY 1") == [("memset", 4)]
        events = t.rows("SELECT event, graph_id, exec_id, return_code FROM graph_events ORDER BY start_ns")
        assert events == [("instantiate", G1, X1, 0), ("launch", G1, 0, 0), ("launch", G1, 0, 0),
                          ("update", G1, X1, 910), ("instantiate", G2, X2, 0), ("launch", G2, 0, 0)]
        # the whole-graph spans are named after the graph, and carry no node id
        spans = t.rows("SELECT graph_id, graph_node_id, correlation_id FROM gpu_spans ORDER BY start_ns")
        assert spans == [(G1, 0, 5), (G1, 0, 6), (G2, 0, 12)]
        assert t.rows("SELECT category, return_code FROM api_calls WHERE name LIKE 'cuGraphExecUpdate%'") == [("update", 910)]
