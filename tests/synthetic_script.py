"""Builders of SYNTHETIC user-script traces (meta workload='synthetic-script'): numbers chosen by hand.

They follow the contract of a single-run script trace (`graphmode run --runs 1`, `graphmode.trace`):
one traced pass that both times the run and records its graphs (graph_events, topology), no iteration
markers, api_calls.source naming the user's line. tests/test_script_analysis.py
works every expected number out next to its assertion.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synthetic import SyntheticTrace

SYNC_LINE = "train.py:30 step"


class ScriptTrace(SyntheticTrace):
    def __init__(self, detail: str = "graph") -> None:
        super().__init__()
        self.add_pass(0, detail)
        self.meta.update({"workload": "synthetic-script",
                          "script": {"path": "train.py", "argv": ["train.py"], "exit_code": 0, "exception": None}})

    def call(self, name: str, category: str, start: int, end: int, source: str = "", rc: int = 0,
             api: str = "runtime", thread: int = 1) -> int:
        corr = self._next_correlation
        self._next_correlation += 1
        self._add("api_calls", pass_id=0, correlation_id=corr, api=api, name=name, category=category, start_ns=start,
                  end_ns=end, thread_id=thread, process_id=1, return_code=rc, source=source)
        return corr

    def event(self, graph_id: int, event: str, start: int, end: int, correlation: int = 0) -> None:
        self._add("graph_events", pass_id=0, graph_id=graph_id, exec_id=graph_id + 1000, event=event, start_ns=start,
                  end_ns=end, correlation_id=correlation, thread_id=1)

    def nvtx(self, name: str, start: int, end: int) -> None:
        self._add("markers", pass_id=0, kind="nvtx", name=name, mode="", iteration=-1, start_ns=start, end_ns=end, thread_id=1)

    def eager_kernel(self, name: str, launch: int, span: tuple[int, int]) -> None:
        """cudaLaunchKernel for 10 ns at `launch`, its kernel running over `span`."""
        corr = self.call("cudaLaunchKernel", "kernel_launch", launch, launch + 10)
        self.span(0, name, span[0], span[1], corr)

    def replay(self, graph_id: int, launch: int, gpu: tuple[int, int], sync_end: int | None = None) -> None:
        """cudaGraphLaunch for 20 ns, one 'graph' span; optionally a cudaStreamSynchronize until sync_end."""
        corr = self.call("cudaGraphLaunch", "graph_launch", launch, launch + 20, "train.py:29 step")
        self.event(graph_id, "launch", launch, launch + 20, corr)
        self.span(0, "step", gpu[0], gpu[1], corr, kind="graph", graph_id=graph_id)
        if sync_end is not None:
            self.call("cudaStreamSynchronize", "sync", launch + 20, sync_end, SYNC_LINE)

    def captured_graph(self, graph_id: int, kernels: Sequence[str], capture: tuple[int, int],
                       instantiate: tuple[int, int], upload: tuple[int, int] | None = None, source: str = "") -> None:
        nodes = [(graph_id * 100 + i, "kernel", k) for i, k in enumerate(kernels)]
        self.graph(0, graph_id, "step", nodes, [(a[0], b[0]) for a, b in zip(nodes, nodes[1:])])
        self.event(graph_id, "capture", *capture)
        corr = self.call("cudaGraphInstantiate", "instantiate", *instantiate, source)
        self.event(graph_id, "instantiate", *instantiate, corr)
        if upload is not None:
            corr = self.call("cudaGraphUpload", "upload", *upload, source)
            self.event(graph_id, "upload", *upload, corr)

    def write_script(self, path: Path, status: str = "complete", **meta: Any) -> Path:
        self.meta.update(meta)
        return self.write(path, status=status)


def eager_then_graph(path: Path, eager_starts: Sequence[int], last_eager_end: int, capture: tuple[int, int],
                     instantiate: tuple[int, int], upload: tuple[int, int],
                     replays: Sequence[tuple[int, tuple[int, int], int | None]], extra: Any = None) -> Path:
    """An eager loop of K1, K2 (launches 10 ns apart, kernels 20..100 and 100..200 ns after the first launch,
    the last occurrence's K2 ending at last_eager_end), then capture of K1, K2 as graph 1, then replays.
    An unrelated kernel X runs first. replays: (launch, (gpu start, gpu end), sync end or None)."""
    t = ScriptTrace()
    t.eager_kernel("X", 100, (120, 200))
    for i, s in enumerate(eager_starts):
        t.eager_kernel("K1", s, (s + 20, s + 100))
        t.eager_kernel("K2", s + 10, (s + 100, last_eager_end if i == len(eager_starts) - 1 else s + 200))
        t.call("cudaStreamSynchronize", "sync", s + 20, s + 200, "train.py:12 eager_step")
    t.captured_graph(1, ["K1", "K2"], capture, instantiate, upload, "train.py:20 make_graph")
    # the kernels launched during capture are recorded as calls but do not run (no GPU span)
    t.call("cudaLaunchKernel", "kernel_launch", capture[0] + 100, capture[0] + 110)
    t.call("cudaLaunchKernel", "kernel_launch", capture[0] + 200, capture[0] + 210)
    for launch, gpu, sync_end in replays:
        t.replay(1, launch, gpu, sync_end)
    if extra is not None:
        extra(t)
    return t.write_script(path)
