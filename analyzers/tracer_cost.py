"""What the one traced run's own tracing added to its figures, taken off (issue 29; docs/metrics.md, "What tracing
adds, taken off").

`graphmode run` traces a script once (tracer.run_configs.single_config). Its records cost the program little per launch
but not nothing: on the H200 a PyTorch launch took 6.2 us more with the run's CUPTI session attached (a cuDNN call
12.5 us), and a torch.cuda.graph capture 1.9 ms more per graph and 12.6 us per captured kernel (`graphmode calibrate
--launch-only`: tracer.launch_probes untraced and --traced, fitted by analyzers.costmodel.fit_tracer_costs). A
CPU-bound loop of a few hundred launches a step is slowed by milliseconds.

So, where the cost model calibrated them and the pass was recorded by that very configuration:

- a CPU-bound iteration (its period set by the launches, not by the GPU) loses the tracer's cost of each kernel
  launched in its period, per kernel by the launcher that launched it (analyzers.counterfactual.launcher_of): its
  period becomes max(period - extra, its own GPU busy time), `timed_by` 'corrected', the traced figure kept in
  `traced_work`;
- a graph captured in the pass loses per-graph + per-node x nodes from its one-time cost (GraphCost.tracer_correction_ns);
- a CPU-bound iteration also loses what the run's stamps of the user's lines cost in its period (the number of stamps
  there x the cost of one, which the run measures after the program: `stamp_cost_ns` in its meta.runs entry), and
  what PyTorch's allocator history cost it (its actions there x the cost of one, measured likewise:
  `allocator_history.entry_cost_ns`).

The calibration is per configuration: the one traced run of now (single_config: API records of launches too, since
session 19) under CostModel.tracer, that of sessions 17-18 (SPARSE_SINGLE) under CostModel.tracer_sparse.

GPU-bound iterations and replays keep their figures: the tracer does not slow the GPU (replays measured 1.00-1.01x).
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers.costmodel import (TRACER_CAPTURE_GRAPH, TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_KEYS,
                                           TRACER_CAPTURE_NODE, TRACER_CAPTURE_NODE_COPIED, CostModel, Spread)
from graphmode.analyzers.counterfactual import INDUCTOR_KERNEL, framework_of, launcher_of
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.stamps import StampsOf, line_stamps
from graphmode.analyzers.torch_windows import run_entry
from graphmode.tracer.run_configs import SPARSE_SINGLE, single_config
from graphmode.tracer.store import Trace

CORRECTED = "corrected"  # IterationTable.timed_by of a period the tracer's cost was taken off

# A pass whose graph replays were recorded node by node (RunConfig.graph_trace False: `graphmode.trace()`, attached to
# a program whose graphs may predate it; the one run attached again after an untraced window): a timm ViT-small's
# 150-node graph replayed 4.7-4.9% slower than untraced in the same process, 0.5 us a node (benchmarks/notes/s22, call
# 4; GRAPH_TRACE's one record a replay: 1.00-1.02x); against the programs' untraced processes, 1.00-1.12x on the 46
# graphs of 25 traces of sessions 25-27, the transformers decode step's short kernels the most (1.106-1.115x;
# benchmarks/results/one_run/one_run_ratios.jsonl, held by tests/test_one_run.py). Until session 27: 0.05; until session
# 36, 0.12, when a CuPy chain's 32-node graph of few-microsecond kernels read 1.140x and 1.141x (77.5 us against 67.9 us
# untraced, 0.3 us a node; benchmarks/notes/s36)
NODE_RECORDS_REPLAY_SLOWDOWN = 0.15


def replays_from_nodes(trace: Trace, pass_id: int) -> bool:
    """Whether the pass recorded its graph replays from their nodes' records (RunConfig.graph_trace False, or a one run
    attached again after an untraced window: tracer.untraced_windows)."""
    entry = run_entry(trace, pass_id)
    return (entry.get("config") or {}).get("graph_trace") is False or entry.get("replays_from_nodes") is True


# What of a run's configuration (meta.runs[].config) the tracer's cost depends on: a pass is corrected only where
# these are the one traced run's, under which the calibration's traced probes ran (tracer.launch_probes --traced)
_COST_FIELDS = ("detail", "api_filter", "callbacks", "node_events", "gpu_kinds", "launch_sources", "profile")


@dataclass(frozen=True)
class TracerCorrection:
    """The calibrated costs a pass's figures lose (ns): per launcher, per eagerly launched kernel; per captured
    graph and per captured kernel (None: not calibrated); per stamp of a user's line, at the pass's stamps (`stamps`:
    their times, sorted; none where the pass stamped no line or did not measure a stamp's cost)."""

    per_kernel: dict[str, Spread]
    capture_per_graph: Spread | None
    capture_per_node: Spread | None
    framework: str  # whose launchers price the pass's eager kernels ('torch', 'inductor', 'xla', 'raw')
    per_stamp: float = 0.0
    stamps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # per action of PyTorch's allocator history (tracer.allocator_history), at the pass's actions (times, sorted)
    per_action: float = 0.0
    actions: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def per_launch(self, name: str, framework: str = "") -> float:
        """What tracing added to the launch of one eager kernel of this name: its launcher's calibrated cost
        (analyzers.counterfactual.launcher_of; in `framework` where given, else the pass's), 0 for a launcher not
        calibrated."""
        k = launcher_of(name, framework or self.framework)
        return self.per_kernel[k].median if k in self.per_kernel else 0.0

    def stamps_between(self, lo: Any, hi: Any) -> Any:
        """How many of the pass's stamps fall in [lo, hi) (numbers or arrays of them)."""
        return _between(self.stamps, lo, hi)

    def host_cost(self, lo: Any, hi: Any) -> Any:
        """What the run's own host work cost in [lo, hi) (ns; numbers or arrays of them): its stamps of the user's
        lines and its allocator history's actions, each at its measured cost."""
        return self.stamps_between(lo, hi) * self.per_stamp + _between(self.actions, lo, hi) * self.per_action


def _between(times: np.ndarray, lo: Any, hi: Any) -> Any:
    """How many of the sorted `times` fall in [lo, hi)."""
    return np.searchsorted(times, hi, side="left") - np.searchsorted(times, lo, side="left")


def _measured_cost(said: Any) -> float:
    """A cost the run measured in its process (meta.runs[]), 0 where it gave none."""
    return float(said) if isinstance(said, (int, float)) and said > 0 else 0.0


def host_work_costs(trace: Trace, pass_id: int) -> tuple[float, float, np.ndarray]:
    """What the run's own host work cost the program, as it measured it in its process (meta.runs[]): one stamp of a
    user's line and one action of PyTorch's allocator history (ns, 0 where it measured none), and the times of the
    pass's recorded actions (sorted; none where an action's cost is unknown)."""
    entry = run_entry(trace, pass_id)
    history = entry.get("allocator_history")
    per_action = _measured_cost(history.get("entry_cost_ns") if isinstance(history, dict) else None)
    actions = np.sort(np.asarray([int(t) for (t,) in trace.rows(
        "SELECT ts_ns FROM memory_events WHERE pass_id = ? AND action IN ('alloc', 'free_requested', 'free_completed')",
        [pass_id])], dtype=np.int64)) if per_action else np.zeros(0, dtype=np.int64)
    return _measured_cost(entry.get("stamp_cost_ns")), per_action, actions


def topology_copies(trace: Trace, pass_id: int) -> bool:
    """Whether the pass's session copied the graphs it saw destroyed (tracer.run_configs.RunConfig.topology_copies)."""
    return bool((run_entry(trace, pass_id).get("config") or {}).get("topology_copies"))


def calibrated_pass(trace: Trace, pass_id: int) -> str | None:
    """Which calibration of the tracer's cost fits the configuration that recorded the pass: 'single' (the one traced
    run of now), 'sparse' (sessions 17-18's), or None (another run: not corrected)."""
    entry = run_entry(trace, pass_id)
    if not entry:
        return None
    cfg = entry.get("config") or {}
    for kind, made in (("single", single_config()), ("sparse", SPARSE_SINGLE)):
        if all(cfg.get(k) == asdict(made)[k] for k in _COST_FIELDS):
            return kind
    return None


def tracer_correction(trace: Trace, pass_id: int, model: CostModel | None, torch_program: bool,
                      stamps_of: StampsOf | None = None) -> TracerCorrection | None:
    """The pass's correction, or None (no model, a model without the tracer's costs for the pass's configuration, a
    pass recorded otherwise). `stamps_of`: reads a pass's line stamps (default: from the trace; the Run's, read once)."""
    kind = calibrated_pass(trace, pass_id) if model is not None else None
    costs = (model.tracer if kind == "single" else model.tracer_sparse) if model is not None and kind else {}
    if not costs:
        return None
    names = [str(n) for (n,) in trace.rows(
        "SELECT DISTINCT name FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' AND graph_id = 0 LIMIT 2000", [pass_id])]
    per_kernel = {k: v for k, v in costs.items() if k not in TRACER_CAPTURE_KEYS}
    # a capture's cost under the session that made it: destroyed graphs copied (since session 26) or read then
    graph_key, node_key = ((TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE_COPIED) if topology_copies(trace, pass_id)
                           else (TRACER_CAPTURE_GRAPH, TRACER_CAPTURE_NODE))
    per_stamp, per_action, actions = host_work_costs(trace, pass_id)
    read = stamps_of or partial(line_stamps, trace)
    stamps = np.sort(np.asarray(read(pass_id)["ts_ns"], dtype=np.int64)) if per_stamp else np.zeros(0, dtype=np.int64)
    return TracerCorrection(per_kernel, costs.get(graph_key), costs.get(node_key),
                            framework_of(names, torch_program), per_stamp if stamps.size else 0.0, stamps,
                            per_action if actions.size else 0.0, actions)


def launch_extra(trace: Trace, pass_id: int, t: IterationTable, c: TracerCorrection) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `t`: what tracing added to its period (ns: the calibrated cost of each eager kernel whose GPU work
    starts inside the period, by its launcher, 0 for a kernel whose launcher was not calibrated; and the cost of each
    stamp of the user's lines inside it) and how many kernels that was. Rows without a finite period get 0."""
    s = trace.sql("SELECT start_ns, name FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' AND graph_id = 0 "
                  "ORDER BY start_ns", [pass_id])
    starts = np.asarray(s["start_ns"], dtype=np.int64)
    names = np.asarray(s["name"], dtype=object)
    uniq, inv = factorize(names)

    def cumulative(price: np.ndarray) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(price[inv] if starts.size else np.zeros(0))])

    cum = cumulative(np.array([c.per_launch(str(n)) for n in uniq], dtype=np.float64))
    lo = t.gpu_start_ns.astype(np.int64)
    ok = np.isfinite(t.period)
    hi = lo + np.where(ok, t.period, 0).astype(np.int64)
    a = np.searchsorted(starts, lo, side="left")
    b = np.searchsorted(starts, hi, side="left")
    extra = np.where(ok, cum[b] - cum[a], 0.0)
    if c.framework == "inductor":
        # a program that compiled with Inductor and also ran ATen eagerly (the uncompiled model beside its compiled
        # graphs): a period without one of Inductor's kernels was launched by PyTorch's eager dispatch, priced so
        inductor = cumulative(np.array([bool(INDUCTOR_KERNEL.match(str(n))) for n in uniq], dtype=np.float64))
        aten = cumulative(np.array([c.per_launch(str(n), "torch") for n in uniq], dtype=np.float64))
        extra = np.where(ok & (inductor[b] - inductor[a] == 0), aten[b] - aten[a], extra)
    count = np.where(ok, b - a, 0)
    if (c.stamps.size and c.per_stamp > 0) or (c.actions.size and c.per_action > 0):
        # a stamp runs on the CPU when its line does, an allocator action when its op does: counted over the period
        # on the CPU's side, from its first launch
        cpu_lo = np.where(t.start_ns >= 0, t.start_ns, lo).astype(np.int64)
        cpu_hi = cpu_lo + np.where(ok, t.period, 0).astype(np.int64)
        extra = extra + np.where(ok, c.host_cost(cpu_lo, cpu_hi), 0.0)
    return extra, count


