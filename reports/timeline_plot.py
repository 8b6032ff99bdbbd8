"""Plotly figure specs for timelines: one WebGL line trace per colour, spans as segments.

Each span is three points (start, end, NaN): the NaN breaks the line, so a whole category of spans
is one `scattergl` trace (plotly shapes are SVG and crawl past ~10k). Arrays go into the page as
base64 typed arrays (plotly.js decodes `{dtype, bdata}`), not as JSON number lists. Hover text is
not given to plotly (it renders HTML in hover labels): the page's script shows the span's fields
from `hover` columns with textContent, so user strings can never become markup.
"""

from __future__ import annotations

import base64
import html
from typing import Any

import numpy as np

from graphmode.reports.timeline_data import SpanGroup, TimelineView

# Colours by API category, GPU span kind and marker kind (Okabe-Ito and Tableau hues).
COLOURS: dict[tuple[str, str], str] = {
    ("api", "kernel_launch"): "#1f77b4", ("api", "graph_launch"): "#9467bd", ("api", "sync"): "#d62728",
    ("api", "capture"): "#e377c2", ("api", "instantiate"): "#ff7f0e", ("api", "upload"): "#bcbd22",
    ("api", "update"): "#17becf", ("api", "graph_build"): "#8c564b", ("api", "graph_destroy"): "#7f7f7f",
    ("api", "memcpy"): "#2ca02c", ("api", "memset"): "#98df8a", ("api", "memory"): "#aec7e8",
    ("api", "event"): "#c5b0d5", ("api", "stream"): "#c49c94", ("api", "module"): "#dbdb8d",
    ("api", "other"): "#c7c7c7",
    ("gpu", "kernel"): "#009e73", ("gpu", "memcpy"): "#e69f00", ("gpu", "memset"): "#f0e442",
    ("gpu", "graph"): "#cc79a7",
    ("marker", "phase"): "#d9d9d9", ("marker", "iteration"): "#56b4e9", ("marker", "op"): "#ff7f0e",
    ("marker", "nvtx"): "#999999",
}
LANE_PX = 24
LINE_PX = 14
UNITS = {"us": 1e3, "ms": 1e6}


def typed_array(values: np.ndarray) -> dict[str, str]:
    """plotly.js's typed-array spec; the page's script decodes the same format for hover columns."""
    arr = np.ascontiguousarray(values)
    dtype = {np.dtype(np.float64): "f8", np.dtype(np.float32): "f4", np.dtype(np.int32): "i4",
             np.dtype(np.int16): "i2", np.dtype(np.int8): "i1"}[arr.dtype]
    return {"dtype": dtype, "bdata": base64.b64encode(arr.astype(arr.dtype.newbyteorder("<")).tobytes()).decode("ascii")}


def _column(values: np.ndarray) -> dict[str, Any]:
    """A hover column: a constant when every span shares the value, else the smallest exact array."""
    v = np.asarray(values)
    if v.size and np.all(v == v[0]):
        return {"const": v[0].item()}
    if v.size == 0 or (v.min() >= -(2**31) and v.max() < 2**31):
        return typed_array(v.astype(np.int32))
    return typed_array(v.astype(np.float64))  # ids above 2**31 stay exact up to 2**53


def _segments(group: SpanGroup, scale: float) -> tuple[np.ndarray, np.ndarray]:
    n = len(group)
    x = np.empty(3 * n, np.float64)
    x[0::3] = group.start_ns / scale
    x[1::3] = group.end_ns / scale
    x[2::3] = np.nan
    y = np.repeat(group.lane.astype(np.int16), 3)
    return x, y


