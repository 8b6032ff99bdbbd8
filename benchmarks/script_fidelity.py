"""How true are `graphmode run`'s numbers on programs nobody here wrote? (issue 9)

Each workload in benchmarks/third_party/ (torchvision, Hugging Face transformers, Triton, JAX, CuPy) times itself with its own
clocks and prints one GRAPHMODE_TRUTH line. This benchmark runs every workload in fresh processes:

- **untraced**: `python3 workload.py` (the ground truth);
- **a tracer configuration** (`--configs`): the same program as one traced run of graphmode
  (`python -m graphmode.tracer.script_child`), whose own timers then say how much that configuration
  slowed it, and whose trace graphmode's analysis reads: `graphmode report --json` per process.

    python3 benchmarks/script_fidelity.py record OUT --procs 5 [--configs untraced,measure] [--keep-traces [all]]
    python3 benchmarks/script_fidelity.py record OUT --procs 10 --configs untraced,timing_only   # the timing run's own cost
    python3 benchmarks/script_fidelity.py record OUT --procs 3 --workloads vit_eager --configs untraced,timing_only \
        --lines vit_eager=vit_batch_graphs.py:35,vit_batch_graphs.py:39 --no-report   # lines given: no `graphmode run` first
    python3 benchmarks/script_fidelity.py analyze OUT          # anywhere, no GPU: the tables
    python3 benchmarks/script_fidelity.py analyze OUT1 OUT2 .. # records of several GPU calls (machines), pooled per machine

Processes of all workloads and configurations are interleaved (process k runs every pair once, in a
shuffled order) so that drift of the machine over the run spreads over all of them. The per-process
records are one JSON line each in OUT/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKLOADS: dict[str, list[str]] = {
    "resnet": ["third_party/resnet_train.py"],
    "triton": ["third_party/triton_bench.py"],
    "jax": ["third_party/jax_loop.py"],
    "cupy": ["third_party/cupy_chain.py"],
    "hf": ["third_party/hf_compile_decode.py"],
    "hf_graph": ["third_party/hf_static_decode.py"],
    "mgc_mobilenet": ["third_party/mgc_mobilenet.py"],  # several graphs a step (make_graphed_callables)
    "vit_layers": ["third_party/vit_layer_graphs.py"],  # a forward and a backward graph per layer
    "vit_batches": ["third_party/vit_batch_graphs.py"],  # a graph per batch size (issue 29)
    # the same programs written eager-only (issue 30): what a run that must find the step itself costs them
    "hf_eager": ["third_party/hf_static_decode.py", "--eager-only"],
    "vit_eager": ["third_party/vit_batch_graphs.py", "--eager-only"],
    "resnet_eager": ["third_party/resnet_train.py", "--eager-only"],
    "cupy_eager": ["third_party/cupy_chain.py", "--eager-only"],
    "mobilenet_fn": ["third_party/mobilenet_train_fn.py"],
    "mobilenet_fn_graph": ["third_party/mobilenet_train_fn.py", "--graph"],  # its graphed twin (the prediction's truth)
}
PREFIX = "GRAPHMODE_TRUTH "
# `graphmode run` as a user runs it, and with one of its choices turned off by its environment variable
GRAPHMODE_RUNS: dict[str, dict[str, str]] = {
    "graphmode": {},
    # the process's first capture traced, as before session 28 (tracer.untraced_windows.CaptureController)
    "graphmode_tracedcap": {"GRAPHMODE_UNTRACED_CAPTURE": "0"},
    # no NVTX injection (the variable names no library, so NVTX's calls stay no-ops; graphmode leaves a set one alone)
    "graphmode_nonvtx": {"NVTX_INJECTION64_PATH": "/nonexistent/libnvtx-none.so"},
    # EXPERIMENT (session 33): a window lasts to its loop's end and CUPTI stays detached after it for up to 1 s, so that
    # a capture after the program's warm-up takes the detached state over (tracer.script._window_experiment)
    "graphmode_linger": {"GRAPHMODE_WINDOW_LINGER_MS": "1000", "GRAPHMODE_WINDOW_ITERATIONS": "100000"},
}


def config_spec(name: str) -> dict[str, Any] | None:
    """Tracer configurations by name (None: untraced; 'timing_only' is made per workload by run_one)."""
    if name in ("untraced", "timing_only") or name in GRAPHMODE_RUNS:
        return None
    from graphmode.tracer.run_configs import MEASURE, RunConfig, detail_config

    configs = {
        "measure": MEASURE,
        "measure_nodes": RunConfig("measure", node_events=True, node_sources=True),
        "measure_nocb": RunConfig("measure", callbacks=False),
        "sparse_nocb": RunConfig("measure", api_filter="sparse", callbacks=False),
        "gpu_only": RunConfig("measure", api_filter="none", callbacks=False),
        "api_sparse_only": RunConfig("measure", api_filter="sparse", callbacks=False, gpu_kinds=False),
        "api_needed_only": RunConfig("measure", api_filter="needed", callbacks=False, gpu_kinds=False),
        "all_api": RunConfig("measure", api_filter="all"),
        "detail": detail_config("graph"),
        # issue 29's candidates for one traced run: the measuring run's kinds plus graph-level callbacks
        "single_light": RunConfig("single", api_filter="sparse", callbacks=True, node_events=False),
        "single_noapi": RunConfig("single", api_filter="none", callbacks=True, node_events=False),
        "single_today": detail_config("graph", name="single"),
        # issue 29: the one traced run that also records what a script that built no graph is predicted from (the
        # launches, copies, allocations, synchronizations and events; a stamp of each of the user's lines), so that
        # such a script needs no detail run
        "single_structure": RunConfig("single", api_filter="needed", callbacks=True, node_events=False,
                                      stamp="all" if sys.version_info >= (3, 12) else ""),
        "detail_profile": detail_config("graph", profile=True),
        "detail_node": detail_config("node"),
    }
    if name not in configs:
        raise SystemExit(f"unknown configuration {name!r}; known: untraced, {', '.join(configs)}")
    return asdict(configs[name])


def _truths(stdout: str) -> list[dict[str, Any]]:
    """Every GRAPHMODE_TRUTH line: one per run of the program (`graphmode run` makes up to three)."""
    return [json.loads(line[len(PREFIX):]) for line in stdout.splitlines() if line.startswith(PREFIX)]


def _truth(stdout: str) -> dict[str, Any] | None:
    found = _truths(stdout)
    return found[0] if found else None


def _env(script: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{script.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def chosen_lines(workload: str, out: Path, timeout: int) -> list[str]:
    """The lines graphmode's timing run stamps in this workload: one `graphmode run` (kept as
    OUT/<workload>-lines.gmtrace), its timing run's `stamp_lines` (empty: no timing run was made)."""
    from graphmode.tracer.store import load

    script, args = HERE / WORKLOADS[workload][0], WORKLOADS[workload][1:]
    trace = out / f"{workload}-lines.gmtrace"
    subprocess.run([sys.executable, "-m", "graphmode", "run", "--no-report", "--no-html", "--out", str(trace), str(script), *args],
                   capture_output=True, text=True, env=_env(script), timeout=timeout, cwd=str(script.parent))
    with load(trace) as t:
        runs = [r for r in t.meta.get("runs", []) if (r.get("config") or {}).get("name") == "timing"]
    return list(runs[0]["config"]["stamp_lines"]) if runs else []


