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

from graphmode.analyzers.inference import has_stamps
from graphmode.analyzers.inference import line_stamps as _stamps
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.run import StampsOf, build_run
from graphmode.analyzers.script_graphs import TorchWindow, compile_windows, run_entry, torch_windows
from graphmode.tracer.store import Trace


# Where the measuring and detail runs cut one graph's iterations differently, the timing run's periods still
# stand for them when the counts of timed iterations differ by at most this share (else the runs did other work).
SPLIT_TOLERANCE = 0.1


@dataclass(frozen=True)
class LineTiming:
    """The timing run's periods for a measuring run's iteration table."""

    timing_pass: int | None
    untraced: np.ndarray  # per row of the measuring table: untraced CPU period (ns), NaN where not matched
    notes: tuple[str, ...]
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
    notes: list[str] = []
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
        which = "; ".join(f"graph {g} ({' and '.join(w)})" for g, w in unstamped.items())
        notes.append(f"CPU-bound iterations launched from another thread than the main one, or from code outside the script, "
                     f"keep the measuring run's period (the timing run stamps the script's lines on the main thread only): {which}")
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
        notes.append(f"line{'s' if len(mismatched) > 1 else ''} {', '.join(short_loc(x) for x in mismatched[:3])} ran a different number "
                     "of times in the timing run than in the detail run: the iterations they start keep the measuring run's period")
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
            notes.append(f"graph {gid}: its {mode} iterations were found as {m_rows.size} in the measuring run and {d_rows.size} in the "
                         f"detail run, in other stretches: they take the timing run's {have.size} periods in order (the timing run's "
                         "distribution, not iteration by iteration)")
        else:
            notes.append(f"graph {gid}: its {mode} iterations differ between the measuring and detail runs ({m_rows.size} and "
                         f"{d_rows.size} iterations): they keep the measuring run's period")
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


def lines_to_time(trace: Trace) -> list[str]:
    """The lines a timing run should stamp ('file:line'): those that start the detail run's iterations of
    each graph and mode that is CPU-bound in the measuring run, the two lines around each of PyTorch's capture
    windows (`call_lines`) and around each other capture through its instantiation (`capture_lines`). Empty when
    there are none, or when the detail run has no line stamps (Python < 3.12)."""
    run = build_run(trace)
    sg = run.script_graphs()
    if sg is None or sg.structure_pass == sg.timing_pass:
        return []
    if not run.has_stamps(sg.structure_pass):
        return []
    stamps = run.line_stamps(sg.structure_pass)
    windows = torch_windows(trace, sg.structure_pass, callbacks_pass=True)
    around = sorted({x for pair in call_lines(stamps, windows) if pair is not None for x in pair}
                    | {x for pair in capture_lines(trace, sg.structure_pass, stamps, windows).values() for x in pair})
    measure = run.iterations(sg)[0]
    detail_sg = run.script_graphs(timing_pass=sg.structure_pass)
    if detail_sg is None:
        return around
    detail = run.iterations(detail_sg)[0]
    cpu = ~measure.gpu_bound & np.isfinite(measure.period)
    groups = {(int(g), str(m)) for g, m in zip(measure.graph_id[cpu], measure.mode[cpu])}
    if not groups:
        return around
    loc = starting_lines(trace, detail, stamps)[0]
    mask = np.array([(int(g), str(m)) in groups for g, m in zip(detail.graph_id, detail.mode)], dtype=bool)
    return sorted(set(chosen_lines(loc, mask)) | set(around))


