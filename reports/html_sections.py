"""The page's text sections as HTML: verdict, headline numbers, where the time went, per-graph answers,
the per-kernel table. Computes nothing: every number comes from the analysis; every string from the
trace is escaped. Durations print as the terminal report prints them (`terminal.human_ns`).
"""

from __future__ import annotations

import html
from typing import Any

from graphmode.analyzers.headline import headline_of
from graphmode.analyzers.kernel_totals import KernelTotals
from graphmode.analyzers.rank_results import RankSetAnalysis
from graphmode.analyzers.results import BreakEven, GraphCost, ModeMetrics, Stat, TraceAnalysis
from graphmode.analyzers.sample_size import tiny_sample_note
from graphmode.reports.headline import VERDICT_KIND
from graphmode.reports.names import demangle, short_name
from graphmode.analyzers.notes import Note
from graphmode.reports.notes import break_even_reason, word
from graphmode.reports.terminal import headline
from graphmode.reports.units import human_ns, short_ns

BOUND_LABELS = {
    "cpu": "CPU-bound: the GPU waited for the next launch",
    "gpu": "GPU-bound: launches ran ahead of the GPU",
    "mixed": "mixed: sometimes CPU-bound, sometimes GPU-bound",
    "single": "one iteration: no period between iterations",
    "synchronized": "synchronized every iteration: CPU and GPU take turns",
    "unknown": "bound unknown",
}
STATUS_LABELS = {
    "replayed": "replayed", "never_replayed": "built but never replayed",
    "capture_failed": "capture failed: no graph was made", "built_before_tracing": "built before tracing started",
}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def graph_title(graph_id: int, label: str) -> str:
    """'graph 4 (captured at x.py:10)': the label as is when it already names the graph, never 'graph 4 (graph 4 …)'."""
    label = (label or "").strip()
    own = f"graph {graph_id}"
    if not label or label == own:
        return own
    return label if label.startswith(own + " ") or label.startswith(own + "(") else f"{own} ({label})"


def _stat(s: Stat | None) -> str:
    return "—" if s is None else f"{human_ns(s.median)} ({human_ns(s.p10)} – {human_ns(s.p90)})"


def _flag(note: Note | None) -> str:
    return f" <span class='flag' title='too few iterations for a stable median'>{esc(word(note))}</span>" if note else ""


def _interval(b: BreakEven) -> str:
    if b.interval_low is None and not b.interval_high_never:
        return ""
    lo = f"{b.interval_low:,}" if b.interval_low is not None else "never"
    hi = "never" if b.interval_high_never else (f"{b.interval_high:,}" if b.interval_high is not None else "—")
    return f"95% interval {lo} – {hi}"


# The verdict box's colour (assets/verdict.css), by the sign of what the headline says.
VERDICT_KINDS = ("paid-back", "not-yet", "never", "unknown", "no-graph")


def verdict_kind(a: TraceAnalysis | RankSetAnalysis) -> str:
    """One of VERDICT_KINDS: a run's is its headline's verdict (analyzers.headline: 'paid-back', 'not-yet', 'never',
    'unknown', 'no-graph'); a job's, from its ranks: 'paid-back' (every rank with a graph came out ahead net),
    'not-yet' (a rank lost time net), 'never' (a rank never pays back), 'unknown', 'no-graph' (no rank made one)."""
    if isinstance(a, RankSetAnalysis):
        ranks = [s for s in a.ranks if s.graphs_built or s.replays]
        if not ranks:
            return "no-graph"
        if any(g.never_pays_back_ranks for g in a.graphs_across):
            return "never"
        if any(s.net_ns is not None and s.net_ns < 0 for s in ranks):
            return "not-yet"
        return "paid-back" if all(s.net_ns is not None for s in ranks) else "unknown"

    # the analysis's own verdict (analyzers.headline), as the terminal and the JSON give it
    return VERDICT_KIND[(a.headline if a.headline is not None else headline_of(a)).verdict]


