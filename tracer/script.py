"""Trace a user's own code: a whole script (`graphmode run`) or a region (`graphmode.trace`).

One traced pass (there is no untraced twin of a user's script to compare with, so the report says
that wall times include the tracer's overhead). What is recorded: CUDA API calls, GPU work, NVTX
ranges, the graphs the code built with their topology and the Python line that created each node
(a CUPTI resource callback at node creation, during capture only), the call sites of graph
lifecycle calls, and a pyinstrument profile of the CPU side. Whatever happens to the code — it
raises, calls sys.exit, or the user presses Ctrl-C — the trace of what ran is written.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer.ranks import device_ordinal, rank_meta, rank_meta_at_stop, rank_trace_path
from graphmode.tracer.store import PassInfo, TraceWriter


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
    """Start/stop a CUPTI session around user code and write what it recorded to one trace file."""

    def __init__(self, out: str | os.PathLike[str], detail: str = "graph", launch_sources: bool = False,
                 profile: bool = True, nvtx: bool = True, workload: str = "script", meta: dict[str, Any] | None = None):
        if detail not in ("graph", "node"):
            raise ValueError(f"detail must be 'graph' or 'node', not {detail!r}")
        self.out = rank_trace_path(out)  # `<stem>.rank<R>.gmtrace` when launched as one rank of a job
        self.detail = detail
        self.launch_sources = launch_sources
        self.profile = profile
        self.nvtx = nvtx
        self.workload = workload
        self.extra_meta = meta or {}
        self._session: Any = None
        self._profiler: Any = None
        self._writer: TraceWriter | None = None
        self.start_ns = 0

    def start(self) -> None:
        from graphmode.tracer.cuda_util import init_device
        from graphmode.tracer.cupti_session import LAUNCH_API, LIFECYCLE_API, CuptiSession, loaded_cupti_library, timestamp
        from graphmode.tracer.runner import machine_meta
        from graphmode.tracer.sources import user_source

        device = init_device(device_ordinal())
        if self.nvtx and "NVTX_INJECTION64_PATH" not in os.environ:
            # Must name the libcupti loaded here, and be set before the code's first NVTX call.
            lib = loaded_cupti_library()
            if lib:
                os.environ["NVTX_INJECTION64_PATH"] = lib
        meta = machine_meta(device)
        meta.update({"workload": self.workload, "dropped_records": 0,
                     "params": {"detail": self.detail, "launch_sources": self.launch_sources},
                     "nvtx_injection": os.environ.get("NVTX_INJECTION64_PATH", "")})
        meta.update(self.extra_meta)
        meta.update(rank_meta())
        self._writer = TraceWriter(self.out, meta)
        source_api = LIFECYCLE_API if not self.launch_sources else f"{LIFECYCLE_API}|{LAUNCH_API}"
        self._session = CuptiSession(self.detail, on_node_created=user_source, nvtx=self.nvtx,
                                     source_api=source_api, snapshot_topology=True)
        self._session.start()
        self.start_ns = timestamp()
        if self.profile:
            from pyinstrument import Profiler

            self._profiler = Profiler(interval=0.001, async_mode="disabled")
            self._profiler.start()

    def stop(self, status: str = "complete", reason: str = "", extra_meta: dict[str, Any] | None = None) -> Path:
        from graphmode.tracer.cupti_session import timestamp

        assert self._writer is not None and self._session is not None, "start() first"
        writer = self._writer
        profile_json = None
        if self._profiler is not None:
            try:
                session = self._profiler.stop()
                data = session.to_json()  # a dict in pyinstrument 5, a string in older releases
                profile_json = data if isinstance(data, dict) else json.loads(data)
            except Exception:
                profile_json = None
        try:
            from cuda.bindings import driver as cu

            cu.cuCtxSynchronize()  # let queued GPU work finish so its records exist
        except Exception:
            pass
        end = timestamp()
        raw = self._session.stop()
        try:
            write_script_pass(writer, raw, PassInfo(0, "script", self.detail, self.start_ns, end, raw.dropped, status))
        finally:
            meta: dict[str, Any] = {"dropped_records": raw.dropped}
            if raw.callback_errors:
                meta["callback_errors"] = raw.callback_errors
            if profile_json is not None:
                meta["cpu_profile"] = profile_json
            meta.update(extra_meta or {})
            meta.update(rank_meta_at_stop(writer.as_trace()))
            writer.set_meta(meta)
            writer.close(status, reason)
        return self.out


def write_script_pass(writer: TraceWriter, raw: Any, info: PassInfo) -> None:
    from graphmode.tracer.decode import decode, lookup
    from graphmode.tracer.lifecycle import derive_graphs
    from graphmode.tracer.passes import launch_events, map_graph_ids

    pid = info.pass_id
    tables = decode(raw, pid)
    api = tables.get("api_calls")
    graphs = derive_graphs(raw, api)
    labels = dict(zip(graphs.graphs["graph_id"], graphs.graphs["label"]))
    spans = tables.get("gpu_spans")
    if spans is not None:
        known = dict(zip(graphs.nodes["node_id"], graphs.nodes["graph_id"]))
        map_graph_ids(spans, raw, known, graphs.exec_to_graph)
        gl = spans["kind"] == "graph"
        if gl.any():
            spans["name"][gl] = lookup(spans["graph_id"][gl], labels, lambda g: f"graph {g}")
        # Work of graphs we did not see built (created before tracing started) keeps its ids but
        # would dangle: record such graphs as 'unknown' so every id resolves.
        seen = set(graphs.graphs["graph_id"])
        for g in sorted({int(x) for x in np.unique(spans["graph_id"]) if x and int(x) not in seen}):
            for key, val in (("graph_id", g), ("exec_id", 0), ("origin", "unknown"),
                             ("label", f"graph {g} (built before tracing started)"), ("mode", "graph"),
                             ("num_nodes", 0), ("num_edges", 0)):
                graphs.graphs[key].append(val)
        unknown_nodes = {int(g) for g, n in zip(graphs.graphs["graph_id"], graphs.graphs["origin"]) if n == "unknown"}
        if unknown_nodes:
            keep = ~np.isin(spans["graph_id"], list(unknown_nodes))
            spans["graph_node_id"] = np.where(keep, spans["graph_node_id"], 0)
    for table, cols in tables.items():
        writer.append(table, cols)
    for table, cols in (("graphs", graphs.graphs), ("graph_nodes", graphs.nodes), ("graph_edges", graphs.edges),
                        ("graph_events", graphs.events)):
        if cols and len(next(iter(cols.values()))):
            writer.append(table, {**cols, "pass_id": [pid] * len(next(iter(cols.values())))})
    if api is not None:
        launches = launch_events(api, spans)
        if launches is not None:
            writer.append("graph_events", {**launches, "pass_id": np.full(len(launches["graph_id"]), pid)})
    writer.add_pass(info)
    _append_inferred_iterations(writer, pid)
    debug_dir = os.environ.get("GRAPHMODE_DEBUG_DIR")
    if debug_dir:  # raw resource callbacks, to study what a framework does with graphs
        with open(os.path.join(debug_dir, f"resource_events_{writer.path.stem}.json"), "w") as f:
            json.dump([e.__dict__ for e in raw.resource_events], f)


def _append_inferred_iterations(writer: TraceWriter, pass_id: int) -> None:
    """Eager stretches and graph replays found in the recorded calls (tracer/infer.py)."""
    try:
        from graphmode.tracer.infer import infer_iterations
    except ImportError:
        return
    cols = infer_iterations(writer.as_trace(), pass_id)
    if cols and len(next(iter(cols.values()))):
        writer.append("markers", cols)


def run_script(script: str | os.PathLike[str], args: list[str], out: str | os.PathLike[str], detail: str = "graph",
               launch_sources: bool = False, profile: bool = True) -> tuple[int, Path]:
    """Runs a Python script as __main__ under the tracer; returns (its exit code, trace path).

    The script's arguments, stdout and stderr pass through; an exception it raises is printed as
    Python would print it and recorded in the trace (status 'failed'); Ctrl-C gives 'interrupted'.
    """
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(f"no such script: {path}")
    tracer = ScriptTracer(out, detail=detail, launch_sources=launch_sources, profile=profile,
                          meta={"params": {"detail": detail, "launch_sources": launch_sources}})
    tracer.start()  # raises NoGpuError before anything of the user's runs
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    status, reason, code = "complete", "", 0
    info: dict[str, Any] = {"path": str(path), "argv": [str(path), *args], "exception": None}

    def on_sigterm(signum: int, frame: Any) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm) if threading.current_thread() is threading.main_thread() else None
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code != 0:
            status, reason = "failed", f"the script exited with status {code}"
    except (KeyboardInterrupt, _Terminated) as e:
        what = "interrupted by the user (Ctrl-C)" if isinstance(e, KeyboardInterrupt) else "terminated (SIGTERM)"
        status, reason, code = "interrupted", what, 130 if isinstance(e, KeyboardInterrupt) else 143
        info["exception"] = _exception_info(e)
    except BaseException as e:
        traceback.print_exc()
        status, code = "failed", 1
        info["exception"] = _exception_info(e)
        reason = f"the script raised {type(e).__name__}: {info['exception']['message']}"
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sys.argv, sys.path[:] = saved_argv, saved_path
        info["exit_code"] = code
        tracer.stop(status, reason, {"script": info})
    return code, tracer.out


class _Terminated(BaseException):
    """SIGTERM while the script runs: stop it like Ctrl-C, so the trace is written."""
