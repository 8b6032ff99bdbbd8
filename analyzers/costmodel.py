"""The per-GPU cost model of CUDA graphs: fitted from a calibration table, stored as JSON, evaluated for a graph.

`graphmode calibrate` (tracer/calibrate.py) builds graphs of growing size and node mix on the GPU and
times each one (docs/metrics.md, "Cost model"); this module, pure numpy, turns that table into per-node
and per-edge costs with their spread, reads and writes the model file, finds the model for a trace's
GPU, and evaluates a cost for a graph described by its feature counts. No GPU is needed here.

The model file (`costmodel-<gpu>.json`) holds the key (GPU name, driver, CUDA version), every fitted
quantity (features, coefficients, their covariance, the residual spread, one residual per table row),
the node types' own GPU durations, the first-graph-of-a-process extra cost, torch.cuda.graph's own work
around a capture (where the calibrating machine has PyTorch), and the calibration table itself, so that a
fit can be redone and checked offline.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer.errors import CostModelError as CostModelError  # its home is the error hierarchy
from graphmode.tracer.run_configs import SPARSE_SINGLE, single_config
from graphmode.tracer.version import bundled_data_dir
from graphmode.analyzers.notes import Note, note

FORMAT = "graphmode-costmodel"
FORMAT_VERSION = 1

# Node types of a graph as the prediction counts them. 'event' = event record / wait *nodes* (external
# events); the cross-stream cudaEventRecord / cudaStreamWaitEvent of an eager program become edges in a
# capture, not nodes, and are counted as calls for the capture cost.
NODE_TYPES = ("kernel", "memset", "memcpy", "host", "event")
GPU_NODE_TYPES = ("kernel", "memset", "memcpy")  # node types with GPU work of their own (a CUPTI span)

# Features of each fitted quantity: names of the columns of the calibration table that are summed with
# a coefficient each; '1' is the intercept. A graph is described by a dict of these counts.
CALL_FEATURES = ("1", "kernel", "memset", "memcpy", "host", "record_calls", "wait_calls")
GRAPH_FEATURES = ("1", "kernel", "memset", "memcpy", "host", "event", "edges")
# Kernel nodes on the path are split between the calibration's short one-block kernel, its ~5 us one-block spin
# kernel and its wide kernel (one full wave of blocks over every SM): a node's per-node replay cost is
# interpolated by its own duration (short to spin) and by its grid (one block to a full wave: kernel_shares).
# Nodes beside the longest path (on parallel branches) cost the GPU's front end a little each ('off_nodes'),
# and wide kernels there take SMs from the path ('off_wide_ns': their own GPU time, weighted by their wide share).
# 'path_switches': consecutive GPU nodes on the path of different types (kernel, memset, memcpy): a hand-over
# between the compute and copy engines costs more than two nodes of one type.
PATH_FEATURES = ("1", "path_kernel_tiny", "path_kernel_spin", "path_kernel_wide", "path_memset", "path_memcpy", "path_host",
                 "path_event", "path_switches", "off_nodes", "off_wide_ns", "edges")
PATH_NODE_TYPES = ("kernel", "memset", "memcpy", "host", "event")

# quantity -> (features, relative residuals?, what it is). Relative: the fit minimises relative error
# (timings whose noise grows with their size); absolute: quantities that can be near zero or negative.
QUANTITIES: dict[str, tuple[tuple[str, ...], bool, str]] = {
    "capture": (CALL_FEATURES, True, "cuStreamBeginCapture to cuStreamEndCapture, the ops issued from a Python loop (cuda-python)"),
    "eager_issue": (CALL_FEATURES, True, "the same ops issued eagerly (no capture) from the same loop, no synchronize"),
    "instantiate": (GRAPH_FEATURES, True, "cuGraphInstantiate"),
    "upload": (GRAPH_FEATURES, True, "cuGraphUpload + cuStreamSynchronize"),
    "first_launch_excess": (GRAPH_FEATURES, False, "first launch + synchronize after upload, minus a steady replay"),
    "launch_call": (GRAPH_FEATURES, True, "host time of one cuGraphLaunch call (GPU busy behind a spin kernel)"),
    "replay_host": (GRAPH_FEATURES, False, "steady replay (launch + synchronize, host clock) minus its GPU span (CUDA events)"),
    "replay_gpu_overhead": (PATH_FEATURES, False, "GPU span of a replay (CUDA events) minus the own GPU durations of the nodes on its longest path"),
    "build_api": (GRAPH_FEATURES, True, "the same graph built with the explicit node API from a Python loop (cuda-python): cuGraphCreate and "
                  "one cuGraphAdd*Node per node, its parameters made as it is added"),
}
# Quantities a calibration may lack (an older one, or none of its shapes measured them): fitted where measured, else
# absent from the model, and a prediction that needs one says so.
OPTIONAL_QUANTITIES = frozenset({"build_api"})

# Quantities fitted for the relative error of another column (weights 1/that column), residuals relative to it: the
# GPU overhead of a replay is small beside the span it is part of, and what matters is the span's relative error.
RELATIVE_TO = {"replay_gpu_overhead": "replay_gpu"}

# Below this many rows more than features a fit is refused: its spread would mean nothing.
MIN_DEGREES_OF_FREEDOM = 2
TORCH_STEADY_FROM = 2  # a torch probe's graphs from the third on are its steady state


@dataclass(frozen=True)
class FittedCost:
    """One quantity fitted by (weighted) least squares: y = Σ coef[f] * x[f] over `features`."""

    quantity: str
    features: tuple[str, ...]
    coef: tuple[float, ...]
    cov: tuple[tuple[float, ...], ...]  # covariance of coef
    relative: bool  # residuals (and resid_sd) are relative to y
    resid_sd: float  # sd of one measurement around the fit (relative if `relative`, else ns)
    rows: int  # table rows used
    residuals: tuple[float, ...]  # per used row, in table order (relative or ns)
    row_index: tuple[int, ...]  # which table rows were used
    relative_to: str = ""  # residuals (and resid_sd) are relative to this column of the table (RELATIVE_TO); '' none

    def x(self, counts: dict[str, float]) -> np.ndarray:
        return np.array([1.0 if f == "1" else float(counts.get(f, 0.0)) for f in self.features])

    def mean(self, counts: dict[str, float]) -> float:
        return float(self.x(counts) @ np.asarray(self.coef))

    def sd(self, counts: dict[str, float], scale: float | None = None) -> float:
        """Spread of one new measurement at these counts: the coefficients' uncertainty plus the
        residual spread of a single measurement. `scale`: the value of the `relative_to` column there (a
        replay's predicted GPU span for its overhead); without it the quantity itself stands in."""
        x = self.x(counts)
        var_mean = float(x @ np.asarray(self.cov) @ x)  # ns² whatever the weights (fit_quantity)
        mu = self.mean(counts)
        rel = abs(scale) if (self.relative_to and scale is not None) else abs(mu)
        var_one = (self.resid_sd * rel) ** 2 if (self.relative or self.relative_to) else self.resid_sd ** 2
        return math.sqrt(max(var_mean, 0.0) + var_one)

    def coefficient(self, feature: str) -> float:
        return self.coef[self.features.index(feature)] if feature in self.features else 0.0

    def max_abs_residual(self) -> float:
        return float(np.max(np.abs(self.residuals))) if self.residuals else 0.0


@dataclass(frozen=True)
class Spread:
    """A measured extra cost over several samples: median, p10, p90 (ns)."""

    n: int
    median: float
    p10: float
    p90: float
    samples: tuple[float, ...]

    @staticmethod
    def of(values: list[float] | np.ndarray) -> Spread | None:
        v = np.asarray(values, dtype=np.float64)
        v = v[np.isfinite(v)]
        if v.size == 0:
            return None
        p10, p50, p90 = np.percentile(v, [10, 50, 90])
        return Spread(int(v.size), float(p50), float(p10), float(p90), tuple(float(x) for x in v))

    @property
    def sd(self) -> float:
        """A normal-equivalent sd from the p10-p90 range (2 * 1.2816 sd); 0 for a single sample."""
        return (self.p90 - self.p10) / 2.5631

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draws for a new process of a probe-measured quantity (the first-graph extra, PyTorch's terms): a log-normal
        fitted to its samples (log mean, log sd widened by sqrt(1 + 1/k) for k samples: a new process, not the mean),
        or a normal on the values themselves where a sample is not positive; one sample is the value itself.
        Resampling the few samples a calibration takes (3-4 processes) never draws beyond the largest of them, which
        held too few measured values (benchmarks/notes/history.md, "The intervals")."""
        v = np.asarray(self.samples, dtype=np.float64)
        if v.size < 2:
            return np.full(n, self.median if v.size == 0 else float(v[0]))
        positive = bool((v > 0).all())
        x = np.log(v) if positive else v
        d = x.mean() + x.std(ddof=1) * math.sqrt(1.0 + 1.0 / v.size) * rng.standard_normal(n)
        out: np.ndarray = np.exp(d) if positive else d
        return out


# The launchers whose eager cost tracer.launch_probes measures, by probe (framework, variant). A kernel of a graph is
# priced by the launcher that would launch it eagerly (analyzers.counterfactual.launcher_of).
LAUNCHERS: dict[tuple[str, str], str] = {
    ("torch", "pointwise"): "torch_pointwise",  # an ATen op, launched by PyTorch's eager dispatch
    ("torch", "library"): "torch_library",  # an ATen op that calls cuDNN / cuBLAS
    ("inductor", "triton"): "inductor_triton",  # a Triton kernel launched by Inductor's generated wrapper
    ("inductor", "extern"): "inductor_extern",  # a library call (cuDNN, cuBLAS) from Inductor's generated wrapper
    ("xla", "gemm"): "xla_gemm",  # XLA's thunk executor, command buffers off: a matmul
    ("xla", "reduce"): "xla_fusion",  # ... a fusion
}
MIN_KERNEL_STEP = 4  # the two sizes of a probe must differ by this many kernels for a slope


@dataclass(frozen=True)
class LaunchCost:
    """What one launcher costs eagerly on this GPU (tracer.launch_probes): the wall time one more kernel adds to a call
    that the CPU bounds (its per-kernel slope), and the call's own cost with no kernel (the intercept: a compiled
    function's guards and wrapper, JAX's dispatch). One sample per fresh process (ns)."""

    per_kernel: Spread
    per_call: Spread
    gpu_per_kernel_ns: float  # the probe kernels' own GPU time (median): what the slope measured was the CPU's


def _rows_by_variant(probe: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """One launch probe process's rows (tracer.launch_probes), by variant."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in probe.get("rows", []) or []:
        out.setdefault(str(r.get("variant", "")), []).append(r)
    return out


def fit_launch_costs(probes: list[dict[str, Any]]) -> tuple[dict[str, LaunchCost], list[dict[str, Any]]]:
    """Per launcher, the per-kernel slope and per-call intercept of each probe process (tracer.launch_probes: two sizes
    a variant) as Spreads over the processes. Returns the costs and what was left out: {'launcher', 'kind': 'fused'
    (two sizes fewer than MIN_KERNEL_STEP kernels apart; 'kernels') | 'gpu_bound' ('gpu_ns', 'wall_ns')}."""
    slopes: dict[str, list[float]] = {}
    calls: dict[str, list[float]] = {}
    gpu: dict[str, list[float]] = {}
    left: list[dict[str, Any]] = []
    for probe in probes:  # per fresh process and framework
        if probe.get("traced"):  # a traced twin (fit_tracer_costs): its launches carry the tracer's cost
            continue
        fw = str(probe.get("framework", ""))
        for variant, rows in _rows_by_variant(probe).items():
            key = LAUNCHERS.get((fw, variant))
            if key is None or len(rows) < 2:
                continue
            lo, hi = sorted(rows, key=lambda r: float(r["kernels"]))[::len(rows) - 1]
            dk = float(hi["kernels"]) - float(lo["kernels"])
            if dk < MIN_KERNEL_STEP:  # the framework fused the probe's ops
                left.append({"launcher": key, "kind": "fused", "kernels": [int(lo["kernels"]), int(hi["kernels"])]})
                continue
            slope = (float(hi["wall_ns"]) - float(lo["wall_ns"])) / dk
            if float(hi["gpu_ns"]) > 0.8 * float(hi["wall_ns"]):  # the GPU, not the launches, bounded the probe
                left.append({"launcher": key, "kind": "gpu_bound", "gpu_ns": float(hi["gpu_ns"]), "wall_ns": float(hi["wall_ns"])})
                continue
            slopes.setdefault(key, []).append(slope)
            calls.setdefault(key, []).append(max(0.0, float(lo["wall_ns"]) - slope * float(lo["kernels"])))
            gpu.setdefault(key, []).append(float(hi["gpu_ns"]) / max(float(hi["kernels"]), 1.0))
    out: dict[str, LaunchCost] = {}
    for key, values in slopes.items():
        per_kernel, per_call = Spread.of(values), Spread.of(calls[key])
        if per_kernel is not None and per_call is not None:
            out[key] = LaunchCost(per_kernel, per_call, float(np.median(gpu[key])))
    return out, left


# What `graphmode run`'s one traced run adds (tracer.launch_probes --traced): per launcher, to each kernel launched
# eagerly; and to each graph captured through torch.cuda.graph, per captured kernel and per graph
TRACER_CAPTURE_NODE, TRACER_CAPTURE_GRAPH = "capture_per_node", "capture_per_graph"
# the same where the session copies a graph destroyed while tracing and reads the copy at the end (tracer.run_configs.
# RunConfig.topology_copies, the one run since session 26): probes that say `topology_copies`
TRACER_CAPTURE_NODE_COPIED, TRACER_CAPTURE_GRAPH_COPIED = "capture_copied_per_node", "capture_copied_per_graph"
TRACER_CAPTURE_KEYS = (TRACER_CAPTURE_NODE, TRACER_CAPTURE_GRAPH, TRACER_CAPTURE_NODE_COPIED, TRACER_CAPTURE_GRAPH_COPIED)


def _slopes(probe: dict[str, Any], kernels: dict[tuple[str, str, int], float]) -> dict[str, tuple[float, float]]:
    """Per key (a launcher, or 'capture'), one probe process's (slope per kernel, intercept) from its two sizes, with
    the kernels each call launched as the untraced processes counted them (`kernels`: (framework, variant, ops) ->
    kernels); a traced process counts none."""
    fw = str(probe.get("framework", ""))
    out: dict[str, tuple[float, float]] = {}
    for variant, rows in _rows_by_variant(probe).items():
        key = ("capture_copied" if probe.get("topology_copies") else "capture") if variant == "capture" \
            else LAUNCHERS.get((fw, variant))
        if key is None or len(rows) < 2:
            continue
        k = [float(r["kernels"]) if variant == "capture" else kernels.get((fw, variant, int(r["ops"])), -1.0) for r in rows]
        if min(k) < 0:
            continue
        (k_lo, lo), (k_hi, hi) = sorted(zip(k, rows), key=lambda x: x[0])[::len(rows) - 1]
        if k_hi - k_lo < MIN_KERNEL_STEP:
            continue
        slope = (float(hi["wall_ns"]) - float(lo["wall_ns"])) / (k_hi - k_lo)
        out[key] = (slope, float(lo["wall_ns"]) - slope * k_lo)
    return out


def probe_api_filter(probe: dict[str, Any]) -> str:
    """The API filter of a traced launch probe's session (tracer.launch_probes): 'sparse' for the probes made before
    the probes said it (sessions 17-18's one run)."""
    return str(probe.get("api_filter") or "sparse")


def fit_tracer_costs(probes: list[dict[str, Any]], api_filter: str | None = None) -> dict[str, Spread]:
    """What the one traced run adds, from launch probes made untraced and --traced (tracer.launch_probes): per launcher
    (LAUNCHERS), each traced process's per-kernel slope less the median of the untraced processes' slopes; for
    captures, the same of the per-kernel slope (TRACER_CAPTURE_NODE) and of the intercept (TRACER_CAPTURE_GRAPH), or
    of their _COPIED twins for the processes whose session copied the graphs it saw destroyed. `api_filter`: only the
    traced processes whose session recorded that filter's API calls (probe_api_filter); None: all. Spreads over the traced processes (ns); {} without both kinds of process."""
    if api_filter is not None:
        probes = [p for p in probes if not p.get("traced") or probe_api_filter(p) == api_filter]
    counts: dict[tuple[str, str, int], list[float]] = {}
    for probe in probes:
        if not probe.get("traced"):
            for r in probe.get("rows", []) or []:
                if float(r.get("kernels", -1)) >= 0:
                    counts.setdefault((str(probe.get("framework", "")), str(r.get("variant", "")), int(r["ops"])), []).append(float(r["kernels"]))
    kernels = {k: float(np.median(v)) for k, v in counts.items()}
    untraced: dict[str, list[tuple[float, float]]] = {}
    traced: dict[str, list[tuple[float, float]]] = {}
    for probe in probes:
        for key, fit in _slopes(probe, kernels).items():
            (traced if probe.get("traced") else untraced).setdefault(key, []).append(fit)
    out: dict[str, Spread] = {}
    if "capture" in untraced:  # an untraced process's captures are the baseline of both kinds of traced ones
        untraced["capture_copied"] = untraced["capture"]
    for key in sorted(set(untraced) & set(traced)):
        base_slope = float(np.median([s for s, _ in untraced[key]]))
        base_cut = float(np.median([c for _, c in untraced[key]]))
        names = {"capture": (TRACER_CAPTURE_NODE, TRACER_CAPTURE_GRAPH),
                 "capture_copied": (TRACER_CAPTURE_NODE_COPIED, TRACER_CAPTURE_GRAPH_COPIED)}.get(key, (key, ""))
        for name, values in zip(names, ([s - base_slope for s, _ in traced[key]], [c - base_cut for _, c in traced[key]])):
            if name and (spread := Spread.of(values)) is not None:
                out[name] = spread
    return out


def _launch_dict(costs: dict[str, LaunchCost]) -> dict[str, Any]:
    return {k: {"per_kernel": _spread_dict(c.per_kernel), "per_call": _spread_dict(c.per_call),
                "gpu_per_kernel_ns": c.gpu_per_kernel_ns} for k, c in costs.items()}


def _launch_from(d: Any) -> dict[str, LaunchCost]:
    out: dict[str, LaunchCost] = {}
    for k, v in (d or {}).items():
        per_kernel, per_call = _spread_from(v.get("per_kernel")), _spread_from(v.get("per_call"))
        if per_kernel is not None and per_call is not None:
            out[str(k)] = LaunchCost(per_kernel, per_call, float(v.get("gpu_per_kernel_ns", 0.0)))
    return out


@dataclass(frozen=True)
class CostModel:
    gpu_name: str
    compute_capability: str
    driver_version: str
    cuda_driver_version: int
    cuda_runtime_version: int
    created_at: str
    tool_version: str
    costs: dict[str, FittedCost]
    node_gpu_ns: dict[str, float]  # own GPU duration (CUPTI) of the calibration's node of each type
    eager_gap_ns: dict[str, float]  # GPU idle between back-to-back eager ops of a type on one stream (CUPTI)
    eager_tail: Spread | None  # last eager launch's return to the synchronize's return (tiny ops)
    # 'capture' | 'instantiate' | 'upload' | 'first_launch' -> extra of the process's first graph over later ones;
    # 'second_<k>': its second graph's (still dearer than later ones)
    first_graph: dict[str, Spread]
    table: list[dict[str, Any]]  # the calibration rows the fit used
    calibration: dict[str, Any] = field(default_factory=dict)  # how it was run: repeats, replays, seconds, ...
    # torch.cuda.graph's own work around a capture (tracer.calibrate.torch_capture_probe): 'first' (the process's
    # first PyTorch capture, one sample per fresh process) and 'later' (every later capture); a replay through
    # PyTorch: 'replay_host' (replay + synchronize less the GPU span) and 'replay_call' (the replay call's host
    # time, the GPU busy); 'capture_ratio' (a body issued in capture mode over the same step issued eagerly, a
    # ratio, not ns); {} without PyTorch
    torch_capture: dict[str, Spread] = field(default_factory=dict)
    # cudagraph trees' own work (tracer.calibrate.tree_probe): 'first' (the process's first recording), 'later'
    # (a later function's), 'call_host' (host time of a steady call: a floor under a tree's replay period); {} without
    tree_capture: dict[str, Spread] = field(default_factory=dict)
    # the calibrating GPU's multiprocessors (a kernel's wide share: its blocks over these); 0: unknown
    sm_count: int = 0
    # the first graph of a process whose graphs are built with the node API: 'build' | 'instantiate' | 'upload' |
    # 'first_launch' (and 'second_<k>') -> its extra over later ones (tracer.calibrate --probe-program-api); {} where
    # not measured
    first_graph_api: dict[str, Spread] = field(default_factory=dict)
    # per launcher (LAUNCHERS), its eager launch cost (tracer.launch_probes): what a graph's kernels would cost launched
    # one by one (analyzers.counterfactual); {} where not measured
    launch: dict[str, LaunchCost] = field(default_factory=dict)
    launch_probes: list[dict[str, Any]] = field(default_factory=list)  # the probes the launch costs were fitted from
    # what the one traced run of `graphmode run` adds (fit_tracer_costs): per launcher, to each eager kernel; and
    # TRACER_CAPTURE_NODE / TRACER_CAPTURE_GRAPH to a torch.cuda.graph capture; {} where not measured
    tracer: dict[str, Spread] = field(default_factory=dict)
    # the same, calibrated under the one traced run of sessions 17-18 (tracer.run_configs.SPARSE_SINGLE: API records of
    # the graph lifecycle and synchronizations only), for the traces that run recorded
    tracer_sparse: dict[str, Spread] = field(default_factory=dict)
    path: str = ""  # where it was read from ('' when built in memory)

    def kernel_split(self, durations: np.ndarray) -> np.ndarray:
        """Per kernel duration (ns), the share of the ~5 us calibration kernel in its per-node replay cost:
        0 at or below the short calibration kernel's duration, 1 at or above the spin kernel's, linear
        between. 0 everywhere when the calibration has no spin-kernel measurement."""
        lo, hi = self.node_gpu_ns.get("kernel"), self.node_gpu_ns.get("kernel_spin")
        d = np.asarray(durations, dtype=np.float64)
        if lo is None or hi is None or hi <= lo:
            return np.zeros(d.shape)
        out: np.ndarray = np.clip((d - lo) / (hi - lo), 0.0, 1.0)
        return out

    def wide_share(self, blocks: np.ndarray) -> np.ndarray:
        """Per kernel grid size (blocks), how far it spreads over the GPU: blocks / multiprocessors, at most 1 (the
        calibration's wide kernel: one full wave over every SM). 0 everywhere when the model has no wide-kernel
        measurement or no SM count (an older calibration)."""
        b = np.asarray(blocks, dtype=np.float64)
        if self.sm_count <= 0 or "kernel_wide" not in self.node_gpu_ns:
            return np.zeros(b.shape)
        out: np.ndarray = np.clip(b / float(self.sm_count), 0.0, 1.0)
        return out

    def kernel_shares(self, durations: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per kernel, its shares of the calibration's short, spin and wide kernels (summing to 1): the wide share
        from its grid (wide_share), the rest split between short and spin by its duration (kernel_split)."""
        w = self.wide_share(blocks)
        spin = (1.0 - w) * self.kernel_split(durations)
        return 1.0 - w - spin, spin, w

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.gpu_name, self.driver_version, self.cuda_driver_version)

    def first_graph_extra(self, api: bool = False, nth: int = 1) -> Spread | None:
        """The first graph of a process (`nth` 2: its second, which still costs more than later ones): capture (or,
        `api`, the node-API build) + instantiate + upload + first-launch extra over the steady state, summed per probe.
        None where the model has no such measurement (a second graph's, in models calibrated before
        the probe timed it)."""
        if nth not in (1, 2):
            return None
        table = self.first_graph_api if api else self.first_graph
        prefix = "second_" if nth == 2 else ""
        parts = [table[prefix + k] for k in ("build" if api else "capture", "instantiate", "upload", "first_launch")
                 if prefix + k in table]
        if not parts:
            return None
        n = min(len(p.samples) for p in parts)
        return Spread.of(np.sum([np.asarray(p.samples[:n]) for p in parts], axis=0))


# ---------------------------------------------------------------------------------------------- fitting


def fit_quantity(quantity: str, table: list[dict[str, Any]], y_key: str | None = None) -> FittedCost:
    """Least squares of one quantity over the table rows that have it (not the process's first graph).

    Relative quantities are fitted by weighted least squares with weights 1/y (minimises relative error,
    for timings whose noise grows with the graph); residuals are then relative. The coefficients'
    covariance is resid_sd² (XᵀWX)⁻¹.
    """
    features, relative, _ = QUANTITIES[quantity]
    key = y_key or quantity
    rel_to = RELATIVE_TO.get(quantity, "")
    idx = [i for i, r in enumerate(table) if r.get(key) is not None and np.isfinite(r[key]) and not r.get("first_graph", False)]
    if relative:
        idx = [i for i in idx if table[i][key] > 0]
    if rel_to:
        idx = [i for i in idx if float(table[i].get(rel_to) or 0) > 0]
    X = np.array([[1.0 if f == "1" else float(table[i].get(f, 0.0)) for f in features] for i in idx]).reshape(len(idx), len(features))
    y = np.array([float(table[i][key]) for i in idx])
    # Features that are zero in every row (a node type the calibration could not build) are left out:
    # coefficient 0, said by the model's errors list.
    used = np.flatnonzero(np.any(X != 0, axis=0))
    if len(idx) < used.size + MIN_DEGREES_OF_FREEDOM:
        raise CostModelError(f"cannot fit '{quantity}': {len(idx)} calibration rows for {used.size} features; "
                             f"run `graphmode calibrate` with more --repeats")
    w = 1.0 / y if relative else np.ones_like(y)
    if rel_to:
        w = 1.0 / np.array([float(table[i][rel_to]) for i in idx])
    Xw, yw = X * w[:, None], y * w
    if np.linalg.matrix_rank(Xw[:, used]) < used.size:
        raise CostModelError(f"cannot fit '{quantity}': the calibration shapes do not separate its features "
                             f"{[features[j] for j in used]} (collinear); the calibration set is incomplete")
    beta_u, *_ = np.linalg.lstsq(Xw[:, used], yw, rcond=None)
    beta = np.zeros(len(features))
    beta[used] = beta_u
    resid_w = yw - Xw @ beta  # relative residuals when weighted by 1/y (or by 1/the relative_to column)
    dof = max(len(idx) - used.size, 1)
    s2 = float(resid_w @ resid_w) / dof
    cov = np.zeros((len(features), len(features)))
    cov[np.ix_(used, used)] = s2 * np.linalg.inv(Xw[:, used].T @ Xw[:, used])  # ns²: the weights carry 1/ns
    return FittedCost(
        quantity=quantity, features=features, coef=tuple(float(b) for b in beta),
        cov=tuple(tuple(float(c) for c in row) for row in cov), relative=relative, resid_sd=math.sqrt(s2),
        rows=len(idx), residuals=tuple(float(r) for r in resid_w), row_index=tuple(idx), relative_to=rel_to,
    )


def fit_cost_model(table: list[dict[str, Any]], node_gpu_ns: dict[str, float], eager_gap_ns: dict[str, float],
                   first_graph_probes: list[dict[str, float]], machine: dict[str, Any],
                   calibration: dict[str, Any] | None = None, torch_probes: list[dict[str, Any]] | None = None,
                   tree_probes: list[dict[str, Any]] | None = None, api_probes: list[dict[str, float]] | None = None) -> CostModel:
    """Fits every quantity of QUANTITIES from a calibration table.

    `table` rows: the feature counts (QUANTITIES' features), and per measured quantity its value in ns
    (medians over the graph's replays for the per-replay quantities); `replay_gpu` and the path counts
    give `replay_gpu_overhead` = replay_gpu - Σ path_<type> * node_gpu_ns[type]. Rows with
    first_graph=True are left out of every fit. `first_graph_probes`: per fresh process, the extra cost
    of its first graph over identical later ones ({'capture': ns, 'instantiate': ns, ...}; 'second_<k>': the second's).
    `torch_probes`: per fresh process with PyTorch, torch.cuda.graph's own work
    ({'first_ns': ns, 'later_ns': [ns, ...]}).
    `api_probes`: as `first_graph_probes`, in processes that build their graphs with the node API ({'build': ns, ...}).
    """
    rows = [dict(r) for r in table]
    for r in rows:
        if r.get("replay_gpu") is not None:
            # 'kernel_spin' and 'kernel_wide' nodes (calibration only) are kernels with their own duration
            spin, wide = float(r.get("path_kernel_spin", 0)), float(r.get("path_kernel_wide", 0))
            r["path_kernel_tiny"] = float(r.get("path_kernel", 0)) - spin - wide
            own = sum(float(r.get(f"path_{t}", 0)) * float(node_gpu_ns.get(t, 0.0)) for t in GPU_NODE_TYPES)
            own += spin * (float(node_gpu_ns.get("kernel_spin", 0.0)) - float(node_gpu_ns.get("kernel", 0.0)))
            own += wide * (float(node_gpu_ns.get("kernel_wide", 0.0)) - float(node_gpu_ns.get("kernel", 0.0)))
            r["replay_gpu_overhead"] = float(r["replay_gpu"]) - own
            if r.get("off_nodes") is None:  # a calibration before off-path features: nodes less those on the path
                nodes = r.get("actual_nodes", r.get("predicted_nodes"))
                r["off_nodes"] = float(nodes) - sum(float(r.get(f"path_{t}", 0)) for t in PATH_NODE_TYPES) if nodes is not None else 0.0
            r["off_wide_ns"] = float(r.get("off_kernel_wide", 0)) * float(node_gpu_ns.get("kernel_wide", 0.0))
        if r.get("replay_wall") is not None and r.get("replay_gpu") is not None:
            r["replay_host"] = float(r["replay_wall"]) - float(r["replay_gpu"])
        if r.get("first_launch") is not None and r.get("replay_wall") is not None:
            r["first_launch_excess"] = float(r["first_launch"]) - float(r["replay_wall"])
    costs = {q: fit_quantity(q, rows) for q in QUANTITIES
             if q not in OPTIONAL_QUANTITIES or any(r.get(q) is not None and not r.get("first_graph", False) for r in rows)}
    first, first_api = ({k: s for k in (*keys, *(f"second_{k}" for k in keys)) if (s := Spread.of([p[k] for p in probes if k in p])) is not None}
                        for probes, keys in ((first_graph_probes, ("capture", "instantiate", "upload", "first_launch")),
                                             (api_probes or [], ("build", "instantiate", "upload", "first_launch"))))
    tails = [float(r["eager_wall"]) - float(r["eager_issue"]) for r in rows
             if r.get("eager_wall") is not None and r.get("eager_issue") is not None and not r.get("first_graph", False)]
    return CostModel(
        gpu_name=str(machine.get("gpu_name", "")), compute_capability=str(machine.get("compute_capability", "")),
        driver_version=str(machine.get("driver_version", "")), cuda_driver_version=int(machine.get("cuda_driver_version", 0) or 0),
        cuda_runtime_version=int(machine.get("cuda_runtime_version", 0) or 0), created_at=str(machine.get("created_at", "")),
        tool_version=str(machine.get("tool_version", "")), costs=costs, node_gpu_ns=dict(node_gpu_ns),
        eager_gap_ns=dict(eager_gap_ns), eager_tail=Spread.of(tails), first_graph=first, table=rows,
        calibration=dict(calibration or {}), torch_capture=torch_capture_spreads(torch_probes or []),
        tree_capture=tree_capture_spreads(tree_probes or []), sm_count=int(machine.get("sm_count", 0) or 0),
        first_graph_api=first_api,
    )


def tree_capture_spreads(probes: list[dict[str, Any]]) -> dict[str, Spread]:
    """The cudagraph-tree probes' samples as spreads: 'first' (each process's first recording), 'later' (its later
    functions' recordings), 'call_host' (every function's steady call, host time)."""
    first: list[float] = []
    later: list[float] = []
    host: list[float] = []
    for p in probes:  # per fresh process
        for i, r in enumerate(p.get("recordings") or []):
            if r.get("framework_ns") is None:
                continue
            (first if i == 0 else later).append(float(r["framework_ns"]))
            host.append(float(r["call_host_ns"]))
    out = {}
    for key, v in (("first", first), ("later", later), ("call_host", host)):
        if (sp := Spread.of(v)) is not None:
            out[key] = sp
    return out


# A torch probe's first capture block waited (its wall time less its thread's CPU time) at least this long and this share
# of the block, after at least one major page fault in it: a cold process's read of its libraries from disk, not
# torch.cuda.graph's work. A fresh lent H200's first process read its first block at 23.9 ms wall and 8.0 ms CPU after
# one major fault (450 in the process before the probe), where the same program's later processes read 6.6-7.5 ms wall
# and CPU alike, within 0.01 ms on every warm block (benchmarks/notes/s36).
COLD_WAIT_MIN_NS = 1e6
COLD_WAIT_SHARE = 0.25


def cold_wait(probe: dict[str, Any]) -> tuple[float, int] | None:
    """(how long the torch probe's first capture block waited, its major page faults) where it waited as a cold
    process's does (COLD_WAIT_MIN_NS, COLD_WAIT_SHARE, a major fault in the block) and the first capture's figure less
    that wait is still positive; None otherwise, and for probes that timed no CPU time (before session 36)."""
    blocks, cpu, faults = probe.get("blocks_ns") or [], probe.get("blocks_cpu_ns") or [], probe.get("blocks_major_faults") or []
    first = probe.get("first_ns")
    try:
        waited, n_faults, first_ns = float(blocks[0]) - float(cpu[0]), int(faults[0]), float(first)  # type: ignore[arg-type]
    except (IndexError, TypeError, ValueError):
        return None
    if not (math.isfinite(waited) and waited >= COLD_WAIT_MIN_NS and waited >= COLD_WAIT_SHARE * float(blocks[0])
            and n_faults >= 1 and first_ns - waited > 0):
        return None
    return waited, n_faults


def torch_capture_spreads(probes: list[dict[str, Any]]) -> dict[str, Spread]:
    """The torch probes' samples as spreads: 'first' (one per process; a cold process's wait left out: cold_wait),
    'later' (all later captures pooled)."""
    out = {}
    firsts = [float(p["first_ns"]) - (w[0] if (w := cold_wait(p)) is not None else 0.0)
              for p in probes if p.get("first_ns") is not None]
    if (first := Spread.of(firsts)) is not None:
        out["first"] = first
    if (later := Spread.of([float(x) for p in probes for x in p.get("later_ns") or []])) is not None:
        out["later"] = later
    # a later capture's body (the step issued in capture mode) over the same step issued eagerly (its median)
    ratios = [float(b) / float(np.median(p["eager_step_ns"])) for p in probes if p.get("eager_step_ns")
              for b in (p.get("bodies_ns") or [])[1:]]
    if (ratio := Spread.of(ratios)) is not None:
        out["capture_ratio"] = ratio
    # the process's first (and second) graph's instantiate + first replay over the steady state (the median from its
    # third graph on), per process: what a PyTorch program's first graph costs beyond the model's per-node terms once
    # torch.cuda.graph's first capture (above) is paid
    for key, index in (("first_graph_extra", 0), ("second_graph_extra", 1)):
        extras = []
        for p in probes:
            both = [float(a) + float(b) for a, b in zip(p.get("instantiate_ns") or [], p.get("first_replay_ns") or [])]
            if len(both) > TORCH_STEADY_FROM:
                extras.append(both[index] - float(np.median(both[TORCH_STEADY_FROM:])))
        if (sp := Spread.of(extras)) is not None:
            out[key] = sp
    # a replay through torch.cuda.CUDAGraph.replay: launch + synchronize less its GPU span, and the replay call alone
    for key in ("replay_host", "replay_call"):
        if (sp := Spread.of([float(x) for p in probes for x in p.get(f"{key}_ns") or []])) is not None:
            out[key] = sp
    return out


# ---------------------------------------------------------------------------------------------- JSON


def _spread_dict(s: Spread | None) -> dict[str, Any] | None:
    return None if s is None else {"n": s.n, "median": s.median, "p10": s.p10, "p90": s.p90, "samples": list(s.samples)}


def _spread_from(d: Any) -> Spread | None:
    return None if d is None else Spread.of(list(d.get("samples") or [d["median"]]))


def _spreads_dict(spreads: dict[str, Spread]) -> dict[str, Any]:
    return {k: _spread_dict(s) for k, s in spreads.items()}


def _spreads_from(d: Any) -> dict[str, Spread]:
    """A model file's named spreads (first_graph, first_graph_api, torch_capture, tree_capture); {} where the file has
    none."""
    return {str(k): s for k, v in (d or {}).items() if (s := _spread_from(v)) is not None}


def model_to_dict(m: CostModel) -> dict[str, Any]:
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "key": {"gpu_name": m.gpu_name, "driver_version": m.driver_version, "cuda_driver_version": m.cuda_driver_version},
        "compute_capability": m.compute_capability, "cuda_runtime_version": m.cuda_runtime_version,
        "created_at": m.created_at, "tool_version": m.tool_version, "calibration": m.calibration,
        "units": "ns",
        "costs": {q: {"what": QUANTITIES[q][2], "features": list(c.features), "coef": list(c.coef),
                      "cov": [list(r) for r in c.cov], "relative": c.relative, "relative_to": c.relative_to, "resid_sd": c.resid_sd, "rows": c.rows,
                      "max_abs_residual": c.max_abs_residual(), "residuals": list(c.residuals), "row_index": list(c.row_index)}
                  for q, c in m.costs.items()},
        "node_gpu_ns": m.node_gpu_ns, "eager_gap_ns": m.eager_gap_ns, "eager_tail": _spread_dict(m.eager_tail),
        "first_graph": _spreads_dict(m.first_graph), "torch_capture": _spreads_dict(m.torch_capture),
        "tree_capture": _spreads_dict(m.tree_capture), "first_graph_api": _spreads_dict(m.first_graph_api),
        "sm_count": m.sm_count, "launch": _launch_dict(m.launch), "launch_probes": m.launch_probes,
        "tracer": _spreads_dict(m.tracer), "tracer_sparse": _spreads_dict(m.tracer_sparse),
        "table": m.table,
    }


def model_from_dict(d: dict[str, Any], path: str = "") -> CostModel:
    where = path or "cost model"
    if d.get("format") != FORMAT:
        raise CostModelError(f"{where}: not a graphmode cost model (format {d.get('format')!r}); write one with `graphmode calibrate`")
    if int(d.get("format_version", 0)) > FORMAT_VERSION:
        raise CostModelError(f"{where}: cost model format {d.get('format_version')} is newer than this graphmode reads "
                             f"({FORMAT_VERSION}); upgrade graphmode")
    try:
        costs = {}
        for q in QUANTITIES:
            if q in OPTIONAL_QUANTITIES and q not in d["costs"]:
                continue
            c = d["costs"][q]
            costs[q] = FittedCost(q, tuple(c["features"]), tuple(float(x) for x in c["coef"]),
                                  tuple(tuple(float(x) for x in r) for r in c["cov"]), bool(c["relative"]),
                                  float(c["resid_sd"]), int(c["rows"]), tuple(float(x) for x in c.get("residuals", [])),
                                  tuple(int(x) for x in c.get("row_index", [])), str(c.get("relative_to", "")))
        key = d["key"]
        return CostModel(
            gpu_name=str(key["gpu_name"]), compute_capability=str(d.get("compute_capability", "")),
            driver_version=str(key["driver_version"]), cuda_driver_version=int(key["cuda_driver_version"]),
            cuda_runtime_version=int(d.get("cuda_runtime_version", 0)), created_at=str(d.get("created_at", "")),
            tool_version=str(d.get("tool_version", "")), costs=costs,
            node_gpu_ns={str(k): float(v) for k, v in d.get("node_gpu_ns", {}).items()},
            eager_gap_ns={str(k): float(v) for k, v in d.get("eager_gap_ns", {}).items()},
            eager_tail=_spread_from(d.get("eager_tail")),
            first_graph=_spreads_from(d.get("first_graph")), table=list(d.get("table", [])), calibration=dict(d.get("calibration", {})),
            torch_capture=_spreads_from(d.get("torch_capture")), tree_capture=_spreads_from(d.get("tree_capture")),
            sm_count=int(d.get("sm_count", 0) or 0), first_graph_api=_spreads_from(d.get("first_graph_api")),
            launch=_launch_from(d.get("launch")), launch_probes=list(d.get("launch_probes", []) or []),
            tracer=_spreads_from(d.get("tracer")), tracer_sparse=_spreads_from(d.get("tracer_sparse")), path=path,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CostModelError(f"{where}: incomplete or damaged cost model ({type(e).__name__}: {e}); "
                             "write it again with `graphmode calibrate`") from None


def _with_tracer(m: CostModel, probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The tracer costs fitted from `probes`, as fields of the model: those of the one traced run of now (`tracer`: its
    API filter, tracer.run_configs.single_config) and of sessions 17-18's (`tracer_sparse`), each over the model's
    earlier ones where the probes measure it."""
    now, old = single_config().api_filter, SPARSE_SINGLE.api_filter
    out = {"tracer": {**m.tracer, **fit_tracer_costs(probes, now)}}
    if old != now:
        out["tracer_sparse"] = {**m.tracer_sparse, **fit_tracer_costs(probes, old)}
    return out


def with_launch_costs(m: CostModel, probes: list[dict[str, Any]]) -> CostModel:
    """The model with its launch costs fitted from `probes` (tracer.launch_probes; the probes kept in the model, and
    in `calibration['launch_left_out']` what the fit left out), and the tracer's costs from its traced probes
    (_with_tracer). Launchers the probes do not measure keep the model's earlier costs."""
    fitted, left = fit_launch_costs(probes)
    calibration = {**m.calibration, "launch_probes": len(probes), "launch_left_out": left}
    return dataclasses.replace(m, launch={**m.launch, **fitted}, launch_probes=list(probes), calibration=calibration,
                               **_with_tracer(m, probes))


def with_tracer_costs(m: CostModel, probes: list[dict[str, Any]]) -> CostModel:
    """The model with the one traced run's costs fitted from launch probes made untraced and --traced (_with_tracer;
    the probes kept in `calibration['tracer_probes']`, added to those kept before); its launch costs unchanged."""
    kept = list(m.calibration.get("tracer_probes", []) or [])
    return dataclasses.replace(m, calibration={**m.calibration, "tracer_probes": kept + list(probes)},
                               **_with_tracer(m, probes))


def save_model(m: CostModel, path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(model_to_dict(m), indent=1, allow_nan=False) + "\n")
    return p


def load_model(path: str | os.PathLike[str]) -> CostModel:
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except FileNotFoundError:
        raise CostModelError(f"{p}: no such cost model file; write one with `graphmode calibrate --out {p}`") from None
    except (OSError, json.JSONDecodeError) as e:
        raise CostModelError(f"{p}: cannot be read as a cost model ({e}); write it again with `graphmode calibrate`") from None
    if not isinstance(d, dict):
        raise CostModelError(f"{p}: not a graphmode cost model; write one with `graphmode calibrate`")
    return model_from_dict(d, str(p))


# ---------------------------------------------------------------------------------------------- lookup


def model_file_name(gpu_name: str) -> str:
    """'NVIDIA H200' -> 'costmodel-nvidia-h200.json'."""
    slug = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-") or "gpu"
    return f"costmodel-{slug}.json"


def bundled_dir() -> Path:
    """graphmode/data/ in the installed package (or the checkout)."""
    return bundled_data_dir()


def user_dir() -> Path:
    """Where `graphmode calibrate` writes by default: $XDG_DATA_HOME/graphmode (~/.local/share/graphmode)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "graphmode"


def candidate_files() -> list[Path]:
    """Model files graphmode looks at, most specific first: $GRAPHMODE_COSTMODEL, the user's, the bundled."""
    out: list[Path] = []
    env = os.environ.get("GRAPHMODE_COSTMODEL")
    if env:
        out.append(Path(env))
    for d in (user_dir(), bundled_dir()):
        if d.is_dir():  # a calibration's raw *.measurements.json sits next to its model: not a model
            out.extend(p for p in sorted(d.glob("costmodel-*.json")) if not p.name.endswith(".measurements.json"))
    return out


@dataclass(frozen=True)
class ModelChoice:
    """The model used for a trace, and how well it fits the trace's machine."""

    model: CostModel | None
    match: str  # 'exact' | 'same_gpu' | 'other_gpu' | 'none'
    note: Note | None  # how the model's machine differs from the trace's (None for an exact match)


def choose_model(meta: dict[str, Any], models: list[CostModel]) -> ModelChoice:
    """The model for a trace's GPU: same GPU, driver and CUDA version first; then same GPU; else another GPU (said)."""
    gpu = str(meta.get("gpu_name", ""))
    driver = str(meta.get("driver_version", ""))
    cuda = int(meta.get("cuda_driver_version", 0) or 0)
    if not models:
        return ModelChoice(None, "none", note("no_cost_model"))
    for m in models:
        if m.key == (gpu, driver, cuda):
            return ModelChoice(m, "exact", None)
    for m in models:
        if m.gpu_name == gpu:
            return ModelChoice(m, "same_gpu", note("cost_model_other_driver", gpu=gpu, model_driver=m.driver_version,
                                                   model_cuda=m.cuda_driver_version, driver=driver, cuda=cuda))
    m = models[0]
    return ModelChoice(m, "other_gpu", note("cost_model_other_gpu", gpu=gpu, model_gpu=m.gpu_name, model_driver=m.driver_version))


def find_model(meta: dict[str, Any], path: str | os.PathLike[str] | None = None) -> ModelChoice:
    """The model for a trace: `path` if given (errors raise), else the best of candidate_files()."""
    if path is not None:
        return choose_model(meta, [load_model(path)])
    return choose_model(meta, installed_models())


def installed_models() -> list[CostModel]:
    """The models of candidate_files() that can be read, in their order: what find_model chooses from (read once
    for many traces by analyzers.ranks)."""
    models: list[CostModel] = []
    for p in candidate_files():
        try:
            models.append(load_model(p))
        except CostModelError:
            continue  # a damaged file elsewhere must not stop the report; an explicit path does raise
    return models
