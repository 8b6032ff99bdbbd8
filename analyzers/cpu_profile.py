"""Where the CPU side of a run went, from the pyinstrument session stored in `meta.cpu_profile`.

pyinstrument samples Python stacks only: time inside a C extension (a torch._C op, a cuda.bindings
driver call, a CuPy kernel launch) is charged to the innermost Python frame that called it. So each
sample is classified by its innermost frame's file:

- `cuda_binding`: the Python side of CUDA driver/runtime calls (cuda.bindings, cuda.core, cupy.cuda,
  cupy_backends, torch.cuda, pycuda);
- `framework`: framework dispatch (torch, cupy, jax, triton, numba, tensorflow, warp, nvmath);
- `user`: files outside every installed prefix (the script and its own modules);
- `tracer`: graphmode's own callbacks (the cost of tracing);
- `other`: the standard library and every other installed package.

The time the CUDA driver and runtime themselves took is measured independently by CUPTI
(`cuda_api_ns`: outermost API calls of the traced pass, each thread's nested calls counted once).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.analyzers.results import CpuCategory, CpuFrame, CpuProfile
from graphmode.tracer.sources import own_dirs
from graphmode.tracer.store import Trace

CATEGORIES = ("user", "framework", "cuda_binding", "tracer", "other")
TOP = 15
_CUDA_BINDING = ("/cuda/bindings/", "/cuda/core/", "/cuda/cudart", "/cuda/cuda.", "/cupy/cuda/", "/cupy_backends/",
                 "/torch/cuda/", "/pycuda/")
_FRAMEWORK = ("/torch/", "/cupy/", "/jax/", "/jaxlib/", "/triton/", "/numba/", "/tensorflow/", "/warp/", "/nvmath/",
              "/cuda/")
_TOOL_DIRS = tuple(d.replace("\\", "/") for d in own_dirs())


def classify(file: str, prefixes: list[str]) -> str:
    """The category of a frame's file (see the module docstring)."""
    f = file.replace("\\", "/")
    if f.startswith(_TOOL_DIRS):
        return "tracer"
    if any(p in f for p in _CUDA_BINDING):
        return "cuda_binding"
    if any(p in f for p in _FRAMEWORK) and ("site-packages" in f or "dist-packages" in f):
        return "framework"
    if f.startswith("<") or any(f.startswith(p) for p in prefixes if p) or "site-packages" in f:
        return "other"
    return "user"


def _parse(frame_info: str) -> tuple[str, str, int, int]:
    """(function, file, first line, current line) of a pyinstrument frame string."""
    identifier, _, attrs = frame_info.partition("\x01")
    function, file, line = (identifier.split("\x00") + ["", "", "0"])[:3]
    current = next((a[1:] for a in attrs.split("\x01") if a.startswith("l")), "") if attrs else ""
    return function, file, int(line or 0), int(current or line or 0)


def summarise(session: dict[str, Any], cuda_api_ns: float | None = None) -> CpuProfile:
    """Summary of a pyinstrument session dict (`Session.to_json()` loaded as JSON)."""
    records = session.get("frame_records") or []
    prefixes = [str(p).replace("\\", "/") for p in session.get("sys_prefixes") or []]
    # One entry per distinct stack: pyinstrument already merges consecutive identical samples.
    per_stack: dict[tuple[str, ...], float] = defaultdict(float)
    for stack, seconds in records:
        per_stack[tuple(stack)] += float(seconds)
    parsed: dict[str, tuple[str, str, int, int, str]] = {}

    def info(frame: str) -> tuple[str, str, int, int, str]:
        if frame not in parsed:
            fn, file, line, cur = _parse(frame)
            parsed[frame] = (fn, file, line, cur, classify(file, prefixes) if file != "<thread>" else "other")
        return parsed[frame]

    by_cat: dict[str, float] = defaultdict(float)
    self_time: dict[tuple[str, str, str], float] = defaultdict(float)
    user_lines: dict[tuple[str, str], float] = defaultdict(float)
    for stack, seconds in per_stack.items():  # distinct stacks, not samples
        fn, file, line, _, cat = info(stack[-1])
        by_cat[cat] += seconds
        self_time[(fn, f"{file}:{line}", cat)] += seconds
        for frame in reversed(stack):
            ufn, ufile, _, ucur, ucat = info(frame)
            if ucat == "user":
                user_lines[(ufn, f"{ufile}:{ucur}")] += seconds
                break
    sampled = sum(by_cat.values())
    cats = tuple(CpuCategory(c, by_cat.get(c, 0.0) * 1e9, by_cat.get(c, 0.0) / sampled if sampled else 0.0) for c in CATEGORIES)
    top = sorted(self_time.items(), key=lambda kv: -kv[1])[:TOP]
    lines = sorted(user_lines.items(), key=lambda kv: -kv[1])[:TOP]
    return CpuProfile(
        duration_ns=float(session.get("duration", 0.0)) * 1e9, sampled_ns=sampled * 1e9,
        samples=int(session.get("sample_count", len(records))), interval_ns=float(session.get("min_interval", 0.001)) * 1e9,
        categories=cats,
        top_frames=tuple(CpuFrame(fn, loc, cat, t * 1e9) for (fn, loc, cat), t in top),
        top_user_lines=tuple(CpuFrame(fn, loc, "user", t * 1e9) for (fn, loc), t in lines),
        cuda_api_ns=cuda_api_ns,
    )


def outermost_api_ns(trace: Trace, pass_id: int) -> float:
    """CPU time in outermost CUDA API calls of a pass: a call nested in another on its thread counts once."""
    a = trace.sql("SELECT thread_id, start_ns, end_ns, api = 'runtime' AS rt FROM api_calls WHERE pass_id = ?", [pass_id])
    total = 0
    for thread in np.unique(a["thread_id"]):  # threads: a handful
        sel = a["thread_id"] == thread
        st, en, rt = a["start_ns"][sel], a["end_ns"][sel], a["rt"][sel]
        order = np.lexsort((~rt, -en, st))
        st, en = st[order], en[order]
        covered = np.maximum.accumulate(en)
        nested = np.zeros(st.size, dtype=bool)
        nested[1:] = en[1:] <= covered[:-1]
        # partial overlaps with an earlier call add only the part after it
        prev = np.concatenate([[np.iinfo(np.int64).min], covered[:-1]])
        total += int(np.maximum(en - np.maximum(st, prev), 0)[~nested].sum())
    return float(total)


def cpu_profile_summary(trace: Trace, traced_pass_id: int | None) -> CpuProfile | None:
    """The run's pyinstrument profile summarised; None when the trace has none."""
    session = trace.meta.get("cpu_profile")
    if not isinstance(session, dict) or not session.get("frame_records"):
        return None
    api = outermost_api_ns(trace, traced_pass_id) if traced_pass_id is not None else None
    return summarise(session, api)
