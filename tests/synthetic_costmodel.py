"""SYNTHETIC calibration tables and cost models for tests: every coefficient is chosen by hand, none measured.

A table is made for graphmode's real calibration shapes (tracer.calibrate.shapes / analyzers.calibration.predicted_graph, pure
code) from TRUE coefficients, with seeded noise or none, so that a fit can be checked against the
coefficients it should recover and a prediction against numbers worked out on paper. The model's key
says gpu_name 'SYNTHETIC GPU' so it can never be taken for a calibration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphmode.analyzers.costmodel import QUANTITIES, CostModel, fit_cost_model

# ns; keys are the features of analyzers.costmodel.QUANTITIES
TRUE: dict[str, dict[str, float]] = {
    "capture": {"1": 10_000, "kernel": 3_000, "memset": 3_000, "memcpy": 3_500, "host": 2_500, "record_calls": 1_000, "wait_calls": 1_200},
    "eager_issue": {"1": 1_000, "kernel": 2_500, "memset": 2_600, "memcpy": 3_000, "host": 2_000, "record_calls": 600, "wait_calls": 700},
    "instantiate": {"1": 40_000, "kernel": 4_000, "memset": 3_000, "memcpy": 3_500, "host": 2_000, "event": 2_500, "edges": 500},
    "upload": {"1": 30_000, "kernel": 300, "memset": 200, "memcpy": 250, "host": 200, "event": 100, "edges": 50},
    "first_launch_excess": {"1": 5_000, "kernel": 800, "memset": 600, "memcpy": 700, "host": 900, "event": 300, "edges": 0},
    "launch_call": {"1": 1_500, "kernel": 10, "memset": 10, "memcpy": 10, "host": 20, "event": 10, "edges": 2},
    "replay_host": {"1": 8_000, "kernel": 5, "memset": 5, "memcpy": 5, "host": 10, "event": 5, "edges": 1},
    # the same per-node cost for short and ~5 us kernels, so that hand calculations need no interpolation; a wide
    # kernel (one wave over every SM) runs 100 ns shorter in a replay than its eager duration; a node beside the
    # path costs 200, a switch between node types on the path 250, a wide kernel beside the path 0.5 of its time
    "replay_gpu_overhead": {"1": 2_000, "path_kernel_tiny": 150, "path_kernel_spin": 150, "path_kernel_wide": -100, "path_memset": 300,
                            "path_memcpy": 400, "path_host": 3_000, "path_event": 500, "path_switches": 250, "off_nodes": 200,
                            "off_wide_ns": 0.5},
    # the node-API build (cuGraphAdd*Node from Python): measured only for kernel, memset and memcpy graphs
    "build_api": {"1": 15_000, "kernel": 8_000, "memset": 7_000, "memcpy": 9_000, "edges": 300},
}
NODE_GPU_NS = {"kernel": 1_500.0, "kernel_spin": 5_200.0, "kernel_wide": 2_000.0, "memset": 1_200.0, "memcpy": 1_800.0}
SM_COUNT = 100
EAGER_GAP_NS = {"kernel": 1_000.0, "memset": 1_000.0, "memcpy": 1_000.0}
EAGER_TAIL_NS = 3_000.0
FIRST_GRAPH_EXTRA = {"capture": 20_000.0, "instantiate": 200_000.0, "upload": 0.0, "first_launch": 5_000.0}
FIRST_GRAPH_EXTRA_API = {"build": 150_000.0, "instantiate": 100_000.0, "upload": 0.0, "first_launch": 5_000.0}
MACHINE = {"gpu_name": "SYNTHETIC GPU", "compute_capability": "0.0", "driver_version": "0.0", "cuda_driver_version": 0,
           "cuda_runtime_version": 0, "tool_version": "test", "created_at": "synthetic", "sm_count": SM_COUNT}


def true_value(quantity: str, counts: dict[str, float]) -> float:
    c = {**counts, "path_kernel_tiny": counts.get("path_kernel", 0.0) - counts.get("path_kernel_spin", 0.0) - counts.get("path_kernel_wide", 0.0),
         "off_wide_ns": counts.get("off_kernel_wide", 0.0) * NODE_GPU_NS["kernel_wide"]}
    return sum(v * (1.0 if f == "1" else float(c.get(f, 0.0))) for f, v in TRUE[quantity].items())


def synthetic_table(repeats: int = 3, rel_noise: float = 0.0, abs_noise: float = 0.0, seed: int = 1) -> list[dict[str, Any]]:
    """Rows like tracer.calibrate's, for its real shapes, with values from TRUE (plus noise)."""
    from graphmode.analyzers.calibration import predicted_graph
    from graphmode.tracer.calibrate import api_buildable, program, shapes

    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for sh in shapes():
        steps = program(sh)
        f = predicted_graph(steps)
        for rep in range(repeats):
            row: dict[str, Any] = {"shape": sh.name, "repeat": rep, "first_graph": False, **f}

            def noisy(q: str) -> float:
                v = true_value(q, f)
                rel = QUANTITIES[q][1]
                return float(v * (1 + rel_noise * rng.standard_normal()) if rel else v + abs_noise * rng.standard_normal())

            for q in ("capture", "instantiate", "upload", "launch_call"):
                row[q] = noisy(q)
            if api_buildable(steps):
                row["build_api"] = noisy("build_api")
            if sh.kind != "event_chain":
                row["eager_issue"] = noisy("eager_issue")
                row["eager_wall"] = row["eager_issue"] + EAGER_TAIL_NS
            # kernel_spin and kernel_wide nodes (calibration's ~5 us and wide kernels) count as kernels with their own duration
            own = sum(f[f"path_{t}"] * NODE_GPU_NS[t] for t in ("kernel", "memset", "memcpy"))
            own += f["path_kernel_spin"] * (NODE_GPU_NS["kernel_spin"] - NODE_GPU_NS["kernel"])
            own += f["path_kernel_wide"] * (NODE_GPU_NS["kernel_wide"] - NODE_GPU_NS["kernel"])
            # the replay's GPU span carries relative noise (costmodel.RELATIVE_TO: its overhead is fitted for it)
            row["replay_gpu"] = (true_value("replay_gpu_overhead", f) + own) * (1 + rel_noise * rng.standard_normal())
            row["replay_wall"] = row["replay_gpu"] + noisy("replay_host")
            row["first_launch"] = row["replay_wall"] + noisy("first_launch_excess")
            rows.append(row)
    return rows


def synthetic_model(rel_noise: float = 0.0, abs_noise: float = 0.0, seed: int = 1, repeats: int = 3) -> CostModel:
    """The model graphmode fits from synthetic_table; noise-free by default, so its coefficients are TRUE."""
    probes = [dict(FIRST_GRAPH_EXTRA) for _ in range(5)]
    return fit_cost_model(synthetic_table(repeats, rel_noise, abs_noise, seed), NODE_GPU_NS, EAGER_GAP_NS, probes, MACHINE,
                          {"note": "synthetic test model, coefficients chosen by hand"},
                          api_probes=[dict(FIRST_GRAPH_EXTRA_API) for _ in range(5)])
