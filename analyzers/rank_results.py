"""Results of the analysis of a multi-process job's rank traces (analyzers.ranks): frozen dataclasses.

Durations are nanoseconds (float); a figure a trace cannot give is None and the analysis's
`cannot_compute` says why. Times on the job's timeline are CUPTI timestamps of the reference rank's
host (the lowest rank's); `ClockAlignment.offsets` says what was added to each rank's timestamps.
docs/ranks.md defines every figure. Add fields at the end; do not rename.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmode.analyzers.notes import Note
from graphmode.analyzers.results import Stat


@dataclass(frozen=True)
class RankIdentity:
    """Who a trace's process was in the job, from its `meta.rank` (docs/trace-format.md)."""

    rank: int
    world_size: int | None
    local_rank: int | None
    host: str
    launcher: str
    pid: int | None
    gpu_index: int | None  # CUDA ordinal of the GPU its work ran on (most GPU spans)
    gpu_uuid: str
    gpu_name: str
    path: str
    status: str  # the trace's status: complete | failed | interrupted | recording
    numbered_by_order: bool  # the trace has no rank metadata: its rank is its position among the files
    cupti_minus_realtime_ns: int | None  # CUPTI clock minus CLOCK_REALTIME, read when tracing started


@dataclass(frozen=True)
class RankGraph:
    """One graph on one rank: what it cost, saved and needed to pay back there."""

    rank: int
    key: str  # the graph's name across ranks: 'graph #K' for the K-th graph the rank built
    ordinal: int  # K
    graph_id: int  # CUPTI id on that rank
    label: str
    site: str  # 'file:line' of the line that captured or built it, '' if unknown
    replays: int
    one_time_ns: float | None
    saved_per_replay_ns: float | None
    break_even_replays: int | None
    never_pays_back: bool
    replay_ns: float | None  # median replay (steady period where known)
    collectives: int  # NCCL kernels inside the graph (topology, or node spans of a replay)
    source: str  # 'per-graph results' or 'trace-level results' (which analysis gave the figures)


@dataclass(frozen=True)
class Spread:
    """One figure over the ranks: min, median, max and which rank had the extremes."""

    ranks: int
    min: float
    median: float
    max: float
    min_rank: int
    max_rank: int

    @property
    def range(self) -> float:
        return self.max - self.min


@dataclass(frozen=True)
class GraphAcrossRanks:
    """The same graph (same build order) on every rank that built it."""

    key: str
    label: str
    site: str
    ranks: int  # ranks that built it
    replays: Spread | None
    one_time: Spread | None
    saved_per_replay: Spread | None
    break_even: Spread | None  # replays; ranks where it never pays back are listed instead
    replay: Spread | None
    never_pays_back_ranks: tuple[int, ...]
    straggler_rank: int | None  # the rank with the slowest replay
    collectives: int  # NCCL kernels inside it (the most any rank shows)


@dataclass(frozen=True)
class RankOffset:
    rank: int
    host: str
    offset_ns: float  # added to this rank's timestamps to put them on the job's timeline


@dataclass(frozen=True)
class ClockAlignment:
    """How the ranks' timestamps were put on one timeline, and how well they agree afterwards."""

    method: str  # 'one host' | 'collective ends' | 'unaligned'
    hosts: tuple[str, ...]
    reference_host: str
    offsets: tuple[RankOffset, ...]
    anchors: int  # collectives matched on every rank (same kernel, same occurrence)
    residual: Stat | None  # per matched collective: latest minus earliest end over the ranks, aligned
    clock_check_ns: float | None  # largest |CUPTI - CLOCK_REALTIME| over the ranks, when recorded
    note: Note  # how they were aligned and how well they agree (reports.notes words it)


@dataclass(frozen=True)
class RankWait:
    """Time one rank's collective kernels spent waiting for the last rank to arrive."""

    rank: int
    collectives: int  # matched collectives it took part in
    wait: Stat | None  # per collective: latest start over the ranks minus this rank's start
    wait_total_ns: float
    gpu_total_ns: float  # GPU time of those collective kernels
    last_arrivals: int  # collectives where this rank started last


