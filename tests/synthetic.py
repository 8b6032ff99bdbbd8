"""Builders of SYNTHETIC graphmode traces for tests: every number is chosen by hand, none recorded.

A trace built here has meta workload='synthetic' so it can never be mistaken for a recording.
Timestamps are small integers (ns) so that the expected metrics can be worked out on paper; the
tests that use these builders write those hand calculations next to their assertions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmode.tracer.schema import DEFAULTS, TABLES
from graphmode.tracer.store import PassInfo, TraceWriter


@dataclass
class SyntheticTrace:
    """Accumulates rows per table, then writes them with TraceWriter in one go."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    passes: dict[int, str] = field(default_factory=dict)  # pass_id -> detail
    names: dict[int, str] = field(default_factory=dict)  # pass_id -> name (default: the detail)
    meta: dict[str, Any] = field(default_factory=dict)
    _next_correlation: int = 1

    def add_pass(self, pass_id: int, detail: str, name: str = "") -> SyntheticTrace:
        """A pass of this detail, named `name` (default: as its detail)."""
        self.passes[pass_id] = detail
        self.names[pass_id] = name or detail
        return self

    def _add(self, table: str, **row: Any) -> None:
        self.rows.setdefault(table, []).append(row)

    def iteration(self, pass_id: int, mode: str, iteration: int, start: int, end: int, thread: int = 1) -> None:
        self._add("markers", pass_id=pass_id, kind="iteration", name=mode, mode=mode, iteration=iteration,
                  start_ns=start, end_ns=end, thread_id=thread)

    def iterations(self, pass_id: int, mode: str, walls: Sequence[int], start: int, gap: int = 100) -> int:
        """Back-to-back iterations with these wall times; returns the end of the last one."""
        t = start
        for i, wall in enumerate(walls):
            self.iteration(pass_id, mode, i, t, t + wall)
            t += wall + gap
        return t

    def op(self, pass_id: int, name: str, graph_id: int, start: int, end: int) -> None:
        self._add("markers", pass_id=pass_id, kind="op", name=name, mode="graph", iteration=-1,
                  start_ns=start, end_ns=end, thread_id=1, graph_id=graph_id)

    def api(self, pass_id: int, name: str, category: str, start: int, end: int, api: str = "runtime",
            thread: int = 1, correlation: int | None = None) -> int:
        if correlation is None:
            correlation = self._next_correlation
            self._next_correlation += 1
        self._add("api_calls", pass_id=pass_id, correlation_id=correlation, api=api, name=name, category=category,
                  start_ns=start, end_ns=end, thread_id=thread, process_id=1)
        return correlation

    def call_with_driver(self, pass_id: int, name: str, category: str, start: int, end: int,
                         driver_start: int, driver_end: int, thread: int = 1) -> int:
        """A runtime call and the driver call it makes (nested in time, its own correlation id)."""
        corr = self.api(pass_id, name, category, start, end, "runtime", thread)
        self.api(pass_id, "cu" + name.removeprefix("cuda"), category, driver_start, driver_end, "driver", thread)
        return corr

    def span(self, pass_id: int, name: str, start: int, end: int, correlation: int, stream: int = 7,
             kind: str = "kernel", graph_id: int = 0, node_id: int = 0, blocks: int | None = None) -> None:
        grid = {} if blocks is None else {"grid_x": blocks, "grid_y": 1, "grid_z": 1}
        self._add("gpu_spans", pass_id=pass_id, kind=kind, name=name, start_ns=start, end_ns=end, stream_id=stream,
                  correlation_id=correlation, graph_id=graph_id, graph_node_id=node_id, device_id=0, context_id=1, **grid)

    def graph(self, pass_id: int, graph_id: int, label: str, nodes: Sequence[tuple[int, str, str]],
              edges: Sequence[tuple[int, int]]) -> None:
        """nodes: (node_id, node_type, name); edges: (from_node_id, to_node_id)."""
        self._add("graphs", pass_id=pass_id, graph_id=graph_id, exec_id=graph_id + 1000, origin="capture", label=label,
                  mode="graph", num_nodes=len(nodes), num_edges=len(edges))
        for index, (node_id, node_type, name) in enumerate(nodes):
            self._add("graph_nodes", pass_id=pass_id, graph_id=graph_id, node_id=node_id, node_index=index,
                      node_type=node_type, name=name)
        for a, b in edges:
            self._add("graph_edges", pass_id=pass_id, graph_id=graph_id, from_node_id=a, to_node_id=b)

    def write(self, path: Path, status: str = "complete", dropped: dict[int, int] | None = None) -> Path:
        dropped = dropped or {}
        with TraceWriter(path, {"workload": "synthetic", "dropped_records": sum(dropped.values()),
                                "params": {"note": "synthetic test trace, numbers chosen by hand"}, **self.meta}) as w:
            for table, rows in self.rows.items():
                types = dict(TABLES[table])
                keys = sorted({k for r in rows for k in r})
                w.append(table, {k: [r.get(k, DEFAULTS[types[k]]) for r in rows] for k in keys})
            for pass_id, detail in sorted(self.passes.items()):
                starts = [r["start_ns"] for rs in self.rows.values() for r in rs if r.get("pass_id") == pass_id and "start_ns" in r]
                ends = [r["end_ns"] for rs in self.rows.values() for r in rs if r.get("pass_id") == pass_id and "end_ns" in r]
                w.add_pass(PassInfo(pass_id, self.names.get(pass_id, detail), detail, min(starts, default=0), max(ends, default=0),
                                    dropped.get(pass_id, 0), "complete" if status == "complete" else status))
            if status != "complete":
                w.close(status, "synthetic: stopped on purpose")
        return path