def verdict_html(a: TraceAnalysis) -> str:
    return f"<p class='verdict {verdict_kind(a)}' id='gm-verdict'>{esc(headline(a))}</p>"


def _cost_text(c: GraphCost) -> str:
    parts = [("build", c.build_ns), ("instantiate", c.instantiate_ns), ("upload", c.upload_ns),
             ("first-launch excess", c.first_launch_excess_ns), ("PyTorch recording work", c.framework_ns),
             ("untraced (timing run) correction", c.untraced_correction_ns),
             ("tracer's calibrated cost taken off", c.tracer_correction_ns),
             ("statement around the window (timing run)", c.call_ns)]
    return f"{human_ns(c.total_ns)} = " + " + ".join(f"{k} {human_ns(v)}" for k, v in parts if v is not None)


def made_graph(c: GraphCost) -> bool:
    """A one-time cost row only for a graph that was made (instantiated): a failed capture has no cost to pay back."""
    return c.instantiate_ns is not None or c.upload_ns is not None or c.first_launch_ns is not None


def headline_rows(a: TraceAnalysis) -> list[tuple[str, str]]:
    """(label, value HTML) rows of the headline table."""
    rows: list[tuple[str, str]] = []
    for m in a.modes:
        if m.wall is not None:
            rows.append((esc(f"{m.mode} iteration (median, p10 – p90)"),
                         esc(f"{_stat(m.wall)}; {m.iterations:,} iterations, {'untraced windows' if m.wall_source == 'window' else m.wall_source + ' pass'}")
                         + _flag(tiny_sample_note(m.mode, m.iterations))))
    saved = a.primary_overhead_saved()
    if saved is not None:
        rows.append((esc(f"launch overhead saved vs {saved.baseline}, per iteration"), esc(human_ns(saved.wall_ns))))
        if saved.wall_per_kernel_ns is not None:
            rows.append(("… per kernel", esc(human_ns(saved.wall_per_kernel_ns))))
    for c in a.graph_costs:
        if made_graph(c):
            rows.append((esc(f"one-time cost of {graph_title(c.graph_id, c.label)}"), esc(_cost_text(c))))
    b = a.primary_break_even()
    if b is not None:
        if b.replays is not None:
            value = f"{b.replays:,} replays ({_interval(b)})"
        else:
            value = "never: a replay is not faster" if b.never else break_even_reason(b.reason)
        rows.append((esc(f"break-even vs {b.baseline}" + (", predicted (no eager twin ran)" if b.basis == "predicted" else "")),
                     esc(value)))
        rows.append(("replays in this run", esc(f"{b.run_replays:,}")))
        if b.amortised_speedup is not None:
            rows.append((esc(f"speed-up over this run's {b.run_replays:,} replays, one-time cost included"),
                         esc(f"{b.amortised_speedup:.2f}×")))
    return rows


def headline_table(a: TraceAnalysis) -> str:
    rows = headline_rows(a)
    if not rows:
        return "<p>No headline numbers: see below.</p>"
    return "<table class='headline'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


# ---- where the time went ------------------------------------------------------------------------

def _bar(ns: float | None, scale: float, cls: str) -> str:
    if ns is None:
        return "<td class='num'>—</td>"
    width = 0.0 if scale <= 0 else max(0.0, min(100.0, 100.0 * ns / scale))
    return (f"<td class='num'><div class='bar {cls}' style='width:{width:.1f}%'></div>"
            f"<span>{esc(human_ns(ns))}</span></td>")


