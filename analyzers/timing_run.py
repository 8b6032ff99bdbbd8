"""What the timing run (no CUPTI; docs/design.md, "The timing run") gives the one-time costs: the script's statements
around PyTorch's capture windows (`RecordingCall`) and the captures made outside PyTorch (`CaptureSpan`), from the
line stamps of the detail run and of the timing run. Below analyzers.script_graphs, which reads them into its
ScriptGraphs; the CPU-bound periods of the timing run are analyzers.untraced's."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from graphmode.analyzers.stamps import StampsOf
from graphmode.analyzers.stamps import line_stamps as _stamps
from graphmode.analyzers.torch_windows import TorchWindow, compile_windows, torch_windows
from graphmode.tracer.store import Trace


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
