"""Plotly figure specs for the report's charts: graph topology, break-even, iteration times.

Numbers come from `analyzers.analyze` (TraceAnalysis); the topology figure also draws the graph's
nodes and edges and the per-node medians that the critical-path analyzer uses (analyzers.page.NodeTable). Every user string
(kernel names, graph labels, source lines) is HTML-escaped: plotly renders its text as HTML. Every
colour a chart uses has a legend entry (node types get one entry each, drawn from an empty trace).
"""

from __future__ import annotations

import base64
import html
from typing import Any

import numpy as np

from graphmode.analyzers.critical_path import longest_path
from graphmode.analyzers.page import MAX_TOPOLOGY_NODES, NodeTable
from graphmode.analyzers.results import BreakEven, CriticalPath, ModeMetrics, RegionPrediction
from graphmode.reports.html_sections import graph_title
from graphmode.reports.names import short_name
from graphmode.reports.notes import break_even_reason
from graphmode.reports.units import human_ns

MAX_NODE_LABELS = 60  # beyond this many nodes, names only on hover
# plotly measures every tick label it draws, and a page's layout with it: a 100-level chain with a tick per
# level took 0.4-0.7 s to draw in one task, the same chart with ticks every 10 levels 0.05-0.15 s.
MAX_LEVEL_TICKS = 20
# The iteration-time axis ends at HISTOGRAM_STRETCH x the HISTOGRAM_QUANTILE (a long tail stays in view,
# a far outlier does not squash every other bar into the first bin); the title says what it left out.
HISTOGRAM_QUANTILE = 0.95
HISTOGRAM_STRETCH = 2.0
MODE_COLOURS = {"eager": "#0072b2", "eager_sync_each": "#8c564b", "graph": "#9467bd"}
NODE_COLOURS = {"kernel": "#009e73", "memcpy": "#e69f00", "memset": "#f0e442", "host": "#56b4e9",
                "empty": "#bbbbbb", "event_record": "#cc79a7", "wait_event": "#a6761d", "graph": "#0072b2"}
PATH_COLOUR = "#d62728"
RUN_COLOUR = "#222222"


def typed_array(values: np.ndarray) -> dict[str, str]:
    """plotly.js's typed-array spec ({dtype, bdata}): arrays as base64 bytes, not JSON number lists."""
    arr = np.ascontiguousarray(values)
    dtype = {np.dtype(np.float64): "f8", np.dtype(np.float32): "f4", np.dtype(np.int32): "i4"}[arr.dtype]
    return {"dtype": dtype, "bdata": base64.b64encode(arr.astype(arr.dtype.newbyteorder("<")).tobytes()).decode("ascii")}


def _legend_swatch(name: str, colour: str, symbol: str = "circle") -> dict[str, Any]:
    """An empty trace that only puts a colour in the legend."""
    return {"type": "scatter", "mode": "markers", "x": [None], "y": [None], "name": html.escape(name),
            "marker": {"color": colour, "size": 10, "symbol": symbol}, "hoverinfo": "skip", "showlegend": True}