def timing_run_command(script: Path, trace: Path, lines: list[str], args: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The command of graphmode's timing run alone on `script`, stamping `lines`, appending to `trace` (made here
    as the first two runs would have left it)."""
    from graphmode.tracer.run_configs import timing_config
    from graphmode.tracer.store import TraceWriter

    TraceWriter(trace, {"workload": "script"}).close()
    spec = {"config": asdict(timing_config(lines)), "out": str(trace), "append": True, "pass_id": 2}
    return [sys.executable, "-m", "graphmode.tracer.script_child", json.dumps(spec), str(script), *args]


def run_one(workload: str, config: str, proc: int, out: Path, keep: bool, timeout: int,
            lines: list[str] | None = None, report: bool = True) -> dict[str, Any]:
    script, args = HERE / WORKLOADS[workload][0], WORKLOADS[workload][1:]
    spec = config_spec(config)
    trace = out / f"{workload}-{config}-{proc:02d}.gmtrace"
    env = _env(script)
    if config in GRAPHMODE_RUNS:  # what a user runs, then the JSON report below
        env.update(GRAPHMODE_RUNS[config])
        cmd = [sys.executable, "-m", "graphmode", "run", "--no-report", "--no-html", "--out", str(trace), str(script), *args]
    elif config == "timing_only":  # graphmode's timing run alone (no CUPTI; stamps of `lines`): what it costs the program
        cmd = timing_run_command(script, trace, lines or [], args)
    elif spec is None:
        cmd = [sys.executable, str(script), *args]
    else:
        cmd = [sys.executable, "-m", "graphmode.tracer.script_child",
               json.dumps({"config": spec, "out": str(trace), "append": False, "pass_id": 0}), str(script), *args]
    t0 = time.perf_counter()
    u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=str(script.parent))
    u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    record: dict[str, Any] = {"workload": workload, "config": config, "proc": proc, "exit_code": p.returncode,
                              "process_s": time.perf_counter() - t0, "truth": _truth(p.stdout),
                              "truths": _truths(p.stdout),
                              # the process's (and its waited children's) page faults and CPU time: a process that
                              # read its libraries from disk (major faults) ran cold (benchmarks/notes/s36)
                              "major_faults": u1.ru_majflt - u0.ru_majflt, "minor_faults": u1.ru_minflt - u0.ru_minflt,
                              "cpu_s": (u1.ru_utime + u1.ru_stime) - (u0.ru_utime + u0.ru_stime)}
    if p.returncode != 0 or record["truth"] is None:
        record["stderr_tail"] = p.stderr[-2000:]
    if config == "timing_only":
        record["stamp_lines"] = lines or []
        trace.unlink(missing_ok=True)
    if (spec is not None or config in GRAPHMODE_RUNS) and trace.exists():
        if report:
            r = subprocess.run([sys.executable, "-m", "graphmode", "report", "--json", str(trace)],
                               capture_output=True, text=True, timeout=timeout)
            try:
                doc = json.loads(r.stdout)
                # keep what the comparison needs: the per-graph results, the warnings and notes
                record["report"] = {k: doc.get(k) for k in ("graphs", "totals", "steps", "headline", "warnings", "cannot_compute", "status")}
            except ValueError:
                record["report_error"] = (r.stderr or r.stdout)[-2000:]
        record["trace_bytes"] = trace.stat().st_size
        if not keep:
            trace.unlink()
    return record


def record(out: Path, procs: int, workloads: list[str], configs: list[str], keep: str, timeout: int,
           given_lines: dict[str, list[str]] | None = None, report: bool = True, warm_up: bool = False) -> None:
    """`keep`: whose traces stay in OUT: 'none', 'first' (process 0's) or 'all'. Every record names its batch
    (this machine and this invocation): processes are compared with untraced ones of the same batch. `warm_up`: first
    run each workload once untraced, recorded as config 'warm_up' (which no table reads): a lent machine's first
    process of a program reads its libraries from disk (2,221 major page faults, its first capture 3x; session 36)."""
    import socket

    out.mkdir(parents=True, exist_ok=True)
    batch = f"{socket.gethostname()}-{time.strftime('%Y%m%dT%H%M%S')}"
    rng = random.Random(20261130)
    given = given_lines or {}
    lines = {w: given[w] if w in given else chosen_lines(w, out, timeout) for w in workloads} if "timing_only" in configs else {}
    with open(out / "results.jsonl", "a") as f:
        for w in workloads if warm_up else []:
            rec = run_one(w, "untraced", 0, out, False, timeout, None, False) | {"config": "warm_up", "batch": batch}
            f.write(json.dumps(rec) + "\n")
            print(f"warm-up {w:7s} exit {rec['exit_code']} {rec['process_s']:6.1f}s major faults {rec['major_faults']}",
                  flush=True)
        for proc in range(procs):
            pairs = [(w, c) for w in workloads for c in configs]
            rng.shuffle(pairs)
            for w, c in pairs:
                rec = run_one(w, c, proc, out, keep == "all" or (keep == "first" and proc == 0), timeout, lines.get(w), report)
                rec["batch"] = batch
                f.write(json.dumps(rec) + "\n")
                f.flush()
                t = rec.get("truth") or {}
                print(f"proc {proc} {w:7s} {c:15s} exit {rec['exit_code']} {rec['process_s']:6.1f}s "
                      + " ".join(f"{k}={v / 1e3:.1f}us" for k, v in t.items() if k.endswith("_ns")), flush=True)


def _load(out: Path) -> list[dict[str, Any]]:
    """OUT/results.jsonl, or a .jsonl file itself; records without a batch get the file's name as theirs."""
    path = out if out.suffix == ".jsonl" else out / "results.jsonl"
    recs = [json.loads(line) for line in open(path) if line.strip()]
    for r in recs:
        r.setdefault("batch", str(path))
    return recs


def per_machine_table(recs: list[dict[str, Any]], seed: int = 4, resamples: int = 2000) -> str:
    """Records of several batches (GPU calls, which may run on different machines of one kind: the untraced
    programs differed by 1.5x between them): each graphmode process's figure over the median of the untraced
    processes of its own batch, pooled over batches; median and a bootstrap 95% interval that resamples
    both sides within each batch."""
    rows = ["| workload | figure | batches | processes (graphmode + untraced) | ratio to its batch's untraced median [95% interval] |",
            "|---|---|---|---|---|"]
    rng = np.random.default_rng(seed)
    for w in sorted({r["workload"] for r in recs}):
        for q in ("eager", "replay", "one_time", "break_even"):
            groups = []
            for b in sorted({r["batch"] for r in recs if r["workload"] == w}):
                u = np.array([f[q] for r in recs if r["workload"] == w and r["batch"] == b and r["config"] == "untraced"
                              and r.get("truth") and q in (f := _truth_figures(r["truth"]))], dtype=float)
                g = np.array([f[q] for r in recs if r["workload"] == w and r["batch"] == b and r["config"] == "graphmode"
                              and q in (f := _graphmode_figures(r.get("report") or {}))], dtype=float)
                if u.size and g.size and np.median(u) > 0:
                    groups.append((g, u))
            if not groups:
                continue
            point = float(np.median(np.concatenate([g / np.median(u) for g, u in groups])))
            boot = [np.median(np.concatenate([rng.choice(g, g.size) / np.median(rng.choice(u, u.size)) for g, u in groups]))
                    for _ in range(resamples)]
            lo, hi = np.percentile(boot, [2.5, 97.5])
            n_g, n_u = sum(g.size for g, _ in groups), sum(u.size for _, u in groups)
            rows.append(f"| {w} | {q.replace('_', '-')} | {len(groups)} | {n_g} + {n_u} | {point:.3f} [{lo:.3f}, {hi:.3f}] |")
    return "\n".join(rows)


def _median_ci(values: np.ndarray, seed: int = 0, resamples: int = 2000) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    v = np.asarray(values, dtype=float)
    boot = np.median(rng.choice(v, size=(resamples, v.size), replace=True), axis=1)
    return float(np.median(v)), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def _ratio_interval(num: np.ndarray, den: np.ndarray, seed: int, resamples: int = 2000) -> tuple[float, float]:
    """Bootstrap 95% interval of median(num) / median(den), each side resampled on its own."""
    rng = np.random.default_rng(seed)
    rs = [np.median(rng.choice(num, num.size)) / np.median(rng.choice(den, den.size)) for _ in range(resamples)]
    lo, hi = np.percentile(rs, [2.5, 97.5])
    return float(lo), float(hi)


def slowdown_table(recs: list[dict[str, Any]]) -> str:
    """How much each configuration slowed each workload's own timers: ratio of medians over processes
    (traced vs untraced), with a bootstrap 95% interval of the ratio."""
    rows = ["| workload | quantity | untraced (median) | config | traced (median) | ratio [95% interval] |", "|---|---|---|---|---|---|"]
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in recs:
        if r.get("truth"):
            by.setdefault((r["workload"], r["config"]), []).append(r["truth"])
    for (w, c), truths in sorted(by.items()):
        if c in ("untraced", "warm_up") or (w, "untraced") not in by:
            continue
        base = by[(w, "untraced")]
        for q in sorted(k for k in truths[0] if k.endswith("_ns")):
            u = np.array([t[q] for t in base if q in t], dtype=float)
            t = np.array([x[q] for x in truths if q in x], dtype=float)
            if not u.size or not t.size or np.median(u) <= 0:
                continue
            lo, hi = _ratio_interval(t, u, seed=1)
            rows.append(f"| {w} | {q[:-3]} | {np.median(u) / 1e3:,.1f} us | {c} | {np.median(t) / 1e3:,.1f} us | "
                        f"{np.median(t) / np.median(u):.3f} [{lo:.3f}, {hi:.3f}] |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    r.add_argument("--procs", type=int, default=5)
    r.add_argument("--workloads", default=",".join(WORKLOADS))
    r.add_argument("--configs", default="untraced,measure")
    r.add_argument("--keep-traces", nargs="?", const="first", default="none", choices=("none", "first", "all"),
                   help="keep the traces of process 0 (or of every process: --keep-traces all)")
    r.add_argument("--timeout", type=int, default=300)
    r.add_argument("--lines", action="append", default=[], metavar="WORKLOAD=FILE:LINE[,FILE:LINE]",
                   help="the lines timing_only stamps in a workload (else found by one `graphmode run` of it)")
    r.add_argument("--no-report", action="store_true", help="no `graphmode report --json` per traced process")
    r.add_argument("--warm-up", action="store_true",
                   help="run each workload once untraced first, recorded as config 'warm_up': a fresh machine's first "
                        "process of a program runs cold (untraced, it does not read CUPTI's library; with timing_only "
                        "asked for, the runs that choose its lines come before it)")
    a = sub.add_parser("analyze")
    a.add_argument("out", type=Path, nargs="+", help="OUT folders or .jsonl files, one per batch (GPU call)")
    args = ap.parse_args()
    if args.cmd == "record":
        given = {w: ls.split(",") for w, _, ls in (x.partition("=") for x in args.lines)}
        record(args.out, args.procs, args.workloads.split(","), args.configs.split(","), args.keep_traces, args.timeout,
               given, not args.no_report, args.warm_up)
    else:
        recs = [r for out in args.out for r in _load(out)]
        if len({r["batch"] for r in recs}) > 1 and any(r["config"] == "graphmode" for r in recs):
            print(per_machine_table(recs))
            print()
        if any((r.get("truth") or {}).get("make_graphed_ns") for r in recs):
            print(step_table(recs))
            print()
        if any(r["config"] == "graphmode" for r in recs):
            print(accuracy_table(recs))
            if any(len(r.get("truths") or []) >= 3 for r in recs):
                print()
                print(timing_run_table(recs))
        else:
            print(slowdown_table(recs))



def figures(eager: float | None, graph: float | None, build: float | None, first: float | None) -> dict[str, float]:
    """The ground truth's figures from a workload's own timers, with docs/metrics.md's formulas: `build` is the capture
    block (capture + instantiate, as the program timed it; or the graphing statement), one-time cost = build + the first
    replay's (or graphed step's) excess over a steady one; break-even = the smallest n with n * saved >= one-time cost.
    Only the figures its timers give (benchmarks/one_run.py and eager_only.py read the truths this way too)."""
    import math

    out: dict[str, float] = {}
    if eager is not None:
        out["eager"] = float(eager)
    if graph is not None:
        out["replay"] = float(graph)
    if build is not None and first is not None and graph is not None:
        out["one_time"] = float(build) + float(first) - float(graph)
    if {"eager", "replay", "one_time"} <= set(out) and out["eager"] > out["replay"]:
        out["break_even"] = float(math.ceil(out["one_time"] / (out["eager"] - out["replay"])))
    return out


def _truth_figures(t: dict[str, Any]) -> dict[str, float]:
    """A workload's truth line's figures (figures)."""
    return figures(t.get("eager_ns"), t.get("graph_ns"), t.get("capture_block_ns"), t.get("first_replay_ns"))


def _graphmode_figures(report: dict[str, Any]) -> dict[str, float]:
    """graphmode's figures for the headline graph (the first of report['graphs'])."""
    graphs = report.get("graphs") or []
    if not graphs:
        return {}
    g = graphs[0]
    out: dict[str, float] = {}
    units = int(g.get("units_per_replay") or 1)
    if g.get("eager") and g["eager"].get("work"):
        out["eager"] = float(g["eager"]["work"]["trimmed_mean"]) * units
    if g.get("graph") and g["graph"].get("work"):
        out["replay"] = float(g["graph"]["work"]["trimmed_mean"])
    if g.get("cost"):
        out["one_time"] = float(g["cost"]["total_ns"])
    be = g.get("break_even") or {}
    if be.get("replays") is not None:
        out["break_even"] = float(be["replays"])
        if be.get("interval_low") is not None:
            out["break_even_low"] = float(be["interval_low"])
        if be.get("interval_high") is not None:
            out["break_even_high"] = float(be["interval_high"])
    out["eager_bound"] = g["eager"]["bound"] if g.get("eager") else ""  # type: ignore[assignment]
    out["replay_bound"] = g["graph"]["bound"] if g.get("graph") else ""  # type: ignore[assignment]
    return out


def accuracy_table(recs: list[dict[str, Any]]) -> str:
    """graphmode's reported figures (from `graphmode run`, per process) against the untraced programs'
    own timers (other processes): medians over processes, the ratio of the medians with a bootstrap
    95% interval, and the measuring run's own timers (how much it slowed the program)."""
    rows = ["| workload | figure | untraced (own timers) | graphmode reports | ratio [95% interval] | measuring run's own timers | bound |",
            "|---|---|---|---|---|---|---|"]
    for w in sorted({r["workload"] for r in recs}):
        truth = [_truth_figures(r["truth"]) for r in recs if r["workload"] == w and r["config"] == "untraced" and r.get("truth")]
        ours = [_graphmode_figures(r.get("report") or {}) for r in recs if r["workload"] == w and r["config"] == "graphmode"]
        measured = [_truth_figures(r["truth"]) for r in recs if r["workload"] == w and r["config"] == "graphmode" and r.get("truth")]
        for q in ("eager", "replay", "one_time", "break_even"):
            u = np.array([t[q] for t in truth if q in t], dtype=float)
            g = np.array([o[q] for o in ours if q in o], dtype=float)
            m = np.array([t[q] for t in measured if q in t], dtype=float)
            if not u.size and not g.size:
                continue
            unit = (lambda v: f"{v:.0f}") if q == "break_even" else (lambda v: f"{v / 1e3:,.1f} us")
            ratio = "—"
            if u.size and g.size and np.median(u) > 0:
                lo, hi = _ratio_interval(g, u, seed=2)
                ratio = f"{np.median(g) / np.median(u):.3f} [{lo:.3f}, {hi:.3f}]"
            bound = ""
            if q in ("eager", "replay"):
                key = "eager_bound" if q == "eager" else "replay_bound"
                bound = ", ".join(sorted({str(o.get(key)) for o in ours if o.get(key)}))
            rows.append(f"| {w} | {q.replace('_', '-')} | {unit(np.median(u)) if u.size else '—'} (n={u.size}) | "
                        f"{unit(np.median(g)) if g.size else '—'} (n={g.size}) | {ratio} | "
                        f"{unit(np.median(m)) if m.size else '—'} | {bound} |")
    return "\n".join(rows)


def timing_run_table(recs: list[dict[str, Any]]) -> str:
    """Where a figure came from the timing run (`graphmode run`'s third process, without CUPTI): graphmode's
    figure against the program's own timer in that same run (per process: does graphmode read the run it
    timed faithfully?), and that run's own timers against the untraced processes (does the timing run
    itself slow the program?)."""
    rows = ["| workload | figure | graphmode / timing run's own timer, per process: median [range] (n) | timing run's own "
            "timers (median) | untraced (median) | ratio [95% interval] |", "|---|---|---|---|---|---|"]
    for w in sorted({r["workload"] for r in recs}):
        for q, key, truth_key in (("eager", "eager", "eager_ns"), ("replay", "graph", "graph_ns")):
            same, timing = [], []
            for r in recs:
                if r["workload"] != w or r["config"] != "graphmode" or len(r.get("truths") or []) < 3:
                    continue
                graphs = (r.get("report") or {}).get("graphs") or []
                p = graphs[0].get(key) if graphs else None
                t = r["truths"][2].get(truth_key)
                if t is None:
                    continue
                timing.append(float(t))
                if p and p.get("run") == "timing" and p.get("work"):
                    same.append(p["work"]["median"] / float(t))
            u = np.array([r["truth"][truth_key] for r in recs if r["workload"] == w and r["config"] == "untraced"
                          and r.get("truth") and truth_key in r["truth"]], dtype=float)
            if not same or not u.size:
                continue
            tm = np.array(timing)
            lo, hi = _ratio_interval(tm, u, seed=3)
            rows.append(f"| {w} | {q} | {np.median(same):.3f} [{min(same):.3f}, {max(same):.3f}] (n={len(same)}) | "
                        f"{np.median(tm) / 1e3:,.1f} us (n={tm.size}) | {np.median(u) / 1e3:,.1f} us (n={u.size}) | "
                        f"{np.median(tm) / np.median(u):.3f} [{lo:.3f}, {hi:.3f}] |")
    return "\n".join(rows)


def step_table(recs: list[dict[str, Any]]) -> str:
    """Workloads with several graphs a step (their truth has make_graphed_ns): per graphmode process, its step's
    figures (report['steps']) over the median of the untraced processes of its batch, and over its own timing run's
    clock (its third GRAPHMODE_TRUTH line). One-time: make_graphed_callables whole plus the first step's excess;
    break-even: the smallest n with n * saved >= one-time."""
    import math

    def truth(t: dict[str, Any]) -> dict[str, float]:
        saved = t["eager_ns"] - t["graph_ns"]
        one = t["make_graphed_ns"] + t["first_step_ns"] - t["graph_ns"]
        return {"eager": t["eager_ns"], "graphed": t["graph_ns"], "saved": saved, "one_time": one,
                "break_even": float(math.ceil(one / saved)) if saved > 0 else math.inf}

    rows = ["| workload | process | figure | graphmode | untraced median (3 processes) | ratio | its timing run's clock | ratio |",
            "|---|---|---|---|---|---|---|---|"]
    for w in sorted({r["workload"] for r in recs if (r.get("truth") or {}).get("make_graphed_ns")}):
        for b in sorted({r["batch"] for r in recs if r["workload"] == w}):
            mine = [r for r in recs if r["workload"] == w and r["batch"] == b]
            u = [truth(r["truth"]) for r in mine if r["config"] == "untraced" and r.get("truth")]
            if not u:
                continue
            med = {k: float(np.median([x[k] for x in u])) for k in u[0]}
            for r in (r for r in mine if r["config"] == "graphmode"):
                steps = [s for s in (r.get("report") or {}).get("steps") or [] if len(s["graphs"]) > 1]
                if not steps or len(r.get("truths") or []) < 3:
                    continue
                s, own = steps[0], truth(r["truths"][2])
                be = s.get("break_even") or {}
                got = {"eager": s["eager_ns"], "graphed": s["graphed_ns"], "saved": s["saved_ns"], "one_time": s["one_time_ns"],
                       "break_even": be.get("replays")}
                for k, v in got.items():
                    if v is None:
                        continue
                    fmt = (lambda x: f"{x:.0f}") if k == "break_even" else (lambda x: f"{x / 1e6:.2f} ms")
                    rows.append(f"| {w} | {r['proc']} | {k.replace('_', '-')} | {fmt(v)} | {fmt(med[k])} | {v / med[k]:.2f} | "
                                f"{fmt(own[k])} | {v / own[k]:.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()

