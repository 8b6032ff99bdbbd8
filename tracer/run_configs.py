"""What each run of a script records: its configuration (RunConfig), the runs `graphmode run` can make (the one
traced run, the measuring, detail, timing and probe runs) and the CUPTI session a traced run attaches. Apart from
tracer.script, which executes the runs, so that tracer.launch_probes can attach the one traced run's very session
without importing the runner (which imports the calibration, which imports the probes)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from graphmode.tracer import line_stamps  # read as a module attribute: tests set AVAILABLE
from graphmode.tracer.cupti_session import LAUNCH_API, LIFECYCLE_API
from graphmode.tracer.sources import user_location


@dataclass(frozen=True)
class RunConfig:
    """What one run of a script records."""

    name: str  # 'measure', 'detail' or 'single' (everything in one run)
    detail: str = "graph"  # 'graph': a graph launch is one span; 'node': every node of every replay
    api_filter: str = "needed"  # 'sparse', 'needed' (tracer.cupti_session.api_sparse / api_needed), 'all' or 'none'
    node_events: bool = False  # per-node resource callbacks
    node_sources: bool = False  # the Python line that created each graph node (needs node_events)
    launch_sources: bool = False  # the Python line of every launch, copy and synchronization
    profile: bool = False  # pyinstrument samples of the CPU side
    callbacks: bool = True  # Python CUPTI callbacks (graph ids, call sites); False: activity records only
    gpu_kinds: bool = True  # kernel, copy, memset and synchronization records
    cupti: bool = True  # False: the timing run, which loads no CUPTI at all (and makes no CUDA call of its own)
    stamp: str = ""  # host stamps of the user's lines (tracer.line_stamps, Python 3.12+): '' none, 'all', 'lines'
    stamp_lines: tuple[str, ...] = ()  # with stamp='lines': 'file:line' of each line to stamp
    # '' : always made; 'eager_only': made only where the runs so far built no graph (RunDecisions.built_no_graph)
    when: str = ""
    # PyTorch's caching-allocator history (tracer.allocator_history): what each step allocates, for the memory a graph
    # of it would hold
    allocator_history: bool = False
    # graph detail: each replay's span from CUPTI's GRAPH_TRACE record (True), or folded from its nodes' records
    # (False): for a session attached in a process whose graphs may predate it (`graphmode.trace()`): under
    # GRAPH_TRACE, CUPTI 13.0 crashed the replay of a graph instantiated before it attached (benchmarks/notes/s22)
    graph_trace: bool = True
    # the one traced run detaches CUPTI for stretches of a steady loop before the process's first graph, timed by the
    # stamps alone (tracer.untraced_windows), and a PyTorch program that built no graph gets its first-graph probe after
    # the run, CUPTI detached (benchmarks/notes/s24)
    untraced_windows: bool = False
    # a graph destroyed while tracing (PyTorch destroys its captured graph inside its capture block) copied then and
    # read at the end, not read then (CuptiSession.deferred_topology): what tracing adds to a capture differs, and is
    # calibrated apart (benchmarks/notes/s26); the one traced run since session 26
    topology_copies: bool = False

    def __post_init__(self) -> None:
        if self.detail not in ("graph", "node"):
            raise ValueError(f"detail must be 'graph' or 'node', not {self.detail!r}")
        if self.api_filter not in ("needed", "all", "sparse", "none"):
            raise ValueError(f"api_filter must be 'needed', 'all', 'sparse' or 'none', not {self.api_filter!r}")
        if self.stamp not in ("", "all", "lines"):
            raise ValueError(f"stamp must be '', 'all' or 'lines', not {self.stamp!r}")
        object.__setattr__(self, "stamp_lines", tuple(self.stamp_lines))  # a list after a trip through JSON


# The measuring run: activity records only (no Python callback: one costs 20-300 us inside the
# program's call, benchmarks/tracer_costs.py), API records for the graph lifecycle and synchronizations
# only. Its graphs are named from the detail run (analyzers/script_graphs.py).
MEASURE = RunConfig("measure", api_filter="sparse", callbacks=False)


def detail_config(detail: str = "graph", launch_sources: bool = False, profile: bool = False, name: str = "detail",
                  sources: bool = True) -> RunConfig:
    """The run that names the graphs and records everything asked for: every API call, node events,
    (`sources`) the line that created each node and, where Python has sys.monitoring (3.12+), a stamp of
    every execution of the user's lines: which line starts each iteration, for the timing run."""
    return RunConfig(name, detail=detail, api_filter="all", node_events=True, node_sources=sources,
                     launch_sources=launch_sources, profile=profile,
                     stamp="all" if line_stamps.AVAILABLE and name == "detail" else "")  # not in a run that also times ('single')


