"""The terminal's short summary: one row per step and per graph, narrow enough for 80 columns without cutting a number
(the detail sections are behind `graphmode report --detail`). Computes nothing."""

from __future__ import annotations

from pathlib import PurePath

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmode.analyzers.results import BreakEven, GraphResult, Period, StepResult, TraceAnalysis
from graphmode.reports.names import cell


def _ns(ns: float | None) -> str:
    from graphmode.reports.terminal import human_ns

    return human_ns(ns)


def _be(b: BreakEven | None) -> str:
    """'7 [5, 10]': replays to pay back, with its 95% interval in brackets (the table's caption says so)."""
    if b is None:
        return "—"
    if b.never:
        return "never"
    if b.replays is None:
        return "—"
    if b.interval_low is None and not b.interval_high_never:
        return f"{b.replays:,}"
    high = "never" if b.interval_high_never else f"{b.interval_high:,}"
    return f"{b.replays:,} [{b.interval_low if b.interval_low is not None else '—'}, {high}]"


def _work(p: Period | None) -> str:
    return _ns(p.work.trimmed_mean) if p is not None and p.work is not None else "—"


def _graph_row(t: Table, g: GraphResult, indent: str = "") -> None:
    b = g.break_even
    t.add_row(f"{indent}graph {g.graph_id}", f"{g.replays:,}", _work(g.eager), _work(g.graph),
              _ns(b.saved_per_replay_ns) if b is not None else "—", _ns(g.cost.total_ns) if g.cost is not None else "—",
              _be(b) if g.status == "replayed" else g.status.replace("_", " "))


def _step_rows(t: Table, s: StepResult, by_id: dict[int, GraphResult]) -> None:
    t.add_row(Text(f"step {s.step_id}", style="bold"), f"{s.graphed_steps:,}", _ns(s.eager_ns), _ns(s.graphed_ns),
              _ns(s.saved_ns), _ns(s.one_time_ns), _be(s.break_even))
    for seg in s.segments:
        if seg.kind == "graph" and seg.graph_id in by_id:
            _graph_row(t, by_id[seg.graph_id], "  ")
        elif seg.kind == "eager":
            t.add_row("  eager", "", _ns(seg.eager.trimmed_mean if seg.eager else None),
                      _ns(seg.graphed.trimmed_mean if seg.graphed else None), _ns(seg.saved_ns), "", "")


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


def print_summary(console: Console, a: TraceAnalysis) -> None:
    """Steps (with their graphs and the eager work between them) and the other graphs, one row each."""
    if not a.graphs:
        return
    t = Table(title="Steps and graphs (trimmed means)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              caption="replays: graphed steps for a step; break-even: replays to pay back the one-time cost "
                      "[95% interval]", caption_justify="left")
    for col in ("", "replays", "eager", "graphed", "saved", "one-time", "break-even"):
        t.add_column(col, justify="left" if col == "" else "right", no_wrap=True)
    by_id = {g.graph_id: g for g in a.graphs}
    shown: set[int] = set()
    for s in a.steps:
        if len(s.graphs) > 1:
            _step_rows(t, s, by_id)
            shown.update(s.graphs)
    for g in a.graphs:
        if g.graph_id not in shown:
            _graph_row(t, g)
    console.print(t)
    for line in sites(a):
        console.print(Text(f"  {line}"))
