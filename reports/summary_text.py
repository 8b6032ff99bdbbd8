"""The terminal's short summary: one row per step and per graph, narrow enough for 80 columns without cutting a number
(the detail sections are behind `graphmode report --detail`). Computes nothing."""

from __future__ import annotations

from pathlib import PurePath

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmode.analyzers.results import BreakEven, GraphResult, Period, StepResult, TraceAnalysis
from graphmode.reports.graphs_text import interval
from graphmode.reports.names import cell
from graphmode.reports.units import human_ns


def break_even_cell(b: BreakEven | None) -> str:
    """'7 [5, 10]': replays to pay back, with its 95% interval in brackets (the table's caption says so)."""
    if b is None:
        return "—"
    if b.never:
        return "never"
    if b.replays is None:
        return "—"
    return f"{b.replays:,} {interval(b)}".rstrip()


def _work(p: Period | None) -> str:
    return human_ns(p.work.trimmed_mean) if p is not None and p.work is not None else "—"


PREDICTED_MARK = "~"  # a predicted figure (no eager twin: analyzers.counterfactual); the caption says so


def _predicted(ns: float | None) -> str:
    return PREDICTED_MARK + human_ns(ns) if ns is not None else "—"


def graph_cells(g: GraphResult, indent: str = "") -> list[str]:
    """One graph's row: name, replays, eager, graphed, saved, one-time, break-even (or its status). A graph with no eager
    twin whose saving is predicted shows its eager and saved figures marked '~'."""
    b = g.break_even
    cf = g.counterfactual
    predicted = cf is not None and b is not None and b.basis == "predicted"
    eager = _predicted(cf.eager.ns) if predicted and cf is not None else _work(g.eager)
    saved = "—" if b is None else _predicted(b.saved_per_replay_ns) if predicted else human_ns(b.saved_per_replay_ns)
    return [f"{indent}graph {g.graph_id}", f"{g.replays:,}", eager, _work(g.graph), saved,
            human_ns(g.cost.total_ns) if g.cost is not None else "—",
            break_even_cell(b) if g.status == "replayed" else g.status.replace("_", " ")]


def step_cells(s: StepResult, by_id: dict[int, GraphResult], eager_label: str = "eager") -> list[tuple[str, list[str]]]:
    """A step's rows, as (kind, cells): the step, then each of its graphs and each eager stretch between them, in the
    step's order. The terminal and the page (reports.steps_html) show the same rows."""
    est = _predicted if s.basis == "predicted" else human_ns
    rows = [("step", [f"step {s.step_id}", f"{s.graphed_steps:,}", est(s.eager_ns), human_ns(s.graphed_ns), est(s.saved_ns),
                      human_ns(s.one_time_ns), break_even_cell(s.break_even)])]
    for seg in s.segments:
        if seg.kind == "graph" and seg.graph_id in by_id:
            rows.append(("graph", graph_cells(by_id[seg.graph_id], "  ")))
        elif seg.kind == "eager":
            rows.append(("eager", [f"  {eager_label}", "", human_ns(seg.eager.trimmed_mean if seg.eager else None),
                                   human_ns(seg.graphed.trimmed_mean if seg.graphed else None), human_ns(seg.saved_ns), "", ""]))
    return rows


def sites(a: TraceAnalysis) -> list[str]:
    """'graphs 1, 4: captured at train.py:54' lines, one per line of code that made graphs (the file name printable
    and shortened, reports.names.cell)."""
    by_site: dict[str, list[int]] = {}
    for g in a.graphs:
        if g.site:
            loc = g.site.split(" ")[0]
            file, _, line = loc.rpartition(":")
            how = "captured" if g.origin == "capture" else "built"
            by_site.setdefault(f"{how} at {cell(f'{PurePath(file).name}:{line}')}", []).append(g.graph_id)
    return [f"graph{'s' if len(ids) > 1 else ''} {', '.join(str(i) for i in ids)}: {where}" for where, ids in by_site.items()]


_PERIOD_WORDS = {"corrected": "in this run, the tracer's calibrated cost taken off", "timing": "by the run without CUPTI",
                 "window": "in this run's untraced windows"}


def other_way_lines(a: TraceAnalysis) -> list[str]:
    """One sentence per step compared with the same step run another way in the program (analyzers.results.OtherWay):
    measured at step level, with other kernels than its graphs'. The terminal and the page show the same words."""
    out = []
    for s in a.steps:
        o = s.other_way
        if o is None:
            continue
        file, _, line = o.line.rpartition(":")
        where = cell(f"{PurePath(file).name}:{line}")
        measured = _PERIOD_WORDS.get(o.period_source, f"as the {o.period_source} run traced it")
        pays = (f"at that saving its one-time cost ({human_ns(s.one_time_ns)}) pays back after {o.break_even:,} replays"
                if o.break_even is not None and s.one_time_ns is not None else
                "at that saving it never pays back" if o.saved_ns <= 0 else "")
        kernels = f"{o.eager.n:,} steps of {o.eager_kernels:,} kernels, against the graph's {o.graph_kernels:,}" \
            if o.eager_kernels else f"{o.eager.n:,} steps"
        out.append(f"{s.label[0].upper()}{s.label[1:]} also ran without graphs at {where} ({kernels}): {human_ns(o.eager_ns)} "
                   f"a step against {human_ns(o.graphed_ns)} graphed, {human_ns(o.saved_ns)} saved a step, measured "
                   f"({measured}); its kernels are not the graph's, so this includes whatever else that way changed "
                   f"(a compiler's fusions, other libraries){'; ' + pays if pays else ''}.")
    return out


def print_summary(console: Console, a: TraceAnalysis) -> None:
    """Steps (with their graphs and the eager work between them) and the other graphs, one row each."""
    if not a.graphs:
        return
    caption = "replays: graphed steps for a step; break-even: replays to pay back the one-time cost [95% interval]"
    if any(g.counterfactual is not None for g in a.graphs):
        caption += f"; {PREDICTED_MARK}: predicted (no eager twin ran: its kernels priced by the cost model)"
    t = Table(title="Steps and graphs (trimmed means)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
              caption=caption, caption_justify="left")
    for col in ("", "replays", "eager", "graphed", "saved", "one-time", "break-even"):
        t.add_column(col, justify="left" if col == "" else "right", no_wrap=True)
    by_id = {g.graph_id: g for g in a.graphs}
    shown: set[int] = set()
    for s in a.steps:
        if len(s.graphs) > 1:
            for kind, cells in step_cells(s, by_id):
                t.add_row(Text(cells[0], style="bold") if kind == "step" else cells[0], *cells[1:])
            shown.update(s.graphs)
    for g in a.graphs:
        if g.graph_id not in shown:
            t.add_row(*graph_cells(g))
    console.print(t)
    for line in sites(a):
        console.print(Text(f"  {line}"))
    for line in other_way_lines(a):
        console.print(Text(line))
