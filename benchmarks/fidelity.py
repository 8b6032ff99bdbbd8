"""Does graphmode distort what it measures? Is what it reports right? (issues 2 and 3)

    python benchmarks/fidelity.py record DIR [--procs 50] [--iterations 1000] [--cpus 2]   # on the GPU
    python benchmarks/fidelity.py analyze DIR [DIR ...]                                   # anywhere

`record` starts `--procs` fresh processes one after another, each pinned to the same CPU core(s),
with PYTHONHASHSEED=0. Each process (`worker`) sets up one chain workload and then:
  0. warms up: the workload's first eager step, then one whole graph (capture, instantiate,
     upload, first launch), timed and kept as "first graph of the process" but not compared;
  1. T1, the untraced ground truth (`Truth.block`): the workload's own eager steps and stream
     capture, timed by this file's loop with time.perf_counter_ns; instantiate, upload, first launch
     and replays with the driver API here. Neither graphmode's runner nor CUPTI is used (asserted);
  2. G, graphmode: what `graphmode bench chain` runs (tracer.runner.record: the timing pass and the
     traced pass) on the same workload object, writing a trace;
  3. T2, the ground truth again, after graphmode;
  4. a replay's GPU span with CUDA events, 200 replays each behind a ~100 us spin kernel (last:
     nothing measured after it);
  5. graphmode's analyzers on G's trace; one JSON summary (proc-NNN.json), the trace deleted.
Truth and graphmode share a process, so what differs from process to process (the same eager
Python loop ran 77 to 125 us per iteration depending on the process on the H200) cancels in the
per-process ratio; T1 and T2 bracket graphmode in time. `analyze` reads the summaries and prints
docs/benchmarks.md's tables. `record --truth-only` runs only steps 0, 1 and 4 (process spread
studies, e.g. with `--no-aslr`). `residue` measures the ground truth again after each thing
graphmode (and this benchmark) does in a process: what leaves later CUDA calls slower.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODES = ("eager", "eager_sync_each", "graph")

SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


def _stats(ns: np.ndarray) -> dict[str, float]:
    p10, p50, p90 = np.percentile(ns, [10, 50, 90])
    return {"n": int(ns.size), "median": float(p50), "p10": float(p10), "p90": float(p90)}


def _timed(step: Any, n: int) -> np.ndarray:
    clock = time.perf_counter_ns
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        s = clock()
        step()
        out[i] = clock() - s
    return out


class Truth:
    """The untraced ground truth on one chain workload: host clock and CUDA events only."""

    def __init__(self, wl: Any):
        from cuda.bindings import driver as cu

        from graphmode.tracer.cuda_util import check, compile_module, get_function, init_device

        self.cu, self.check, self.wl = cu, check, wl
        self.module = compile_module(SPIN, "spin.cu", init_device())
        self.spin = get_function(self.module, "spin")
        self.ev0 = check(cu.cuEventCreate(0), "cuEventCreate")
        self.ev1 = check(cu.cuEventCreate(0), "cuEventCreate")
        self.cycles = np.array([200_000], dtype=np.int64)  # ~100 us at the H200's ~2 GHz
        self.spin_args = np.array([self.cycles.ctypes.data], dtype=np.uint64)

    def graph(self) -> dict[str, int]:
        """Builds, instantiates, uploads and first-launches the workload's graph; returns the times."""
        cu, check, s, clock = self.cu, self.check, self.wl.stream, time.perf_counter_ns
        self.wl.reset()
        b0 = clock()
        self.g, _ = self.wl.build_graph()
        b1 = clock()
        self.gexec = check(cu.cuGraphInstantiate(self.g, 0), "cuGraphInstantiate")
        i1 = clock()
        check(cu.cuGraphUpload(self.gexec, s), "cuGraphUpload")
        check(cu.cuStreamSynchronize(s), "cuStreamSynchronize")
        u1 = clock()
        check(cu.cuGraphLaunch(self.gexec, s), "cuGraphLaunch")
        check(cu.cuStreamSynchronize(s), "cuStreamSynchronize")
        f1 = clock()
        return {"capture": b1 - b0, "instantiate": i1 - b1, "upload": u1 - i1, "first_launch": f1 - u1}

    def destroy_graph(self) -> None:
        self.check(self.cu.cuGraphExecDestroy(self.gexec), "cuGraphExecDestroy")
        self.check(self.cu.cuGraphDestroy(self.g), "cuGraphDestroy")

    def graph_gpu_span(self, n: int) -> np.ndarray:
        """GPU time of a replay by CUDA events: a ~100 us spin kernel is queued first so that the
        start event is stamped when the GPU reaches the graph, not when the host gets to launching it."""
        cu, check, s = self.cu, self.check, self.wl.stream
        out = np.empty(n, dtype=np.float64)
        for i in range(n):
            check(cu.cuLaunchKernel(self.spin, 1, 1, 1, 1, 1, 1, 0, s, self.spin_args.ctypes.data, 0), "cuLaunchKernel")
            check(cu.cuEventRecord(self.ev0, s), "cuEventRecord")
            check(cu.cuGraphLaunch(self.gexec, s), "cuGraphLaunch")
            check(cu.cuEventRecord(self.ev1, s), "cuEventRecord")
            check(cu.cuEventSynchronize(self.ev1), "cuEventSynchronize")
            out[i] = float(check(cu.cuEventElapsedTime(self.ev0, self.ev1), "cuEventElapsedTime")) * 1e6
        return out

    def block(self, iterations: int, warmup: int) -> dict[str, Any]:
        """One ground-truth measurement: every mode's iterations, the graph's one-time operations."""
        cu, check, s = self.cu, self.check, self.wl.stream
        modes = self.wl.eager_modes()
        first = next(iter(modes.values()))
        for _ in range(warmup):
            first()
        res: dict[str, Any] = {"iterations": {}, "verified": {}}
        for mode, step in modes.items():
            self.wl.reset()
            res["iterations"][mode] = _stats(_timed(step, iterations))
            res["verified"][mode] = self.wl.verify()[0]
        res["ops"] = self.graph()
        gexec = self.gexec

        def replay() -> None:
            check(cu.cuGraphLaunch(gexec, s), "cuGraphLaunch")
            check(cu.cuStreamSynchronize(s), "cuStreamSynchronize")

        res["iterations"]["graph"] = _stats(_timed(replay, iterations))
        res["verified"]["graph"] = self.wl.verify()[0]
        self.destroy_graph()
        return res