def window_extra(trace: Trace, pass_id: int, lo: int, hi: int, c: TracerCorrection) -> float:
    """What tracing added to a stretch of one thread's time [lo, hi) on the pass's clock (ns): each eager kernel whose
    launch call started inside it, at its launcher's calibrated cost, and each stamp of the user's lines inside it.
    (Captures are the graphs' own correction, GraphCost.tracer_correction_ns.)"""
    names = [str(n) for (n,) in trace.rows(
        "SELECT g.name FROM api_calls a JOIN gpu_spans g ON g.pass_id = a.pass_id AND g.correlation_id = a.correlation_id "
        "WHERE a.pass_id = ? AND a.start_ns >= ? AND a.start_ns < ? AND g.kind = 'kernel' AND g.graph_id = 0",
        [pass_id, lo, hi])]
    return float(sum(c.per_launch(n) for n in names) + float(c.host_cost(lo, hi)))


def with_tracer_cost(t: IterationTable, extra: np.ndarray) -> IterationTable:
    """The table with the tracer's cost taken off its CPU-bound rows (not GPU-bound, a finite period, not already
    timed by the timing run): period and work = max(traced - extra, the row's own GPU busy time)."""
    use = ~t.gpu_bound & np.isfinite(t.period) & (t.timed_by == "") & (extra > 0)
    if not use.any():
        return t
    floor = t.gpu_busy_ns.astype(np.float64)
    period = np.where(use, np.maximum(t.period - extra, floor), t.period)
    work = np.where(use, np.maximum(t.work - extra, floor), t.work)
    cpu_period = np.where(use & np.isfinite(t.cpu_period), np.maximum(t.cpu_period - extra, 0.0), t.cpu_period)
    timed = np.where(use, CORRECTED, t.timed_by).astype(object)
    return dataclasses.replace(t, period=period, work=work, cpu_period=cpu_period, timed_by=timed,
                               traced_work=np.where(use, t.work, t.traced_work))


def capture_correction(c: TracerCorrection | None, nodes: int) -> float | None:
    """What tracing added to one graph's capture (ns, positive), or None where captures were not calibrated: the
    calibration captures through torch.cuda.graph, whose per-graph part (graphmode's graph-level callbacks, memory
    samples and PyTorch's hooks around the block) a capture outside PyTorch does not pay: taken off a CuPy capture it
    left 0.18x of the untraced one-time cost (benchmarks/notes/s17), so only PyTorch's captures are corrected."""
    if c is None or c.capture_per_graph is None or c.capture_per_node is None or c.framework not in ("torch", "inductor"):
        return None
    return max(0.0, c.capture_per_graph.median + c.capture_per_node.median * max(nodes, 0))

