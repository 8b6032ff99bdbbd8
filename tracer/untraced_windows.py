"""Untraced windows inside the one traced run (issues 29 and 30; benchmarks/notes/s24): where the user's loop is steady
and no CUDA graph exists yet, the run detaches CUPTI for a stretch of the loop's iterations, times them by the line
stamps alone, and attaches CUPTI again.

Why detach: a paused session (every activity kind off, the callback domains off, even unsubscribed) still cost a
CPU-bound PyTorch forward 1.3-1.45x (sessions 22 and 24); detached (`cuptiFinalize`) the same forward ran at its
untraced speed (0.97-1.0x). Attaching again is safe where no graph exists: a graph instantiated while GRAPH_TRACE was
on crashed its replays after a detach, and one instantiated while detached crashed under GRAPH_TRACE once attached
again (session 22), so a window opens only before the process's first graph, and the sessions attached after a window
record no GRAPH_TRACE (each replay folded from its nodes' records, as `graphmode.trace()` does). CUPTI numbers
correlation ids afresh in each attached session (from 19 again, session 24) while stream and context ids carry on: the
tracer keeps each session's records apart (tracer.script).

The rule, from the stamps of the user's lines (tracer.line_stamps; the main thread's only), cheap enough to run at each:
- a line's *gap* is the number of stamps between two of its executions; a line whose gap came out the same
  TRACED_BEFORE times in a row is a steady loop's line (its *anchor*), and the lines stamped in its last gap its *body*;
- then, where `may_detach()` (no graph in the process), the window opens: CUPTI detaches;
- it closes (CUPTI attaches again) at the first stamp of a line outside the body (the loop ended, or its body changed:
  before that line runs, so a capture the line makes is traced), when the anchor's gap changes, after
  `window_iterations` executions of the anchor (the one run: RUN_WINDOW_ITERATIONS, to the loop's end), WINDOW_MAX_NS
  after it opened, or when PyTorch's hooks hear something (a capture starting, a log record: tracer.script reads the
  CUPTI clock for them, and a window closes first, reason 'hook');
- a loop gets one window per entry: no line of its body opens another until a line outside that body has run;
- the linger (the one run's default since session 35, `linger_ns`): a window closed because its loop ended stays
  detached up to LINGER_MS, so that a PyTorch capture after the program's warm-up takes the detached state over with no
  detach just before it; it ends where another loop runs (LINGER_LOOP), a framework whose captures are not heard is
  loaded, PyTorch's hooks hear something else, or the time is up.
The analysis times the anchor's executions inside each window (analyzers, "Untraced windows"). The traced iterations
before a window are the step the analysis finds (its repetition rules need 20 in a row: LOOP_STEP_MIN), so
TRACED_BEFORE is a few more.

**Untraced captures** (CaptureController, sessions 28-29): what a one-run capture pays is CUPTI being attached, not its
records (benchmarks/notes/s26-s27: a ViT's capture block 1.6-2.8x untraced, and no choice of records made it cheaper).
So the program's PyTorch captures (`CUDAGraph.capture_begin`, which `torch.cuda.graph` and `make_graphed_callables` go
through) run with CUPTI detached, from just before capture_begin to just after capture_end (the end of the capture and
the instantiation untraced too), where a session attaches again (no GRAPH_TRACE) and graphmode runs an empty graph of
its own: a session's first graph operations are slow (7.6-10.5 ms for a ViT's capture_end attached just before it,
6.3-7.7 ms for its first replay attached just after, against 0.6-0.9 and 2.0 untraced), and graphmode's own graph takes
that first cost (the program's first replay then 2.25-2.42 ms; benchmarks/notes/s28, call 3). The graph is known from
its replays: the executable's id PyTorch gives (`raw_cuda_graph_exec`), the kernel records of its first replay in order
(tracer.lifecycle, adopted graphs); its edges and its own capture records are not recorded. The safety rule: a capture
detaches only where no session that records GRAPH_TRACE has seen a graph (a graph instantiated under GRAPH_TRACE
crashed its replays after a detach, session 22): before the process's first graph, or in a session attached again
(without GRAPH_TRACE) after a window or an untraced capture. So not after the empty capture with which cudagraph trees
set up their memory pool, which is then the process's first graph, traced; and not for that capture itself. At most
MAX_UNTRACED_CAPTURES a run (each detach, attach and own graph costs the run 30-90 ms of wall time). The sessions'
graph records are read together (tracer.script.write_script_pass: CUPTI's ids run on across sessions). The detach, the
attach and graphmode's own graph happen inside the program's capture block: their times are recorded and left out of
its cost by the analysis (analyzers.script_graphs, tracer gaps). So are the memory samples PyTorch's hooks take just
before the detach and just after the attach (tracer.torch_hooks; the pool's snapshot with the allocator history on,
0.6-1.2 ms a capture in session 29's traces, none of it the program's): `begin(since=)` and `end(after=)` widen the
two gaps over them.

Standard library only (tests drive the controller with made-up stamps, synthetic).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

TRACED_BEFORE = 24  # a line's gap the same this many times in a row: a steady loop
# the controller's default for the anchor's executions a window lasts at most (the one run's before session 35)
WINDOW_ITERATIONS = 32
# The one run's windows (tracer.script._window_settings, since session 35): a window lasts to its loop's end (at most
# WINDOW_MAX_NS) and CUPTI stays detached up to LINGER_MS after it (the linger), so that a capture after the program's
# warm-up takes the detached state over (benchmarks/notes/s33-s35: a detach just before a capture slows it 1.35x)
RUN_WINDOW_ITERATIONS = 100_000
LINGER_MS = 1_000
WINDOW_MAX_NS = 2_000_000_000  # and its time at most
# a line's gap the same this many times in a row while a window's detached state lingers is a loop of the program's
# that the trace should hold, and the linger ends (CUPTI attaches). PyTorch's documented capture recipe warms up for 3
# steps: its `for` line is stamped 4 times (once more as the loop ends), 3 same gaps, so a capture after it still takes
# the linger over (with 3, session 34's decode step attached again there)
LINGER_LOOP = 4


@dataclass
class Window:
    """One untraced window, on the stamps' clock (perf_counter_ns)."""

    anchor: int  # the stamper's index of the anchor line
    start_ns: int  # the anchor's stamp that opened it (the detach follows)
    start_pos: int  # that stamp's position among the run's stamps
    gap: int
    detach_ns: int = 0  # what detaching took
    end_ns: int = 0  # the stamp that closed it (the attach follows)
    end_pos: int = -1
    attach_ns: int = 0
    iterations: int = 0  # the anchor's executions inside, after the one that opened it
    linger_end_ns: int = 0  # the linger: CUPTI stayed detached after a 'left' close until here
    # 'capture' (a capture took the detached state over), 'loop' (the window's loop ran again, or another loop ran:
    # LINGER_LOOP), 'time', 'framework' (one whose captures are not heard was loaded: may_linger), 'hook' (PyTorch's
    # hooks heard something else), 'end'
    linger_reason: str = ""
    reason: str = ""  # 'left' (a line outside the body), 'changed' (the anchor's gap), 'iterations', 'time', 'hook', 'end'


