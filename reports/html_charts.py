"""Plotly figure specs for the report's charts: graph topology, break-even, iteration times.

Numbers come from `analyzers.analyze` (TraceAnalysis); the topology figure also reads the graph's
nodes and edges and the per-node medians that the critical-path analyzer uses. Every user string
(kernel names, graph labels, source lines) is HTML-escaped: plotly renders its text as HTML.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from graphmode.analyzers.critical_path import longest_path, node_durations  # the critical path's own node durations
from graphmode.analyzers.results import BreakEven, CriticalPath, ModeMetrics
from graphmode.reports.timeline_plot import typed_array
from graphmode.tracer.store import Trace

MAX_TOPOLOGY_NODES = 3000
MODE_COLOURS = {"eager": "#1f77b4", "eager_sync_each": "#8c564b", "graph": "#9467bd"}
NODE_COLOURS = {"kernel": "#009e73", "memcpy": "#e69f00", "memset": "#f0e442", "host": "#56b4e9",
                "empty": "#bbbbbb", "event_record": "#cc79a7", "wait_event": "#cc79a7", "graph": "#0072b2"}


def _us(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e3:,.2f} µs"


def topology_figure(trace: Trace, pass_id: int, graph_id: int, path: CriticalPath | None) -> dict[str, Any] | None:
    """Nodes placed by dependency level (left to right), edges, critical path in red; None if too big."""
    nodes = trace.sql("SELECT node_id, node_type, name, source FROM graph_nodes WHERE pass_id = ? AND graph_id = ? "
                      "ORDER BY node_id", [pass_id, graph_id])
    ids = nodes["node_id"].astype(np.int64)
    if ids.size == 0 or ids.size > MAX_TOPOLOGY_NODES:
        return None
    edges = trace.sql("SELECT from_node_id, to_node_id FROM graph_edges WHERE pass_id = ? AND graph_id = ?",
                      [pass_id, graph_id])
    src = np.searchsorted(ids, edges["from_node_id"].astype(np.int64))
    dst = np.searchsorted(ids, edges["to_node_id"].astype(np.int64))
    level, acyclic = longest_path(np.ones(ids.size), src, dst)
    level = level - 1 if acyclic else np.zeros(ids.size)
    # Row within a level: order of appearance, centred on 0.
    row = np.zeros(ids.size)
    for lv in np.unique(level):
        members = np.flatnonzero(level == lv)
        row[members] = np.arange(members.size) - (members.size - 1) / 2
    medians = {n: d for (_, n), d in node_durations(trace, pass_id, graph_id).items()}
    dur = np.array([medians.get(int(i), np.nan) for i in ids])
    on_path = np.isin(ids, np.array(path.path_node_ids if path else (), np.int64))
    path_edge = on_path[src] & on_path[dst] if src.size else np.zeros(0, bool)
    if path is not None and src.size:
        order = {n: k for k, n in enumerate(path.path_node_ids)}
        path_edge &= np.array([order.get(int(ids[d]), -9) - order.get(int(ids[s]), -9) == 1 for s, d in zip(src, dst)])

    def edge_xy(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s, d = src[sel], dst[sel]
        x = np.column_stack([level[s], level[d], np.full(s.size, np.nan)]).ravel()
        y = np.column_stack([row[s], row[d], np.full(s.size, np.nan)]).ravel()
        return x, y

    hover = [
        html.escape(f"{name or ntype} · {ntype} · node {nid}") + "<br>"
        + html.escape(f"median {_us(None if np.isnan(dd) else dd)} per replay" + (" · on the critical path" if cp else ""))
        + (("<br>" + html.escape(str(srcline))) if srcline else "")
        for nid, ntype, name, srcline, dd, cp in zip(ids, nodes["node_type"], nodes["name"], nodes["source"], dur, on_path)
    ]
    finite = dur[np.isfinite(dur)]
    size = 10 + 22 * (np.nan_to_num(dur, nan=0.0) / finite.max()) if finite.size and finite.max() > 0 else np.full(ids.size, 12.0)
    ex, ey = edge_xy(~path_edge) if src.size else (np.zeros(0), np.zeros(0))
    px, py = edge_xy(path_edge) if src.size else (np.zeros(0), np.zeros(0))
    title = f"graph {graph_id}"
    if path is not None:
        title += (f" · {html.escape(path.label)} · {path.nodes} nodes, {path.edges} edges · critical path "
                  f"{_us(path.critical_path_ns)} of {_us(path.serial_ns)} serial")
        if path.measured_span is not None:
            title += f" · measured replay span {_us(path.measured_span.median)}"
    return {
        "data": [
            {"type": "scatter", "mode": "lines", "x": typed_array(ex), "y": typed_array(ey), "hoverinfo": "skip",
             "line": {"color": "#999999", "width": 1}, "name": "dependency"},
            {"type": "scatter", "mode": "lines", "x": typed_array(px), "y": typed_array(py), "hoverinfo": "skip",
             "line": {"color": "#d62728", "width": 3}, "name": "critical path"},
            {"type": "scatter", "mode": "markers", "x": typed_array(level.astype(np.float64)),
             "y": typed_array(row.astype(np.float64)), "text": hover, "hovertemplate": "%{text}<extra></extra>",
             "marker": {"size": typed_array(size.astype(np.float64)),
                        "color": [NODE_COLOURS.get(str(t), "#777777") for t in nodes["node_type"]],
                        "line": {"color": ["#d62728" if c else "#333333" for c in on_path],
                                 "width": [3 if c else 1 for c in on_path]}},
             "name": "node (size: median duration)"},
        ],
        "layout": {"title": {"text": title, "x": 0.01, "font": {"size": 13}}, "height": 200 + 18 * int(np.ptp(row) + 1),
                   "margin": {"l": 40, "r": 20, "t": 40, "b": 40}, "showlegend": True,
                   "xaxis": {"title": {"text": "dependency level"}, "zeroline": False},
                   "yaxis": {"visible": False}, "hovermode": "closest"},
    }


def break_even_figure(b: BreakEven) -> dict[str, Any] | None:
    """Cumulative time of eager iterations vs one-time cost plus graph replays; crossing and its interval."""
    if b.eager_ns is None or b.graph_ns is None or b.one_time_ns is None:
        return None
    hi = max(10, b.run_replays, 2 * (b.replays or 0), int(1.2 * (b.interval_high or 0)))
    n = np.unique(np.linspace(0, hi, 400).round()).astype(np.float64)
    eager = n * b.eager_ns / 1e6
    graph = (b.one_time_ns + n * b.graph_ns) / 1e6
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "x": typed_array(n), "y": typed_array(eager), "name": f"{b.baseline}: n × {_us(b.eager_ns)}",
         "line": {"color": MODE_COLOURS.get(b.baseline, "#1f77b4")}},
        {"type": "scatter", "mode": "lines", "x": typed_array(n), "y": typed_array(graph),
         "name": f"graph: {_us(b.one_time_ns)} once + n × {_us(b.graph_ns)}", "line": {"color": MODE_COLOURS["graph"]}},
    ]
    shapes: list[dict[str, Any]] = []
    if b.replays is not None:
        data.append({"type": "scatter", "mode": "markers+text", "x": [b.replays], "y": [b.replays * b.eager_ns / 1e6],
                     "text": [f"break-even: {b.replays:,} replays"], "textposition": "top left",
                     "marker": {"size": 11, "color": "#d62728"}, "name": "break-even"})
        if b.interval_low is not None:
            x1 = b.interval_high if b.interval_high is not None else hi
            shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": b.interval_low, "x1": x1, "y0": 0, "y1": 1,
                           "fillcolor": "rgba(214,39,40,0.12)", "line": {"width": 0}})
    title = (f"Break-even vs {b.baseline}: " + (f"{b.replays:,} replays" if b.replays is not None else
                                                ("never (a replay is not faster)" if b.never else html.escape(b.reason))))
    if b.interval_low is not None:
        title += f" (95% interval {b.interval_low:,}–{'never' if b.interval_high_never else f'{b.interval_high:,}'})"
    return {"data": data, "layout": {
        "title": {"text": title, "x": 0.01, "font": {"size": 14}}, "height": 380, "shapes": shapes,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "xaxis": {"title": {"text": "replays n (the first launch counts)"}},
        "yaxis": {"title": {"text": "cumulative time (ms)"}}, "legend": {"x": 0.01, "y": 0.99}}}


def iteration_time_figure(modes: tuple[ModeMetrics, ...]) -> dict[str, Any] | None:
    """Histogram of iteration wall times per mode (from the pass that gave the wall time)."""
    data = []
    for m in modes:
        if m.series is None or m.series.wall_ns.size == 0:
            continue
        data.append({"type": "histogram", "x": typed_array((m.series.wall_ns / 1e3).astype(np.float64)),
                     "name": f"{m.mode} ({m.series.wall_ns.size:,} iterations, {m.wall_source} pass)",
                     "opacity": 0.65, "marker": {"color": MODE_COLOURS.get(m.mode, "#777777")}, "nbinsx": 80})
    if not data:
        return None
    return {"data": data, "layout": {
        "title": {"text": "Iteration times per mode", "x": 0.01, "font": {"size": 14}}, "barmode": "overlay",
        "height": 340, "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "xaxis": {"title": {"text": "iteration wall time (µs)"}}, "yaxis": {"title": {"text": "iterations"}},
        "legend": {"x": 0.6, "y": 0.99}}}
