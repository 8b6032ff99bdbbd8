"""`graphmode report` on the traces of a multi-process job: rich tables and versioned JSON. Computes nothing.

The JSON document (`kind` 'graphmode-ranks') follows reports/ranks.schema.json; every figure is
defined in docs/ranks.md. Trace strings go into tables as rich Text (no markup is read from them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from graphmode.analyzers import to_dict
from graphmode.analyzers.collectives import parse_nccl_kernel
from graphmode.analyzers.rank_results import RankSetAnalysis, Spread
from graphmode.analyzers.results import Stat
from graphmode.reports.names import short_source
from graphmode.reports.names import cell, full_names, printable
from graphmode.reports.notes import HANG_RISK_ADVICE, straggler_evidence, word
from graphmode.reports.units import human_ns
from graphmode.tracer.version import __version__

RANKS_SCHEMA_VERSION = 2  # 2: warnings, cannot_compute, the alignment's note, size notes and hang-risk facts are notes
SCHEMA_PATH = Path(__file__).with_name("ranks.schema.json")
MAX_RANK_ROWS = 64  # more ranks: the table shows the extremes and says how many it left out
output_file_extension = "txt"


def _spread(s: Spread | None, fmt: Callable[[float], str] = human_ns) -> str:
    if s is None:
        return "—"
    if s.ranks == 1 or s.min == s.max:
        return fmt(s.median)
    return f"{fmt(s.min)} – {fmt(s.median)} – {fmt(s.max)} (max: rank {s.max_rank})"


def _count(v: float) -> str:
    return f"{v:,.0f}"


def _stat(s: Stat | None) -> str:
    return "—" if s is None else f"{human_ns(s.median)} [{human_ns(s.p10)}–{human_ns(s.p90)}]"


def headline(a: RankSetAnalysis) -> str:
    """One paragraph: the job, what its graphs cost and save across ranks, the straggler, the hang risks."""
    hosts = len(a.alignment.hosts)
    text = f"{len(a.ranks)} rank{'s' if len(a.ranks) != 1 else ''}"
    if a.world_size:
        text += f" of {a.world_size}"
    text += f" on {hosts} host{'s' if hosts != 1 else ''}."
    for g in a.graphs_across[:3]:
        where = f" ({cell(short_source(g.site))})" if g.site else ""
        part = f" {g.key}{where}: one-time {_spread(g.one_time)}"
        if g.saved_per_replay is not None:
            part += f", saves {_spread(g.saved_per_replay)} per replay"
        if g.break_even is not None:
            part += f", pays back after {_spread(g.break_even, _count)} replays"
        if g.never_pays_back_ranks:
            part += f", never pays back on rank(s) {', '.join(map(str, g.never_pays_back_ranks))}"
        if g.collectives:
            part += f"; holds {g.collectives} collective{'s' if g.collectives != 1 else ''}"
        text += part + "."
    if a.straggler is not None:
        text += f" Straggler: rank {a.straggler.rank} ({a.straggler.last_arrivals:,} of {a.straggler.collectives:,} collectives started last)."
    if a.hang_risks:
        text += f" {len(a.hang_risks)} hang risk{'s' if len(a.hang_risks) != 1 else ''}: see below."
    return text


def _ranks_table(a: RankSetAnalysis) -> Table:
    waits = {w.rank: w for w in a.waits}
    names = {s.identity.gpu_name for s in a.ranks if s.identity.gpu_name}
    t = Table(title="Ranks" + (f" (GPUs: {', '.join(sorted(names))})" if len(names) == 1 else ""), title_justify="left")
    for col in ("rank", "host", "GPU", "graphs", "replays", "one-time", "saved (net)", "collectives", "waited (median)", "started last"):
        t.add_column(col, justify="left" if col in ("host", "GPU") else "right")
    rows = list(a.ranks)
    if len(rows) > MAX_RANK_ROWS:
        rows = rows[: MAX_RANK_ROWS // 2] + rows[-MAX_RANK_ROWS // 2:]
        t.caption = f"{len(a.ranks) - len(rows)} ranks in the middle left out; the JSON report has them all"
    for s in rows:
        i = s.identity
        w = waits.get(i.rank)
        gpu = (str(i.gpu_index) if i.gpu_index is not None else "?") + (f" {i.gpu_name}" if len(names) > 1 else "")
        rank = str(i.rank) + (" *" if i.numbered_by_order else "") + ("" if i.status == "complete" else f" ({i.status})")
        t.add_row(rank, Text(cell(i.host)), Text(cell(gpu)), f"{s.graphs_built} ({s.graphs_replayed} replayed)", f"{s.replays:,}",
                  human_ns(s.one_time_ns), f"{human_ns(s.saved_ns)} ({human_ns(s.net_ns)})", f"{s.collective_calls:,}",
                  f"{human_ns(w.wait_total_ns)} ({human_ns(w.wait.median if w.wait else None)})" if w else "—",
                  f"{w.last_arrivals:,}" if w else "—")
    return t


def _graphs_table(a: RankSetAnalysis) -> Table:
    t = Table(title="Graphs across ranks: min – median – max over the ranks", title_justify="left")
    for col in ("graph", "site", "ranks", "replays", "one-time cost", "saved / replay", "break-even", "replay", "collectives"):
        t.add_column(col, justify="left" if col in ("graph", "site") else "right")
    for g in a.graphs_across:
        be = _spread(g.break_even, _count)
        if g.never_pays_back_ranks:
            be += f"; never on rank(s) {', '.join(map(str, g.never_pays_back_ranks))}"
        t.add_row(g.key, Text(cell(short_source(g.site))), str(g.ranks), _spread(g.replays, _count), _spread(g.one_time),
                  _spread(g.saved_per_replay), be, _spread(g.replay), str(g.collectives))
    return t


def _collectives_table(a: RankSetAnalysis) -> Table:
    t = Table(title="NCCL collectives (kernels by name; eager, or inside a graph)", title_justify="left")
    for col in ("collective", "where", "ranks", "calls / rank", "channels", "duration", "wait for last rank", "end skew", "size"):
        t.add_column(col, justify="left" if col in ("collective", "where") else "right")

    for c in a.collectives:
        title = parse_nccl_kernel(c.kernel).title
        where = f"in {c.graph_key}" if c.where == "graph" else "eager"
        calls = _spread(c.calls, _count) if c.calls is not None else (f"{c.in_topology} node(s), not timed" if c.in_topology else "—")
        t.add_row(Text(cell(title)), where, str(c.ranks), calls, str(c.channels) if c.channels else "—", _stat(c.duration),
                  _stat(c.wait), _stat(c.end_skew), "unknown" if c.size_bytes is None else f"{c.size_bytes:,} B")
    t.caption = "wait: latest start over the ranks minus this rank's start; end skew: latest minus earliest end of one call, aligned"
    return t


def print_ranks_report(a: RankSetAnalysis, console: Console | None = None, whole_names: bool = False) -> RankSetAnalysis:
    """The job's report; names in tables shortened (reports.names) unless `whole_names` (`report --full-names`)."""
    console = console or Console()
    with full_names(whole_names):
        _print_ranks_report(a, console)
    return a


