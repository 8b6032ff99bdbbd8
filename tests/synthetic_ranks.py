"""Builders of SYNTHETIC rank traces (meta workload='synthetic-ranks'): one job's ranks, numbers chosen by hand.

Each rank follows the shape of a `graphmode run --detail node` trace of a data-parallel step: two
eager all-reduces (warm-up), then the capture of graph 1 = [K1, all-reduce, K2], then replays, each
node a GPU span. Times are small integers (ns) on a "true" clock; a rank's timestamps are the true
times plus its host's clock offset. tests/test_ranks.py works the expected figures out by hand.
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
    meta: dict[str, object] = {"workload": "synthetic-ranks", "hostname": plan.host}
    if plan.with_rank_meta:
        meta["rank"] = {"rank": plan.rank, "world_size": plan.world_size, "local_rank": plan.rank, "local_world_size": plan.world_size,
                        "node_rank": 0, "launcher": "torchrun", "hostname": plan.host, "pid": 1000 + plan.rank,
                        "devices": [{"index": plan.rank, "uuid": plan.gpu_uuid or f"GPU-synthetic-{plan.host}-{plan.rank}",
                                     "name": "Synthetic GPU"}],
                        "gpu": {"index": plan.rank, "uuid": plan.gpu_uuid or f"GPU-synthetic-{plan.host}-{plan.rank}",
                                "name": "Synthetic GPU", "spans": 0},
                        "clock": {"cupti_minus_realtime_ns": 150 + plan.rank}}
    return t.write_script(path, **meta)


def job(folder: Path, plans: Sequence[RankPlan], stem: str = "train") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    width = len(str(max(plans[0].world_size - 1, 0)))
    return [rank_trace(folder / f"{stem}.rank{p.rank:0{width}d}.gmtrace", p) for p in plans]