def timeline_figure(view: TimelineView, *, unit: str = "ms", x_range: tuple[float, float] | None = None,
                    show_legend: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """(figure, hover): the figure for plotly.js and the columns the page's hover box reads."""
    scale = UNITS[unit]
    data: list[dict[str, Any]] = []
    hover_groups: list[dict[str, Any]] = []
    for gi, group in enumerate(view.groups):
        if not len(group):
            continue
        x, y = _segments(group, scale)
        data.append({
            "type": "scattergl", "mode": "lines", "x": typed_array(x), "y": typed_array(y),
            "name": html.escape(f"{group.label} ({group.source})" if group.source != "api" else group.label),
            "legendgroup": group.source, "line": {"color": COLOURS.get((group.source, group.label), "#555555"),
                                                  "width": LINE_PX},
            "hoverinfo": "none", "connectgaps": False, "showlegend": show_legend,
            "meta": {"group": len(hover_groups), "source": group.source, "label": group.label},
        })
        hover_groups.append({
            "source": group.source, "label": group.label,
            "name_id": _column(group.name_id), "lane": _column(group.lane),
            "correlation_id": _column(group.correlation_id),
            "fields": {k: _column(v) for k, v in group.fields.items() if v.dtype != object},
            "text_fields": {k: [str(s) for s in np.unique(v)] for k, v in group.fields.items() if v.dtype == object},
            "text_codes": {k: _column(np.unique(v, return_inverse=True)[1].astype(np.int32))
                           for k, v in group.fields.items() if v.dtype == object},
        })
    # Two empty traces the page fills on hover/click: the spans sharing a correlation id, and
    # arrows from each CPU launch to the GPU work it caused.
    data.append({"type": "scattergl", "mode": "lines", "x": [], "y": [], "name": "linked (same correlation id)",
                 "line": {"color": "rgba(255,200,0,0.85)", "width": LINE_PX + 8}, "hoverinfo": "skip",
                 "showlegend": False, "meta": {"role": "linked"}})
    data.append({"type": "scattergl", "mode": "lines+markers", "x": [], "y": [], "name": "launch → GPU work",
                 "line": {"color": "#000000", "width": 1.5}, "marker": {"size": 5, "color": "#000000"},
                 "hoverinfo": "skip", "showlegend": False, "meta": {"role": "arrows"}})
    lo, hi = view.extent_ns
    rng = list(x_range) if x_range else [lo / scale, hi / scale]
    n_lanes = len(view.lanes)
    layout = {
        "title": {"text": html.escape(view.title), "x": 0.01, "font": {"size": 14}},
        "height": 90 + LANE_PX * max(n_lanes, 2),
        "margin": {"l": 230, "r": 190, "t": 36, "b": 40},
        "xaxis": {"title": {"text": f"time ({'µs' if unit == 'us' else 'ms'}) from {'the iteration start' if unit == 'us' else 'the start of the pass'}"},
                  "range": rng, "zeroline": False, "showgrid": True},
        "yaxis": {"tickvals": list(range(n_lanes)), "ticktext": [html.escape(ln.label) for ln in view.lanes],
                  "range": [n_lanes - 0.5, -0.5], "fixedrange": True, "showgrid": False, "zeroline": False},
        "hovermode": "closest", "hoverdistance": 30, "dragmode": "zoom", "showlegend": show_legend,
        "legend": {"x": 1.01, "y": 1, "font": {"size": 11}},
        "plot_bgcolor": "#fbfbfb", "uirevision": "keep",
    }
    hover = {"names": view.names, "groups": hover_groups, "unit": unit, "origin_ns": view.origin_ns,
             "lanes": [ln.label for ln in view.lanes]}
    return {"data": data, "layout": layout}, hover


def overview_figure(busy: np.ndarray, bin_ns: float, lanes: list[str], window_ms: list[tuple[float, float]] | None) -> dict[str, Any]:
    """Heatmap of busy fraction per lane over the whole pass; the drawn window outlined."""
    x = (np.arange(busy.shape[1]) + 0.5) * bin_ns / 1e6
    fig: dict[str, Any] = {
        "data": [{"type": "heatmap", "z": typed_array(busy.astype(np.float32).ravel()) | {"shape": f"{busy.shape[0]},{busy.shape[1]}"},
                  "x": typed_array(x), "y": list(range(len(lanes))), "colorscale": [[0, "#ffffff"], [1, "#08306b"]], "zmin": 0, "zmax": 1,
                  "colorbar": {"title": {"text": "busy"}, "len": 0.9},
                  "hovertemplate": "%{x:.3f} ms<br>busy %{z:.0%}<extra></extra>"}],
        "layout": {
            "title": {"text": "Whole run: share of each lane busy per time bin (aggregate)", "x": 0.01, "font": {"size": 14}},
            "height": 80 + 18 * max(len(lanes), 2), "margin": {"l": 230, "r": 190, "t": 36, "b": 40},
            "xaxis": {"title": {"text": "time (ms) from the start of the pass"}},
            "yaxis": {"tickvals": list(range(len(lanes))), "ticktext": [html.escape(s) for s in lanes],
                      "autorange": "reversed", "fixedrange": True},
            "shapes": [{"type": "rect", "xref": "x", "yref": "paper", "x0": a, "x1": b, "y0": 0, "y1": 1,
                        "line": {"color": "#d62728", "width": 1.5}, "fillcolor": "rgba(0,0,0,0)"}
                       for a, b in (window_ms or [])],
        },
    }
    return fig
