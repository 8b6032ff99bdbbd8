"""Launch overhead saved (eager minus graph) and the break-even replay count with its interval.

The interval is a bootstrap of the two medians. Resampling n iteration times B times and taking
each resample's median is equivalent to drawing the median's order statistic directly: the m-th
smallest of n uniforms is Beta(m, n-m+1), and the empirical quantile function maps it back to an
iteration time. That is exact (not an approximation of the resampling) and costs O(B) instead of
O(B*n), so a run of a million iterations bootstraps as fast as one of ten.
"""

from __future__ import annotations

import math

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.results import BreakEven, ModeMetrics, OverheadSaved, trimmed_mean

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240611


def bootstrap_medians(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of `resamples` bootstrap resamples (with replacement, same size) of `values`."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")

    def empirical_quantile(u: np.ndarray) -> np.ndarray:
        q: np.ndarray = x[np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1)]
        return q

    if n % 2 == 1:
        m = (n + 1) // 2
        return empirical_quantile(rng.beta(m, n - m + 1, resamples))
    m = n // 2
    u_m = rng.beta(m, n - m + 1, resamples)
    # Given the m-th smallest uniform, the other n-m lie uniformly above it: the next is their minimum.
    u_next = u_m + (1.0 - u_m) * rng.beta(1, n - m, resamples)
    medians: np.ndarray = 0.5 * (empirical_quantile(u_m) + empirical_quantile(u_next))
    return medians


def smallest_replays(one_time_ns: float, saved_per_replay_ns: float) -> int:
    """Smallest integer n >= 1 with n * saved >= one_time (saved > 0)."""
    if one_time_ns <= saved_per_replay_ns:
        return 1
    n = math.ceil(one_time_ns / saved_per_replay_ns)
    # Guard the float division at exact multiples: check the inequality itself.
    if (n - 1) >= 1 and (n - 1) * saved_per_replay_ns >= one_time_ns:
        n -= 1
    elif n * saved_per_replay_ns < one_time_ns:
        n += 1
    return n


def _replays_vector(one_time_ns: float, saved: np.ndarray) -> np.ndarray:
    """Vectorised smallest_replays; +inf where nothing is saved."""
    out = np.full(saved.shape, np.inf)
    pos = saved > 0
    s = saved[pos]
    n = np.maximum(np.ceil(one_time_ns / s), 1.0)
    # an infinite saving (a resampled eager period of inf) pays back at once: 0 x inf is not a number
    with np.errstate(invalid="ignore"):
        n = np.where((n - 1 >= 1) & ((n - 1) * s >= one_time_ns), n - 1, n)
        n = np.where(n * s < one_time_ns, n + 1, n)
    out[pos] = n
    return out


def replays_per_draw(one_time_ns: np.ndarray, saved_ns: np.ndarray) -> np.ndarray:
    """Per bootstrap draw, the smallest n >= 1 with n * saved >= one_time (inf: nothing saved), where each draw has its
    own one-time cost (the prediction's). smallest_replays' rule: n * saved >= C  <=>  n * (saved / C) >= 1."""
    c = np.maximum(one_time_ns, 0.0)
    ratio = np.where(c > 0, saved_ns / np.where(c > 0, c, 1.0), np.where(saved_ns > 0, np.inf, -1.0))
    out: np.ndarray = _replays_vector(1.0, ratio)
    return out


