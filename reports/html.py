"""`graphmode view`: one self-contained HTML page (opens offline, no network).

Top to bottom (a trace with no graph to compare leads with its prediction): the verdict in one sentence,
the headline numbers beside where the time went per mode,
diagnostics, one section per graph (when the analysis reports per graph), one iteration of each mode
on one scale, the whole run (cropped to the CUDA activity, the full extent one click away), every
kernel eager vs graph, each graph's topology, the break-even chart, iteration times, the CPU profile.

The text paints first; then the page's own canvas renderer (assets/timeline.js) draws the timelines from
columns in one gzip blob, in slices of one short task each; plotly.js (gzipped in the page, trimmed to the
trace types the charts use: html_plotly.py) starts when the browser is idle and draws the charts one per task.
Data goes in `<script type="application/json">` / `application/octet-stream` blocks with `<`, `>` and
`&` escaped, so no string from the trace can close them; the page's scripts write user strings with
textContent only.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from graphmode.analyzers.page import MAX_TOPOLOGIES, PageData
from graphmode.analyzers.results import TraceAnalysis
from graphmode.analyzers.timeline import TimelineView
from graphmode.reports import html_charts
from graphmode.reports.coverage_html import graph_use_html
from graphmode.reports.diagnostics_html import cpu_profile_html, diagnostics_html
from graphmode.reports.html_plotly import plotly_bundle, trace_types
from graphmode.reports.notes import word
from graphmode.reports.steps_html import steps_html
from graphmode.reports.html_sections import (cpu_speed_html, esc, graph_title, graphs_html, headline_table, kernel_table_html,
                                             time_split_html, verdict_html)
from graphmode.analyzers.timeline import Selection
from graphmode.analyzers.untraced import short_loc
from graphmode.analyzers.untraced_windows import UntracedWindow
from graphmode.reports.timeline_plot import BlobWriter, encode_view
from graphmode.tracer.store import PassInfo
from graphmode.reports.prediction_html import measured_twin, prediction_html
from graphmode.reports.units import window_ms

output_file_extension = "html"
PREDICTION_TITLE = "Prediction: what a CUDA graph would cost and save"
ACTIVITY_MARGIN = 0.03  # the whole-run view opens on the CUDA activity plus this share on each side


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


def _section(title: str, body: str, sid: str = "") -> str:
    return f"<section{f' id={chr(39)}{sid}{chr(39)}' if sid else ''}><h2>{html.escape(title)}</h2>{body}</section>"


def _timeline_block(div: str, legend: bool = True, above: str = "") -> str:
    """A timeline's container: the canvas (with `above` it), its legend and its docked details box."""
    return (f"<div class='tl-row'><div class='tl-main'>{above}<div id='{div}' class='timeline'></div>"
            + (f"<div class='legend' id='{div}-legend'></div>" if legend else "") + "</div>"
            f"<div class='details' id='{div}-details' aria-live='polite'><p class='hint'>Hover a span for its details; "
            "click to keep them.</p></div></div>")


class _Page:
    def __init__(self) -> None:
        self.plots: list[dict[str, Any]] = []
        self.blob = BlobWriter()

    def chart(self, div: str, figure: dict[str, Any] | None) -> str:
        if figure is None:
            return ""
        self.plots.append({"div": div, "kind": "plotly", "figure": figure, "hover": None})
        return f"<div id='{div}' class='plot'><p class='hint'>(chart: drawn once plotly.js has started)</p></div>"


