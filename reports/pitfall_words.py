"""The words of the diagnostics (analyzers.pitfalls, analyzers.torch_diagnostics): a pitfall's title,
evidence and advice, from its facts (a Note of its numbers and names). The terminal, the page and the
JSON word a pitfall here, so they say the same thing."""

from __future__ import annotations

from collections.abc import Callable

from graphmode.analyzers.notes import Note, NoteValue
from graphmode.analyzers.results import Pitfall
from graphmode.reports.units import diagnostic_us as _us

# CUresult / cudaError_t values of a broken stream capture (identical in the driver and the runtime).
CAPTURE_ERRORS: dict[int, str] = {
    900: "stream capture unsupported: operation not permitted when stream is capturing",
    901: "stream capture invalidated by an earlier error",
    902: "stream capture merge: two independent captures merged",
    903: "stream capture unmatched: capture did not begin on this stream",
    904: "stream capture unjoined: a forked stream was not joined back",
    905: "stream capture isolation: a dependency crosses the capture boundary",
    906: "implicit stream capture: the legacy default stream was used during capture",
    907: "captured event: an event recorded in the capture was queried or synchronised",
    908: "stream capture wrong thread: another thread broke a global-mode capture",
}

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


def _f(n: Note, key: str) -> float:
    v = n[key]
    assert isinstance(v, (int, float)), (n.kind, key, v)
    return float(v)


def _opt(n: Note, key: str) -> float | None:
    v = n.get(key)
    return float(v) if isinstance(v, (int, float)) else None


def _t(n: Note, key: str) -> tuple[NoteValue, ...]:
    v = n[key]
    assert isinstance(v, tuple), (n.kind, key, v)
    return v


def _s(count: float, more_than: float = 1) -> str:
    return "s" if count > more_than else ""


def _who(graph_id: NoteValue) -> str:
    return f"graph {graph_id}" if graph_id else "the graph"


def capture_advice(code: int, name: str, category: str) -> str:
    if code == 900 and (category == "sync" or "Synchronize" in name or "Query" in name):
        return ("A host synchronisation inside the captured region: move .item(), .cpu(), .tolist(), printing a CUDA tensor, "
                "torch.cuda.synchronize() or stream/event synchronize out of it (read results after the replay).")
    if code == 900 and category == "memory":
        return ("Memory allocated during capture: allocate the static inputs and outputs before capturing; warm the step up "
                "eagerly first (torch.cuda.graph runs warm-up on a side stream so the caching allocator has its blocks).")
    if code == 900 and category == "memcpy":
        return "A blocking copy cannot be captured: use an async copy on the capturing stream (pinned host memory) or move it out."
    advice = {
        904: "Join every forked stream back: record an event on the side stream and make the capturing stream wait on it before ending capture.",
        906: "Use a non-default stream for all captured work (torch.cuda.graph does; CuPy: `with stream:`), never the legacy default stream.",
        907: "Do not query or synchronise an event recorded during capture; order work with stream waits on the event instead.",
        908: ("Another thread made a CUDA call during a global-mode capture: capture in thread-local mode "
              "(torch: capture_error_mode='thread_local', cudaStreamCaptureModeThreadLocal) or keep other threads off CUDA meanwhile."),
    }.get(code)
    if advice:
        return advice
    return ("Warm the step up eagerly before capturing (lazy initialisation such as cuBLAS handles, allocator growth or autotuning "
            "must not happen during capture) and keep host synchronisations and allocations out of the captured region.")


def skip_advice(reason: str, synchronising_op: bool) -> str:
    """What to do about a cudagraph skip of this reason (`synchronising_op`: the incompatible op syncs with the host)."""
    if reason == "mutated_inputs":
        return ("The compiled function writes into a tensor it was given that is not a parameter, a buffer or an earlier graph "
                "output (a static KV cache updated in place, an in-place op on an argument). Make the tensor static: register it "
                "as a module buffer, or call torch._dynamo.mark_static_address(t) on it before the first call (Hugging Face's "
                "StaticCache does this); or return the new value instead of writing in place.")
    if reason == "cpu_device":
        return ("Move the CPU tensor named in the message to the GPU once, before the loop (.to('cuda')), or pass a plain Python "
                "number; a CUDA graph cannot contain CPU work, so the whole function runs eagerly.")
    if reason == "multiple_devices":
        return "Keep every tensor of the compiled function on one GPU (move inputs and parameters with .to(device) before calling it)."
    if reason == "incompatible_ops" and synchronising_op:
        return ("A host synchronisation (.item(), .tolist(), nonzero, a data-dependent shape) inside the compiled function: a graph "
                "cannot stop for the host. Keep the value on the GPU (torch.where instead of a Python branch on it), or move the "
                "synchronising line out of the compiled function.")
    if reason in ("incompatible_ops", "control_flow"):
        return ("Move the op named in the message out of the compiled function, or set torch._inductor.config.graph_partition = True "
                "so that Inductor graphs the parts around it instead of skipping the whole function.")
    if reason == "rerecord_limit":
        return ("An input's address or a live graph output changed between calls (reason in the message): copy new data into the "
                "same input tensors instead of passing new ones, and call torch.compiler.cudagraph_mark_step_begin() at the start "
                "of each step.")
    if reason == "dynamic_shapes":
        return "Pad or bucket the inputs to a few fixed shapes, or set torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = False."
    if reason == "cpp_wrapper":
        return "Turn off torch._inductor.config.cpp_wrapper for this model to get CUDA graphs."
    return "Read PyTorch's message above; TORCH_LOGS=cudagraphs prints what PyTorch decided for each compiled function."


