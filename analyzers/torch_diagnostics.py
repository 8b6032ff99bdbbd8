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
# one definition of "the script's own line"
from graphmode.analyzers.diagnostics_common import _user_frame
from graphmode.analyzers.notes import note
from graphmode.analyzers.results import Pitfall, TraceAnalysis
from graphmode.tracer.store import Trace

OVERWRITTEN = "overwritten by a subsequent run"
_LOCATION = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\s.]+)')
# ops whose incompatibility with graphs means a host synchronisation inside the compiled region
_SYNC_OPS = ("_local_scalar_dense", "item", "nonzero", "_assert_async", "masked_select")

def synchronising_op(skip: CudagraphSkip) -> bool:
    """Whether an 'incompatible op' skip names an op that synchronises with the host (.item(), nonzero, ...)."""
    low = skip.message.lower()
    return skip.reason == "incompatible_ops" and any(op in low for op in _SYNC_OPS)


def _skipped(tg: TorchGraphs, steady_share: float | None) -> list[Pitfall]:
    out = []
    for s in tg.skips:
        facts = note("cudagraph_skipped", reason=s.reason, message=s.message, count=s.count, code=s.code,
                     called_from=s.called_from if s.called_from != s.where else "", steady_share=steady_share,
                     synchronising_op=synchronising_op(s))
        out.append(Pitfall("cudagraph_skipped", "warning", facts, s.where or s.called_from))
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
        cost = sum(startup.get(g, 0.0) for g in f.graph_ids) if f.graph_ids else None
        if len(shapes) > 1:
            facts = note("rerecorded_per_shape", function=f.name, recordings=f.recordings, shapes=tuple(shapes[:5]),
                         startup_ns=cost, compiles=len(f.compile_ids), compile_ids=tuple(f.compile_ids[:6]),
                         pytorch_warning=tg.distinct_sizes_warning or "")
            out.append(Pitfall("rerecorded_per_shape", "warning", facts, where, cost_ns=cost))
        if f.rerecords:
            facts = note("cudagraph_rerecorded", function=f.name, rerecords=f.rerecords, reasons=tuple(f.rerecord_reasons[:3]))
            out.append(Pitfall("cudagraph_rerecorded", "warning", facts, where))
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
    return [Pitfall("output_overwritten", "error", note("output_overwritten", produced_at=produced, read_at=where), where)]


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