def _derived(it: dict[str, Any], once_parts: dict[str, float]) -> dict[str, float]:
    """Saved, one-time and break-even by the formulas of docs/metrics.md."""
    e, g = it["eager"]["median"], it["graph"]["median"]
    once = (once_parts.get("capture", 0.0) + once_parts.get("instantiate", 0.0) + once_parts.get("upload", 0.0)
            + once_parts.get("first_launch", g) - g)  # not clamped at 0, as in analyzers/graph_cost.py
    saved = e - g
    return {"saved_ns": saved, "one_time_ns": once, "break_even_exact": once / saved if saved > 0 else math.inf,
            "break_even": float(math.ceil(once / saved)) if saved > 0 else math.inf}


def graphmode_summary(path: Path) -> dict[str, Any]:
    """What graphmode reports from its own trace (the analyzers' numbers), plus the raw pass medians."""
    from graphmode.analyzers import analyze as analyze_trace
    from graphmode.tracer.store import load

    t = load(path)
    a = analyze_trace(t)
    out: dict[str, Any] = {"trace_bytes": path.stat().st_size}
    for name in ("timing", "traced"):
        p = t.pass_by_detail("timing") if name == "timing" else (t.pass_by_detail("graph") or t.pass_by_detail("node"))
        out[name] = {m: float(t.rows("SELECT median(end_ns - start_ns) FROM markers WHERE pass_id=? AND kind='iteration' "
                                     "AND mode=?", [p.pass_id, m])[0][0]) for m in MODES}
    saved = next(o for o in a.overhead_saved if o.baseline == "eager")
    be = next(b for b in a.break_even if b.baseline == "eager")
    cost = a.graph_costs[0]
    out["ops"] = {"capture": cost.build_ns, "instantiate": cost.instantiate_ns, "upload": cost.upload_ns,
                  "first_launch": cost.first_launch_ns}
    out["wall_source"] = {m.mode: m.wall_source for m in a.modes}
    out["saved_ns"] = saved.wall_ns
    out["one_time_ns"] = be.one_time_ns
    out["break_even"] = float(be.replays) if be.replays is not None else math.inf
    out["break_even_exact"] = be.one_time_ns / be.saved_per_replay_ns if be.one_time_ns and be.saved_per_replay_ns else math.inf
    out["break_even_interval"] = [be.interval_low, be.interval_high]
    graph = next(m for m in a.modes if m.mode == "graph")
    out["graph_gpu_busy_ns"] = graph.gpu_busy.median if graph.gpu_busy else None
    return out