def _whole_run(page: _Page, tp: PassInfo, selection: Selection, full: TimelineView, active: tuple[int, int] | None,
               chosen: bool, windows: tuple[UntracedWindow, ...] = ()) -> str:
    """The whole-run section; `chosen`: the user picked what it draws (--window, --iterations), not the page limit."""
    origin = tp.start_ns
    # The whole pass is the view's full extent even where the page holds part of it: the stretches it leaves
    # out are drawn hatched and labelled, not left blank as if the GPU had been idle.
    extent = (0, max(1, tp.end_ns - origin))
    initial = extent if selection.note is None else full.extent_ns
    if active is not None and selection.note is None:
        a, b = active[0] - origin, active[1] - origin
        margin = max(int((b - a) * ACTIVITY_MARGIN), 1_000)
        initial = (max(extent[0], a - margin), min(extent[1], b + margin))
    gaps = [{"start": g.start_ns - origin, "end": g.end_ns - origin, "spans": g.spans,
             "label": f"{g.spans:,} spans not drawn ({'outside what was asked for' if chosen else 'page limit'}); "
                      f"open with --window {window_ms(g.start_ns - origin)}:{window_ms(g.end_ns - origin)} to see them"}
            for g in selection.left_out]
    # the one run's untraced windows: nothing was recorded there (CUPTI detached), which is not an idle GPU
    gaps += [{"start": w.start_ns - origin, "end": w.untraced_end_ns - origin, "spans": 0, "kind": "untraced",
              "short": "untraced window",
              "label": f"untraced window: CUPTI detached, nothing recorded; {w.iterations:,} iterations of "
                       f"{short_loc(w.anchor)} timed by line stamps" + (
                           f", then {(w.untraced_end_ns - w.end_ns) / 1e6:,.1f} ms more detached after the loop ended"
                           if w.untraced_end_ns > w.end_ns else "")}
             for w in windows]
    page.plots.append(encode_view(full, page.blob, div="gm-timeline-full", title=_title(full), origin="the start of the pass",
                                  initial=initial, full=extent, left_out=gaps))
    cropped = initial != extent and selection.note is None
    crop = (f"It opens on the CUDA activity ({(initial[1] - initial[0]) / 1e6:,.1f} ms of the pass's "
            f"{(extent[1] - extent[0]) / 1e6:,.1f} ms); <b>whole run</b> shows all of it. " if cropped else "")
    hint = ("<p class='hint'>" + crop + "Scroll to zoom, drag to pan, shift-drag to zoom to a range, double-click "
            "to go back. Zoomed out, a pixel column's shade says how busy its lane was; zoomed in, every span is drawn "
            "as recorded. The strip on top is the whole pass, with the visible part outlined: click it to go there.</p>")
    note = (f"<p class='note' id='gm-window-note'>{html.escape(word(selection.note))}</p>" if selection.note is not None else "")
    toolbar = ("<div class='toolbar'><label>Find kernels and calls <input type='search' id='gm-search' "
               "placeholder='name, e.g. gemm or cudaLaunchKernel' autocomplete='off'></label>"
               "<button type='button' id='gm-prev'>◀ previous</button><button type='button' id='gm-next'>next ▶</button>"
               "<span id='gm-search-count' class='hint'></span><span class='spacer'></span>"
               "<button type='button' id='gm-zoom-out'>zoom out</button><button type='button' id='gm-reset'>CUDA activity</button>"
               "<button type='button' id='gm-whole'>whole run</button></div>")
    return _section("The whole run", toolbar + hint + note
                    + _timeline_block("gm-timeline-full", above="<div id='gm-minimap' class='minimap'></div>"), "gm-run")


def _title(view: TimelineView) -> str:
    """A view's title as the page words it (analyzers.timeline: iteration_view, pass_view)."""
    return word(view.title) if view.title is not None else ""


def _iterations(page: _Page, views: tuple[TimelineView, ...]) -> str:
    if not views:
        return ""
    longest = max(v.extent_ns[1] for v in views)
    divs = []
    for k, view in enumerate(views):
        page.plots.append(encode_view(view, page.blob, div=f"gm-iter-{k}", title=_title(view), origin="the iteration start",
                                      initial=(0, longest), full=(min(0, int(view.start_ns.min(initial=0))), max(longest, view.extent_ns[1])),
                                      sync="iterations", fade_note="starts before or after this iteration (context)"))
        divs.append(f"<h3 class='view-title'>{esc(_title(view))}</h3><div id='gm-iter-{k}' class='timeline'></div>")
    body = ("<p class='hint'>The middle iteration of each mode, each from its own start, on one time scale: the gaps "
            "between launches that a graph removes show as white space. Hover a span for its details; a launch call "
            "and the GPU work it caused (same correlation id) light up together, with an arrow from the call to the work. "
            "Zooming or double-clicking one view does the same to the others.</p>"
            "<div class='tl-row'><div class='tl-main'>" + "".join(divs)
            + "<div class='legend' id='gm-iter-legend'></div></div>"
            "<div class='details' id='gm-iter-details' aria-live='polite'><p class='hint'>Hover a span for its details; "
            "click to keep them.</p></div></div>")
    return _section("One iteration of each mode, same scale", body, "gm-iterations")