def topology_figure(graph_id: int, table: NodeTable, path: CriticalPath | None, label: str = "",
                    note: str = "") -> dict[str, Any] | None:
    """Nodes placed by dependency level (left to right), edges, critical path in red; None if too big."""
    nodes = {"node_index": table.node_index, "node_type": table.node_type, "name": table.name, "source": table.source}
    ids = table.node_id.astype(np.int64)
    if ids.size == 0 or ids.size > MAX_TOPOLOGY_NODES:
        return None
    src = np.searchsorted(ids, table.from_node_id)
    dst = np.searchsorted(ids, table.to_node_id)
    level, acyclic = longest_path(np.ones(ids.size), src, dst)
    level = level - 1 if acyclic else np.zeros(ids.size)
    # Row within a level: order of appearance, centred on 0.
    row = np.zeros(ids.size)
    for lv in np.unique(level):
        members = np.flatnonzero(level == lv)
        row[members] = np.arange(members.size) - (members.size - 1) / 2
    medians = table.median_ns
    dur = np.array([medians.get(int(i), np.nan) for i in ids])
    measured = bool(np.isfinite(dur).any())
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

    n = ids.size
    names = [short_name(str(nm)) if nm else str(t) for nm, t in zip(nodes["name"], nodes["node_type"])]
    hover = [
        html.escape(f"{nm} · {ntype} · node {int(idx)} of {n}") + "<br>"
        + html.escape((f"median {human_ns(dd)} per replay" if np.isfinite(dd) else "not timed (record with --detail node)")
                      + (" · on the critical path" if cp else ""))
        + (("<br>" + html.escape(str(srcline))) if srcline else "")
        for nm, idx, ntype, srcline, dd, cp in zip(names, nodes["node_index"], nodes["node_type"], nodes["source"], dur, on_path)
    ]
    finite = dur[np.isfinite(dur)]
    size = (12 + 20 * (np.nan_to_num(dur, nan=0.0) / finite.max())) if measured and finite.max() > 0 else np.full(n, 14.0)
    ex, ey = edge_xy(~path_edge) if src.size else (np.zeros(0), np.zeros(0))
    px, py = edge_xy(path_edge) if src.size else (np.zeros(0), np.zeros(0))
    types = [str(t) for t in nodes["node_type"]]
    text = [html.escape(nm if len(nm) <= 22 else nm[:21] + "…") for nm in names] if n <= MAX_NODE_LABELS else None
    title = html.escape(graph_title(graph_id, label or (path.label if path else "")))
    title += f" · {n} nodes, {int(table.from_node_id.size)} edges"
    if path is not None:
        title += f" · critical path {human_ns(path.critical_path_ns)} of {human_ns(path.serial_ns)} serial"
        if path.measured_span is not None:
            title += f" · measured replay span {human_ns(path.measured_span.median)}"
    if note:
        title += f"<br><i>{html.escape(note)}</i>"
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "x": typed_array(ex), "y": typed_array(ey), "hoverinfo": "skip",
         "line": {"color": "#999999", "width": 1}, "name": "dependency"},
    ]
    if path is not None:
        data.append({"type": "scatter", "mode": "lines", "x": typed_array(px), "y": typed_array(py), "hoverinfo": "skip",
                     "line": {"color": PATH_COLOUR, "width": 3}, "name": "critical path"})
    data.append({"type": "scatter", "mode": "markers",
                 "x": typed_array(level.astype(np.float64)), "y": typed_array(row.astype(np.float64)),
                 "text": hover, "hovertemplate": "%{text}<extra></extra>",
                 "marker": {"size": typed_array(size.astype(np.float64)), "color": [NODE_COLOURS.get(t, "#777777") for t in types],
                            "line": {"color": [PATH_COLOUR if c else "#ffffff" for c in on_path],
                                     "width": [3 if c else 1 for c in on_path]}},
                 "name": "node (size: median duration)" if measured else "node", "showlegend": False})
    if text:  # node names above the nodes (their own trace: the nodes' text is their hover)
        data.append({"type": "scatter", "mode": "text", "x": typed_array(level.astype(np.float64)),
                     "y": typed_array(row.astype(np.float64) + 0.28), "text": text, "textfont": {"size": 10, "color": "#333333"},
                     "hoverinfo": "skip", "showlegend": False, "name": "node names"})
    for t in dict.fromkeys(types):
        data.append(_legend_swatch(f"{t} node", NODE_COLOURS.get(t, "#777777")))
    if measured:
        data.append(_legend_swatch("size: median duration per replay", "#bbbbbb", "circle-open"))
    rows = int(np.ptp(row)) + 1
    return {
        "data": data,
        "layout": {"title": {"text": title, "x": 0.01, "font": {"size": 13}}, "height": 230 + 34 * rows + (18 if note else 0),
                   "margin": {"l": 40, "r": 20, "t": 56 if note else 40, "b": 40}, "showlegend": True,
                   "xaxis": {"title": {"text": "dependency level"}, "zeroline": False, "tick0": 0, "dtick": _level_step(int(np.max(level)) + 1),
                             "tickformat": "d", "range": [-0.6, float(np.max(level)) + 0.6]},
                   "yaxis": {"visible": False, "range": [float(np.min(row)) - 0.8, float(np.max(row)) + 0.8]},
                   "hovermode": "closest"},
    }