@dataclass(frozen=True)
class RecordingCall:
    """The script's statement around one of PyTorch's capture windows (a cudagraph-tree recording, a `with
    torch.cuda.graph` block), as the timing run (no CUPTI) timed it: from the stamp of the line that was
    executing when the window opened to that of the next line stamped after it closed (which lines: the detail
    run's stamps of every line). For a cudagraph-tree recording that is the call of the compiled function:
    Dynamo's guards and PyTorch's dispatch into its tree before the recording, its bookkeeping and outputs
    after it; PyTorch's callbacks hear only the recording itself."""

    lines: tuple[str, str]  # 'file:line' stamped before the window opened, and the next one after it closed
    span_ns: float  # stamp of the second less that of the first, around the window
    window_ns: float  # the window in the same run
    # median span between the same two lines where no window lay between them (None: none, or fewer than STEADY_CALLS)
    steady_ns: float | None
    steady_count: int
    compile_ns: float = 0.0  # Dynamo's compilations (and other callback windows) inside the span, outside the window

    @property
    def outside_ns(self) -> float:
        """The statement's time outside PyTorch's window, its compilations left out (torch.compile's own cost,
        which the eager twin pays too)."""
        return self.span_ns - self.window_ns - self.compile_ns


# a statement's steady span needs this many runs of it without a window (a warm-up call would sway fewer)
STEADY_CALLS = 3


def call_lines(stamps: dict[str, np.ndarray], windows: tuple[TorchWindow, ...]) -> list[tuple[str, str] | None]:
    """Per PyTorch capture window (`windows`, script_graphs.torch_windows) of a run that stamped every line (the
    detail run; `stamps`, its `_stamps`): ('file:line' stamped last before the window opened on its thread,
    'file:line' stamped first after it closed); None where the thread has no stamp on one side (a window on
    another thread than the main one, or in code outside the script), and for a torch.cuda.graph block (a
    statement of its own: the one-time cost reads only a recording's statement, analyzers.per_graph.call_part, so
    a block's lines would be stamps for nothing)."""
    if not windows:
        return []
    tid, ts, loc = stamps["thread_id"], stamps["ts_ns"], stamps["loc"]
    out: list[tuple[str, str] | None] = []
    for w in windows:
        mine = np.flatnonzero(tid == w.thread_id)
        at = _around(ts[mine], w.start_ns, w.end_ns) if w.kind == "recording" else None
        out.append((str(loc[mine[at[0]]]), str(loc[mine[at[1]]])) if at is not None else None)
    return out


def timing_run_one_time(trace: Trace, detail_pass: int, timing_pass: int, timing_windows: tuple[TorchWindow, ...],
                        stamps_of: StampsOf | None = None) -> tuple[tuple[RecordingCall | None, ...], dict[int, CaptureSpan]]:
    """What the timing run gives the one-time costs: the statements around PyTorch's capture windows
    (`recording_calls`) and the captures made outside PyTorch (`capture_spans`), each run's stamps and the detail
    run's windows read once for both."""
    read = stamps_of or partial(_stamps, trace)
    d_stamps, t_stamps = read(detail_pass), read(timing_pass)
    d_windows = torch_windows(trace, detail_pass, callbacks_pass=True)
    calls = recording_calls(trace, detail_pass, timing_pass, timing_windows, d_stamps, t_stamps, d_windows) if timing_windows else ()
    return calls, capture_spans(trace, detail_pass, d_stamps, t_stamps, d_windows)