@dataclass
class WindowController:
    """Decides at each stamp whether to detach or attach CUPTI (module doc). `detach`/`attach` do it; `may_detach`
    says whether a window may open now; `locs(a, b)` gives the stamper's line indices of stamps a..b-1."""

    detach: Callable[[], None]
    attach: Callable[[], None]
    may_detach: Callable[[], bool]
    locs: Callable[[int, int], Sequence[int]]
    traced_before: int = TRACED_BEFORE
    window_iterations: int = WINDOW_ITERATIONS
    window_max_ns: int = WINDOW_MAX_NS
    # after a window closes because its loop ended ('left'), CUPTI stays detached up to this long (the one run:
    # LINGER_MS), so that a capture coming next (after the program's warm-up) runs untraced with no detach just before
    # it (benchmarks/notes/s33, call 4: a detach just before a capture slows it 1.35x). 0: off
    linger_ns: int = 0
    # whether a window that closes now may linger: only a capture that graphmode hears (PyTorch's) can take the
    # detached state over; another framework's capture while detached would go unseen (tracer.script._may_linger)
    may_linger: Callable[[], bool] = lambda: True
    clock: Callable[[], int] = time.perf_counter_ns
    windows: list[Window] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _last: dict[int, int] = field(default_factory=dict)  # line -> position of its last stamp
    _gap: dict[int, int] = field(default_factory=dict)
    _run: dict[int, int] = field(default_factory=dict)  # line -> how many times in a row its gap came out the same
    _done: dict[int, frozenset[int]] = field(default_factory=dict)  # anchors windowed in this entry of their loop -> body
    _open: Window | None = None
    _linger: Window | None = None  # the closed window whose detached state lingers (linger_ns)
    _linger_gap: dict[int, int] = field(default_factory=dict)  # line -> its gap inside the linger (LINGER_LOOP)
    _linger_run: dict[int, int] = field(default_factory=dict)
    _body: frozenset[int] = frozenset()
    _off: bool = False  # after a failed detach or attach, or once the run ends: no more windows
    _finished: bool = False
    # close() may come from another thread (PyTorch's hooks read the clock there): one close per window
    # (re-entrant: end_linger attaches under it, and anything the attach calls back on this thread may take it again)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def detached(self) -> bool:
        return self._open is not None or self._linger is not None

    @property
    def lingering(self) -> bool:
        return self._linger is not None

    def on_stamp(self, idx: int, pos: int, now: int) -> None:
        """After the stamper's `pos`-th stamp, of line `idx`, at `now`."""
        if self._finished:
            return
        prev = self._last.get(idx)
        self._last[idx] = pos
        gap = pos - prev if prev is not None else -1
        lingering = self._linger  # read once: a capture on another thread may end the linger meanwhile
        if lingering is not None:  # no window opens while one's detached state lingers
            self._leave_done(idx)
            reason = self._linger_ends(lingering, idx, prev, gap, now)
            if reason:
                self.end_linger(now, reason)
            return
        w = self._open
        if w is not None:
            if idx not in self._body:
                self.close(now, pos, "left")
            elif idx == w.anchor:
                if gap != w.gap:
                    self.close(now, pos, "changed")
                else:
                    w.iterations += 1
                    if w.iterations >= self.window_iterations:
                        self.close(now, pos, "iterations")
                    elif now - w.start_ns >= self.window_max_ns:
                        self.close(now, pos, "time")
            return
        self._leave_done(idx)
        if gap <= 0:
            return
        if gap == self._gap.get(idx):
            run = self._run[idx] = self._run.get(idx, 0) + 1
        else:
            self._gap[idx] = gap
            run = self._run[idx] = 1
        if run < self.traced_before or self._off or any(idx in body for body in self._done.values()) or not self.may_detach():
            return
        body = frozenset(self.locs(prev + 1, pos + 1))  # type: ignore[operator]
        w = Window(anchor=idx, start_ns=now, start_pos=pos, gap=gap)
        t0 = self.clock()
        try:
            self.detach()
        except Exception as e:  # the run goes on traced: no window
            self.errors.append(f"detach: {type(e).__name__}: {e}")
            self._off = True
            return
        w.detach_ns = self.clock() - t0
        self._open, self._body = w, body
        self._done[idx] = body

    def _leave_done(self, idx: int) -> None:
        """A loop windowed in this entry may open another window once a line outside its body ran."""
        if self._done:
            for a in [a for a, body in self._done.items() if idx not in body]:
                del self._done[a]
                self._run[a] = 0

    def _linger_ends(self, w: Window, idx: int, prev: int | None, gap: int, now: int) -> str:
        """Whether window `w`'s lingering detached state ends at this stamp, and why: after linger_ns ('time'); where
        the window's loop runs again, or where a line's gap, counted inside the linger, came out the same LINGER_LOOP
        times in a row ('loop': the program runs a loop, which the trace should hold, before any capture)."""
        if now - w.end_ns >= self.linger_ns:
            return "time"
        if not self.may_linger():  # a framework whose captures graphmode would not hear was loaded meanwhile
            return "framework"
        if idx == w.anchor:
            return "loop"
        if prev is None or prev < w.end_pos:  # its last execution was before the linger: no gap inside it yet
            return ""
        run = self._linger_run[idx] = self._linger_run.get(idx, 0) + 1 if gap == self._linger_gap.get(idx) else 1
        self._linger_gap[idx] = gap
        return "loop" if run >= LINGER_LOOP else ""

    def close(self, now: int, pos: int, reason: str) -> None:
        """Attaches CUPTI again (at a stamp, or at the run's end with reason 'end')."""
        with self._lock:
            w = self._open
            if w is None:
                return
            w.end_ns, w.end_pos, w.reason = now, pos, reason
            self._open = None
            if reason == "left" and self.linger_ns > 0 and not self._finished and self.may_linger():
                self._linger = w  # its timing ends here; CUPTI stays detached (end_linger attaches)
                self._linger_gap, self._linger_run = {}, {}  # counted afresh inside this linger
                self.windows.append(w)
                return
        self._attach_after(w)
        self.windows.append(w)

    def _attach_after(self, w: Window) -> None:
        """Attaches CUPTI again after window `w`, timed into its attach_ns; a failed attach: no more windows."""
        t0 = self.clock()
        try:
            self.attach()
        except Exception as e:
            self.errors.append(f"attach: {type(e).__name__}: {e}")
            self._off = True
        w.attach_ns = self.clock() - t0

    def end_linger(self, now: int, reason: str) -> bool:
        """The lingering detached state ends: CUPTI attaches again, except where a capture takes it over ('capture':
        CaptureController.begin with adopted=True, which attaches after the capture). False where no linger was left
        to end: another thread ended it first, and CUPTI is attached by the time this returns (the attach runs under
        the lock that this call waits on), so a capture then goes the usual way."""
        with self._lock:
            w, self._linger = self._linger, None
            if w is None:
                return False
            w.linger_end_ns, w.linger_reason = now, reason
            # the executions inside the linger were not traced: a loop's window waits for traced_before traced ones
            self._run = {}
            if reason != "capture":
                self._attach_after(w)
        return True

    def finish(self, now: int) -> None:
        """The run ends: a window still open closes (CUPTI attached again, reason 'end'); no stamp opens another."""
        self._finished = True
        self.close(now, -1, "end")
        self.end_linger(now, "end")

    def entries(self, name: Callable[[int], str], move: Callable[[list[int]], Any]) -> list[dict[str, Any]]:
        """The windows for the run's entry in the trace's metadata: times moved onto the pass's clock by `move`."""
        out = []
        for w in self.windows:
            start, end, linger_end = (int(t) for t in move([w.start_ns, w.end_ns, w.linger_end_ns or w.end_ns]))
            out.append({"anchor": name(w.anchor), "start_ns": start, "end_ns": end, "iterations": w.iterations,
                        "gap_stamps": w.gap, "reason": w.reason, "detach_ns": w.detach_ns, "attach_ns": w.attach_ns,
                        **({"linger_end_ns": linger_end, "linger_reason": w.linger_reason} if w.linger_reason else {})})
        return out