def time_split_html(modes: tuple[ModeMetrics, ...], a: TraceAnalysis) -> str:
    """Per mode, the median iteration split three ways (CPU in CUDA API calls, GPU busy, GPU idle), then what graph mode saved."""
    shown = [m for m in modes if m.wall is not None or m.traced_wall is not None]
    if not shown:
        return ""
    walls = [s.median for m in shown for s in (m.traced_wall, m.wall) if s is not None]
    scale = max(walls) if walls else 0.0
    head = ("<tr><th>per iteration, median</th><th>iteration (traced pass)</th><th>CPU in CUDA API calls</th>"
            "<th>GPU busy</th><th>GPU idle</th></tr>")
    rows = []
    for m in shown:
        rows.append(f"<tr><th>{esc(m.mode)}{_flag(tiny_sample_note(m.mode, m.iterations))}</th>"
                    + _bar(m.traced_wall.median if m.traced_wall else None, scale, "wall")
                    + _bar(m.api_total.median if m.api_total else None, scale, "api")
                    + _bar(m.gpu_busy.median if m.gpu_busy else None, scale, "busy")
                    + _bar(m.gpu_idle.median if m.gpu_idle else None, scale, "idle") + "</tr>")
    saved = a.primary_overhead_saved()
    if saved is not None:
        rows.append(f"<tr class='saved'><th>saved by the graph (vs {esc(saved.baseline)})</th>"
                    + _bar(saved.traced_wall_ns if saved.traced_wall_ns is not None else saved.wall_ns, scale, "wall")
                    + _bar(saved.api_ns, scale, "api")
                    + "<td class='num'>—</td>" + _bar(saved.gpu_idle_ns, scale, "idle") + "</tr>")
    note = ("<p class='hint'>Medians of the traced pass's iterations: CPU time inside CUDA API calls, and the "
            "iteration split into GPU busy (the union of its GPU work) and GPU idle. The saved row is the analysis's "
            "launch overhead saved in the same pass.</p>")
    return f"<table class='split'>{head}{''.join(rows)}</table>{note}"


# ---- per graph ---------------------------------------------------------------------------------

RUN_WORDS = {"measure": "measuring (traced)", "detail": "detail (traced)", "single": "one traced"}


def _period_cells(p: Any) -> dict[str, str]:
    if p is None:
        return {}
    return {
        "steady iterations": f"{p.iterations:,}" + (_flag(tiny_sample_note(p.mode, p.iterations)) if p.iterations else ""),
        "time of its own work (trimmed mean; what savings use)": esc(human_ns(p.work.trimmed_mean) if p.work else "—"),
        "period, GPU start to next GPU start (median, p10 – p90)": esc(_stat(p.period)),
        "CPU period, launch to next launch": esc(_stat(p.cpu_period)),
        "GPU busy per iteration": esc(_stat(p.gpu_busy)),
        "other GPU work inside the period": esc(_stat(p.other_gpu)),
        "bound": esc(BOUND_LABELS.get(p.bound, p.bound))
        + (esc(f" ({100 * p.gpu_bound_share:.0f}% of iterations GPU-bound)") if p.gpu_bound_share is not None else ""),
        "timed by": esc(f"the timing run, without CUPTI (the traced measuring run read {_stat(p.traced_work)})"
                        if p.run == "timing" else
                        f"the one traced run, the calibrated cost of tracing its launches taken off (it read {_stat(p.traced_work)})"
                        if p.run == "corrected" else
                        f"untraced windows of the one traced run, CUPTI detached (its traced iterations read {_stat(p.traced_work)})"
                        if p.run == "window" else f"the {RUN_WORDS.get(p.run, p.run)} run"),
    }


