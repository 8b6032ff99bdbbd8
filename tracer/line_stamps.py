"""Host stamps of the user's own lines, without CUPTI: the timing run's clock (docs/design.md,
"The timing run").

Python 3.12's `sys.monitoring` fires a LINE event only on code objects a tool enabled it for. A global
PY_START event waits for the first user code to run on the main thread, the script's module, enables
LINE events on its code objects (the module's and every function and class defined in it), and is
switched off: from then on only the script's own lines fire events, and library, standard-library
and the user's other modules never do. Two modes:

- every line (`lines=None`): the detail run stamps each execution of each user line, so that the
  analysis can say which line was executing when each iteration's first launch was made;
- given lines: the timing run stamps only the lines that start iterations, and every other line of
  the user's code returns DISABLE at its first execution: afterwards it costs nothing.

Only the main thread's lines are stamped: a line first run by another thread returns DISABLE there and
is never stamped: with a global PY_START event on for the whole run, a detail run of a program whose two
threads each capture a graph (examples/two_threads.py) hung (docs/design.md, "The timing run"). A loop on another
thread, or in another module, keeps the measuring run's period (flagged).

A stamp is (OS thread id and Python thread name, code location, `time.perf_counter_ns()`). This module uses the
standard library alone (tests run it under any Python 3.12 found).

The CPU's speed, beside the stamps: at the first stamp and then at the first stamp at least SPEED_EVERY_NS after the
last sample, the stamp callback times a fixed pure-Python loop (speed_reference) on the main thread. On the lent H200 a
ViT's CPU-bound calls and that loop ran 1.7-1.8x slower together in stretches of seconds, on the thread that ran them
(a sampler on another thread did not see it: benchmarks/notes/s23); the samples let the analysis say how much the CPU's
speed moved under the figures it reads (analyzers.cpu_speed). A sample takes 30-60 us, every 50 ms or more (a second,
after SPEED_DENSE samples): 0.1% of the run at most, which the run's entry says (what the samples took, in all).
"""

from __future__ import annotations

import sys
import threading
import time
from array import array
from collections.abc import Callable, Collection
from types import CodeType
from typing import Any

AVAILABLE = sys.version_info >= (3, 12)
MAX_STAMPS = 2_000_000  # per run: 24 bytes each; past it stamping stops and the run says so
_TOOL_IDS = (3, 4, 2, 5)
SPEED_EVERY_NS = 50_000_000  # at most one sample of the CPU's speed per 50 ms of the run,
SPEED_DENSE = 2_000  # for this many samples (100 s of stamping or more), then
SPEED_SPARSE_EVERY_NS = 1_000_000_000  # one a second (a long run's metadata stays small: 5,600 samples an hour)
SPEED_LOOP = 1_000  # the reference: this many additions to a Python int in a `for` loop (30-60 us: 0.1% at most)
SPEED_REFERENCE = f"{SPEED_LOOP:,} additions to a Python int in a for loop, on the main thread"


def speed_reference(n: int = SPEED_LOOP, clock: Callable[[], int] = time.perf_counter_ns) -> int:
    """How long the reference loop took this time (ns)."""
    t0 = clock()
    s = 0
    for i in range(n):
        s += i
    return clock() - t0


def _mon() -> Any:
    """sys.monitoring (typed as Any: the type checker targets the oldest supported Python)."""
    return getattr(sys, "monitoring")  # 0, 1 are debuggers' and coverage's; 2 the profiler's; 5 the optimizer's


def _nested(code: CodeType) -> list[CodeType]:
    """A code object and every code object defined in it, recursively (functions, classes, lambdas)."""
    out, todo = [], [code]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(x for x in c.co_consts if isinstance(x, CodeType))
    return out