# --- evidence: the measured numbers in one or two sentences ---

def _capture_failed_unrecorded(n: Note) -> str:
    if n.get("untraced_capture"):
        return ((f"The script raised {n['raised']}. " if n["raised"] else "")
                + "graphmode's one run made this capture with CUPTI detached so as not to slow "
                "it, so the call that broke it was not recorded; GRAPHMODE_UNTRACED_CAPTURE=0 records it.")
    return f"The script raised {n['raised']} (no failing CUDA call was recorded)."


def _capture_failed(n: Note) -> str:
    calls, code = _f(n, "calls"), int(_f(n, "code"))
    evidence = (f"{n['call']} returned {code} ({CAPTURE_ERRORS[code]}) {calls:.0f} time{_s(calls)}, "
                f"first {_us(_f(n, 'first_at_ns'))} into the run")
    begun = _opt(n, "capture_begun_at_ns")
    if begun is not None:
        evidence += f", inside the capture begun at {_us(begun)}" + (f" by {n['capture_begun_by']}" if n["capture_begun_by"] else "")
    evidence += "."
    invalidated = _f(n, "invalidated")
    if invalidated:
        evidence += f" {invalidated:.0f} later call{_s(invalidated)} returned 901 (capture invalidated)."
    if n["raised"]:
        evidence += f" The script raised {n['raised']}" + (f" at {n['raised_at']}." if n["raised_at"] else ".")
    return evidence


def _repeated_instantiation(n: Note) -> str:
    kernels, inst, graphs = _f(n, "kernels"), _f(n, "instantiations"), _f(n, "graphs")
    names = ", ".join(map(str, _t(n, "kernel_names"))) + (" …" if kernels > 3 else "")
    ids = ", ".join(map(str, _t(n, "graph_ids"))) + (" …" if graphs > 6 else "")
    cost, run = _f(n, "cost_ns"), _f(n, "run_ns")
    evidence = (f"The same kernel sequence ({kernels:.0f} kernel{'s' if kernels != 1 else ''}: {names}) was instantiated "
                f"{inst:.0f} times from {graphs:.0f} graph{_s(graphs)} (ids {ids}); the {inst - 1:.0f} repeat{_s(inst, 2)} cost "
                f"{_us(cost)} (capture/build {_us(_f(n, 'build_ns'))} + instantiate {_us(_f(n, 'instantiate_ns'))} + upload "
                f"{_us(_f(n, 'upload_ns'))})")
    return evidence + (f", {100 * cost / run:.1f}% of the run." if run > 0 else ".")


def _graph_slower(n: Note) -> str:
    graph, eager = _f(n, "graph_ns"), _f(n, "eager_ns")
    return (f"A replay takes {_us(graph)} (median of {n['graph_n']}) vs {_us(eager)} (median of {n['eager_n']}) per eager "
            f"iteration: {_us(graph - eager)} slower, so the one-time cost of {_us(_opt(n, 'one_time_ns'))} is never paid back.")


_BASIS = {"graph_periods": "this graph's own eager and replay periods", "analysis": "break-even from the analysis"}


def _never_paid_back(n: Note) -> str:
    eager, graph = _f(n, "eager_ns"), _f(n, "graph_ns")
    return (f"It was replayed {n['replays']} times; saving {_us(eager - graph)} per replay (eager {_us(eager)} vs replay "
            f"{_us(graph)}, medians) it needs {_f(n, 'replays_needed'):,.0f} replays to pay back its one-time cost of "
            f"{_us(_opt(n, 'one_time_ns'))} ({_BASIS[str(n['basis'])]}): the run lost {_us(_f(n, 'lost_ns'))} net.")


