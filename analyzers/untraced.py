"""CPU-bound periods as the program runs untraced: the timing run's line stamps matched to the measuring
run's iterations (docs/design.md, "The timing run"; docs/metrics.md, "Untraced periods").

Every CUPTI activity kind slows CPU-bound code (docs/benchmarks.md, "What the tool costs"), so a CPU-bound
period cannot come from any traced run. `graphmode run` therefore makes a third run without
CUPTI that stamps the user's lines (tracer.line_stamps). The match goes through the detail run, which
stamped every execution of every user line and recorded every launch call:

1. **Which line starts each iteration.** In the detail run, per graph and mode, the line closest before
   the iterations' first launch calls among those that run exactly once between consecutive iterations'
   first launches (a step's call line), else the line executing when the first launch call began (the last
   stamp on that thread before it, which may run many times an iteration). Which of its executions (its
   ordinal) started the iteration is known. Fewer executions are fewer stamps, and each stamp costs the
   timing run about a microsecond.
2. **The same executions untraced.** The timing run stamps those lines only. Threads are matched by
   their Python name (numbered in creation order). A line whose execution
   count on a thread differs between the two runs did different things in them: it is not used.
3. **Periods.** An iteration's untraced CPU period is the time from its line execution to that of the
   next iteration of the same stretch in the timing run.
4. **Onto the measuring run.** Iterations of one graph and mode come in the same order and stretches in
   both traced runs (the graphs are already mapped, analyzers.script_graphs). Where the two runs cut them
   differently (a few more or fewer iterations, other stretches, as a transformers decoder's did), the
   measuring run's periods take the timing run's in order, evenly spread, when the counts differ by
   at most SPLIT_TOLERANCE, and a note says so; beyond that the runs did different work and that graph's
   mode keeps the measuring run's periods.

The untraced period replaces a CPU-bound one only: untraced, an iteration cannot take less than its own
GPU work, so the period is max(untraced CPU period, GPU busy time) and is GPU-bound when the latter is
larger. GPU-bound periods (close to untraced: docs/benchmarks.md) and one-time costs stay the measuring
run's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.stamps import StampsOf
from graphmode.analyzers.stamps import line_stamps as _stamps
from graphmode.analyzers.torch_windows import run_entry
from graphmode.tracer.store import Trace


# Where the measuring and detail runs cut one graph's iterations differently, the timing run's periods still
# stand for them when the counts of timed iterations differ by at most this share (else the runs did other work).
SPLIT_TOLERANCE = 0.1


@dataclass(frozen=True)
class LineTiming:
    """The timing run's periods for a measuring run's iteration table."""

    timing_pass: int | None
    untraced: np.ndarray  # per row of the measuring table: untraced CPU period (ns), NaN where not matched
    notes: tuple[Note, ...]
    # per row: what the timing run's own stamps cost inside that period (NaN unknown)
    stamp_ns: np.ndarray | None = None


def _asked_lines(trace: Trace, pass_id: int) -> set[str] | None:
    """The lines the timing run was configured to stamp (its entry in meta.runs); None if not recorded."""
    lines = (run_entry(trace, pass_id).get("config") or {}).get("stamp_lines")
    return {str(x) for x in lines} if isinstance(lines, list) else None


def timing_pass_id(trace: Trace) -> int | None:
    p = next((p for p in trace.passes if p.detail == "stamps"), None)
    return p.pass_id if p is not None else None



def starting_lines(trace: Trace, detail: IterationTable, stamps: dict[str, np.ndarray] | None = None,
                   allowed: set[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the detail run's table: (the line that marks the start of the iteration on its launching
    thread (`detail.thread_id`), '' unknown; the ordinal of that line's execution among its executions on that
    thread, -1 unknown). `stamps`: the detail run's, when already fetched.

    The line is, per graph and mode, the one closest before the first launch among the lines that run exactly
    once between the first launches of consecutive iterations (`anchor_line`): a step called from a loop is
    marked by its call line, which runs once a step, rather than by the line inside it that launches (which may
    run many times a step: each of its executions is a stamp, and a stamp costs the timing run about a
    microsecond). Where no line runs once per iteration (or, with `allowed`, none of the lines a timing run
    stamped does), the line executing when the first launch call began."""
    n = detail.size
    loc = np.full(n, "", dtype=object)
    seq = np.full(n, -1, dtype=np.int64)
    s = stamps if stamps is not None else _stamps(trace, detail.pass_id)
    if not s["ts_ns"].size or not n:
        return loc, seq
    tid, ts = s["thread_id"], s["ts_ns"]
    for t in np.unique(detail.thread_id):  # per launching thread
        rows = np.flatnonzero((detail.thread_id == t) & (detail.launch_ns >= 0))
        mine = np.flatnonzero(tid == t)
        if not rows.size or not mine.size:
            continue
        k = np.searchsorted(ts[mine], detail.launch_ns[rows], side="right") - 1
        ok = k >= 0
        loc[rows[ok]] = s["loc"][mine[k[ok]]]
        seq[rows[ok]] = s["seq"][mine[k[ok]]]
        mine_loc = s["loc"][mine]
        # per group
        for gid, mode in sorted({(int(g), str(m)) for g, m in zip(detail.graph_id[rows], detail.mode[rows])}):
            sel = ok & (detail.graph_id[rows] == gid) & (detail.mode[rows] == mode)
            grows, gk = rows[sel], k[sel]
            order = np.argsort(detail.launch_ns[grows], kind="stable")
            grows, gk = grows[order], gk[order]
            pair = detail.stretch[grows[:-1]] == detail.stretch[grows[1:]]
            anchor = anchor_line(mine_loc, gk[:-1][pair], gk[1:][pair], allowed)
            if anchor is None:
                continue
            at = np.flatnonzero(mine_loc == anchor)  # the anchor's executions on this thread, in time order
            last = np.searchsorted(at, gk, side="right") - 1  # its last execution before each first launch
            good = last >= 0
            loc[grows[good]] = anchor
            seq[grows[good]] = s["seq"][mine[at[last[good]]]]
    return loc, seq


