"""Builders of SYNTHETIC rank traces (meta workload='synthetic-ranks'): one job's ranks, numbers chosen by hand.

Each rank follows the shape of a `graphmode run --detail node` trace of a data-parallel step: two
eager all-reduces (warm-up), then the capture of graph 1 = [K1, all-reduce, K2], then replays, each
node a GPU span. Times are small integers (ns) on a "true" clock; a rank's timestamps are the true
times plus its host's clock offset. tests/test_ranks.py works the expected figures out by hand.

By default a rank's trace holds that one run (as `graphmode run --runs 1` writes it). With
`RankPlan.two_runs` it holds what `graphmode run` writes by default: pass 0 'measure' (graph detail,
no callbacks: the same program with its own timings, API records of the graph lifecycle, launches
and synchronisations only, eager kernels without their launch calls, one 'graph' span per replay
carrying the executable id 1001) and pass 1 'detail' (the run above, DETAIL_AT ns later).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from synthetic_script import ScriptTrace

AR = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"  # mangled, as CUPTI records it
AR_BASE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
EAGER_LAUNCHES = (1_000, 6_000)  # launch calls of the two eager all-reduces; kernels end at 5_000 and 9_000
EAGER_ENDS = (5_000, 9_000)
REPLAY_BASES = (20_000, 30_000, 40_000)
DETAIL_AT = 100_000  # two-run traces: the detail run starts this much after the measuring run
EXEC_ID = 1001  # the executable id of graph 1 (the measuring run's GPU records carry it)
MEASURED_ONE_TIME = {"capture": (10_000, 10_800), "instantiate": (11_000, 11_600), "upload": (12_000, 12_300)}  # 1_700 in all


@dataclass
class RankPlan:
    """What differs between the ranks of a synthetic job."""

    rank: int
    world_size: int
    host: str = "hostA"
    clock_offset: int = 0  # this host's clock minus the true clock
    eager_late: int = 0  # the rank starts each eager all-reduce this late
    graph_late: int = 0  # ... and the all-reduce inside each replay
    end_shift: dict[int, int] = field(default_factory=dict)  # replay -> its all-reduce ends this much later
    captures: bool = True  # False: the rank runs the step eagerly instead of capturing it (a hang risk)
    replays: int = 3
    gpu_uuid: str = ""
    with_rank_meta: bool = True
    two_runs: bool = False  # a measuring run (pass 0) before the detail run (pass 1), as `graphmode run` records
    measure_late: int = 0  # two runs: the rank starts each eager all-reduce of the MEASURING run this late


def _measuring_run(t: ScriptTrace, plan: RankPlan) -> None:
    """Pass 0 of a two-run trace: the same program, no callbacks. Its all-reduces are other calls than the
    detail run's (the program ran twice), and `measure_late` makes a different straggler of them."""
    c = plan.clock_offset

    def call(name: str, category: str, start: int, end: int) -> int:
        return t.api(0, name, category, c + start, c + end, api="driver")

    for launch, end in zip(EAGER_LAUNCHES, EAGER_ENDS):  # no launch call recorded: a correlation id only
        t.span(0, AR, c + launch + 100 + plan.measure_late, c + end, t._next_correlation, stream=13)
        t._next_correlation += 1
    if plan.captures:
        call("cuStreamBeginCapture_v2", "capture", MEASURED_ONE_TIME["capture"][0], MEASURED_ONE_TIME["capture"][0] + 10)
        call("cuStreamEndCapture", "capture", MEASURED_ONE_TIME["capture"][1] - 10, MEASURED_ONE_TIME["capture"][1])
        call("cuGraphInstantiateWithFlags", "instantiate", *MEASURED_ONE_TIME["instantiate"])
        call("cuGraphUpload", "upload", *MEASURED_ONE_TIME["upload"])
        t._add("graphs", pass_id=0, graph_id=EXEC_ID, exec_id=0, origin="unknown", mode="graph", num_nodes=0, num_edges=0,
               label=f"graph {EXEC_ID} (built before tracing started)")
    for k, base in enumerate(REPLAY_BASES[: plan.replays]):
        if plan.captures:
            corr = call("cuGraphLaunch", "graph_launch", base, base + 20)
            t._add("graph_events", pass_id=0, graph_id=EXEC_ID, exec_id=0, event="launch", start_ns=c + base,
                   end_ns=c + base + 20, correlation_id=corr, thread_id=1)
            t.span(0, f"graph {EXEC_ID}", c + base + 100, c + base + 3_600, corr, stream=7, kind="graph", graph_id=EXEC_ID)
        else:
            for name, (s, e) in (("K1", (100, 600)), (AR, (700, 3_000)), ("K2", (3_100, 3_600))):
                t.span(0, name, c + base + s, c + base + e, t._next_correlation, stream=7)
                t._next_correlation += 1
        call("cuStreamSynchronize", "sync", base + 20, base + 3_700)


