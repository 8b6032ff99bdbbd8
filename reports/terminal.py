"""`graphmode report`: the analysis as rich tables, headline first. Computes nothing itself."""

from __future__ import annotations


from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from graphmode.analyzers import BreakEven, ModeMetrics, SourceLine, Stat, TraceAnalysis
from graphmode.reports.coverage import print_graph_use
from graphmode.reports.diagnostics_text import print_cpu_profile, print_pitfalls
from graphmode.reports.graphs_text import all_graphs_sentence, graph_name, print_graph_table
from graphmode.reports.graphs_text import interval as _interval
from graphmode.reports.headline import sentence
from graphmode.reports.names import cell, full_names, printable, short_name, short_source
from graphmode.reports.notes import break_even_reason, word
from graphmode.reports.prediction import print_prediction
from graphmode.reports import pitfall_words
from graphmode.reports.summary_text import print_summary
from graphmode.reports.units import human_ns

output_file_extension = "txt"
MAX_KERNEL_ROWS = 20
MAX_SOURCE_ROWS = 20


def _stat(s: Stat | None, count: bool = False) -> str:
    if s is None:
        return "—"
    if count:
        return f"{s.median:g} [{s.p10:g}–{s.p90:g}]"
    return f"{human_ns(s.median)} [{human_ns(s.p10)}–{human_ns(s.p90)}]"


def headline(a: TraceAnalysis) -> str:
    """The analysis's one verdict in a sentence (reports.headline, the same in the JSON and on the page); in a script
    trace of several graphs, a second sentence on all of them."""
    return sentence(a) + all_graphs_sentence(a)


def _transposed(title: str, columns: list[str], rows: list[tuple[str, list[str]]]) -> Table:
    """A table with one row per metric and one column per thing compared: fits a narrow terminal."""
    t = Table(title=title, title_justify="left")
    t.add_column("", style="bold")
    for c in columns:
        t.add_column(escape(cell(c)), justify="right")
    for name, cells in rows:
        t.add_row(name, *cells)
    return t


def _modes_table(modes: tuple[ModeMetrics, ...]) -> Table:
    rows: list[tuple[str, list[str]]] = [
        ("iterations (wall pass)", [str(m.iterations) for m in modes]),
        ("wall", [_stat(m.wall) + (" (traced)" if m.wall_source == "traced" else " (untraced windows)" if m.wall_source == "window" else f" ({m.wall_source} run)" if m.wall_source not in ("timing", "traced") else "") for m in modes]),
        ("wall, traced pass", [_stat(m.traced_wall) for m in modes]),
        ("CPU in API: launches", [_stat(m.api_launch) for m in modes]),
        ("CPU in API: syncs", [_stat(m.api_sync) for m in modes]),
        ("CPU in API: other", [_stat(m.api_other) for m in modes]),
        ("CPU in API: total", [_stat(m.api_total) for m in modes]),
        ("GPU busy", [_stat(m.gpu_busy) for m in modes]),
        ("GPU idle", [_stat(m.gpu_idle) for m in modes]),
        ("GPU gaps between work", [_stat(m.gpu_gap) for m in modes]),
        ("kernels", [_stat(m.kernels, count=True) for m in modes]),
        ("graph launch spans", [_stat(m.graph_launches, count=True) for m in modes]),
    ]
    return _transposed("Per iteration, median [p10–p90]", [m.mode for m in modes], rows)


def _source_table(lines: tuple[SourceLine, ...], traced_detail: str | None) -> Table:
    """Where the GPU work comes from; user strings go in as Text so rich reads no markup in them."""
    shown = lines[:MAX_SOURCE_ROWS]
    t = Table(title=f"Where the GPU work comes from (top {len(shown)} of {len(lines)} source lines by GPU time)",
              title_justify="left")
    for col in ("source line", "what", "kernels", "count", "GPU median", "GPU total"):
        t.add_column(col, justify="right" if col in ("count", "GPU median", "GPU total") else "left")
    for s in shown:
        names = ", ".join(short_name(k, 60) for k in s.kernels[:2]) + (f" +{s.distinct_kernels - 2} more" if s.distinct_kernels > 2 else "")
        what = f"graph {s.graph_id} nodes" if s.kind == "graph node" else "eager launches"
        unit = "node" if s.kind == "graph node" else "launch"
        t.add_row(Text(cell(short_source(s.source))), what, Text(names), f"{s.count:,} {unit}{'s' if s.count != 1 else ''}",
                  human_ns(s.gpu_median_ns), human_ns(s.gpu_total_ns))
    if traced_detail == "graph" and any(s.kind == "graph node" and s.gpu_spans == 0 for s in shown):
        t.caption = "graph-detail trace: a replay is one span, so graph nodes are counted, not timed (record with --detail node)"
    return t


VERDICT_STYLE = {"pays_back": "bold green", "not_yet": "bold yellow", "never": "bold red", "unknown": "bold",
                 "no_graph": "bold"}