MAX_UNTRACED_CAPTURES = 32  # a run's captures made untraced, at most (module doc)


@dataclass
class UntracedCapture:
    """One capture made with CUPTI detached, on the stamps' clock (perf_counter_ns)."""

    thread_id: int
    source: Any  # the user's line that began it (tracer.sources.user_location), resolved when written
    detach_start_ns: int
    own_start_ns: int | None = None  # graphmode's own work before the detach began here (the hooks' memory sample)
    begin_ns: int = 0  # detached: the program's capture_begin follows
    body_end_ns: int = 0  # the program's capture_end called (0: never)
    end_ns: int = 0  # it returned (or raised; or capture_begin raised; or the run ended): CUPTI attaches
    attach_end_ns: int = 0  # attached again, graphmode's own graph run
    own_end_ns: int | None = None  # graphmode's own work after the attach ended here (the hooks' memory sample)
    reason: str = ""  # 'capture_end'; 'capture_end_failed', 'capture_begin_failed' (raised); 'end' (the run ended)
    error: str = ""  # what the failing call raised
    exec_id: int = 0  # CUPTI's id of the executable graph it made, read once attached (0: not known)
    adopted: bool = False  # CUPTI was detached already (a window's linger), no detach before it


@dataclass
class CaptureController:
    """Detaches CUPTI around the program's PyTorch captures, up to `limit` (module doc). `may_detach` says whether it
    may now (no graph seen under GRAPH_TRACE, no window open, nothing failed); `begin()` comes just before the
    program's capture_begin, `ending()` just before its capture_end, `end()` after it returned or raised (or after a
    capture_begin that raised, or at the run's end). `attach` attaches a session and runs graphmode's own graph."""

    detach: Callable[[], None]
    attach: Callable[[], None]
    may_detach: Callable[[], bool]
    clock: Callable[[], int] = time.perf_counter_ns
    limit: int = MAX_UNTRACED_CAPTURES
    # the executable's CUPTI id from what the program's capture_end made (its CUDAGraph), once attached; 0 unknown
    exec_id_of: Callable[[Any], int] = lambda graph: 0
    captures: list[UntracedCapture] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    off: bool = False  # after a failed detach or attach: no more
    _open: UntracedCapture | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def detached(self) -> bool:
        return self._open is not None

    def may_begin(self) -> bool:
        """Whether a capture beginning now may be made untraced, detached already or not (within the limit)."""
        return not self.off and self._open is None and len(self.captures) < self.limit

    def begin(self, thread_id: int, source: Any = None, since: int | None = None, adopted: bool = False) -> bool:
        """Detaches where it may (True: detached now). `since`: where graphmode's own work just before it began (the
        hooks' memory sample), on this clock: the gap before the capture starts there. `adopted` (the
        windows' linger): CUPTI is detached already, and the capture takes that state over with no detach."""
        if not self.may_begin() or (not adopted and not self.may_detach()):
            return False
        now = self.clock()
        c = UntracedCapture(thread_id=thread_id, source=source, detach_start_ns=now,
                            own_start_ns=min(since, now) if since is not None else None, adopted=adopted)
        if adopted:
            c.begin_ns = now
            self._open = c
            return True
        try:
            self.detach()
        except Exception as e:  # the capture goes on traced
            self.errors.append(f"detach: {type(e).__name__}: {e}")
            self.off = True
            return False
        c.begin_ns = self.clock()
        self._open = c
        return True

    def ending(self) -> None:
        """The program's capture_end is called now."""
        c = self._open
        if c is not None and not c.body_end_ns:
            c.body_end_ns = self.clock()

    def end(self, reason: str = "capture_end", error: str = "", graph: Any = None,
            after: Callable[[], None] | None = None) -> None:
        """Attaches CUPTI again where a capture detached it; `graph`: what capture_end returned from (its CUDAGraph).
        `after`: graphmode's own work that follows the attach (the hooks' memory sample), run here, attached, and timed
        into the gap after the capture; run also where nothing was detached."""
        with self._lock:
            c, self._open = self._open, None
        if c is None:
            if after is not None:
                after()
            return
        c.end_ns, c.reason, c.error = self.clock(), reason, error
        try:
            self.attach()
        except Exception as e:
            self.errors.append(f"attach: {type(e).__name__}: {e}")
            self.off = True
        c.attach_end_ns = self.clock()
        if graph is not None and not self.off:
            try:
                c.exec_id = int(self.exec_id_of(graph))
            except Exception as e:  # adopted by its first replay instead (tracer.lifecycle)
                self.errors.append(f"exec id: {type(e).__name__}: {e}")
        if after is not None:
            try:
                after()
            finally:
                c.own_end_ns = self.clock()
        self.captures.append(c)

    def entries(self, move: Callable[[list[int]], Any], where: Callable[[Any], str]) -> list[dict[str, Any]]:
        """The captures for the run's entry in the trace's metadata: times moved onto the pass's clock by `move`
        (body_end_ns 0 where capture_end was never called)."""
        out = []
        for c in self.captures:
            body_end = c.body_end_ns or c.end_ns
            own0 = c.detach_start_ns if c.own_start_ns is None else c.own_start_ns
            own1 = c.attach_end_ns if c.own_end_ns is None else c.own_end_ns
            d0, b, be, e, a, o0, o1 = (int(t) for t in move([c.detach_start_ns, c.begin_ns, body_end, c.end_ns,
                                                              c.attach_end_ns, own0, own1]))
            out.append({"thread_id": c.thread_id, "source": where(c.source), "detach_start_ns": d0, "begin_ns": b,
                        "body_end_ns": be if c.body_end_ns else 0, "end_ns": e, "attach_end_ns": a,
                        "own_start_ns": o0, "own_end_ns": o1,
                        "detach_ns": c.begin_ns - c.detach_start_ns, "attach_ns": c.attach_end_ns - c.end_ns,
                        "samples_ns": (c.detach_start_ns - own0) + (own1 - c.attach_end_ns),
                        "reason": c.reason, **({"error": c.error} if c.error else {}),
                        **({"adopted": True} if c.adopted else {}),
                        **({"exec_id": c.exec_id} if c.exec_id else {})})
        return out
