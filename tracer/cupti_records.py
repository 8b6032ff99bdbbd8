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


_SHORT_RUN = 8  # records of one kind in a row looked at one by one, before numpy looks further at once


def _walk(chunk: bytes, sizes: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and kinds of the records in one buffer span.

    Records lie back to back, each as long as its kind says, so the walk is sequential. CUPTI's buffers hold long runs
    of one kind (a batch of kernel records, of API records): past _SHORT_RUN records in a row, the rest of a run is
    found with numpy (the kind field read at every record boundary the run would have, up to the first that differs,
    looking twice as far each time). A detach reads the names of the records before CUPTI frees them
    (CuptiSession.stop), just before the program's capture: with one step of Python per record, that took tens of
    milliseconds for a session of tens of thousands of records (benchmarks/notes/s31)."""
    n = len(chunk)
    offsets: list[np.ndarray] = []  # the walk's parts, in order: short runs gathered in Python lists, long runs
    kinds: list[np.ndarray] = []
    short_o: list[int] = []
    short_k: list[int] = []
    o = 0
    kind = int.from_bytes(chunk[0:4], "little") if n >= 4 else -1
    while o + 4 <= n:
        size = sizes.get(kind)
        if size is None:
            raise ValueError(f"unknown CUPTI record kind {kind} at offset {o}: cannot continue decoding this buffer")
        run, nxt = 1, -1  # nxt: the kind of the record after the run, where read
        while run < _SHORT_RUN:
            at = o + run * size
            if at + 4 > n:
                break
            nxt = int.from_bytes(chunk[at : at + 4], "little")
            if nxt != kind:
                break
            run += 1
        else:  # a long run: numpy looks further at once
            ahead, nxt = _SHORT_RUN, -1
            while True:
                at = o + run * size
                m = min(ahead, (n - at - 4) // size + 1) if at + 4 <= n else 0
                if m <= 0:
                    break
                ks = np.ndarray((m,), dtype="<u4", buffer=chunk, offset=at, strides=(size,))
                other = np.flatnonzero(ks != kind)
                if other.size:
                    run += int(other[0])
                    nxt = int(ks[other[0]])
                    break
                run += m
                ahead *= 2
        if run < _SHORT_RUN:
            if run == 1:
                short_o.append(o)
                short_k.append(kind)
            else:
                short_o.extend(range(o, o + run * size, size))
                short_k.extend([kind] * run)
        else:
            if short_o:
                offsets.append(np.asarray(short_o, dtype=np.int64))
                kinds.append(np.asarray(short_k, dtype=np.int32))
                short_o, short_k = [], []
            offsets.append(o + size * np.arange(run, dtype=np.int64))
            kinds.append(np.full(run, kind, dtype=np.int32))
        o += run * size
        kind = nxt if nxt >= 0 or o + 4 > n else int.from_bytes(chunk[o : o + 4], "little")
    offsets.append(np.asarray(short_o, dtype=np.int64))
    kinds.append(np.asarray(short_k, dtype=np.int32))
    return np.concatenate(offsets), np.concatenate(kinds)


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
            starts = np.flatnonzero(np.diff(sel) != dt.itemsize) + 1  # where a run of back-to-back records breaks
            if len(starts) + 1 <= len(sel) // _SHORT_RUN:  # long runs: each read in place, one copy
                rows = np.concatenate([np.frombuffer(chunk, dtype=dt, count=len(run), offset=int(run[0]))
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
