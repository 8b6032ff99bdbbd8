"""What the tracer samples about the memory graphs hold, and when (stored in `meta.graph_memory`).

There is no CUDA call that tells how much memory one graph holds. What can be read cheaply:

- `cuMemGetInfo`: free device memory. Its drop from just before a stream capture (or, for a graph
  built node by node, just before its instantiation) to just after the instantiation is what making
  the graph took: memory the captured code allocated (PyTorch's private pool grows during capture)
  plus the executable graph's own driver memory. It is device-wide, so allocations by other threads
  in between count too (docs/metrics.md says so);
- `cuDeviceGetGraphMemAttribute`: the driver's graph memory (memory alloc nodes, cudaMallocAsync inside
  graphs), used and reserved, device-wide;
- PyTorch's pool of a graph (tracer.torch_hooks adds it): reserved and allocated bytes of the pool's
  segments right after `CUDAGraph.capture_end` returned.

When: at the entry of the capture-begin call, at the entry of an instantiation that follows no capture
(an explicitly built graph), at the exit of every instantiation and upload: one CUPTI API callback on
calls the tracer already follows for their call sites (rare calls, never per launch), and for PyTorch
after capture_end returned. Each sample stores its own span (ts_ns..end_ns); its CUDA calls are
registered as graphmode's own (`RawActivity.own_spans`) so the decoder drops their API records. A
sample taken inside a callback can lie inside the recorded span of the call it follows: the budget
analyzer reports how much sampling time fell inside recorded capture and instantiate calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from graphmode.tracer.cupti_session import timestamp

COLUMNS = ("ts_ns", "end_ns", "thread_id", "event", "correlation_id", "free_bytes", "total_bytes",
           "graph_used_bytes", "graph_reserved_bytes", "pool", "pool_reserved_bytes", "pool_allocated_bytes",
           "torch_reserved_bytes", "torch_allocated_bytes")
MAX_SAMPLES = 50_000  # a run that builds this many graphs keeps the first ones and says how many it dropped


class GraphMemorySampler:
    """Samples device and graph memory at graph lifecycle calls; `columns()` gives what it took."""

    def __init__(self, clock: Callable[[], int], device_ordinal: int = 0,
                 own_spans: list[tuple[int, int, int]] | None = None):
        self._clock = clock
        self._ordinal = device_ordinal
        self._own = own_spans if own_spans is not None else []
        self._cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self._capturing: set[int] = set()  # threads that began a capture and have not instantiated since
        self._lock = threading.Lock()
        self.dropped = 0
        self.errors: list[str] = []
        self._device: Any = None

    @classmethod
    def attach(cls, session: Any, device_ordinal: int = 0,
               clock: Callable[[], int] | None = None) -> GraphMemorySampler:
        """A sampler fed by the session's API callback (CuptiSession.on_api_call). `clock`: CUPTI's by default (the
        one run's: CUPTI's, read without a CUPTI call where CUPTI is detached: tracer.script.ScriptTracer._clock)."""
        sampler = cls(clock or timestamp, device_ordinal, session.raw.own_spans)
        session.on_api_call = sampler.on_api_call
        return sampler

    # -- called from the CUPTI API callback: only lifecycle calls reach it -------------------------
    def on_api_call(self, api: str, cbdata: Any, exiting: bool) -> None:
        name = str(cbdata.function_name)
        tid = threading.get_native_id()
        if "BeginCapture" in name:
            if not exiting:
                self._capturing.add(tid)
                self.sample("capture_begin", int(cbdata.correlation_id))
        elif "GraphInstantiate" in name:
            if not exiting:
                if tid not in self._capturing:  # a captured graph's 'before' is its capture_begin sample
                    self.sample("instantiate_begin", int(cbdata.correlation_id))
            else:
                self._capturing.discard(tid)
                self.sample("instantiate_end", int(cbdata.correlation_id))
        elif "GraphUpload" in name and exiting:
            self.sample("upload_end", int(cbdata.correlation_id))

    def device_memory(self) -> tuple[int, int, int, int]:
        """(free, total, graph memory used, graph memory reserved) in bytes; -1 where unreadable."""
        from cuda.bindings import driver as cu

        free = total = used = reserved = -1
        err, f, t = cu.cuMemGetInfo()
        if int(err) == 0:
            free, total = int(f), int(t)
        if self._device is None:
            err, dev = cu.cuDeviceGet(self._ordinal)
            self._device = dev if int(err) == 0 else False
        if self._device is not False:
            A = cu.CUgraphMem_attribute
            err, v = cu.cuDeviceGetGraphMemAttribute(self._device, A.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)
            used = int(v) if int(err) == 0 else -1
            err, v = cu.cuDeviceGetGraphMemAttribute(self._device, A.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
            reserved = int(v) if int(err) == 0 else -1
        return free, total, used, reserved

    def sample(self, event: str, correlation_id: int = 0, **torch_fields: Any) -> None:
        """One row: device and graph memory now, plus the PyTorch figures the caller passes."""
        if len(self._cols["event"]) >= MAX_SAMPLES:
            self.dropped += 1
            return
        tid = threading.get_native_id()
        t0 = self._clock()
        try:
            free, total, used, reserved = self.device_memory()
        except Exception as e:  # never let a sample break the program
            free = total = used = reserved = -1
            if len(self.errors) < 10:
                self.errors.append(f"{event}: {type(e).__name__}: {e}")
        t1 = self._clock()
        row = {"ts_ns": t0, "end_ns": t1, "thread_id": tid, "event": event, "correlation_id": correlation_id,
               "free_bytes": free, "total_bytes": total, "graph_used_bytes": used, "graph_reserved_bytes": reserved,
               "pool": str(torch_fields.get("pool", "")),
               "pool_reserved_bytes": int(torch_fields.get("pool_reserved_bytes", -1)),
               "pool_allocated_bytes": int(torch_fields.get("pool_allocated_bytes", -1)),
               "torch_reserved_bytes": int(torch_fields.get("torch_reserved_bytes", -1)),
               "torch_allocated_bytes": int(torch_fields.get("torch_allocated_bytes", -1))}
        with self._lock:
            for k in COLUMNS:
                self._cols[k].append(row[k])
            self._own.append((tid, t0, t1))

    def own_span(self, t0: int, t1: int) -> None:
        """Registers a span of graphmode's own CUDA calls on this thread (their API records are dropped)."""
        with self._lock:
            self._own.append((threading.get_native_id(), t0, t1))

    def columns(self) -> dict[str, Any]:
        """What goes into meta.graph_memory: the columns, and what was lost."""
        with self._lock:
            out: dict[str, Any] = {k: list(v) for k, v in self._cols.items()}
        out["dropped"] = self.dropped
        if self.errors:
            out["errors"] = list(self.errors)
        return out
