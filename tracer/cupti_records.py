"""CUPTI activity records as numpy, and what an API call is (its category): shared by the recording session
(tracer.cupti_session, which reads kernel and marker names while CUPTI holds them and filters API records by category)
and the decoder (tracer.decode), without either importing the other.

A completed buffer is a run of records laid end to end, each starting with its 32-bit kind; the record's size follows
from the kind (cupti-python's numpy dtypes mirror the C structs, which CUPTI packs with 8-byte alignment).
"""

from __future__ import annotations

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
_MAX_CYCLE = 4  # the longest repeating pattern of kinds looked for, in records
_MAX_WAIT = 64  # after a look-ahead that found little, at most this many records walked one by one before the next


def _repeats(chunk: bytes, at: int, cycle: list[int], sizes: dict[int, int]) -> int:
    """How many whole repeats of the kinds `cycle` lie back to back from offset `at` (each record where its kind's size
    puts it, the kind field inside the buffer): numpy reads the kind fields of _SHORT_RUN repeats at once, then twice as
    many, up to the first that differs."""
    n = len(chunk)
    steps = [sizes[k] for k in cycle]
    length = sum(steps)
    inside = [0]
    for size in steps[:-1]:
        inside.append(inside[-1] + size)
    found, ahead = 0, _SHORT_RUN
    while True:
        o = at + found * length
        m = min([ahead] + [(n - 4 - o - d) // length + 1 for d in inside])
        if m <= 0:
            return found
        same = np.ndarray((m,), dtype="<u4", buffer=chunk, offset=o, strides=(length,)) == cycle[0]
        for d, kind in zip(inside[1:], cycle[1:]):
            same &= np.ndarray((m,), dtype="<u4", buffer=chunk, offset=o + d, strides=(length,)) == kind
        other = np.flatnonzero(~same)
        if other.size:
            return found + int(other[0])
        found += m
        ahead *= 2


def _walk(chunk: bytes, sizes: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and kinds of the records in one buffer span.

    Records lie back to back, each as long as its kind says, so the walk is sequential. But CUPTI's buffers repeat
    themselves: runs of one kind (a batch of kernel records, of API records), and patterns of a few kinds in turn (an
    API record, then its kernel's). Once the last records walked one by one repeat a pattern of up to _MAX_CYCLE kinds
    twice, numpy looks for further repeats at once (_repeats). A look-ahead that finds fewer than _SHORT_RUN makes the
    walk go on one by one for longer before the next (up to _MAX_WAIT records). A detach reads the names of the records
    before CUPTI frees them (CuptiSession.stop), just before the program's capture: with one step of Python per record,
    that took tens of milliseconds for a session of tens of thousands of records (benchmarks/notes/s31-s32)."""
    n = len(chunk)
    offsets: list[np.ndarray] = []  # the walk's parts, in order: records walked one by one, then repeats found
    kinds: list[np.ndarray] = []
    short_o: list[int] = []
    short_k: list[int] = []
    o, wait, backoff = 0, 0, 1
    while o + 4 <= n:
        kind = int.from_bytes(chunk[o : o + 4], "little")
        size = sizes.get(kind)
        if size is None:
            raise ValueError(f"unknown CUPTI record kind {kind} at offset {o}: cannot continue decoding this buffer")
        short_o.append(o)
        short_k.append(kind)
        o += size
        if wait:
            wait -= 1
            continue
        m = len(short_k)
        for p in range(1, min(_MAX_CYCLE, m // 2) + 1):
            if short_k[m - 1 - p] != kind or short_k[m - p :] != short_k[m - 2 * p : m - p]:
                continue
            cycle = short_k[m - p :]
            found = _repeats(chunk, o, cycle, sizes)
            if found:
                steps = [0]
                for k in cycle[:-1]:
                    steps.append(steps[-1] + sizes[k])
                length = steps[-1] + sizes[cycle[-1]]
                offsets.append(np.asarray(short_o, dtype=np.int64))
                kinds.append(np.asarray(short_k, dtype=np.int32))
                short_o, short_k = [], []
                offsets.append((o + length * np.arange(found, dtype=np.int64))[:, None]
                               + np.asarray(steps, dtype=np.int64)[None, :])
                kinds.append(np.tile(np.asarray(cycle, dtype=np.int32), found))
                o += found * length
            if found >= _SHORT_RUN:
                backoff = 1
            else:
                wait, backoff = backoff, min(2 * backoff, _MAX_WAIT)
            break
    offsets.append(np.asarray(short_o, dtype=np.int64))
    kinds.append(np.asarray(short_k, dtype=np.int32))
    return np.concatenate([x.reshape(-1) for x in offsets]), np.concatenate(kinds)


def records_by_kind(chunks: Iterable[bytes]) -> dict[int, np.ndarray]:
    """kind -> structured array of all records of that kind, in buffer order."""
    dtypes = record_dtypes()
    sizes = {k: int(dt.itemsize) for k, dt in dtypes.items()}
    parts: dict[int, list[np.ndarray]] = {}
    for chunk in chunks:
        if not chunk:
            continue
        offsets, kinds = _walk(chunk, sizes)
        raw = np.frombuffer(chunk, dtype=np.uint8)
        for kind in np.unique(kinds):
            dt = dtypes[int(kind)]
            sel = offsets[kinds == kind]
            # runs of records an equal step apart (back to back, or in turn with other kinds): a new run begins two
            # records after its step changes (tracer.cupti_records._walk finds such patterns)
            step = np.diff(sel)
            starts = np.flatnonzero(step[1:] != step[:-1]) + 2
            if len(starts) + 1 <= len(sel) // _SHORT_RUN:  # long runs: each read in place, one copy
                rows = np.concatenate([np.ndarray((len(run),), dtype=dt, buffer=chunk, offset=int(run[0]),
                                                  strides=(int(run[1] - run[0]) if len(run) > 1 else dt.itemsize,))
                                       for run in np.split(sel, starts)])
            else:  # short runs: gathered byte by byte
                idx = sel[:, None] + np.arange(dt.itemsize, dtype=np.int64)[None, :]
                rows = np.ascontiguousarray(raw[idx]).view(dt).reshape(-1)
            parts.setdefault(int(kind), []).append(rows)
    return {k: np.concatenate(v) for k, v in parts.items()}


def name_pointers(chunks: Iterable[bytes]) -> set[int]:
    """Every distinct char* name pointer in kernel and marker records (to be read while valid). Only those fields are
    read, not whole records: this runs in a detach, just before the program's next work (_walk)."""
    K = cupti_module().ActivityKind
    dtypes = record_dtypes()
    sizes = {k: int(dt.itemsize) for k, dt in dtypes.items()}
    fields = {int(K.CONCURRENT_KERNEL): ("name",), int(K.KERNEL): ("name",), int(K.MARKER): ("name", "domain")}
    ptrs: set[int] = set()
    for chunk in chunks:
        if not chunk:
            continue
        offsets, kinds = _walk(chunk, sizes)
        words = np.frombuffer(chunk, dtype=np.uint8)
        for kind, names in fields.items():
            at = offsets[kinds == kind]
            for name in names if at.size else ():
                dt, field = dtypes[kind].fields[name][:2]
                idx = (at + int(field))[:, None] + np.arange(dt.itemsize, dtype=np.int64)[None, :]
                ptrs.update(np.ascontiguousarray(words[idx]).view(dt).reshape(-1).tolist())
    ptrs.discard(0)
    return ptrs
