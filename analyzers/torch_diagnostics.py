"""Diagnostics of PyTorch's graph mode: why torch.compile ran code without graphs, re-recorded it, or broke.

Registered in analyzers/pitfalls.py (`find_pitfalls`); the rules are in docs/metrics.md ("Diagnostics").
Each reads what PyTorch itself said (meta.torch, tracer.torch_hooks) or the exception the script
raised (meta.script.exception), and names the line to change:

- `output_overwritten` (error): the script died reading a cudagraph-tree output that a later replay
  had overwritten; `where` is the line that read it, the evidence names the line that produced it;
- `cudagraph_skipped` (warning): Inductor ran a compiled function eagerly, for the reason PyTorch gave
  (mutated inputs, a CPU tensor, an op that cannot be captured such as a host synchronisation, ...);
  `where` is the line PyTorch's stack trace points to;
- `rerecorded_per_shape` (warning): one compiled function recorded a graph per input shape;
- `cudagraph_rerecorded` (warning): PyTorch recorded a function again because an input moved or an
  earlier output was still alive.
"""

from __future__ import annotations

import re

from graphmode.analyzers.coverage_results import CudagraphSkip, TorchGraphs
# one way to print a duration in the diagnostics; one definition of "the script's own line"
from graphmode.analyzers.diagnostics_common import _us, _user_frame
from graphmode.analyzers.results import Pitfall, TraceAnalysis
from graphmode.tracer.store import Trace

OVERWRITTEN = "overwritten by a subsequent run"
_LOCATION = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\s.]+)')
# ops whose incompatibility with graphs means a host synchronisation inside the compiled region
_SYNC_OPS = ("_local_scalar_dense", "item", "nonzero", "_assert_async", "masked_select")

SKIP_TITLES = {
    "mutated_inputs": "it writes into an input that PyTorch does not manage",
    "cpu_device": "a CPU tensor reaches the compiled region",
    "multiple_devices": "its tensors live on more than one device",
    "incompatible_ops": "it contains an op that cannot be captured",
    "rerecord_limit": "it had to be re-recorded too often",
    "dynamic_shapes": "its inputs have symbolic shapes",
    "control_flow": "it uses data-dependent control flow on the GPU",
    "cpp_wrapper": "the C++ wrapper is enabled",
    "other": "PyTorch gave a reason",
}


def skip_advice(skip: CudagraphSkip) -> str:
    low = skip.message.lower()
    if skip.reason == "mutated_inputs":
        return ("The compiled function writes into a tensor it was given that is not a parameter, a buffer or an earlier graph "
                "output (a static KV cache updated in place, an in-place op on an argument). Make the tensor static: register it "
                "as a module buffer, or call torch._dynamo.mark_static_address(t) on it before the first call (Hugging Face's "
                "StaticCache does this); or return the new value instead of writing in place.")
    if skip.reason == "cpu_device":
        return ("Move the CPU tensor named in the message to the GPU once, before the loop (.to('cuda')), or pass a plain Python "
                "number; a CUDA graph cannot contain CPU work, so the whole function runs eagerly.")
    if skip.reason == "multiple_devices":
        return "Keep every tensor of the compiled function on one GPU (move inputs and parameters with .to(device) before calling it)."
    if skip.reason == "incompatible_ops" and any(op in low for op in _SYNC_OPS):
        return ("A host synchronisation (.item(), .tolist(), nonzero, a data-dependent shape) inside the compiled function: a graph "
                "cannot stop for the host. Keep the value on the GPU (torch.where instead of a Python branch on it), or move the "
                "synchronising line out of the compiled function.")
    if skip.reason in ("incompatible_ops", "control_flow"):
        return ("Move the op named in the message out of the compiled function, or set torch._inductor.config.graph_partition = True "
                "so that Inductor graphs the parts around it instead of skipping the whole function.")
    if skip.reason == "rerecord_limit":
        return ("An input's address or a live graph output changed between calls (reason in the message): copy new data into the "
                "same input tensors instead of passing new ones, and call torch.compiler.cudagraph_mark_step_begin() at the start "
                "of each step.")
    if skip.reason == "dynamic_shapes":
        return "Pad or bucket the inputs to a few fixed shapes, or set torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = False."
    if skip.reason == "cpp_wrapper":
        return "Turn off torch._inductor.config.cpp_wrapper for this model to get CUDA graphs."
    return "Read PyTorch's message above; TORCH_LOGS=cudagraphs prints what PyTorch decided for each compiled function."