def anchor_line(locs: np.ndarray, before: np.ndarray, at: np.ndarray, allowed: set[str] | None = None) -> str | None:
    """The line that runs exactly once in every window (before[i], at[i]] of stamp positions (`locs`: one
    thread's stamped lines in time order; a window runs from the stamp current at one iteration's first launch
    to the one current at the next's), closest to the window's end (median over windows); None when no line
    qualifies or there is no window. With `allowed`, only those lines qualify."""
    if not before.size:
        return None
    lo, hi = int(before[0]), int(at[0])
    first = locs[lo + 1:hi + 1]
    names, counts = np.unique(first, return_counts=True)
    best: tuple[float, str] | None = None
    for name in names[counts == 1]:  # lines once in the first window: few
        if allowed is not None and str(name) not in allowed:
            continue
        pos = np.flatnonzero(locs == name)
        n_in = np.searchsorted(pos, at, side="right") - np.searchsorted(pos, before, side="right")
        if not np.all(n_in == 1):
            continue
        last = pos[np.searchsorted(pos, at, side="right") - 1]
        distance = float(np.median(at - last))
        if best is None or distance < best[0]:
            best = (distance, str(name))
    return best[1] if best is not None else None


def chosen_lines(loc: np.ndarray, mask: np.ndarray) -> list[str]:
    return sorted({str(x) for x in loc[mask] if x})


Thread = tuple[str, int]  # a thread as the same in every run: its Python name, and its rank among threads of that name


def _by_line(s: dict[str, np.ndarray], lines: set[str]) -> tuple[dict[tuple[Thread, str], np.ndarray], dict[int, Thread]]:
    """(thread, 'file:line') -> that line's stamps (`_stamps` of one pass) on that thread, in order; and each
    OS thread's identity across runs: its Python name ('MainThread', 'Thread-3 (worker)': numbered in creation
    order), and among threads of one name, the order of their first stamp of one of `lines`."""
    keep = np.isin(s["loc"], sorted(lines)) if s["loc"].size and lines else np.zeros(s["loc"].size, dtype=bool)
    who: dict[int, Thread] = {}
    per_name: dict[str, int] = {}
    out: dict[tuple[Thread, str], list[int]] = {}
    for t, name, lc, x in zip(s["thread_id"][keep].tolist(), s["thread_name"][keep].tolist(), s["loc"][keep].tolist(),
                              s["ts_ns"][keep].tolist()):
        if t not in who:
            who[t] = (name, per_name.get(name, 0))
            per_name[name] = who[t][1] + 1
        out.setdefault((who[t], lc), []).append(x)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}, who