class LineStamper:
    """Stamps executions of the user's lines between start() and stop(); columns() gives them."""

    def __init__(self, is_user: Callable[[str], bool], lines: Collection[tuple[str, int]] | None = None,
                 limit: int = MAX_STAMPS, speed_every_ns: int = SPEED_EVERY_NS):
        if not AVAILABLE:
            raise RuntimeError(f"line stamps need Python 3.12 or newer (sys.monitoring); this is {sys.version.split()[0]}")
        self._is_user = is_user
        self._user_files: dict[str, bool] = {}
        self._wanted: dict[str, set[int]] | None = None
        if lines is not None:
            self._wanted = {}
            for file, line in lines:
                self._wanted.setdefault(file, set()).add(int(line))
        self.limit = limit
        self.tool: int | None = None
        self._codes: list[CodeType] = []
        self._locs: dict[tuple[CodeType, int], int] = {}
        self._loc_list: list[tuple[str, int, str]] = []
        self._tid = array("Q")  # threading.get_ident()
        self._natives: dict[int, tuple[int, str]] = {}
        self._loc = array("l")
        self._ts = array("q")
        self.speed_every_ns = speed_every_ns  # 0: no samples of the CPU's speed (the callback still checks)
        self._speed_ts = array("q")  # when each sample started (perf_counter_ns)
        self._speed_ns = array("q")  # how long the reference took
        self.truncated = False
        # called after each stamp with (line index, the stamp's position, its time): the one run's untraced windows
        # (tracer.untraced_windows); set before start()
        self.on_stamp: Callable[[int, int, int], Any] | None = None
        self.start_ns = self.end_ns = 0
        self._main = threading.main_thread().ident

    # -- sys.monitoring callbacks (hot: keep them short) --
    def _on_start(self, code: CodeType, offset: int) -> Any:
        mon = _mon()
        file = code.co_filename
        user = self._user_files.get(file)
        if user is None:
            user = self._user_files[file] = bool(self._is_user(file))
        if user and self.tool is not None and threading.get_ident() == self._main:
            # The first user code to run is the script's module: its code objects (the module's and every
            # function, class body and comprehension in it) get LINE events, then the global event is off.
            wanted = self._wanted
            for c in _nested(code):
                if wanted is None or any(line in wanted.get(c.co_filename, ()) for _, _, line in c.co_lines() if line is not None):
                    mon.set_local_events(self.tool, c, mon.events.LINE)
                    self._codes.append(c)
            mon.set_events(self.tool, 0)
        return mon.DISABLE

    def _make_on_line(self) -> Callable[[CodeType, int], Any]:
        """The LINE callback, with everything it touches bound to locals (it runs once per stamp)."""
        disable = _mon().DISABLE
        wanted = self._wanted
        locs, loc_list = self._locs, self._loc_list
        get_loc = locs.get
        tid_append, loc_append, ts_append = self._tid.append, self._loc.append, self._ts.append
        ts, limit, main = self._ts, self.limit, self._main
        # threading.get_native_id() is a system call, dearer than the rest of a stamp: the stamp keeps the
        # cheap thread ident, mapped to the OS thread id once per thread
        ident, native, natives, clock = threading.get_ident, threading.get_native_id, self._natives, time.perf_counter_ns
        every = self.speed_every_ns
        speed_ts, speed_ts_append, speed_ns_append = self._speed_ts, self._speed_ts.append, self._speed_ns.append
        next_sample = 0 if every > 0 else 1 << 62
        hook = self.on_stamp

        def on_line(code: CodeType, line: int) -> Any:
            nonlocal next_sample
            tid = ident()
            if tid != main:
                return disable  # another thread's line: never stamped, and never called again
            key = (code, line)
            idx = get_loc(key)
            if idx is None:  # the first execution of this line: is it one to stamp?
                if wanted is not None and line not in wanted.get(code.co_filename, ()):
                    return disable  # never called for this line again
                idx = locs[key] = len(loc_list)
                loc_list.append((code.co_filename, line, code.co_name))
            if len(ts) >= limit:
                self.truncated = True
                return disable
            if tid not in natives:  # once per thread: its OS id and its name (threads are matched across runs by name)
                natives[tid] = (native(), threading.current_thread().name)
            tid_append(tid)
            loc_append(idx)
            now = clock()
            ts_append(now)
            if now >= next_sample:  # the CPU's speed now (after the stamp: it falls in the period this line starts)
                took = speed_reference()
                speed_ts_append(now)
                speed_ns_append(took)
                next_sample = now + took + (every if len(speed_ts) < SPEED_DENSE else max(every, SPEED_SPARSE_EVERY_NS))
            if hook is not None:
                hook(idx, len(ts) - 1, now)
            return None

        return on_line

    def start(self) -> None:
        mon = _mon()
        tool = next((t for t in _TOOL_IDS if mon.get_tool(t) is None), None)
        if tool is None:
            raise RuntimeError("no free sys.monitoring tool id (debuggers, coverage and profilers hold them all)")
        mon.use_tool_id(tool, "graphmode")
        self.tool = tool
        mon.register_callback(tool, mon.events.PY_START, self._on_start)
        mon.register_callback(tool, mon.events.LINE, self._make_on_line())
        self.start_ns = time.perf_counter_ns()
        mon.set_events(tool, mon.events.PY_START)

    def stop(self) -> None:
        if self.tool is None:
            return
        mon = _mon()
        self.end_ns = time.perf_counter_ns()
        mon.set_events(self.tool, 0)
        for code in self._codes:
            mon.set_local_events(self.tool, code, 0)
        mon.register_callback(self.tool, mon.events.PY_START, None)
        mon.register_callback(self.tool, mon.events.LINE, None)
        mon.free_tool_id(self.tool)
        self.tool = None
        self._codes = []

    def columns(self, offset_ns: int | Callable[[Any], Any] = 0) -> dict[str, list[Any]]:
        """The stamps as columns of the line_stamps table (without pass_id); `offset_ns` moves them onto
        another clock (a number, or a function of the list of stamps)."""
        loc = self._loc
        ts: list[int] = self._ts.tolist()
        moved = offset_ns(ts) if callable(offset_ns) else [t + offset_ns for t in ts] if offset_ns else ts
        natives = self._natives
        return {"thread_id": [natives[t][0] for t in self._tid], "thread_name": [natives[t][1] for t in self._tid], "file": [self._loc_list[i][0] for i in loc],
                "line": [self._loc_list[i][1] for i in loc], "function": [self._loc_list[i][2] for i in loc],
                "ts_ns": list(moved)}

    def speed_samples(self, offset_ns: int | Callable[[Any], Any] = 0) -> dict[str, Any]:
        """The samples of the CPU's speed, for the run's entry in the trace's metadata (meta.runs[].cpu_speed): when
        each started (moved like the stamps by `offset_ns`) and what the reference took (ns)."""
        ts: list[int] = self._speed_ts.tolist()
        moved = offset_ns(ts) if callable(offset_ns) else [t + offset_ns for t in ts] if offset_ns else ts
        return {"reference": SPEED_REFERENCE, "every_ns": self.speed_every_ns, "ts_ns": [int(t) for t in moved],
                "ns": self._speed_ns.tolist()}

    def locs(self, a: int, b: int) -> Any:
        """The line indices of stamps a..b-1."""
        return self._loc[a:b]

    def location(self, idx: int) -> str:
        """'file:line' of a line index."""
        file, line, _ = self._loc_list[idx]
        return f"{file}:{line}"

    def __len__(self) -> int:
        return len(self._ts)


