"""`graphmode view`: one self-contained HTML page (plotly.js inlined, opens offline).

The page: headline numbers, an eager iteration above a graph replay on one scale, the whole run
(an aggregate overview, and every span of the run or of a bounded window), each graph's topology
with its critical path, the break-even chart and the iteration-time distributions. Data goes in one
`<script type="application/json">` block with `<`, `>` and `&` escaped, so no string from the trace
can close it; the page's script writes user strings with textContent only.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from graphmode.analyzers import TraceAnalysis, analyze
from graphmode.reports import html_charts
from graphmode.reports.diagnostics_html import cpu_profile_html, diagnostics_html
from graphmode.reports.timeline_data import (
    MAX_DRAWN_SPANS,
    Selection,
    iteration_views,
    lanes_of,
    load_view,
    overview,
    select_spans,
    traced_pass,
)
from graphmode.reports.timeline_plot import overview_figure, timeline_figure
from graphmode.tracer.store import Trace

output_file_extension = "html"
MAX_TOPOLOGIES = 6


@dataclass(frozen=True)
class HtmlSummary:
    path: Path
    bytes: int
    spans_drawn: int
    spans_total: int
    note: str


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: nothing in it can end the element or open a comment."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=_default)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"cannot put {type(o).__name__} in the page")


def _us(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e3:,.2f} µs"


def _headline_rows(a: TraceAnalysis) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for m in a.modes:
        if m.wall is not None:
            rows.append((f"{m.mode} iteration (median, p10–p90)",
                         f"{_us(m.wall.median)} ({_us(m.wall.p10)} – {_us(m.wall.p90)}), {m.iterations:,} iterations, {m.wall_source} pass"))
    saved = a.primary_overhead_saved()
    if saved is not None:
        rows.append((f"launch overhead saved vs {saved.baseline}, per iteration", _us(saved.wall_ns)))
        if saved.wall_per_kernel_ns is not None:
            rows.append(("… per kernel", _us(saved.wall_per_kernel_ns)))
        if saved.api_ns is not None:
            rows.append(("CPU time in CUDA API calls saved, per iteration", _us(saved.api_ns)))
        if saved.gpu_idle_ns is not None:
            rows.append(("GPU idle time saved, per iteration", _us(saved.gpu_idle_ns)))
    for c in a.graph_costs:
        rows.append((f"one-time cost of graph {c.graph_id}" + (f" ({c.label})" if c.label else ""),
                     f"{_us(c.total_ns)} = build {_us(c.build_ns)} + instantiate {_us(c.instantiate_ns)} + upload "
                     f"{_us(c.upload_ns)} + first-launch excess {_us(c.first_launch_excess_ns)}"))
    b = a.primary_break_even()
    if b is not None:
        if b.replays is not None:
            hi = "never" if b.interval_high_never else (f"{b.interval_high:,}" if b.interval_high is not None else "—")
            lo = f"{b.interval_low:,}" if b.interval_low is not None else "—"
            rows.append((f"break-even vs {b.baseline}", f"{b.replays:,} replays (95% interval {lo} – {hi})"))
        else:
            rows.append((f"break-even vs {b.baseline}", "never: a replay is not faster" if b.never else b.reason))
        if b.amortised_speedup is not None:
            rows.append((f"speed-up over this run's {b.run_replays:,} replays, one-time cost included", f"{b.amortised_speedup:.2f}×"))
    return rows


def _section(title: str, body: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>{body}</section>"


def render_html(trace: Trace, *, iterations: tuple[int, int] | None = None,
                window_ms: tuple[float, float] | None = None, max_spans: int = MAX_DRAWN_SPANS,
                analysis: TraceAnalysis | None = None) -> tuple[str, Selection | None]:
    """The page as a string, and what part of the run its full timeline draws (None: no traced pass)."""
    a = analysis if analysis is not None else analyze(trace)
    plots: list[dict[str, Any]] = []
    parts: list[str] = []
    meta = trace.meta
    title = f"graphmode · {trace.path.name}"
    sub = " · ".join(html.escape(str(v)) for v in (meta.get("workload", ""), meta.get("gpu_name", ""),
                                                      meta.get("started_at", ""), f"status {meta.get('status', '?')}") if v)
    if meta.get("workload") == "synthetic":
        sub += " · <b>synthetic trace (built by a test, not a recording)</b>"
    parts.append(f"<header><h1>{html.escape(title)}</h1><p>{sub}</p></header>")

    table = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in _headline_rows(a))
    body = f"<table class='headline'>{table}</table>" if table else "<p>No headline numbers: see below.</p>"
    for cls, items in (("warn", a.warnings), ("cannot", a.cannot_compute)):
        if items:
            body += f"<ul class='{cls}'>" + "".join(f"<li>{html.escape(s)}</li>" for s in items) + "</ul>"
    parts.append(_section("Headline numbers", body))
    diagnostics = diagnostics_html(a.pitfalls)
    if diagnostics:
        parts.append(_section("Diagnostics", diagnostics))

    selection: Selection | None = None
    tp = traced_pass(trace)
    if tp is not None:
        lanes = lanes_of(trace, tp.pass_id)
        views = iteration_views(trace, tp.pass_id, lanes)
        if views:
            longest = max(v.extent_ns[1] for v in views) / 1e3
            divs = []
            for k, view in enumerate(views):
                fig, hov = timeline_figure(view, unit="us", x_range=(0.0, longest), show_legend=(k == len(views) - 1))
                plots.append({"div": f"gm-iter-{k}", "figure": fig, "hover": hov, "sync": "iterations"})
                divs.append(f"<div id='gm-iter-{k}' class='plot'></div>")
            parts.append(_section(
                "One iteration of each mode, aligned at its start, same scale",
                "<p class='hint'>Hover or click a span for its details; a launch call and the GPU work it caused "
                "(same correlation id) light up together, with an arrow from launch to work. Zooming one view zooms all.</p>"
                + "".join(divs)))
        selection = select_spans(trace, tp, iterations=iterations, window_ms=window_ms, max_spans=max_spans)
        busy, bin_ns = overview(trace, tp, lanes)
        window = ([((s - tp.start_ns) / 1e6, (e - tp.start_ns) / 1e6) for s, e in selection.intervals]
                  if selection.note else None)
        plots.append({"div": "gm-overview", "figure": overview_figure(busy, bin_ns, [ln.label for ln in lanes], window),
                      "hover": None, "sync": None})
        full = load_view(trace, tp.pass_id, lanes, selection.intervals, tp.start_ns,
                         f"Pass {tp.pass_id} ({tp.detail} detail): {selection.drawn:,} of {selection.total:,} spans drawn")
        fig, hov = timeline_figure(full, unit="ms")
        plots.append({"div": "gm-timeline-full", "figure": fig, "hover": hov, "sync": None})
        note = (f"<p class='note' id='gm-window-note'>{html.escape(selection.note)}</p>" if selection.note else
                f"<p class='hint'>Every span of the pass is drawn ({selection.total:,}).</p>")
        parts.append(_section("The whole run", "<div id='gm-overview' class='plot'></div>" + note
                              + "<div id='gm-timeline-full' class='plot'></div>"))
        topo = []
        for k, cp in enumerate(a.critical_paths[:MAX_TOPOLOGIES]):
            fig_t = html_charts.topology_figure(trace, cp.pass_id, cp.graph_id, cp)
            if fig_t is not None:
                plots.append({"div": f"gm-topo-{k}", "figure": fig_t, "hover": None, "sync": None})
                topo.append(f"<div id='gm-topo-{k}' class='plot'></div>")
        if not a.critical_paths:
            for k, (gid,) in enumerate(trace.rows("SELECT graph_id FROM graphs WHERE pass_id = ? ORDER BY graph_id LIMIT ?",
                                                  [tp.pass_id, MAX_TOPOLOGIES])):
                fig_t = html_charts.topology_figure(trace, tp.pass_id, int(gid), None)
                if fig_t is not None:
                    plots.append({"div": f"gm-topo-{k}", "figure": fig_t, "hover": None, "sync": None})
                    topo.append(f"<div id='gm-topo-{k}' class='plot'></div>")
        if topo:
            extra = (f"<p class='note'>Showing {MAX_TOPOLOGIES} of {len(a.critical_paths)} graphs.</p>"
                     if len(a.critical_paths) > MAX_TOPOLOGIES else "")
            hint = ("<p class='hint'>Nodes by dependency level, sized by measured median duration; "
                    "the critical path in red.</p>" if a.critical_paths else
                    "<p class='hint'>No measured node durations (record with <code>--detail node</code> for the critical path).</p>")
            parts.append(_section("Graph topology", hint + extra + "".join(topo)))
    else:
        parts.append(_section("Timeline", "<p class='note'>The trace has no pass; nothing to draw.</p>"))

    charts = []
    b = a.primary_break_even()
    fig_b = html_charts.break_even_figure(b) if b is not None else None
    if fig_b is not None:
        plots.append({"div": "gm-break-even", "figure": fig_b, "hover": None, "sync": None})
        charts.append(_section("Break-even", "<div id='gm-break-even' class='plot'></div>"))
    fig_d = html_charts.iteration_time_figure(a.modes)
    if fig_d is not None:
        plots.append({"div": "gm-iteration-times", "figure": fig_d, "hover": None, "sync": None})
        charts.append(_section("Iteration times", "<div id='gm-iteration-times' class='plot'></div>"))
    parts.extend(charts)
    profile = cpu_profile_html(a.cpu_profile, _profile_session(trace) if a.cpu_profile is not None else None)
    if profile:
        parts.append(_section("CPU profile", profile))
    return _page(title, "".join(parts), {"plots": plots}), selection


def _profile_session(trace: Trace) -> Any:
    """The run's pyinstrument Session (tracer.profile_store), for pyinstrument's own page; None if unreadable."""
    from graphmode.tracer.profile_store import read_profile

    try:
        stored = read_profile(trace)
    except ValueError:
        return None
    return stored.session() if stored is not None else None


def _page(title: str, body: str, data: dict[str, Any]) -> str:
    from plotly.offline import get_plotlyjs

    assets = resources.files("graphmode.reports") / "assets"
    script = (assets / "report.js").read_text(encoding="utf-8")
    css = (assets / "report.css").read_text(encoding="utf-8")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{css}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>{body}"
        "<div id='gm-info' class='info' aria-live='polite'>Hover or click a span on a timeline.</div>"
        f"<script type='application/json' id='gm-data'>{_script_json(data)}</script>"
        f"<script>{script}</script></body></html>"
    )


def write_html(trace: Trace, out: Path, **options: Any) -> HtmlSummary:
    text, sel = render_html(trace, **options)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return HtmlSummary(out, out.stat().st_size, sel.drawn if sel else 0, sel.total if sel else 0,
                       sel.note if sel else "")
