"""The headline in words: one sentence for the analysis's one verdict (analyzers.headline), the same in the terminal,
the JSON (`headline.sentence`) and the page. Computes nothing."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from graphmode.analyzers.headline import headline_of
from graphmode.analyzers.results import Headline, TraceAnalysis
from graphmode.reports.graphs_text import FRAMEWORK_WORDS, graph_name, interval
from graphmode.reports.units import human_ns

# the page colours its verdict box by these classes (reports/assets/verdict.css); one per analyzers.headline verdict
VERDICT_KIND = {"pays_back": "paid-back", "not_yet": "not-yet", "never": "never", "unknown": "unknown", "no_graph": "no-graph"}
REASONS = {
    "no_eager_twin": "no eager run of its work was found, so what it saves is unknown",
    "no_one_time": "its one-time cost was not recorded, so its break-even is unknown",
    "capture_failed": "the capture failed",
    "never_replayed": "it was never replayed",
    "never_instantiated": "it was never instantiated",
    "not_instantiated": "it was never instantiated",
    "built_before_tracing": "it was built before tracing started",
    "no_graph_built": "no CUDA graph was built",
    "no_baseline": "no eager baseline was recorded",
}


def predicted_periods(a: TraceAnalysis, h: Headline) -> str:
    """What a predicted saving rests on: the measured replay, and the counterfactual eager call of the graphs' kernels."""
    cfs = [g.counterfactual for g in a.graphs if g.graph_id in h.graph_ids and g.counterfactual is not None]
    replay = "graphed step" if h.subject == "step" else "replay"
    if not cfs:
        return f"eager {human_ns(h.eager_ns)}, {replay} {human_ns(h.graphed_ns)} measured"
    kernels = sum(c.kernels + c.other_nodes for c in cfs)
    who = FRAMEWORK_WORDS.get(cfs[0].framework, cfs[0].framework)
    eager = sum(c.eager.ns for c in cfs)
    lo, hi = sum(c.eager.low_ns for c in cfs), sum(c.eager.high_ns for c in cfs)
    if h.subject == "step":
        return (f"graphed step {human_ns(h.graphed_ns)} measured; its graphs' {kernels:,} kernels launched one by one by {who} "
                f"would take {human_ns(eager)} [{human_ns(lo)}–{human_ns(hi)}] where their replays took {human_ns(sum(c.graphed_ns for c in cfs))}, "
                "by the cost model")
    return (f"{replay} {human_ns(h.graphed_ns)} measured; its {kernels:,} kernels launched one by one by {who} would take "
            f"{human_ns(eager)} [{human_ns(lo)}–{human_ns(hi)}], by the cost model")


def _interval(h: Headline) -> str:
    text = interval(h)
    return f" {text} (95% interval)" if text else ""


SOURCE_WORDS = {"timing": "untraced, timing run", "single": "one traced run",
                "corrected": "one traced run, the tracer's calibrated cost taken off",
                "window": "untraced windows of the one traced run"}


def _source(h: Headline) -> str:
    return SOURCE_WORDS.get(h.period_source, f"{h.period_source} run") if h.period_source else ""


def _subject(a: TraceAnalysis, h: Headline) -> str:
    by_id = {g.graph_id: g for g in a.graphs}
    if h.subject == "step":
        sites = {by_id[g].site.split(" ")[0] for g in h.graph_ids if g in by_id and by_id[g].site}
        where = ""
        if len(sites) == 1:
            file, _, line = next(iter(sites)).rpartition(":")
            where = f", made at {PurePath(file).name}:{line}"
        return f"The step replaying graphs {', '.join(str(g) for g in h.graph_ids)}{where}"
    if h.subject == "graph" and h.graph_ids:
        g = by_id.get(h.graph_ids[0])
        return (graph_name(g) if g is not None else f"graph {h.graph_ids[0]}").capitalize()
    return "Graph mode"


