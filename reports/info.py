"""`graphmode info`: what a trace file holds, in a screenful.

Every string that comes from the file (path, meta values, errors) goes to rich as `Text`, never as
markup: `[lr=0.1]` prints as written and `[/x]` cannot break the output. Long meta values are cut
(the CPU profile has its own tables and a one-line summary), so the output stays short whatever the
trace holds.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmode.reports.names import cell, printable
from graphmode.tracer.profile_store import LEGACY_KEY, SESSION_KEY, profile_summary_line
from graphmode.tracer.schema import TABLES
from graphmode.tracer.store import Trace
from graphmode.tracer.validate import validate_trace

MAX_VALUE_CHARS = 160
MAX_LISTED = 10  # errors / notes / problems listed one per line before "and N more"
MAX_META_ROWS = 60
# Shown in their own sections below the table, not as raw values.
_OWN_SECTION = ("callback_errors", "notes", SESSION_KEY, LEGACY_KEY)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())  # one line: newlines and tabs in a value would only add lines
    return cell(text, MAX_VALUE_CHARS) + (f" ({len(text):,} chars)" if len(text) > MAX_VALUE_CHARS else "")


def _listed(console: Console, title: str, style: str, items: list[str]) -> None:
    if not items:
        return
    console.print(Text(title, style=style))
    for item in items[:MAX_LISTED]:
        console.print(Text(f"  - {_value(item)}"))
    if len(items) > MAX_LISTED:
        console.print(Text(f"  … and {len(items) - MAX_LISTED} more"))


def print_info(trace: Trace, console: Console | None = None) -> None:
    console = console or Console()
    meta = Table(title=Text(printable(str(trace.path))), show_header=False, title_justify="left")
    meta.add_column("key", style="bold")
    meta.add_column("value")
    keys = [k for k in sorted(trace.meta) if k not in _OWN_SECTION]
    for key in keys[:MAX_META_ROWS]:
        meta.add_row(Text(_value(key)), Text(_value(trace.meta[key])))
    if len(keys) > MAX_META_ROWS:
        meta.add_row("…", Text(f"{len(keys) - MAX_META_ROWS} more keys (SELECT * FROM meta)"))
    profile = profile_summary_line(trace)
    if profile:
        meta.add_row("cpu profile", Text(profile))
    console.print(meta)

    passes = Table(title="passes", title_justify="left")
    for col in ("pass", "name", "detail", "duration", "dropped records", "status"):
        passes.add_column(col)
    for p in trace.passes[:MAX_LISTED * 2]:
        passes.add_row(str(p.pass_id), Text(_value(p.name)), Text(_value(p.detail)), f"{(p.end_ns - p.start_ns) / 1e6:.1f} ms",
                       str(p.dropped_records), Text(_value(p.status)))
    if len(trace.passes) > MAX_LISTED * 2:
        passes.caption = f"first {MAX_LISTED * 2} of {len(trace.passes)} passes"
    console.print(passes)

    counts = Table(title="tables", title_justify="left")
    counts.add_column("table")
    counts.add_column("rows", justify="right")
    names = [name for name in TABLES if name != "meta"]
    for name, n in zip(names, trace.counts(names)):
        counts.add_row(name, f"{n:,}")
    console.print(counts)

    status = trace.meta.get("status")
    if status != "complete":
        console.print(Text(f"run status: {_value(status)} — {_value(trace.meta.get('status_reason', ''))}", style="yellow"))
    dropped = int(trace.meta.get("dropped_records", 0) or 0)
    if dropped:
        console.print(Text(f"{dropped:,} CUPTI records were dropped: the trace is incomplete", style="red"))
    errors = trace.meta.get("callback_errors") or []
    _listed(console, f"the tracer hit {len(errors)} error(s) while recording (what they concern is missing from the trace):",
            "yellow", [str(e) for e in errors] if isinstance(errors, list) else [str(errors)])
    notes = trace.meta.get("notes") or []
    _listed(console, "notes made while recording:", "yellow", [str(n) for n in notes] if isinstance(notes, list) else [str(notes)])
    problems = validate_trace(trace)
    if problems:
        _listed(console, "invariants broken:", "red", problems)
    else:
        console.print(Text("trace passes the validator", style="green"))
