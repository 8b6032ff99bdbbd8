"""Results of the coverage, PyTorch cudagraph and graph budget analyzers (issue 10).

Frozen dataclasses of plain numbers, like analyzers.results (kept in their own module so that the
three analyzers can grow without touching the shared one). `TraceAnalysis.coverage`,
`TraceAnalysis.torch_graphs` and `TraceAnalysis.graph_budget` hold them; docs/metrics.md
("Graph coverage", "PyTorch cudagraph trees", "Graph memory and start-up budget") defines every
figure. Durations in nanoseconds, memory in bytes. Add fields, do not rename them.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmode.analyzers.notes import Note


@dataclass(frozen=True)
class CoverageSlice:
    """How much of one stretch of the run (the whole run, a phase, or an NVTX/runner range) ran as graphs."""

    name: str  # 'whole run', 'before the first graph', 'building graphs', 'steady state', or a range's name
    kind: str  # 'run' | 'phase' | 'range'
    start_ns: int  # absolute CUPTI ns (a range: its first occurrence)
    duration_ns: float  # a range: the length of the union of its occurrences
    occurrences: int  # 1 for the run and phases; how many times a range was entered
    graph_kernels: int  # kernels that ran inside graph launches
    eager_kernels: int  # kernels launched one by one
    kernel_share: float | None  # graph / (graph + eager); None without kernels
    graph_gpu_ns: float  # GPU time of graph work (node spans, or whole graph spans in graph-detail passes)
    eager_gpu_ns: float  # GPU time of eager kernels, copies and memsets
    gpu_time_share: float | None
    graph_launch_calls: int  # outermost cudaGraphLaunch / cuGraphLaunch calls
    eager_launch_calls: int  # outermost kernel launch calls that launched work (not made while capturing)
    launch_call_share: float | None  # graph launch calls / all launch calls
    graph_launch_api_ns: float  # CPU time in those calls
    eager_launch_api_ns: float
    captured_launch_calls: int  # kernel launch calls made while a stream was capturing: recorded, not run
    graphs_launched: int  # distinct graphs launched


@dataclass(frozen=True)
class EagerLine:
    """A user line that launched eager GPU work (api_calls.source, recorded with --launch-sources)."""

    source: str  # 'file:line function'
    kernels: tuple[str, ...]  # names, most GPU time first (at most 20)
    launches: int
    gpu_ns: float | None  # GPU time of the work it launched
    share_of_eager_gpu: float | None  # gpu_ns / the run's eager GPU time


@dataclass(frozen=True)
class GraphCoverage:
    """Share of the run's GPU work that ran inside CUDA graphs (analyzers.coverage)."""

    pass_id: int
    detail: str  # 'graph' or 'node': how graph kernels were counted
    kernels_from_topology: bool  # graph detail: graph kernels = kernel nodes of the graph x its launches
    unknown_graph_launches: int  # launches of graphs built before tracing (their kernels are not counted)
    run: CoverageSlice
    phases: tuple[CoverageSlice, ...]  # by the graph lifecycle (docs/metrics.md, "Graph coverage")
    ranges: tuple[CoverageSlice, ...]  # per NVTX / runner phase range name, longest first
    eager_lines: tuple[EagerLine, ...]  # lines with the most eager GPU time
    eager_lines_note: Note | None  # why there are no lines (None when there are)
    phase_rule: Note  # the rule that cut the phases


@dataclass(frozen=True)
class CudagraphSkip:
    """One reason Inductor's cudagraph trees ran a compiled function without graphs (PyTorch's own log)."""

    # mutated_inputs | cpu_device | multiple_devices | incompatible_ops | rerecord_limit | dynamic_shapes | other
    reason: str
    message: str  # PyTorch's message, first line
    where: str  # 'file:line function' of the line PyTorch's stack trace points to (the cause), '' if none
    code: str  # that line's code, as PyTorch printed it
    called_from: str  # the user's line that was running when PyTorch logged it (the call of the compiled function)
    count: int  # times logged
    first_ns: int  # CUPTI ns of the first time