def interval_bounds(draws: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap draws of the break-even (inf: a draw that never pays back): the
    draws' 2.5% and 97.5% order statistics."""
    s = np.sort(draws)
    return float(s[int(math.floor(0.025 * s.size))]), float(s[int(math.ceil(0.975 * s.size)) - 1])


def replay_interval(draws: np.ndarray) -> tuple[int | None, int | None, bool]:
    """interval_bounds as replay counts: (low, high, high_never); None for a bound at infinity."""
    low, high = interval_bounds(draws)
    return (int(low) if np.isfinite(low) else None, int(high) if np.isfinite(high) else None, not bool(np.isfinite(high)))



class _Outcome:
    """What every BreakEven of one comparison shares, and the 'not computable' result built from it."""

    def __init__(self, baseline: str, t_eager: float | None, t_graph: float | None, one_time_ns: float | None,
                 run_replays: int, seed: int, resamples: int):
        self.saved = t_eager - t_graph if t_eager is not None and t_graph is not None else None
        self.common = dict(baseline=baseline, eager_ns=t_eager, graph_ns=t_graph, one_time_ns=one_time_ns,
                           saved_per_replay_ns=self.saved, run_replays=run_replays, bootstrap_resamples=resamples,
                           bootstrap_seed=seed, basis="measured" if self.saved is not None else "")
        self.speedup = None
        if t_eager is not None and t_graph is not None and one_time_ns is not None and run_replays >= 1:
            self.speedup = run_replays * t_eager / (one_time_ns + run_replays * t_graph)

    def unknown(self, reason: Note, never: bool = False) -> BreakEven:
        return BreakEven(**self.common, replays=None, never=never, reason=reason, interval_low=None,  # type: ignore[arg-type]
                         interval_high=None, interval_high_never=never, amortised_speedup=self.speedup)

    def result(self, replays: int, low: float, high: float) -> BreakEven:
        return BreakEven(**self.common, replays=replays, never=False, reason=None,  # type: ignore[arg-type]
                         interval_low=int(low) if np.isfinite(low) else None,
                         interval_high=int(high) if np.isfinite(high) else None,
                         interval_high_never=not np.isfinite(high), amortised_speedup=self.speedup)


def break_even(
    baseline: ModeMetrics,
    graph: ModeMetrics | None,
    one_time_ns: float | None,
    run_replays: int,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> BreakEven:
    """Break-even of graph mode against one eager mode, from wall times of the wall pass."""
    t_eager = baseline.wall.median if baseline.wall else None
    t_graph = graph.wall.median if graph is not None and graph.wall else None
    out = _Outcome(baseline.mode, t_eager, t_graph, one_time_ns, run_replays, seed, resamples)
    saved, unknown = out.saved, out.unknown

    if t_eager is None:
        return unknown(note("no_eager_wall_times", baseline=baseline.mode))
    if t_graph is None or graph is None or graph.series is None:
        return unknown(note("no_steady_replays", baseline=baseline.mode))
    if one_time_ns is None:
        return unknown(note("no_one_time_cost", baseline=baseline.mode))
    assert saved is not None and baseline.series is not None
    if saved <= 0:
        return unknown(note("replay_not_faster", baseline=baseline.mode, replay_ns=t_graph, eager_ns=t_eager), never=True)
    replays = smallest_replays(one_time_ns, saved)
    rng = np.random.default_rng(seed)
    boot_saved = bootstrap_medians(baseline.series.wall_ns, resamples, rng) - bootstrap_medians(graph.series.wall_ns, resamples, rng)
    low, high = interval_bounds(_replays_vector(one_time_ns, boot_saved))
    return out.result(replays, low, high)


def overhead_saved(baseline: ModeMetrics, graph: ModeMetrics) -> OverheadSaved:
    """Medians of the baseline mode minus medians of graph mode, per iteration and per kernel."""

    def diff(a: float | None, b: float | None) -> float | None:
        return a - b if a is not None and b is not None else None

    wall = diff(baseline.wall.median if baseline.wall else None, graph.wall.median if graph.wall else None)
    api = diff(baseline.api_total.median if baseline.api_total else None, graph.api_total.median if graph.api_total else None)
    idle = diff(baseline.gpu_idle.median if baseline.gpu_idle else None, graph.gpu_idle.median if graph.gpu_idle else None)
    kernels = baseline.kernels.median if baseline.kernels else None

    def per_kernel(x: float | None) -> float | None:
        return x / kernels if x is not None and kernels else None

    traced = diff(baseline.traced_wall.median if baseline.traced_wall else None,
                  graph.traced_wall.median if graph.traced_wall else None)
    return OverheadSaved(
        baseline=baseline.mode, kernels_per_iteration=kernels, wall_ns=wall, api_ns=api, gpu_idle_ns=idle,
        wall_per_kernel_ns=per_kernel(wall), api_per_kernel_ns=per_kernel(api), gpu_idle_per_kernel_ns=per_kernel(idle),
        graph_faster=(wall > 0) if wall is not None else None, traced_wall_ns=traced,
    )


# How much too long a CPU-bound period of a traced run may be: CUPTI's API records slow every CUDA call
# (measured bounds: docs/benchmarks.md, "What the tool costs"); the break-even interval allows for it.
CPU_BOUND_SLOWDOWN_BOUND = 0.7

# How much too long a period of the timing run (no CUPTI, a few line stamps) may be (docs/benchmarks.md).
TIMING_RUN_SLOWDOWN_BOUND = 0.4

# How much too high a one-time cost from the measuring run may be: CUPTI slows a capture (docs/benchmarks.md).
CAPTURE_SLOWDOWN_BOUND = 0.5

# How far a CPU-bound period of the one traced run may still be from untraced (either way), and how much too high its
# one-time cost, once the tracer's calibrated cost is taken off (analyzers.tracer_cost): the largest residuals
# measured on the third-party set against the programs' own untraced clocks (docs/benchmarks.md, "One traced run").
# ... and where nothing was taken off (a launcher or capture outside PyTorch and XLA: not calibrated), how much too
# long or too high the one run's own figures were: CuPy's eager step 1.78x, its capture 2.81x (s17 call 3)
SINGLE_CPU_BOUND = 0.8
# ... a capture: CuPy's 2.81x (s17 call 3); PyTorch captures as traced, before their calibrated cost comes off (a machine
# whose model has no calibration of the tracer gets them so), up to 4.41x on the 52 graphs and steps of sessions 25-27
# (benchmarks/results/one_run/one_run_ratios.jsonl, traced_ratio; held by tests/test_one_run.py). 1.85 until session 27
SINGLE_CAPTURE_BOUND = 3.45
# either way: 0.72-1.69x process by process (traced: 1.07-2.06x; s17 call 3), 0.67-1.16x (s19 call 3), 1.31-1.81x (s21
# call 3, on a machine whose untraced programs ran 1.3-1.6x slower than in s19); 0.85-2.26x in sessions 25-27 (a JAX
# call's replay 1.21-2.14x, the graphed steps of make_graphed_callables and of a graph per ViT layer 1.33-2.26x, their
# eager steps 0.85-1.75x, a torch.compile decode step's replay 1.48-1.50x; traced processes whose CPU ran 1.5-1.9x
# slower than their fastest tenth: benchmarks/results/one_run/one_run_ratios.jsonl, held by tests/test_one_run.py).
# 0.85 until session 27; 1.3 until session 36, when the JAX loop's call replayed 2.87x and 2.36x its untraced processes'
# (51 us untraced, 134 us with the tracer's calibrated cost taken off), on CPUs that sampled 1.06x and 1.63x their
# fastest tenth (benchmarks/notes/s36, call 6)
CORRECTED_SLOWDOWN_BOUND = 1.9
# PyTorch captures: 0.77-1.72x (traced: 1.21-2.33x) over sessions 17-21; 0.61-3.30x process by process against the
# untraced processes' median on the 52 graphs and steps of 31 traces of sessions 25-27 (traced: 0.48-4.41x;
# benchmarks/results/one_run/one_run_ratios.jsonl, benchmarks/one_run_bounds.py), the highest a ViT's second graph on a
# machine whose traced captures ran 3-4x their untraced ones. tests/test_one_run.py holds this bound to that record.
CORRECTED_CAPTURE_BOUND = 2.3
# How far either way an eager period leveled by an untraced window of the one run (analyzers.untraced_windows) may be
# from the same program's untraced processes: the window reads its own process untraced, and processes of one program
# differ (their untraced eager periods up to 2.1x apart on one machine). 0.67-1.82x the untraced processes' median on
# 69 of them in sessions 25-27: 48 graphs' eager twins and 21 eager-only programs' predicted regions (the
# highest a decode loop's, whose untraced processes read 2.30-4.15 ms; benchmarks/results/one_run/one_run_ratios.jsonl,
# held by tests/test_one_run.py). Until session 27 a graph's was bounded as a traced period, too long only
# (SINGLE_CPU_BOUND), and a prediction's as the timing run's (TIMING_RUN_SLOWDOWN_BOUND either way). 0.85 until session
# 29, whose device call 3 read a ViT's eager periods at 1.88-2.52x in 3 of 3 traced processes, whose own clocks read
# their eager calls 1.6-4.0x the untraced processes' (benchmarks/notes/s29)
WINDOW_EAGER_BOUND = 1.55
# A one-time cost whose capture the one run made with CUPTI detached (tracer.untraced_windows.CaptureController: the
# capture, its end and the instantiation untraced, the first replay traced, nothing calibrated taken off): how much too
# high, and how much too low, against the program's untraced processes (measured: benchmarks/notes/s29)
# (benchmarks/notes/s29: 25 graphs of 16 processes, three device calls, 0.61-2.31x the untraced processes' median,
# while 0.94-1.00x the same process's own clock: the rest is one process against another; session 30, two calls: 21
# graphs 1.03-2.23x, median 1.41, 0.95-1.00x their own clock; session 31's probe: a capture made just after CUPTI
# detached ran 0.93-2.98x, median 1.19, its untraced twin in one process (13 processes), as one made after 70 ms of
# numpy work with no session at all did, median 1.38: benchmarks/notes/s31; session 32, five calls: 26 graphs
# 0.91-2.36x, the decode step's 0.99-2.36x with its detach at 2-70 ms, the highest in a process whose CPU ran 1.3x slow
# at the capture: benchmarks/notes/s32; benchmarks/results/one_run/one_run_ratios.jsonl, held by tests/test_one_run.py).
# 1.35 until session 32; 1.4 until session 34, whose call 3 read the decode step's at 2.43x in a process whose own clock
# read its eager step at 6.2 ms against 2.4-3.0 untraced (graphmode's figure 0.92x that process's own clock;
# benchmarks/notes/s34).
UNTRACED_CAPTURE_BOUND = 1.45
# 0.7 until session 35, whose linger (the default since) read a ViT's first capture at 0.55x and 0.56x the untraced
# processes' median (1.00x its own process's clock; the untraced processes' first capture blocks 13.9, 15.8 and 35.4 ms:
# benchmarks/notes/s35)
UNTRACED_CAPTURE_LOW_BOUND = 0.85
# ... and how much too low (the untraced process's up to 1 + this times the corrected figure): PyTorch one-time costs read
# 0.60-0.66x the untraced process's on a ViT's first two graphs (0.75x already as traced; s21 call 3): the process's
# own variation, which the correction cannot know
CORRECTED_CAPTURE_LOW_BOUND = 0.7


def break_even_series(
    baseline: str,
    eager_values: np.ndarray,
    graph_values: np.ndarray,
    units_per_replay: int,
    one_time_ns: float | None,
    run_replays: int,
    eager_inflation: float = 0.0,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    graph_inflation: float = 0.0,
    one_time_inflation: float = 0.0,
    eager_spread: float = 0.0,
    one_time_deficit: float = 0.0,
) -> BreakEven:
    """Break-even of one graph of a script from per-iteration periods: an eager iteration's (one unit of
    work) and a replay's (units_per_replay units), each summarised by its trimmed mean (results.trimmed_mean).

    The interval draws both trimmed means from their normal sampling distributions (standard errors
    as results.trimmed_mean) `resamples` times. `eager_inflation` / `graph_inflation`: how much longer
    than untraced the eager / replay periods may be (0: trusted); the interval's upper end then also
    allows an eager period that much shorter, its lower end a replay period that much shorter.
    `one_time_inflation`: how much higher than untraced the one-time cost may be; the lower end allows it
    that much lower. `eager_spread`: how far either way the eager period may be from untraced (a traced period with
    the tracer's calibrated cost taken off, analyzers.tracer_cost): the upper end allows it that much shorter, the
    lower end that much longer. `one_time_deficit`: how much lower than untraced the one-time cost may be; the upper end
    allows it that much higher."""
    e = np.asarray(eager_values, dtype=np.float64)
    g = np.asarray(graph_values, dtype=np.float64)
    e, g = e[np.isfinite(e)], g[np.isfinite(g)]
    te, se_e = trimmed_mean(e)
    tg, se_g = trimmed_mean(g)
    t_eager = te * units_per_replay if e.size else None
    t_graph = tg if g.size else None
    out = _Outcome(baseline, t_eager, t_graph, one_time_ns, run_replays, seed, resamples)
    saved, unknown = out.saved, out.unknown

    if t_eager is None:
        return unknown(note("graph_no_eager_iterations", baseline=baseline))
    if t_graph is None:
        return unknown(note("graph_no_steady_replays", baseline=baseline))
    if one_time_ns is None:
        return unknown(note("graph_no_one_time_cost", baseline=baseline))
    assert saved is not None
    if saved <= 0:
        return unknown(note("graph_replay_not_faster", baseline=baseline, replay_ns=t_graph, eager_ns=t_eager), never=True)
    replays = smallest_replays(one_time_ns, saved)
    rng = np.random.default_rng(seed)
    boot_saved = rng.normal(te, se_e, resamples) * units_per_replay - rng.normal(tg, se_g, resamples)
    low, high = interval_bounds(_replays_vector(one_time_ns, boot_saved))
    shorter = max(eager_inflation, eager_spread)
    if (shorter > 0 or one_time_deficit > 0) and np.isfinite(high):
        deflated = t_eager / (1 + shorter) - t_graph
        high = max(high, float(smallest_replays(one_time_ns * (1 + one_time_deficit), deflated)) if deflated > 0 else np.inf)
    if (graph_inflation > 0 or one_time_inflation > 0 or eager_spread > 0) and np.isfinite(low):
        low = min(low, float(smallest_replays(one_time_ns / (1 + one_time_inflation),
                                              t_eager * (1 + eager_spread) - t_graph / (1 + graph_inflation))))
    # the point estimate lies inside its interval (the draws and the allowance could leave it outside)
    return out.result(replays, min(low, replays), max(high, replays))
