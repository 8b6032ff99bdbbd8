"""`graphmode view` on the traces of a multi-process job: one self-contained HTML page (plotly.js inlined).

The text paints first. The rank timelines are drawn on a canvas by the single-run page's renderer
(assets/timeline.js; spans as columns in one gzip blob, timeline_plot.py), each in a task of its own; plotly.js
(gzipped in the page, started in steps: html_plotly.py) draws the heatmap when the browser is idle
(assets/charts.js). Timelines are as tall as their lanes: LANE_PX each.

The page: the headline and hang risks, the ranks and graphs tables, GPU activity of every rank on
the job's one time axis (a heatmap: ranks x time bins, bounded whatever the number of ranks),
the spans of up to MAX_TIMELINE_RANKS ranks stacked on that axis, and one replay of each of those
ranks' graph aligned on the job's clock, so that a collective ending at the same moment on every rank is
seen ending at the same x. What it draws from the rank traces (read one at a time, only what is drawn kept)
comes from analyzers.rank_page.
Trace strings reach the page escaped (html.escape) and inside one JSON block that no string can close.
"""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.analyzers.collectives import NCCL_SQL
from graphmode.analyzers.rank_page import HEAT_BINS, RankPageData
from graphmode.analyzers.rank_results import RankSetAnalysis
from graphmode.reports.html_plotly import plotly_bundle, trace_types
from graphmode.reports.html_sections import verdict_kind
from graphmode.analyzers.timeline import FIELDS, TEXT_FIELDS, Lane, SpanGroup, TimelineView
from graphmode.reports.names import short_source
from graphmode.reports.notes import HANG_RISK_ADVICE, word, words
from graphmode.reports.ranks import _count, _spread, headline
from graphmode.reports.timeline_plot import BlobWriter, encode_view
from graphmode.reports.units import human_ns

output_file_extension = "html"
LANE_PX = 30  # height of one rank's lane in the timelines: its label and its bars fit without overlapping
LABEL_PX = 20  # rank labels at least this far apart
MAX_HEAT_PX = 960  # the heatmap's rows together; more ranks than fit at LANE_PX share it
MARGIN_T, MARGIN_B = 70, 50  # the title and the legend above the lanes, the axis and its title below
COLOURS = {"NCCL collective": "#d62728", "graph": "#cc79a7", "kernel": "#009e73", "memcpy": "#e69f00", "memset": "#f0e442"}


_WAIT = "<p class='hint'>(chart: drawn once plotly.js has started)</p>"
_WAIT_CANVAS = "<p class='hint'>(timeline: drawn in a moment)</p>"
_HOVER = "Point at a span for its name and duration; wheel: zoom, drag: pan, double-click: back to the whole view."


@dataclass(frozen=True)
class RanksHtmlSummary:
    path: Path
    bytes: int
    ranks_drawn: int
    note: str



