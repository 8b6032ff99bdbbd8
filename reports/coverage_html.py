"""HTML of graph coverage, PyTorch's cudagraph decisions and the graph budget for `graphmode view`. Computes nothing.

`graph_use_html(analysis)` returns the body of one page section ('' when the trace has none of it);
reports/html.py places it. Plain HTML with the page's table classes and inline widths for the bars:
no script, and every string from the trace is escaped.
"""

from __future__ import annotations

import html

from graphmode.analyzers.coverage_results import CoverageSlice, GraphBudget, GraphCoverage, TorchGraphs
from graphmode.analyzers.results import TraceAnalysis
from graphmode.reports.coverage import MAX_BUDGET_ROWS, MAX_FUNCTION_ROWS, MAX_RANGE_ROWS, memory_basis, pct, plural
from graphmode.reports.notes import word
from graphmode.reports.units import human_bytes, human_ns

GRAPH_COLOUR = "#2e7d32"
EAGER_COLOUR = "#c7c7c7"


def _e(text: object) -> str:
    return html.escape(str(text))


def _bar(share: float | None) -> str:
    """A horizontal bar: the graphed share in green, the eager rest in grey."""
    if share is None:
        return "<span class='hint'>no kernels</span>"
    g = max(0.0, min(1.0, share)) * 100
    return (f"<div class='gm-cov-bar' style='display:flex;width:160px;height:10px;border:1px solid #999' "
            f"title='{g:.1f}% in graphs'><div style='width:{g:.2f}%;background:{GRAPH_COLOUR}'></div>"
            f"<div style='width:{100 - g:.2f}%;background:{EAGER_COLOUR}'></div></div>")


def _coverage(c: GraphCoverage) -> str:
    rows = []
    for s in (c.run, *c.phases, *c.ranges[:MAX_RANGE_ROWS]):
        name = s.name if s.kind != "range" else f"range ‘{s.name}’" + (f" ×{s.occurrences}" if s.occurrences > 1 else "")
        rows.append(_row(name, s))
    head = ("<tr><th>stretch</th><th>duration</th><th>kernels in graphs</th><th></th><th>GPU time in graphs</th>"
            "<th>launch calls graph / eager</th><th>captured calls</th></tr>")
    notes = [f"Phases: {word(c.phase_rule)}."] if c.phases else []
    if c.kernels_from_topology:
        notes.append("Graph-detail trace: kernels in graphs are the graph's kernel nodes × its launches.")
    if c.unknown_graph_launches:
        notes.append(f"{c.unknown_graph_launches:,} launches of graphs whose structure the trace did not record "
                     "(built before tracing, or in a run without callbacks): their kernels are not counted.")
    out = (f"<table class='headline gm-coverage'>{head}{''.join(rows)}</table>"
           + "".join(f"<p class='hint'>{_e(n)}</p>" for n in notes))
    if c.eager_lines:
        lines = "".join(f"<tr><td><code>{_e(e.source)}</code></td><td>{_e(', '.join(k[:60] for k in e.kernels[:2]))}</td>"
                        f"<td>{e.launches:,}</td><td>{human_ns(e.gpu_ns)}</td><td>{pct(e.share_of_eager_gpu)}</td></tr>"
                        for e in c.eager_lines)
        out += ("<h3>Lines that launch the most eager GPU work</h3><table class='headline'><tr><th>line</th><th>kernels</th>"
                f"<th>launches</th><th>GPU time</th><th>of eager GPU time</th></tr>{lines}</table>")
    elif c.eager_lines_note is not None:
        out += f"<p class='hint'>Eager remainder: {c.run.eager_kernels:,} kernels outside graphs; {_e(word(c.eager_lines_note))}.</p>"
    return out


def _row(name: str, s: CoverageSlice) -> str:
    return (f"<tr><th>{_e(name)}</th><td>{human_ns(s.duration_ns)}</td>"
            f"<td>{pct(s.kernel_share)} ({s.graph_kernels:,} of {s.graph_kernels + s.eager_kernels:,})</td>"
            f"<td>{_bar(s.kernel_share)}</td><td>{pct(s.gpu_time_share)} ({human_ns(s.graph_gpu_ns)})</td>"
            f"<td>{s.graph_launch_calls:,} / {s.eager_launch_calls:,}</td><td>{s.captured_launch_calls:,}</td></tr>")


