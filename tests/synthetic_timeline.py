"""Synthetic traces for the timeline, HTML and export tests (labelled meta workload='synthetic').

Not a recording: the layout is invented so that every count is known in advance. One host thread
launches a chain of `kernels_per_iteration` kernels per eager iteration (one cudaLaunchKernel
each), captures them into one graph, and replays it; GPU work runs on one stream. Built with
numpy over (iteration, kernel) grids so the benchmark can make a million kernels in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphmode.tracer.store import PassInfo, TraceWriter

THREAD_ID = 4242
PROCESS_ID = 100
STREAM_ID = 7
GRAPH_ID = 1
EXEC_ID = 2
NODE_ID_BASE = 100

LAUNCH_PERIOD_NS = 5_000  # one cudaLaunchKernel every 5 us in eager mode
LAUNCH_CALL_NS = 4_000
LAUNCH_LATENCY_NS = 1_000
KERNEL_NS = 2_000
NODE_GAP_NS = 500  # gap between dependent graph nodes on the GPU
GRAPH_LAUNCH_CALL_NS = 8_000
SYNC_TAIL_NS = 2_000
ITERATION_GAP_NS = 1_000
JITTER_NS = 400  # below every gap of the layout (500 ns between graph nodes), so spans keep their order


@dataclass(frozen=True)
class SyntheticCounts:
    eager_kernels: int
    graph_kernels: int
    graph_spans: int
    api_calls: int
    kernel_launch_calls: int

    @property
    def kernels(self) -> int:
        return self.eager_kernels + self.graph_kernels


def write_synthetic_trace(
    path: Path,
    *,
    iterations: int = 3,
    kernels_per_iteration: int = 4,
    kernel_name: str = "chain_kernel",
    nvtx_message: str | None = "user range",
    detail: str = "node",
    jitter_seed: int | None = None,
) -> SyntheticCounts:
    """Writes a two-pass synthetic trace (timing + `detail`) and returns what it holds.

    `jitter_seed`: kernel and launch-call durations shortened by up to JITTER_NS and kernel starts
    delayed by up to JITTER_NS / 2 (seeded uniform noise), so timestamps do not repeat as exactly as
    the layout's (what the page's compression sees in a recording); counts and ordering stay the same.
    """
    if detail not in ("node", "graph"):
        raise ValueError(f"detail must be 'node' or 'graph', not {detail!r}")
    n, k = iterations, kernels_per_iteration
    t0 = 1_000_000_000
    ki = np.arange(k, dtype=np.int64)

    # Eager: iteration i starts at t0 + i * eager_period.
    last_kernel_end = (k - 1) * LAUNCH_PERIOD_NS + LAUNCH_CALL_NS + LAUNCH_LATENCY_NS + KERNEL_NS
    eager_sync_start = (k - 1) * LAUNCH_PERIOD_NS + LAUNCH_CALL_NS
    eager_iter_ns = last_kernel_end + SYNC_TAIL_NS
    eager_period = eager_iter_ns + ITERATION_GAP_NS
    e_start = t0 + np.arange(n, dtype=np.int64) * eager_period
    launch_start = (e_start[:, None] + ki[None, :] * LAUNCH_PERIOD_NS).ravel()
    kernel_start = launch_start + LAUNCH_CALL_NS + LAUNCH_LATENCY_NS
    launch_corr = np.arange(1, n * k + 1, dtype=np.int64)
    rng = np.random.default_rng(jitter_seed) if jitter_seed is not None else None
    launch_end = launch_start + LAUNCH_CALL_NS
    if rng is not None:
        launch_end -= rng.integers(0, JITTER_NS, launch_end.size)
    e_sync_start = e_start + eager_sync_start
    e_end = e_start + eager_iter_ns
    eager_phase_end = int(e_end[-1])

    # Build: capture, instantiate, upload, first launch (one-time costs, host side).
    b0 = eager_phase_end + 10_000
    capture = (b0, b0 + 20_000)
    instantiate = (capture[1] + 1_000, capture[1] + 51_000)
    upload = (instantiate[1] + 1_000, instantiate[1] + 11_000)
    first_launch = (upload[1] + 1_000, upload[1] + 40_000)

    # Graph replays: one cudaGraphLaunch each, nodes back to back on the stream.
    node_offset = GRAPH_LAUNCH_CALL_NS + LAUNCH_LATENCY_NS + ki * (KERNEL_NS + NODE_GAP_NS)
    graph_iter_ns = int(node_offset[-1]) + KERNEL_NS + SYNC_TAIL_NS
    g_period = graph_iter_ns + ITERATION_GAP_NS
    g_start = first_launch[1] + 5_000 + np.arange(n, dtype=np.int64) * g_period
    g_end = g_start + graph_iter_ns
    g_corr = n * k + 1000 + np.arange(n, dtype=np.int64)
    e_sync_corr = n * k + 100_000 + np.arange(n, dtype=np.int64)
    g_sync_corr = n * k + 200_000 + np.arange(n, dtype=np.int64)
    one_time_corr = np.arange(n * k + 300_000, n * k + 300_006, dtype=np.int64)
    pass_end = int(g_end[-1]) + 10_000

    counts = SyntheticCounts(
        eager_kernels=n * k,
        graph_kernels=n * k if detail == "node" else 0,
        graph_spans=n if detail == "graph" else 0,
        api_calls=n * k + n + 2 * n + 6,
        kernel_launch_calls=n * k,
    )
    meta = {
        "workload": "synthetic",
        "params": {"iterations": n, "kernels_per_iteration": k, "note": "built by tests/synthetic_timeline.py"},
        "gpu_name": "synthetic (no GPU)",
        "dropped_records": 0,
    }
    with TraceWriter(path, meta) as w:
        w.add_pass(PassInfo(0, "timing", "timing", t0, pass_end, 0, "complete"))
        w.add_pass(PassInfo(1, "traced", detail, t0, pass_end, 0, "complete"))
        for pass_id in (0, 1):
            _write_markers(w, pass_id, e_start, e_end, g_start, g_end, (capture, instantiate, upload, first_launch),
                           t0, eager_phase_end, pass_end, nvtx_message)
        one_time = [
            ("cudaStreamBeginCapture", "capture", capture[0], capture[0] + 2_000),
            ("cudaStreamEndCapture", "capture", capture[1] - 3_000, capture[1]),
            ("cudaGraphInstantiate", "instantiate", *instantiate),
            ("cudaGraphUpload", "upload", *upload),
            ("cudaGraphLaunch", "graph_launch", first_launch[0], first_launch[0] + GRAPH_LAUNCH_CALL_NS),
            ("cudaStreamSynchronize", "sync", first_launch[0] + GRAPH_LAUNCH_CALL_NS, first_launch[1]),
        ]
        api_names = (["cudaLaunchKernel"] * (n * k) + ["cudaGraphLaunch"] * n + ["cudaStreamSynchronize"] * (2 * n)
                     + [o[0] for o in one_time])
        api_cat = (["kernel_launch"] * (n * k) + ["graph_launch"] * n + ["sync"] * (2 * n) + [o[1] for o in one_time])
        api_start = np.concatenate([launch_start, g_start, e_sync_start, g_start + GRAPH_LAUNCH_CALL_NS,
                                    np.array([o[2] for o in one_time], dtype=np.int64)])
        api_end = np.concatenate([launch_end, g_start + GRAPH_LAUNCH_CALL_NS, e_end, g_end,
                                  np.array([o[3] for o in one_time], dtype=np.int64)])
        api_corr = np.concatenate([launch_corr, g_corr, e_sync_corr, g_sync_corr, one_time_corr])
        m = len(api_start)
        w.append("api_calls", {
            "pass_id": np.ones(m, np.int32), "correlation_id": api_corr, "api": ["runtime"] * m,
            "name": api_names, "category": api_cat, "start_ns": api_start, "end_ns": api_end,
            "process_id": np.full(m, PROCESS_ID, np.int32), "thread_id": np.full(m, THREAD_ID, np.int64),
        })
        _write_gpu(w, kernel_name, kernel_start, launch_corr, g_start, g_corr, node_offset, graph_iter_ns, detail, k, rng)
        w.append("synchronizations", {
            "pass_id": np.ones(2 * n, np.int32), "type": ["stream"] * (2 * n),
            "start_ns": np.concatenate([e_sync_start, g_start + GRAPH_LAUNCH_CALL_NS]),
            "end_ns": np.concatenate([e_end, g_end]), "correlation_id": np.concatenate([e_sync_corr, g_sync_corr]),
            "stream_id": np.full(2 * n, STREAM_ID, np.int32),
        })
        w.append("graphs", {"pass_id": [1], "graph_id": [GRAPH_ID], "exec_id": [EXEC_ID], "origin": ["capture"],
                            "label": ["synthetic chain"], "mode": ["graph"], "num_nodes": [k], "num_edges": [k - 1]})
        w.append("graph_nodes", {
            "pass_id": np.ones(k, np.int32), "graph_id": np.full(k, GRAPH_ID), "node_id": NODE_ID_BASE + ki,
            "node_index": ki.astype(np.int32), "node_type": ["kernel"] * k, "name": [kernel_name] * k,
            "source": ["synthetic.py:1 step"] * k,
        })
        w.append("graph_edges", {"pass_id": np.ones(k - 1, np.int32), "graph_id": np.full(k - 1, GRAPH_ID),
                                 "from_node_id": NODE_ID_BASE + ki[:-1], "to_node_id": NODE_ID_BASE + ki[1:]})
        events = [("capture", *capture, 0), ("instantiate", *instantiate, int(one_time_corr[2])),
                  ("upload", *upload, int(one_time_corr[3]))]
        w.append("graph_events", {
            "pass_id": [1] * 3, "graph_id": [GRAPH_ID] * 3, "exec_id": [0, EXEC_ID, EXEC_ID],
            "event": [e[0] for e in events], "start_ns": [e[1] for e in events], "end_ns": [e[2] for e in events],
            "correlation_id": [e[3] for e in events], "thread_id": [THREAD_ID] * 3,
        })
    return counts


def _write_gpu(w: TraceWriter, kernel_name: str, kernel_start: np.ndarray, launch_corr: np.ndarray,
               g_start: np.ndarray, g_corr: np.ndarray, node_offset: np.ndarray, graph_iter_ns: int,
               detail: str, k: int, rng: np.random.Generator | None = None) -> None:
    n = len(g_start)
    if detail == "node":
        node_start = (g_start[:, None] + node_offset[None, :]).ravel()
        starts = np.concatenate([kernel_start, node_start])
        corr = np.concatenate([launch_corr, np.repeat(g_corr, k)])
        graph_ids = np.concatenate([np.zeros(n * k, np.int64), np.full(n * k, GRAPH_ID)])
        node_ids = np.concatenate([np.zeros(n * k, np.int64), np.tile(NODE_ID_BASE + np.arange(k), n)])
        kinds = ["kernel"] * len(starts)
        names = [kernel_name] * len(starts)
        ends = starts + KERNEL_NS
        if rng is not None:
            starts = starts + rng.integers(0, JITTER_NS // 2, starts.size)
            ends = ends - rng.integers(0, JITTER_NS // 2, ends.size)
    else:
        g_first = g_start + int(node_offset[0])
        g_last = g_start + int(node_offset[-1]) + KERNEL_NS
        starts = np.concatenate([kernel_start, g_first])
        ends = np.concatenate([kernel_start + KERNEL_NS, g_last])
        corr = np.concatenate([launch_corr, g_corr])
        graph_ids = np.concatenate([np.zeros(n * k, np.int64), np.full(n, GRAPH_ID)])
        node_ids = np.zeros(len(starts), np.int64)
        kinds = ["kernel"] * (n * k) + ["graph"] * n
        names = [kernel_name] * (n * k) + ["synthetic chain"] * n
    m = len(starts)
    is_kernel = np.arange(m) < (m if detail == "node" else n * k)
    w.append("gpu_spans", {
        "pass_id": np.ones(m, np.int32), "kind": kinds, "name": names, "start_ns": starts, "end_ns": ends,
        "stream_id": np.full(m, STREAM_ID, np.int32), "correlation_id": corr, "graph_id": graph_ids,
        "graph_node_id": node_ids, "grid_x": np.where(is_kernel, 128, 0).astype(np.int32),
        "grid_y": np.where(is_kernel, 1, 0).astype(np.int32), "grid_z": np.where(is_kernel, 1, 0).astype(np.int32),
        "block_x": np.where(is_kernel, 256, 0).astype(np.int32), "block_y": np.where(is_kernel, 1, 0).astype(np.int32),
        "block_z": np.where(is_kernel, 1, 0).astype(np.int32),
    })


def _write_markers(w: TraceWriter, pass_id: int, e_start: np.ndarray, e_end: np.ndarray, g_start: np.ndarray,
                   g_end: np.ndarray, ops: tuple[tuple[int, int], ...], t0: int, eager_phase_end: int,
                   pass_end: int, nvtx_message: str | None) -> None:
    n = len(e_start)
    rows: dict[str, list[object]] = {k: [] for k in ("kind", "name", "mode", "iteration", "start_ns", "end_ns", "graph_id")}

    def add(kind: str, name: str, mode: str, it: int, s: int, e: int, gid: int = 0) -> None:
        for key, v in zip(rows, (kind, name, mode, it, s, e, gid)):
            rows[key].append(v)

    add("phase", "eager", "eager", -1, t0, eager_phase_end)
    add("phase", "build", "graph", -1, ops[0][0], ops[-1][1], GRAPH_ID)
    add("phase", "replay", "graph", -1, int(g_start[0]), int(g_end[-1]), GRAPH_ID)
    for name, (s, e) in zip(("capture", "instantiate", "upload", "first_launch"), ops):
        add("op", name, "graph", -1, s, e, GRAPH_ID)
    if nvtx_message is not None:
        add("nvtx", nvtx_message, "", -1, int(e_start[0]), int(e_end[0]))
    m = len(rows["kind"])
    w.append("markers", {
        "pass_id": np.full(m + 2 * n, pass_id, np.int32),
        "kind": rows["kind"] + ["iteration"] * (2 * n),
        "name": rows["name"] + ["iteration"] * (2 * n),
        "mode": rows["mode"] + ["eager"] * n + ["graph"] * n,
        "iteration": np.concatenate([np.array(rows["iteration"], np.int32), np.arange(n), np.arange(n)]),
        "start_ns": np.concatenate([np.array(rows["start_ns"], np.int64), e_start, g_start]),
        "end_ns": np.concatenate([np.array(rows["end_ns"], np.int64), e_end, g_end]),
        "thread_id": np.full(m + 2 * n, THREAD_ID, np.int64),
        "graph_id": np.concatenate([np.array(rows["graph_id"], np.int64), np.zeros(n, np.int64), np.full(n, GRAPH_ID)]),
    })
