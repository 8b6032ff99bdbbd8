"""The per-graph answer of a script trace in words and in a table (analysis.graphs). Computes nothing."""

from __future__ import annotations

from pathlib import PurePath

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmode.analyzers.results import BreakEven, GraphResult, Headline, Period, TraceAnalysis
from graphmode.reports.names import cell, printable
from graphmode.reports.notes import word

BOUND_WORDS = {"gpu": "GPU-bound", "cpu": "CPU-bound", "mixed": "CPU/GPU-bound in turn", "single": "one run",
               "unknown": "bound unknown"}


def _ns(ns: float | None) -> str:
    from graphmode.reports.terminal import human_ns

    return human_ns(ns)


def graph_name(g: GraphResult) -> str:
    """'graph 3 (captured at train.py:42)': the graph and the line that made it (names printable and shortened,
    reports.names.cell)."""
    if g.site:
        loc = g.site.split(" ")[0]
        file, _, line = loc.rpartition(":")
        how = "captured" if g.origin == "capture" else "built"
        return f"graph {g.graph_id} ({how} at {cell(f'{PurePath(file).name}:{line}')})"
    if g.origin == "unknown":
        return cell(g.label) if g.label else f"graph {g.graph_id}"
    return f"graph {g.graph_id}"


def interval(b: BreakEven | Headline) -> str:
    """'[5, 10]': a break-even's 95% interval ('' without one)."""
    if b.interval_low is None and not b.interval_high_never:
        return ""
    low = str(b.interval_low) if b.interval_low is not None else "never"
    high = "never" if b.interval_high_never else str(b.interval_high)
    return f"[{low}, {high}]"


def period_text(p: Period | None, per: str = "") -> str:
    """'17.2 ms CPU-bound' (the trimmed mean of the work period, as savings use it); a CPU-bound period
    of a traced run says beside it that the tracer may have slowed it (analyzers.break_even), one timed by
    the timing run that it was timed untraced (analyzers.untraced)."""
    from graphmode.analyzers.break_even import CPU_BOUND_SLOWDOWN_BOUND

    if p is None or p.work is None:
        return "—"
    text = f"{_ns(p.work.trimmed_mean)}{per} {BOUND_WORDS.get(p.bound, p.bound)}"
    if p.run == "timing":
        text += " (untraced: timing run)"
    elif p.bound in ("cpu", "mixed", "single"):
        text += f" (tracer may add ≤{100 * CPU_BOUND_SLOWDOWN_BOUND:.0f}%)"
    return text


def all_graphs_sentence(a: TraceAnalysis) -> str:
    """' In all: 3 graphs built, ...' for a run of several graphs (each step counted once: analyzers.steps); ''."""
    text = ""
    t = a.totals
    if t is not None and len(a.graphs) > 1:
        built = f"{t.graphs_built} graphs built, " if t.graphs_built else ""
        text += f" In all: {built}{t.graphs_replayed} replayed ({t.replays:,} replays)"
        text += f", built in {_ns(t.build_ns)}" if t.build_ns else ""
        if t.net_ns is not None and t.saved_ns is not None:
            text += f"; {_ns(t.saved_ns)} saved, {_ns(t.net_ns)} net of their one-time cost."
        else:
            text += "."
    return text


def print_graph_table(console: Console, a: TraceAnalysis) -> None:
    """One row per graph: replays, eager vs replay period with what bounds each, one-time cost, break-even."""
    if not a.graphs:
        return
    t = Table(title="Per graph (periods: trimmed mean of the iterations, what bounds them)", title_justify="left")
    for col in ("graph", "replays", "eager iteration", "replay", "saved / replay", "one-time cost", "break-even [95%]", "status"):
        t.add_column(col, justify="left" if col in ("graph", "status") else "right")
    for g in a.graphs:
        b = g.break_even
        be = "—"
        if b is not None:
            be = "never" if b.never else (f"{b.replays:,} {interval(b)}" if b.replays is not None else "—")
        eager = period_text(g.eager) + (f" ×{g.units_per_replay}" if g.units_per_replay > 1 and g.eager is not None else "")
        status = g.status.replace("_", " ")
        if g.warmup_iterations:
            status += f", {g.warmup_iterations} warm-up"
        t.add_row(Text(graph_name(g)), f"{g.replays:,}", Text(eager), Text(period_text(g.graph)),
                  _ns(b.saved_per_replay_ns) if b is not None else "—", _ns(g.cost.total_ns) if g.cost is not None else "—",
                  be, status)
    console.print(t)
    tot = a.totals
    if tot is not None and len(a.graphs) > 1:
        framework = any(g.cost is not None and g.cost.framework_ns is not None for g in a.graphs)
        parts = "capture/instantiate/upload" + (" and PyTorch's recording work" if framework else "")
        console.print(f"All graphs: {tot.graphs_built} built, {tot.graphs_replayed} replayed, {tot.replays:,} replays; "
                      f"building ({parts}) {_ns(tot.build_ns)}, one-time cost {_ns(tot.one_time_ns)}"
                      + (f", saved {_ns(tot.saved_ns)}, net {_ns(tot.net_ns)}" if tot.saved_ns is not None else ""))
    for g in a.graphs:
        for note in g.notes:
            console.print(Text(f"  {graph_name(g)}: {printable(word(note))}"))