def print_report(a: TraceAnalysis, console: Console | None = None, detail: bool = True, whole_names: bool = False) -> TraceAnalysis:
    """Prints the report of an analysis (headline, then per graph, per mode); returns the analysis it printed. `detail=False`: the
    headline, warnings, the steps-and-graphs summary (reports.summary_text) and, for an eager-only run, its
    prediction; the rest is one option away. Names in tables are shortened to reports.names.NAME_WIDTH
    characters unless `whole_names` (`report --full-names`)."""
    console = console or Console()
    with full_names(whole_names):
        _print_report(a, console, detail)
    return a


def _print_report(a: TraceAnalysis, console: Console, detail: bool) -> None:
    # Strings from the trace (paths, names, reasons) are printable (reports.names: no control character reaches
    # the terminal) and escaped: rich must not read them as markup.
    console.print(f"[bold]{escape(printable(a.path))}[/bold]  workload: {escape(printable(a.workload or '?'))}  "
                  f"status: {escape(printable(a.status))}")
    style = VERDICT_STYLE.get(a.headline.verdict, "bold") if a.headline is not None else "bold green"
    console.print(f"[{style}]{escape(printable(headline(a)))}[/{style}]")
    for w in a.warnings:
        console.print(f"[bold red]warning:[/bold red] {escape(printable(word(w)))}")
    if not detail:
        for p in a.pitfalls:
            console.print(f"[bold]{escape(p.severity)}:[/bold] {escape(printable(pitfall_words.title(p)))}")
        print_summary(console, a)
        if not a.graphs and a.break_even:
            print_graph_mode_summary(console, a)
        if a.headline is not None and a.headline.subject == "prediction":
            print_prediction(console, a.prediction)
        console.print(Text("More (per-graph notes, one-time cost parts, per iteration, kernels, lines, coverage, CPU profile, "
                           f"prediction): graphmode report --detail {cell(a.path, 200)}"))
        return
    print_pitfalls(console, a.pitfalls)

    print_graph_table(console, a)
    if a.break_even and not a.graphs:
        print_graph_mode_summary(console, a)
        for b in a.break_even:
            if b.never:
                console.print(escape(printable(f"  vs {b.baseline}: never — {break_even_reason(b.reason)}")))
    _print_detail(console, a)


def print_graph_mode_summary(console: Console, a: TraceAnalysis) -> None:
    """A built-in workload's break-even against each eager mode (a transposed table: fits 80 columns)."""
    if a.break_even:
        rows: list[tuple[str, list[str]]] = [
            ("eager iteration (median)", [human_ns(b.eager_ns) for b in a.break_even]),
            ("graph replay (median)", [human_ns(b.graph_ns) for b in a.break_even]),
            ("saved per replay", [human_ns(b.saved_per_replay_ns) for b in a.break_even]),
            ("one-time cost", [human_ns(b.one_time_ns) for b in a.break_even]),
            ("break-even replays", [f"{b.replays:,}" if b.replays is not None else ("never" if b.never else "—") for b in a.break_even]),
            ("95% interval", [_interval(b) or "—" for b in a.break_even]),
            ("replays in this run", [str(b.run_replays) for b in a.break_even]),
            ("amortised speedup", [f"{b.amortised_speedup:.2f}x" if b.amortised_speedup is not None else "—" for b in a.break_even]),
        ]
        console.print(_transposed("Break-even", [f"vs {b.baseline}" for b in a.break_even], rows))


