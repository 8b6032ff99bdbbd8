"""The per-graph answer of a script trace in words and in a table (analysis.graphs). Computes nothing."""

from __future__ import annotations

from pathlib import PurePath

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmode.analyzers.break_even import CPU_BOUND_SLOWDOWN_BOUND, SINGLE_CPU_BOUND
from graphmode.analyzers.results import BreakEven, GraphResult, Headline, Period, TraceAnalysis
from graphmode.reports.names import cell, printable
from graphmode.reports.notes import word
from graphmode.reports.units import human_ns

# who would launch a graph's kernels eagerly (analyzers.counterfactual.framework_of), in words
FRAMEWORK_WORDS = {
    "inductor": "Inductor's launcher (torch.compile without graphs)",
    "xla": "XLA without command buffers",
    "torch": "PyTorch eager",
    "raw": "cuLaunchKernel",
}
BOUND_WORDS = {"gpu": "GPU-bound", "cpu": "CPU-bound", "mixed": "CPU/GPU-bound in turn", "single": "one run",
               "unknown": "bound unknown"}


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
    if p is None or p.work is None:
        return "—"
    text = f"{human_ns(p.work.trimmed_mean)}{per} {BOUND_WORDS.get(p.bound, p.bound)}"
    if p.run == "timing":
        text += " (untraced: timing run)"
    elif p.run == "window" and p.traced_work is not None:
        text += f" (untraced windows; traced {human_ns(p.traced_work.trimmed_mean)})"
    elif p.run == "corrected" and p.traced_work is not None:
        text += f" (traced {human_ns(p.traced_work.trimmed_mean)})"
    elif p.bound in ("cpu", "mixed", "single"):
        bound = SINGLE_CPU_BOUND if p.run == "single" else CPU_BOUND_SLOWDOWN_BOUND
        text += f" (tracer may add ≤{100 * bound:.0f}%)"
    return text


def all_graphs_sentence(a: TraceAnalysis) -> str:
    """' In all: 3 graphs built, ...' for a run of several graphs (each step counted once: analyzers.steps); ''."""
    text = ""
    t = a.totals
    if t is not None and len(a.graphs) > 1:
        built = f"{t.graphs_built} graphs built, " if t.graphs_built else ""
        text += f" In all: {built}{t.graphs_replayed} replayed ({t.replays:,} replays)"
        text += f", built in {human_ns(t.build_ns)}" if t.build_ns else ""
        if t.net_ns is not None and t.saved_ns is not None:
            text += f"; {human_ns(t.saved_ns)} saved, {human_ns(t.net_ns)} net of their one-time cost."
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
        if g.eager is None and g.counterfactual is not None:
            eager = f"~{human_ns(g.counterfactual.eager.ns)} predicted"
        status = g.status.replace("_", " ")
        if g.warmup_iterations:
            status += f", {g.warmup_iterations} warm-up"
        t.add_row(Text(graph_name(g)), f"{g.replays:,}", Text(eager), Text(period_text(g.graph)),
                  human_ns(b.saved_per_replay_ns) if b is not None else "—", human_ns(g.cost.total_ns) if g.cost is not None else "—",
                  be, status)
    console.print(t)
    tot = a.totals
    if tot is not None and len(a.graphs) > 1:
        framework = any(g.cost is not None and g.cost.framework_ns is not None for g in a.graphs)
        parts = "capture/instantiate/upload" + (" and PyTorch's recording work" if framework else "")
        console.print(f"All graphs: {tot.graphs_built} built, {tot.graphs_replayed} replayed, {tot.replays:,} replays; "
                      f"building ({parts}) {human_ns(tot.build_ns)}, one-time cost {human_ns(tot.one_time_ns)}"
                      + (f", saved {human_ns(tot.saved_ns)}, net {human_ns(tot.net_ns)}" if tot.saved_ns is not None else ""))
    for g in a.graphs:
        for note in g.notes:
            console.print(Text(f"  {graph_name(g)}: {printable(word(note))}"))
        if g.counterfactual is not None:
            console.print(Text(f"  {graph_name(g)}: {counterfactual_text(g)}"))


def counterfactual_text(g: GraphResult) -> str:
    """How a graph with no eager twin was priced: its kernels by launcher, the framework's per-call cost, the GPU side."""
    cf = g.counterfactual
    assert cf is not None
    parts = [f"{p.kernels:,} × {human_ns(p.per_kernel_ns)} ({p.launcher}{'' if p.measured else ', the raw launch: this launcher is not calibrated'})"
             for p in cf.launchers]
    call = f"{human_ns(cf.per_call_ns)} a call + " if cf.per_call_ns else ""
    return (f"no eager twin ran; predicted eager call, its kernels launched one by one by "
            f"{FRAMEWORK_WORDS.get(cf.framework, cf.framework)}: CPU {call}{' + '.join(parts)} = {human_ns(cf.cpu.ns)} "
            f"[{human_ns(cf.cpu.low_ns)}–{human_ns(cf.cpu.high_ns)}], GPU {human_ns(cf.gpu_ns)}, so {cf.bound.upper()}-bound at "
            f"{human_ns(cf.eager.ns)}; replay {human_ns(cf.graphed_ns)} measured; saved ~{human_ns(cf.saved.ns)} "
            f"[{human_ns(cf.saved.low_ns)}–{human_ns(cf.saved.high_ns)}] (cost model {cf.model_path or 'built in'})")