def _level_step(levels: int) -> int:
    """1, 2, 5, 10, 20, ... levels between ticks: at most MAX_LEVEL_TICKS ticks."""
    step = 1
    while levels / step > MAX_LEVEL_TICKS:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def break_even_figure(b: BreakEven, predicted: RegionPrediction | None = None) -> dict[str, Any] | None:
    """Cumulative time of eager iterations vs one-time cost plus graph replays; crossing, its interval and
    this run's replay count; with `predicted`, the graph line and break-even predicted from the eager work."""
    if b.eager_ns is None or b.graph_ns is None or b.one_time_ns is None:
        return None
    p_one = predicted.one_time.ns if predicted is not None and predicted.one_time is not None else None
    p_rep = predicted.replay_period.ns if predicted is not None and predicted.replay_period is not None else None
    p_n = predicted.break_even if predicted is not None else None
    hi = max(10, int(1.15 * b.run_replays), 2 * (b.replays or 0), int(1.2 * (b.interval_high or 0)), 2 * (p_n or 0))
    n = np.unique(np.linspace(0, hi, 400).round()).astype(np.float64)
    eager = n * b.eager_ns / 1e6
    graph = (b.one_time_ns + n * b.graph_ns) / 1e6
    top = float(max(np.max(eager), np.max(graph)))
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "x": typed_array(n), "y": typed_array(eager),
         "name": html.escape(f"{b.baseline}: n × {human_ns(b.eager_ns)}"), "line": {"color": MODE_COLOURS.get(b.baseline, "#0072b2")}},
        {"type": "scatter", "mode": "lines", "x": typed_array(n), "y": typed_array(graph),
         "name": html.escape(f"graph: {human_ns(b.one_time_ns)} once + n × {human_ns(b.graph_ns)}"),
         "line": {"color": MODE_COLOURS["graph"]}},
    ]
    if p_one is not None and p_rep is not None:
        data.append({"type": "scatter", "mode": "lines", "x": typed_array(n), "y": typed_array((p_one + n * p_rep) / 1e6),
                     "name": html.escape(f"graph, predicted: {human_ns(p_one)} once + n × {human_ns(p_rep)}"),
                     "line": {"color": MODE_COLOURS["graph"], "dash": "dash"}})
        if p_n is not None:
            data.append({"type": "scatter", "mode": "markers+text", "x": [p_n], "y": [p_n * b.eager_ns / 1e6],
                         "text": [f"predicted: {p_n:,}"], "textposition": "bottom right",
                         "marker": {"size": 10, "color": PATH_COLOUR, "symbol": "diamond-open"}, "name": "predicted break-even"})
    shapes: list[dict[str, Any]] = []
    if b.replays is not None:
        data.append({"type": "scatter", "mode": "markers+text", "x": [b.replays], "y": [b.replays * b.eager_ns / 1e6],
                     "text": [f"break-even: {b.replays:,} replays"], "textposition": "top left",
                     "marker": {"size": 11, "color": PATH_COLOUR}, "name": "break-even"})
        if b.interval_low is not None:
            x1 = b.interval_high if b.interval_high is not None else hi
            shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": b.interval_low, "x1": x1, "y0": 0, "y1": 1,
                           "fillcolor": "rgba(214,39,40,0.12)", "line": {"width": 0}})
            data.append(_legend_swatch("95% interval of the break-even", "rgba(214,39,40,0.3)", "square"))
    data.append({"type": "scatter", "mode": "lines+text", "x": [b.run_replays, b.run_replays], "y": [0, top],
                 "text": ["", f"this run: {b.run_replays:,} replays"], "textposition": "top right",
                 "line": {"color": RUN_COLOUR, "width": 1.5, "dash": "dot"}, "name": f"this run: {b.run_replays:,} replays",
                 "hoverinfo": "skip"})
    title = (f"Break-even vs {b.baseline}: " + (f"{b.replays:,} replays" if b.replays is not None else
                                                ("never (a replay is not faster)" if b.never else html.escape(break_even_reason(b.reason)))))
    if b.interval_low is not None:
        title += f" (95% interval {b.interval_low:,}–{'never' if b.interval_high_never else f'{b.interval_high:,}'})"
    title += f"; this run replayed {b.run_replays:,} times"
    return {"data": data, "layout": {
        "title": {"text": title, "x": 0.01, "font": {"size": 14}}, "height": 380, "shapes": shapes,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "xaxis": {"title": {"text": "replays n (the first launch counts)"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "cumulative time (ms)"}, "rangemode": "tozero"}, "legend": {"x": 0.01, "y": 0.99}}}


def iteration_time_figure(modes: tuple[ModeMetrics, ...]) -> dict[str, Any] | None:
    """Histogram of iteration wall times per mode; the axis stops at twice the 95th percentile and the title
    says how many iterations lie beyond it."""
    series = [(m, (m.series.wall_ns / 1e3).astype(np.float64)) for m in modes if m.series is not None and m.series.wall_ns.size]
    if not series:
        return None
    every = np.concatenate([v for _, v in series])
    cut = min(float(every.max()), HISTOGRAM_STRETCH * float(np.quantile(every, HISTOGRAM_QUANTILE)))
    lo = float(every.min())
    above = int((every > cut).sum())
    width = (cut - lo) / 60 if cut > lo else max(cut * 0.01, 0.01)
    data = [{"type": "histogram", "x": typed_array(v[v <= cut]),
             "name": html.escape(f"{m.mode} ({v.size:,} iterations, {'untraced windows' if m.wall_source == 'window' else m.wall_source + ' pass'})"), "opacity": 0.65,
             "marker": {"color": MODE_COLOURS.get(m.mode, "#777777")},
             "xbins": {"start": lo - width / 2, "end": cut + width, "size": width}} for m, v in series]
    title = "Iteration times per mode"
    if above:
        title += (f" · {above:,} iteration{'s' if above != 1 else ''} above {cut:,.1f} µs ({HISTOGRAM_STRETCH:g}× the "
                  f"{100 * HISTOGRAM_QUANTILE:g}th percentile) not drawn; the longest took {float(every.max()):,.1f} µs")
    return {"data": data, "layout": {
        "title": {"text": html.escape(title), "x": 0.01, "font": {"size": 14}}, "barmode": "overlay",
        "height": 340, "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "xaxis": {"title": {"text": "iteration wall time (µs)"}}, "yaxis": {"title": {"text": "iterations"}},
        "legend": {"x": 0.6, "y": 0.99}}}