# ---- Scenario builders shared by several tests (hand calculations in tests/test_analyzers.py) ----

def basic_trace(path: Path) -> Path:
    """Timing pass 0 + node-detail pass 1: eager vs a 3-node graph (A and B parallel, then C)."""
    t = SyntheticTrace().add_pass(0, "timing").add_pass(1, "node")
    t.iterations(0, "eager", [1000, 1100, 1200], start=1_000)  # ends by 4_600
    t.op(0, "capture", 1, 5_000, 7_000)  # 2000
    t.op(0, "instantiate", 1, 7_000, 10_000)  # 3000
    t.op(0, "upload", 1, 10_000, 10_500)  # 500
    t.op(0, "first_launch", 1, 11_000, 12_500)  # 1500
    t.iterations(0, "graph", [400, 500, 600], start=13_000)
    t.graph(0, 1, "diamond", [(101, "kernel", "A"), (102, "kernel", "B"), (103, "kernel", "C")], [(101, 103), (102, 103)])

    # traced eager iteration: 3 launches, one event record, one synchronize (driver twin, same times)
    t.iteration(1, "eager", 0, 100_000, 102_000)
    c1 = t.call_with_driver(1, "cudaLaunchKernel", "kernel_launch", 100_000, 100_100, 100_020, 100_080)
    c2 = t.call_with_driver(1, "cudaLaunchKernel", "kernel_launch", 100_100, 100_200, 100_110, 100_190)
    c3 = t.call_with_driver(1, "cudaLaunchKernel", "kernel_launch", 100_200, 100_300, 100_210, 100_290)
    t.api(1, "cudaEventRecord", "event", 100_350, 100_370)
    t.call_with_driver(1, "cudaStreamSynchronize", "sync", 100_400, 101_900, 100_400, 101_900)
    t.api(1, "cudaLaunchKernel", "kernel_launch", 100_500, 100_600, thread=2)  # another thread: not this iteration's
    t.span(1, "A", 100_150, 100_400, c1, stream=7)
    t.span(1, "B", 100_350, 100_700, c2, stream=8)
    t.span(1, "C", 101_000, 101_200, c3, stream=7)

    # traced graph iterations: one launch + synchronize each
    t.graph(1, 1, "diamond", [(101, "kernel", "A"), (102, "kernel", "B"), (103, "kernel", "C")], [(101, 103), (102, 103)])
    for i, (base, (a, b, c)) in enumerate([
        (200_000, ((200_100, 200_300), (200_100, 200_250), (200_300, 200_400))),  # A, B in parallel
        (300_000, ((300_100, 300_300), (300_300, 300_450), (300_450, 300_550))),  # serialised
    ]):
        t.iteration(1, "graph", i, base, base + 1000)
        corr = t.call_with_driver(1, "cudaGraphLaunch", "graph_launch", base, base + 50, base + 5, base + 45)
        t.call_with_driver(1, "cudaStreamSynchronize", "sync", base + 60, base + 990, base + 61, base + 989)
        t.span(1, "A", *a, corr, stream=9, graph_id=1, node_id=101)
        t.span(1, "B", *b, corr, stream=10, graph_id=1, node_id=102)
        t.span(1, "C", *c, corr, stream=9, graph_id=1, node_id=103)
    return t.write(path)
