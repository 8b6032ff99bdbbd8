"""The run's one verdict, computed once (docs/metrics.md, "The headline"): what the headline is about (a step of
several graphs, one graph, graph mode of a built-in workload, or a prediction where no graph was built), its
figures, and a verdict every view renders the same way. Numbers and kinds only: reports/headline.py words it.

Verdicts:
- `pays_back`: a replay (or graphed step) saves time and this run replayed it at least its break-even count;
- `not_yet`: it saves time, but this run replayed it fewer times than its break-even;
- `never`: a replay is not faster than the eager work it replaces, or the graph was built and never replayed;
- `unknown`: graphs were replayed but no saving could be measured (no eager twin, no one-time cost);
- `no_graph`: no graph was made or run (none built, a failed capture, never instantiated).
"""

from __future__ import annotations

import dataclasses

from graphmode.analyzers.results import BreakEven, GraphResult, Headline, RegionPrediction, StepResult, TraceAnalysis

VERDICTS = ("pays_back", "not_yet", "never", "unknown", "no_graph")


def _clamped(x: float | None) -> float | None:
    return max(0.0, x) if x is not None else None


def _verdict(b: BreakEven | None, run_replays: int) -> tuple[str, str]:
    if b is None or b.eager_ns is None:
        return "unknown", "no_eager_twin"
    if b.never:
        return "never", ""
    if b.replays is None:
        return "unknown", "no_one_time" if b.one_time_ns is None else "no_eager_twin"
    return ("pays_back" if run_replays >= b.replays else "not_yet"), ""


def _from_break_even(subject: str, step_id: int | None, ids: tuple[int, ...], b: BreakEven | None, run_replays: int,
                     one_time: float | None, source: str, statement: str = "", per_kernel: float | None = None,
                     saved: float | None = None, net: float | None = None) -> Headline:
    verdict, reason = _verdict(b, run_replays)
    return Headline(
        verdict=verdict, subject=subject, step_id=step_id, graph_ids=ids, baseline=b.baseline if b is not None else "",
        eager_ns=b.eager_ns if b is not None else None, graphed_ns=b.graph_ns if b is not None else None,
        saved_ns=saved if saved is not None else (b.saved_per_replay_ns if b is not None else None),
        saved_per_kernel_ns=per_kernel, one_time_ns=_clamped(one_time),
        break_even=b.replays if b is not None else None, interval_low=b.interval_low if b is not None else None,
        interval_high=b.interval_high if b is not None else None,
        interval_high_never=b.interval_high_never if b is not None else False, run_replays=run_replays,
        net_ns=net, period_source=source, one_time_statement=statement, reason=reason,
        basis=b.basis if b is not None and b.eager_ns is not None else "")


def _none(subject: str, reason: str, ids: tuple[int, ...] = (), one_time: float | None = None,
          prediction: RegionPrediction | None = None) -> Headline:
    p = prediction
    return Headline(
        verdict="no_graph", subject=subject, step_id=None, graph_ids=ids, baseline="",
        eager_ns=p.eager_period.ns if p is not None and p.eager_period is not None else None,
        graphed_ns=p.replay_period.ns if p is not None and p.replay_period is not None else None,
        saved_ns=p.saved_per_iteration.ns if p is not None and p.saved_per_iteration is not None else None,
        saved_per_kernel_ns=None,
        one_time_ns=_clamped(p.one_time.ns if p is not None and p.one_time is not None else one_time),
        break_even=p.break_even if p is not None else None, interval_low=p.break_even_low if p is not None else None,
        interval_high=p.break_even_high if p is not None else None,
        interval_high_never=p.break_even_high_never if p is not None else False, run_replays=0, net_ns=None,
        period_source="", one_time_statement="", reason=reason)


