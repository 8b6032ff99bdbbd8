"""Session 21: what CUPTI's buffer callbacks cost the program under the one traced run's session, by path
(GRAPHMODE_CUPTI_BUFFERS=cupti-python: cupti-python's callbacks, which wrap every record in an object; unset: the
tracer's own ctypes callbacks, tracer.cupti_buffers). One process per path and round.

A PyTorch loop of small launches (no synchronisation) under the session of tracer.run_configs.single_config, timed in
blocks of BLOCK launches: a buffer completing on CUPTI's thread while the loop runs shows as a slow block. Then the
session's stop (its flush), and how many buffers completed before it. `--untraced`: the same loop with no session.
Prints one JSON line."""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

ap = argparse.ArgumentParser()
ap.add_argument("--launches", type=int, default=120_000)
ap.add_argument("--untraced", action="store_true")
a = ap.parse_args()
BLOCK = 1000
x = torch.ones(1024, device="cuda")
for _ in range(200):
    x.add_(1.0)
torch.cuda.synchronize()
session = None if a.untraced else CuptiSession(**session_kwargs(single_config()))
if session is not None:
    session.start()
blocks = []
t_loop = time.perf_counter_ns()
for b in range(a.launches // BLOCK):
    t0 = time.perf_counter_ns()
    for _ in range(BLOCK):
        x.add_(1.0)
    blocks.append(time.perf_counter_ns() - t0)
torch.cuda.synchronize()
loop_ns = time.perf_counter_ns() - t_loop
before = len(session.raw.chunks) if session is not None else 0
t0 = time.perf_counter_ns()
raw = session.stop() if session is not None else None
stop_ns = time.perf_counter_ns() - t0
blk = np.asarray(blocks, dtype=np.float64) / BLOCK
print(json.dumps({
    "path": "untraced" if a.untraced else (raw.buffers if raw is not None else ""),
    "env": os.environ.get("GRAPHMODE_CUPTI_BUFFERS", ""), "launches": a.launches,
    "per_launch_median_us": float(np.median(blk)) / 1e3, "per_launch_mean_us": float(blk.mean()) / 1e3,
    "slowest_block_ms": float(blk.max() * BLOCK) / 1e6, "blocks_over_2x_median": int((blk > 2 * np.median(blk)).sum()),
    "loop_s": loop_ns / 1e9, "buffers_before_stop": before, "stop_s": stop_ns / 1e9,
    "buffers": len(raw.chunks) if raw is not None else 0, "bytes": sum(len(c) for c in raw.chunks) if raw is not None else 0,
    "errors": raw.callback_errors[:3] if raw is not None else [],
}), flush=True)