def _print_ranks_report(a: RankSetAnalysis, console: Console) -> None:
    console.print(Text(printable(f"{a.source}  ranks: {len(a.ranks)}"), style="bold"))
    console.print(Text(printable(headline(a)), style="bold green"))
    for w in a.warnings:
        console.print(f"[bold red]warning:[/bold red] {escape(printable(word(w)))}")
    if a.hang_risks:
        console.print("[bold red]Hang risks[/bold red]")
        for h in a.hang_risks:
            console.print(f"[bold red]{escape(h.kind.replace('_', ' '))}:[/bold red] {escape(printable(word(h.facts)))}")
            console.print(f"  what to do: {escape(printable(HANG_RISK_ADVICE[h.kind]))}")
    console.print(_ranks_table(a))
    if a.graphs_across:
        console.print(_graphs_table(a))
    if a.collectives:
        console.print(_collectives_table(a))
    # `graphmode run` traces: which of the two runs gave what (docs/ranks.md)
    if {s.run for s in a.ranks} == {"detail"}:
        console.print(Text("Collectives, waits, clocks and timelines: each rank's detail run; graph figures: its per-graph "
                           "results, timed by its measuring run."))
    al = a.alignment
    console.print(Text(printable(f"Clocks ({al.method}): {word(al.note)}.")))
    moved = [o for o in al.offsets if o.offset_ns]
    if moved:
        console.print(Text("  offsets: " + ", ".join(f"{cell(o.host)} {human_ns(o.offset_ns)}" for o in
                                                      {o.host: o for o in moved}.values())))
    if al.residual is not None:
        console.print(Text(f"  residual skew over {al.anchors:,} collectives run by every rank: median "
                           f"{human_ns(al.residual.median)}, p90 {human_ns(al.residual.p90)}, max {human_ns(al.residual.max)}"))
    if al.clock_check_ns is not None:
        console.print(Text(f"  CUPTI clock vs CLOCK_REALTIME when tracing started: within {human_ns(al.clock_check_ns)} on every rank"))
    if a.straggler is not None:
        s = a.straggler
        console.print(Text(printable(f"Straggler: {straggler_evidence(s.rank, s.last_arrivals, s.collectives, s.median_lateness_ns)}.")))
    if a.cannot_compute:
        console.print("[bold]Not computed for these traces:[/bold]")
        for c in a.cannot_compute:
            console.print(Text(printable(f"  - {word(c)}")))


def ranks_report_dict(a: RankSetAnalysis) -> dict[str, Any]:
    out = {"schema_version": RANKS_SCHEMA_VERSION, "kind": "graphmode-ranks", "tool_version": __version__, "units": "ns",
           **to_dict(a, word)}  # type: ignore[arg-type]
    for h in out["hang_risks"]:  # the words a person reads beside the facts
        h.update(evidence=h["facts"]["text"], advice=HANG_RISK_ADVICE[h["kind"]])
    if a.straggler is not None:
        s = a.straggler
        out["straggler"]["evidence"] = straggler_evidence(s.rank, s.last_arrivals, s.collectives, s.median_lateness_ns)
    return out


def render_ranks_json(a: RankSetAnalysis) -> str:
    return json.dumps(ranks_report_dict(a), indent=2, allow_nan=False) + "\n"


def load_ranks_schema() -> dict[str, Any]:
    schema = json.loads(SCHEMA_PATH.read_text())
    assert isinstance(schema, dict)
    return schema


def rank_run_note(path: Path, rank: int, world_size: int) -> str:
    """What `graphmode run` says in each rank of a job instead of a report per rank."""
    stem = path.name.split(".rank", 1)[0]
    pattern = str(path.with_name(f"{stem}.rank*{path.suffix}"))
    return (f"graphmode: rank {rank} of {world_size}: trace written to {path}"
            + (f"\ngraphmode: when every rank has finished, report the job with: graphmode report '{pattern}'"
               f" (or graphmode view / export with the same argument)" if rank == 0 else ""))