def line_timing(trace: Trace, measure: IterationTable, detail: IterationTable, stamps_of: StampsOf | None = None) -> LineTiming:
    """Untraced CPU periods for the measuring run's rows (NaN where the timing run gives none). `stamps_of`: reads a
    pass's line stamps (default: from the trace; the Run's, read once)."""
    read = stamps_of or partial(_stamps, trace)
    tp = timing_pass_id(trace)
    untraced = np.full(measure.size, np.nan)
    if not measure.size or not detail.size:
        return LineTiming(tp, untraced, ())
    notes: list[Note] = []
    detail_stamps = read(detail.pass_id)
    # the anchor lines among those the timing run stamped (a trace recorded before anchors stamped the launching lines)
    loc, seq = starting_lines(trace, detail, detail_stamps, _asked_lines(trace, tp) if tp is not None else None)
    thread = detail.thread_id
    cpu = ~measure.gpu_bound & np.isfinite(measure.period)
    unstamped: dict[int, list[str]] = {}
    for gid, mode in sorted({(int(g), str(m)) for g, m in zip(measure.graph_id[cpu], measure.mode[cpu])}):
        mine = (detail.graph_id == gid) & (detail.mode == mode)
        if mine.any() and not loc[mine].astype(bool).any():
            unstamped.setdefault(gid, []).append("replays" if mode == "graph" else "eager iterations")
    if unstamped:
        notes.append(note("unstamped_iterations", graph_ids=tuple(unstamped),
                          what=tuple(" and ".join(w) for w in unstamped.values())))
    if tp is None:
        return LineTiming(tp, untraced, tuple(notes))
    lines = {str(x) for x in loc if x}
    asked = _asked_lines(trace, tp)
    if asked is not None:  # lines the timing run was not asked to stamp (GPU-bound iterations') are not compared
        lines &= asked
    timed, _ = _by_line(read(tp), lines)
    traced, order = _by_line(detail_stamps, lines)
    mismatched = sorted({lc for key in traced.keys() | timed.keys() for lc in [key[1]]
                         if traced.get(key, np.zeros(0)).size != timed.get(key, np.zeros(0)).size})
    if mismatched:
        notes.append(note("stamp_count_mismatch", count=len(mismatched), lines=tuple(short_loc(x) for x in mismatched[:3])))
    # the detail run's untraced periods, row by row, and how many of the timing run's stamps each held
    d_untraced = np.full(detail.size, np.nan)
    d_stamps = np.full(detail.size, np.nan)
    all_timed = np.sort(np.concatenate([v for v in timed.values()])) if timed else np.zeros(0, dtype=np.int64)
    for rows in _series(detail):
        for a, b in zip(rows[:-1], rows[1:]):  # consecutive iterations of one stretch
            if detail.stretch[a] != detail.stretch[b] or not loc[a] or loc[a] != loc[b] or seq[a] < 0 or seq[b] <= seq[a]:
                continue
            g = (order.get(int(thread[a]), ("", -1)), str(loc[a]))
            t = timed.get(g)
            if t is None or str(loc[a]) in mismatched or t.size <= seq[b]:
                continue
            d_untraced[a] = float(t[seq[b]] - t[seq[a]])
            d_stamps[a] = float(np.searchsorted(all_timed, t[seq[b]]) - np.searchsorted(all_timed, t[seq[a]]))
    # onto the measuring run: per graph and mode, the same iterations in the same order
    stamps = np.full(measure.size, np.nan)
    for m_rows, d_rows, (gid, mode), same in _aligned(measure, detail):
        if same:
            untraced[m_rows] = d_untraced[d_rows]
            stamps[m_rows] = d_stamps[d_rows]
            continue
        have = d_rows[np.isfinite(d_untraced[d_rows])]
        if not have.size:
            continue
        want = m_rows[np.isfinite(measure.period[m_rows])]
        if want.size and abs(want.size - have.size) <= SPLIT_TOLERANCE * max(want.size, have.size):
            # The same work, found as a few more or fewer iterations or cut into other stretches (a warm-up or a
            # stray launch between them): the measuring run's periods take the timing run's in order, evenly
            # spread where the counts differ. Their distribution is the timing run's; a row is not its twin.
            pick = have[np.round(np.linspace(0, have.size - 1, want.size)).astype(np.int64)]
            untraced[want] = d_untraced[pick]
            stamps[want] = d_stamps[pick]
            notes.append(note("iterations_respread", graph_id=gid, mode=mode, measured=int(m_rows.size), detail=int(d_rows.size),
                              periods=int(have.size)))
        else:
            notes.append(note("iterations_differ", graph_id=gid, mode=mode, measured=int(m_rows.size), detail=int(d_rows.size)))
    cost = run_entry(trace, tp).get("stamp_cost_ns")
    stamp_ns = stamps * float(cost) if isinstance(cost, (int, float)) else None
    return LineTiming(tp, untraced, tuple(notes), stamp_ns)