def graph_verdict(g: Any) -> str:
    """One sentence for one graph (numbers from its GraphResult)."""
    title = graph_title(g.graph_id, g.label)
    b, cost = g.break_even, g.cost
    if g.status == "capture_failed":
        return f"The capture of {title} failed: no graph was made (see Diagnostics)."
    if g.status == "never_replayed":
        return f"{title} was built but never replayed" + (f": its one-time cost of {human_ns(cost.total_ns)} bought nothing." if cost else ".")
    if g.status == "built_before_tracing":
        return f"{title} was built before tracing started: its one-time cost is not in this trace; it was replayed {g.replays:,} times."
    if b is None:
        return f"{title} was replayed {g.replays:,} times; no eager baseline to compare it with."
    if b.never:
        return (f"{title} does not pay off: a replay takes {human_ns(b.graph_ns)} vs {human_ns(b.eager_ns)} eager, "
                f"so it never pays back its one-time cost.")
    text = f"{title} saves {human_ns(b.saved_per_replay_ns)} per replay ({human_ns(b.eager_ns)} eager vs {human_ns(b.graph_ns)} as a graph)"
    if cost is not None:
        text += f", costs {human_ns(cost.total_ns)} once"
    if b.replays is not None:
        text += f", and pays back after {b.replays:,} replays"
        text += f" ({_interval(b)})" if _interval(b) else ""
        text += f"; this run replayed it {g.replays:,} times" + (", so it paid back." if g.replays >= b.replays else ", not enough to pay back.")
    else:
        text += f"; break-even unknown: {break_even_reason(b.reason)}."
    return text


def graph_section(g: Any) -> str:
    rows: list[tuple[str, str]] = [("status", esc(STATUS_LABELS.get(g.status, g.status)
                                               + (f", {g.replays:,} replays in the run" if g.status != "capture_failed" else "")))]
    if g.site:
        rows.append(("built at", f"<code>{esc(g.site)}</code> ({esc(g.origin)})"))
    if g.units_per_replay and g.units_per_replay > 1:
        rows.append(("one replay", esc(f"does the work of {g.units_per_replay} eager iterations")))
    if g.eager_basis is not None:
        rows.append(("eager iterations found by", esc(word(g.eager_basis))))
    if g.warmup_iterations:
        rows.append(("warm-up", esc(f"{g.warmup_iterations} eager iterations right before the capture, left out")))
    if g.cost is not None and g.status != "capture_failed":
        rows.append(("one-time cost", esc(_cost_text(g.cost))))
    b = g.break_even
    if b is not None and g.status == "replayed":
        value = (f"{b.replays:,} replays ({_interval(b)})" if b.replays is not None
                 else "never: a replay is not faster" if b.never else break_even_reason(b.reason))
        rows.append(("break-even", esc(value)))
    table = "<table class='headline'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
    periods = ""
    cells = [(p.mode if p else "", _period_cells(p)) for p in (g.eager, g.graph) if p is not None]
    if cells:
        keys = list(cells[0][1])
        periods = ("<table class='periods'><tr><th></th>" + "".join(f"<th>{esc(m)}</th>" for m, _ in cells) + "</tr>"
                   + "".join(f"<tr><th>{esc(k)}</th>" + "".join(f"<td>{c.get(k, '—')}</td>" for _, c in cells) + "</tr>"
                             for k in keys) + "</table>")
    notes = "".join(f"<li>{esc(word(n))}</li>" for n in g.notes)
    return (f"<section class='graph' id='gm-graph-{int(g.graph_id)}'><h3>{esc(graph_title(g.graph_id, g.label))}</h3>"
            f"<p class='verdict small'>{esc(graph_verdict(g))}</p>{table}{periods}"
            + (f"<ul class='notes'>{notes}</ul>" if notes else "") + "</section>")


def graphs_html(graphs: tuple[Any, ...], totals: Any) -> str:
    body = ""
    if totals is not None:
        net = "" if totals.net_ns is None else f"; net {human_ns(totals.net_ns)}"
        saved = "" if totals.saved_ns is None else f", saved {human_ns(totals.saved_ns)} in replays"
        body += (f"<p class='hint'>{totals.graphs_built:,} graphs built, {totals.graphs_replayed:,} replayed "
                 f"({totals.replays:,} replays); one-time cost {esc(human_ns(totals.one_time_ns))}{esc(saved)}{esc(net)}.</p>")
    never = [g for g in graphs if g.status == "never_replayed"]
    if never:
        body += ("<p class='note'>Never replayed: " + ", ".join(esc(graph_title(g.graph_id, g.label)) for g in never)
                 + ". Building a graph costs time; one that is never replayed only costs.</p>")
    return body + "".join(graph_section(g) for g in graphs)