def _topologies(page: _Page, a: TraceAnalysis, data: PageData) -> str:
    graphs = tuple(getattr(a, "graphs", ()) or ())
    paths = {cp.graph_id: cp for cp in a.critical_paths}
    status = {int(g.graph_id): str(g.status) for g in graphs}
    items: list[str] = []
    notes: list[str] = []
    for topo in data.topologies:
        gid, label, nodes, ran = topo.graph_id, topo.label, topo.num_nodes, topo.ran
        never = status.get(gid) == "never_replayed" or (not graphs and not ran)
        note = "never replayed in this run" if never else ""
        if len(items) >= MAX_TOPOLOGIES:
            notes.append(f"{graph_title(gid, label)}: not drawn (the page shows {MAX_TOPOLOGIES} topologies)")
            continue
        fig = html_charts.topology_figure(gid, topo.nodes, paths.get(gid), str(label), note) if topo.nodes is not None else None
        if fig is None:
            why = ("no topology recorded" if not nodes else
                   f"captured with the tracer detached: its {int(nodes):,} nodes are its first replay's, in the order "
                   "they ran; its edges were not recorded" if topo.edges_unknown else
                   f"{int(nodes):,} nodes, too many to draw")
            notes.append(f"{graph_title(gid, label)}: {why}" + (f"; {note}" if note else ""))
            continue
        items.append(page.chart(f"gm-topo-{len(items)}", fig))
    if not items and not notes:
        return ""
    hint = ("<p class='hint'>Nodes by dependency level, coloured by type, sized by measured median duration; "
            "the critical path in red.</p>" if a.critical_paths else
            "<p class='hint'>Nodes by dependency level, coloured by type. No measured node durations (record with "
            "<code>--detail node</code> for durations and the critical path).</p>")
    extra = "".join(f"<p class='note'>{esc(n)}</p>" for n in notes)
    return _section("Graph topology", hint + extra + "".join(items), "gm-topology")


