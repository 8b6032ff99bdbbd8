"""The page's prediction section (analyzers.predict): the same tables as the terminal report, as HTML. Computes
nothing."""

from __future__ import annotations

import html

from graphmode.analyzers.results import Prediction, RegionPrediction
from graphmode.reports.prediction import (advice_text, graph_line, memory_unknown_text, shape_group_text, to_eager_rows,
                                         to_graph_rows)
from graphmode.reports.notes import word
from graphmode.reports.pitfall_words import BREAKER_ADVICE


def _table(regions: list[RegionPrediction], rows: list[tuple[str, list[str]]]) -> str:
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(r.label)}</th>" for r in regions) + "</tr>"
    body = "".join("<tr><th>" + html.escape(name) + "</th>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
                   for name, cells in rows)
    return f"<table class='cells gm-prediction'>{head}{body}</table>"


def prediction_html(p: Prediction | None) -> str:
    """The section body ('' without a prediction): model, the to-graph and to-eager tables, each region's
    graph, capture breakers and notes."""
    if p is None or not (p.regions or p.notes):
        return ""
    if not p.regions:  # nothing predicted: why, and how to mark the step
        return "".join(f"<p class='note'>{html.escape(word(n))}</p>" for n in p.notes)
    out = []
    model = f"cost model: {p.model_gpu}, driver {p.model_driver}" if p.model_gpu else "no cost model: measured rows only"
    out.append(f"<p class='hint'>What a CUDA graph would cost and save, predicted from the eager work ({html.escape(model)}); "
               "95% intervals in brackets.</p>")
    if p.model_note is not None:
        out.append(f"<p class='note'>{html.escape(word(p.model_note))}</p>")
    to_graph = [r for r in p.regions if r.direction == "to_graph"]
    if to_graph:
        out.append(_table(to_graph, to_graph_rows(to_graph)))
        out.append("<ul class='hint'>" + "".join(f"<li>{html.escape(r.label)}: {html.escape(graph_line(r))} ({html.escape(word(r.basis))})</li>"
                                               for r in to_graph) + "</ul>")
        advice = [f"<li><b>what to capture:</b> {html.escape(r.label)}: {html.escape(t)}</li>" for r in to_graph if (t := advice_text(r))]
        advice += [f"<li><b>per shape:</b> {html.escape(shape_group_text(g))}</li>" for g in p.shape_groups]
        if text := memory_unknown_text(to_graph):
            advice.append(f"<li><b>memory:</b> {html.escape(text)}</li>")
        if advice:
            out.append("<ul class='gm-capture-advice'>" + "".join(advice) + "</ul>")
    to_eager = [r for r in p.regions if r.direction == "to_eager"]
    if to_eager:
        out.append("<p class='hint'>Graphs run without an eager twin: what the same work would cost launched eagerly.</p>")
        out.append(_table(to_eager, to_eager_rows(to_eager)))
    items = []
    for r in p.regions:
        for b in r.breakers:
            where = f" at {b.where}" if b.where else ""
            items.append(f"<li><b>would break the capture:</b> {html.escape(r.label)}: {html.escape(b.api)} ({html.escape(b.kind)}, "
                         f"{b.calls:,} over {r.iterations:,} iterations){html.escape(where)}. {html.escape(BREAKER_ADVICE[b.kind])}</li>")
        items += [f"<li>{html.escape(r.label)}: {html.escape(word(n))}</li>" for n in r.notes]
    items += [f"<li>{html.escape(word(n))}</li>" for n in p.notes]
    if items:
        out.append("<ul class='warn'>" + "".join(items) + "</ul>")
    return "".join(out)


def measured_twin(p: Prediction | None) -> RegionPrediction | None:
    """The to-graph region whose graph this trace also built and measured (the break-even chart draws its
    prediction beside the measurement); None if there is none or it has no predicted figures."""
    if p is None:
        return None
    for r in p.regions:
        if (r.direction == "to_graph" and r.measured_one_time_ns is not None and r.one_time is not None
                and r.replay_period is not None):
            return r
    return None
