"""The analyzers' results: frozen, typed dataclasses that hold plain numbers.

Every duration is in nanoseconds (float, because medians of an even count fall between two
integers). A field that cannot be computed for a trace is `None`, and `TraceAnalysis.cannot_compute`
says why in a sentence. docs/metrics.md gives each metric's formula. The names here are an
interface (the HTML and JSON reports read them): add fields, do not rename them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphmode.analyzers.coverage_results import GraphBudget, GraphCoverage, TorchGraphs
from graphmode.analyzers.cpu_speed import CpuSpeed
from graphmode.analyzers.notes import Note


@dataclass(frozen=True)
class Stat:
    """Spread of one metric over iterations (or replays): never only a mean."""

    n: int
    median: float
    p10: float
    p90: float
    mean: float
    min: float
    max: float
    trimmed_mean: float = float("nan")  # mean of the middle 80% (TRIM cut from each end)

    @staticmethod
    def of(values: np.ndarray) -> Stat | None:
        """Median, p10, p90 (linear interpolation), mean, min, max, trimmed mean; None for no values."""
        v = np.asarray(values, dtype=np.float64)
        if v.size == 0:
            return None
        p10, median, p90 = np.percentile(v, [10.0, 50.0, 90.0])
        return Stat(int(v.size), float(median), float(p10), float(p90), float(v.mean()), float(v.min()), float(v.max()),
                    trimmed_mean(v)[0])

    @staticmethod
    def of_finite(values: np.ndarray) -> Stat | None:
        """Stat.of over the finite values only (NaN or inf: a period that was not measured)."""
        v = np.asarray(values, dtype=np.float64)
        return Stat.of(v[np.isfinite(v)])

    @staticmethod
    def from_row(row: Sequence[Any]) -> Stat | None:
        """From aggregates already computed over a group (SQL's stat_sql, or numpy per group): count, median, p10, p90,
        mean, min, max, the quantiles interpolated as Stat.of's. None for an empty group. No trimmed mean."""
        n = int(row[0] or 0)
        if n == 0:
            return None
        return Stat(n, *(float(v) for v in row[1:7]))


def stat_sql(expr: str) -> str:
    """The SQL aggregates Stat.from_row reads, for `expr` over a group: DuckDB's quantile_cont interpolates as
    np.percentile's 'linear', Stat.of's definition."""
    return (f"count({expr}), quantile_cont({expr}, 0.5), quantile_cont({expr}, 0.1), quantile_cont({expr}, 0.9), "
            f"avg({expr}), min({expr}), max({expr})")


TRIM = 0.10


def trimmed_mean(values: np.ndarray) -> tuple[float, float]:
    """(mean of the values with the lowest and highest TRIM share cut off, its standard error).

    The standard error is Tukey and McLaughlin's: the winsorized standard deviation over
    (1 - 2 TRIM) sqrt(n). A period's throughput is a mean (n iterations take n times it), but one-off
    iterations (autotuning in the first steps, a garbage collection) would dominate a plain mean and
    skewed ones (a dispatcher that stalls every few calls) are missed by the median."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = v.size
    if n == 0:
        return float("nan"), float("nan")
    g = int(np.floor(TRIM * n))
    tm = float(v[g:n - g].mean())
    if n < 3:
        return tm, 0.0
    w = np.clip(v, v[g], v[n - g - 1])
    return tm, float(w.std(ddof=1) / ((1 - 2 * TRIM) * np.sqrt(n)))


@dataclass(frozen=True, eq=False)
class IterationSeries:
    """Per-iteration values of one mode, aligned by position (index i is one iteration).

    Arrays from the traced pass have the traced pass's iterations; `wall_ns` has the wall pass's.
    Not in the JSON report (it can be long); for plots.
    """

    wall_iteration: np.ndarray  # iteration numbers of wall_ns
    wall_ns: np.ndarray
    traced_iteration: np.ndarray  # iteration numbers of the arrays below
    traced_wall_ns: np.ndarray
    api_launch_ns: np.ndarray
    api_sync_ns: np.ndarray
    api_other_ns: np.ndarray
    gpu_busy_ns: np.ndarray
    gpu_idle_ns: np.ndarray
    gpu_gap_ns: np.ndarray
    kernels: np.ndarray


@dataclass(frozen=True)
class ModeMetrics:
    """Per-iteration metrics of one mode (`eager`, `eager_sync_each` or `graph`)."""

    mode: str
    wall_source: str  # 'timing' (undistorted) or 'traced' (no timing pass: includes tracer overhead)
    iterations: int  # iterations in the pass that gave the wall time
    wall: Stat | None  # iteration marker span
    traced_iterations: int  # iterations in the traced pass (0 without one)
    traced_wall: Stat | None
    api_launch: Stat | None  # CPU time in outermost kernel_launch + graph_launch calls
    api_sync: Stat | None  # ... in sync calls
    api_other: Stat | None  # ... in every other category
    api_total: Stat | None
    gpu_busy: Stat | None  # union of GPU spans inside the iteration
    gpu_idle: Stat | None  # iteration span minus busy
    gpu_gap: Stat | None  # first GPU start to last GPU end, minus busy: idle between GPU work
    kernels: Stat | None  # kernel spans per iteration
    graph_launches: Stat | None  # whole-graph spans per iteration (graph-detail passes)
    series: IterationSeries | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class OverheadSaved:
    """Launch overhead saved by graph mode: `baseline` (an eager mode) minus `graph`, medians."""

    baseline: str
    kernels_per_iteration: float | None  # median kernels of the baseline mode (the work unit)
    wall_ns: float | None  # per iteration
    api_ns: float | None  # CPU time in CUDA API calls, per iteration
    gpu_idle_ns: float | None  # GPU idle inside the iteration, per iteration
    wall_per_kernel_ns: float | None
    api_per_kernel_ns: float | None
    gpu_idle_per_kernel_ns: float | None
    graph_faster: bool | None  # wall_ns > 0
    # the traced pass's wall saving, beside its API and idle savings (wall_ns is the wall pass's: the timing pass where
    # there is one), so that a table of the traced pass's split compares one pass with itself
    traced_wall_ns: float | None = None


@dataclass(frozen=True)
class GraphCost:
    """One-time cost of one graph, from the `op` markers (or graph_events) of one pass."""

    pass_id: int
    graph_id: int
    label: str
    source: str  # 'markers' or 'graph_events'
    build_ns: float | None  # stream capture (begin..end) or explicit node API calls
    instantiate_ns: float | None
    upload_ns: float | None
    first_launch_ns: float | None  # launch + synchronize of the first launch
    steady_replay_ns: float | None  # median graph-mode iteration of the same pass
    first_launch_excess_ns: float | None  # first_launch - steady_replay
    total_ns: float  # build + instantiate + upload + first_launch_excess + framework + untraced_correction + call + tracer_correction (missing parts as 0)
    # PyTorch's own work around the CUDA calls in its cudagraph-tree recording call or `with torch.cuda.graph`
    # block (synchronizations, emptying its cache, memory-pool bookkeeping, destroying the captured graph): the
    # window's wall time less its capture, instantiate and upload calls and a first replay made inside it; None:
    # no such window heard
    framework_ns: float | None = None
    # The timing run's (no CUPTI) PyTorch capture windows of this graph less the measuring run's same windows:
    # what CUPTI added to everything inside them (the capture, instantiation, PyTorch's work); or, for a capture
    # outside PyTorch, the timing run's span of it less the measuring run's calls (capture_lines); in total_ns.
    # None: no window or span, or the timing run did not hear them all
    untraced_correction_ns: float | None = None
    # The script's statement around each of those windows (the call of a cudagraph-trees function, the `with` block),
    # as the timing run timed it between the stamps of the line before and the line after: its time outside the
    # windows (Dynamo's guards, the dispatch into the tree, the bookkeeping and outputs after a recording), less
    # what the same statement takes without a window (analyzers.per_graph.call_part); in total_ns. None: no timing
    # run that stamped those lines
    call_ns: float | None = None
    call_lines: tuple[tuple[str, str], ...] = ()  # per window: the two lines stamped around it ('file:line')
    # A capture outside PyTorch (CuPy, cuda-python): the two lines ('file:line') between whose stamps the timing run
    # timed it through its instantiation; then untraced_correction_ns is that span less the measuring run's capture,
    # instantiate and upload calls (analyzers.timing_run.CaptureSpan). () otherwise
    capture_lines: tuple[str, ...] = ()
    # What the one traced run's tracing added to this graph's capture, taken off (negative; analyzers.tracer_cost:
    # the calibrated cost per captured graph and per captured kernel); in total_ns. None: not corrected
    tracer_correction_ns: float | None = None
    # The one traced run captured this graph with CUPTI detached (tracer.untraced_windows.CaptureController): build_ns
    # is the program's capture_begin to capture_end, instantiate_ns its capture_end (the end of the capture and the
    # instantiation), both untraced; the first replay was traced, and nothing calibrated comes off
    capture_untraced: bool = False
    # What graphmode's one run spent inside this graph's PyTorch capture blocks (its memory samples, the detach and the
    # attach with its own empty graph: analyzers.script_graphs tracer gaps), left out of total_ns: a clock of the
    # program's own around the capture includes it. None: none recorded (a capture made traced, earlier traces)
    tracer_gaps_ns: float | None = None


@dataclass(frozen=True)
class BreakEven:
    """Smallest n with n*t_eager >= one_time + n*t_graph (n counts replays incl. the first launch)."""

    baseline: str
    eager_ns: float | None  # median baseline iteration
    graph_ns: float | None  # median steady graph replay (iteration)
    one_time_ns: float | None  # sum of GraphCost.total_ns over the pass's graphs
    saved_per_replay_ns: float | None  # eager_ns - graph_ns
    replays: int | None  # None: never (never=True) or not computable (never=False); see reason
    never: bool  # a replay is not faster than the baseline iteration: the graph never pays back
    reason: Note | None  # why replays is None (a note, worded by reports.notes); None when it is a number
    interval_low: int | None  # 95% bootstrap interval of replays (2.5th percentile)
    interval_high: int | None  # 97.5th percentile; None with interval_high_never
    interval_high_never: bool  # more than 2.5% of resamples saved nothing: the upper end is "never"
    run_replays: int  # replays the run did: steady iterations + the first launch
    amortised_speedup: float | None  # run_replays*t_eager / (one_time + run_replays*t_graph)
    bootstrap_resamples: int
    bootstrap_seed: int
    # how the saving was obtained: 'measured' (eager work and replays both ran in the trace), 'predicted' (a cost
    # model's counterfactual), '' where no saving is stated
    basis: str = ""


@dataclass(frozen=True)
class KernelComparison:
    """The same kernel (by name) eager vs inside a graph: GPU duration medians over launches."""

    name: str
    eager_mode: str
    eager_count: int
    eager: Stat | None
    graph_count: int
    graph: Stat | None
    difference_ns: float | None  # graph median - eager median (negative: faster in the graph)
    sources: tuple[str, ...] = ()  # 'file:line function' lines that launched it (analyzers.sources), where recorded


@dataclass(frozen=True)
class SourceLine:
    """GPU work attributed to one user Python line: the graph nodes it created in one graph during
    capture, or the kernels/copies it launched eagerly (recorded with `--launch-sources`)."""

    source: str  # 'file:line function'
    kind: str  # 'graph node' or 'eager launch'
    graph_id: int  # the graph of the nodes; 0 for eager launches
    kernels: tuple[str, ...]  # kernel (or memcpy/memset) names, most GPU time first, at most MAX_KERNELS_PER_LINE
    distinct_kernels: int  # names in all, kernels may list fewer
    count: int  # graph nodes created by the line, or eager launches made by it
    gpu_spans: int  # GPU spans measured: node spans over all replays (node detail), or eager kernels
    gpu_median_ns: float | None  # median span duration; None without measured spans (graph-detail pass)
    gpu_total_ns: float | None  # GPU time of all those spans


@dataclass(frozen=True)
class CriticalPath:
    """Critical path of a graph's recorded topology with measured median node durations."""

    pass_id: int
    graph_id: int
    label: str
    nodes: int
    edges: int
    has_parallel_branches: bool
    serial_ns: float  # sum of median node durations: a fully serialised replay
    critical_path_ns: float  # longest dependency chain: a perfectly parallel replay
    measured_span: Stat | None  # first node start to last node end, per replay
    parallelism_delivered: float | None  # (serial - measured) / (serial - critical); 1 = all of it
    path_node_ids: tuple[int, ...]
    path_names: tuple[str, ...]


@dataclass(frozen=True)
class Distortion:
    """How much the tracer slowed a mode: traced-pass vs timing-pass median iteration."""

    mode: str
    timing_median_ns: float
    traced_median_ns: float
    slowdown_ns: float
    ratio: float  # traced / timing


@dataclass(frozen=True)
class Pitfall:
    """A problem people hit with CUDA Graphs, found in the trace (analyzers.pitfalls, docs/metrics.md)."""

    kind: str  # capture_failed | repeated_instantiation | never_paid_back | gaps_between_replays | graph_slower
    severity: str  # 'error' (something broke) or 'warning' (savings lost)
    # the measured numbers and names (durations in ns): reports.pitfall_words words its title, evidence and advice
    facts: Note
    where: str  # user source 'file:line function', '' when not known
    graph_id: int = 0  # 0: not about one graph (or all of them)
    cost_ns: float | None = None  # time the problem cost in this run, when measurable


@dataclass(frozen=True)
class CpuCategory:
    """Sampled CPU time of one kind of code (innermost frame of each sample)."""

    name: str  # user | framework | cuda_binding | tracer | other
    ns: float
    fraction: float  # of the sampled time


@dataclass(frozen=True)
class CpuFrame:
    """One function or user line with its sampled time."""

    function: str
    location: str  # 'file:line'
    category: str
    ns: float


@dataclass(frozen=True)
class CpuProfile:
    """Summary of the pyinstrument session stored in meta.cpu_profile (analyzers.cpu_profile)."""

    duration_ns: float  # wall time the profiler ran
    sampled_ns: float  # time covered by samples
    samples: int
    interval_ns: float
    categories: tuple[CpuCategory, ...]
    top_frames: tuple[CpuFrame, ...]  # innermost frames by self time
    top_user_lines: tuple[CpuFrame, ...]  # innermost user line of each sample, by time including callees
    cuda_api_ns: float | None  # CPU time in outermost CUDA API calls (CUPTI), same run; None: no traced pass


@dataclass(frozen=True)
class Headline:
    """The run's one verdict and its figures (analyzers.headline); reports/headline.py words it."""

    verdict: str  # one of VERDICTS
    subject: str  # 'step' | 'graph' | 'graph_mode' (a built-in workload's passes) | 'prediction' | 'none'
    step_id: int | None  # subject 'step'
    graph_ids: tuple[int, ...]  # the graphs it is about (a step's, in order; one graph; () for graph_mode)
    baseline: str  # the eager mode compared with ('eager', 'eager_sync_each'; '' none)
    eager_ns: float | None  # per step / replay / iteration
    graphed_ns: float | None
    saved_ns: float | None
    saved_per_kernel_ns: float | None  # graph_mode: per kernel of an eager iteration
    one_time_ns: float | None  # never below zero
    break_even: int | None
    interval_low: int | None
    interval_high: int | None
    interval_high_never: bool
    run_replays: int  # replays (graphed steps) this run made, the first included
    net_ns: float | None  # this run's saving less the one-time cost
    period_source: str  # where the periods come from ('timing': untraced; a traced run's name)
    one_time_statement: str  # subject 'step': the graphing statement whose untraced time is the one-time cost
    reason: str  # why the verdict is unknown or no_graph: 'no_eager_twin' | 'no_one_time' | 'capture_failed' |
    #              'never_replayed' | 'not_instantiated' | 'no_graph_built' | 'no_baseline' | ''
    basis: str = ""  # 'measured' | 'predicted' (no eager twin: the saving is analyzers.counterfactual's) | ''
    # subject 'prediction' of a step at several input shapes (one graph per shape): how many, and what all their graphs
    # cost once (the figures above are the first shape's); 0 and None otherwise
    shapes: int = 0
    shapes_one_time_ns: float | None = None


@dataclass(frozen=True)
class TraceAnalysis:
    """Everything `analyzers.analyze(trace)` computes for one trace."""

    path: str
    workload: str
    status: str
    status_reason: str
    dropped_records: int
    timing_pass_id: int | None
    traced_pass_id: int | None
    traced_detail: str | None  # 'graph' or 'node'
    modes: tuple[ModeMetrics, ...]
    overhead_saved: tuple[OverheadSaved, ...]  # one per eager mode present, when graph mode is present
    graph_costs: tuple[GraphCost, ...]
    break_even: tuple[BreakEven, ...]  # one per eager mode present
    kernels: tuple[KernelComparison, ...]
    critical_paths: tuple[CriticalPath, ...]
    distortion: tuple[Distortion, ...]
    warnings: tuple[Note, ...]  # data lost or distorted: dropped records, incomplete run, slow tracer
    cannot_compute: tuple[Note, ...]  # what cannot be computed for this trace, and why
    pitfalls: tuple[Pitfall, ...] = ()  # diagnostics (analyzers.pitfalls), most severe first
    cpu_profile: CpuProfile | None = None  # the run's pyinstrument profile summarised, when it has one
    source_lines: tuple[SourceLine, ...] = ()  # GPU work per user source line (analyzers.sources), most GPU time first
    graphs: tuple[GraphResult, ...] = ()  # one per graph of a script trace, the headline's graph first
    totals: GraphTotals | None = None  # all graphs of a script trace together
    steps: tuple[StepResult, ...] = ()  # recurring steps that replay graphs (analyzers.steps), the headline's first
    headline: Headline | None = None  # the one verdict every view renders (analyzers.headline)

    coverage: GraphCoverage | None = None  # share of the work that ran inside graphs, per phase (analyzers.coverage)
    torch_graphs: TorchGraphs | None = None  # PyTorch's cudagraph decisions, when the program used torch (analyzers.torch_graphs)
    graph_budget: GraphBudget | None = None  # memory and start-up time per graph (analyzers.graph_budget)

    prediction: Prediction | None = None  # what a graph would cost and save, predicted from the eager work (analyzers.predict)
    # how fast the CPU ran on each run's main thread, where the run sampled it (analyzers.cpu_speed)
    cpu_speed: tuple[CpuSpeed, ...] = ()

    def primary_graph(self) -> GraphResult | None:
        """The graph the headline names (the first of `graphs`), when the trace has per-graph results."""
        return self.graphs[0] if self.graphs else None

    def mode(self, name: str) -> ModeMetrics | None:
        return next((m for m in self.modes if m.mode == name), None)

    def primary_break_even(self) -> BreakEven | None:
        """The headline comparison: against `eager` if present, else `eager_sync_each`."""
        for base in ("eager", "eager_sync_each"):
            for b in self.break_even:
                if b.baseline == base:
                    return b
        return None

    def primary_overhead_saved(self) -> OverheadSaved | None:
        for base in ("eager", "eager_sync_each"):
            for o in self.overhead_saved:
                if o.baseline == base:
                    return o
        return None


@dataclass(frozen=True)
class Period:
    """Steady-state period of one mode of one graph's work (analyzers.periods, docs/metrics.md)."""

    mode: str  # 'eager' | 'graph'
    iterations: int  # steady iterations with a period (warm-ups and first launches excluded)
    period: Stat | None  # GPU start to the next iteration's GPU start: the time an iteration takes
    work: Stat | None  # the period less other GPU work inside it when GPU-bound: what savings use
    cpu_period: Stat | None  # launch call to the next iteration's launch call (where recorded)
    gpu_busy: Stat | None  # GPU time of the iteration's own work
    other_gpu: Stat | None  # other GPU work inside the period (a harness's cache flush, eager work between replays)
    bound: str  # 'gpu' | 'cpu' | 'mixed' (neither side in 80% of iterations) | 'single' | 'unknown'
    gpu_bound_share: float | None  # share of iterations launched before the previous one's GPU work ended
    pass_id: int
    run: str  # the pass it comes from: 'measure', 'detail', 'single', 'timing' (CPU-bound rows timed untraced), ...
    streams: int  # CUDA streams its iterations ran on
    traced_work: Stat | None = None  # run 'timing': the work the measuring run measured for the same iterations


@dataclass(frozen=True)
class GraphResult:
    """One graph of the run: what it cost, what a replay saves against the eager work it replaces, and
    after how many replays it pays back (analyzers.per_graph)."""

    graph_id: int
    label: str
    site: str  # 'file:line function' of the line that captured or built it ('' unknown)
    origin: str  # 'capture' | 'explicit' | 'unknown'
    status: str  # 'replayed' | 'never_replayed' | 'capture_failed' | 'never_instantiated' | 'built_before_tracing'
    replays: int  # replays in the run, the first launch included
    units_per_replay: int  # eager iterations one replay does the work of (N for an unrolled loop)
    nodes: int
    eager: Period | None
    graph: Period | None
    eager_basis: Note | None  # how its eager iterations were found (None: not found)
    warmup_iterations: int  # eager iterations right before its capture, reported as warm-up
    cost: GraphCost | None
    break_even: BreakEven | None
    saved_in_run_ns: float | None  # steady replays x saved per replay
    notes: tuple[Note, ...]  # small samples, distortion, how eager was matched
    # no eager twin: what its kernels would cost launched eagerly, predicted (analyzers.counterfactual); its
    # break_even then has basis 'predicted'
    counterfactual: Counterfactual | None = None


@dataclass(frozen=True)
class LauncherPrice:
    """The kernels of a graph that one eager launcher would launch, and what the cost model says one costs."""

    launcher: str  # a key of analyzers.costmodel.LAUNCHERS, or 'cuLaunchKernel' (the model's raw launch)
    kernels: int
    per_kernel_ns: float  # the calibration's median
    measured: bool  # False: the model has no calibration of this launcher; priced at the raw launch instead


@dataclass(frozen=True)
class Counterfactual:
    """What one replay of a graph whose kernels never ran outside it would cost if the framework that made them
    launched them one by one (analyzers.counterfactual, docs/metrics.md "Counterfactual"): the CPU side from the cost
    model's per-framework launch costs, the GPU side from the work the graph's kernels did. Predicted, not measured."""

    graph_id: int
    framework: str  # 'inductor' | 'xla' | 'torch' | 'raw' (cuLaunchKernel from the program's own code)
    kernels: int
    other_nodes: int  # nodes that are not kernels (memcpy, memset, ...): priced as kernels of the same launcher
    launchers: tuple[LauncherPrice, ...]
    per_call_ns: float  # the framework's own cost per call (guards, wrapper, dispatch), the calibration's median
    cpu: Estimate  # per_call + the kernels' launches
    gpu_ns: float  # the kernels' GPU time, with the idle an eager launch leaves between kernels
    eager: Estimate  # max(cpu, gpu): one eager call
    bound: str  # 'cpu' | 'gpu': which side bounds the eager call
    graphed_ns: float  # the measured replay period it is compared with
    saved: Estimate  # eager - graphed
    model_path: str  # the cost model it used


@dataclass(frozen=True)
class GraphTotals:
    """All graphs of the run together."""

    graphs_built: int
    graphs_replayed: int
    replays: int
    build_ns: float  # capture/build + instantiate + upload (+ PyTorch's recording work, framework_ns) of every graph
    one_time_ns: float  # sum of their one-time costs (first-launch excess included)
    saved_ns: float | None  # sum over replayed graphs with an eager baseline of replays x saved per replay
    net_ns: float | None  # saved - one-time cost of those graphs
@dataclass(frozen=True)
class StepSegment:
    """One segment of a recurring step: a graph's replay (against its eager twin: the same kernels, run eagerly
    at the same place in the eager step) or an eager stretch between graphs, which both modes run eagerly
    (analyzers.steps, docs/metrics.md "Steps and segments"). Spans run from the segment's first GPU work to
    the next segment's, so a step's segments add up to its period."""

    position: int  # order in the step
    kind: str  # 'graph' | 'eager' (work both modes run eagerly between graphs)
    graph_id: int  # the graph replayed here; 0 for an eager stretch
    eager: Stat | None  # its span in the eager steps
    graphed: Stat | None  # its span in the graphed steps
    saved_ns: float | None  # eager minus graphed (trimmed means); for an eager stretch: the change in the remainder


@dataclass(frozen=True)
class OtherWay:
    """The same step run another way in the program: a loop without graphs whose steps start at the same line as the
    step's graphed ones (the uncompiled model, or torch.compile without graphs, beside reduce-overhead's graphs; a
    baseline loop), compared with the step at step level (analyzers.steps.with_other_ways). Measured, in the same
    process, but with other kernels than the graphs replay: the saving holds what graphing changed and whatever else
    the other way changed (a compiler's fusions, other libraries)."""

    line: str  # 'file:line' that starts both loops' steps
    source: str  # how the eager loop was found (its iterations' source, e.g. 'repeat 218 204')
    eager: Stat  # its steps' periods
    eager_ns: float  # trimmed mean
    graphed_ns: float  # the step's graphed period (trimmed mean)
    saved_ns: float  # per step
    eager_kernels: int  # kernels an eager step of that loop runs
    graph_kernels: int  # kernels the step's graphs replay
    period_source: str  # the eager loop's periods: 'corrected' (the one traced run, its tracer's calibrated cost taken off) | 'timing' | a pass name (as traced)
    break_even: int | None  # replays of the step until its one-time cost is paid back at this saving (None: never)


@dataclass(frozen=True)
class StepResult:
    """A recurring step of the program that replays graphs: its eager and graphed periods, what it saves, the
    one-time cost of all its graphs and its break-even (analyzers.steps)."""

    step_id: int
    label: str  # e.g. 'step of graphs 1, 4'
    graphs: tuple[int, ...]  # the graph ids replayed in each step, in order
    eager: Stat | None  # eager step period (the program's own time per step)
    graphed: Stat | None  # graphed step period
    eager_steps: int
    graphed_steps: int  # graphed steps in the run (with a period)
    eager_ns: float | None  # trimmed means
    graphed_ns: float | None
    saved_ns: float | None  # per step
    one_time_ns: float | None  # all the step's graphs, with the warm-ups a graphing call threw away
    # 'graphs' (sum of the graphs' one-time costs) | 'statement' (the graphing statement, timed untraced by the timing
    # run) | 'statement_corrected' (timed by the one traced run's stamps, the tracer's calibrated cost taken off)
    one_time_basis: str
    one_time_statement: str  # 'file:line' of that statement ('' unless basis 'statement')
    break_even: BreakEven | None
    basis: str  # 'measured' (an eager twin of the step ran) | 'predicted' | 'none'
    period_source: str  # 'timing' (the timing run's untraced periods, segments scaled to them) | the measuring run's name
    segments: tuple[StepSegment, ...]
    graphs_saved_ns: float | None  # the graphs' segment savings added up
    remainder_saved_ns: float | None  # the change in the eager stretches
    invariant_residual_ns: float | None  # saved_ns - graphs_saved_ns - remainder_saved_ns (noise of the trimmed means)
    saved_in_run_ns: float | None  # saved per step x graphed steps (the first included)
    # where the step had no eager twin: the same step run another way in the program, measured at step level
    other_way: OtherWay | None = None


# ---- Prediction (issue 11): what a CUDA graph would cost and save, before it is built (analyzers.predict) ----


@dataclass(frozen=True)
class Estimate:
    """A predicted duration (ns) and its 95% interval (model spread and eager sample, docs/metrics.md)."""

    ns: float
    low_ns: float
    high_ns: float


@dataclass(frozen=True)
class PredictedGraph:
    """The graph a stream capture of one eager iteration would build (analyzers.eager_graph)."""

    nodes: int
    edges: int
    kernels: int
    memcpys: int
    memsets: int
    host_nodes: int
    streams: int
    cross_stream_edges: int
    event_pairing: str  # 'exact' | 'inferred' (a record's stream and event guessed) | 'none' (no events)
    serial_ns: float  # sum of the nodes' eager GPU durations (medians per position)
    critical_path_ns: float  # longest dependency chain of those durations plus the model's per-node cost
    critical_path_nodes: int


@dataclass(frozen=True)
class CaptureBreaker:
    """Calls inside the region that stream capture forbids (or work it would leave out), with their line."""

    kind: str  # sync | query | host_read | blocking_copy | blocking_memset | allocation | free | uncaptured_stream | unjoined_stream | external_event
    api: str  # the call's name ('' for stream-level findings)
    where: str  # 'file:line function' from api_calls.source; '' when not recorded
    calls: int  # calls (or operations, streams, waits) found over the iterations looked at
    per_iteration: float  # calls / iterations looked at (what to do: reports.pitfall_words.BREAKER_ADVICE[kind])


@dataclass(frozen=True)
class CaptureAdvice:
    """What to capture and how (analyzers.capture_advice): the script's own lines one iteration of the region runs, and
    for a PyTorch program the capture API that fits what the trace shows (a heuristic from kernel names and calls)."""

    lines: str  # 'file.py:A-B,C-D': spans of the script's lines run inside most iterations; '' when unknown
    lines_from: str  # 'line_stamps' | 'launch_sources' | '' (unknown)
    lines_unknown: Note | None  # why `lines` is '' (lines_unrecorded, lines_not_in_iteration)
    # 'torch_cuda_graph' (around the step) | 'torch_cuda_graph_per_shape' (one per shape, or torch.compile's
    # reduce-overhead) | 'torch_cuda_graph_whole_step' (a training step with its optimizer) | 'make_graphed_callables'
    # (the model's forward and backward; the optimizer eager) | 'cupy_stream_capture' (CuPy's kernels, no PyTorch) |
    # '' (neither)
    api: str
    reasons: tuple[Note, ...]  # the evidence for `api` (or why there is none) and what must move out of the region first


@dataclass(frozen=True)
class StepMemory:
    """What one region's graph would hold (bytes; analyzers.step_memory): the private pool a capture of the step would
    reserve, by PyTorch's caching allocator's rules, median over its recurrences with the least and most of them; and
    the median peak of the step's own live bytes, which the pool rounds up to its segments; `steps`: recurrences read.
    The process's first graph also holds the library workspaces its capture stream needs (`workspace_bytes`)."""

    bytes: int
    low_bytes: int
    high_bytes: int
    live_bytes: int
    steps: int
    # included in bytes, low_bytes and high_bytes: the cuBLAS workspaces the process's first capture allocates in its
    # pool (one per workspace the eager program made: torch.cuda.graph captures on a stream of its own)
    workspace_bytes: int = 0
    # the segments the pool would allocate (cudaMalloc) for the step's own blocks, median over the recurrences: a
    # capture allocates them inside it (analyzers.predict prices them); the workspaces' are not counted
    segments: int = 0


@dataclass(frozen=True)
class ShapeGroup:
    """A step that changes input shape: one graph per shape (its regions, "shape k of N"), and what they cost together."""

    basis: Note  # the step's basis, without its shape
    labels: tuple[str, ...]  # its regions, shape 1 first
    shapes: int
    # all the shapes' graphs, shape k priced as the process's k-th graph (its first-graph extra and PyTorch's
    # first-capture work once); the sum of each graph's point and interval ends (their draws share one seed)
    one_time: Estimate | None
    memory_bytes: int | None  # what the shapes' graphs would hold, each in its own pool (the sum of their peaks); None
    # where the trace gives no basis for it
    memory_unknown: Note | None  # why memory_bytes is None
    # the largest shape's: what graphs that share one pool would hold at least (captured largest first, `pool=`)
    memory_largest_bytes: int | None = None


@dataclass(frozen=True)
class RegionPrediction:
    """One repeated region: the graph it would become and what it would cost and save (or, for work that
    already runs as a graph, what it would cost launched eagerly)."""

    label: str
    basis: Note  # how the region's iterations were found
    direction: str  # 'to_graph' (eager work, graph predicted) | 'to_eager' (graph work, eager predicted)
    mode: str  # the iterations' mode ('eager', 'eager_sync_each', 'graph')
    graph_id: int  # the graph measured in this trace that did this work (0: none)
    iterations: int  # iterations measured for the period
    synchronized: bool  # each iteration ends with a synchronization (period = launch + GPU + sync)
    graph: PredictedGraph | None
    capture: Estimate | None
    instantiate: Estimate | None
    upload: Estimate | None
    first_launch_excess: Estimate | None
    first_graph_extra: Estimate | None  # the process's first (or second) graph costs more; included in one_time when it would be one
    one_time: Estimate | None
    eager_period: Estimate | None  # measured (to_graph: median and bootstrap interval) or predicted (to_eager)
    replay_period: Estimate | None  # predicted (to_graph) or measured (to_eager)
    gpu_work_ns: float | None  # median GPU busy of an eager iteration (to_graph) or GPU work of a replay (to_eager)
    saved_per_iteration: Estimate | None
    break_even: int | None  # replays (counting the first launch) until the one-time cost is paid back
    break_even_low: int | None
    break_even_high: int | None  # None with break_even_high_never
    break_even_high_never: bool
    never: bool  # the graph would not be faster: it never pays back
    measured_one_time_ns: float | None  # the graph this trace did build, for comparison
    measured_replay_ns: float | None
    measured_break_even: int | None
    breakers: tuple[CaptureBreaker, ...]
    notes: tuple[Note, ...]
    # PyTorch's own work around the capture (torch.cuda.graph: synchronize, empty_cache, its memory pool, Python),
    # as `graphmode calibrate` timed it; included in one_time. None: not a PyTorch program, or no such measurement
    framework: Estimate | None = None
    # how the graph is made: 'capture' (a stream capture of the eager work) or 'node_api' (the explicit node API, as a
    # cuda-python program builds it; `capture` then holds that build)
    build: str = "capture"
    # where first_graph_extra comes from: 'this_process' (measured by `graphmode run`'s probe in the script's own process
    # after it ended), 'model' (the cost model's calibration probes), 'torch_probe' (its PyTorch probe); '' without one
    first_graph_from: str = ""
    # what to capture and how (to_graph regions; None for to_eager)
    advice: CaptureAdvice | None = None
    # the memory its graph would hold (to_graph regions of a PyTorch program whose one traced run recorded the
    # allocator's history: analyzers.step_memory), else why not (memory_unknown; None for to_eager)
    memory: StepMemory | None = None
    memory_unknown: Note | None = None


@dataclass(frozen=True)
class Prediction:
    """Graph predictions for a trace's repeated regions, and the cost model they come from."""

    model_gpu: str  # '' without a model
    model_driver: str
    model_cuda: int
    model_path: str
    model_match: str  # 'exact' | 'same_gpu' | 'other_gpu' | 'none'
    model_note: Note | None  # says when the model comes from another GPU or version
    regions: tuple[RegionPrediction, ...]
    notes: tuple[Note, ...]  # what the trace lacks for a better prediction
    shape_groups: tuple[ShapeGroup, ...] = ()  # steps that change input shape: their graphs together
