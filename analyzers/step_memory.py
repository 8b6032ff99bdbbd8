"""The memory a graph of a step would hold, from PyTorch's allocator history of the one traced run (memory_events,
tracer.allocator_history; docs/metrics.md, "Memory a graph would hold").

A graph captured with torch.cuda.graph takes every block its capture allocates from a private pool of its own, and
keeps that pool for as long as the graph lives: a block freed during the capture goes back to the pool and serves a
later allocation of the same capture, a block allocated before it never does. So the pool needs, at least, the peak
over the step of the bytes allocated inside the step and still live: the step's own blocks, its temporaries as they
come and go, its outputs. From an eager step: per recurrence, the allocator's actions in its window (from the end of
the last launch call before its first launch to the same point of the next recurrence: a PyTorch op allocates its
output just before it launches), a block counted from its allocation in the window to its free; the peak of their
sum. Blocks allocated before the step and freed in it (the previous step's outputs, gradients set to None) are not
counted: the pool cannot reuse them. The pool rounds its segments up (2 MiB for blocks of 1 MiB or less, 20 MiB for
blocks under 10 MiB): what it reserves is what a pool grown by the caching allocator's rules for those blocks, in
that order, reserves (_Pool), at least the peak.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.results import StepMemory
from graphmode.tracer.store import Trace

# recurrences read per region, evenly spaced (each is a walk over its window's actions)
MAX_STEPS = 24


@dataclass(frozen=True)
class MemoryEvents:
    """A pass's allocator actions, by time: alloc and free_completed only (ts_ns, is_alloc, addr, size)."""

    ts_ns: np.ndarray
    is_alloc: np.ndarray
    addr: np.ndarray
    size: np.ndarray
    launch_end: np.ndarray  # the ends of the pass's launch calls, sorted by their starts
    launch_start: np.ndarray

    @property
    def empty(self) -> bool:
        return self.ts_ns.size == 0


def memory_events(trace: Trace, pass_id: int) -> MemoryEvents:
    ev = trace.sql("SELECT ts_ns, action = 'alloc' AS is_alloc, addr, size FROM memory_events WHERE pass_id = ? AND "
                   "action IN ('alloc', 'free_completed') ORDER BY ts_ns", [pass_id])
    calls = trace.sql("SELECT start_ns, end_ns FROM api_calls WHERE pass_id = ? AND category = 'kernel_launch' "
                      "ORDER BY start_ns", [pass_id]) if ev["ts_ns"].size else {"start_ns": np.zeros(0), "end_ns": np.zeros(0)}
    return MemoryEvents(ev["ts_ns"].astype(np.int64), ev["is_alloc"].astype(bool), ev["addr"].astype(np.int64),
                        ev["size"].astype(np.int64), np.asarray(calls["end_ns"], dtype=np.int64),
                        np.asarray(calls["start_ns"], dtype=np.int64))


def _boundary(ev: MemoryEvents, at: np.ndarray) -> np.ndarray:
    """Per time in `at` (a recurrence's first launch): the end of the last launch call that started before it, where
    that is earlier; else the time itself."""
    i = np.searchsorted(ev.launch_start, at, side="left") - 1
    prev = np.where(i >= 0, ev.launch_end[np.clip(i, 0, None)] if ev.launch_end.size else at, at)
    out: np.ndarray = np.minimum(prev, at)
    return out


# PyTorch's caching allocator's sizes (c10/cuda/CUDACachingAllocator.cpp): blocks are multiples of 512 bytes; a
# block of at most 1 MiB comes from the small pool's 2 MiB segments, a larger one from the large pool, whose segments
# are 20 MiB for blocks under 10 MiB and the block rounded up to 2 MiB above; a free block is split where what
# remains is at least 512 bytes (small) or more than 1 MiB (large)
MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20