class _Prepared:
    """A workload that is already set up, lent to graphmode's record() (which sets up and tears down)."""

    def __init__(self, wl: Any):
        self._wl = wl

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wl, name)

    def setup(self) -> None:
        pass

    def teardown(self) -> None:
        pass


def worker(out: Path, iterations: int, warmup: int, truth_only: bool) -> None:
    from graphmode.tracer.workloads import make_workload

    assert "cupti" not in sys.modules
    wl = make_workload("chain")
    wl.setup()
    truth = Truth(wl)
    summary: dict[str, Any] = {"pid": os.getpid(), "cpus": sorted(os.sched_getaffinity(0)),
                               "personality": Path("/proc/self/personality").read_text().strip(),
                               "iterations": iterations, "warmup": warmup}
    for _ in range(warmup):
        next(iter(wl.eager_modes().values()))()
    summary["first_graph_ops"] = truth.graph()
    truth.destroy_graph()
    summary["T1"] = truth.block(iterations, warmup)
    assert "cupti" not in sys.modules, "the ground truth must not load CUPTI"
    if not truth_only:
        from graphmode.tracer.runner import record

        trace = out.with_suffix(".gmtrace")
        t0 = time.perf_counter()
        # The same workload object (buffers, module, stream) as the ground truth: a second chain
        # workload used in the process slowed every later graph replay by ~3 us (`residue`).
        record(_Prepared(wl), trace, iterations=iterations, warmup=warmup, detail="graph")
        summary["graphmode_seconds"] = time.perf_counter() - t0
        summary["T2"] = truth.block(iterations, warmup)
    # Last, so that nothing compared runs after the spin kernel and the events (`residue`: no effect seen).
    truth.graph()
    summary["graph_gpu_events"] = _stats(truth.graph_gpu_span(200))
    truth.destroy_graph()
    if not truth_only:
        summary["graphmode"] = graphmode_summary(trace)
        trace.unlink()
    wl.teardown()
    out.write_text(json.dumps(summary))


