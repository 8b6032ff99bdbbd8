"""What a graph with no eager twin would cost launched eagerly (docs/metrics.md, "Counterfactual").

torch.compile's reduce-overhead mode, XLA's command buffers and a graph replayed from a program's start run kernels
that never run outside the graph in the process: nothing measured says what the graph saves. The counterfactual
prices the same kernels launched one by one by the framework that made them:

- which framework: from the graph's kernel names (Inductor's `triton_poi_/red_/per_/tem_` kernels; XLA's
  `*_fusion` and `gemm_fusion_*` thunks), else PyTorch's eager ATen where the program used torch, else the
  program's own `cuLaunchKernel` calls (`launcher_of`);
- the CPU side of one eager call: the framework's per-call cost plus each kernel's launch cost by its launcher
  (Inductor's Triton launcher and its extern library calls cost differently), both measured on this GPU by
  `graphmode calibrate` (tracer.launch_probes, analyzers.costmodel.LaunchCost): one sample per fresh process;
- the GPU side: the GPU time the graph's kernels took in this trace (node detail: their own spans; graph detail: the
  replay's span), plus the idle an eager launch leaves between back-to-back kernels (the model's eager gap);
- one eager call takes the larger of the two; the saving is that less the measured replay period, with a 95%
  interval from the calibration's spread over processes and the replays' spread.

Numbers only; reports word them, marked predicted.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from graphmode.analyzers.break_even import replay_interval, replays_per_draw, smallest_replays
from graphmode.analyzers.costmodel import CostModel
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.critical_path import node_durations
from graphmode.analyzers.results import BreakEven, Counterfactual, Estimate, GraphResult, LauncherPrice, Stat, StepResult
from graphmode.tracer.store import Trace

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 28
INDUCTOR_KERNEL = re.compile(r"^triton_(poi|red|per|tem|for)_")
XLA_KERNEL = re.compile(r"(^|_)fusion(_\d+)?$|^(loop|input|gemm_fusion|wrapped|triton_gemm|triton_softmax)_")
# (nvjet_*: cuBLAS's kernels on Hopper, as PyTorch 2.11's matmuls launch them on the H200)
LIBRARY_KERNEL = re.compile(r"cudnn|cublas|cutlass|xmma|gemm|gemv|splitKreduce|cask|convolve|_dot|nvjet", re.IGNORECASE)
# Where the model has no calibration of the framework's launcher, a kernel is priced by the model's raw launch
# (cuLaunchKernel from Python): a floor, said so beside the figure.
RAW = "cuLaunchKernel"
# The framework's own per-call cost (a compiled function's guards and generated wrapper; JAX's dispatch) is read from
# the intercept of this launcher's probe; a program's own eager code has none beyond its kernels' launches.
PER_CALL_FROM = {"inductor": ("inductor_triton", "inductor_extern"), "xla": ("xla_gemm", "xla_fusion")}


def framework_of(names: list[str], torch_program: bool) -> str:
    """Which framework made a graph's kernels, by their names (module doc)."""
    if any(INDUCTOR_KERNEL.match(n) for n in names):
        return "inductor"
    if any(XLA_KERNEL.search(n) for n in names):
        return "xla"
    return "torch" if torch_program else "raw"


def launcher_of(name: str, framework: str) -> str:
    """The launcher (analyzers.costmodel.LAUNCHERS) that would launch this kernel eagerly in that framework."""
    library = bool(LIBRARY_KERNEL.search(name))
    if framework == "inductor":
        return "inductor_triton" if INDUCTOR_KERNEL.match(name) else "inductor_extern"
    if framework == "xla":
        return "xla_gemm" if library else "xla_fusion"
    if framework == "torch":
        return "torch_library" if library else "torch_pointwise"
    return RAW


def _raw_launch(model: CostModel) -> tuple[float, float] | None:
    """The model's raw per-kernel launch: its eager_issue fit's kernel coefficient and that coefficient's sd."""
    fit = model.costs.get("eager_issue")
    if fit is None or "kernel" not in fit.features:
        return None
    i = fit.features.index("kernel")
    return float(fit.coef[i]), math.sqrt(max(float(fit.cov[i][i]), 0.0)) if fit.cov else 0.0


def launcher_prices(names: Sequence[str], others: int, framework: str, model: CostModel) -> list[LauncherPrice] | None:
    """Per launcher that would launch these kernels eagerly in that framework (most kernels first; `others` copies and
    memsets counted as kernels of the first's launcher: the framework issues one for about what a kernel costs), what
    the cost model says one costs: its launch probes' median (`graphmode calibrate`), else the model's raw launch. None
    without kernels, or where neither is calibrated."""
    if not names:
        return None
    counts = Counter(launcher_of(n, framework) for n in names)
    if others:
        counts[launcher_of(names[0], framework)] += others
    raw = _raw_launch(model)
    out = []
    for launcher, k in counts.most_common():  # per launcher: a few
        cost = model.launch.get(launcher)
        if cost is not None:
            out.append(LauncherPrice(launcher, k, cost.per_kernel.median, True))
        elif raw is not None:
            out.append(LauncherPrice(RAW, k, raw[0], False))
        else:
            return None
    return out


