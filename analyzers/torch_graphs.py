"""What PyTorch said about its CUDA graphs (meta.torch, written by tracer.torch_hooks), tied to the trace's graphs.

PyTorch's log records are classified by the message templates of torch/_inductor/cudagraph_trees.py
and cudagraph_utils.py (docs/metrics.md, "PyTorch cudagraph trees"); a record that matches none is
kept out of the figures, not guessed at. A recording is tied to the CUPTI graph it made by the first
stream capture that starts on the same thread after PyTorch logged it; a `CUDAGraph.capture_end`
(which pool) to the last capture that started before it on that thread. Loops run per log record
(a few per compiled function) and per graph, never per GPU event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from graphmode.analyzers.coverage_results import CudagraphFunction, CudagraphSkip, MemoryPool, TorchGraphs
from graphmode.tracer.sources import is_library_file
from graphmode.tracer.store import Trace

# PyTorch's message templates (torch 2.11); the patterns read its formatted message
_RECORDING = re.compile(r"^\[(?P<cid>[^\]]*)\] Recording function=(?P<fn>.*?), cuda_graph_id=(?P<gid>\d+), inputs: (?P<inputs>.*)$", re.S)
_WARMUP = re.compile(r"^\[(?P<cid>[^\]]*)\] Running warmup function=(?P<fn>.*)$", re.S)
_EAGER = re.compile(r"^\[(?P<cid>[^\]]*)\] Running eager function=(?P<fn>.*)$", re.S)
_RERECORD = re.compile(r"^\[(?P<cid>[^\]]*)\] Re-recording function=(?P<fn>.*?), reason=(?P<reason>.*)$", re.S)
_TREE = re.compile(r"^Recording cudagraph tree for (?P<what>.*)$", re.S)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n(?P<code>[^\n]*)')

# (words in PyTorch's skip message, reason): first match wins
SKIP_REASONS: tuple[tuple[str, str], ...] = (
    ("mutated inputs", "mutated_inputs"),
    ("cpu device", "cpu_device"),
    ("multiple devices", "multiple_devices"),
    ("re-recording limit", "rerecord_limit"),
    ("incompatible op", "incompatible_ops"),
    ("index_put_ fallback", "incompatible_ops"),
    ("symbolic shapes", "dynamic_shapes"),
    ("control flow operator", "control_flow"),
    ("cpp wrapper", "cpp_wrapper"),
)


def skip_reason(message: str) -> str:
    low = message.lower()
    return next((reason for words, reason in SKIP_REASONS if words in low), "other")


def stack_frame(text: str) -> tuple[str, str]:
    """('file:line function', code) of the innermost user frame of a Python stack trace PyTorch printed."""
    frames = [(m["file"], m["line"], m["func"], m["code"].strip()) for m in _FRAME.finditer(text + "\n")]
    if not frames:
        return "", ""
    user = [f for f in frames if not is_library_file(f[0])] or frames
    file, line, func, code = user[-1]
    return f"{file}:{line} {func}", code


def torch_events(trace: Trace) -> dict[str, np.ndarray] | None:
    """meta.torch.events as numpy columns (None when the run did not import torch)."""
    t = trace.meta.get("torch")
    if not isinstance(t, dict) or not isinstance(t.get("events"), dict):
        return None
    ev = t["events"]
    n = len(ev.get("kind", []))
    cols: dict[str, np.ndarray] = {}
    for k in ("ts_ns", "thread_id", "level"):
        cols[k] = np.asarray(ev.get(k, [0] * n), dtype=np.int64)
    for k in ("kind", "logger", "template", "message", "args", "compile_id", "pool", "source"):
        cols[k] = np.asarray([str(x) for x in ev.get(k, [""] * n)], dtype=object)
    return cols


def _captures(trace: Trace, pass_id: int) -> dict[str, np.ndarray]:
    return trace.sql("SELECT graph_id, start_ns, end_ns, thread_id FROM graph_events WHERE pass_id = ? AND event = 'capture' "
                     "ORDER BY start_ns", [pass_id])


def capture_after(caps: dict[str, np.ndarray], ts: int, thread: int) -> int:
    """The graph of the first capture starting at or after `ts` on `thread` (0 if none)."""
    m = (caps["thread_id"] == thread) & (caps["start_ns"] >= ts)
    return int(caps["graph_id"][m][0]) if m.any() else 0


def capture_before(caps: dict[str, np.ndarray], ts: int, thread: int) -> int:
    """The graph of the last capture starting at or before `ts` on `thread` (0 if none)."""
    m = (caps["thread_id"] == thread) & (caps["start_ns"] <= ts)
    return int(caps["graph_id"][m][-1]) if m.any() else 0


def _skips(ev: dict[str, np.ndarray]) -> tuple[CudagraphSkip, ...]:
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i in np.flatnonzero((ev["kind"] == "log") & (ev["level"] >= 30)):  # warnings: a handful
        msg = str(ev["message"][i])
        if not msg.lower().startswith(("skipping cudagraph", "disabling cudagraph")):
            continue
        reason = skip_reason(msg)
        where, _ = stack_frame(msg)
        first_line = msg.splitlines()[0].split(" Found from")[0].strip()  # the stack trace is kept apart, in `where`
        groups.setdefault((reason, where, first_line), []).append(int(i))
    out = []
    for (reason, where, first_line), idx in groups.items():
        _, code = stack_frame(str(ev["message"][idx[0]]))
        out.append(CudagraphSkip(reason=reason, message=first_line, where=where, code=code,
                                 called_from=str(ev["source"][idx[0]]), count=len(idx), first_ns=int(ev["ts_ns"][idx[0]])))
    return tuple(sorted(out, key=lambda s: s.first_ns))


class _Fn:
    def __init__(self, name: str, defined_at: str) -> None:
        self.name, self.defined_at = name, defined_at
        self.compile_ids: list[str] = []
        self.warmups = self.recordings = self.rerecords = 0
        self.reasons: list[str] = []
        self.graphs: list[int] = []
        self.shapes: list[str] = []
        self.called: list[str] = []

    def seen(self, cid: str, source: str) -> None:
        if cid and cid not in self.compile_ids:
            self.compile_ids.append(cid)
        if source and source not in self.called:
            self.called.append(source)

    def result(self) -> CudagraphFunction:
        return CudagraphFunction(self.name, tuple(self.compile_ids), self.warmups, self.recordings, self.rerecords,
                                 tuple(dict.fromkeys(self.reasons)), tuple(self.graphs), tuple(self.shapes), tuple(self.called),
                                 self.defined_at)


def _frame(compile_id: str) -> str:
    """Dynamo's frame id of a compile id ('3/1' -> '3'): one per Python function it compiled, recompilations
    included."""
    return compile_id.lstrip("!").split("/")[0]


def _functions(ev: dict[str, np.ndarray], caps: dict[str, np.ndarray]) -> tuple[tuple[CudagraphFunction, ...], int, int, int]:
    # the Python function behind each Dynamo frame id, from the compile-start callbacks ('name file:line')
    compiled = {_frame(str(c)): str(m) for k, c, m in zip(ev["kind"], ev["compile_id"], ev["message"])
                if k == "start_dynamo" and m}
    fns: dict[str, _Fn] = {}

    def fn(cid: str, pytorch_name: str) -> _Fn:
        key = _frame(cid) or pytorch_name
        if key not in fns:
            name, _, where = compiled.get(key, "").partition(" ")
            fns[key] = _Fn(name or pytorch_name, where)
        return fns[key]

    warmups = recordings = trees = 0
    for i in np.flatnonzero(ev["kind"] == "log"):  # log records: a few per compiled function
        msg, src = str(ev["message"][i]), str(ev["source"][i])
        if (m := _RECORDING.match(msg)) is not None:
            f = fn(m["cid"], m["fn"])
            f.seen(m["cid"], src)
            f.recordings += 1
            recordings += 1
            gid = capture_after(caps, int(ev["ts_ns"][i]), int(ev["thread_id"][i]))
            if gid:
                f.graphs.append(gid)
            f.shapes.append(m["inputs"].strip()[:200])
        elif (m := _WARMUP.match(msg)) is not None:
            f = fn(m["cid"], m["fn"])
            f.seen(m["cid"], src)
            f.warmups += 1
            warmups += 1
        elif (m := _EAGER.match(msg)) is not None:
            fn(m["cid"], m["fn"]).seen(m["cid"], src)
        elif (m := _RERECORD.match(msg)) is not None:
            f = fn(m["cid"], m["fn"])
            f.seen(m["cid"], src)
            f.rerecords += 1
            f.reasons.append(m["reason"].strip().splitlines()[0][:300])
        elif _TREE.match(msg) is not None:
            trees += 1
    return tuple(f.result() for f in fns.values()), warmups, recordings, trees


def _pools(trace: Trace, ev: dict[str, np.ndarray], caps: dict[str, np.ndarray]) -> tuple[MemoryPool, ...]:
    t = trace.meta.get("torch") or {}
    ends = t.get("pools_end") or {}
    mem = trace.meta.get("graph_memory") or {}
    after = [i for i, e in enumerate(mem.get("event", [])) if e == "torch_capture_end"]
    last_sample: dict[str, tuple[int, int]] = {}
    for i in after:  # one per capture
        last_sample[str(mem["pool"][i])] = (int(mem["pool_reserved_bytes"][i]), int(mem["pool_allocated_bytes"][i]))
    by_pool: dict[str, list[int]] = {}
    for j in np.flatnonzero(ev["kind"] == "capture_end"):  # one per capture
        pool = str(ev["pool"][j])
        gid = capture_before(caps, int(ev["ts_ns"][j]), int(ev["thread_id"][j]))
        lst = by_pool.setdefault(pool, [])
        if gid and gid not in lst:
            lst.append(gid)
    out = []
    for pool, graphs in by_pool.items():
        reserved, allocated = last_sample.get(pool, (-1, -1))
        end = ends.get(pool)
        out.append(MemoryPool(pool, tuple(graphs), reserved if reserved >= 0 else None, allocated if allocated >= 0 else None,
                              int(end[0]) if isinstance(end, Sequence) and len(end) == 2 else None))
    return tuple(out)


def torch_graphs(trace: Trace, pass_id: int | None) -> TorchGraphs | None:
    """PyTorch's cudagraph decisions in this run; None when it did not import torch (or was not recorded with hooks)."""
    ev = torch_events(trace)
    if ev is None:
        return None
    t: dict[str, Any] = trace.meta["torch"]
    caps = _captures(trace, pass_id) if pass_id is not None else {k: np.zeros(0, dtype=np.int64) for k in
                                                                   ("graph_id", "start_ns", "end_ns", "thread_id")}
    functions, warmups, recordings, trees = _functions(ev, caps)
    sizes = next((str(m) for m in ev["message"] if "distinct sizes" in str(m)), "")
    counters = t.get("counters") or {}
    return TorchGraphs(
        torch_version=str(t.get("version", "")), recordings=recordings, warmups=warmups, trees=trees,
        skips=_skips(ev), functions=functions, pools=_pools(trace, ev, caps), distinct_sizes_warning=sizes.split("Please")[0].strip(),
        counters=tuple(sorted((str(k), int(v)) for k, v in counters.items())),
        captures=int(t.get("captures", 0) or 0), events_dropped=int(t.get("dropped_events", 0) or 0),
    )

