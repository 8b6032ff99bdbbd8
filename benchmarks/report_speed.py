"""How fast is the full report on a 10-million-event trace? (issue 3, 'Speed')

    python benchmarks/report_speed.py [--events 10000000] [--runs 3] [--keep PATH]

Generates a trace of timing + node-detail passes, eager and graph iterations, whose distributions
(kernels per iteration, kernel durations, launch and synchronize call durations, graph replay span)
are drawn from a real recording under tests/data/*.gmtrace when one exists; otherwise from the
synthetic distributions in SYNTHETIC below (said so in the output). Then, in a fresh subprocess so
that peak RSS is the report's alone, times `analyze()` + the JSON report, median of --runs.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Used only without a real recording: lognormal medians (ns) and shapes, loosely an H100-class GPU.
SYNTHETIC = {
    "kernels_per_iteration": 20,
    "kernel_ns": (6_000.0, 0.3),  # (median, sigma)
    "launch_ns": (2_500.0, 0.2),
    "gap_ns": (1_000.0, 0.5),  # host time between launches
    "graph_launch_ns": (4_000.0, 0.2),
}


def distributions_from(path: Path) -> dict[str, np.ndarray | int]:
    """Empirical samples from a real recording's traced pass."""
    from graphmode.tracer.store import load

    with load(path) as t:
        p = t.pass_by_detail("node", "graph")
        if p is None:
            raise SystemExit(f"{path}: no traced pass to draw distributions from")
        kernels = t.sql("SELECT (end_ns - start_ns) AS d FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' LIMIT 100000", [p.pass_id])["d"]
        launch = t.sql("SELECT (end_ns - start_ns) AS d FROM api_calls WHERE pass_id = ? AND category = 'kernel_launch' LIMIT 100000", [p.pass_id])["d"]
        glaunch = t.sql("SELECT (end_ns - start_ns) AS d FROM api_calls WHERE pass_id = ? AND category = 'graph_launch' LIMIT 100000", [p.pass_id])["d"]
        per_iter = t.rows("""WITH i AS (SELECT start_ns s, end_ns e FROM markers WHERE pass_id = ? AND kind='iteration' AND mode='eager')
                             SELECT median(c) FROM (SELECT count(*) c FROM gpu_spans g ASOF JOIN i ON g.start_ns >= i.s
                             WHERE g.pass_id = ? AND g.kind='kernel' AND g.start_ns < i.e GROUP BY i.s)""", [p.pass_id, p.pass_id])[0][0]
    if kernels.size == 0 or launch.size == 0:
        raise SystemExit(f"{path}: no kernels or launches in the traced pass")
    return {"kernels_per_iteration": int(per_iter or 20), "kernel_ns": kernels.astype(np.int64), "launch_ns": launch.astype(np.int64),
            "graph_launch_ns": (glaunch if glaunch.size else launch).astype(np.int64),
            "gap_ns": np.maximum(launch.astype(np.int64) // 3, 1)}


def _sample(rng: np.random.Generator, dist: object, n: int) -> np.ndarray:
    if isinstance(dist, tuple):
        median, sigma = dist
        return np.maximum(rng.lognormal(np.log(median), sigma, n), 1).astype(np.int64)
    assert isinstance(dist, np.ndarray)
    return rng.choice(dist, n)


def generate(path: Path, events: int, dists: dict[str, object], source: str) -> dict[str, int]:
    """Writes the trace; returns its row counts. Vectorised: every table is built as numpy columns."""
    from graphmode.tracer.store import PassInfo, TraceWriter

    rng = np.random.default_rng(7)
    k = int(dists["kernels_per_iteration"])  # type: ignore[call-overload]
    # per eager iteration: k runtime + k driver launches, 1 sync call, k kernels, 1 marker;
    # per graph iteration: 1 launch call, 1 sync call, k node spans, 1 marker; timing pass: 2 markers
    per_pair = (2 * k + 1 + k + 1) + (2 + k + 1) + 2
    n = max(-(-events // per_pair), 1)
    counts: dict[str, int] = {}
    with TraceWriter(path, {"workload": "synthetic-speed", "params": {"distributions": source, "kernels": k, "iterations": n}}) as w:
        # ---- traced pass 1, eager: iterations back to back
        launch = _sample(rng, dists["launch_ns"], n * k).reshape(n, k)
        gap = _sample(rng, dists["gap_ns"], n * k).reshape(n, k)
        kern = _sample(rng, dists["kernel_ns"], n * k).reshape(n, k)
        step = launch + gap
        it_len = step.sum(axis=1) + kern.sum(axis=1) + 10_000
        it_start = 1_000_000 + np.concatenate([[0], np.cumsum(it_len + 1_000)[:-1]])
        l_start = it_start[:, None] + np.concatenate([np.zeros((n, 1), np.int64), np.cumsum(step, axis=1)[:, :-1]], axis=1)
        l_end = l_start + launch
        g_start = np.maximum.accumulate(l_end + 500, axis=1)  # kernels run back to back or wait for their launch
        g_end = g_start + kern
        for i in range(1, k):  # over kernel positions (k ~ 20), not events: a kernel starts after the previous one ends
            g_start[:, i] = np.maximum(g_start[:, i], g_end[:, i - 1])
            g_end[:, i] = g_start[:, i] + kern[:, i]
        sync_start = l_end[:, -1] + 100
        it_end = np.maximum(g_end[:, -1], sync_start) + 2_000
        corr = np.arange(1, n * k + 1, dtype=np.int64).reshape(n, k)
        names = np.array([f"_Z6kernelILi{j}EEvPf" for j in range(k)], dtype=object)
        eager_end = int(it_end[-1])
        # ---- graph iterations after the eager ones
        glaunch = _sample(rng, dists["graph_launch_ns"], n)
        gk = _sample(rng, dists["kernel_ns"], n * k).reshape(n, k)
        gl = glaunch + gk.sum(axis=1) + 5_000
        gi_start = eager_end + 1_000_000 + np.concatenate([[0], np.cumsum(gl + 1_000)[:-1]])
        gi_end = gi_start + gl
        gs = gi_start[:, None] + glaunch[:, None] + 1_000 + np.concatenate([np.zeros((n, 1), np.int64), np.cumsum(gk, axis=1)[:, :-1]], axis=1)
        gcorr = n * k + 1 + np.arange(n, dtype=np.int64)
        nodes = np.arange(1, k + 1, dtype=np.int64)

        rt = {"start_ns": l_start.ravel(), "end_ns": l_end.ravel(), "correlation_id": corr.ravel()}
        api = {
            "pass_id": np.ones(2 * n * k + 2 * n + 2 * n, np.int32),
            "start_ns": np.concatenate([rt["start_ns"], rt["start_ns"] + 50, sync_start, gi_start, gi_start + glaunch + 10]),
            "end_ns": np.concatenate([rt["end_ns"], rt["end_ns"] - 50, it_end - 1_000, gi_start + glaunch, gi_end - 10]),
            "correlation_id": np.concatenate([rt["correlation_id"], rt["correlation_id"] + 10**9, 2 * 10**9 + np.arange(n), gcorr, 3 * 10**9 + np.arange(n)]),
            "api": np.concatenate([np.full(n * k, "runtime", object), np.full(n * k, "driver", object), np.full(3 * n, "runtime", object)]),
            "category": np.concatenate([np.full(2 * n * k, "kernel_launch", object), np.full(n, "sync", object), np.full(n, "graph_launch", object), np.full(n, "sync", object)]),
            "name": np.concatenate([np.full(n * k, "cudaLaunchKernel", object), np.full(n * k, "cuLaunchKernel", object), np.full(n, "cudaStreamSynchronize", object), np.full(n, "cudaGraphLaunch", object), np.full(n, "cudaStreamSynchronize", object)]),
            "thread_id": np.ones(2 * n * k + 3 * n, np.int64),
        }
        api["pass_id"] = np.ones(api["start_ns"].size, np.int32)
        counts["api_calls"] = w.append("api_calls", api)
        counts["gpu_spans"] = w.append("gpu_spans", {
            "pass_id": np.ones(2 * n * k, np.int32), "kind": np.full(2 * n * k, "kernel", object),
            "name": np.concatenate([np.tile(names, n), np.tile(names, n)]),
            "start_ns": np.concatenate([g_start.ravel(), gs.ravel()]), "end_ns": np.concatenate([g_end.ravel(), (gs + gk).ravel()]),
            "stream_id": np.full(2 * n * k, 7, np.int32), "correlation_id": np.concatenate([corr.ravel(), np.repeat(gcorr, k)]),
            "graph_id": np.concatenate([np.zeros(n * k, np.int64), np.ones(n * k, np.int64)]),
            "graph_node_id": np.concatenate([np.zeros(n * k, np.int64), np.tile(nodes, n)]),
        })
        # ---- markers: traced pass iterations, then a timing pass with the same walls minus tracer overhead
        markers = {
            "pass_id": np.concatenate([np.ones(2 * n, np.int32), np.zeros(2 * n, np.int32)]),
            "kind": np.full(4 * n, "iteration", object),
            "mode": np.concatenate([np.full(n, "eager", object), np.full(n, "graph", object)] * 2),
            "iteration": np.tile(np.arange(n, dtype=np.int32), 4),
            "start_ns": np.concatenate([it_start, gi_start, it_start, gi_start]),
            "end_ns": np.concatenate([it_end, gi_end, it_end - (it_end - it_start) // 5, gi_end - (gi_end - gi_start) // 10]),
            "thread_id": np.ones(4 * n, np.int64),
        }
        markers["name"] = markers["mode"]
        counts["markers"] = w.append("markers", markers)
        w.append("markers", {"pass_id": [0, 0, 0], "kind": ["op"] * 3, "name": ["capture", "instantiate", "first_launch"],
                             "mode": ["graph"] * 3, "graph_id": [1, 1, 1], "start_ns": [100, 200_000, 400_000],
                             "end_ns": [150_000, 350_000, 480_000], "iteration": [-1] * 3})
        w.append("graphs", {"pass_id": [1], "graph_id": [1], "exec_id": [2], "origin": ["capture"], "label": ["chain"],
                            "mode": ["graph"], "num_nodes": [k], "num_edges": [k - 1]})
        w.append("graph_nodes", {"pass_id": np.ones(k, np.int32), "graph_id": np.ones(k, np.int64), "node_id": nodes,
                                 "node_index": np.arange(k, dtype=np.int32), "node_type": np.full(k, "kernel", object), "name": names})
        w.append("graph_edges", {"pass_id": np.ones(k - 1, np.int32), "graph_id": np.ones(k - 1, np.int64),
                                 "from_node_id": nodes[:-1], "to_node_id": nodes[1:]})
        end = int(gi_end[-1]) + 1
        w.add_pass(PassInfo(0, "timing", "timing", 0, end, 0, "complete"))
        w.add_pass(PassInfo(1, "traced", "node", 0, end, 0, "complete"))
    return counts


def _peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM is per address space; getrusage's ru_maxrss is not used because
    Linux carries the parent's high-water mark across fork+exec (the generator's arrays would count)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: Path, runs: int) -> dict[str, float]:
    """Run in a fresh process: median seconds of analyze() + JSON report, and peak RSS."""
    from graphmode.analyzers import analyze
    from graphmode.reports.json_report import render_json
    from graphmode.tracer.store import load

    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        with load(path) as trace:
            text = render_json(analyze(trace))
        times.append(time.perf_counter() - t0)
    doc = json.loads(text)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "peak_rss_mb": _peak_rss_mb(),
            "break_even": doc["break_even"][0]["replays"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write the generated trace here and keep it")
    ap.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.runs)))
        return
    real = sorted((REPO / "tests" / "data").glob("*.gmtrace"))
    if real:
        dists: dict[str, object] = distributions_from(real[0])  # type: ignore[assignment]
        source = f"real recording {real[0].name}"
    else:
        dists, source = dict(SYNTHETIC), "SYNTHETIC distributions (no real recording under tests/data/ yet)"
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "speed.gmtrace"
        t0 = time.perf_counter()
        counts = generate(path, args.events, dists, source)
        gen_s = time.perf_counter() - t0
        size_mb = path.stat().st_size / 2**20
        proc = subprocess.run([sys.executable, __file__, "--measure", str(path), "--runs", str(args.runs)],
                              capture_output=True, text=True, check=True)
        result = json.loads(proc.stdout)
    total = sum(counts.values())
    print(f"distributions: {source}")
    print(f"events: {total:,} ({', '.join(f'{k} {v:,}' for k, v in counts.items())}); file {size_mb:.0f} MiB; generated in {gen_s:.1f} s")
    print(f"analyze + JSON report: median {result['median_s']:.2f} s (min {result['min_s']:.2f}, max {result['max_s']:.2f}) over {args.runs} runs")
    print(f"peak RSS {result['peak_rss_mb']:.0f} MiB = {result['peak_rss_mb'] / size_mb:.1f}x the trace file")


if __name__ == "__main__":
    main()