def sentence(a: TraceAnalysis) -> str:
    """The headline sentence of an analysis (analyze() always sets its headline; one built by hand gets it here)."""
    h = a.headline if a.headline is not None else headline_of(a)
    who = _subject(a, h)
    per = "a step" if h.subject == "step" else "per iteration" if h.subject == "graph_mode" else "per replay"
    replay = "graphed step" if h.subject == "step" else "replay"
    cost = f"{human_ns(h.one_time_ns)} once" if h.one_time_ns is not None else "an unknown one-time cost"
    if h.subject == "step" and h.one_time_statement:
        file, _, line = h.one_time_statement.rpartition(":")
        cost += f" (the statement at {PurePath(file).name}:{line}, warm-ups included)"
    if h.subject == "prediction":
        if h.break_even is None:
            return "No CUDA graph was built; no step was found to predict one for."
        figures = (f"would save {human_ns(h.saved_ns)} per iteration (eager {human_ns(h.eager_ns)}, replay "
                   f"{human_ns(h.graphed_ns)}), cost {human_ns(h.one_time_ns)} once and pay back after {h.break_even:,} "
                   f"replay{'s' if h.break_even != 1 else ''}{_interval(h)}")
        if h.shapes > 1:  # a step at several input shapes: the first shape's figures, and all the shapes' graphs once
            total = f"; all {h.shapes} graphs cost {human_ns(h.shapes_one_time_ns)} once" if h.shapes_one_time_ns is not None else ""
            return f"No CUDA graph was built. Predicted: its step runs at {h.shapes} input shapes, one graph each; the first shape's {figures}{total}."
        return f"No CUDA graph was built. Predicted: a graph of its step {figures}."
    if h.verdict == "never" and h.reason == "never_replayed":
        return f"{who} was built but never replayed: its {human_ns(h.one_time_ns)} one-time cost bought nothing in this run."
    if h.verdict == "no_graph":
        what = REASONS.get(h.reason, h.reason.replace("_", " "))
        if h.subject == "graph":
            return f"{who}: {what}" + (f"; it cost {human_ns(h.one_time_ns)} to build." if h.one_time_ns else ".")
        return f"No graph was replayed: {what}."
    if h.verdict == "unknown" and h.subject == "graph_mode":
        return "No eager-vs-graph comparison in this trace (no eager baseline)" + (
            f"; graphs cost {human_ns(h.one_time_ns)} to build." if h.one_time_ns else ".")
    if h.verdict == "unknown":
        what = REASONS.get(h.reason, h.reason.replace("_", " "))
        times = f"{h.run_replays:,} time{'s' if h.run_replays != 1 else ''}"
        return (f"{who} was replayed {times} at {human_ns(h.graphed_ns)} a {replay}; {what}"
                + (f" (it cost {human_ns(h.one_time_ns)} to build)." if h.one_time_ns else "."))
    periods = f"eager {human_ns(h.eager_ns)}, {replay} {human_ns(h.graphed_ns)}"
    if _source(h):
        periods += f"; {_source(h)}"
    if h.verdict == "never" and h.basis == "predicted":
        return (f"{who} does not pay off, predicted: {predicted_periods(a, h)}, so it never pays back its "
                f"{human_ns(h.one_time_ns)} one-time cost.")
    if h.verdict == "never":
        return (f"{who} does not pay off: {replay} {human_ns(h.graphed_ns)} against eager {human_ns(h.eager_ns)}, so it never pays "
                f"back its {human_ns(h.one_time_ns)} one-time cost.")
    if h.subject == "graph_mode":
        text = f"Graph mode saves {human_ns(h.saved_ns)} per iteration vs {h.baseline}"
        if h.saved_per_kernel_ns is not None:
            text += f" ({human_ns(h.saved_per_kernel_ns)} per kernel)"
        text += f", costs {human_ns(h.one_time_ns)} to build" if h.one_time_ns is not None else ", build cost unknown"
    elif h.basis == "predicted":
        text = f"{who} saves about {human_ns(h.saved_ns)} {per}, predicted ({predicted_periods(a, h)}), costs {cost}"
    else:
        text = f"{who} saves {human_ns(h.saved_ns)} {per} ({periods}), costs {cost}"
    unit = "steps" if h.subject == "step" else "replays"
    assert h.break_even is not None
    text += f", pays back after {h.break_even:,} {unit if h.break_even != 1 else unit[:-1]}{_interval(h)}"
    if h.verdict == "not_yet":
        text += f"; this run made only {h.run_replays:,}"
    if h.net_ns is not None and h.subject != "graph_mode":
        text += f"; net {'saving' if h.net_ns >= 0 else 'loss'} in this run {human_ns(abs(h.net_ns))}"
    return text + "."


def headline_dict(a: TraceAnalysis) -> dict[str, Any] | None:
    """The JSON `headline`: the analysis's verdict and figures, with its sentence and the page's class."""
    import dataclasses

    h = a.headline
    if h is None:
        return None
    out = dataclasses.asdict(h)
    out["graph_ids"] = list(h.graph_ids)
    out["sentence"] = sentence(a)
    return out