# ---- per kernel --------------------------------------------------------------------------------

def _num(ns: float | None) -> str:
    return "<td class='num' data-sort='-1'>—</td>" if ns is None else f"<td class='num' data-sort='{ns:.1f}'>{esc(human_ns(ns))}</td>"


def _count(n: int) -> str:
    return f"<td class='num' data-sort='{n}'>{n:,}</td>"


def kernel_table_html(totals: KernelTotals | None) -> str:
    if totals is None or not totals.kernels:
        return ""
    rows = []
    for k in totals.kernels:
        full = demangle(k.name)
        rows.append(f"<tr data-name='{esc(full.lower())} {esc(k.name.lower())}'><td class='name' title='{esc(full)}' "
                    f"data-sort='{esc(full.lower())}'>{esc(short_name(k.name))}</td>"
                    + _count(k.eager_count) + _num(k.eager_total_ns if k.eager_count else None) + _num(k.eager_median_ns)
                    + _count(k.graph_count) + _num(k.graph_total_ns if k.graph_count else None) + _num(k.graph_median_ns)
                    + "</tr>")
    head = ("<thead><tr><th data-type='text'>kernel</th><th>eager launches</th><th>eager GPU total</th><th>eager median</th>"
            "<th>graph-node runs</th><th>graph GPU total</th><th>graph median</th></tr></thead>")
    hint = ("Every kernel of the traced pass, launched eagerly vs run as a graph node; click a column to sort, "
            "hover a name for its full C++ name.")
    if not totals.graph_timed:
        hint += " Graph-detail trace: a replay is one span, so kernels inside graphs are not timed (record with --detail node)."
    if totals.distinct > len(totals.kernels):
        hint += f" Showing the {len(totals.kernels):,} of {totals.distinct:,} kernels with the most GPU time."
    return (f"<p class='hint'>{esc(hint)}</p><table class='sortable kernels' id='gm-kernels'>{head}<tbody>"
            + "".join(rows) + "</tbody></table>")


def cpu_speed_html(a: TraceAnalysis) -> str:
    """A row per run that sampled the CPU's speed on its main thread (analyzers.cpu_speed); '' where none did."""
    speeds = getattr(a, "cpu_speed", ())
    if not speeds:
        return ""
    rows = []
    for c in speeds:
        vs = f"{c.vs_fastest:.2f}x" if c.vs_fastest == c.vs_fastest else "—"  # NaN: no fastest to compare with
        cost = f"{100 * c.spent_ns / c.run_ns:.3f}%" if c.run_ns and c.run_ns > 0 else "—"
        rows.append(f"<tr><td>{esc(c.run)}</td>{_count(c.samples)}{_num(c.fast_ns)}{_num(c.median_ns)}{_num(c.slow_ns)}"
                    f"<td class='num'>{100 * c.slow_share:.0f}%</td><td class='num'>{esc(vs)}</td>"
                    f"<td class='num'>{esc(cost)}</td></tr>")
    head = ("<thead><tr><th data-type='text'>run</th><th>samples</th><th>fastest tenth</th><th>median</th>"
            "<th>slowest tenth</th><th>slow samples</th><th>median vs fastest</th><th>its cost</th></tr></thead>")
    reference = next((c.reference for c in speeds if c.reference), "a fixed Python loop")
    hint = (f"How fast the CPU ran on the program's main thread: each run timed {reference}, at most every "
            f"{short_ns(speeds[0].every_ns)}. CPU-bound figures (eager steps, captures) move with it; a run whose median "
            "sits well above the fastest tenth ran on a slower CPU.")
    return f"<p class='hint'>{esc(hint)}</p><table id='gm-cpu-speed'>{head}<tbody>" + "".join(rows) + "</tbody></table>"