def residue(out: Path, iterations: int, warmup: int) -> None:
    """What changes the speed of later CUDA calls in a process: the ground truth's block measured
    again after each step of what graphmode (and this benchmark) does in a process."""
    from graphmode.tracer.workloads import make_workload

    wl = make_workload("chain")
    wl.setup()
    truth = Truth(wl)
    steps: list[dict[str, Any]] = []

    def measure(step: str, t: Truth = truth) -> None:
        b = t.block(iterations, warmup)
        steps.append({"step": step, **{m: b["iterations"][m]["median"] for m in MODES}})
        print(f"{step:55s} " + "  ".join(f"{m} {steps[-1][m] / 1e3:7.2f}" for m in MODES), flush=True)

    measure("first block")
    measure("second block")
    truth.graph()
    truth.graph_gpu_span(200)
    truth.destroy_graph()
    measure("after CUDA events + spin kernel")
    other = make_workload("chain")
    other.setup()
    measure("after a second workload (B) was set up")
    measure("workload B's own block", Truth(other))
    from graphmode.tracer.runner import PassRecorder, machine_meta, run_pass
    from graphmode.tracer.store import TraceWriter
    from graphmode.tracer.cuda_util import init_device

    writer = TraceWriter(out.with_suffix(".gmtrace"), machine_meta(init_device()))
    measure("after NVML (machine_meta) and a TraceWriter (DuckDB)")

    def timing_pass(wl: Any) -> dict[str, float]:
        rec = PassRecorder(0)
        run_pass(wl, rec, iterations, warmup, clock=time.perf_counter_ns, ids=False)
        return {str(m["mode"][0]): float(np.median(np.asarray(m["end_ns"]) - np.asarray(m["start_ns"])))
                for m in rec.markers if list(m["kind"])[:1] == ["iteration"]}

    for name, w in (("A", wl), ("B", other)):
        steps.append({"step": f"graphmode's run_pass on {name}, perf_counter clock, no ids", **timing_pass(w)})
        print(f"{steps[-1]['step']:55s} " + "  ".join(f"{m} {steps[-1][m] / 1e3:7.2f}" for m in MODES), flush=True)
    measure("after graphmode's run_pass")
    from cupti import cupti

    measure("after import cupti")
    cupti.get_timestamp()
    measure("after cupti.get_timestamp()")
    from graphmode.tracer.cupti_session import CuptiSession

    session = CuptiSession("graph", detach=False)
    session.start()
    session.stop()
    measure("after an empty CUPTI session (started, stopped)")
    session = CuptiSession("graph", detach=False)
    session.start()
    truth.block(iterations, warmup)
    raw = session.stop()
    measure(f"after a traced block ({sum(len(c) for c in raw.chunks)} B recorded)")
    cupti.finalize()
    measure("after cupti.finalize()")
    session = CuptiSession("graph")  # detaches at stop
    session.start()
    truth.block(iterations, warmup)
    raw = session.stop()
    measure(f"after a traced block, detached ({sum(len(c) for c in raw.chunks)} B recorded)")
    writer.close("complete", "")
    out.write_text(json.dumps(steps))


def record_procs(directory: Path, procs: int, iterations: int, warmup: int, cpus: set[int], truth_only: bool,
                 no_aslr: bool, start: int, budget_s: float) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    # A fixed hash seed: dict layouts (and with them the interpreter's speed) then do not vary by process.
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "PYTHONHASHSEED": "0"}
    prefix = ["setarch", platform.machine(), "-R"] if no_aslr else []

    def pin() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    began, longest = time.time(), 0.0
    for r in range(start, start + procs):
        if time.time() - began + longest > budget_s:
            print(f"stopping after {r - start} processes: --budget {budget_s:.0f} s", flush=True)
            break
        t0 = time.time()
        cmd = [*prefix, sys.executable, __file__, "worker", str(directory / f"proc-{r:03d}.json"),
               "--iterations", str(iterations), "--warmup", str(warmup)] + (["--truth-only"] if truth_only else [])
        rc = subprocess.run(cmd, env=env, cwd=ROOT, preexec_fn=pin).returncode
        longest = max(longest, time.time() - t0)
        print(f"process {r}: {time.time() - t0:.1f} s" + (f", FAILED with exit code {rc}" if rc else ""), flush=True)


# ---------------------------------------------------------------------------------------------- analysis


def _pct(x: float) -> str:
    return f"{100.0 * (x - 1.0):+.1f}%"


def _ratio_summary(ratios: np.ndarray, seed: int = 0) -> str:
    """Median of per-process ratios, its 95% bootstrap interval, and the 25th-75th percentile."""
    r = ratios[np.isfinite(ratios)]
    med = float(np.median(r))
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(r, size=(2000, r.size), replace=True), axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    q25, q75 = np.percentile(r, [25, 75])
    return f"{_pct(med)} [{_pct(lo)}, {_pct(hi)}] ({_pct(q25)} to {_pct(q75)})"