@dataclass(frozen=True)
class CudagraphFunction:
    """A compiled function as cudagraph trees ran it: warm-ups, recordings (one per shape or path), re-recordings."""

    name: str
    compile_ids: tuple[str, ...]  # Dynamo's 'frame/recompile' ids: more than one means recompiled (new shapes)
    warmups: int  # runs before recording (eager, in the graph pool)
    recordings: int  # CUDA graphs recorded for it
    rerecords: int  # recordings PyTorch made again because an invariant changed (reason below)
    rerecord_reasons: tuple[str, ...]
    graph_ids: tuple[int, ...]  # CUPTI ids of the graphs its recordings captured (matched by thread and time)
    shapes: tuple[str, ...]  # input shapes of each recording, as PyTorch logged them
    called_from: tuple[str, ...]  # user lines that called it when it was warmed up or recorded
    defined_at: str = ""  # 'file:line' of the Python function Dynamo compiled ('' when not seen)


@dataclass(frozen=True)
class MemoryPool:
    """A PyTorch graph memory pool and the graphs captured into it."""

    pool: str  # PyTorch's pool id, '(a, b)'
    graph_ids: tuple[int, ...]  # CUPTI ids of the graphs captured into it
    reserved_bytes: int | None  # reserved by the pool's segments after its last capture
    allocated_bytes: int | None  # allocated (live) in those segments then
    end_reserved_bytes: int | None  # at the end of the run (None when not sampled)


@dataclass(frozen=True)
class TorchGraphs:
    """What PyTorch said about its CUDA graphs (tracer.torch_hooks, stored in meta.torch)."""

    torch_version: str
    recordings: int  # cudagraph-tree recordings ('Recording function=...')
    warmups: int
    trees: int  # cudagraph trees started ('Recording cudagraph tree for ...'), one per new integer-input key
    skips: tuple[CudagraphSkip, ...]
    functions: tuple[CudagraphFunction, ...]
    pools: tuple[MemoryPool, ...]
    distinct_sizes_warning: str  # PyTorch's warning that it recorded a graph for each of many sizes, '' if none
    counters: tuple[tuple[str, int], ...]  # torch._dynamo.utils.counters['inductor'] entries about cudagraphs
    captures: int  # torch.cuda.CUDAGraph captures seen (user graphs and cudagraph trees)
    events_dropped: int  # log records not kept (over the tracer's cap)


@dataclass(frozen=True)
class GraphBudgetRow:
    """One graph's start-up time, memory and use."""

    graph_id: int
    label: str
    site: str  # the line that captured or built it
    pool: str  # PyTorch pool id, '' when not PyTorch
    capture_ns: float | None  # stream capture (begin to end) or explicit build
    instantiate_ns: float | None
    upload_ns: float | None
    startup_ns: float  # capture + instantiate + upload (the recorded parts) + PyTorch's recording work where heard
    replays: int
    device_bytes: int | None  # drop in free device memory from before the capture (or build) to after instantiate
    pool_bytes: int | None  # growth of its PyTorch pool's reserved memory over its capture
    graph_mem_bytes: int | None  # growth of the driver's graph memory (memory alloc nodes) over it
    bytes: int | None  # what the table shows: pool_bytes for PyTorch graphs, else device_bytes
    saved_ns: float | None  # saved per replay against eager (per-graph analysis), when known
    net_ns: float | None  # replays x saved - startup
    verdict: str  # one phrase: 'never replayed', 'paid back', 'did not pay back its start-up time', 'empty graph', ...
    nodes: int = 0  # nodes of its recorded topology (0: empty, or built before tracing)


@dataclass(frozen=True)
class GraphBudget:
    """Memory and start-up time of every graph of the run (analyzers.graph_budget)."""

    rows: tuple[GraphBudgetRow, ...]  # most memory first, then most start-up time
    graphs: int
    total_startup_ns: float
    total_bytes: int | None
    memory_source: str  # 'pytorch pools' | 'device free memory' | 'not sampled'
    never_replayed: int  # graphs with nodes that were never launched
    shared_pools: int  # pools holding more than one graph
    notes: tuple[Note, ...]