def dispatch_ns(names: Sequence[str], others: int, framework: str, model: CostModel) -> float | None:
    """What launching these kernels (and `others` copies and memsets) one by one costs the framework's dispatch on the
    CPU (ns): launcher_prices added up. None where they cannot be priced."""
    prices = launcher_prices(names, others, framework, model)
    return float(sum(p.kernels * p.per_kernel_ns for p in prices)) if prices is not None else None


def _graphed(stat: Stat, rng: np.random.Generator, n: int) -> np.ndarray:
    """Draws of the replay period's trimmed mean: normal, its standard error from the p10-p90 spread."""
    sd = (stat.p90 - stat.p10) / 2.5631 / math.sqrt(max(stat.n, 1))
    return stat.trimmed_mean + sd * rng.standard_normal(n) if sd > 0 else np.full(n, stat.trimmed_mean)


def _estimate(draws: np.ndarray, point: float) -> Estimate:
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return Estimate(float(point), float(min(lo, point)), float(max(hi, point)))


def counterfactual(trace: Trace, structure_pass: int, g: GraphResult, model: CostModel,
                   torch_program: bool, seed: int = BOOTSTRAP_SEED) -> tuple[Counterfactual, BreakEven] | None:
    """The counterfactual of one replayed graph and the break-even it gives (basis 'predicted'); None where the trace
    lacks the graph's nodes or replay period."""
    period = g.graph.work if g.graph is not None and g.graph.work is not None else (g.graph.period if g.graph is not None else None)
    if period is None or not math.isfinite(period.trimmed_mean):
        return None
    nodes = trace.rows("SELECT node_type, name FROM graph_nodes WHERE pass_id = ? AND graph_id = ? ORDER BY node_index",
                       [structure_pass, g.graph_id])
    names = [str(n) for t, n in nodes if str(t) == "kernel"]
    if not names:
        return None
    other = sum(1 for t, _ in nodes if str(t) in ("memcpy", "memset"))
    framework = framework_of(names, torch_program)
    prices = launcher_prices(names, other, framework, model)
    if prices is None:
        return None
    raw = _raw_launch(model)
    B = BOOTSTRAP_RESAMPLES
    rng = np.random.default_rng(seed)
    cpu_draw = np.zeros(B)
    cpu_point = 0.0
    for p in prices:
        if p.measured:  # calibrated: one sample per fresh process
            cpu_draw += p.kernels * model.launch[p.launcher].per_kernel.draw(rng, B)
        elif raw is not None:  # the model's raw launch: the fit's coefficient and its sd
            cpu_draw += p.kernels * (raw[0] + raw[1] * rng.standard_normal(B))
        cpu_point += p.kernels * p.per_kernel_ns
    call_cost = next((c for k in PER_CALL_FROM.get(framework, ()) if (c := model.launch.get(k)) is not None), None)
    per_call = call_cost.per_call.median if call_cost is not None else 0.0
    if call_cost is not None:
        cpu_draw += call_cost.per_call.draw(rng, B)
        cpu_point += per_call
    gpu = _gpu_work(trace, structure_pass, g.graph_id, len(names) + other, model)
    eager_draw = np.maximum(cpu_draw, gpu)
    eager_point = max(cpu_point, gpu)
    graphed_draw = _graphed(period, rng, B)
    saved_draw = eager_draw - graphed_draw
    saved = eager_point - period.trimmed_mean
    cf = Counterfactual(
        graph_id=g.graph_id, framework=framework, kernels=len(names), other_nodes=other, launchers=tuple(prices),
        per_call_ns=per_call, cpu=_estimate(cpu_draw, cpu_point), gpu_ns=gpu, eager=_estimate(eager_draw, eager_point),
        bound="cpu" if cpu_point >= gpu else "gpu", graphed_ns=period.trimmed_mean, saved=_estimate(saved_draw, saved),
        model_path=model.path)
    one_time = g.cost.total_ns if g.cost is not None else None
    never = saved <= 0
    low = high = None
    high_never = False
    replays: int | None = None
    reason: Note | None = None
    if one_time is None:
        reason = note("graph_no_one_time_cost", baseline="eager")
    else:
        low, high, high_never = replay_interval(replays_per_draw(np.full(B, one_time), saved_draw))
        replays = None if never else smallest_replays(one_time, saved)
    run = g.replays
    amortised = (run * eager_point / (one_time + run * period.trimmed_mean)
                 if one_time is not None and run > 0 and one_time + run * period.trimmed_mean > 0 else None)
    be = BreakEven(baseline="eager", eager_ns=eager_point, graph_ns=period.trimmed_mean, one_time_ns=one_time,
                   saved_per_replay_ns=saved, replays=replays, never=never, reason=reason, interval_low=low,
                   interval_high=high, interval_high_never=high_never, run_replays=run, amortised_speedup=amortised,
                   bootstrap_resamples=B, bootstrap_seed=seed, basis="predicted")
    return cf, be


