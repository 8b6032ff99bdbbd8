"""A timeline view as the page's canvas renderer reads it (assets/timeline.js): a JSON spec and a binary blob.

Spans go into the page as columns in one gzip blob (base64 in the page, inflated by the browser's
own DecompressionStream): starts delta-coded within each lane, durations, group, name and
correlation ids in the smallest exact integer type, a column that holds one value as a constant.
Multi-byte columns are byte-shuffled before gzip. A run of a million kernels fits a page that way. Strings (kernel names, source lines) go in the
JSON spec once per distinct value; the page writes them with textContent only.
"""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np

from graphmode.reports.names import demangle, short_name
from graphmode.analyzers.timeline import FIELDS, TEXT_FIELDS, TimelineView

# One colour per (source, label) across the page, every one distinct (tests check it): API categories,
# GPU span kinds, marker kinds. Colour-blind-safe hues first (Okabe-Ito), then Tableau's.
COLOURS: dict[tuple[str, str], str] = {
    ("gpu", "kernel"): "#009e73", ("gpu", "memcpy"): "#e69f00", ("gpu", "memset"): "#f0e442",
    ("gpu", "graph"): "#cc79a7",
    ("api", "kernel_launch"): "#0072b2", ("api", "graph_launch"): "#9467bd", ("api", "sync"): "#d62728",
    ("api", "capture"): "#ff9896", ("api", "instantiate"): "#ff7f0e", ("api", "upload"): "#bcbd22",
    ("api", "update"): "#17becf", ("api", "graph_build"): "#8c564b", ("api", "graph_destroy"): "#7f7f7f",
    ("api", "memcpy"): "#2ca02c", ("api", "memset"): "#98df8a", ("api", "memory"): "#aec7e8",
    ("api", "event"): "#c5b0d5", ("api", "stream"): "#c49c94", ("api", "module"): "#dbdb8d",
    ("api", "other"): "#c7c7c7",
    ("marker", "phase"): "#dddddd", ("marker", "iteration"): "#56b4e9", ("marker", "op"): "#6b4c9a",
    ("marker", "nvtx"): "#999999",
}
FALLBACK_COLOUR = "#555555"
# What each colour means, in words (the legend).
LEGEND: dict[tuple[str, str], str] = {
    ("gpu", "kernel"): "kernel (GPU)", ("gpu", "memcpy"): "copy (GPU)", ("gpu", "memset"): "memset (GPU)",
    ("gpu", "graph"): "graph replay, one span per launch (GPU)",
    ("api", "kernel_launch"): "kernel launch call (CPU)", ("api", "graph_launch"): "graph launch call (CPU)",
    ("api", "sync"): "synchronize call (CPU)", ("api", "capture"): "stream capture call (CPU)",
    ("api", "instantiate"): "graph instantiate (CPU)", ("api", "upload"): "graph upload (CPU)",
    ("api", "update"): "graph update (CPU)", ("api", "graph_build"): "graph node API call (CPU)",
    ("api", "graph_destroy"): "graph destroy (CPU)", ("api", "memcpy"): "copy call (CPU)",
    ("api", "memset"): "memset call (CPU)", ("api", "memory"): "memory alloc/free call (CPU)",
    ("api", "event"): "event call (CPU)", ("api", "stream"): "stream call (CPU)", ("api", "module"): "module load call (CPU)",
    ("api", "other"): "other CUDA call (CPU)",
    ("marker", "phase"): "phase of the run", ("marker", "iteration"): "iteration",
    ("marker", "op"): "graph build step (capture, instantiate, upload, first launch)", ("marker", "nvtx"): "NVTX range",
}
GZIP_LEVEL = 1  # after byte shuffling, level 6 saves ~5% more at 5x the time (1.5M spans: 2.2 s vs 0.4 s)


def _smallest(values: np.ndarray) -> np.ndarray:
    """The values in the smallest unsigned type that holds them exactly, else float64 (exact to 2**53)."""
    v = np.asarray(values)
    if v.size == 0:
        return v.astype(np.uint8)
    lo, hi = int(v.min()), int(v.max())
    if lo >= 0:
        for t in (np.uint8, np.uint16, np.uint32):
            if hi <= np.iinfo(t).max:
                return v.astype(t)
    return v.astype(np.float64)


_DTYPES = {np.dtype(np.uint8): "u1", np.dtype(np.uint16): "u2", np.dtype(np.uint32): "u4", np.dtype(np.float64): "f8",
           np.dtype(np.int32): "i4", np.dtype(np.float32): "f4"}