def recording_calls(trace: Trace, detail_pass: int, timing_pass: int, timing_windows: tuple[TorchWindow, ...],
                    d_stamps: dict[str, np.ndarray], t_stamps: dict[str, np.ndarray],
                    d_windows: tuple[TorchWindow, ...]) -> tuple[RecordingCall | None, ...]:
    """Per capture window the timing run heard (`timing_windows`, in the order of the detail run's `d_windows`):
    the statement around it in the timing run (`RecordingCall`), None where the timing run has not both lines'
    stamps around it. () when the detail run heard another number of windows. `d_stamps`, `t_stamps`: the two
    runs' `_stamps`."""
    pairs = call_lines(d_stamps, d_windows)
    if len(pairs) != len(timing_windows):
        return ()
    compiles = compile_windows(trace, timing_pass, callbacks_pass=False)
    # the detail run's spans: a statement that compiled there needs the timing run to have heard compilations
    d_compiles = compile_windows(trace, detail_pass, callbacks_pass=True) or ()
    d_tid, d_ts = d_stamps["thread_id"], d_stamps["ts_ns"]
    tid, ts, loc = t_stamps["thread_id"], t_stamps["ts_ns"], t_stamps["loc"]
    out: list[RecordingCall | None] = []
    for pair, w, dw in zip(pairs, timing_windows, d_windows):
        if pair is None:
            out.append(None)
            continue
        if compiles is None:  # a timing run recorded before it heard compilations: did the statement compile?
            mine = d_ts[d_tid == dw.thread_id]
            at = _around(mine, dw.start_ns, dw.end_ns)  # not None: call_lines found the pair there
            if at is not None and any(c0 < mine[at[1]] and c1 > mine[at[0]] for c0, c1, _ in d_compiles):
                out.append(None)
                continue
        on = tid == w.thread_id
        a, b = ts[on & (loc == pair[0])], ts[on & (loc == pair[1])]
        ia = int(np.searchsorted(a, w.start_ns, side="right")) - 1
        ib = int(np.searchsorted(b, w.end_ns, side="left"))
        if ia < 0 or ib >= b.size:
            out.append(None)
            continue
        busy = [(c0, c1) for c0, c1, th in compiles or () if th == w.thread_id]
        # the same statement where it ran without a window or a compilation: each stamp of the first line, to the
        # first stamp of the second after it, when that comes no later than the first line's next stamp
        nxt = np.searchsorted(b, a, side="right")
        ok = nxt < b.size
        ok[ia] = False
        ends = b[np.minimum(nxt, b.size - 1)]
        ok[:-1] &= ends[:-1] <= a[1:]
        for s0, s1 in [(u.start_ns, u.end_ns) for u in timing_windows] + busy:  # no window or compilation inside
            ok &= ~((s0 < ends) & (s1 > a))
        spans = (ends - a)[ok].astype(np.float64)
        steady = float(np.median(spans)) if spans.size >= STEADY_CALLS else None
        lo, hi = int(a[ia]), int(b[ib])
        compiled = _overlap(busy, lo, w.start_ns) + _overlap(busy, w.end_ns, hi)
        out.append(RecordingCall(pair, float(hi - lo), float(w.end_ns - w.start_ns), steady, int(spans.size), compiled))
    return tuple(out)


def _overlap(spans: list[tuple[int, int]], lo: int, hi: int) -> float:
    """Time of the union of `spans` inside [lo, hi] (nested compilations counted once)."""
    total, reach = 0, lo
    for s0, s1 in sorted(spans):
        s0, s1 = max(s0, reach), min(s1, hi)
        if s1 > s0:
            total += s1 - s0
            reach = s1
    return float(total)


@dataclass(frozen=True)
class CaptureSpan:
    """A graph's capture (or explicit build) through its instantiation and upload, made outside PyTorch (CuPy,
    cuda-python), as the timing run (no CUPTI) timed it: between its stamps of the line that was executing when
    the capture began and the next line stamped after the last instantiate or upload ended (which lines, and which
    of their executions, from the detail run's stamps of every line). The whole span counts: what those
    statements do around the CUDA calls (CuPy's end_capture destroys the captured graph after instantiating it)
    is part of making the graph. A span mostly made of other work is not used: where the detail run spent more
    than MAX_OUTSIDE_SHARE of it outside the region (a library call that captures and then benchmarks, like
    Triton's do_bench_cudagraph, is one statement much longer than its capture)."""

    lines: tuple[str, str]
    span_ns: float  # timing run: the second line's stamp less the first's
    outside_ns: float  # detail run (slowed by its callbacks): the same span less the region


MAX_OUTSIDE_SHARE = 0.1


def capture_regions(trace: Trace, pass_id: int) -> dict[int, tuple[int, int, int]]:
    """graph -> (start of its capture or build, end of its last instantiate or upload, thread) in a pass that
    recorded graph events (the detail run), for graphs captured or built once and instantiated on the same
    thread."""
    rows = trace.rows("SELECT graph_id, event, start_ns, end_ns, thread_id FROM graph_events WHERE pass_id = ? AND event IN "
                      "('capture', 'build', 'instantiate', 'upload') ORDER BY start_ns", [pass_id])
    made: dict[int, list[tuple[str, int, int, int]]] = {}
    for gid, ev, s, e, th in rows:
        made.setdefault(int(gid), []).append((str(ev), int(s), int(e), int(th)))
    out: dict[int, tuple[int, int, int]] = {}
    for gid, evs in made.items():
        built = [x for x in evs if x[0] in ("capture", "build")]
        ready = [x for x in evs if x[0] in ("instantiate", "upload")]
        if len(built) != 1 or not ready or len({x[3] for x in evs}) != 1:
            continue
        out[gid] = (built[0][1], max(x[2] for x in ready), built[0][3])
    return out