def _series(t: IterationTable) -> list[np.ndarray]:
    """Row indices of each (graph, mode, stretch), in start order."""
    out = []
    for s in np.unique(t.stretch):
        rows = np.flatnonzero(t.stretch == s)
        out.append(rows[np.argsort(t.start_ns[rows], kind="stable")])
    return out


def _aligned(m: IterationTable, d: IterationTable) -> list[tuple[np.ndarray, np.ndarray, tuple[int, str], bool]]:
    """Per (graph, mode): the measuring and detail rows in start order, and whether the two runs' iterations
    agree in count and stretch sizes (then row i of one is row i of the other)."""
    out: list[tuple[np.ndarray, np.ndarray, tuple[int, str], bool]] = []
    for gid, mode in sorted({(int(g), str(x)) for g, x in zip(d.graph_id, d.mode)}):
        dr = np.flatnonzero((d.graph_id == gid) & (d.mode == mode))
        mr = np.flatnonzero((m.graph_id == gid) & (m.mode == mode))
        dr, mr = dr[np.argsort(d.start_ns[dr], kind="stable")], mr[np.argsort(m.start_ns[mr], kind="stable")]
        same = dr.size == mr.size and np.array_equal(_run_lengths(d.stretch[dr]), _run_lengths(m.stretch[mr]))
        out.append((mr, dr, (gid, mode), bool(same)))
    return out


def _run_lengths(x: np.ndarray) -> np.ndarray:
    if not x.size:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(x[1:] != x[:-1]) + 1
    return np.diff(np.concatenate([[0], change, [x.size]]))


def short_loc(loc: str) -> str:
    """'file.py:12' of a 'path/to/file.py:12'."""
    file, _, line = loc.rpartition(":")
    return f"{file.rsplit('/', 1)[-1]}:{line}"


TIMED_SHARE = 0.8  # a graph's mode is timed by the timing run when it times this share of its CPU-bound iterations


def stamp_overhead(t: IterationTable, lt: LineTiming) -> dict[tuple[int, str], float]:
    """Per (graph, mode) timed by the timing run (`t` = with_untraced's table): the median time its own line
    stamps took inside an iteration's period (stamps in the period x the cost of one, measured by the run)."""
    if lt.stamp_ns is None:
        return {}
    out: dict[tuple[int, str], float] = {}
    timed = t.timed_by == "timing"
    for gid, mode in {(int(g), str(m)) for g, m in zip(t.graph_id[timed], t.mode[timed])}:
        v = lt.stamp_ns[timed & (t.graph_id == gid) & (t.mode == mode)]
        v = v[np.isfinite(v)]
        if v.size:
            out[(gid, mode)] = float(np.median(v))
    return out


def with_untraced(t: IterationTable, lt: LineTiming) -> IterationTable:
    """The measuring run's table with CPU-bound rows timed by the timing run: period and work =
    max(untraced CPU period, the row's own GPU busy time), GPU-bound where the GPU time is larger; the
    traced work stays in `traced_work`. Per graph and mode, all or nothing: where the timing run times at
    least TIMED_SHARE of the CPU-bound iterations, the rest (a change of line between two iterations, the
    last warm-up before the timed loop, say) are left out of the period (`timed_by` 'untimed'); below it,
    the mode keeps the measuring run's periods, since a period mixing two runs' would be neither's."""
    if not np.isfinite(lt.untraced).any():
        return t
    cpu = ~t.gpu_bound & np.isfinite(t.period)
    has = np.isfinite(lt.untraced) & cpu
    use = np.zeros(t.size, dtype=bool)
    drop = np.zeros(t.size, dtype=bool)
    for gid, mode in {(int(g), str(x)) for g, x in zip(t.graph_id[has], t.mode[has])}:
        mine = (t.graph_id == gid) & (t.mode == mode) & cpu
        if int((mine & has).sum()) >= TIMED_SHARE * int(mine.sum()):
            use |= mine & has
            drop |= mine & ~has
    if not use.any():
        return t
    fixed = np.maximum(lt.untraced, t.gpu_busy_ns.astype(np.float64))
    period = np.where(use, fixed, np.where(drop, np.nan, t.period))
    work = np.where(use, fixed, np.where(drop, np.nan, t.work))
    gpu_bound = np.where(use, t.gpu_busy_ns > lt.untraced, t.gpu_bound)
    cpu_period = np.where(use, lt.untraced, t.cpu_period)
    timed = np.where(use, "timing", np.where(drop, "untimed", t.timed_by)).astype(object)
    return dataclasses.replace(t, period=period, work=work, gpu_bound=gpu_bound, cpu_period=cpu_period, timed_by=timed,
                               traced_work=np.where(use, t.work, t.traced_work))