def rank_trace(path: Path, plan: RankPlan) -> Path:
    c = plan.clock_offset
    t = ScriptTrace(detail="node")
    for launch, end in zip(EAGER_LAUNCHES, EAGER_ENDS):
        corr = t.call("cuLaunchKernelEx", "kernel_launch", c + launch, c + launch + 50, api="driver")
        t.span(0, AR, c + launch + 100 + plan.eager_late, c + end, corr, stream=13)
    if plan.captures:
        nodes = [(101, "kernel", "K1"), (102, "kernel", AR), (103, "kernel", "K2")]
        t.graph(0, 1, "graph 1 (captured at train.py:42)", nodes, [(101, 102), (102, 103)])
        t.event(1, "capture", c + 10_000, c + 11_000)
        corr = t.call("cudaGraphInstantiate", "instantiate", c + 11_000, c + 12_000, "train.py:42 <module>")
        t.event(1, "instantiate", c + 11_000, c + 12_000, corr)
        corr = t.call("cudaGraphUpload", "upload", c + 12_000, c + 12_500, "train.py:42 <module>")
        t.event(1, "upload", c + 12_000, c + 12_500, corr)
    for k, base in enumerate(REPLAY_BASES[: plan.replays]):
        b = c + base
        if plan.captures:
            corr = t.call("cudaGraphLaunch", "graph_launch", b, b + 20, "train.py:50 <module>")
            t.event(1, "launch", b, b + 20, corr)
            t.span(0, "K1", b + 100, b + 600, corr, stream=7, graph_id=1, node_id=101)
            t.span(0, AR, b + 700 + plan.graph_late, b + 3_000 + plan.end_shift.get(k, 0), corr, stream=7, graph_id=1, node_id=102)
            t.span(0, "K2", b + 3_100, b + 3_600, corr, stream=7, graph_id=1, node_id=103)
        else:
            for name, (s, e) in (("K1", (100, 600)), (AR, (700 + plan.graph_late, 3_000)), ("K2", (3_100, 3_600))):
                corr = t.call("cuLaunchKernel", "kernel_launch", b + s - 90, b + s - 80, api="driver")
                t.span(0, name, b + s, b + e + (plan.end_shift.get(k, 0) if name == AR else 0), corr, stream=7)
        t.call("cudaStreamSynchronize", "sync", b + 20, b + 3_700, "train.py:51 <module>")
    if plan.two_runs:  # what was written above is the detail run: pass 1, DETAIL_AT later
        for rows in t.rows.values():
            for row in rows:
                row["pass_id"] = 1
                for col in ("start_ns", "end_ns"):
                    if col in row:
                        row[col] += DETAIL_AT
        t.passes = {0: "graph", 1: "node"}
        _measuring_run(t, plan)
    meta: dict[str, object] = {"workload": "synthetic-ranks", "hostname": plan.host}
    if plan.with_rank_meta:
        meta["rank"] = {"rank": plan.rank, "world_size": plan.world_size, "local_rank": plan.rank, "local_world_size": plan.world_size,
                        "node_rank": 0, "launcher": "torchrun", "hostname": plan.host, "pid": 1000 + plan.rank,
                        "devices": [{"index": plan.rank, "uuid": plan.gpu_uuid or f"GPU-synthetic-{plan.host}-{plan.rank}",
                                     "name": "Synthetic GPU"}],
                        "gpu": {"index": plan.rank, "uuid": plan.gpu_uuid or f"GPU-synthetic-{plan.host}-{plan.rank}",
                                "name": "Synthetic GPU", "spans": 0},
                        "clock": {"cupti_minus_realtime_ns": 150 + plan.rank}}
    t.write_script(path, **meta)
    if plan.two_runs:  # the writer names a synthetic pass after its detail level; graphmode run names its runs
        import duckdb

        with duckdb.connect(str(path)) as con:
            con.execute("UPDATE passes SET name = CASE pass_id WHEN 0 THEN 'measure' ELSE 'detail' END")
    return path


def job(folder: Path, plans: Sequence[RankPlan], stem: str = "train") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    width = len(str(max(plans[0].world_size - 1, 0)))
    return [rank_trace(folder / f"{stem}.rank{p.rank:0{width}d}.gmtrace", p) for p in plans]