def _gpu_work(trace: Trace, structure_pass: int, graph_id: int, ops: int, model: CostModel) -> float:
    """One eager call's GPU time: the graph's kernels' own time per replay (node detail), else the replay's GPU span,
    plus the model's idle between back-to-back eager kernels for each op."""
    durations = node_durations(trace, structure_pass, graph_id)
    if durations:
        work = float(sum(durations.values()))
    else:
        r = trace.rows("SELECT median(end_ns - start_ns) FROM gpu_spans WHERE pass_id = ? AND kind = 'graph' AND graph_id = ?",
                       [structure_pass, graph_id])[0][0]
        work = float(r) if r is not None else 0.0
    return work + ops * eager_gap_ns(model)


def eager_gap_ns(model: CostModel) -> float:
    """The GPU idle between back-to-back eager kernels: the smallest of the calibration's kernel gaps. The bundled H200
    model reads 7.5 us after its 0.8 us 'tiny' kernels against 1.06-1.09 us after its spin and wide ones: the tiny
    kernels' gap is their launches (the CPU issues one every ~5 us), not GPU idle."""
    gaps = [float(v) for k, v in model.eager_gap_ns.items() if k.startswith("kernel")]
    return min(gaps) if gaps else 0.0


def with_counterfactuals(trace: Trace, structure_pass: int | None, graphs: tuple[GraphResult, ...],
                         model: CostModel | None, torch_program: bool, skip: set[int] | frozenset[int] = frozenset(),
                         ) -> tuple[GraphResult, ...]:
    """The graphs, each replayed graph without a measured eager baseline given its counterfactual and a break-even of
    basis 'predicted' (saved in the run: its steady replays times the predicted saving), except those in `skip`.
    Unchanged without a model."""
    if model is None or structure_pass is None:
        return graphs
    out = []
    for g in graphs:  # per graph: tens at most
        if g.graph_id not in skip and g.status == "replayed" and (g.break_even is None or g.break_even.eager_ns is None):
            made = counterfactual(trace, structure_pass, g, model, torch_program)
            if made is not None:
                cf, be = made
                steady = g.graph.iterations if g.graph is not None else 0
                saved_in_run = be.saved_per_replay_ns * steady if be.saved_per_replay_ns is not None else None
                g = dataclasses.replace(g, counterfactual=cf, break_even=be, saved_in_run_ns=saved_in_run)
        out.append(g)
    return tuple(out)


def with_predicted_steps(steps: tuple[StepResult, ...], graphs: tuple[GraphResult, ...]) -> tuple[StepResult, ...]:
    """A multi-graph step with no eager twin whose every graph has a counterfactual becomes a predicted step: its eager
    step is the graphed step with each graph's replay replaced by its predicted eager call (the eager stretches between
    graphs run eagerly in both), so its saving is the graphs' predicted savings added up and the invariant holds by
    construction. The break-even's interval adds the graphs' 95% bounds (wider than a joint 95% interval)."""
    by_id = {g.graph_id: g for g in graphs}
    out = []
    for s in steps:  # per step: a few
        gs = [by_id.get(gid) for gid in s.graphs]
        if (s.basis != "none" or len(s.graphs) < 2 or s.graphed_ns is None
                or any(g is None or g.counterfactual is None or g.break_even is None
                       or g.break_even.saved_per_replay_ns is None for g in gs)):
            out.append(s)
            continue
        cfs = [g.counterfactual for g in gs if g is not None and g.counterfactual is not None]
        saved = float(sum(g.break_even.saved_per_replay_ns for g in gs if g is not None and g.break_even is not None
                          and g.break_even.saved_per_replay_ns is not None))
        spread_low = sum(c.saved.low_ns - c.saved.ns for c in cfs)
        spread_high = sum(c.saved.high_ns - c.saved.ns for c in cfs)
        one = s.one_time_ns
        replays = low = high = None
        high_never = False
        if one is not None and saved > 0:
            replays = smallest_replays(one, saved)
            low = smallest_replays(one, saved + spread_high) if saved + spread_high > 0 else None
            if saved + spread_low > 0:
                high = smallest_replays(one, saved + spread_low)
            else:
                high_never = True
        eager = s.graphed_ns + saved
        be = BreakEven(baseline="eager", eager_ns=eager, graph_ns=s.graphed_ns, one_time_ns=one, saved_per_replay_ns=saved,
                       replays=replays, never=saved <= 0,
                       reason=None if one is not None else note("graph_no_one_time_cost", baseline="eager"),
                       interval_low=low, interval_high=high, interval_high_never=high_never, run_replays=s.graphed_steps,
                       amortised_speedup=None, bootstrap_resamples=0, bootstrap_seed=0, basis="predicted")
        segments = tuple(dataclasses.replace(seg, saved_ns=by_id[seg.graph_id].break_even.saved_per_replay_ns  # type: ignore[union-attr]
                                             if seg.kind == "graph" and seg.graph_id in by_id else 0.0)
                         for seg in s.segments)
        out.append(dataclasses.replace(s, eager_ns=eager, saved_ns=saved, break_even=be, basis="predicted", segments=segments,
                                       graphs_saved_ns=saved, remainder_saved_ns=0.0, invariant_residual_ns=0.0,
                                       saved_in_run_ns=saved * s.graphed_steps))
    return tuple(out)