class BlobWriter:
    """Columns laid end to end, each at an 8-byte boundary so the page can view them in place."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    def column(self, values: np.ndarray, **extra: Any) -> dict[str, Any]:
        """A column's spec. Multi-byte values are byte-shuffled (every value's first byte, then every second
        byte, ...): the high bytes of timestamps and ids repeat, and gzip finds runs it would miss interleaved."""
        v = np.asarray(values)
        if v.size and np.all(v == v.flat[0]) and not extra:
            return {"const": v.flat[0].item()}
        v = np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<")))
        spec = {"dtype": _DTYPES[v.dtype.newbyteorder("=")], "offset": self._size, "length": int(v.size),
                "shuffled": v.itemsize > 1, **extra}
        raw = v.view(np.uint8).reshape(-1, v.itemsize).T.tobytes() if v.itemsize > 1 else v.tobytes()
        self._parts.append(raw + b"\0" * (-len(raw) % 8))
        self._size += len(self._parts[-1])
        return spec

    def gzip(self) -> bytes:
        return gzip.compress(b"".join(self._parts), compresslevel=GZIP_LEVEL, mtime=0)


def _lane_deltas(lane: np.ndarray, start: np.ndarray, n_lanes: int) -> tuple[np.ndarray, list[int], int]:
    """Starts as non-negative deltas within each lane (the first of a lane from `base`), lane boundaries, base."""
    bounds = np.searchsorted(lane, np.arange(n_lanes + 1)).tolist()
    base = int(start.min()) if start.size else 0
    d = start - base
    delta = np.diff(d, prepend=0)
    firsts = np.array([b for b in bounds[:-1] if b < start.size], np.int64)
    delta[firsts] = d[firsts]
    return delta, bounds, base


def encode_view(view: TimelineView, blob: BlobWriter, *, div: str, title: str, origin: str, initial: tuple[int, int],
                full: tuple[int, int], sync: str | None = None, fade_note: str = "",
                left_out: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON spec of one timeline (its columns written to `blob`); ranges in ns relative to the origin; `title`: the
    view's title as the report words it (reports.notes.word of view.title, or the report's own).
    `left_out`: stretches ({start, end, spans, label}, relative ns) whose spans the page does not hold, drawn hatched."""
    n = len(view)
    delta, bounds, base = _lane_deltas(view.lane, view.start_ns, len(view.lanes))
    start_col = _smallest(delta)
    columns: dict[str, Any] = {
        "start": blob.column(start_col, base=base, delta=True) if start_col.dtype != np.float64
        else blob.column((view.start_ns - base).astype(np.float64), base=base, delta=False),
        "dur": blob.column(_smallest(view.end_ns - view.start_ns)),
        "group": blob.column(_smallest(view.group)),
        "name": blob.column(_smallest(view.name_id)),
        "outside": blob.column(view.outside.astype(np.uint8)),
    }
    corr = view.correlation_id
    step = np.diff(corr, prepend=0)
    zigzag = np.where(step >= 0, 2 * step, -2 * step - 1)
    zz = _smallest(zigzag)
    columns["corr"] = (blob.column(zz, zigzag=True) if zz.dtype != np.float64 and not np.all(corr == corr[:1])
                       else blob.column(corr.astype(np.float64)))
    columns["fields"] = {f: blob.column(_smallest(view.fields[f])) for f in FIELDS}
    columns["text"] = {f: blob.column(_smallest(view.text_codes[f])) for f in TEXT_FIELDS}
    groups = []
    for k, g in enumerate(view.groups):
        key = (g.source, g.label)
        groups.append({"source": g.source, "label": g.label, "colour": COLOURS.get(key, FALLBACK_COLOUR),
                       "legend": LEGEND.get(key, f"{g.label} ({g.source})"),
                       "count": int(np.count_nonzero(view.group == k)),
                       "text_fields": {f: view.text_tables[f][k] for f in TEXT_FIELDS}})
    demangled = [demangle(s) for s in view.names]
    return {
        "div": div, "kind": "timeline", "title": title, "origin": origin, "n": n, "sync": sync,
        "lanes": [ln.label for ln in view.lanes], "lane_bounds": bounds,
        "range": [int(initial[0]), int(initial[1])], "full": [int(full[0]), int(full[1])],
        "columns": columns, "fade_note": fade_note, "left_out": left_out or [],
        "hover": {"names": demangled, "short_names": [short_name(s) for s in view.names],
                  "mangled": [s if d != s else "" for s, d in zip(view.names, demangled)],
                  "groups": groups, "lanes": [ln.label for ln in view.lanes]},
    }
