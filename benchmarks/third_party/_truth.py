"""The one line each third-party workload prints with its own timings (read by benchmarks/script_fidelity.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

PREFIX = "GRAPHMODE_TRUTH "


def report(**values: Any) -> None:
    print(PREFIX + json.dumps(values), flush=True)
    sys.stdout.flush()


def pool_memory(torch: Any, pool: Any) -> tuple[int, int]:
    """(reserved, allocated) bytes of one PyTorch memory pool (a CUDA graph's: `g.pool()`), from PyTorch's own
    snapshot of its allocator's segments: what the graph holds (issue 30's truth for the memory a graph would hold)."""
    try:
        segments = torch.cuda.memory_snapshot(mempool_id=pool)
    except TypeError:  # releases before 2.10: one snapshot of every pool
        segments = [s for s in torch.cuda.memory_snapshot() if tuple(s.get("segment_pool_id", ())) == tuple(pool)]
    return sum(int(s["total_size"]) for s in segments), sum(int(s["allocated_size"]) for s in segments)
