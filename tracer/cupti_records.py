"""CUPTI activity records as numpy, and what an API call is (its category): shared by the recording session
(tracer.cupti_session, which reads kernel and marker names while CUPTI holds them and filters API records by category)
and the decoder (tracer.decode), without either importing the other.

A completed buffer is a run of records laid end to end, each starting with its 32-bit kind; the record's size follows
from the kind (cupti-python's numpy dtypes mirror the C structs, which CUPTI packs with 8-byte alignment).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np


def cupti_module() -> Any:
    from cupti import cupti

    return cupti


_RECORD_DTYPES: dict[int, Any] | None = None


def record_dtypes() -> dict[int, Any]:
    """ActivityKind value -> numpy dtype of its record layout, for the kinds the tracer enables."""
    global _RECORD_DTYPES
    if _RECORD_DTYPES is None:
        cupti = cupti_module()
        K = cupti.ActivityKind
        _RECORD_DTYPES = {
            int(K.DRIVER): cupti.activity_api_dtype,
            int(K.RUNTIME): cupti.activity_api_dtype,
            int(K.INTERNAL_LAUNCH_API): cupti.activity_api_dtype,
            int(K.CONCURRENT_KERNEL): cupti.activity_kernel10_dtype,
            int(K.KERNEL): cupti.activity_kernel10_dtype,
            int(K.MEMCPY): cupti.activity_memcpy6_dtype,
            int(K.MEMSET): cupti.activity_memset4_dtype,
            int(K.SYNCHRONIZATION): cupti.activity_synchronization2_dtype,
            int(K.GRAPH_TRACE): cupti.activity_graph_trace2_dtype,
            int(K.MARKER): cupti.activity_marker2_dtype,
            int(K.MARKER_DATA): cupti.activity_marker_data_dtype,
            int(K.NAME): cupti.activity_name_dtype,
            int(K.OVERHEAD): cupti.activity_overhead3_dtype,
            int(K.EXTERNAL_CORRELATION): cupti.activity_external_correlation_dtype,
        }
    return _RECORD_DTYPES


def _record_sizes() -> tuple[dict[int, int], int]:
    """ActivityKind value -> record size in bytes, and the step every record starts at a multiple of (their gcd)."""
    sizes = {k: int(dt.itemsize) for k, dt in record_dtypes().items()}
    return sizes, math.gcd(*sizes.values())


def _rows(chunk: bytes, at: np.ndarray, width: int, step: int, what: str) -> np.ndarray:
    """The `width` bytes at each offset `at` (multiples of `step`), as an (n, width) uint8 array: copied row by row from
    a strided view of every place in the buffer where such a row could start."""
    if at.size and int(at[-1]) + width > len(chunk):
        raise ValueError(f"{what} at offset {int(at[-1])} runs past the end of its buffer ({len(chunk)} bytes)")
    places: np.ndarray = np.lib.stride_tricks.as_strided(np.frombuffer(chunk, dtype=np.uint8),
                                                         shape=((len(chunk) - width) // step + 1, width),
                                                         strides=(step, 1), writeable=False)
    rows: np.ndarray = places[at // step]
    return rows


def record_size(kind: int) -> int:
    dt = record_dtypes().get(kind)
    if dt is None:
        raise KeyError(f"CUPTI activity kind {kind} has no known record layout")
    return int(dt.itemsize)


# Order matters: first match wins.
_API_CATEGORY_RULES: list[tuple[str, str]] = [
    ("graph_launch", r"^cu(da)?GraphLaunch"),
    ("instantiate", r"^cu(da)?GraphInstantiate"),
    ("upload", r"^cu(da)?GraphUpload"),
    ("update", r"^cu(da)?GraphExec(Update|.*SetParams|NodeSetParams|.*Set)"),
    ("graph_destroy", r"^cu(da)?Graph(Exec)?Destroy"),
    ("capture", r"^cu(da)?(Stream(BeginCapture|EndCapture|IsCapturing|GetCaptureInfo|UpdateCaptureDependencies)|ThreadExchangeStreamCaptureMode)"),
    ("graph_build", r"^cu(da)?Graph"),
    ("kernel_launch", r"^cu(da)?Launch|^cudaLaunch|^cuLaunch"),
    ("sync", r"Synchronize"),
    ("memset", r"Memset"),
    ("memcpy", r"Memcpy|Memcpy|MemPrefetch"),
    ("memory", r"Mem(Alloc|Free|HostAlloc|HostRegister|HostUnregister|Pool|Map|Create|Release|AddressReserve|AddressFree|GetInfo)|^cuda(Malloc|Free|HostAlloc|HostRegister)"),
    ("event", r"Event"),
    ("stream", r"Stream"),
    ("module", r"^cu(Module|Library|Kernel)|^cudaFuncGet|^cuFuncGet"),
]


def api_category(name: str) -> str:
    for category, pattern in _API_CATEGORY_RULES:
        if re.search(pattern, name):
            return category
    return "other"


_SHORT_RUN = 8  # repeats of a pattern looked for at once at first (doubling while it holds)
_MAX_CYCLE = 4096  # the longest repeating pattern of kinds looked for, in records (a step of a program's loop)
# the last records walked, looked for earlier in the walk to find where the pattern started, and how far back: 64 first
# (a loop's step, whose short patterns break where its kinds change), then 8 (a run, an API record then its kernel's)
_TAILS = ((64, _MAX_CYCLE), (8, 64))
_TRIES = 2  # earlier places of that tail tried, the latest first
_MAX_WAIT = 128  # after a look-ahead that found little, at most this many records walked one by one before the next


def _repeats(words: np.ndarray, at: int, cycle: list[int], sizes: dict[int, int]) -> tuple[int, np.ndarray]:
    """How many whole repeats of the kinds `cycle` lie back to back from byte offset `at` (each record where its kind's
    size puts it, the kind field inside the buffer; `words`: the buffer as 4-byte words), and the offsets of a repeat's
    records from its start: numpy reads the kind fields of _SHORT_RUN repeats at once, then twice as many, up to the
    first that differs."""
    inside = np.zeros(len(cycle), dtype=np.int64)
    np.cumsum([sizes[k] for k in cycle[:-1]], out=inside[1:])
    length = int(inside[-1]) + sizes[cycle[-1]]
    want = np.asarray(cycle, dtype=words.dtype)
    rel = inside // 4
    found, ahead = 0, _SHORT_RUN
    while True:
        o = (at + found * length) // 4
        m = min(ahead, (len(words) - 1 - o - int(rel[-1])) * 4 // length + 1)
        if m <= 0:
            return found, inside
        same = (words[(o + length // 4 * np.arange(m))[:, None] + rel[None, :]] == want).all(axis=1)
        if not same.all():
            return found + int(np.argmin(same)), inside
        found += m
        ahead *= 2


def _walk(chunk: bytes, sizes: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and kinds of the records in one buffer span.

    Records lie back to back, each as long as its kind says, so the walk is sequential. But CUPTI's buffers repeat
    themselves: runs of one kind, an API record then its kernel's, and the same sequence of kinds each step of a
    program's loop. The walk goes one record at a time, keeping the kinds it walked; where its last kinds (_TAILS) were
    walked before as well, and the stretch since then repeats the one before it (a pattern of up to _MAX_CYCLE records),
    numpy looks for further repeats of that pattern at once (_repeats), checking every record's kind where the pattern
    puts it: what the kinds walked suggest is only where to look. A look-ahead that finds fewer than _SHORT_RUN records
    makes the walk go on one by one for longer before the next (up to _MAX_WAIT records). A detach reads the names of
    the records before CUPTI frees them (CuptiSession.stop), just before the program's capture: with one step of Python
    per record, that took tens of milliseconds for a session of tens of thousands of records (benchmarks/notes/s31-s32).
    """
    n = len(chunk)
    words = np.frombuffer(chunk, dtype=np.uint32, count=n // 4)  # CUPTI writes in this machine's byte order
    offsets: list[np.ndarray] = []  # the walk's parts, in order: records walked one by one, then repeats found
    kinds: list[np.ndarray] = []
    short_o: list[int] = []
    short_k: list[int] = []
    seen = bytearray()  # the kinds walked so far (the latest 2 * _MAX_CYCLE at least), a byte each
    patterns = max(sizes) < 256 and all(size % 4 == 0 for size in sizes.values())  # CUPTI's kinds fit in a byte
    o, wait, backoff = 0, 0, 1
    kind_at = memoryview(chunk)[: n - n % 4].cast("I")
    while o + 4 <= n:
        kind = kind_at[o >> 2]
        size = sizes.get(kind)
        if size is None:
            raise ValueError(f"unknown CUPTI record kind {kind} at offset {o}: cannot continue decoding this buffer")
        short_o.append(o)
        short_k.append(kind)
        seen.append(kind & 0xFF)
        o += size
        if wait:
            wait -= 1
            continue
        m = len(seen)
        got = 0
        for tail, longest in _TAILS if patterns else ():
            end = m - 1
            for _ in range(_TRIES if m >= 2 * tail else 0):
                j = seen.rfind(seen[m - tail :], max(0, m - tail - longest), end)
                p = m - tail - j
                if j < 0 or 2 * p > m:
                    break
                end = j + tail - 1  # the next try: an earlier place
                if seen[m - p :] != seen[m - 2 * p : m - p]:
                    continue
                cycle = list(seen[m - p :])
                found, inside = _repeats(words, o, cycle, sizes)
                if not found:
                    continue
                length = int(inside[-1]) + sizes[cycle[-1]]
                offsets.append(np.asarray(short_o, dtype=np.int64))
                kinds.append(np.asarray(short_k, dtype=np.int32))
                short_o, short_k = [], []
                offsets.append((o + length * np.arange(found, dtype=np.int64))[:, None] + inside[None, :])
                kinds.append(np.tile(np.asarray(cycle, dtype=np.int32), found))
                seen += seen[m - p :] * min(found, 2 * _MAX_CYCLE // p + 1)
                o += found * length
                got = found * p
                break
            if got:
                break
        if got >= _SHORT_RUN:
            backoff = 1
        else:
            wait, backoff = backoff, min(2 * backoff, _MAX_WAIT)
        if len(seen) > 8 * _MAX_CYCLE:
            del seen[: len(seen) - 2 * _MAX_CYCLE - _TAILS[0][0]]
    offsets.append(np.asarray(short_o, dtype=np.int64))
    kinds.append(np.asarray(short_k, dtype=np.int32))
    return np.concatenate([x.reshape(-1) for x in offsets]), np.concatenate(kinds)


def records_by_kind(chunks: Iterable[bytes]) -> dict[int, np.ndarray]:
    """kind -> structured array of all records of that kind, in buffer order."""
    dtypes = record_dtypes()
    sizes, step = _record_sizes()
    parts: dict[int, list[np.ndarray]] = {}
    for chunk in chunks:
        if not chunk:
            continue
        offsets, kinds = _walk(chunk, sizes)
        for kind in np.unique(kinds):
            dt = dtypes[int(kind)]
            sel = offsets[kinds == kind]
            starts = np.flatnonzero(np.diff(sel) != dt.itemsize) + 1  # where a run of back-to-back records breaks
            if len(starts) + 1 <= len(sel) // 64:  # long runs: each read in place, one copy
                rows = np.concatenate([np.frombuffer(chunk, dtype=dt, count=len(run), offset=int(run[0]))
                                       for run in np.split(sel, starts)])
            else:  # records apart: copied record by record
                rows = _rows(chunk, sel, dt.itemsize, step, f"a CUPTI record of kind {int(kind)}").view(dt).reshape(-1)
            parts.setdefault(int(kind), []).append(rows)
    return {k: np.concatenate(v) for k, v in parts.items()}


def name_pointers(chunks: Iterable[bytes]) -> set[int]:
    """Every distinct char* name pointer in kernel and marker records (to be read while valid). Only those fields are
    read, not whole records: this runs in a detach, just before the program's next work (_walk)."""
    K = cupti_module().ActivityKind
    dtypes = record_dtypes()
    sizes, step = _record_sizes()
    fields = {int(K.CONCURRENT_KERNEL): ("name",), int(K.KERNEL): ("name",), int(K.MARKER): ("name", "domain")}
    ptrs: set[int] = set()
    for chunk in chunks:
        if not chunk:
            continue
        offsets, kinds = _walk(chunk, sizes)
        for kind, names in fields.items():
            at = offsets[kinds == kind]
            for name in names if at.size else ():
                dt, field = dtypes[kind].fields[name][:2]  # pointer fields: at multiples of the step in the record
                rows = _rows(chunk, at + int(field), dt.itemsize, math.gcd(step, int(field)), f"a {name} field")
                ptrs.update(rows.view(dt).reshape(-1).tolist())
    ptrs.discard(0)
    return ptrs