def _around(ts: np.ndarray, lo: int, hi: int) -> tuple[int, int] | None:
    """Positions of the last stamp at or before `lo` and the first at or after `hi` (None without both)."""
    i = int(np.searchsorted(ts, lo, side="right")) - 1
    j = int(np.searchsorted(ts, hi, side="left"))
    return (i, j) if i >= 0 and j < ts.size else None


def capture_lines(trace: Trace, pass_id: int, stamps: dict[str, np.ndarray], windows: tuple[TorchWindow, ...],
                  regions: dict[int, tuple[int, int, int]] | None = None) -> dict[int, tuple[str, str]]:
    """graph -> the two lines around its capture region (`capture_regions`, unless given) in a run that stamped
    every line (the detail run: `stamps`, its `_stamps`), where the region is most of the span between their
    stamps. Graphs captured inside one of PyTorch's `windows` (a cudagraph-tree recording, a torch.cuda.graph
    block: timed by their own rule) are left out."""
    regions = {g: r for g, r in (regions if regions is not None else capture_regions(trace, pass_id)).items()
               if not any(w.start_ns <= r[0] <= w.end_ns for w in windows)}
    if not regions:
        return {}
    tid, ts, loc = stamps["thread_id"], stamps["ts_ns"], stamps["loc"]
    out: dict[int, tuple[str, str]] = {}
    for gid, (r0, r1, th) in regions.items():
        mine = np.flatnonzero(tid == th)
        at = _around(ts[mine], r0, r1)
        if at is None:
            continue
        a, b = mine[at[0]], mine[at[1]]
        if (ts[b] - ts[a]) - (r1 - r0) <= MAX_OUTSIDE_SHARE * (ts[b] - ts[a]):
            out[gid] = (str(loc[a]), str(loc[b]))
    return out


def capture_spans(trace: Trace, detail_pass: int, d_stamps: dict[str, np.ndarray], t_stamps: dict[str, np.ndarray],
                  d_windows: tuple[TorchWindow, ...]) -> dict[int, CaptureSpan]:
    """graph -> its capture region as the timing run timed it (`CaptureSpan`), where the timing run stamped both
    lines as many times as the detail run did (the k-th execution is then the same one in both runs).
    `d_stamps`, `t_stamps`: the detail and timing runs' `_stamps`; `d_windows`: the detail run's PyTorch windows."""
    regions = capture_regions(trace, detail_pass)
    lines = capture_lines(trace, detail_pass, d_stamps, d_windows, regions)
    if not lines:
        return {}
    d_tid, d_ts, d_loc = d_stamps["thread_id"], d_stamps["ts_ns"], d_stamps["loc"]
    t_loc, t_ts = t_stamps["loc"], t_stamps["ts_ns"]
    t_main = t_stamps["thread_name"] == "MainThread"
    out: dict[int, CaptureSpan] = {}
    for gid, (la, lb) in lines.items():
        r0, r1, th = regions[gid]
        on = d_tid == th
        da, db = d_ts[on & (d_loc == la)], d_ts[on & (d_loc == lb)]
        ta, tb = t_ts[t_main & (t_loc == la)], t_ts[t_main & (t_loc == lb)]
        if da.size != ta.size or db.size != tb.size:
            continue  # the runs did different things on these lines
        ka = int(np.searchsorted(da, r0, side="right")) - 1
        kb = int(np.searchsorted(db, r1, side="left"))
        if ka < 0 or kb >= db.size or tb[kb] <= ta[ka]:
            continue
        out[gid] = CaptureSpan((la, lb), float(tb[kb] - ta[ka]), float((db[kb] - da[ka]) - (r1 - r0)))
    return out