def render_html(a: TraceAnalysis, data: PageData, *, chosen: bool = False) -> tuple[str, Selection | None]:
    """The page of an analysis and what its run's page data (analyzers.page.page_data) holds, as a string, and what
    part of the run its whole-run timeline draws (None: no traced pass). `chosen`: the user picked that part
    (--iterations, --window), not the page's limit."""
    page = _Page()
    meta = data.meta
    title = f"graphmode · {data.trace_name}"
    sub = " · ".join(html.escape(str(v)) for v in (meta.get("workload", ""), meta.get("gpu_name", ""),
                                                      meta.get("started_at", ""), f"status {meta.get('status', '?')}") if v)
    if meta.get("workload") == "synthetic":
        sub += " · <b>synthetic trace (built by a test, not a recording)</b>"
    parts = [f"<header><h1>{html.escape(title)}</h1><p>{sub}</p></header>"]
    graphs = tuple(getattr(a, "graphs", ()) or ())
    prediction = getattr(a, "prediction", None)
    predicted = prediction_html(prediction)
    # A trace with nothing measured to compare (eager only) has its answer in the prediction: it leads the page.
    lead = bool(predicted) and not graphs and a.primary_break_even() is None and bool(getattr(prediction, "regions", ()))
    if lead:
        parts.append(_section(PREDICTION_TITLE, predicted, "gm-prediction"))
    parts.append(verdict_html(a))

    body = f"<div class='two'><div>{headline_table(a)}</div><div>{time_split_html(a.modes, a)}</div></div>"
    for cls, items in (("warn", a.warnings), ("cannot", a.cannot_compute)):
        if items:
            body += f"<ul class='{cls}'>" + "".join(f"<li>{html.escape(word(s))}</li>" for s in items) + "</ul>"
    parts.append(_section("Headline numbers", body, "gm-headline"))
    speed = cpu_speed_html(a)
    if speed:
        parts.append(_section("The CPU's speed", speed, "gm-cpu-speed-section"))
    diagnostics = diagnostics_html(a.pitfalls)
    if diagnostics:
        parts.append(_section("Diagnostics", diagnostics))
    steps = steps_html(a)
    if steps:
        parts.append(_section("Steps", steps, "gm-steps"))
    if graphs:
        parts.append(_section("Per graph", graphs_html(graphs, getattr(a, "totals", None)), "gm-graphs"))
    graph_use = graph_use_html(a)
    if graph_use:
        parts.append(_section("How much ran as graphs, and what the graphs hold", graph_use, "gm-graph-use"))

    selection = data.selection
    tp = data.traced
    if tp is not None and selection is not None and data.full_view is not None:
        parts.append(_iterations(page, data.iteration_views))
        parts.append(_whole_run(page, tp, selection, data.full_view, data.activity, chosen=chosen,
                                windows=data.untraced_windows))
        if data.kernel_totals is not None:
            table = kernel_table_html(data.kernel_totals)
            if table:
                parts.append(_section("Kernels, eager vs graph", table, "gm-kernel-table"))
        parts.append(_topologies(page, a, data))
    else:
        parts.append(_section("Timeline", "<p class='note'>The trace has no pass; nothing to draw.</p>"))

    b = a.primary_break_even()
    # the prediction is drawn beside the measured break-even when it is of the same graph: the run's one replayed graph
    one_graph = sum(1 for g in graphs if g.replays) <= 1
    twin = measured_twin(prediction) if one_graph else None
    chart = page.chart("gm-break-even", html_charts.break_even_figure(b, twin) if b is not None else None)
    if chart:
        parts.append(_section("Break-even", chart, "gm-break-even-section"))
    if predicted and not lead:
        parts.append(_section(PREDICTION_TITLE, predicted, "gm-prediction"))
    chart = page.chart("gm-iteration-times", html_charts.iteration_time_figure(a.modes))
    if chart:
        parts.append(_section("Iteration times", chart))
    profile = cpu_profile_html(a.cpu_profile, data.profile_session if a.cpu_profile is not None else None)
    if profile:
        parts.append(_section("CPU profile", profile, "gm-profile-section"))
    return _page(title, "".join(parts), {"plots": page.plots}, page.blob), selection


def _page(title: str, body: str, data: dict[str, Any], blob: BlobWriter) -> str:
    assets = resources.files("graphmode.reports") / "assets"
    scripts = "".join((assets / name).read_text(encoding="utf-8") for name in ("timeline.js", "charts.js", "report.js"))
    css = "".join((assets / name).read_text(encoding="utf-8") for name in ("report.css", "verdict.css"))
    spans = base64.b64encode(blob.gzip()).decode("ascii")
    plotly = plotly_bundle(trace_types(p["figure"] for p in data["plots"] if p["kind"] == "plotly"))
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
        f"<style>{css}</style></head><body>{body}"
        f"<script type='application/json' id='gm-data'>{_script_json(data)}</script>"
        f"<script type='application/octet-stream' id='gm-spans'>{spans}</script>"
        f"<script type='application/octet-stream' id='gm-plotly'>{plotly.gzip_b64}</script>"
        f"<script>{scripts}</script></body></html>"
    )


def write_html(a: TraceAnalysis, data: PageData, out: Path, *, chosen: bool = False) -> HtmlSummary:
    """The page (render_html) written to `out`."""
    text, sel = render_html(a, data, chosen=chosen)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return HtmlSummary(out, out.stat().st_size, sel.drawn if sel else 0, sel.total if sel else 0,
                       word(sel.note) if sel is not None and sel.note is not None else "")
