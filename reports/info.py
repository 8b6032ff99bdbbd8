"""`graphmode info`: what a trace file holds."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from graphmode.tracer.schema import TABLES
from graphmode.tracer.store import Trace
from graphmode.tracer.validate import validate_trace


def print_info(trace: Trace, console: Console | None = None) -> None:
    console = console or Console()
    meta = Table(title=f"{trace.path}", show_header=False, title_justify="left")
    meta.add_column("key", style="bold")
    meta.add_column("value")
    for key in sorted(trace.meta):
        value = trace.meta[key]
        meta.add_row(key, value if isinstance(value, str) else json.dumps(value))
    console.print(meta)

    passes = Table(title="passes", title_justify="left")
    for col in ("pass", "name", "detail", "duration", "dropped records", "status"):
        passes.add_column(col)
    for p in trace.passes:
        passes.add_row(
            str(p.pass_id), p.name, p.detail, f"{(p.end_ns - p.start_ns) / 1e6:.1f} ms", str(p.dropped_records), p.status
        )
    console.print(passes)

    counts = Table(title="tables", title_justify="left")
    counts.add_column("table")
    counts.add_column("rows", justify="right")
    for name in TABLES:
        if name != "meta":
            counts.add_row(name, f"{trace.count(name):,}")
    console.print(counts)

    status = trace.meta.get("status")
    if status != "complete":
        console.print(f"[yellow]run status: {status} — {trace.meta.get('status_reason', '')}[/yellow]")
    dropped = int(trace.meta.get("dropped_records", 0) or 0)
    if dropped:
        console.print(f"[red]{dropped:,} CUPTI records were dropped: the trace is incomplete[/red]")
    problems = validate_trace(trace)
    if problems:
        console.print("[red]invariants broken:[/red]")
        for problem in problems:
            console.print(f"  - {problem}")
    else:
        console.print("[green]trace passes the validator[/green]")