def stamp_cost_ns(n: int = 20_000, repeats: int = 5) -> float | None:
    """What one stamp of a chosen line costs the program here: a loop of `n` one-line iterations timed with
    the LINE callback of the timing run on that line and without it (its `for` line disabled, as the timing
    run disables every line it does not stamp); the median over `repeats` of (with - without) / n. Run
    after the program, once the stamper has stopped; None without a free tool id."""
    mon = _mon()
    tool = next((t for t in _TOOL_IDS if mon.get_tool(t) is None), None)
    if tool is None:
        return None
    name = "<graphmode-stamp-cost>"
    scope: dict[str, Any] = {}
    exec(compile("def loop(n):\n    for _ in range(n):\n        x = 1\n", name, "exec"), scope)  # noqa: S102
    loop = scope["loop"]
    # its callback checks for a sample of the CPU's speed as the run's does (the check is part of a stamp's cost), but
    # is never due to take one (speed_every_ns 0)
    probe = LineStamper(lambda f: True, [(name, 3)], limit=n * (repeats + 1) + 100, speed_every_ns=0)
    mon.use_tool_id(tool, "graphmode-stamp-cost")
    try:
        probe.tool = tool
        mon.register_callback(tool, mon.events.LINE, probe._make_on_line())
        mon.set_local_events(tool, loop.__code__, mon.events.LINE)
        loop(10)  # the `for` line returns DISABLE here, as the timing run's unchosen lines do
        costs = []
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            loop(n)
            on = time.perf_counter_ns() - t0
            mon.set_local_events(tool, loop.__code__, 0)
            t0 = time.perf_counter_ns()
            loop(n)
            off = time.perf_counter_ns() - t0
            mon.set_local_events(tool, loop.__code__, mon.events.LINE)
            costs.append((on - off) / n)
        costs.sort()
        return max(costs[len(costs) // 2], 0.0)
    finally:
        mon.set_local_events(tool, loop.__code__, 0)
        mon.register_callback(tool, mon.events.LINE, None)
        mon.free_tool_id(tool)