def _gaps_between_replays(n: Note) -> str:
    evidence = (f"Between consecutive replays of graph {n['graph_id']} the GPU had none of its work for a median "
                f"{_us(_f(n, 'idle_ns'))} per replay (its GPU work: {_us(_f(n, 'busy_ns'))}), over {n['intervals']} replay "
                "intervals; ")
    top = [f"{c} ×{k}" + (f" at {s}" if s else "") for c, k, s in zip(_t(n, "sync_calls"), _t(n, "sync_counts"), _t(n, "sync_sources"))]
    evidence += (f"{n['with_sync']} of them hold a synchronising call ({'; '.join(top)}); " if n["with_sync"] else
                 "none holds a synchronising call, so it is host work; ")
    saved, potential = _opt(n, "saved_ns"), _opt(n, "potential_ns")
    if saved is not None and potential is not None:
        return evidence + (f"a replay saves {_us(saved)} against eager; without the gaps it could save {_us(potential)}: the gaps "
                           f"eat {100 * _f(n, 'idle_ns') / potential:.0f}% of it.")
    return evidence + "there is no eager baseline to compare with; the GPU is idle longer than it works between replays."


def _cudagraph_skipped(n: Note) -> str:
    count = _f(n, "count")
    evidence = f"PyTorch: '{n['message']}'" + (f" ({count:.0f} times)" if count > 1 else "") + "."
    if n["code"]:
        evidence += f" The line it points to: `{n['code']}`."
    if n["called_from"]:
        evidence += f" Logged while {n['called_from']} ran."
    share = _opt(n, "steady_share")
    if share is not None:
        evidence += f" In the steady state {100 * share:.0f}% of the kernels ran inside graphs."
    return evidence


def _rerecorded_per_shape(n: Note) -> str:
    shapes = _t(n, "shapes")
    startup = _opt(n, "startup_ns")
    cost_text = f"; capturing and instantiating them took {_us(startup)}" if startup is not None else ""
    evidence = (f"PyTorch recorded {n['recordings']} CUDA graphs for '{n['function']}', one per input shape "
                f"({'; '.join(map(str, shapes[:4]))}{' …' if len(shapes) > 4 else ''}){cost_text}.")
    if _f(n, "compiles") > 1:
        evidence += f" Dynamo compiled it {n['compiles']} times (ids {', '.join(map(str, _t(n, 'compile_ids')))})."
    if n["pytorch_warning"]:
        evidence += f" PyTorch warned: '{n['pytorch_warning']}'"
    return evidence


def _output_overwritten(n: Note) -> str:
    evidence = ("The script raised RuntimeError: accessing a tensor output of CUDAGraphs that a later replay overwrote. "
                "cudagraph trees reuse the memory of a graph's outputs at the next replay of the same graph")
    evidence += f"; the tensor was produced at {n['produced_at']}" if n["produced_at"] else ""
    return evidence + (f" and read at {n['read_at']}." if n["read_at"] else ".")


EVIDENCE: dict[str, Callable[[Note], str]] = {
    "capture_failed_unrecorded": _capture_failed_unrecorded,
    "capture_failed": _capture_failed,
    "repeated_instantiation": _repeated_instantiation,
    "graph_slower": _graph_slower,
    "never_paid_back": _never_paid_back,
    "gaps_between_replays": _gaps_between_replays,
    "cudagraph_skipped": _cudagraph_skipped,
    "rerecorded_per_shape": _rerecorded_per_shape,
    "cudagraph_rerecorded": lambda n: f"PyTorch recorded the same function again because: {'; '.join(map(str, _t(n, 'reasons')))}.",
    "output_overwritten": _output_overwritten,
}

TITLES: dict[str, Callable[[Note], str]] = {
    "capture_failed_unrecorded": lambda n: "A stream capture failed",
    "capture_failed": lambda n: f"Stream capture broken by {n['call']}",
    "repeated_instantiation": lambda n: f"Graph re-instantiated {_f(n, 'instantiations') - 1:.0f} time{_s(_f(n, 'instantiations'), 2)}",
    "graph_slower": lambda n: f"A replay of {_who(n['graph_id'])} is slower than the eager work it replaced",
    "never_paid_back": lambda n: f"{_who(n['graph_id']).capitalize()} was not replayed often enough to pay back its cost",
    "gaps_between_replays": lambda n: f"Synchronisation or host work between replays of graph {n['graph_id']}",
    "cudagraph_skipped": lambda n: f"torch.compile skipped CUDA graphs: {SKIP_TITLES[str(n['reason'])]}",
    "rerecorded_per_shape": lambda n: f"'{n['function']}' was recorded again for each new input shape",
    "cudagraph_rerecorded": lambda n: f"'{n['function']}' was re-recorded {n['rerecords']} time{_s(_f(n, 'rerecords'))}",
    "output_overwritten": lambda n: "An output of a CUDA graph was read after the next replay overwrote it",
}

