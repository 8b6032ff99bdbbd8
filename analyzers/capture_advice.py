"""What to capture, and how (issue 30, items 2 and 3): for a region the prediction would make a graph of, the script's
own lines that one of its iterations runs (file:first-last), and, in a PyTorch program, which capture API fits the
step the trace shows; for a step that changes input shape, its graphs together (one per shape).

The API advice is a heuristic read from kernel names and calls (docs/metrics.md, "What to capture"):
- not a PyTorch program (analyzers.predict.uses_torch): CuPy's stream capture where CuPy launched the step's kernels
  (their names start with CUPY_MARK: its elementwise, reduction and CUB kernels), else no API advice (`api` ''; the
  words name the CUDA runtime's stream-capture calls);
- the step changes shape (regions "shape k of N" of one step, analyzers.repetition): one `torch.cuda.graph` per
  shape, or `torch.compile(mode="reduce-overhead")`, whose cudagraph trees record one graph per shape;
- else a backward pass in the iteration (a kernel name with one of BACKWARD_MARKS) and an optimizer step (one of
  OPTIMIZER_MARKS): the whole step in one `torch.cuda.graph` (warm-up on a side stream, static inputs); a backward
  pass without an optimizer kernel: `torch.cuda.make_graphed_callables` for the model, the optimizer left eager;
- else (a forward pass: inference, decoding): `torch.cuda.graph` around the step.
Whatever the API, calls that would break the capture (predict's CaptureBreaker) must move out of the region first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
import numpy as np

from graphmode.analyzers.notes import Note, NoteValue, note
from graphmode.analyzers.results import CaptureAdvice, CaptureBreaker
from graphmode.tracer.store import Trace

# Kernel-name marks, matched case-insensitively anywhere in the (possibly mangled) name. Autograd's own kernels
# carry "backward" (softmax_warp_backward, nll_loss_backward_reduce_cuda_kernel_2d, GeluBackwardCUDAKernelImpl,
# GammaBetaBackward) or "grad_input"/"grad_weight"; cuDNN's convolution gradients are its dgrad and wgrad kernels.
# A matmul's gradient is a plain GEMM: a backward pass made only of GEMMs is not seen.
BACKWARD_MARKS = ("backward", "dgrad", "wgrad", "grad_input", "grad_weight")
# Optimizer steps: torch.optim's foreach implementations run multi_tensor_apply kernels, its fused ones fused_adam /
# fused_sgd kernels. multi_tensor_apply alone is not an optimizer (cudagraph trees copy inputs with _foreach_copy_):
# an optimizer kernel counts only beside a backward pass.
OPTIMIZER_MARKS = ("multi_tensor_apply", "fused_adam", "adam", "sgd")

API_PER_SHAPE = "torch_cuda_graph_per_shape"
API_WHOLE_STEP = "torch_cuda_graph_whole_step"
API_GRAPHED_CALLABLES = "make_graphed_callables"
API_STEP = "torch_cuda_graph"
API_CUPY = "cupy_stream_capture"
APIS = (API_PER_SHAPE, API_WHOLE_STEP, API_GRAPHED_CALLABLES, API_STEP, API_CUPY)
# CuPy names the kernels it generates after their operation: cupy_multiply__float32_float_float32, cupy_sum,
# cupy_cub_all_pass1 (its ElementwiseKernel, ReductionKernel and CUB paths)
CUPY_MARK = "cupy_"

_SOURCE = re.compile(r"(.*):(\d+)(?: .*)?")


def _marked(names: Sequence[str], marks: Sequence[str]) -> list[str]:
    pattern = re.compile("|".join(re.escape(m) for m in marks), re.IGNORECASE)
    return [n for n in names if pattern.search(n)]


def script_path(trace: Trace) -> str:
    """The script `graphmode run` ran (meta.script.path); '' for other traces."""
    s = trace.meta.get("script")
    p = s.get("path") if isinstance(s, dict) else None
    return str(p) if isinstance(p, str) else ""


# Two stamped lines this close (at most this many lines between them: blank lines, comments, a `def` or `else:` line,
# which run no stamped code) belong to one span of the advice's lines.
SPAN_GAP = 3


def _span(files: np.ndarray, lines: np.ndarray, script: str) -> str:
    """'file.py:A-B,C-D' over the lines of the script's file: its spans of lines, two stamped lines at most SPAN_GAP
    apart in one span ('file.py:N' for one line), so that a step function's body and the loop that calls it read as
    two spans, not as everything between them; where the script is not known or none of them is its, the file with the
    most of them. '' without lines."""
    if files.size == 0:
        return ""
    base = script.rsplit("/", 1)[-1]
    own = (files == script) | (np.char.endswith(files.astype(str), "/" + base) if base else False) | (files == base)
    if not own.any():
        uniq, counts = np.unique(files, return_counts=True)
        own = files == uniq[int(np.argmax(counts))]
    f = str(files[own][0]).rsplit("/", 1)[-1]
    ordered = np.unique(lines[own].astype(np.int64))
    cuts = np.flatnonzero(np.diff(ordered) > SPAN_GAP + 1) + 1
    spans = [(int(p[0]), int(p[-1])) for p in np.split(ordered, cuts)]
    return f"{f}:" + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def _common_lines(trace: Trace, pass_id: int, windows: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(files, lines) of the stamped lines run inside at least half of the windows (an iteration each, sorted, not
    overlapping): the step's own lines, not those of a warm-up loop or a set-up call that a few of its recurrences
    overlap (timm's ViT: 3 warm-up calls and 30 timed ones of one block, from two loops)."""
    starts, ends = (np.asarray(w, dtype=np.int64) for w in windows)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    s = trace.sql("SELECT file, line, ts_ns FROM line_stamps WHERE pass_id = ? AND ts_ns >= ? AND ts_ns < ?",
                  [pass_id, int(starts.min()), int(ends.max())])
    ts = np.asarray(s["ts_ns"], dtype=np.int64)
    w = np.searchsorted(starts, ts, side="right") - 1
    inside = (w >= 0) & (ts < ends[np.clip(w, 0, None)])
    # each (window, line) once, then per line the windows it ran in
    ran = Counter((str(f), int(ln)) for _, f, ln in {(int(i), str(f), int(ln)) for i, f, ln in
                                                     zip(w[inside], s["file"][inside], s["line"][inside])})
    common = [key for key, n in ran.items() if 2 * n >= starts.size]
    return np.array([f for f, _ in common], dtype=str), np.array([ln for _, ln in common], dtype=np.int64)