def _safe_json(value: Any) -> str:
    """JSON that cannot end the <script> element it sits in (as reports/html.py does for its page)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=lambda o: o.item())
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _timeline(rows: list[tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]], lanes: list[str], title: str,
              origin: str, blob: BlobWriter, extent: tuple[int, int] | None = None) -> dict[str, Any]:
    """The spec of one canvas timeline (assets/timeline.js, the single-run page's renderer): a lane per rank, a
    colour per category; rows are (lane, start, end, category, name), ns from the origin; it opens on `extent` (ns,
    default: its spans'). Its columns go to `blob`.
    Drawn on a canvas rather than by plotly's WebGL traces: their first chart was one 260-350 ms main-thread task."""
    lane = np.concatenate([np.full(r[1].size, int(r[0]), np.int32) for r in rows])
    start = np.concatenate([np.asarray(r[1]) for r in rows]).round().astype(np.int64)
    end = np.concatenate([np.asarray(r[2]) for r in rows]).round().astype(np.int64)
    cats = np.concatenate([np.asarray(r[3], dtype=object) for r in rows])
    names = np.concatenate([np.asarray(r[4]).astype(str) for r in rows])
    order = np.lexsort((start, lane))  # the renderer reads spans sorted by (lane, start)
    lane, start, end, cats, names = lane[order], start[order], np.maximum(end[order], start[order]), cats[order], names[order]
    present = [c for c in COLOURS if np.any(cats == c)]
    group = np.zeros(start.size, np.int32)
    for k, c in enumerate(present):
        group[cats == c] = k
    uniq, name_id = np.unique(names, return_inverse=True)
    zeros = np.zeros(start.size, np.int64)
    if extent is None:
        extent = (int(start.min()), int(end.max())) if start.size else (0, 1)
    view = TimelineView(
        lanes=[Lane(str(k), label, "gpu") for k, label in enumerate(lanes)],
        groups=[SpanGroup("gpu", c) for c in present], names=uniq.tolist(), origin_ns=0,
        extent_ns=extent, lane=lane, start_ns=start, end_ns=end, group=group, name_id=name_id.astype(np.int32),
        correlation_id=zeros, outside=np.zeros(start.size, bool), fields={f: zeros for f in FIELDS},
        text_codes={f: np.zeros(start.size, np.int32) for f in TEXT_FIELDS},
        text_tables={f: [[""] for _ in present] for f in TEXT_FIELDS})
    spec = encode_view(view, blob, div="", title=title, origin=origin, initial=extent, full=extent)
    for g in spec["hover"]["groups"]:  # this page's colours and words, not the single-run page's
        g["colour"], g["legend"] = COLOURS[g["label"]], g["label"]
    return spec


def _timeline_html(div: str, spec: dict[str, Any]) -> str:
    """Its title and legend (HTML text, painted with the page), the canvas's box, and a line for what is hovered."""
    keys = "".join(f"<span class='key'><i style='background:{g['colour']}'></i>{html.escape(g['legend'])} ({g['count']:,})</span>"
                   for g in spec["hover"]["groups"])
    return (f"<p class='chart-title'><b>{html.escape(spec['title'])}</b></p><p class='legend'>{keys}</p>"
            f"<div id='{div}' class='plot timeline'>{_WAIT_CANVAS}</div><p class='hint details' id='{div}-details'>{_HOVER}</p>")


def _rank_label(a: RankSetAnalysis, rank: int) -> str:
    s = a.rank(rank)
    host = s.identity.host if s else ""
    return f"rank {rank}" + (f" · {host}" if host and len(a.alignment.hosts) > 1 else "")


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_ranks_html(a: RankSetAnalysis, data: RankPageData) -> tuple[str, int, str]:
    """The page of a rank set's analysis and what its traces hold to draw (analyzers.rank_page.rank_page_data), how
    many ranks' spans it draws, and a note on what it left out."""
    heat, drawn, timeline, replay, note = data.heat, data.drawn, data.timeline, data.replay, "; ".join(words(data.notes))
    waits = {w.rank: w for w in a.waits}
    plots: list[dict[str, Any]] = []
    parts = [f"<h1>graphmode · {len(a.ranks)} ranks</h1><p class='sub'>{html.escape(a.source)}"
             + (" · <b>synthetic traces (built by a test or benchmark, not recordings)</b>"
                if any("synthetic" in s.identity.path for s in a.ranks) else "") + "</p>",
             f"<p class='headline verdict {verdict_kind(a)}' id='gm-verdict'>{html.escape(headline(a))}</p>"]
    for w in a.warnings:
        parts.append(f"<p class='warn'>warning: {html.escape(word(w))}</p>")
    for h in a.hang_risks:
        parts.append(f"<p class='risk'><b>hang risk · {html.escape(h.kind.replace('_', ' '))}</b>: {html.escape(word(h.facts))}"
                     f"<br>what to do: {html.escape(HANG_RISK_ADVICE[h.kind])}</p>")
    parts.append("<h2>Ranks</h2>" + _table(
        ["rank", "host", "GPU", "status", "graphs", "replays", "one-time", "saved", "net", "wait in collectives", "started last"],
        [[str(s.identity.rank), s.identity.host, s.identity.gpu_name, s.identity.status, str(s.graphs_built), f"{s.replays:,}",
          human_ns(s.one_time_ns), human_ns(s.saved_ns), human_ns(s.net_ns),
          human_ns(waits[s.identity.rank].wait_total_ns) if s.identity.rank in waits else "—",
          str(waits[s.identity.rank].last_arrivals) if s.identity.rank in waits else "—"] for s in a.ranks]))
    if a.graphs_across:
        parts.append("<h2>Graphs across ranks (min – median – max)</h2>" + _table(
            ["graph", "site", "ranks", "one-time cost", "saved / replay", "break-even", "replay", "collectives"],
            [[g.key, short_source(g.site), str(g.ranks), _spread(g.one_time), _spread(g.saved_per_replay),
              _spread(g.break_even, _count), _spread(g.replay), str(g.collectives)] for g in a.graphs_across]))
    al = a.alignment
    parts.append(f"<h2>Clocks</h2><p>{html.escape(al.method)}: {html.escape(word(al.note))}.</p>")
    t_ms = 1e6
    t0 = min(s.start_ns + a.offset_of(s.identity.rank) for s in a.ranks)
    span = (max(s.end_ns + a.offset_of(s.identity.rank) for s in a.ranks) - t0) / t_ms
    labels = [_rank_label(a, s.identity.rank) for s in a.ranks]
    area = min(LANE_PX * len(labels), MAX_HEAT_PX)
    every = max(1, math.ceil(len(labels) * LABEL_PX / area))  # past MAX_HEAT_PX, a label every few ranks
    plots.append({"div": "gm-heat", "figure": {"data": [{
        "type": "heatmap", "z": heat.round(3).tolist(), "x": list(np.linspace(0, span, HEAT_BINS, endpoint=False).round(4)),
        "y": labels, "colorscale": "Viridis", "zmin": 0, "zmax": 1,
        "colorbar": {"title": {"text": "GPU busy"}}, "hovertemplate": "%{y} · %{x:.2f} ms · busy %{z:.0%}<extra></extra>"}],
        "layout": {"title": {"text": "GPU activity of every rank on the job's time axis", "x": 0.01},
                   "height": MARGIN_T + MARGIN_B + area, "xaxis": {"title": {"text": "ms"}},
                   "yaxis": {"autorange": "reversed", "tickmode": "array", "tickvals": labels[::every], "ticktext": labels[::every]},
                   "margin": {"l": 200, "r": 140, "t": MARGIN_T, "b": MARGIN_B, "autoexpand": False}}}})  # r: the colour bar
    parts.append(f"<h2>Every rank on one time axis</h2><div id='gm-heat' class='plot'>{_WAIT}</div>")
    blob = BlobWriter()
    if timeline:
        lanes = [_rank_label(a, r) for r in drawn]
        spec = _timeline(timeline, lanes, f"GPU spans of {len(drawn)} of {len(a.ranks)} ranks", "the job's first traced moment", blob,
                         extent=(0, max(1, round(span * t_ms))))  # the heatmap's time axis
        plots.append({"div": "gm-timeline", "timeline": spec})
        parts.append(_timeline_html("gm-timeline", spec))
    if replay:
        ref = min(float(row[1].min()) for row in replay if row[1].size)
        rows = [(float(i), st - ref, en - ref, cat, names) for i, (_, st, en, cat, names) in enumerate(replay)]
        choice = data.replay_choice
        lanes = [_rank_label(a, a.ranks[row[0]].identity.rank) for row in replay]
        title = f"{choice[0] if choice else ''}, replay {choice[1] if choice else ''} of each rank, on the job's clock"
        spec = _timeline(rows, lanes, title, "the start of the earliest rank's replay", blob)
        plots.append({"div": "gm-replay", "timeline": spec})
        parts.append("<h2>One replay of each rank, aligned</h2><p class='hint'>A collective ends at the same moment on every "
                     "rank (it cannot end before the last rank's data arrived): its red bars end together; where one "
                     "starts earlier, that rank waited.</p>" + _timeline_html("gm-replay", spec))
    if note:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    if a.cannot_compute:
        parts.append("<h2>Not computed</h2><ul>" + "".join(f"<li>{html.escape(word(c))}</li>" for c in a.cannot_compute) + "</ul>")
    return _page(f"graphmode · {len(a.ranks)} ranks", "".join(parts), plots, blob), len(drawn), note


def _page(title: str, body: str, plots: list[dict[str, Any]], blob: BlobWriter) -> str:
    from importlib import resources

    assets = resources.files("graphmode.reports") / "assets"
    charts = (assets / "charts.js").read_text(encoding="utf-8")
    timeline_js = (assets / "timeline.js").read_text(encoding="utf-8")
    plotly = plotly_bundle(trace_types(p.get("figure") for p in plots))
    css = ("body{font-family:system-ui,sans-serif;margin:24px;max-width:1400px}table{border-collapse:collapse;margin:8px 0}"
           "td,th{border:1px solid #ddd;padding:3px 8px;font-size:13px;text-align:right}th{background:#f4f4f4}"
           "td:nth-child(2),td:nth-child(3){text-align:left}.headline{font-size:16px;padding:8px 12px;max-width:110ch}"
           ".warn,.risk{color:#b91c1c}.sub,.hint,.note{color:#555}.plot{width:100%}"
           ".timeline canvas{display:block;cursor:grab;touch-action:none}.chart-title{margin:16px 0 2px}"
           ".legend{margin:2px 0;font-size:13px}.key{margin-right:14px}"
           ".key i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}"
           ".details{min-height:1.3em;font-size:13px;overflow-wrap:anywhere}") + (assets / "verdict.css").read_text(encoding="utf-8")
    # After the frame that paints the text: the canvas timelines (each decoded and drawn in a task of its own), then
    # plotly's charts, when the browser is idle. window.graphmode is set once every chart and timeline has drawn (the
    # browser tests wait for it, as for the single-trace page).
    script = ("let begun=false;const begin=()=>{if(begun)return;begun=true;"
              "const d=JSON.parse(document.getElementById('gm-data').textContent);"
              "const views=d.plots.filter(p=>p.timeline);"
              "const timelines=async()=>{if(!views.length)return;"
              "const buf=await(await GMCharts.inflate('gm-spans')).arrayBuffer();"
              "for(const p of views){await GMCharts.idle();const el=document.getElementById(p.div);el.replaceChildren();"
              "const out=document.getElementById(p.div+'-details'),hint=out.textContent;"
              "const tl=new GMTimeline.Timeline(el,p.timeline,GMTimeline.decode(p.timeline,buf),{laneH:" + str(LANE_PX) + ","
              "onSelect:(f)=>{out.textContent=f?f.map(([k,v])=>k+': '+(typeof v==='string'?v:v.short)).join(' · '):hint;}});"
              "tl.draw();el.gmTimeline=tl;performance.mark('gm-chart-'+p.div);}};"
              "GMCharts.idle().then(timelines).then(()=>GMCharts.draw(d.plots.filter(p=>p.figure)))"
              ".then(()=>{window.graphmode={page:'ranks',plots:d.plots.map(p=>p.div)};})"
              ".catch((e)=>{window.graphmode={page:'ranks',error:String(e&&e.stack||e)};throw e;});};"
              "requestAnimationFrame(()=>setTimeout(begin,0));setTimeout(begin,1000);")
    spans = base64.b64encode(blob.gzip()).decode("ascii")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{css}</style></head><body>{body}"
            f"<script type='application/json' id='gm-data'>{_safe_json({'plots': plots})}</script>"
            f"<script type='application/octet-stream' id='gm-spans'>{spans}</script>"
            f"<script type='application/octet-stream' id='gm-plotly'>{plotly.gzip_b64}</script>"
            f"<script>{charts}</script><script>{timeline_js}</script><script>{script}</script></body></html>")


def write_ranks_html(a: RankSetAnalysis, data: RankPageData, out: Path) -> RanksHtmlSummary:
    text, drawn, note = render_ranks_html(a, data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return RanksHtmlSummary(out, out.stat().st_size, drawn, note)