def analyze_residue(files: list[Path]) -> str:
    """`residue` results: per step, each mode's median iteration in each process."""
    procs = [json.loads(p.read_text()) for p in files]
    lines = [f"Ground truth re-measured after each step, {len(procs)} processes (us, one column per process):", "",
             "| step | " + " | ".join(MODES) + " |", "|---|" + "---|" * len(MODES)]
    for i, step in enumerate(procs[0]):
        cells = [", ".join(f"{p[i][m] / 1e3:.1f}" for p in procs) for m in MODES]
        lines.append(f"| {step['step']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def analyze(directories: list[Path]) -> str:
    residues = [p for d in directories for p in sorted(d.glob("residue-*.json"))]
    if residues:
        return analyze_residue(residues)
    runs = [json.loads(p.read_text()) for d in directories for p in sorted(d.glob("proc-*.json"))]
    if not runs:
        raise SystemExit(f"{', '.join(map(str, directories))}: no proc-*.json; run `record` first")
    full = [r for r in runs if "graphmode" in r]
    eager_t1 = np.array([r["T1"]["iterations"]["eager"]["median"] for r in runs]) / 1e3
    lines = [f"{len(runs)} processes ({len(full)} with graphmode), {runs[0]['iterations']} iterations per mode, "
             f"{runs[0]['warmup']} warm-up steps, pinned to CPU {runs[0]['cpus']}, personality {runs[0]['personality']}.",
             "",
             f"Process-to-process spread of the ground truth's eager median (T1): {eager_t1.min():.1f} to "
             f"{eager_t1.max():.1f} us (median {np.median(eager_t1):.1f}, 25th-75th percentile "
             f"{np.percentile(eager_t1, 25):.1f} to {np.percentile(eager_t1, 75):.1f}).", ""]
    if not full:
        return "\n".join(lines)

    lines += ["Per-iteration medians (median over processes of each process's median), and the median of the "
              "per-process ratios with its 95% bootstrap interval [ ] and 25th-75th percentile ( ):", "",
              "| mode | truth T1 | graphmode timing pass | T2 (after graphmode) | timing / T1 | T2 / T1 | traced / timing (tracer overhead) |",
              "|---|---|---|---|---|---|---|"]
    for mode in MODES:
        t1 = np.array([r["T1"]["iterations"][mode]["median"] for r in full])
        t2 = np.array([r["T2"]["iterations"][mode]["median"] for r in full])
        tp = np.array([r["graphmode"]["timing"][mode] for r in full])
        tr = np.array([r["graphmode"]["traced"][mode] for r in full])
        lines.append(f"| {mode} | {np.median(t1) / 1e3:.2f} us | {np.median(tp) / 1e3:.2f} us | {np.median(t2) / 1e3:.2f} us | "
                     f"{_ratio_summary(tp / t1)} | {_ratio_summary(t2 / t1)} | {_ratio_summary(tr / tp)} |")

    lines += ["", "Accuracy: what `graphmode report` computes against the same quantities from the ground truth "
              "of the same process (T1, and the mean of T1 and T2):", "",
              "| metric | truth T1 | graphmode | median over processes: graphmode / truth | per process: graphmode / T1 | per process: graphmode / mean(T1, T2) |",
              "|---|---|---|---|---|---|"]
    metrics = [("launch overhead saved per iteration", "saved_ns", 1e3, "us"),
               ("one-time cost", "one_time_ns", 1e3, "us"),
               ("break-even replays (exact: one-time / saved)", "break_even_exact", 1.0, ""),
               ("break-even replays (the report's integer)", "break_even", 1.0, "")]
    for name, key, scale, unit in metrics:
        d1 = np.array([_derived(r["T1"]["iterations"], r["T1"]["ops"])[key] for r in full])
        d2 = np.array([_derived(r["T2"]["iterations"], r["T2"]["ops"])[key] for r in full])
        gm = np.array([r["graphmode"][key] for r in full], dtype=np.float64)
        mid = (d1 + d2) / 2
        lines.append(f"| {name} | {np.median(d1) / scale:.2f} {unit} | {np.median(gm) / scale:.2f} {unit} | "
                     f"{_pct(float(np.median(gm) / np.median(d1)))} | {_ratio_summary(gm / d1)} | {_ratio_summary(gm / mid)} |")

    lines += ["", "One-time operations (medians over processes, us):", "",
              "| operation | first graph of the process | truth T1 | graphmode timing pass | T2 |", "|---|---|---|---|---|"]
    for op in ("capture", "instantiate", "upload", "first_launch"):
        sources = (lambda r: r["first_graph_ops"], lambda r: r["T1"]["ops"], lambda r: r["graphmode"]["ops"], lambda r: r["T2"]["ops"])
        vals = [np.median([float(src(r)[op]) for r in full]) / 1e3 for src in sources]
        lines.append(f"| {op} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")

    # (set fid1 measured the events inside T1, before graphmode)
    ev = np.array([(r.get("graph_gpu_events") or r["T1"]["graph_gpu_events"])["median"] for r in full])
    busy = np.array([r["graphmode"]["graph_gpu_busy_ns"] for r in full], dtype=np.float64)
    lines += ["", f"GPU span of a graph replay: CUDA events (200 replays behind a spin kernel, after T2) {np.median(ev) / 1e3:.2f} us, "
              f"graphmode's traced pass (CUPTI graph span, GPU busy) {np.median(busy) / 1e3:.2f} us; per process "
              f"graphmode / events {_ratio_summary(busy / ev)}."]
    secs = [r["graphmode_seconds"] for r in full]
    lines += ["", f"graphmode's record() took {np.median(secs):.1f} s per process (median; timing + traced pass + writing)."]
    verified = all(all(r[k]["verified"].values()) for r in full for k in ("T1", "T2"))
    lines.append(f"Ground-truth outputs verified in every block: {verified}.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("dir", type=Path)
    r.add_argument("--procs", type=int, default=50)
    r.add_argument("--start", type=int, default=0, help="number of the first process (to add to a directory)")
    r.add_argument("--iterations", type=int, default=1000)
    r.add_argument("--warmup", type=int, default=100)
    r.add_argument("--cpus", default="2", help="CPU cores to pin every process to, comma-separated ('' for none)")
    r.add_argument("--truth-only", action="store_true", help="only the ground truth (process spread studies)")
    r.add_argument("--no-aslr", action="store_true", help="run each process under `setarch -R`")
    r.add_argument("--budget", type=float, default=math.inf, help="seconds: start no process that could end later")
    w = sub.add_parser("worker")
    w.add_argument("out", type=Path)
    w.add_argument("--iterations", type=int, default=1000)
    w.add_argument("--warmup", type=int, default=100)
    w.add_argument("--truth-only", action="store_true")
    rs = sub.add_parser("residue", help="one process: the ground truth again after each step graphmode takes")
    rs.add_argument("out", type=Path)
    rs.add_argument("--iterations", type=int, default=1000)
    rs.add_argument("--warmup", type=int, default=100)
    a = sub.add_parser("analyze")
    a.add_argument("dirs", type=Path, nargs="+")
    args = ap.parse_args()
    if args.cmd == "record":
        record_procs(args.dir, args.procs, args.iterations, args.warmup,
                     {int(c) for c in args.cpus.split(",") if c.strip()}, args.truth_only, args.no_aslr, args.start, args.budget)
    elif args.cmd == "residue":
        residue(args.out, args.iterations, args.warmup)
    elif args.cmd == "worker":
        worker(args.out, args.iterations, args.warmup, args.truth_only)
    else:
        print(analyze(args.dirs))


if __name__ == "__main__":
    main()
