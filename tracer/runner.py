"""Runs a built-in workload in eager and graph mode, pass by pass, and writes the trace.

Pass 0 ('timing') runs with no CUPTI activity enabled: only host timestamps around each iteration
and each one-time graph operation, so its figures are those of an untraced run (benchmarks/
fidelity.py measures how close: docs/benchmarks.md). Pass 1 runs the same sequence under a CUPTI session at the
requested detail ('graph' or 'node'). Everything recorded is written after each pass, so an
interrupted run keeps its completed passes and the markers of the pass it was in.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer.cuda_util import check, init_device
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.passes import write_pass
from graphmode.tracer.signals import Terminated, sigterm_interrupts
from graphmode.tracer.store import PassInfo, TraceWriter
from graphmode.tracer.topology import GraphTopology, read_topology
from graphmode.tracer.workloads import Workload

Progress = Callable[[str, int, int], None]  # (what runs now, phases done, phases in all)


@dataclass
class PassRecorder:
    """Host-side markers and graph records of one pass, as columns."""

    pass_id: int
    thread_id: int = field(default_factory=threading.get_native_id)
    markers: list[dict[str, Any]] = field(default_factory=list)
    graphs: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    verified: dict[str, bool] = field(default_factory=dict)
    verify_notes: dict[str, str] = field(default_factory=dict)
    own_spans: list[tuple[int, int, int]] = field(default_factory=list)  # graphmode's own CUDA calls

    def mark(self, kind: str, name: str, mode: str, start: int, end: int, graph_id: int = 0) -> None:
        self.markers.append(
            {"kind": [kind], "name": [name], "mode": [mode], "iteration": [-1], "start_ns": [start],
             "end_ns": [end], "thread_id": [self.thread_id], "graph_id": [graph_id]}
        )

    def iterations(self, mode: str, starts: np.ndarray, ends: np.ndarray, graph_id: int = 0) -> None:
        n = len(starts)
        self.markers.append(
            {"kind": np.full(n, "iteration", dtype=object), "name": np.full(n, mode, dtype=object),
             "mode": np.full(n, mode, dtype=object), "iteration": np.arange(n, dtype=np.int32),
             "start_ns": starts, "end_ns": ends, "thread_id": np.full(n, self.thread_id, dtype=np.int64),
             "graph_id": np.full(n, graph_id, dtype=np.int64)}
        )

    def shift(self, offset_ns: int) -> None:
        """Moves every host timestamp by offset_ns (from perf_counter_ns onto the CUPTI clock)."""
        for part in (*self.markers, *self.events):
            for key in ("start_ns", "end_ns"):
                part[key] = np.asarray(part[key], dtype=np.int64) + offset_ns

    def event(self, graph_id: int, exec_id: int, event: str, start: int, end: int) -> None:
        self.events.append({"graph_id": [graph_id], "exec_id": [exec_id], "event": [event], "start_ns": [start],
                            "end_ns": [end], "correlation_id": [0], "thread_id": [self.thread_id]})


def _timed_loop(step: Callable[[], None], n: int, ts: Callable[[], int]) -> tuple[np.ndarray, np.ndarray]:
    """Runs `step` n times, stamping each iteration; on an exception keeps the completed iterations."""
    starts = np.zeros(n, dtype=np.int64)
    ends = np.zeros(n, dtype=np.int64)
    done = 0
    try:
        for i in range(n):
            s = ts()
            step()
            e = ts()
            starts[i] = s
            ends[i] = e
            done = i + 1
    finally:
        starts.resize(done, refcheck=False)
        ends.resize(done, refcheck=False)
    return starts, ends


class DriverGraphOps:
    """Instantiate, upload, launch and destroy a CUgraph with the driver API on one stream.

    A workload whose graphs are owned by a framework (torch.cuda.CUDAGraph) provides its own object
    with these methods as `workload.graph_ops`.
    """

    def __init__(self, stream: Any):
        from cuda.bindings import driver as cu

        self.cu, self.stream = cu, stream

    def instantiate(self, graph: Any) -> Any:
        return check(self.cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")

    def upload(self, gexec: Any) -> bool:
        check(self.cu.cuGraphUpload(gexec, self.stream), "cuGraphUpload")
        check(self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
        return True

    def launch(self, gexec: Any) -> None:
        check(self.cu.cuGraphLaunch(gexec, self.stream), "cuGraphLaunch")

    def sync(self) -> None:
        check(self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def replay_step(self, gexec: Any) -> Callable[[], None]:
        launch, sync, stream = self.cu.cuGraphLaunch, self.cu.cuStreamSynchronize, self.stream

        def replay() -> None:
            (err,) = launch(gexec, stream)
            if err:
                check((err,), "cuGraphLaunch")
            (err,) = sync(stream)
            if err:
                check((err,), "cuStreamSynchronize")

        return replay

    def graph_handle(self, graph: Any) -> Any:
        return graph

    def exec_handle(self, gexec: Any) -> int:
        return int(gexec)

    def destroy(self, graph: Any, gexec: Any) -> None:
        check(self.cu.cuGraphExecDestroy(gexec), "cuGraphExecDestroy")
        check(self.cu.cuGraphDestroy(graph), "cuGraphDestroy")


def run_pass(workload: Workload, rec: PassRecorder, iterations: int, warmup: int,
             progress: Progress | None = None, graph_replays: int | None = None,
             clock: Callable[[], int] | None = None, ids: bool = True) -> None:
    """One complete eager + graph sequence; records markers and topology into `rec`.

    `clock` stamps the markers (default: the CUPTI clock). With `ids`, the graph's CUPTI ids and
    topology are read once its replays are over: no CUPTI call happens between the build and the
    last replay, since CUPTI calls made there slow later graph launches (CUPTI 13.0, docs/design.md).
    Without `ids` CUPTI is never touched (benchmarks/fidelity.py baseline).
    """
    if clock is None:
        from cupti import cupti

        ts = cupti.get_timestamp
    else:
        ts = clock
    replays = iterations if graph_replays is None else graph_replays
    modes = workload.eager_modes()
    first = next(iter(modes.values()))
    note = progress or (lambda *_: None)

    n_phases = len(modes) + 3  # warm-up, each eager mode, graph build, graph replay
    note("warm-up", 0, n_phases)
    t0 = ts()
    for _ in range(warmup):
        first()
    rec.mark("phase", "warmup", "", t0, ts())

    for index, (mode, step) in enumerate(modes.items(), start=1):
        workload.reset()
        note(f"{mode} ({iterations} iterations)", index, n_phases)
        p0 = ts()
        try:
            starts, ends = _timed_loop(step, iterations, ts)
        finally:
            rec.mark("phase", mode, mode, p0, ts())
        rec.iterations(mode, starts, ends)
        rec.verified[mode], rec.verify_notes[mode] = workload.verify()

    workload.reset()
    note("graph build", n_phases - 2, n_phases)
    ops = getattr(workload, "graph_ops", None) or DriverGraphOps(workload.stream)
    p0 = ts()
    b0 = ts()
    graph, origin = workload.build_graph()
    b1 = ts()
    i0 = ts()
    gexec = ops.instantiate(graph)
    i1 = ts()
    u0 = ts()
    uploaded = ops.upload(gexec)
    u1 = ts()
    f0 = ts()
    ops.launch(gexec)
    ops.sync()
    f1 = ts()
    build_end = ts()

    replay = ops.replay_step(gexec)

    note(f"graph replay ({replays} replays)", n_phases - 1, n_phases)
    r0 = ts()
    try:
        starts, ends = _timed_loop(replay, replays, ts)
    finally:
        r1 = ts()
        # Ids and topology only now, after the last timed replay (see the docstring).
        handle = ops.graph_handle(graph) if ids else None
        t0 = ts()
        topo = read_topology(handle) if handle is not None else GraphTopology(graph_id=0)
        gid = topo.graph_id
        exec_id = 0
        exec_handle = ops.exec_handle(gexec)
        if ids and exec_handle:
            from cupti import cupti as _cupti

            exec_id = int(_cupti.get_graph_exec_id(exec_handle))
        rec.own_spans.append((rec.thread_id, t0, ts()))  # the traced pass drops these API records
        op = "capture" if origin == "capture" else "build"
        timed = [(op, b0, b1), ("instantiate", i0, i1)] + ([("upload", u0, u1)] if uploaded else [])
        for name, s, e in (*timed, ("first_launch", f0, f1)):
            rec.mark("op", name, "graph", s, e, gid)
        for name, s, e in timed:
            rec.event(gid, exec_id, name, s, e)
        rec.mark("phase", "build", "graph", p0, build_end, gid)
        rec.mark("phase", "replay", "graph", r0, r1, gid)
        rec.graphs.append({"graph_id": [gid], "exec_id": [exec_id], "origin": [origin],
                           "label": [f"{workload.name} step ({origin})"], "mode": ["graph"],
                           "num_nodes": [len(topo.nodes)], "num_edges": [len(topo.edges)]})
        if topo.nodes:
            rec.nodes.append({"graph_id": [gid] * len(topo.nodes), "node_id": [n[0] for n in topo.nodes],
                              "node_index": [n[1] for n in topo.nodes], "node_type": [n[2] for n in topo.nodes],
                              "name": [n[3] for n in topo.nodes]})
        if topo.edges:
            rec.edges.append({"graph_id": [gid] * len(topo.edges), "from_node_id": [e[0] for e in topo.edges],
                              "to_node_id": [e[1] for e in topo.edges]})
    rec.iterations("graph", starts, ends, gid)
    rec.verified["graph"], rec.verify_notes["graph"] = workload.verify()

    d0 = ts()
    ops.destroy(graph, gexec)
    rec.event(gid, exec_id, "destroy", d0, ts())


def machine_meta(device: Any) -> dict[str, Any]:
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return ""

    meta: dict[str, Any] = {
        "tool_version": version("graphmode") or "0.1.0",
        "gpu_name": device.name,
        "gpu_uuid": device.uuid,
        "compute_capability": f"{device.compute_capability[0]}.{device.compute_capability[1]}",
        "cuda_driver_version": device.driver_version,
        "cupti_version": f"cupti-python {version('cupti-python')}, libcupti {version('nvidia-cuda-cupti')}",
        "cuda_python_version": version("cuda-bindings") or version("cuda-python"),
        "hostname": socket.gethostname(),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "command_line": list(sys.argv),
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "pid": os.getpid(),
    }
    try:
        from cuda.bindings import runtime as rt

        meta["cuda_runtime_version"] = int(rt.cudaRuntimeGetVersion()[1])
    except Exception:
        meta["cuda_runtime_version"] = 0
    try:
        import pynvml  # nvidia-ml-py, present where the driver is; optional

        pynvml.nvmlInit()
        meta["driver_version"] = pynvml.nvmlSystemGetDriverVersion()
        pynvml.nvmlShutdown()
    except Exception:
        meta["driver_version"] = str(device.driver_version)
    return meta


def record(workload: Workload, out: Path, iterations: int = 1000, warmup: int = 10, detail: str = "graph",
           progress: Progress | None = None, graph_replays: int | None = None,
           extra_meta: dict[str, Any] | None = None) -> Path:
    """Runs the timing pass and one traced pass of `workload` and writes the trace to `out`."""
    if detail not in ("graph", "node"):
        raise ValueError(f"detail must be 'graph' or 'node', not {detail!r}")
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    device = init_device()
    meta = machine_meta(device)
    meta.update({"workload": workload.name, "params": {**workload.params, "iterations": iterations,
                 "warmup": warmup, "graph_replays": iterations if graph_replays is None else graph_replays,
                 "detail": detail}, "dropped_records": 0})
    meta.update(extra_meta or {})
    writer = TraceWriter(out, meta)
    # SIGTERM stops the run as Ctrl-C does: the passes so far are written, 'interrupted'
    with sigterm_interrupts() as hold:
        return _record_passes(workload, writer, out, iterations, warmup, detail, progress, graph_replays, hold)


def _record_passes(workload: Workload, writer: TraceWriter, out: Path, iterations: int, warmup: int, detail: str,
                   progress: Progress | None, graph_replays: int | None, hold: Callable[[], object]) -> Path:
    """`record`'s passes; `hold` (tracer.signals) ignores SIGTERM from the closing of the trace on."""
    from cupti import cupti

    verified: dict[str, bool] = {}
    notes: dict[str, str] = {}
    dropped_total = 0
    status, reason = "complete", ""
    try:
        workload.setup()
        for pass_id, (name, pdetail) in enumerate((("timing", "timing"), ("traced", detail))):
            rec = PassRecorder(pass_id)
            session = CuptiSession(pdetail) if pdetail != "timing" else None
            # The timing pass stamps with perf_counter_ns and makes no CUPTI call until it is over;
            # its stamps are then moved onto the CUPTI clock by the offset between the two clocks.
            clock = time.perf_counter_ns if session is None else cupti.get_timestamp
            start = int(clock())
            pass_status = "complete"
            try:
                if session is not None:
                    session.start()

                def note(phase: str, index: int, n_phases: int, _p: str = name, _i: int = pass_id) -> None:
                    # progress(description, phases done, phases in the run): two passes
                    if progress:
                        progress(f"pass {_i} ({_p}): {phase}", _i * n_phases + index, 2 * n_phases)

                run_pass(workload, rec, iterations, warmup, note, graph_replays, clock=clock)
            except BaseException as e:
                pass_status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
                raise
            finally:
                end = int(clock())  # before stop(): a CUPTI call after it would attach CUPTI again
                raw = session.stop() if session is not None else None
                if raw is not None:
                    raw.own_spans.extend(rec.own_spans)
                if session is None:
                    offset = int(cupti.get_timestamp()) - time.perf_counter_ns()
                    rec.shift(offset)
                    start, end = start + offset, end + offset
                dropped = raw.dropped if raw is not None else 0
                dropped_total += dropped
                write_pass(writer, rec, raw, PassInfo(pass_id, name, pdetail, start, end, dropped, pass_status))
                writer.set_meta({"dropped_records": dropped_total})
                for mode, ok in rec.verified.items():
                    verified[f"{mode} (pass {pass_id})"] = ok
                    notes[f"{mode} (pass {pass_id})"] = rec.verify_notes[mode]
                writer.set_meta({"results_verified": verified, "verification": notes})
        workload.teardown()
    except KeyboardInterrupt as e:
        status, reason = "interrupted", "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted by the user (Ctrl-C)"
        raise
    except BaseException as e:
        status, reason = "failed", f"{type(e).__name__}: {e}"
        raise
    finally:
        hold()  # a SIGTERM while the trace is closed would leave it unfinished ('recording')
        if status == "complete" and not all(verified.values()):
            bad = [m for m, ok in verified.items() if not ok]
            status, reason = "failed", f"results did not verify for {', '.join(bad)}"
        writer.close(status, reason)
    return out