def iteration_lines(trace: Trace, pass_id: int, start_ns: int, end_ns: int,
                    windows: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[str, str, Note | None]:
    """The script's own lines run inside one iteration [start_ns, end_ns) of the pass: (spans, where from, why unknown).
    From the pass's line stamps (the detail run, Python 3.12+: only the script's own lines are stamped), else from the
    source lines of its CUDA calls (`--launch-sources`: the user's line that made each call); a typed reason where
    neither is recorded, or none falls inside the iteration. With `windows` (all the region's iterations: starts,
    ends), the stamped lines run in at least half of them, where there are such lines."""
    script = script_path(trace)
    if trace.rows("SELECT count(*) FROM (SELECT 1 FROM line_stamps WHERE pass_id = ? LIMIT 1)", [pass_id])[0][0]:
        if windows is not None and np.asarray(windows[0]).size > 1:
            files, lines = _common_lines(trace, pass_id, windows)
            if (span := _span(files, lines, script)):
                return span, "line_stamps", None
        s = trace.sql("SELECT file, line FROM line_stamps WHERE pass_id = ? AND ts_ns >= ? AND ts_ns < ?", [pass_id, start_ns, end_ns])
        span = _span(s["file"].astype(str), s["line"].astype(np.int64), script)
        return (span, "line_stamps", None) if span else ("", "", note("lines_not_in_iteration", recorded="line_stamps"))
    if trace.rows("SELECT count(*) FROM (SELECT 1 FROM api_calls WHERE pass_id = ? AND source <> '' LIMIT 1)", [pass_id])[0][0]:
        rows = trace.rows("SELECT DISTINCT source FROM api_calls WHERE pass_id = ? AND source <> '' AND start_ns >= ? AND start_ns < ?",
                          [pass_id, start_ns, end_ns])
        parsed = [m for (src,) in rows if (m := _SOURCE.fullmatch(str(src))) is not None]  # per distinct source line
        files = np.array([m.group(1) for m in parsed], dtype=str)
        span = _span(files, np.array([int(m.group(2)) for m in parsed], dtype=np.int64), script)
        return (span, "launch_sources", None) if span else ("", "", note("lines_not_in_iteration", recorded="launch_sources"))
    return "", "", note("lines_unrecorded")


def advise(trace: Trace, pass_id: int, start_ns: int, end_ns: int, kernel_names: Sequence[str], basis: Note, graph_id: int,
           breakers: Sequence[CaptureBreaker], torch_program: bool,
           windows: tuple[np.ndarray, np.ndarray] | None = None) -> CaptureAdvice:
    """The advice for one region: its lines (iteration_lines over its iterations `windows`, else its representative
    iteration [start_ns, end_ns)) and the API by the module doc's rules (PyTorch's, or CuPy's), from the iteration's
    kernel names, the region's basis (its shape) and its capture breakers; each reason a typed note."""
    lines, lines_from, unknown = iteration_lines(trace, pass_id, start_ns, end_ns, windows)
    reasons: list[Note] = []
    api = ""
    if not torch_program:
        cupy = [n for n in kernel_names if n.startswith(CUPY_MARK)]
        if cupy:
            api = API_CUPY
            reasons.append(note("advice_cupy", kernels=len(cupy), of=len(kernel_names), example=min(cupy, key=len)))
        else:
            reasons.append(note("advice_not_pytorch"))
    else:
        backward = _marked(kernel_names, BACKWARD_MARKS)
        optimizer = _marked(kernel_names, OPTIMIZER_MARKS) if backward else []
        shapes = basis.get("shapes")
        if isinstance(shapes, int) and shapes > 1:
            api = API_PER_SHAPE
            reasons.append(note("advice_shapes", shape=basis.get("shape"), shapes=shapes))
        elif backward and optimizer:
            api = API_WHOLE_STEP
        elif backward:
            api = API_GRAPHED_CALLABLES
        else:
            api = API_STEP
            reasons.append(note("advice_forward_only", kernels=len(kernel_names)))
        if backward:
            # the example: the shortest name, the likeliest to read as what it is once shortened
            reasons.append(note("advice_backward", kernels=len(backward), example=min(backward, key=len)))
            reasons.append(note("advice_optimizer", kernels=len(optimizer), example=min(optimizer, key=len)) if optimizer
                           else note("advice_no_optimizer"))
    if graph_id:
        reasons.append(note("advice_program_graphs_it", graph_id=graph_id))
    if breakers:
        values: dict[str, NoteValue] = {"breakers": len(breakers), "kinds": tuple(sorted({b.kind for b in breakers})),
                                        "apis": tuple(b.api or b.kind for b in breakers), "wheres": tuple(b.where for b in breakers)}
        reasons.append(Note("advice_move_out_first", values))
    return CaptureAdvice(lines=lines, lines_from=lines_from, lines_unknown=unknown, api=api, reasons=tuple(reasons))
