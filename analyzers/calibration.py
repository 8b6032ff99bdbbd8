"""graphmode's capture rules applied to the calibration's programs, and the fit of its measurements: the pure half of
`graphmode calibrate` (tracer.calibrate measures; the command wires measure -> write -> fit_measurements).

The graph a capture of a calibration program builds is worked out by the same construction the prediction applies
to a user's eager trace (analyzers.eager_graph.build_eager_graph): its feature counts go into each measured row
beside the captured graph's real counts (`predicted_graph`), and its dependencies tell the node-API build what each
node waits for (`node_dependencies`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from graphmode.analyzers.costmodel import GPU_NODE_TYPES, CostModel, fit_cost_model, save_model, with_launch_costs
from graphmode.analyzers.critical_path import _backtrack, longest_path
from graphmode.analyzers.eager_graph import EagerGraph, EagerOps, EventCalls, build_eager_graph
from graphmode.tracer.calibrate import CaptureRules, NodePlan, Step
from graphmode.tracer.errors import CostModelError


def capture_graph(steps: list[Step]) -> tuple[list[str], EagerGraph, dict[str, int]]:
    """The graph a capture of `steps` builds, by graphmode's own capture rules (analyzers.eager_graph.build_eager_graph,
    the construction the prediction applies to a user's eager trace): (each node's kind, in step order; the
    EagerGraph, whose node indices are those positions; the event record and wait calls made)."""
    kinds: list[str] = []
    streams: list[int] = []
    times: list[int] = []
    rec_t, rec_s, rec_e, wait_t, wait_s, wait_e = [], [], [], [], [], []
    calls = {"record_calls": 0, "wait_calls": 0}
    for t, (what, a, b) in enumerate(steps):  # per step of a calibration shape
        if what == "op":
            kinds.append(a)
            streams.append(b)
            times.append(t)
        elif what in ("record_ext", "wait_ext"):
            kinds.append("event")
            streams.append(b if what == "record_ext" else a)
            times.append(t)
            calls["record_calls" if what == "record_ext" else "wait_calls"] += 1
        elif what == "record":
            rec_t.append(t)
            rec_e.append(a)
            rec_s.append(b)
            calls["record_calls"] += 1
        else:
            wait_t.append(t)
            wait_s.append(a)
            wait_e.append(b)
            calls["wait_calls"] += 1
    def i64(v: list[int]) -> np.ndarray:
        return np.asarray(v, dtype=np.int64)

    ops = EagerOps(np.asarray(kinds, dtype=object), np.asarray(kinds, dtype=object), i64(streams), i64(times), np.zeros(len(kinds), dtype=np.int64))
    g = build_eager_graph(ops, EventCalls(i64(rec_t), np.zeros(len(rec_t), dtype=np.int64), i64(rec_s), i64(rec_e), i64(wait_t), i64(wait_s), i64(wait_e)))
    return kinds, g, calls


def predicted_graph(steps: list[Step]) -> dict[str, float]:
    """Feature counts of the graph a capture of `steps` builds, by graphmode's own capture rules (`capture_graph`).
    The calibration records the captured graph's real node and edge counts next to these."""
    kinds, g, calls = capture_graph(steps)
    spin = np.asarray(kinds, dtype=str) == "kernel_spin"
    wide = np.asarray(kinds, dtype=str) == "kernel_wide"
    # a ~5 us or a wide kernel is a kernel node like any other
    k = np.where(spin | wide, "kernel", np.asarray(kinds, dtype=str))
    dist, _ = longest_path(np.ones(len(kinds)), g.edge_from, g.edge_to)
    path = np.asarray(_backtrack(dist, np.ones(len(kinds)), g.edge_from, g.edge_to), dtype=np.int64)
    out: dict[str, float] = {t: float(np.count_nonzero(k == t)) for t in ("kernel", "memset", "memcpy", "host", "event")}
    out.update({f"path_{t}": float(np.count_nonzero(k[path] == t)) for t in ("kernel", "memset", "memcpy", "host", "event")})
    out["path_kernel_spin"] = float(np.count_nonzero(spin[path]))  # for the own GPU time on the path (node_gpu_ns)
    out["path_kernel_wide"] = float(np.count_nonzero(wide[path]))
    gpu_on_path = [t for t in k[np.sort(path)] if t in GPU_NODE_TYPES]
    out["path_switches"] = float(sum(a != b for a, b in zip(gpu_on_path, gpu_on_path[1:])))
    off = np.ones(len(kinds), dtype=bool)
    off[path] = False
    out["off_nodes"] = float(np.count_nonzero(off))  # nodes on parallel branches, beside the longest path
    out["off_kernel_wide"] = float(np.count_nonzero(wide & off))  # their wide kernels (costmodel: off_wide_ns)
    out["edges"] = float(g.edges)
    out["nodes"] = float(g.nodes)
    out.update({c: float(v) for c, v in calls.items()})
    return out


def node_dependencies(steps: list[Step]) -> NodePlan:
    """Each node's kind, in step order, and the positions of the nodes it depends on in the graph a capture of
    `steps` builds (`capture_graph`'s edges): what the node-API build gives each node as it is added."""
    kinds, g, _ = capture_graph(steps)
    return kinds, [g.edge_from[g.edge_to == i].tolist() for i in range(len(kinds))]


CAPTURE_RULES = CaptureRules(nodes=node_dependencies, features=predicted_graph)


def fit_measurements(raw_path: Path, out: Path) -> CostModel:
    """Fits the cost model from a calibration's measurements file and writes it to `out` (no GPU needed)."""
    try:
        raw = json.loads(Path(raw_path).read_text())
        args = (raw["table"], raw["node_gpu_ns"], raw["eager_gap_ns"], raw["first_graph_probes"], raw["machine"], raw["calibration"],
                raw.get("torch_probes", []), raw.get("tree_probes", []), raw.get("first_graph_probes_api", []))
    except (OSError, ValueError, KeyError) as e:
        raise CostModelError(f"{raw_path}: not a calibration measurements file ({type(e).__name__}: {e})") from None
    try:
        model = with_launch_costs(fit_cost_model(*args), raw.get("launch_probes", []))
    except CostModelError as e:
        raise CostModelError(f"{e}; the measurements are kept in {raw_path}") from None
    save_model(model, out)
    return dataclasses.replace(model, path=str(out))
