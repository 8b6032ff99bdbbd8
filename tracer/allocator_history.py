"""PyTorch's caching-allocator history in the one traced run (stored in the `memory_events` table): what a step of a
program that built no graph allocates and frees, from which the analysis tells the memory a graph of that step would
hold (analyzers.step_memory; issue 30: "one graph per shape and the memory they would hold").

An eager trace says nothing of tensors: the CUDA driver sees only the allocator's segments, which it caches. PyTorch
keeps, when asked (`torch.cuda.memory._record_memory_history`), a ring of its allocator's actions: each block
allocated and freed, with its address, size, stream and time (`_snapshot()['device_traces']`). Asked with no stack
context (`context=None`), an action costs about 0.22 us (session 20, device call 1: an add's alloc, free request and
free completion took a launch from 10.99 to 11.65 us on the H200, torch 2.11); the free requests, which the analysis
does not read, are skipped where PyTorch can (`skip_actions`, torch 2.11). The run measures what one action cost it
at its end (`entry_cost_ns`, with the allocator's own calls, after the program), and the analysis takes that off the
periods the actions fell in (analyzers.tracer_cost), as it does for line stamps.

When: enabled as the program imports torch (the import hook of tracer.torch_hooks; enabling does not initialize
CUDA), collected and disabled when tracing stops (one snapshot: about 50 ms for 60,000 actions). At most
MAX_ENTRIES actions are kept, the latest (PyTorch's ring); the run entry says how many were recorded and whether the
ring overflowed. `time_us` is the Unix time in microseconds; it is moved onto the trace's clock by the pairs of
(time.time_ns(), CUPTI timestamp) read at the run's start and stop.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

MAX_ENTRIES = 300_000
COLUMNS = ("ts_ns", "action", "addr", "size", "stream")
# the actions the analysis reads; segment_* and the rest are kept too (they tell the pool's growth)
SKIPPED = ("free_requested",)


def _memory_module(torch: Any) -> Any:
    return torch.cuda.memory


def enable(torch: Any, max_entries: int = MAX_ENTRIES) -> dict[str, Any]:
    """Turns the allocator's history on (no stack context), emptied; returns what the run entry says of it."""
    mem = _memory_module(torch)
    kwargs: dict[str, Any] = {"enabled": "all", "context": None, "stacks": "python", "max_entries": max_entries}
    try:
        params: Any = inspect.signature(mem._record_memory_history_impl).parameters
    except (AttributeError, TypeError, ValueError):
        params = {}
    if "clear_history" in params:
        kwargs["clear_history"] = True
    if "skip_actions" in params:
        kwargs["skip_actions"] = list(SKIPPED)
    mem._record_memory_history(**kwargs)
    # the cuBLAS workspace's size, where the program set it (analyzers.step_memory reads the default from the GPU)
    return {"max_entries": max_entries, "skipped": list(SKIPPED) if "skip_actions" in kwargs else [],
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG")}


def disable(torch: Any) -> None:
    _memory_module(torch)._record_memory_history(enabled=None)


def collect(torch: Any, device: int, to_clock: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
    """The recorded actions of one device as columns of memory_events (without pass_id), their times moved by
    `to_clock` (Unix ns -> the trace's clock). Call before `disable`."""
    snap = _memory_module(torch)._snapshot()
    traces = snap.get("device_traces") or []
    entries = traces[device] if 0 <= device < len(traces) else []
    unix_ns = np.array([int(e.get("time_us", 0)) * 1000 for e in entries], dtype=np.int64)
    return {"ts_ns": to_clock(unix_ns) if unix_ns.size else unix_ns,
            "action": [str(e.get("action", "")) for e in entries],
            "addr": np.array([int(e.get("addr", 0)) for e in entries], dtype=np.int64),
            "size": np.array([int(e.get("size", 0)) for e in entries], dtype=np.int64),
            "stream": np.array([int(e.get("stream", 0)) & 0x7FFF_FFFF_FFFF_FFFF for e in entries], dtype=np.int64)}


def entry_cost_ns(torch: Any, n: int = 5_000, repeats: int = 5) -> float | None:
    """What one recorded action cost the program here: a loop of `n` allocations and frees of a small tensor (the
    allocator's cache answers each) timed with the history on and off, the median over `repeats` of (on - off) over
    the actions recorded. Run after the program and after `collect` (it records actions of its own); leaves the
    history off. None where the loop cannot run."""
    mem = _memory_module(torch)
    try:
        dev = torch.device("cuda", torch.cuda.current_device())
        torch.empty(64, device=dev)  # the block is cached from here on

        def loop() -> int:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                torch.empty(64, device=dev)
            return time.perf_counter_ns() - t0

        costs = []
        for _ in range(repeats):
            disable(torch)
            off = loop()
            enable(torch, max_entries=4 * n)
            on = loop()
            recorded = len((mem._snapshot().get("device_traces") or [[]])[dev.index or 0])
            disable(torch)
            if recorded:
                costs.append((on - off) / recorded)
        costs.sort()
        return max(costs[len(costs) // 2], 0.0) if costs else None
    except Exception:
        try:
            disable(torch)
        except Exception:
            pass
        return None
