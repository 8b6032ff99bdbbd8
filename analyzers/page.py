"""What the interactive page shows beyond the analysis's metrics, read from the run once: the timelines' spans
(analyzers.timeline), the kernel table, the graphs' topologies and the CPU profile's session.

`page_data(run, analysis, ...)` is called by the command that writes the page, beside `analyze(run)`;
reports.html renders the two and does not read the trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphmode.analyzers.critical_path import node_durations
from graphmode.analyzers.kernel_totals import KernelTotals, kernel_totals
from graphmode.analyzers.notes import note
from graphmode.analyzers.results import TraceAnalysis
from graphmode.analyzers.run import Run
from graphmode.analyzers.timeline import (
    MAX_DRAWN_SPANS,
    Lane,
    Selection,
    TimelineView,
    activity_extent,
    drop_empty_lanes,
    iteration_markers,
    iteration_views,
    lanes_of,
    load_view,
    select_spans,
    traced_pass,
)
from graphmode.analyzers.torch_windows import untraced_capture_graphs
from graphmode.analyzers.untraced_windows import UntracedWindow, untraced_windows
from graphmode.tracer.profile_store import read_profile
from graphmode.tracer.store import PassInfo, Trace

MAX_TOPOLOGIES = 8  # the page draws this many graphs' topologies
MAX_TOPOLOGY_NODES = 3000  # a graph with more nodes is named, not drawn


@dataclass(frozen=True)
class NodeTable:
    """One graph's nodes (by node_id), edges and measured median node durations, as the topology draws them."""

    node_id: np.ndarray
    node_index: np.ndarray
    node_type: np.ndarray
    name: np.ndarray
    source: np.ndarray
    from_node_id: np.ndarray
    to_node_id: np.ndarray
    median_ns: dict[int, float]  # node_id -> median GPU duration over replays (node-detail passes)


@dataclass(frozen=True)
class GraphTopology:
    graph_id: int
    label: str
    num_nodes: int | None
    ran: bool  # the pass has GPU work of the graph
    nodes: NodeTable | None  # None: no topology recorded, too many nodes, or past the page's MAX_TOPOLOGIES
    # captured with CUPTI detached (tracer.untraced_windows): its nodes known from its first replay, its edges not
    # recorded (nodes is then None: not drawn as if it had none)
    edges_unknown: bool = False


@dataclass(frozen=True)
class PageData:
    trace_name: str  # the trace file's name, the page's title
    meta: dict[str, Any]  # workload, gpu_name, started_at, status
    traced: PassInfo | None  # the pass the timelines draw (analyzers.timeline.traced_pass)
    lanes: tuple[Lane, ...] = ()
    iteration_views: tuple[TimelineView, ...] = ()  # one iteration of each mode, lanes empty in all of them dropped
    selection: Selection | None = None  # what part of the pass the whole-run view draws
    full_view: TimelineView | None = None
    activity: tuple[int, int] | None = None  # first to last CUDA activity of the pass
    kernel_totals: KernelTotals | None = None  # graph- and node-detail passes
    topologies: tuple[GraphTopology, ...] = ()
    profile_session: Any = None  # the run's pyinstrument Session, for pyinstrument's own page
    # the traced pass's untraced windows (analyzers.untraced_windows): stretches with nothing recorded, drawn as such
    untraced_windows: tuple[UntracedWindow, ...] = ()


def graph_nodes(trace: Trace, pass_id: int, graph_id: int) -> NodeTable | None:
    """A graph's nodes, edges and measured node durations; None without nodes or beyond MAX_TOPOLOGY_NODES."""
    nodes = trace.sql("SELECT node_id, node_index, node_type, name, source FROM graph_nodes WHERE pass_id = ? AND graph_id = ? "
                      "ORDER BY node_id", [pass_id, graph_id])
    ids = nodes["node_id"].astype(np.int64)
    if ids.size == 0 or ids.size > MAX_TOPOLOGY_NODES:
        return None
    edges = trace.sql("SELECT from_node_id, to_node_id FROM graph_edges WHERE pass_id = ? AND graph_id = ?",
                      [pass_id, graph_id])
    medians = {n: d for (_, n), d in node_durations(trace, pass_id, graph_id).items()}
    return NodeTable(ids, nodes["node_index"], nodes["node_type"], nodes["name"], nodes["source"],
                     edges["from_node_id"].astype(np.int64), edges["to_node_id"].astype(np.int64), medians)


def topologies(trace: Trace, pass_id: int) -> tuple[GraphTopology, ...]:
    """Every graph of the pass, the first MAX_TOPOLOGIES drawable ones with their nodes."""
    rows = trace.rows("SELECT graph_id, label, num_nodes, EXISTS (SELECT 1 FROM gpu_spans s WHERE s.pass_id = g.pass_id "
                      "AND s.graph_id = g.graph_id) FROM graphs g WHERE pass_id = ? ORDER BY graph_id", [pass_id])
    out: list[GraphTopology] = []
    drawable = 0
    untraced = untraced_capture_graphs(trace, pass_id)
    for gid, label, nodes, ran in rows:
        unknown = int(gid) in untraced
        table = graph_nodes(trace, pass_id, int(gid)) if drawable < MAX_TOPOLOGIES and not unknown else None
        drawable += table is not None
        out.append(GraphTopology(int(gid), str(label), None if nodes is None else int(nodes), bool(ran), table, unknown))
    return tuple(out)


def profile_session(trace: Trace) -> Any:
    """The run's pyinstrument Session (tracer.profile_store), for pyinstrument's own page; None if unreadable."""
    try:
        stored = read_profile(trace)
    except ValueError:
        return None
    return stored.session() if stored is not None else None


def page_data(run: Run, analysis: TraceAnalysis, *, iterations: tuple[int, int] | None = None,
              window_ms: tuple[float, float] | None = None, max_spans: int = MAX_DRAWN_SPANS) -> PageData:
    """What the page draws from the run besides `analysis` (module doc). `iterations` / `window_ms`: the part of the
    run the whole-run timeline draws (raises ValueError for iterations the run does not have)."""
    trace = run.trace
    meta: dict[str, Any] = {k: trace.meta[k] for k in ("workload", "gpu_name", "started_at", "status") if k in trace.meta}
    session = profile_session(trace) if analysis.cpu_profile is not None else None
    tp = traced_pass(trace)
    if tp is None:
        return PageData(trace.path.name, meta, None, profile_session=session)
    lanes = lanes_of(trace, tp.pass_id)
    its = iteration_markers(run, tp.pass_id)
    views = drop_empty_lanes(iteration_views(trace, tp.pass_id, lanes, its))
    selection = select_spans(trace, tp, its, iterations=iterations, window_ms=window_ms, max_spans=max_spans)
    full = load_view(trace, tp.pass_id, lanes, selection.intervals, tp.start_ns,
                     note("pass_view", pass_id=tp.pass_id, detail=tp.detail, drawn=selection.drawn, total=selection.total))
    kernels = kernel_totals(trace, tp.pass_id, tp.detail) if tp.detail in ("graph", "node") else None
    return PageData(trace.path.name, meta, tp, tuple(lanes), tuple(views), selection, full, activity_extent(trace, tp),
                    kernels, topologies(trace, tp.pass_id), session, tuple(untraced_windows(trace, tp.pass_id)))
