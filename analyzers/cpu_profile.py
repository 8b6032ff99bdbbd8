"""Where the CPU side of a run went, from the run's pyinstrument profile (tracer.profile_store).

pyinstrument samples Python stacks only: time inside a C extension (a torch._C op, a cuda.bindings
driver call, a CuPy kernel launch) is charged to the innermost Python frame that called it. So each
sample is classified by its innermost frame, read through pyinstrument's own `Frame` (its file,
and `Frame.is_application_code`, pyinstrument's rule for the program's own code):

- `cuda_binding`: the Python side of CUDA driver/runtime calls (cuda.bindings, cuda.core, cupy.cuda,
  cupy_backends, torch.cuda, pycuda);
- `framework`: framework dispatch (torch, cupy, jax, triton, numba, tensorflow, warp, nvmath);
- `user`: application code in pyinstrument's sense (outside the Python installation and virtualenv);
- `tracer`: graphmode's own callbacks (the cost of tracing);
- `other`: the standard library and every other installed package.

The time the CUDA driver and runtime themselves took is measured independently by CUPTI
(`cuda_api_ns`: outermost API calls of the traced pass, each thread's nested calls counted once).
"""

from __future__ import annotations

from collections import defaultdict
import numpy as np

from graphmode.analyzers.results import CpuCategory, CpuFrame, CpuProfile
from graphmode.tracer.profile_store import StoredProfile, read_profile
from graphmode.tracer.sources import in_installed_package, own_dirs
from graphmode.tracer.store import Trace

CATEGORIES = ("user", "framework", "cuda_binding", "tracer", "other")
TOP = 15
_CUDA_BINDING = ("/cuda/bindings/", "/cuda/core/", "/cuda/cudart", "/cuda/cuda.", "/cupy/cuda/", "/cupy_backends/",
                 "/torch/cuda/", "/pycuda/")
_FRAMEWORK = ("/torch/", "/cupy/", "/jax/", "/jaxlib/", "/triton/", "/numba/", "/tensorflow/", "/warp/", "/nvmath/",
              "/cuda/")
_TOOL_DIRS = tuple(d.replace("\\", "/") for d in own_dirs())


def _own_modules() -> tuple[str, ...]:
    """'/tracer/script.py', '/graphmode/cli.py', ...: the modules of graphmode that run while a script is
    recorded, by their path inside the package, so that a profile recorded from another checkout or
    install still tells graphmode's frames apart from the user's."""
    import os

    out = []
    for d in own_dirs():
        pkg = os.path.basename(d.rstrip(os.sep))
        if pkg not in ("tracer", "graphmode"):
            continue
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.endswith(".py"):
                out.append(f"/{pkg}/{name}")
    return tuple(out)


_OWN_MODULES = _own_modules()


def classify(file: str, application_code: bool) -> str:
    """The category of a frame, from its file and pyinstrument's `Frame.is_application_code`."""
    f = file.replace("\\", "/")
    if f.startswith(_TOOL_DIRS) or f.endswith(_OWN_MODULES):
        return "tracer"
    if any(p in f for p in _CUDA_BINDING):
        return "cuda_binding"
    installed = in_installed_package(f)
    if any(p in f for p in _FRAMEWORK) and (installed or not application_code):
        return "framework"
    if application_code and not installed:
        return "user"
    return "other"


# pyinstrument's Frame.is_application_code asks the caller's frame for these (eval'd code, stdin).
_CALLER_DECIDES = ("<string>", "<stdin>")


def summarise(profile: StoredProfile, cuda_api_ns: float | None = None) -> CpuProfile:
    """Sampled time by category of the innermost frame, top frames by self time, and the program's
    own lines (innermost application frame of each sample, at its current line) by time."""
    from pyinstrument.frame import Frame

    context = profile.context()
    n_frames = len(profile.frame_info)
    function, file, def_line, current = [""] * n_frames, [""] * n_frames, [0] * n_frames, [0] * n_frames
    app = np.zeros(n_frames, dtype=bool)
    inherit = np.zeros(n_frames, dtype=bool)
    for fid in range(1, n_frames):  # one pyinstrument Frame per distinct frame string
        f = Frame(profile.frame_info[fid], context=context)
        function[fid], file[fid] = f.function, f.file_path or ""
        def_line[fid] = f.line_no or 0
        current[fid] = int(f.get_attribute_value("l") or def_line[fid])
        app[fid] = f.is_application_code and file[fid] != "<thread>"
        inherit[fid] = file[fid] in _CALLER_DECIDES
    n = len(profile.stack_parent)
    parent, frame_of = profile.stack_parent, profile.stack_frame
    user_app = np.zeros(n, dtype=bool)  # Frame.is_application_code of each stack's innermost frame
    innermost_user = np.zeros(n, dtype=np.int64)  # stack id of each stack's innermost user frame, 0: none
    category = np.full(n, CATEGORIES.index("other"), dtype=np.int8)
    cat_cache: dict[tuple[int, bool], int] = {}
    for sid in range(1, n):  # parents have smaller ids
        fid, up = int(frame_of[sid]), int(parent[sid])
        is_app = bool(user_app[up]) if inherit[fid] and up else bool(app[fid])
        user_app[sid] = is_app
        key = (fid, is_app)
        if key not in cat_cache:
            cat_cache[key] = CATEGORIES.index(classify(file[fid], is_app) if file[fid] != "<thread>" else "other")
        category[sid] = cat_cache[key]
        innermost_user[sid] = sid if category[sid] == 0 else innermost_user[up]
    seconds = profile.sample_seconds
    leaf = profile.sample_stack.astype(np.int64)
    by_cat = np.bincount(category[leaf], weights=seconds, minlength=len(CATEGORIES))
    per_stack = np.bincount(leaf, weights=seconds, minlength=n)
    self_time: dict[tuple[str, str, str], float] = defaultdict(float)
    user_lines: dict[tuple[str, str], float] = defaultdict(float)
    for sid in np.flatnonzero(per_stack).tolist():  # distinct sampled stacks, not samples
        t = float(per_stack[sid])
        if sid:
            fid = int(frame_of[sid])
            self_time[(function[fid], f"{file[fid]}:{def_line[fid]}", CATEGORIES[category[sid]])] += t
        u = int(innermost_user[sid])
        if u:
            ufid = int(frame_of[u])
            user_lines[(function[ufid], f"{file[ufid]}:{current[ufid]}")] += t
    sampled = float(by_cat.sum())
    cats = tuple(CpuCategory(c, float(by_cat[i]) * 1e9, float(by_cat[i]) / sampled if sampled else 0.0)
                 for i, c in enumerate(CATEGORIES))
    top = sorted(self_time.items(), key=lambda kv: -kv[1])[:TOP]
    lines = sorted(user_lines.items(), key=lambda kv: -kv[1])[:TOP]
    scalars = profile.scalars
    return CpuProfile(
        duration_ns=float(scalars.get("duration") or 0.0) * 1e9, sampled_ns=sampled * 1e9,
        samples=profile.recorded_samples, interval_ns=float(scalars.get("min_interval") or 0.001) * 1e9,
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
    """The run's pyinstrument profile summarised; None when the trace has none.

    Raises ValueError (one sentence) for a profile that is present but unreadable: the caller notes it."""
    profile = read_profile(trace)
    if profile is None or not len(profile.sample_stack):
        return None
    api = outermost_api_ns(trace, traced_pass_id) if traced_pass_id is not None else None
    return summarise(profile, api)
