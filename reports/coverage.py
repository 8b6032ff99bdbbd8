"""Terminal rendering of graph coverage, PyTorch's cudagraph decisions and the graph budget. Computes nothing.

`print_graph_use(console, analysis)` is called once from reports/terminal.py; docs/metrics.md defines
every figure. Strings from the trace go in as Text (no rich markup read in them).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmode.analyzers.coverage_results import CoverageSlice, GraphBudget, GraphCoverage, TorchGraphs
from graphmode.analyzers.results import TraceAnalysis
from graphmode.reports.names import cell, printable, short_name, short_source
from graphmode.reports.notes import word, words
from graphmode.reports.units import human_bytes, human_ns

MAX_RANGE_ROWS = 8
MAX_BUDGET_ROWS = 20
MAX_FUNCTION_ROWS = 12


def pct(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.0f}%" if share in (0.0, 1.0) or 0.01 <= share <= 0.99 else f"{100 * share:.1f}%"


def plural(n: int, word: str) -> str:
    """'1 graph', '2 graphs'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def memory_basis(source: str) -> str:
    return "memory not sampled" if source == "not sampled" else f"memory from {source}"


def _short(source: str) -> str:
    return cell(short_source(source))


def _coverage_table(c: GraphCoverage) -> Table:
    rows: list[CoverageSlice] = [c.run, *c.phases, *c.ranges[:MAX_RANGE_ROWS]]
    t = Table(title="Graph coverage: the share that ran inside CUDA graphs", title_justify="left")
    for col in ("stretch", "duration", "kernels", "GPU time", "launches graph/eager", "captured"):
        t.add_column(col, justify="left" if col == "stretch" else "right")
    for s in rows:
        name = s.name if s.kind != "range" else f"'{s.name}'" + (f" x{s.occurrences}" if s.occurrences > 1 else "")
        t.add_row(Text(cell(name, 28)), human_ns(s.duration_ns), f"{pct(s.kernel_share)} of {s.graph_kernels + s.eager_kernels:,}",
                  f"{pct(s.gpu_time_share)} of {human_ns(s.graph_gpu_ns + s.eager_gpu_ns)}",
                  f"{s.graph_launch_calls:,}/{s.eager_launch_calls:,}", f"{s.captured_launch_calls:,}")
    notes = [f"phases: {word(c.phase_rule)}"] if c.phases else []
    if c.ranges:
        notes.append("quoted names are NVTX or runner ranges")
    if c.kernels_from_topology:
        notes.append("graph-detail trace: kernels in graphs = the graph's kernel nodes x its launches")
    if c.unknown_graph_launches:
        notes.append(f"{c.unknown_graph_launches:,} launches of graphs whose structure the trace did not record "
                     "(built before tracing, or in a run without callbacks): their kernels are not counted")
    if len(c.ranges) > MAX_RANGE_ROWS:
        notes.append(f"{len(c.ranges) - MAX_RANGE_ROWS} more ranges in the JSON report")
    t.caption = printable("; ".join(notes)) or None
    return t


def _eager_lines(console: Console, c: GraphCoverage) -> None:
    if c.eager_lines:
        t = Table(title="Lines that launch the most eager GPU work", title_justify="left")
        for col in ("line", "kernels", "launches", "GPU time", "of eager GPU time"):
            t.add_column(col, justify="left" if col in ("line", "kernels") else "right")
        for e in c.eager_lines:
            t.add_row(Text(_short(e.source)), Text(", ".join(short_name(k, 50) for k in e.kernels[:2])), f"{e.launches:,}",
                      human_ns(e.gpu_ns), pct(e.share_of_eager_gpu))
        console.print(t)
    elif c.eager_lines_note is not None:
        console.print(Text(printable(f"Eager remainder: {c.run.eager_kernels:,} kernels outside graphs; {word(c.eager_lines_note)}.")))


def _torch(console: Console, tg: TorchGraphs) -> None:
    skipped = sum(s.count for s in tg.skips)
    console.print(Text(printable(
        f"PyTorch {tg.torch_version}: {plural(tg.recordings, 'cudagraph recording')}, {plural(tg.warmups, 'warm-up run')}, "
        f"{plural(tg.captures, 'CUDAGraph capture')}" + (f", {plural(skipped, 'skip')} (see Diagnostics)" if skipped else "")
        + (f"; {tg.events_dropped} log records not kept" if tg.events_dropped else "") + ".")))
    if tg.functions:
        t = Table(title="Compiled functions under cudagraph trees", title_justify="left")
        for col in ("function", "compiled", "warm-ups", "recordings", "re-recorded", "graphs", "shapes recorded"):
            t.add_column(col, justify="left" if col in ("function", "shapes recorded") else "right")
        for f in tg.functions[:MAX_FUNCTION_ROWS]:
            shapes = list(dict.fromkeys(f.shapes))
            t.add_row(Text(cell(f.name, 40)), str(len(f.compile_ids)), str(f.warmups), str(f.recordings), str(f.rerecords),
                      ", ".join(map(str, f.graph_ids[:6])) + (" …" if len(f.graph_ids) > 6 else ""),
                      Text("; ".join(cell(s, 40) for s in shapes[:3]) + (" …" if len(shapes) > 3 else "")))
        console.print(t)
    shared = [p for p in tg.pools if len(p.graph_ids) > 1]
    for p in shared:
        console.print(Text(f"  memory pool {cell(p.pool)} is shared by graphs {', '.join(map(str, p.graph_ids))} "
                           f"(reserved {human_bytes(p.reserved_bytes)} after its last capture)"))


def _budget(console: Console, b: GraphBudget) -> None:
    shown = b.rows[:MAX_BUDGET_ROWS]
    pools = any(r.pool for r in shown)
    t = Table(title=f"Graph start-up and memory: {plural(b.graphs, 'graph')}, {human_ns(b.total_startup_ns)} "
                    f"to build, {human_bytes(b.total_bytes)} held ({memory_basis(b.memory_source)})", title_justify="left")
    cols = ["graph", "built at", *(["pool"] if pools else []), "start-up", "replays", "memory", "verdict"]
    for col in cols:
        t.add_column(col, justify="right" if col in ("start-up", "replays", "memory") else "left")
    for r in shown:
        cells: list[str | Text] = [str(r.graph_id), Text(_short(r.site)), *([Text(cell(r.pool))] if pools else []), human_ns(r.startup_ns),
                                   f"{r.replays:,}", human_bytes(r.bytes), Text(printable(r.verdict))]
        t.add_row(*cells)
    notes = ["start-up = capture or build + instantiate + upload"]
    if b.never_replayed:
        notes.append(f"{b.never_replayed} graph{'s were' if b.never_replayed != 1 else ' was'} never replayed")
    notes += words(b.notes)
    if len(shown) < b.graphs:
        notes.append(f"{b.graphs - len(shown)} more graphs in the JSON report")
    t.caption = printable("; ".join(notes))
    console.print(t)


def print_graph_use(console: Console, a: TraceAnalysis) -> None:
    """Coverage, the eager remainder, PyTorch's decisions and the graph budget (whatever the trace has)."""
    c = getattr(a, "coverage", None)
    if c is not None:
        console.print(_coverage_table(c))
        _eager_lines(console, c)
    tg = getattr(a, "torch_graphs", None)
    if tg is not None:
        _torch(console, tg)
    b = getattr(a, "graph_budget", None)
    if b is not None:
        _budget(console, b)
