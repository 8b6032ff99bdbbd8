"""Reads a CUDA graph's nodes and edges (cuGraphGetNodes / cuGraphGetEdges) with CUPTI's ids.

The node ids are those CUPTI puts on activity records (cuptiGetGraphNodeId), so GPU spans of a
replay can be joined to the topology.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphmode.tracer.cuda_util import check


@dataclass
class GraphTopology:
    graph_id: int
    nodes: list[tuple[int, int, str, str]] = field(default_factory=list)  # (node_id, index, type, name)
    edges: list[tuple[int, int]] = field(default_factory=list)  # (from_node_id, to_node_id)
    handles: dict[int, int] = field(default_factory=dict)  # node handle -> node id


def node_type_name(t: Any) -> str:
    name = getattr(t, "name", str(t))
    return name.replace("CU_GRAPH_NODE_TYPE_", "").lower()


def _kernel_name(cu: Any, node: Any) -> str:
    try:
        params = check(cu.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
        name = check(cu.cuFuncGetName(params.func), "cuFuncGetName")
        return name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    except Exception:
        return ""


def read_topology(graph: Any) -> GraphTopology:
    from cuda.bindings import driver as cu
    from cupti import cupti

    topo = GraphTopology(graph_id=int(cupti.get_graph_id(int(graph))))
    count = check(cu.cuGraphGetNodes(graph, 0), "cuGraphGetNodes")[-1]
    res = check(cu.cuGraphGetNodes(graph, int(count)), "cuGraphGetNodes")
    nodes = list(res[0]) if isinstance(res, tuple) else []
    for index, node in enumerate(nodes):
        node_id = int(cupti.get_graph_node_id(int(node)))
        ntype = node_type_name(check(cu.cuGraphNodeGetType(node), "cuGraphNodeGetType"))
        name = _kernel_name(cu, node) if ntype == "kernel" else ntype
        topo.nodes.append((node_id, index, ntype, name))
        topo.handles[int(node)] = node_id
    n_edges = int(cu.cuGraphGetEdges(graph, 0)[-1])
    if n_edges:
        res = check(cu.cuGraphGetEdges(graph, n_edges), "cuGraphGetEdges")
        frm, to = res[0], res[1]
        for a, b in zip(frm[:n_edges], to[:n_edges]):
            topo.edges.append((topo.handles[int(a)], topo.handles[int(b)]))
    return topo
