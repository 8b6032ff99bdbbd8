"""The page's steps table: each step that replays several graphs, its graphs and the eager work between them, as the
terminal's summary shows them (reports.summary_text). Computes nothing."""

from __future__ import annotations

import html

from graphmode.analyzers.results import TraceAnalysis
from graphmode.reports.summary_text import other_way_lines, step_cells
from graphmode.reports.units import human_ns


def _row(cells: list[str], cls: str = "") -> str:
    tds = "".join(f"<td class='num'>{html.escape(c)}</td>" if i else f"<th>{html.escape(c)}</th>" for i, c in enumerate(cells))
    return f"<tr class='{cls}'>{tds}</tr>"


def steps_html(a: TraceAnalysis) -> str:
    """'' unless a step replays several graphs or was compared with the same step run another way."""
    other = "".join(f"<p class='hint'>{html.escape(n)}</p>" for n in other_way_lines(a))
    steps = [s for s in a.steps if len(s.graphs) > 1]
    if not steps:
        return other
    by_id = {g.graph_id: g for g in a.graphs}
    head = "".join(f"<th>{h}</th>" for h in ("", "replays", "eager", "graphed", "saved", "one-time", "break-even"))
    body = "".join(_row(cells, kind) for s in steps for kind, cells in step_cells(s, by_id, "eager work between"))
    notes = []
    for s in steps:
        if s.invariant_residual_ns is not None and s.saved_ns:
            notes.append(f"step {s.step_id}: the graphs' savings ({human_ns(s.graphs_saved_ns)}) and the eager work's change "
                         f"({human_ns(s.remainder_saved_ns)}) add up to the step's {human_ns(s.saved_ns)} within "
                         f"{human_ns(abs(s.invariant_residual_ns))}")
        if s.basis == "predicted":
            notes.append(f"step {s.step_id}: ~ marks a predicted figure: no eager twin of its graphs ran, so each graph's eager "
                         "segment is its kernels launched one by one by the framework that made them, priced by the cost model "
                         "(the eager work between graphs runs eagerly in both modes)")
        if s.one_time_basis == "statement":
            notes.append(f"step {s.step_id}: its one-time cost is the statement at {s.one_time_statement} that made its "
                         "graphs, warm-ups included, as the run without CUPTI timed it")
        elif s.one_time_basis == "statement_corrected":
            notes.append(f"step {s.step_id}: its one-time cost is the statement at {s.one_time_statement} that made its "
                         "graphs, warm-ups included, as the one traced run timed it, the tracer's calibrated cost of its "
                         "launches, captures and line stamps taken off")
    hint = "".join(f"<p class='hint'>{html.escape(n)}</p>" for n in notes)
    return (f"<table class='steps'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            "<p class='hint'>Trimmed means; break-even: replays (steps) to pay back the one-time cost [95% interval]. "
            "Each graph's saving is its own segment of the step: its eager twin's span less its replay's.</p>" + hint + other)
