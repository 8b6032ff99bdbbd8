"""Trace a user's own code: a whole script (`graphmode run`) or a region (`graphmode.trace`).

A script has no untraced twin to compare with, so the numbers must come from a run that the tracer
barely slows: the **measuring run** records only what the headline needs (launches, graph lifecycle,
synchronizations, copies, allocations and events among the API calls; kernels, copies and whole-graph
spans on the GPU; graph and executable resource callbacks; the call sites of the rare lifecycle calls)
and leaves out what costs the most: getters and queries that frameworks call thousands of times a step,
a callback per graph node, and the pyinstrument profiler. When the user asks for more (node-level
spans, the line of every launch, a CPU profile, the line that created each node), a **detail run**
of the script follows in a fresh process and appends its pass to the same trace; the analysis takes
periods and one-time costs from the measuring run and the rest from the detail run
(docs/design.md, "Scripts").

Each run executes the script as `__main__` in a child process (`python -m graphmode.tracer.script_child`),
so the two runs start alike and the script's arguments, output and exit code pass through. Whatever
happens to the code (it raises, calls sys.exit, the user presses Ctrl-C or the process is killed) the
trace of what ran is written or left readable.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from graphmode.tracer import allocator_history
from graphmode.tracer import first_graph_probe  # read as a module attribute: set at run time (and by tests)
from graphmode.tracer.conflicts import ProfilerWatch, warning_before_run
from graphmode.tracer.cuda_util import check, init_device
from graphmode.tracer.cupti_session import (CuptiSession, LAUNCH_API, LIFECYCLE_API, RawActivity, loaded_cupti_library,
                                           timestamp)
from graphmode.tracer.decode import decode, drop_untimed_spans, lookup
from graphmode.tracer.cupti_records import cupti_module
from graphmode.tracer.errors import GraphmodeError
from graphmode.tracer.graph_memory import GraphMemorySampler
from graphmode.tracer.lifecycle import derive_graphs
from graphmode.tracer.line_stamps import LineStamper, stamp_cost_ns
from graphmode.tracer.untraced_windows import LINGER_MS, RUN_WINDOW_ITERATIONS, CaptureController, WindowController
from graphmode.tracer.passes import launch_events, map_graph_ids
from graphmode.tracer.phases import mark
from graphmode.tracer.profile_store import stop_profiler, write_profile
from graphmode.tracer.ranks import device_ordinal, rank_meta, rank_meta_at_stop, rank_trace_path
from graphmode.tracer.run_configs import (
    MEASURE,
    PROBE_RUN,
    RunConfig,
    session_kwargs,
)
from graphmode.tracer.runner import machine_meta
from graphmode.tracer.signals import sigterm_deferred, sigterm_interrupts
from graphmode.tracer.sources import is_user_file, location_text, user_location
from graphmode.tracer.store import PassInfo, Trace, TraceError, TraceWriter, check_free_space, check_output_path, load
from graphmode.tracer.torch_hooks import TorchHooks


@dataclass(frozen=True)
class RunDecisions:
    """What run_script asks between runs, of the trace recorded so far. The decisions are analyzers' (the front door
    passes analyzers.run_plan.DECISIONS); this module only executes the runs.

    `lines_to_time`: the lines the timing run stamps ('file:line'; none: no timing run). `why_no_probe_run`: None
    where the probe run is wanted, else why not (returned as ScriptRuns.probe_skipped for the front door to say).
    `built_no_graph`: whether a run planned `when='eager_only'` is made (the timing run of a script that built no
    graph: its loop's periods untraced, for the prediction). `why_no_timing_run`: None where such a timing run is made,
    else why not (returned as ScriptRuns.timing_skipped)."""

    lines_to_time: Callable[[Trace], list[str]]
    why_no_probe_run: Callable[[Trace], object | None]
    built_no_graph: Callable[[Trace], bool] = lambda trace: False
    why_no_timing_run: Callable[[Trace], object | None] = lambda trace: None


def _exception_info(exc: BaseException) -> dict[str, Any]:
    """Type, message and frames of an exception and of the exceptions it was raised while handling.

    PyTorch reports a broken capture twice: the offending call raises, then leaving the
    torch.cuda.graph block raises again from capture_end. The user's line is in the first one, so
    `frames` runs from the last exception raised to the root cause: the root cause's frames come last.
    """
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in chain and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__

    def one(x: BaseException) -> dict[str, Any]:
        text = str(x).strip()
        return {"type": type(x).__name__, "message": text.splitlines()[0] if text else ""}

    frames = [[f.filename, f.lineno or 0, f.name] for x in chain for f in traceback.extract_tb(x.__traceback__)]
    return {**one(exc), "frames": frames, "chain": [one(x) for x in chain]}


class ScriptTracer:
    """Start/stop a CUPTI session around user code and write what it recorded as one pass of a trace.

    `append=True` adds the pass to an existing trace (the detail run after the measuring run).
    """

    def __init__(self, out: str | os.PathLike[str], config: RunConfig = MEASURE, nvtx: bool = True,
                 workload: str = "script", meta: dict[str, Any] | None = None, append: bool = False, pass_id: int = 0):
        self.out = rank_trace_path(out)  # `<stem>.rank<R>.gmtrace` when launched as one rank of a job
        self.config = config
        self.nvtx = nvtx
        self.workload = workload
        self.extra_meta = meta or {}
        self.append = append
        self.pass_id = pass_id
        self._session: Any = None
        self._profiler: Any = None
        self._writer: TraceWriter | None = None
        self._memory: Any = None
        self._torch: Any = None
        self._stamper: Any = None
        self._clock_pairs: list[tuple[int, int]] = []  # (perf_counter_ns, CUPTI timestamp) at start and stop
        self._unix_pairs: list[tuple[int, int]] = []  # (time.time_ns, CUPTI timestamp) at start and stop
        self._ordinal = 0
        self.start_ns = 0
        self._windows: Any = None  # tracer.untraced_windows.WindowController, where the config asks for windows
        self._segments: list[Any] = []  # the RawActivity of each CUPTI session detached before the last
        self._captures: CaptureController | None = None  # the untraced capture (tracer.untraced_windows)
        self._detached_pair: tuple[int, int] = (0, 0)  # (perf_counter_ns, CUPTI clock) read just before it detached

    @property
    def detail(self) -> str:
        return self.config.detail

    def start(self) -> None:
        cfg = self.config
        device = init_device(device_ordinal())
        self._ordinal = device.ordinal
        if self.nvtx and "NVTX_INJECTION64_PATH" not in os.environ:
            # Must name the libcupti loaded here, and be set before the code's first NVTX call.
            lib = loaded_cupti_library()
            if lib:
                os.environ["NVTX_INJECTION64_PATH"] = lib
        if self.append:
            self._writer = TraceWriter(self.out, append=True)
        else:
            meta = machine_meta(device)
            meta.update({"workload": self.workload, "dropped_records": 0,
                         "params": {"detail": cfg.detail, "launch_sources": cfg.launch_sources, "runs": [cfg.name]},
                         "nvtx_injection": os.environ.get("NVTX_INJECTION64_PATH", "")})
            meta.update(self.extra_meta)
            meta.update(rank_meta())
            self._writer = TraceWriter(self.out, meta)
        self._session = CuptiSession(**session_kwargs(cfg, self.nvtx))
        # What PyTorch says about its graphs and the graphs' memory come from Python callbacks and hooks:
        # the runs that have them (not the measuring run).
        self._memory = GraphMemorySampler.attach(self._session, device.ordinal, self._clock) if cfg.callbacks else None
        self._session.start()

        self._watch = ProfilerWatch()  # the program's own torch.profiler cannot get CUPTI now: note it if used
        self._watch.install()
        self.start_ns = timestamp()
        # The measuring run hears only when each cudagraph-tree recording, torch.cuda.graph block or Dynamo compilation
        # starts and ends (two Python calls each): PyTorch's work around the capture is part of the graph's one-time
        # cost.
        self._torch = TorchHooks(self._memory, clock=self._clock, recordings_only=not cfg.callbacks,
                                 allocator_history=cfg.allocator_history).install()
        if cfg.allocator_history:  # the allocator history's times are Unix time: moved onto CUPTI's by these pairs
            self._unix_pairs.append(_clock_pair(timestamp, time.time_ns))
        if cfg.stamp:
            if cfg.untraced_windows:
                linger, iterations = _window_settings()
                self._windows = WindowController(self._detach, self._attach, self._may_detach,
                                                 lambda a, b: self._stamper.locs(a, b), linger_ns=linger,
                                                 may_linger=_may_linger, window_iterations=iterations)
            self._stamper = start_stamper(cfg, self._windows.on_stamp if self._windows is not None else None)
            if self._stamper is not None:
                self._clock_pairs.append(_clock_pair(timestamp))
            else:
                self._windows = None
        if cfg.untraced_windows and os.environ.get("GRAPHMODE_UNTRACED_CAPTURE") != "0":
            self._captures = CaptureController(self._detach, self._capture_attach, self._may_capture_untraced,
                                               exec_id_of=_exec_id)
            self._torch.around_capture = (self._capture_begin, self._captures.ending, self._captures.end)
            if not self._clock_pairs:
                self._clock_pairs.append(_clock_pair(timestamp))
        if cfg.profile:
            from pyinstrument import Profiler

            self._profiler = Profiler(interval=0.001, async_mode="disabled")
            self._profiler.start()

    # -- untraced windows (tracer.untraced_windows): called from the stamp callback, on the main thread --
    def _detach(self) -> None:
        """Flushed and detached (cuptiFinalize), for an untraced window or capture; the clock pair is read first, while
        attached: PyTorch's hooks read CUPTI's clock from it while the capture, or a window's linger, keeps CUPTI
        detached (_clock)."""
        self._detached_pair = _clock_pair(timestamp)
        self._segments.append(self._session.stop())

    def _attach(self) -> None:
        old = self._session
        # no GRAPH_TRACE after a detach: a graph instantiated while detached crashed its replays under it (module doc)
        new = CuptiSession(**dict(session_kwargs(self.config, self.nvtx), graph_trace=False))
        new.on_api_call = old.on_api_call
        new.raw.own_spans = old.raw.own_spans  # the memory sampler's own calls (it holds this list)
        new.start()
        self._session = new
        if self._captures is not None:
            self._clock_pairs.append(_clock_pair(timestamp))

    # -- the untraced capture (tracer.untraced_windows.CaptureController): from PyTorch's CUDAGraph hooks --
    def _capture_begin(self, since: int | None = None) -> None:
        """Just before the program's capture_begin: CUPTI detaches where it may (not for the empty capture with which
        cudagraph trees set up their memory pool: the tree's own recordings come later). `since`: the perf_counter_ns
        at which graphmode's own work before it began (PyTorch's hooks' memory sample)."""
        w = self._windows
        if w is not None and w.lingering:  # the linger (_window_settings): detached already since the window
            if self._captures is not None and self._captures.may_begin() and not _tree_pool_capture():
                if w.end_linger(time.perf_counter_ns(), "capture"):  # not ended meanwhile on the stamping thread
                    if not self._captures.begin(threading.get_native_id(), user_location(), since, adopted=True):
                        self._attach()  # not taken over after all: attached again, the capture traced
                    return
            else:
                w.end_linger(time.perf_counter_ns(), "hook")  # attached: the capture is traced
        if self._captures is None or self._captures.detached or _tree_pool_capture():
            return
        self._captures.begin(threading.get_native_id(), user_location(), since)

    def _capture_attach(self) -> None:
        """After the program's capture_end: a session attaches again, and graphmode's own empty graph takes the new
        session's first graph operations (tracer.untraced_windows, module doc)."""
        self._attach()
        mark("capture attach: session attached")
        with self._session.own_work():
            _own_graph()
        mark("capture attach: own graph run")

    def _may_capture_untraced(self) -> bool:
        """CUPTI attached (no untraced window or capture under way), no window failed, and no session that records
        GRAPH_TRACE has seen a graph: either no graph exists yet, or the session is one attached again (without
        GRAPH_TRACE) after a window or an untraced capture (tracer.untraced_windows, module doc)."""
        w, c, s = self._windows, self._captures, self._session
        if (w is not None and (w.detached or w._off)) or (c is not None and c.detached):
            return False
        return not s.raw.resource_events or not s.graph_trace

    def _clock(self) -> int:
        """The CUPTI clock for PyTorch's hooks (tracer.torch_hooks): inside an untraced window a CUPTI call would attach
        CUPTI again behind the session's back, so the window closes first: PyTorch is starting a capture, or says
        something, and that is traced."""
        if (self._captures is not None and self._captures.detached) or (
                self._windows is not None and self._windows.lingering):  # detached: no CUPTI call
            host, cupti = self._detached_pair
            return cupti + time.perf_counter_ns() - host
        if self._windows is not None and self._windows.detached:
            self._windows.close(time.perf_counter_ns(), -1, "hook")
        return timestamp()

    def _may_detach(self) -> bool:
        """No graph in the process yet (no resource callback fired: they fire for graphs only), and no untraced capture
        under way (CUPTI is detached already)."""
        if self._captures is not None and (self._captures.detached or self._captures.off or self._captures.captures):
            return False
        return not self._session.raw.resource_events

    def stop(self, status: str = "complete", reason: str = "", extra_meta: dict[str, Any] | None = None) -> Path:
        assert self._writer is not None and self._session is not None, "start() first"

        writer = self._writer
        if self._captures is not None:
            self._captures.end("end")  # a capture the program never ended: CUPTI attached again
        if self._windows is not None:
            self._windows.finish(time.perf_counter_ns())  # attached again: the clock pair below needs CUPTI
        if self._stamper is not None:
            self._stamper.stop()
        if self._clock_pairs:
            self._clock_pairs.append(_clock_pair(timestamp))  # CUPTI is still attached: this call attaches nothing
        history_on = self._torch is not None and self._torch.history is not None and bool(self._unix_pairs)
        if history_on:
            self._unix_pairs.append(_clock_pair(timestamp, time.time_ns))
        heard = self._torch.uninstall() if self._torch is not None else None
        mark(f"child {self.config.name}: hooks removed")
        light = self._torch is not None and self._torch.recordings_only
        observed = {"torch": None if light else heard,
                    "graph_memory": self._memory.columns() if self._memory is not None else None}
        profile = stop_profiler(self._profiler)
        sync_error = ""
        try:
            from cuda.bindings import driver as cu

            err = cu.cuCtxSynchronize()[0]  # let queued GPU work finish so its records exist
            sync_error = "" if int(err) == 0 else str(err)
        except Exception as e:
            sync_error = f"{type(e).__name__}: {e}"
        end = timestamp()
        cfg = self.config
        mark(f"child {cfg.name}: synchronized")
        raw = self._session.stop()
        if self._segments and self._segments[-1] is raw:  # attaching again after a window failed: nothing after it
            self._segments.pop()
        mark(f"child {cfg.name}: CUPTI stopped")
        run_entry: dict[str, Any] = {"pass_id": self.pass_id, "config": asdict(cfg), "status": status, "reason": reason,
                                     "api_filter": raw.api_filter, "dropped_records": raw.dropped,
                                     "cupti_buffers": raw.buffers}
        if raw.buffers_fallback:
            run_entry["cupti_buffers_fallback"] = raw.buffers_fallback
        if self._segments:  # attached again after a window without GRAPH_TRACE: replays folded from their nodes' records
            run_entry["replays_from_nodes"] = True
        # graphs destroyed while tracing: copied then and read at the end, or read as they were destroyed
        copies = [r.topology_copies for r in [*self._segments, raw]]
        run_entry["topology_copies"] = {k: sum(c.get(k, 0) for c in copies) for k in ("copied", "read_at_destroy")}
        history = self._collect_history() if history_on else None
        if history is not None:
            run_entry["allocator_history"] = history[1]
            mark(f"child {cfg.name}: allocator history collected")
        if sync_error:
            run_entry["context_error_at_end"] = sync_error  # the program left its CUDA context broken
        if light and (windows := _capture_windows(heard)) is not None:
            run_entry["torch"] = windows  # this run's PyTorch capture windows (meta.torch is the detail run's)
        segments = self._segments
        written = False  # the pass's records (the probe below runs only after them)
        if segments:  # the sessions detached for untraced windows: their records, apart (correlation ids restart)
            raw.dropped += sum(r.dropped for r in segments)
            raw.callback_errors[:0] = [e for r in segments for e in r.callback_errors]
        try:
            captures = self._captures.entries(_clock_map(self._clock_pairs), location_text) if self._captures else []
            graphs = write_script_pass(writer, raw, PassInfo(self.pass_id, cfg.name, cfg.detail, self.start_ns, end,
                                                             raw.dropped, status), captures, segments)
            if self._captures is not None:
                for c in captures:
                    c["graph_id"] = graphs.untraced.get(c["begin_ns"], 0)
                run_entry["untraced_captures"] = {
                    "limit": self._captures.limit, "captures": captures,
                    **({"errors": self._captures.errors} if self._captures.errors else {})}
            mark(f"child {cfg.name}: records written")
            if history is not None and len(history[0]["ts_ns"]):
                n = len(history[0]["ts_ns"])
                writer.append("memory_events", {**history[0], "pass_id": np.full(n, self.pass_id, dtype=np.int32)})
            if self._stamper is not None:
                run_entry.update(write_stamps(writer, self._stamper, self.pass_id, _clock_map(self._clock_pairs)))
                if self._windows is not None:
                    run_entry["untraced_windows"] = {
                        "traced_before": self._windows.traced_before, "window_iterations": self._windows.window_iterations,
                        "window_max_ns": self._windows.window_max_ns, "sessions": len(segments) + 1,
                        "windows": self._windows.entries(self._stamper.location, _clock_map(self._clock_pairs)),
                        **({"errors": self._windows.errors} if self._windows.errors else {})}
                if cfg.name == "single":  # its periods lose what its stamps cost them (analyzers.tracer_cost)
                    run_entry["stamp_cost_ns"] = stamp_cost_ns()
                mark(f"child {cfg.name}: stamps written")
            written = True
        finally:
            existing = writer.get_meta()
            meta: dict[str, Any] = {"dropped_records": int(existing.get("dropped_records", 0) or 0) + raw.dropped}
            errors = list(existing.get("callback_errors", []) or []) + list(raw.callback_errors)
            if errors:
                meta["callback_errors"] = errors
            extra = dict(extra_meta or {})
            if self.append:
                # The first run's status and script record stand for the trace; this run is listed.
                run_entry.update({k: v for k, v in extra.items() if k == "script"})
                extra.pop("script", None)
            meta["runs"] = _runs_with(existing, run_entry)
            meta.update({k: v for k, v in observed.items() if v})
            meta.update(extra)
            meta.update(rank_meta_at_stop(writer.as_trace()))
            if written and status == "complete" and cfg.untraced_windows and first_graph_probe.torch_in_use():
                # A PyTorch program's first torch.cuda.graph capture, measured in its own process after it ended, CUPTI
                # detached above (run_probe: only where the program built no graph): what the timing run measured in a
                # second process (benchmarks/notes/s24, call 4). Not the driver probe of other programs: CUPTI attached
                # earlier in the process takes much of the first graph's extra away (the probe run measures it).
                mark(f"child {cfg.name}: first-graph probe started")
                meta.update(run_probe(writer, cfg.name))
                mark(f"child {cfg.name}: first-graph probe done")
            try:
                self._watch.uninstall()
                for note in self._watch.notes():
                    writer.add_note(note)
                write_profile(writer, profile)
                writer.set_meta(meta)
            finally:
                if self.append:
                    writer.close(keep_status=True)
                else:
                    writer.close(status, reason)
        return writer.path  # the trace moves to the temporary folder when the disk fills up

    def _collect_history(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """PyTorch's allocator history of this run (tracer.allocator_history), collected and turned off, with what one
        of its actions cost (measured now, after the program): (columns of memory_events, the run entry's
        'allocator_history'); None where PyTorch would not give it (the reason goes into meta.torch's errors)."""
        hooks = self._torch
        torch = hooks.torch
        try:
            if not torch.cuda.is_initialized():  # torch imported, CUDA never used through it: nothing to read, and
                allocator_history.disable(torch)  # reading it would create a context now
                return None
            cols = allocator_history.collect(torch, self._ordinal, _clock_map(self._unix_pairs))
            allocator_history.disable(torch)
        except Exception as e:
            hooks.errors.append(f"allocator history: {type(e).__name__}: {e}")
            return None
        n = len(cols["ts_ns"])
        said = dict(hooks.history or {})
        entry = {"entries": n, "full": n >= int(said.get("max_entries", allocator_history.MAX_ENTRIES)), **said,
                 "entry_cost_ns": allocator_history.entry_cost_ns(torch) if n else None}
        return cols, entry


def _probe_first_graph() -> dict[str, Any]:
    """tracer.first_graph_probe in this process, or {'error': why not}: a probe that fails costs the trace nothing. A
    PyTorch program (PyTorch's CUDA state made) gets the torch probe instead, as {'torch': ...}: its graph would go
    through torch.cuda.graph, and the driver probe's graphs would pre-pay part of what the torch probe measures."""
    try:
        if first_graph_probe.torch_in_use():
            t = first_graph_probe.probe_torch_capture()
            return {"torch": t, "probe_ns": t["probe_ns"]}
        return first_graph_probe.probe_first_graph(device_ordinal())
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def instantiations(trace: Any) -> int | None:
    """How many graphs the code instantiated in the measuring run (pass 0: its instantiate calls, as recorded); None
    where the trace cannot say. Every run executes the same code: a probe run's process made as many before its
    probe."""
    try:
        return int(trace.rows("SELECT count(*) FROM api_calls WHERE pass_id = 0 AND category = 'instantiate'")[0][0])
    except Exception:
        return None


def _capture_windows(heard: dict[str, Any] | None) -> dict[str, Any] | None:
    """What recordings-only hooks heard (TorchHooks.uninstall), for a run's meta.runs entry; None when they heard
    nothing (no capture window, no compilation)."""
    return heard if heard and (heard.get("events") or {}).get("kind") else None


def _runs_with(meta: dict[str, Any], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """meta.runs with this run's entry in place of any earlier one of its pass."""
    return [r for r in meta.get("runs", []) if r.get("pass_id") != entry["pass_id"]] + [entry]


def start_stamper(cfg: RunConfig, on_stamp: Callable[[int, int, int], Any] | None = None) -> Any:
    """Line stamps for a run (tracer.line_stamps): every user line ('all') or the configured ones; None (said
    on stderr) without sys.monitoring (Python < 3.12) or a free tool id. `on_stamp`: LineStamper.on_stamp."""
    lines = None
    if cfg.stamp == "lines":
        lines = [(f, int(n)) for f, _, n in (x.rpartition(":") for x in cfg.stamp_lines) if n.isdigit()]
    try:
        stamper = LineStamper(is_user_file, lines)
        stamper.on_stamp = on_stamp
        stamper.start()
    except RuntimeError as e:  # Python < 3.12, or every sys.monitoring tool id taken (debuggers, coverage): run without
        print(f"graphmode: no line stamps in the {cfg.name} run ({e}); CPU-bound periods keep the measuring run's "
              "figures, flagged", file=sys.stderr)
        return None
    return stamper


# Frameworks that capture CUDA graphs without PyTorch's CUDAGraph (graphmode hears only PyTorch's captures while
# CUPTI is detached): with any of them loaded, a window does not linger
OTHER_CAPTURERS = ("cupy", "jax", "jaxlib", "numba")


def _may_linger() -> bool:
    """The windows' linger: whether a window whose loop ended may keep CUPTI detached. Only a PyTorch
    capture takes the detached state over (its hooks hear it begin); a capture another framework makes while detached
    would leave no record of the graph, whose replays then could not be told apart. So: PyTorch loaded, and none of
    OTHER_CAPTURERS."""
    return "torch" in sys.modules and not any(m in sys.modules for m in OTHER_CAPTURERS)


def _window_settings() -> tuple[int, int]:
    """(linger_ns, window_iterations) of the one run's WindowController: by default LINGER_MS and
    RUN_WINDOW_ITERATIONS (a window lasts to its loop's end, at most WINDOW_MAX_NS, and CUPTI stays detached up to
    LINGER_MS after it, so that a capture coming next takes the detached state over: benchmarks/notes/s33-s35).
    GRAPHMODE_WINDOW_LINGER_MS and GRAPHMODE_WINDOW_ITERATIONS set them (0 and 32: the run before session 35). The page
    draws a linger as unrecorded (analyzers.untraced_windows: untraced_end_ns)."""
    linger = _env_count("GRAPHMODE_WINDOW_LINGER_MS", LINGER_MS, "milliseconds (0 turns the linger off)")
    iterations = _env_count("GRAPHMODE_WINDOW_ITERATIONS", RUN_WINDOW_ITERATIONS, "iterations", least=1)
    return linger * 1_000_000, iterations


def _env_count(name: str, default: int, unit: str, least: int = 0) -> int:
    """A whole number from the environment variable `name` (at least `least`), or `default` where it is unset; a value
    that is not one is said on stderr, naming the default used, rather than taken for something else."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if raw.isdecimal() and int(raw) >= least:
        return int(raw)
    print(f"graphmode: {name}={raw!r} is not a whole number of {unit}"
          f"{f' of at least {least}' if least else ''}; using {default}", file=sys.stderr)
    return default


def _clock_pair(cupti_now: Any, host: Callable[[], int] = time.perf_counter_ns) -> tuple[int, int]:
    """(host clock, CUPTI timestamp) read together: the CUPTI reading between two host readings."""
    a = host()
    c = int(cupti_now())
    b = host()
    return (a + b) // 2, c


def _clock_map(pairs: list[tuple[int, int]]) -> Any:
    """perf_counter_ns -> CUPTI clock, linear through the pairs taken at the run's start and stop (the two
    clocks may run at slightly different rates: NTP slews one of them)."""
    (h0, c0), (h1, c1) = pairs[0], pairs[-1]
    rate = (c1 - c0) / (h1 - h0) if h1 > h0 else 1.0

    def move(ts: list[int]) -> np.ndarray:
        h = np.asarray(ts, dtype=np.int64)
        return c0 + np.round((h - h0) * rate).astype(np.int64)

    return move


def write_stamps(writer: TraceWriter, stamper: Any, pass_id: int, to_clock: Any = 0) -> dict[str, Any]:
    """Appends a run's line stamps; returns what the run entry in the metadata says of them."""
    cols = stamper.columns(to_clock)
    n = len(cols["ts_ns"])
    if n:
        writer.append("line_stamps", {**cols, "pass_id": np.full(n, pass_id, dtype=np.int32)})
    said: dict[str, Any] = {"line_stamps": n, "line_stamps_truncated": bool(stamper.truncated)}
    speed = stamper.speed_samples(to_clock)
    if speed["ts_ns"]:  # the CPU's speed on the main thread during the run (analyzers.cpu_speed)
        said["cpu_speed"] = speed
    return said


class TimingTracer:
    """The timing run of a script (`timing_config`): no CUPTI, no CUDA call of graphmode's; stamps of the lines
    that start the iterations and of those around each capture (analyzers.run_plan.lines_to_time), and the start
    and end of each PyTorch capture window and Dynamo compilation (a cudagraph-tree recording, a `with
    torch.cuda.graph` block: TorchHooks(recordings_only), two Python calls each), on perf_counter_ns (its own
    clock: only differences are read). Appends one pass, detail 'stamps', to the trace the earlier
    runs wrote; the windows go into its meta.runs entry ('torch'), as the measuring run's do."""

    def __init__(self, out: str | os.PathLike[str], config: RunConfig, pass_id: int, append: bool = True):
        if not append:
            raise ValueError("the timing run adds to a trace the measuring and detail runs wrote (append=True)")
        self.out = rank_trace_path(out)
        self.config = config
        self.pass_id = pass_id
        self._writer: TraceWriter | None = None
        self._stamper: Any = None
        self._torch: Any = None  # tracer.torch_hooks.TorchHooks
        self.start_ns = 0

    def start(self) -> None:
        self._writer = TraceWriter(self.out, append=True)
        self._stamper = start_stamper(self.config)

        # PyTorch's capture windows untraced: the measuring run's are slowed by CUPTI (analyzers.per_graph)
        self._torch = TorchHooks(None, clock=time.perf_counter_ns, recordings_only=True).install()
        self.start_ns = time.perf_counter_ns()

    def stop(self, status: str = "complete", reason: str = "", extra_meta: dict[str, Any] | None = None) -> Path:
        assert self._writer is not None, "start() first"
        end = time.perf_counter_ns()
        writer = self._writer
        entry: dict[str, Any] = {"pass_id": self.pass_id, "config": asdict(self.config), "status": status, "reason": reason}
        if (windows := _capture_windows(self._torch.uninstall() if self._torch is not None else None)) is not None:
            entry["torch"] = windows  # the PyTorch capture windows, on this run's perf_counter_ns
        try:
            if self._stamper is not None:
                self._stamper.stop()
                entry.update(write_stamps(writer, self._stamper, self.pass_id))
                entry["stamp_cost_ns"] = stamp_cost_ns()  # what a stamp cost the program (measured after it ended)
            writer.add_pass(PassInfo(self.pass_id, self.config.name, "stamps", self.start_ns, end, 0, status))
        finally:
            existing = writer.get_meta()
            entry.update({k: v for k, v in (extra_meta or {}).items() if k == "script"})
            # The run ends with the first-graph probe (tracer.first_graph_probe): untraced, as the probe must be (CUPTI
            # attached earlier in the process takes most of the extra it measures away), and the process ends next.
            mark(f"child {self.config.name}: stamps written")
            probe = run_probe(writer, self.config.name) if status == "complete" else {}
            mark(f"child {self.config.name}: first-graph probe done")
            try:
                writer.set_meta({"runs": _runs_with(existing, entry), **probe})
            finally:
                writer.close(keep_status=True)
        return writer.path


class ProbeTracer:
    """The probe run of a script (PROBE_RUN): no CUPTI, no CUDA call of graphmode's while the code runs; when it has
    ended, the first-graph probe (tracer.first_graph_probe) in its process, written to the trace the earlier runs wrote
    (meta.first_graph_probe, and the run in meta.runs). Adds no pass."""

    def __init__(self, out: str | os.PathLike[str], config: RunConfig, pass_id: int):
        self.out = rank_trace_path(out)
        self.config = config
        self.pass_id = pass_id

    def start(self) -> None:
        TraceWriter(self.out, append=True).close(keep_status=True)  # a trace that cannot be appended to fails now

    def stop(self, status: str = "complete", reason: str = "", extra_meta: dict[str, Any] | None = None) -> Path:
        writer = TraceWriter(self.out, append=True)
        entry: dict[str, Any] = {"pass_id": self.pass_id, "config": asdict(self.config), "status": status, "reason": reason}
        entry.update({k: v for k, v in (extra_meta or {}).items() if k == "script"})
        try:
            mark(f"child {self.config.name}: first-graph probe started")
            probe = run_probe(writer, self.config.name) if status == "complete" else {}
            mark(f"child {self.config.name}: first-graph probe done")
            writer.set_meta({"runs": _runs_with(writer.get_meta(), entry), **probe})
        finally:
            writer.close(keep_status=True)
        return writer.path


def run_probe(writer: TraceWriter, run: str) -> dict[str, Any]:
    """{'first_graph_probe': ...}: tracer.first_graph_probe in this process, with which run measured it and how many
    graphs the code had instantiated before it (`instantiations`; the prediction uses the probe only where none had
    been, analyzers.predict); {} where the code instantiated a graph of its own (its first graph is measured, the
    probe's would not be the first)."""
    before = instantiations(writer.as_trace())
    return {"first_graph_probe": _probe_first_graph() | {"run": run, "execs_before": before}} if before == 0 else {}


# Each CUPTI session a run attached numbers its correlation ids from the start again (benchmarks/notes/s24): the k-th
# session's ids are moved up by k << CORRELATION_SEGMENT_BITS, so that they stay unique and grow with time.
CORRELATION_SEGMENT_BITS = 40


def _offset_correlations(tables: dict[str, dict[str, Any]], offset: int) -> None:
    if not offset:
        return
    for cols in tables.values():
        if "correlation_id" in cols:
            c = np.asarray(cols["correlation_id"], dtype=np.int64)
            cols["correlation_id"] = np.where(c != 0, c + offset, 0)


def _concat(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """One table's columns of several sessions, end to end (the columns they all have)."""
    have = [p for p in parts if p is not None and len(next(iter(p.values()), ()))]
    if not have:
        return next((p for p in parts if p is not None), None)
    keys = [k for k in have[0] if all(k in p for p in have)]
    return {k: np.concatenate([np.asarray(p[k]) for p in have]) for k in keys}


def write_script_pass(writer: TraceWriter, raw: Any, info: PassInfo,
                      untraced_captures: list[dict[str, Any]] | None = None, segments: Sequence[Any] = ()) -> Any:
    """Writes the records of a run's sessions (`segments`: those detached before the last for an untraced window or
    capture, in order; `raw`: the last) with the graphs derived from all of them; returns those graphs
    (tracer.lifecycle.ScriptGraphs). Each session numbers correlation ids afresh: the k-th session's move up by
    k << CORRELATION_SEGMENT_BITS. CUPTI's graph, node and executable ids run on across sessions, so a graph built in
    one session and replayed in a later one is one graph. `untraced_captures`: see derive_graphs."""
    pid = info.pass_id
    sessions = [*segments, raw]
    parts: list[tuple[dict[str, dict[str, Any]], dict[int, Any]]] = []
    for k, r in enumerate(sessions):
        replays: dict[int, Any] = {}
        tables = decode(r, pid, replay_nodes=replays if untraced_captures else None)
        _offset_correlations(tables, k << CORRELATION_SEGMENT_BITS)
        if (note := drop_untimed_spans(tables, pid)) is not None:
            writer.add_note(note)
        parts.append((tables, replays))
    merged = raw
    if segments:  # what derive_graphs and map_graph_ids read of a session, of all of them
        merged = RawActivity()
        merged.resource_events = [e for r in sessions for e in r.resource_events]
        merged.topologies = {g: t for r in sessions for g, t in r.topologies.items()}
    first: dict[int, Any] = {}  # each graph id's first replay, over the sessions
    for _, replays in parts:
        for g, rn in replays.items():
            if g not in first or rn.first_ns < first[g].first_ns:
                first[g] = rn
    api = _concat([t.get("api_calls") for t, _ in parts])
    graphs = derive_graphs(merged, api, untraced_captures or (), first)
    labels = dict(zip(graphs.graphs["graph_id"], graphs.graphs["label"]))
    known = dict(zip(graphs.nodes["node_id"], graphs.nodes["graph_id"]))
    all_spans = [t["gpu_spans"] for t, _ in parts if t.get("gpu_spans") is not None]
    for spans in all_spans:
        map_graph_ids(spans, merged, known, graphs.exec_to_graph)
        gl = spans["kind"] == "graph"
        if gl.any():
            spans["name"][gl] = lookup(spans["graph_id"][gl], labels, lambda g: f"graph {g}")
    # Work of graphs we did not see built (created before tracing started) keeps its ids but
    # would dangle: record such graphs as 'unknown' so every id resolves.
    seen = set(graphs.graphs["graph_id"])
    launched = {int(x) for spans in all_spans for x in np.unique(spans["graph_id"]) if x}
    for g in sorted(launched - {int(x) for x in seen}):
        for key, val in (("graph_id", g), ("exec_id", 0), ("origin", "unknown"),
                         ("label", f"graph {g} (built before tracing started)"), ("mode", "graph"),
                         ("num_nodes", 0), ("num_edges", 0)):
            graphs.graphs[key].append(val)
    unknown_nodes = {int(g) for g, n in zip(graphs.graphs["graph_id"], graphs.graphs["origin"]) if n == "unknown"}
    for spans in all_spans:
        if unknown_nodes:
            keep = ~np.isin(spans["graph_id"], list(unknown_nodes))
            spans["graph_node_id"] = np.where(keep, spans["graph_node_id"], 0)
    for tables, _ in parts:
        for table, cols in tables.items():
            writer.append(table, cols)
    for table, cols in (("graphs", graphs.graphs), ("graph_nodes", graphs.nodes), ("graph_edges", graphs.edges),
                        ("graph_events", graphs.events)):
        if cols and len(next(iter(cols.values()))):
            writer.append(table, {**cols, "pass_id": [pid] * len(next(iter(cols.values())))})
    for tables, _ in parts:
        if tables.get("api_calls") is not None:
            launches = launch_events(tables["api_calls"], tables.get("gpu_spans"))
            if launches is not None:
                writer.append("graph_events", {**launches, "pass_id": np.full(len(launches["graph_id"]), pid)})
    writer.add_pass(info)
    debug_dir = os.environ.get("GRAPHMODE_DEBUG_DIR")
    if debug_dir:  # raw resource callbacks, to study what a framework does with graphs
        with open(os.path.join(debug_dir, f"resource_events_{writer.path.stem}_pass{pid}.json"), "w") as f:
            json.dump([e.__dict__ for e in raw.resource_events], f, default=str)
    return graphs


def _exec_id(graph: Any) -> int:
    """CUPTI's id of the executable graph a PyTorch CUDAGraph holds (`raw_cuda_graph_exec`, PyTorch 2.8+), read with
    CUPTI attached; 0 where PyTorch does not say (the graph is then adopted by its first replay, tracer.lifecycle)."""
    raw = getattr(graph, "raw_cuda_graph_exec", None)
    handle = int(raw()) if raw is not None else 0
    return int(cupti_module().get_graph_exec_id(handle)) if handle else 0


def _own_graph() -> None:
    """An empty graph of graphmode's own, created, instantiated, launched on a stream of its own and destroyed: right
    after the untraced capture's session attached, it takes the session's first graph operations, which cost a ViT's
    first replay 6.3-7.7 ms against 2.0 untraced without it, 2.25-2.42 with it (benchmarks/notes/s28, call 3). Its
    resource callbacks and API records are graphmode's own (CuptiSession.own_work)."""
    from cuda.bindings import driver as cu

    graph = check(cu.cuGraphCreate(0), "cuGraphCreate (graphmode's own graph)")
    try:
        check(cu.cuGraphAddEmptyNode(graph, None, 0), "cuGraphAddEmptyNode (graphmode's own graph)")
        exe = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate (graphmode's own graph)")
        stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate (graphmode's own graph)")
        try:
            check(cu.cuGraphLaunch(exe, stream), "cuGraphLaunch (graphmode's own graph)")
            check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize (graphmode's own graph)")
        finally:
            cu.cuGraphExecDestroy(exe)
            cu.cuStreamDestroy(stream)
    finally:
        cu.cuGraphDestroy(graph)


def _tree_pool_capture() -> bool:
    """Whether the capture beginning now is the empty one with which a cudagraph tree sets up its memory pool (in
    torch._inductor.cudagraph_trees, CUDAGraphTreeManager.__init__), not a recording."""
    f: Any = sys._getframe(2)
    for _ in range(16):
        if f is None:
            return False
        if f.f_code.co_name == "__init__" and f.f_code.co_filename.endswith("cudagraph_trees.py"):
            return True
        f = f.f_back
    return False


class _Terminated(BaseException):
    """SIGTERM while the script runs: stop it like Ctrl-C, so the trace is written."""


def run_in_this_process(script: str | os.PathLike[str], args: list[str], out: str | os.PathLike[str],
                        config: RunConfig = MEASURE, append: bool = False, pass_id: int = 0,
                        result_file: str | None = None) -> int:
    """Runs a Python script as __main__ in this process under one traced run; returns its exit code.

    An exception it raises is printed as Python would print it and recorded in the trace (status
    'failed'); Ctrl-C or SIGTERM give 'interrupted'. `result_file` receives where the trace was written
    (it moves to the temporary folder when the disk fills up), as JSON {"path": ...}.
    """
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(f"no such script: {path}")
    tracer: ScriptTracer | TimingTracer | ProbeTracer
    if config.cupti:
        tracer = ScriptTracer(out, config, append=append, pass_id=pass_id,
                              meta={"params": {"detail": config.detail, "launch_sources": config.launch_sources}})
    elif config.name == PROBE_RUN.name:
        tracer = ProbeTracer(out, config, pass_id=pass_id)
    else:
        tracer = TimingTracer(out, config, pass_id=pass_id, append=append)

    if pass_id == 0 and (warning := warning_before_run(path)):
        print(warning, file=sys.stderr)
    mark(f"child {config.name}: graphmode imported")
    status, reason, code = "complete", "", 0
    info: dict[str, Any] = {"path": str(path), "argv": [str(path), *args], "exception": None}

    # The first SIGTERM stops the script; any later one is ignored until the trace is written. A run whose `graphmode
    # run` was killed gets SIGTERM from PR_SET_PDEATHSIG (_stop_with_parent) once per thread of the killed parent that
    # it is handed on from, so several arrive within moments (tracer.signals). One that comes while the tracer starts
    # (the trace file opened, CUPTI attaching) waits for the start to finish, and the script is then not run: the trace
    # is written 'interrupted' rather than left 'recording' by SIGTERM's default action.
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    started = False  # a start that failed (NoGpuError before anything of the user's runs) has nothing to write
    with sigterm_interrupts(_Terminated) as hold:
        try:
            with sigterm_deferred() as pending:
                tracer.start()
                started = True
            mark(f"child {config.name}: tracer started")
            if pending():
                hold()  # a killed parent sends several: the later ones are ignored, as after a first SIGTERM
                raise _Terminated("before the script started")
            sys.argv = [str(path), *args]
            sys.path.insert(0, str(path.resolve().parent))
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as e:
            if not started:
                raise
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if code != 0:
                status, reason = "failed", f"the script exited with status {code}"
        except (KeyboardInterrupt, _Terminated) as e:
            if not started:
                raise
            what = "interrupted by the user (Ctrl-C)" if isinstance(e, KeyboardInterrupt) else "terminated (SIGTERM)"
            if isinstance(e, _Terminated) and e.args:
                what += f" {e.args[0]}"
            status, reason, code = "interrupted", what, 130 if isinstance(e, KeyboardInterrupt) else 143
            info["exception"] = _exception_info(e)
        except BaseException as e:
            if not started:
                raise
            traceback.print_exc()
            status, code = "failed", 1
            info["exception"] = _exception_info(e)
            reason = f"the script raised {type(e).__name__}: {info['exception']['message']}"
        finally:
            # SIGTERM while the trace is written would leave it unfinished ('recording'): ignored until it is done
            hold()
            sys.argv, sys.path[:] = saved_argv, saved_path
            if started:
                mark(f"child {config.name}: script ended")
                info["exit_code"] = code
                written = tracer.stop(status, reason, {"script": info})
                mark(f"child {config.name}: trace written")
                if result_file:  # the trace is closed: `graphmode run` goes on while this process ends (_run_child)
                    Path(result_file).write_text(json.dumps({"path": str(written), "exit_code": code}))
    return code


def _run_child(config: RunConfig, script: Path, args: list[str], out: Path, append: bool,
               pass_id: int) -> tuple[int, dict[str, Any]]:
    """One run in a fresh Python process; Ctrl-C reaches it through the terminal, SIGTERM is passed on.
    Returns its exit status and what it said of its trace: {"path": where it was written} or
    {"error": why graphmode could not record} ({} when it died before saying)."""
    fd, result = tempfile.mkstemp(prefix="graphmode-run-", suffix=".json")
    os.close(fd)
    spec = json.dumps({"config": asdict(config), "out": str(out), "append": append, "pass_id": pass_id,
                       "result": result, "parent": os.getpid()})
    env = dict(os.environ)
    if pass_id and "TORCHELASTIC_RESTART_COUNT" in env:
        # Under torchrun each run is a new set of workers on the same rendezvous store: PyTorch prefixes its
        # keys with the restart count (/worker/attempt_<n>), so a run with its own count cannot read the
        # keys (NCCL's communicator id) the previous run left there.
        try:
            env["TORCHELASTIC_RESTART_COUNT"] = str(int(env["TORCHELASTIC_RESTART_COUNT"]) + 1000 * pass_id)
        except ValueError:
            pass
    proc = subprocess.Popen([sys.executable, "-m", "graphmode.tracer.script_child", spec, str(script), *args], env=env)
    on_main = threading.current_thread() is threading.main_thread()
    forward = lambda signum, frame: proc.send_signal(signum)  # noqa: E731
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN) if on_main else None  # the child handles Ctrl-C
    old_term = signal.signal(signal.SIGTERM, forward) if on_main else None
    said: dict[str, Any] = {}
    try:
        status: int | None = None
        while status is None:  # until the process ends or says its trace is written and closed
            try:
                status = proc.wait(timeout=CHILD_POLL_S)
            except subprocess.TimeoutExpired:
                said = _said(result)
                if "exit_code" in said:
                    break
        if status is None:  # the trace is written: what ending the process takes (PyTorch's, CUDA's) is not waited for
            if not _EXITING:
                atexit.register(finish_runs)  # whatever ends `graphmode run` (an error too) waits for it first
            _EXITING.append(proc)
            status = int(said["exit_code"])
        else:
            said = _said(result)
    finally:
        if on_main:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)
        Path(result).unlink(missing_ok=True)
    return status, said


# How often `graphmode run` looks whether a run's process said its trace is written (the process then takes a second or
# more to end: PyTorch's and CUDA's teardown, which the next decision overlaps; benchmarks/notes/s20, call 3)
CHILD_POLL_S = 0.05
_EXITING: list[subprocess.Popen[bytes]] = []  # runs' processes whose trace is written, still ending


def _said(result: str) -> dict[str, Any]:
    """What a run's process wrote of its trace ({} before it wrote it whole)."""
    try:
        said = json.loads(Path(result).read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return said if isinstance(said, dict) else {}


def finish_runs() -> None:
    """Waits for the runs' processes that wrote their trace and were still ending (before the next run starts, and
    before `graphmode run` exits)."""
    while _EXITING:
        _EXITING.pop().wait()


@dataclass(frozen=True)
class ScriptRuns:
    """What `run_script` did: the exit code the user sees, the trace, and the runs made."""

    exit_code: int
    path: Path
    runs: tuple[str, ...]
    note: str  # why a planned run was not made ('' when all were)
    probe_skipped: object | None = None  # why the planned probe run was not made (RunDecisions.why_no_probe_run)
    timing_skipped: object | None = None  # why the timing run planned 'eager_only' was not made (RunDecisions.why_no_timing_run)


def run_script(script: str | os.PathLike[str], args: list[str], out: str | os.PathLike[str],
               plan: list[RunConfig] | None = None, decide: RunDecisions | None = None) -> ScriptRuns:
    """Runs the script once per planned run, each in a fresh process, all into one trace file. A planned timing or
    probe run is made as `decide` says (analyzers.run_plan.DECISIONS); without it, neither is. The last run's process
    may still be ending when this returns (_run_child): finish_runs waits for it."""
    path, out = Path(script), Path(out)
    if not path.is_file():
        raise FileNotFoundError(f"no such script: {path}")
    plan = plan or [MEASURE]
    # said before the program runs, not by the first run's process
    check_output_path(out, inputs=(path,), what="script")
    check_free_space(out)
    code = 0
    made: list[str] = []
    note = ""
    probe_skipped: object | None = None
    timing_skipped: object | None = None
    status = 0
    for pass_id, config in enumerate(plan):
        ok = code == 0 and status == 0  # after a failure: nothing to time, no prediction to make
        if config.when == "eager_only" and not (ok and decide is not None and _decided(out, decide.built_no_graph, False)):
            continue
        if config.when == "eager_only" and config.name == "timing" and decide is not None:
            why_not = _decided(out, decide.why_no_timing_run, None)
            if why_not is not None:
                timing_skipped = why_not
                continue
        if config.stamp == "lines" and not config.stamp_lines:  # the timing run: which lines, now that two runs are in
            no_lines: list[str] = []
            lines = _decided(out, decide.lines_to_time, no_lines) if ok and decide is not None else no_lines
            if not lines:
                continue
            config = replace(config, stamp_lines=tuple(lines))
        if config.name == PROBE_RUN.name:
            why = _decided(out, decide.why_no_probe_run, _UNREADABLE) if ok and decide is not None else _UNREADABLE
            if why is not None:
                probe_skipped = None if why is _UNREADABLE else why
                continue
        mark(f"parent: {config.name} run decided")
        finish_runs()  # the previous run's process has ended before this one starts
        status, said = _run_child(config, path, args, out, append=pass_id > 0, pass_id=pass_id)
        mark(f"parent: {config.name} run ended")
        made.append(config.name)
        if pass_id == 0:
            code = status
        out = Path(said.get("path", out))  # the trace moved to the temporary folder if the disk filled up
        if pass_id + 1 == len(plan):
            break
        skipped = ", ".join(c.name for c in plan[pass_id + 1:])
        if "error" in said:  # graphmode could not record this run (it said why on stderr)
            note = f"the {config.name} run could not be recorded ({said['error']}): the {skipped} run was not made"
            break
        # A run that failed still gets its detail run (it names the failing graph and lines); one that
        # was interrupted or killed (Ctrl-C 130, SIGTERM 143, a signal: negative) ends here.
        if status in (130, 143) or status < 0:
            note = f"the {config.name} run ended with exit status {status}: the {skipped} run was not made"
            break
    return ScriptRuns(code, out, tuple(made), note, probe_skipped, timing_skipped)


_D = TypeVar("_D")
_UNREADABLE = object()  # a decision that could not be made: the trace so far cannot be read


def _decided(out: Path, decision: Callable[[Trace], _D], unreadable: _D) -> _D:
    """A decision of the trace recorded so far; `unreadable` where it cannot be read."""
    try:
        trace = load(out)
    except (TraceError, OSError):
        return unreadable
    try:
        return decision(trace)
    finally:
        trace.close()


def child_main(argv: list[str]) -> int:
    """`python -m graphmode.tracer.script_child SPEC SCRIPT ARGS...`: one run, as _run_child starts it."""
    spec = json.loads(argv[0])
    if "parent" in spec:
        _stop_with_parent(int(spec["parent"]))
    config = replace(RunConfig(spec["config"]["name"]), **spec["config"])
    try:
        return run_in_this_process(argv[1], argv[2:], spec["out"], config, append=bool(spec["append"]),
                                   pass_id=int(spec["pass_id"]), result_file=spec.get("result"))
    except GraphmodeError as e:  # a recording that failed (a full disk, no GPU): one line, no traceback
        print(f"graphmode: {e}", file=sys.stderr)
        if spec.get("result"):
            Path(spec["result"]).write_text(json.dumps({"error": str(e)}))
        return 1


def _stop_with_parent(parent: int) -> None:
    """Linux: this run gets SIGTERM when the `graphmode run` process that started it dies, even by
    SIGKILL, so it stops the script and closes its trace ('interrupted') instead of running on, orphaned,
    with the trace file locked. The kernel sends it each time the orphan passes from one dying thread of the
    parent to the next, so a multi-threaded parent's death brings several (run_in_this_process ignores all
    but the first)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the call above
        os.kill(os.getpid(), signal.SIGTERM)