ADVICE: dict[str, Callable[[Note], str]] = {
    "capture_failed_unrecorded": lambda n: capture_advice(0, "", ""),
    "capture_failed": lambda n: capture_advice(int(_f(n, "code")), str(n["call"]), str(n["category"])),
    "repeated_instantiation": lambda n: (
        "Capture once and replay: keep the instantiated graph and copy new inputs into its static input buffers. For new "
        "shapes, pad or bucket inputs to a few fixed shapes (torch.compile mode='reduce-overhead' re-records per shape); "
        "to change kernel parameters, update the executable graph (cudaGraphExecUpdate) instead of instantiating again."),
    "graph_slower": lambda n: (
        "Graphs remove launch overhead; this work is not launch-bound, or the graph does extra work (copies into static "
        "buffers, memset nodes) or waits between replays (see the other diagnostics). Compare GPU busy time per iteration "
        "and the per-kernel table (record with --detail node); keep this region eager if the graph brings nothing."),
    "never_paid_back": lambda n: (
        "Graph a region that runs many times (the training or decode loop, not a one-off call), capture it once and keep "
        "replaying it; or leave it eager. Instantiate and upload early, off the critical path, so the one-time cost is hidden."),
    "gaps_between_replays": lambda n: (
        "Keep the GPU fed: do not synchronise after every replay (.item(), .cpu(), torch.cuda.synchronize(), blocking copies); "
        "keep results on the GPU and read them every N steps, copy with non_blocking=True into pinned memory, and move host "
        "work (data loading, logging) off the replay loop so the next replay is launched while the GPU works."),
    "cudagraph_skipped": lambda n: skip_advice(str(n["reason"]), bool(n["synchronising_op"])),
    "rerecorded_per_shape": lambda n: (
        "Each new shape costs a capture, an instantiation and a memory pool share. Pad or bucket inputs to a few fixed "
        "shapes (e.g. batch sizes 1, 2, 4, 8 …) so the graphs are reused; or, where shapes never repeat, compile that "
        "function without graphs (mode='max-autotune-no-cudagraphs')."),
    "cudagraph_rerecorded": lambda n: (
        "Keep inputs at fixed addresses (copy new data into the same tensors), do not keep outputs of one step alive into "
        "the next (clone what you keep), and call torch.compiler.cudagraph_mark_step_begin() at the start of each step."),
    "output_overwritten": lambda n: (
        "Clone what you keep across calls of the compiled function (out = model(x).clone(), e.g. the logits or the cache you "
        "carry to the next step), or call torch.compiler.cudagraph_mark_step_begin() before each call that starts a new step, "
        "so PyTorch knows the previous outputs are no longer needed."),
}


def title(p: Pitfall) -> str:
    return TITLES[p.facts.kind](p.facts)


def evidence(p: Pitfall) -> str:
    """One or two plain sentences with the measured numbers."""
    return EVIDENCE[p.facts.kind](p.facts)


def advice(p: Pitfall) -> str:
    return ADVICE[p.facts.kind](p.facts)


# What to do about each kind of capture breaker (analyzers.predict: CaptureBreaker.kind).
BREAKER_ADVICE: dict[str, str] = {
    "sync": "a synchronization inside the region: stream capture forbids it (cudaErrorStreamCaptureUnsupported); move it after the captured region",
    "query": "cudaStreamQuery/cudaEventQuery inside the region: not permitted while a stream captures",
    "host_read": "a synchronous device-to-host copy: the host reads GPU data inside the region (e.g. .item(), .cpu()); a graph cannot contain it, keep it outside the captured region",
    "blocking_copy": "a synchronous copy: not capturable; use the Async variant on the captured stream",
    "blocking_memset": "a synchronous memset: not capturable; use the Async variant on the captured stream",
    "allocation": "a device or pinned allocation inside the region: not permitted during capture; allocate before capturing (or cudaMallocAsync)",
    "free": "a free inside the region: not permitted during capture; free after the graph's last replay (or cudaFreeAsync)",
    "uncaptured_stream": "work launched on a stream that has not joined the capture: it would run eagerly, outside the graph; make the stream wait on an event recorded on the captured stream first",
    "unjoined_stream": "a stream forked into the capture is not joined back into the origin stream before the end (cudaErrorStreamCaptureUnjoined); record an event on it and make the origin stream wait on it",
    "external_event": "a wait on an event recorded before the region: inside a capture this dependency crosses the capture boundary (cudaErrorStreamCaptureIsolation); record the event inside the region",
}