def _step(s: StepResult) -> Headline:
    b = s.break_even
    net = s.saved_in_run_ns - s.one_time_ns if s.saved_in_run_ns is not None and s.one_time_ns is not None else None
    h = _from_break_even("step", s.step_id, s.graphs, b, s.graphed_steps, s.one_time_ns, s.period_source,
                         s.one_time_statement if s.one_time_basis.startswith("statement") else "", saved=s.saved_ns, net=net)
    # the step's own periods where no break-even was computed (no eager twin: the graphed step is still measured)
    return dataclasses.replace(h, eager_ns=h.eager_ns if h.eager_ns is not None else s.eager_ns,
                               graphed_ns=h.graphed_ns if h.graphed_ns is not None else s.graphed_ns)


def _graph(g: GraphResult) -> Headline:
    if g.status != "replayed":
        h = _none("graph", g.status, (g.graph_id,), g.cost.total_ns if g.cost is not None else None)
        # built and paid for, never replayed: it never pays back (a failed capture made no graph)
        return dataclasses.replace(h, verdict="never") if g.status == "never_replayed" else h
    b = g.break_even
    one = g.cost.total_ns if g.cost is not None else None
    net = g.saved_in_run_ns - one if g.saved_in_run_ns is not None and one is not None else None
    source = g.eager.run if g.eager is not None else (g.graph.run if g.graph is not None else "")
    h = _from_break_even("graph", None, (g.graph_id,), b, b.run_replays if b is not None else g.replays, one, source,
                         net=net)
    if h.graphed_ns is None and g.graph is not None and g.graph.work is not None:
        h = dataclasses.replace(h, graphed_ns=g.graph.work.trimmed_mean)
    return h


def headline_of(a: TraceAnalysis) -> Headline:
    """The headline of one analysis: a multi-graph step first, else the first graph of a script, else graph mode of
    a built-in workload, else the prediction of an eager-only run."""
    multi = next((s for s in a.steps if len(s.graphs) > 1), None)
    if multi is not None:
        return _step(multi)
    if a.graphs:
        return _graph(a.graphs[0])
    b = a.primary_break_even()
    if a.mode("graph") is not None and b is not None:
        saved = a.primary_overhead_saved()
        # a runner trace's one step (analyzers.steps.runner_step) holds its one-time cost and period source; an
        # analysis built by hand may have none
        step = next((s for s in a.steps if s.break_even == b), None)
        one = step.one_time_ns if step is not None else (sum(c.total_ns for c in a.graph_costs) if a.graph_costs else None)
        source = step.period_source if step is not None else next((m.wall_source for m in a.modes if m.mode == "graph"), "")
        h = _from_break_even("graph_mode", None, (), b, b.run_replays, one, source,
                             per_kernel=saved.wall_per_kernel_ns if saved is not None else None,
                             saved=saved.wall_ns if saved is not None else None)
        return h
    failed = any(p.kind == "capture_failed" for p in a.pitfalls) if a.pitfalls else False
    g_mode = a.mode("graph")
    if g_mode is not None and not failed:  # graph mode ran, with nothing to compare it with
        h = _none("graph_mode", "no_baseline", one_time=sum(c.total_ns for c in a.graph_costs) if a.graph_costs else None)
        return dataclasses.replace(h, verdict="unknown", run_replays=g_mode.iterations)
    region = next((r for r in (a.prediction.regions if a.prediction is not None else ()) if r.direction == "to_graph"), None)
    if region is not None:
        h = _none("prediction", "no_graph_built", prediction=region)
        # a step at several input shapes: one graph per shape (analyzers.predict's shape groups), the headline's
        # figures its first shape's, with how many shapes and what all their graphs cost once
        group = next((g for g in a.prediction.shape_groups if region.label in g.labels), None) if a.prediction else None
        if group is not None:
            h = dataclasses.replace(h, shapes=group.shapes,
                                    shapes_one_time_ns=_clamped(group.one_time.ns) if group.one_time is not None else None)
        return h
    return _none("none", "capture_failed" if failed else "no_graph_built")