def single_config(name: str = "single", windows: bool = True) -> RunConfig:
    """The one traced run that `graphmode run` makes by default (issue 29; docs/design.md, "One traced run"): the
    measuring run's activity records (kernels, copies, memsets, synchronizations, whole-graph spans), the API records
    a prediction reads (launches, copies, allocations, synchronizations, events, the graph lifecycle: api_filter
    'needed', not the getters and queries), what is rare (the graph-level resource callbacks that name the graphs and
    read their topology, the call sites of lifecycle calls) and, on Python 3.12+, a stamp of each execution of the
    user's own lines: so that a script that built no graph is found its step and priced from this run, with no detail
    run (a timing run follows it); and PyTorch's allocator history (tracer.allocator_history: what the step would hold
    as a graph, about 0.2 us an allocator action, measured at the run's end and taken off like the stamps). Not what
    costs per node (node callbacks) or a Python call per launch (launch sources, a profiler). What its records cost a launch and a capture is calibrated (`graphmode calibrate
    --launch-only`: tracer.launch_probes --traced; 'needed' API records add 1.1 us to a PyTorch launch's 6.0, 2.1 us to
    a cuBLAS call's 11.4: benchmarks/notes/s19) and taken off by the analysis (analyzers.tracer_cost), with what its
    stamps cost (about 1 us each, measured at the run's end). `name`: 'single', or 'measure' where a detail run follows
    (the analysis then takes structure from the detail run). `windows` (where it stamps): untraced windows
    (tracer.untraced_windows: its steady loops timed with CUPTI detached, before the process's first graph), unless
    GRAPHMODE_UNTRACED_WINDOWS=0."""
    stamp = "all" if line_stamps.AVAILABLE and name == "single" else ""  # 'measure': the detail run stamps
    return RunConfig(name, detail="graph", api_filter="needed", callbacks=True, node_events=False, node_sources=False,
                     stamp=stamp, allocator_history=name == "single", topology_copies=True,
                     untraced_windows=bool(stamp) and windows and os.environ.get("GRAPHMODE_UNTRACED_WINDOWS") != "0")


def region_config(detail: str = "graph", launch_sources: bool = False, profile: bool = False,
                  sources: bool = False) -> RunConfig:
    """What `graphmode.trace()` records around a region of a running program: the measuring run's records, or the
    detail run's where more was asked (node detail, launch sources, a profile, the line of each node). Its graph
    replays are folded from their nodes' records (graph_trace=False): the program's graphs may have been instantiated
    before the region, and under GRAPH_TRACE CUPTI 13.0 crashed their replays (benchmarks/notes/s22)."""
    costly = detail == "node" or launch_sources or profile or sources
    cfg = detail_config(detail, launch_sources, profile, name="single") if costly else MEASURE
    return replace(cfg, graph_trace=False)


# The one traced run as sessions 17-18 recorded it (API records of the graph lifecycle and synchronizations only, no
# stamps): its traces are still corrected, by the calibration made under it (CostModel.tracer_sparse)
SPARSE_SINGLE = RunConfig("single", detail="graph", api_filter="sparse", callbacks=True, node_events=False, node_sources=False)


def session_kwargs(cfg: RunConfig, nvtx: bool = True) -> dict[str, Any]:
    """The CUPTI session a traced run of `cfg` attaches (tracer.launch_probes --traced attaches the same)."""
    source_api = LIFECYCLE_API if not cfg.launch_sources else f"{LIFECYCLE_API}|{LAUNCH_API}"
    return {"detail": cfg.detail, "on_node_created": user_location if cfg.node_sources else None, "nvtx": nvtx,
            "source_api": source_api, "snapshot_topology": True, "api_filter": cfg.api_filter,
            "node_events": cfg.node_events, "callbacks": cfg.callbacks, "gpu_kinds": cfg.gpu_kinds,
            "graph_trace": cfg.graph_trace, "copy_destroyed_graphs": cfg.topology_copies}


def timing_config(lines: list[str] | tuple[str, ...]) -> RunConfig:
    """The timing run: no CUPTI, stamps of the lines that start the iterations whose periods the measuring
    run slowed (CPU-bound ones; docs/design.md, "The timing run")."""
    return RunConfig("timing", detail="graph", api_filter="none", callbacks=False, gpu_kinds=False, cupti=False,
                     stamp="lines", stamp_lines=tuple(lines))


# The probe run: the script once more, untraced, for the first-graph probe at its end (tracer.first_graph_probe), where
# no timing run made it and the script built no graph of its own (analyzers.run_plan.probe_run_wanted decides).
PROBE_RUN = RunConfig("probe", detail="graph", api_filter="none", callbacks=False, gpu_kinds=False, cupti=False)