@dataclass(frozen=True)
class CollectiveSummary:
    """One NCCL kernel (by name), eager or inside one graph, over the ranks."""

    kernel: str  # NCCL kernel name without arguments
    op: str  # AllReduce | AllGather | ReduceScatter | Broadcast | Reduce | SendRecv | Generic | ...
    reduction: str
    dtype: str
    algorithm: str
    protocol: str
    where: str  # 'graph' or 'eager'
    graph_key: str  # '' for eager
    ranks: int  # ranks that ran it
    calls: Spread | None  # calls (kernel spans) per rank
    in_topology: int  # nodes of this kernel in the graph's recorded topology (graph collectives)
    channels: int | None  # grid x of the kernel: NCCL runs one block per channel
    threads: int | None  # block x
    duration: Stat | None  # kernel span over every call on every rank
    wait: Stat | None  # per call per rank, as RankWait
    end_skew: Stat | None  # per matched call: latest minus earliest aligned end
    size_bytes: int | None  # message size: None, the trace does not carry it (see size_note)
    size_note: Note


@dataclass(frozen=True)
class HangRisk:
    """Ranks that disagree about a collective NCCL requires them to agree on (docs/ranks.md)."""

    kind: str  # 'capture_mismatch' | 'collective_mismatch' | 'replay_count_mismatch' | 'call_count_mismatch'
    position: int  # index of the collective call in each rank's program order (-1: not about one call)
    op: str
    captured_ranks: tuple[int, ...]
    eager_ranks: tuple[int, ...]
    facts: Note  # what the ranks did (reports.notes words it as the evidence; the advice by kind)


@dataclass(frozen=True)
class Straggler:
    rank: int
    last_arrivals: int
    collectives: int  # matched collectives
    median_lateness_ns: float | None  # its start minus the median start of the ranks, when it was last


@dataclass(frozen=True)
class RankSummary:
    """One rank's totals (from its own single-trace analysis)."""

    identity: RankIdentity
    graphs_built: int
    graphs_replayed: int
    replays: int
    one_time_ns: float | None
    saved_ns: float | None  # over this run's replays
    net_ns: float | None  # saved - one-time
    collective_calls: int  # NCCL kernel spans
    collective_gpu_ns: float
    warnings: tuple[Note, ...]  # its single-trace analysis's
    cannot_compute: tuple[Note, ...]
    # the pass the collectives and spans come from (the traced pass: the detail run of a `graphmode run` trace)
    pass_id: int
    start_ns: int  # that pass's extent, on the rank's own clock
    end_ns: int
    # that pass's name: 'detail' (two-run script trace), 'single', 'measure' (no detail run), a bench pass's detail
    run: str


@dataclass(frozen=True)
class RankSetAnalysis:
    """Everything `analyzers.ranks.analyze_ranks` computes for the traces of one job."""

    source: str  # what the user named: a folder, a glob, files
    world_size: int | None
    ranks: tuple[RankSummary, ...]  # by rank
    missing_ranks: tuple[int, ...]  # ranks of the world size with no trace
    graphs: tuple[RankGraph, ...]  # every graph of every rank, by key then rank
    graphs_across: tuple[GraphAcrossRanks, ...]
    collectives: tuple[CollectiveSummary, ...]
    waits: tuple[RankWait, ...]
    alignment: ClockAlignment
    straggler: Straggler | None
    hang_risks: tuple[HangRisk, ...]
    warnings: tuple[Note, ...]
    cannot_compute: tuple[Note, ...]

    def rank(self, r: int) -> RankSummary | None:
        return next((s for s in self.ranks if s.identity.rank == r), None)

    def offset_of(self, r: int) -> float:
        return next((o.offset_ns for o in self.alignment.offsets if o.rank == r), 0.0)
