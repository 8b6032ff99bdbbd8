"""Terminal rendering of the diagnostics (pitfalls) and the CPU profile summary. Computes nothing."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from graphmode.analyzers.results import CpuProfile, Pitfall
from graphmode.reports.names import NAME_WIDTH, cell, printable
from graphmode.reports import pitfall_words
from graphmode.reports.units import human_ns

CATEGORY_LABELS = {
    "user": "your Python code",
    "framework": "framework dispatch (torch, cupy, …)",
    "cuda_binding": "Python side of CUDA calls (cuda.bindings, torch.cuda, cupy.cuda)",
    "tracer": "graphmode's tracing callbacks",
    "other": "standard library and other packages",
}


def print_pitfalls(console: Console, pitfalls: tuple[Pitfall, ...]) -> None:
    """One block per pitfall: title, evidence, where, advice. Trace strings are escaped (no rich markup)."""
    if not pitfalls:
        return
    console.print("[bold]Diagnostics[/bold]")
    for p in pitfalls:
        colour = "red" if p.severity == "error" else "yellow"
        console.print(f"[bold {colour}]{p.severity}:[/bold {colour}] [bold]{escape(printable(pitfall_words.title(p)))}[/bold]")
        console.print(f"  {escape(printable(pitfall_words.evidence(p)))}")
        if p.where:
            console.print(f"  where: {escape(printable(p.where))}")
        console.print(f"  what to do: {escape(printable(pitfall_words.advice(p)))}")


def print_cpu_profile(console: Console, prof: CpuProfile | None) -> None:
    """Sampled CPU time by kind of code, CUPTI's CUDA API time, then the top user lines."""
    if prof is None:
        return
    t = Table(title=f"CPU profile (pyinstrument, {prof.samples:,} samples over {human_ns(prof.duration_ns)})", title_justify="left")
    for col in ("where the CPU time went", "time", "share"):
        t.add_column(col, justify="left" if col.startswith("where") else "right")
    for c in prof.categories:
        if c.ns > 0:
            t.add_row(CATEGORY_LABELS.get(c.name, c.name), human_ns(c.ns), f"{100 * c.fraction:.0f}%")
    if prof.cuda_api_ns is not None:
        t.add_row("in CUDA driver/runtime calls (CUPTI, included above)", human_ns(prof.cuda_api_ns), "")
    console.print(t)
    if prof.top_user_lines:
        u = Table(title="Your lines with the most CPU time (including what they call)", title_justify="left")
        u.add_column("line", justify="left")
        u.add_column("time", justify="right")
        for f in prof.top_user_lines[:10]:
            u.add_row(escape(cell(f"{f.location} {f.function}", 2 * NAME_WIDTH)), human_ns(f.ns))
        console.print(u)