def _print_detail(console: Console, a: TraceAnalysis) -> None:
    if a.graph_costs:
        cs = a.graph_costs
        rows = [
            ("build (capture / nodes)", [human_ns(c.build_ns) for c in cs]),
            ("instantiate", [human_ns(c.instantiate_ns) for c in cs]),
            ("upload", [human_ns(c.upload_ns) for c in cs]),
            ("first launch", [human_ns(c.first_launch_ns) for c in cs]),
            ("steady replay", [human_ns(c.steady_replay_ns) for c in cs]),
            ("first launch excess", [human_ns(c.first_launch_excess_ns) for c in cs]),
            *([("PyTorch recording work", [human_ns(c.framework_ns) for c in cs])] if any(c.framework_ns is not None for c in cs) else []),
            *([("untraced (timing run) correction", [human_ns(c.untraced_correction_ns) for c in cs])]
              if any(c.untraced_correction_ns is not None for c in cs) else []),
            *([("tracer's cost taken off", [human_ns(c.tracer_correction_ns) for c in cs])]
              if any(c.tracer_correction_ns is not None for c in cs) else []),
            *([("statement around the window (timing run)", [human_ns(c.call_ns) for c in cs])]
              if any(c.call_ns is not None for c in cs) else []),
            ("total one-time cost", [human_ns(c.total_ns) for c in cs]),
        ]
        names = {g.graph_id: graph_name(g) for g in a.graphs}
        console.print(_transposed("One-time cost per graph", [names.get(c.graph_id) or f"graph {c.graph_id}" for c in cs], rows))

    for p in a.critical_paths:
        delivered = f"{100 * p.parallelism_delivered:.0f}%" if p.parallelism_delivered is not None else "—"
        console.print(escape(
            f"Graph {p.graph_id} {cell(p.label)}: {p.nodes} nodes, {p.edges} edges; serial {human_ns(p.serial_ns)}, critical path "
            f"{human_ns(p.critical_path_ns)} ({' → '.join(short_name(n, 40) for n in p.path_names[:8])}"
            f"{' …' if len(p.path_names) > 8 else ''}), "
            f"measured replay span {_stat(p.measured_span)}; parallelism delivered {delivered}"
            + ("" if p.has_parallel_branches else " (no parallel branches)")
        ))

    if a.overhead_saved:
        os_ = a.overhead_saved
        rows = [
            ("kernels per iteration", [f"{o.kernels_per_iteration:g}" if o.kernels_per_iteration is not None else "—" for o in os_]),
            ("wall / iteration", [human_ns(o.wall_ns) for o in os_]),
            ("CPU in API / iteration", [human_ns(o.api_ns) for o in os_]),
            ("GPU idle / iteration", [human_ns(o.gpu_idle_ns) for o in os_]),
            ("wall / kernel", [human_ns(o.wall_per_kernel_ns) for o in os_]),
            ("CPU in API / kernel", [human_ns(o.api_per_kernel_ns) for o in os_]),
            ("GPU idle / kernel", [human_ns(o.gpu_idle_per_kernel_ns) for o in os_]),
        ]
        console.print(_transposed("Launch overhead saved (baseline median − graph median)", [f"vs {o.baseline}" for o in os_], rows))

    if a.modes:
        console.print(_modes_table(a.modes))

    if a.distortion:
        t = Table(title="Tracer distortion (median iteration)", title_justify="left")
        for col in ("mode", "untraced (timing pass)", "traced", "slowdown", "ratio"):
            t.add_column(col, justify="right")
        for d in a.distortion:
            t.add_row(escape(d.mode), human_ns(d.timing_median_ns), human_ns(d.traced_median_ns), human_ns(d.slowdown_ns), f"{d.ratio:.2f}x")
        console.print(t)

    if a.cpu_speed:
        t = Table(title="The CPU's speed on the main thread: a fixed Python loop's time, sampled in each run",
                  title_justify="left")
        for col in ("run", "samples", "fastest tenth", "median", "slowest tenth", "slow samples", "median vs fastest",
                    "its cost"):
            t.add_column(col, justify="right")
        for c in a.cpu_speed:
            vs = f"{c.vs_fastest:.2f}x" if c.vs_fastest == c.vs_fastest else "—"  # NaN: no fastest to compare with
            cost = f"{100 * c.spent_ns / c.run_ns:.3f}%" if c.run_ns and c.run_ns > 0 else "—"
            t.add_row(escape(c.run), f"{c.samples:,}", human_ns(c.fast_ns), human_ns(c.median_ns), human_ns(c.slow_ns),
                      f"{100 * c.slow_share:.0f}%", vs, cost)
        console.print(t)

    if a.kernels:
        top = min(MAX_KERNEL_ROWS, len(a.kernels))
        in_graphs = any(k.graph_count for k in a.kernels)  # an eager-only run: the eager columns alone
        title = (f"Kernels: GPU duration eager vs in graph, median (top {top} by GPU time)" if in_graphs
                 else f"Kernels: GPU duration, median (top {top} by GPU time; none ran in a graph)")
        t = Table(title=title, title_justify="left", min_width=None if in_graphs else len(title))
        for col in ("kernel", "eager n", "eager", "graph n", "in graph", "difference")[:6 if in_graphs else 3]:
            t.add_column(col, justify="right" if col != "kernel" else "left")
        for k in a.kernels[:MAX_KERNEL_ROWS]:
            cells: list[Text | str] = [Text(short_name(k.name, 60)), str(k.eager_count), human_ns(k.eager.median if k.eager else None), str(k.graph_count),
                     human_ns(k.graph.median if k.graph else None), human_ns(k.difference_ns)]
            t.add_row(*cells[:6 if in_graphs else 3])
        console.print(t)

    if a.source_lines:
        console.print(_source_table(a.source_lines, a.traced_detail))

    print_graph_use(console, a)  # coverage, PyTorch's cudagraph decisions, graph budget (reports/coverage.py)
    print_cpu_profile(console, a.cpu_profile)
    print_prediction(console, a.prediction)

    if a.cannot_compute:
        console.print("[bold]Not computed for this trace:[/bold]")
        for s in a.cannot_compute:
            console.print(f"  - {escape(printable(word(s)))}")