def _torch(tg: TorchGraphs) -> str:
    skipped = sum(s.count for s in tg.skips)
    out = (f"<h3>PyTorch {_e(tg.torch_version)}</h3><p>{plural(tg.recordings, 'cudagraph recording')}, "
           f"{plural(tg.warmups, 'warm-up run')}, {plural(tg.captures, 'CUDAGraph capture')}"
           + (f", {plural(skipped, 'skip')} (see Diagnostics)" if skipped else "") + ".</p>")
    if tg.functions:
        rows = "".join(
            f"<tr><td>{_e(f.name)}" + (f" <code>{_e(f.defined_at)}</code>" if f.defined_at else "") + "</td>"
            f"<td>{len(f.compile_ids)}</td><td>{f.warmups}</td><td>{f.recordings}</td><td>{f.rerecords}</td>"
            f"<td>{_e(', '.join(map(str, f.graph_ids)))}</td><td>{_e('; '.join(dict.fromkeys(f.shapes)))}</td></tr>"
            for f in tg.functions[:MAX_FUNCTION_ROWS])
        out += ("<table class='headline'><tr><th>compiled function</th><th>compiled</th><th>warm-ups</th><th>recordings</th>"
                f"<th>re-recorded</th><th>graphs</th><th>shapes recorded</th></tr>{rows}</table>")
    if tg.pools:
        rows = "".join(f"<tr><td><code>{_e(p.pool)}</code></td><td>{_e(', '.join(map(str, p.graph_ids)))}</td>"
                       f"<td>{human_bytes(p.reserved_bytes)}</td><td>{human_bytes(p.end_reserved_bytes)}</td></tr>" for p in tg.pools)
        out += ("<table class='headline' style='margin-top:10px'><tr><th>memory pool</th><th>graphs</th><th>reserved after its last capture</th>"
                f"<th>at the end</th></tr>{rows}</table>")
    return out


def _budget(b: GraphBudget) -> str:
    rows = "".join(
        f"<tr><td>{r.graph_id}</td><td><code>{_e(r.site)}</code></td><td>{_e(r.pool)}</td><td>{human_ns(r.capture_ns)}</td>"
        f"<td>{human_ns(r.instantiate_ns)}</td><td>{human_ns(r.upload_ns)}</td><td>{r.replays:,}</td><td>{human_bytes(r.bytes)}</td>"
        f"<td>{_e(r.verdict)}</td></tr>" for r in b.rows[:MAX_BUDGET_ROWS])
    out = (f"<h3>Start-up time and memory per graph</h3><p>{plural(b.graphs, 'graph')}, {human_ns(b.total_startup_ns)} to build, "
           f"{human_bytes(b.total_bytes)} held ({_e(memory_basis(b.memory_source))}); {b.never_replayed} never replayed.</p>"
           "<table class='headline gm-budget'><tr><th>graph</th><th>built at</th><th>pool</th><th>capture</th><th>instantiate</th>"
           f"<th>upload</th><th>replays</th><th>memory</th><th>verdict</th></tr>{rows}</table>")
    if b.graphs > MAX_BUDGET_ROWS:
        out += f"<p class='note'>Showing {MAX_BUDGET_ROWS} of {b.graphs} graphs (all are in the JSON report).</p>"
    return out + "".join(f"<p class='hint'>{_e(word(n))}.</p>" for n in b.notes)


def graph_use_html(a: TraceAnalysis) -> str:
    """The section body: coverage, the eager remainder, PyTorch's decisions, the graph budget ('' if none)."""
    parts = []
    c = getattr(a, "coverage", None)
    if c is not None:
        parts.append(_coverage(c))
    tg = getattr(a, "torch_graphs", None)
    if tg is not None:
        parts.append(_torch(tg))
    b = getattr(a, "graph_budget", None)
    if b is not None:
        parts.append(_budget(b))
    return "".join(parts)
