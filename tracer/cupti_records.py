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


def _walk(chunk: bytes, sizes: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and kinds of the records in one buffer span."""
    offsets: list[int] = []
    kinds: list[int] = []
    n = len(chunk)
    o = 0
    mv = memoryview(chunk)
    while o + 4 <= n:
        kind = int.from_bytes(mv[o : o + 4], "little")
        size = sizes.get(kind)
        if size is None:
            raise ValueError(f"unknown CUPTI record kind {kind} at offset {o}: cannot continue decoding this buffer")
        offsets.append(o)
        kinds.append(kind)
        o += size
    return np.asarray(offsets, dtype=np.int64), np.asarray(kinds, dtype=np.int32)


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
            idx = sel[:, None] + np.arange(dt.itemsize, dtype=np.int64)[None, :]
            rows = np.ascontiguousarray(raw[idx]).view(dt).reshape(-1)
            parts.setdefault(int(kind), []).append(rows)
    return {k: np.concatenate(v) for k, v in parts.items()}


def name_pointers(chunks: Iterable[bytes]) -> set[int]:
    """Every distinct char* name pointer in kernel and marker records (to be read while valid)."""
    K = cupti_module().ActivityKind
    recs = records_by_kind(chunks)
    ptrs: set[int] = set()
    for kind in (int(K.CONCURRENT_KERNEL), int(K.KERNEL), int(K.MARKER)):
        if kind in recs:
            ptrs.update(int(p) for p in np.unique(recs[kind]["name"]))
        if kind == int(K.MARKER) and kind in recs:
            ptrs.update(int(p) for p in np.unique(recs[kind]["domain"]))
    ptrs.discard(0)
    return ptrs