def _segment_size(size: int) -> int:
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class _Pool:
    """A graph's private pool as PyTorch's caching allocator would grow it (best fit among its free blocks, split
    and merged within a segment; a new segment when none fits): `reserved` is what its segments hold."""

    def __init__(self) -> None:
        self.reserved = 0
        self.free: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}  # small? -> (size, segment, offset)
        self.used: dict[int, tuple[bool, int, int, int]] = {}  # address -> (small, segment, offset, size)
        self.segments = 0

    def alloc(self, addr: int, size: int) -> None:
        size = max(MIN_BLOCK, -(-size // MIN_BLOCK) * MIN_BLOCK)
        small = size <= SMALL_SIZE
        free = self.free[small]
        fits = [b for b in free if b[0] >= size]
        if fits:
            block = min(fits)
            free.remove(block)
        else:
            seg = _segment_size(size)
            self.reserved += seg
            self.segments += 1
            block = (seg, self.segments, 0)
        bsize, seg_id, off = block
        rest = bsize - size
        if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
            free.append((rest, seg_id, off + size))
            bsize = size
        self.used[addr] = (small, seg_id, off, bsize)

    def release(self, addr: int) -> None:
        if addr not in self.used:
            return
        small, seg_id, off, size = self.used.pop(addr)
        free = self.free[small]
        for b in [b for b in free if b[1] == seg_id and (b[2] + b[0] == off or off + size == b[2])]:
            free.remove(b)  # merge with a free neighbour in the same segment
            off, size = min(off, b[2]), size + b[0]
        free.append((size, seg_id, off))


def window_peak(ts: np.ndarray, is_alloc: np.ndarray, addr: np.ndarray, size: np.ndarray) -> tuple[int, int, int]:
    """(peak, reserved, segments) of one window's actions in time order: the peak of the bytes allocated inside the
    window and live (each alloc adds its block, a free takes back a block allocated earlier in the window; a block from
    before the window is not counted), and what a private pool that served those blocks would reserve (_Pool), in how
    many segments."""
    live: dict[int, int] = {}
    pool = _Pool()
    now = peak = 0
    for a, ad, sz in zip(is_alloc.tolist(), addr.tolist(), size.tolist()):
        if a:
            live[ad] = sz
            now += sz
            peak = max(peak, now)
            pool.alloc(ad, sz)
        elif ad in live:
            now -= live.pop(ad)
            pool.release(ad)
    return peak, pool.reserved, pool.segments


def step_memory(ev: MemoryEvents, starts: np.ndarray, ends: np.ndarray) -> StepMemory | None:
    """The region's memory (StepMemory) over its recurrences [starts[i], ends[i]) (first launch to the next
    recurrence's), or None where no recurrence lies inside the recorded history."""
    if ev.empty or starts.size == 0:
        return None
    lo, hi = _boundary(ev, starts.astype(np.int64)), _boundary(ev, ends.astype(np.int64))
    inside = (lo >= ev.ts_ns[0]) & (hi <= ev.ts_ns[-1]) & (hi > lo)
    rows = np.flatnonzero(inside)
    if rows.size == 0:
        return None
    if rows.size > MAX_STEPS:
        rows = rows[np.linspace(0, rows.size - 1, MAX_STEPS).round().astype(np.int64)]
    a = np.searchsorted(ev.ts_ns, lo[rows], side="left")
    b = np.searchsorted(ev.ts_ns, hi[rows], side="left")
    peaks, pools, segments = [], [], []
    for i, j in zip(a.tolist(), b.tolist()):
        p, r, n = window_peak(ev.ts_ns[i:j], ev.is_alloc[i:j], ev.addr[i:j], ev.size[i:j])
        peaks.append(p)
        pools.append(r)
        segments.append(n)
    return StepMemory(int(np.median(pools)), int(min(pools)), int(max(pools)), int(np.median(peaks)), len(peaks),
                      segments=int(round(float(np.median(segments)))))


def memory_unknown(ev: MemoryEvents, torch_program: bool) -> Note:
    """Why a region's memory is not given: not a PyTorch program (other allocators' pools are not read), a run that
    did not record PyTorch's allocator history (a trace of an earlier graphmode, a run other than the one traced
    run), or a region outside what the history kept (its ring holds the latest actions)."""
    if not torch_program:
        return note("step_memory_unknown", reason="not_torch")
    if ev.empty:
        return note("step_memory_unknown", reason="not_recorded")
    return note("step_memory_unknown", reason="outside_history")


# PyTorch's cuBLAS workspace (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize): one per (handle,
# stream), allocated through the caching allocator at the stream's first cuBLAS call and kept; CUBLAS_WORKSPACE_CONFIG
# ':SIZE:COUNT...' (KiB) sets it, else 32 MiB on compute capability 9.x-12.x and 4096 KiB x 2 + 16 KiB x 8 before
WORKSPACE_32MB_MAJORS = (9, 10, 11, 12)


def cublas_workspace_bytes(compute_capability: str, config: str | None = None) -> int:
    """The size of one cuBLAS workspace PyTorch allocates on this GPU (bytes)."""
    if config:
        pairs = re.findall(r":([0-9]+):([0-9]+)", config)
        if pairs:
            return sum(int(a) * int(b) for a, b in pairs) * 1024
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        major = 0
    return 4096 * 8 * 1024 if major in WORKSPACE_32MB_MAJORS else 4096 * 1024 * 2 + 16 * 1024 * 8


# a cuBLAS or cuBLASLt kernel, by name (cutlass and xmma GEMMs, cuBLAS's gemv/gemm kernels, nvjet on Hopper)
BLAS_KERNEL = re.compile(r"gemm|gemv|cutlass|xmma|cublas|nvjet", re.IGNORECASE)


def kept_workspaces(trace: Trace, pass_id: int, size: int) -> int:
    """How many cuBLAS workspaces the pass's eager streams allocated: blocks of exactly one workspace's size, allocated
    and never freed, whose next kernel launched is a cuBLAS one (a workspace is allocated at a stream's first cuBLAS
    call, just before its kernel; a model's parameter of that size is followed by its initialization or by none). The
    first capture on torch.cuda.graph's own stream allocates them again, in its pool (session 20, device call 2: the
    four programs' first graphs held 32 or 64 MiB more than their step, one 32 MiB block for each such block of their
    eager run, each followed by a GEMM)."""
    if size <= 0:
        return 0
    kept = trace.rows(
        "SELECT a.ts_ns FROM memory_events a WHERE a.pass_id = ? AND a.action = 'alloc' AND a.size = ? AND NOT EXISTS "
        "(SELECT 1 FROM memory_events f WHERE f.pass_id = a.pass_id AND f.action = 'free_completed' AND f.addr = a.addr "
        "AND f.ts_ns > a.ts_ns)", [pass_id, size])
    count = 0
    for (ts,) in kept:  # a handful
        nxt = trace.rows("SELECT g.name FROM api_calls c JOIN gpu_spans g ON g.pass_id = c.pass_id AND g.correlation_id = "
                         "c.correlation_id WHERE c.pass_id = ? AND c.start_ns >= ? AND g.kind = 'kernel' ORDER BY c.start_ns "
                         "LIMIT 1", [pass_id, int(ts)])
        count += bool(nxt and BLAS_KERNEL.search(str(nxt[0][0])))
    return count


def with_workspaces(m: StepMemory, workspace_bytes: int) -> StepMemory:
    """The first graph's memory: its step's and the workspaces its capture stream allocates."""
    return dataclasses.replace(m, bytes=m.bytes + workspace_bytes, low_bytes=m.low_bytes + workspace_bytes,
                               high_bytes=m.high_bytes + workspace_bytes, workspace_bytes=workspace_bytes)