def _skipped(tg: TorchGraphs, steady_share: float | None) -> list[Pitfall]:
    out = []
    for s in tg.skips:
        evidence = f"PyTorch: '{s.message}'" + (f" ({s.count} times)" if s.count > 1 else "") + "."
        if s.code:
            evidence += f" The line it points to: `{s.code}`."
        if s.called_from and s.called_from != s.where:
            evidence += f" Logged while {s.called_from} ran."
        if steady_share is not None:
            evidence += f" In the steady state {100 * steady_share:.0f}% of the kernels ran inside graphs."
        out.append(Pitfall("cudagraph_skipped", "warning", f"torch.compile skipped CUDA graphs: {SKIP_TITLES[s.reason]}",
                           evidence, s.where or s.called_from, skip_advice(s)))
    return out


def _graph_startup(trace: Trace, pass_id: int | None) -> dict[int, float]:
    if pass_id is None:
        return {}
    rows = trace.rows("SELECT graph_id, sum(end_ns - start_ns)::DOUBLE FROM graph_events WHERE pass_id = ? "
                      "AND event IN ('capture', 'build', 'instantiate', 'upload') GROUP BY graph_id", [pass_id])
    return {int(g): float(ns) for g, ns in rows}


def _rerecorded(tg: TorchGraphs, startup: dict[int, float]) -> list[Pitfall]:

    out = []
    for f in tg.functions:
        shapes = list(dict.fromkeys(f.shapes))
        where = f.called_from[0] if f.called_from else ""
        cost = sum(startup.get(g, 0.0) for g in f.graph_ids)
        cost_text = f"; capturing and instantiating them took {_us(cost)}" if f.graph_ids else ""
        if len(shapes) > 1:
            evidence = (f"PyTorch recorded {f.recordings} CUDA graphs for '{f.name}', one per input shape "
                        f"({'; '.join(shapes[:4])}{' …' if len(shapes) > 4 else ''}){cost_text}.")
            if len(f.compile_ids) > 1:
                evidence += f" Dynamo compiled it {len(f.compile_ids)} times (ids {', '.join(f.compile_ids[:6])})."
            if tg.distinct_sizes_warning:
                evidence += f" PyTorch warned: '{tg.distinct_sizes_warning}'"
            out.append(Pitfall(
                "rerecorded_per_shape", "warning", f"'{f.name}' was recorded again for each new input shape", evidence, where,
                "Each new shape costs a capture, an instantiation and a memory pool share. Pad or bucket inputs to a few fixed "
                "shapes (e.g. batch sizes 1, 2, 4, 8 …) so the graphs are reused; or, where shapes never repeat, compile that "
                "function without graphs (mode='max-autotune-no-cudagraphs').",
                cost_ns=cost if f.graph_ids else None))
        if f.rerecords:
            out.append(Pitfall(
                "cudagraph_rerecorded", "warning", f"'{f.name}' was re-recorded {f.rerecords} time{'s' if f.rerecords > 1 else ''}",
                f"PyTorch recorded the same function again because: {'; '.join(f.rerecord_reasons[:3])}.", where,
                "Keep inputs at fixed addresses (copy new data into the same tensors), do not keep outputs of one step alive into "
                "the next (clone what you keep), and call torch.compiler.cudagraph_mark_step_begin() at the start of each step."))
    return out


def _overwritten(trace: Trace) -> list[Pitfall]:
    exc = (trace.meta.get("script") or {}).get("exception") or {}
    messages = [str(exc.get("message", ""))] + [str(c.get("message", "")) for c in exc.get("chain") or []]
    msg = next((m for m in messages if OVERWRITTEN in m), "")
    if not msg:
        return []

    where = _user_frame(trace)
    made = _LOCATION.search(msg)
    produced = f"{made['file']}:{made['line']} {made['func']}" if made else ""
    evidence = ("The script raised RuntimeError: accessing a tensor output of CUDAGraphs that a later replay overwrote. "
                "cudagraph trees reuse the memory of a graph's outputs at the next replay of the same graph")
    evidence += f"; the tensor was produced at {produced}" if produced else ""
    evidence += f" and read at {where}." if where else "."
    return [Pitfall(
        "output_overwritten", "error", "An output of a CUDA graph was read after the next replay overwrote it", evidence, where,
        "Clone what you keep across calls of the compiled function (out = model(x).clone(), e.g. the logits or the cache you "
        "carry to the next step), or call torch.compiler.cudagraph_mark_step_begin() before each call that starts a new step, "
        "so PyTorch knows the previous outputs are no longer needed.")]


def torch_pitfalls(trace: Trace, analysis: TraceAnalysis) -> list[Pitfall]:
    """The PyTorch graph-mode diagnostics of a trace (none for programs without torch)."""
    found = _overwritten(trace)
    tg: TorchGraphs | None = getattr(analysis, "torch_graphs", None)
    if tg is None:
        return found
    coverage = getattr(analysis, "coverage", None)
    steady = next((p for p in coverage.phases if p.name == "steady state"), None) if coverage is not None else None
    found += _skipped(tg, steady.kernel_share if steady is not None else None)
    found += _rerecorded(tg, _graph_startup(trace, analysis.traced_pass_id))
    return found

