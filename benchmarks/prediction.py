"""Predicted vs measured: does graphmode's prediction from eager work match the graph it then measures? (issue 11)

    python benchmarks/prediction.py run OUT [--model FILE] [--quick] [--procs N] [--probe]   # on the GPU
    python benchmarks/prediction.py table OUT                                     # anywhere: the markdown table
    python benchmarks/prediction.py analyze OUT --model FILE [--scripts T...]     # anywhere: again with another model

`run` calibrates the GPU (`graphmode calibrate`, unless --model names a model file), then records, each in a
fresh process (so that each one's graph is its process's first, as in any `graphmode bench`), `--procs` processes
per workload (the first graph of a process costs differently from one process to the next; the table compares
medians over them):
  - `graphmode bench chain` at several kernels per step and `graphmode bench dag` at several widths/depths;
  - third-party work through `graphmode.compare` (PyTorch: an MLP step and a transformer encoder layer,
    random weights, no downloads), the same two-pass runner;
then analyses each trace with the model: the prediction from the eager iterations (analyzers.predict)
beside the one-time cost, replay period and break-even that the same trace measured for the graph. With `--probe`,
each process gets a probe twin (`graphmode run benchmarks/bench_eager.py`, the same workload's eager part in a
process of its own, ending with the first-graph probe; a PyTorch step's with the torch probe) whose measurement its
prediction uses.
Targets (issue 11): break-even within 20% (or 1 replay), one-time cost within 25%.

The `dag` graph is built with the explicit node API, not captured: the prediction prices it so (the trace says
how its graph was made; the model's node-API build and a node-API program's first graph, both timed by
`graphmode calibrate`). The table also gives the one-time cost without the build (instantiate + upload +
first-launch excess).
Results: OUT/results.json (every number), OUT/prediction.md (the table), OUT/*.gmtrace.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

CHAIN_KERNELS = (5, 20, 80, 320)
DAG_SHAPES = ((2, 2), (4, 3), (8, 4))
TORCH_STEPS = ("mlp", "encoder")
ITERATIONS = 200


def _torch_step(name: str) -> Any:
    import torch

    torch.manual_seed(0)
    if name == "mlp":
        w = torch.randn(512, 512, device="cuda") / 512**0.5
        x = torch.randn(32, 512, device="cuda")

        def mlp() -> Any:
            h = x
            for _ in range(8):
                h = torch.relu(h @ w)
            return h

        return mlp
    if name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True).cuda().eval()
        x = torch.randn(8, 64, 256, device="cuda")

        def encoder() -> Any:
            with torch.no_grad():
                return layer(x)

        return encoder
    raise SystemExit(f"unknown torch step {name!r}")


def record_torch(name: str, out: Path, iterations: int) -> None:
    from graphmode.tracer.compare import record_comparison

    record_comparison(_torch_step(name), out, iters=iterations, warmup=10, detail="graph", framework="torch")


def _run(cmd: list[str], log: Path) -> bool:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
        f.write(f"(exit {rc}, {time.perf_counter() - t0:.1f} s)\n")
    print(f"  {' '.join(cmd[2:])}: exit {rc}, {time.perf_counter() - t0:.1f} s", flush=True)
    return rc == 0


def _rel(pred: float | None, meas: float | None) -> float | None:
    return pred / meas - 1.0 if pred is not None and meas else None


def probe_twin(path: Path) -> Path:
    """Where `run --probe` records a bench trace's probe twin: `graphmode run` of benchmarks/bench_eager.py, the same
    workload's eager part in a process of its own, which ends with the first-graph probe."""
    return path.with_name(path.name.removesuffix(".gmtrace") + ".eager.gmtrace")


def compare_trace(path: Path, model_path: Path, label: str, build: str = "auto", probe: Path | None = None) -> dict[str, Any]:
    """The prediction from the trace's eager iterations beside what the trace measured for its graph: the
    runner's graph (`graphmode bench`, graphmode.compare) or, in a script's trace, the graph the eager region
    does the work of (the per-graph answer). `build`: how the predicted graph is made (analyzers.predict).
    `probe`: a trace whose first-graph probe (meta.first_graph_probe) the prediction uses, as if this trace's process
    had measured it (the bench process cannot: its own graph is its first)."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.costmodel import find_model
    from graphmode.tracer.store import load

    measured_probe = None
    if probe is not None:
        with load(probe) as pt:
            measured_probe = pt.meta.get("first_graph_probe")
    with load(path) as t:
        if isinstance(measured_probe, dict):
            t.meta["first_graph_probe"] = measured_probe
        a = analyze(t, find_model(t.meta, model_path), predict_build=build)
    p = a.prediction
    regions = [r for r in (p.regions if p else ()) if r.mode == "eager" and r.direction == "to_graph"]
    r = next((r for r in regions if r.measured_break_even is not None), regions[0] if regions else None)
    row: dict[str, Any] = {"label": label, "trace": path.name, "model_match": p.model_match if p else None}
    if probe is not None:
        row.update(probe_trace=probe.name, probe_extra_ns=(measured_probe or {}).get("extra_ns"),
                   probe_torch_first_ns=((measured_probe or {}).get("torch") or {}).get("first_ns"),
                   probe_error=(measured_probe or {"error": "no first_graph_probe in its meta"}).get("error"))
    if r is None or r.one_time is None or r.replay_period is None or r.measured_one_time_ns is None or r.measured_replay_ns is None:
        row["error"] = "no eager region, measured graph or prediction"
        return row
    be = a.primary_break_even()
    per = next((g for g in a.graphs if g.graph_id == r.graph_id), None)
    cost = per.cost if per is not None else next((c for c in a.graph_costs if not r.graph_id or c.graph_id == r.graph_id), None)
    eager = be.eager_ns if be is not None and per is None else (per.eager.work.median if per and per.eager and per.eager.work else None)
    meas_rest = ((cost.instantiate_ns or 0.0) + (cost.upload_ns or 0.0) + (cost.first_launch_excess_ns or 0.0)) if cost else None
    pred_rest = sum(e.ns for e in (r.instantiate, r.upload, r.first_launch_excess, r.first_graph_extra) if e is not None)
    pred_exact = r.one_time.ns / r.saved_per_iteration.ns if r.saved_per_iteration and r.saved_per_iteration.ns > 0 else math.inf
    meas_saved = (eager - r.measured_replay_ns) if eager is not None else None
    meas_exact = r.measured_one_time_ns / meas_saved if meas_saved and meas_saved > 0 else math.inf
    row.update({
        "nodes": r.graph.nodes if r.graph else None, "edges": r.graph.edges if r.graph else None,
        "eager_ns": eager, "eager_pred_ns": r.eager_period.ns if r.eager_period else None,
        "one_time_pred_ns": r.one_time.ns, "one_time_low_ns": r.one_time.low_ns, "one_time_high_ns": r.one_time.high_ns,
        "one_time_meas_ns": r.measured_one_time_ns, "one_time_err": _rel(r.one_time.ns, r.measured_one_time_ns),
        "build_pred_ns": (r.capture.ns + (r.framework.ns if r.framework else 0.0)) if r.capture else None,
        "build_meas_ns": cost.build_ns if cost else None,
        "rest_pred_ns": pred_rest, "rest_meas_ns": meas_rest, "rest_err": _rel(pred_rest, meas_rest),
        "replay_pred_ns": r.replay_period.ns, "replay_low_ns": r.replay_period.low_ns, "replay_high_ns": r.replay_period.high_ns,
        "replay_meas_ns": r.measured_replay_ns, "replay_err": _rel(r.replay_period.ns, r.measured_replay_ns),
        "break_even_pred": r.break_even, "break_even_low": r.break_even_low,
        "break_even_high": None if r.break_even_high_never else r.break_even_high, "break_even_meas": r.measured_break_even,
        "break_even_exact_pred": pred_exact, "break_even_exact_meas": meas_exact,
        "break_even_exact_err": pred_exact / meas_exact - 1.0 if math.isfinite(pred_exact) and math.isfinite(meas_exact) else None,
        "first_graph_extra_ns": r.first_graph_extra.ns if r.first_graph_extra else None, "first_graph_from": r.first_graph_from,
        "framework_pred_ns": r.framework.ns if r.framework else None,
    })
    row["break_even_ok"] = _be_ok(r.break_even, r.measured_break_even)
    row["one_time_ok"] = _one_time_ok(row["one_time_err"])
    return row


def _be_ok(pred: float | None, meas: float | None) -> bool | None:
    """Issue 11's break-even target: within 20% or 1 replay of the measured one."""
    if pred is None or meas is None:
        return None
    return abs(pred - meas) <= max(0.2 * meas, 1.0)


def _one_time_ok(err: float | None) -> bool:
    """Issue 11's one-time target: within 25% of the measured cost."""
    return err is not None and abs(err) <= 0.25


def _median(values: list[Any]) -> float | None:
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    return float(statistics.median(v)) if v else None


def aggregate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload, its processes pooled: medians of each predicted and measured figure (break-even included),
    the errors and targets on those medians, and how many processes met each target on their own."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["label"], []).append(r)
    out = []
    for label, rs in by.items():  # per workload
        ok = [r for r in rs if "error" not in r]
        if not ok:
            out.append({"label": label, "procs": len(rs), "error": rs[0]["error"]})
            continue
        m = {k: _median([r.get(k) for r in ok]) for k in (
            "one_time_pred_ns", "one_time_low_ns", "one_time_high_ns", "one_time_meas_ns", "rest_pred_ns", "rest_meas_ns",
            "replay_pred_ns", "replay_meas_ns", "break_even_pred", "break_even_low", "break_even_high", "break_even_meas",
            "eager_ns", "break_even_exact_pred", "break_even_exact_meas")}
        m.update(label=label, procs=len(ok), failed=len(rs) - len(ok), nodes=ok[0].get("nodes"), edges=ok[0].get("edges"),
                 one_time_err=_rel(m["one_time_pred_ns"], m["one_time_meas_ns"]), rest_err=_rel(m["rest_pred_ns"], m["rest_meas_ns"]),
                 replay_err=_rel(m["replay_pred_ns"], m["replay_meas_ns"]),
                 one_time_meas_range=(min(r["one_time_meas_ns"] for r in ok), max(r["one_time_meas_ns"] for r in ok)),
                 break_even_meas_range=(min((r["break_even_meas"] for r in ok if r["break_even_meas"] is not None), default=None),
                                        max((r["break_even_meas"] for r in ok if r["break_even_meas"] is not None), default=None)),
                 break_even_ok_procs=sum(bool(r.get("break_even_ok")) for r in ok),
                 one_time_ok_procs=sum(bool(r.get("one_time_ok")) for r in ok))
        m["break_even_ok"] = _be_ok(m["break_even_pred"], m["break_even_meas"])
        m["one_time_ok"] = _one_time_ok(m["one_time_err"])
        out.append(m)
    return out


def _probe_job(bench: Path, workload: list[str], n: str, warmup: str = "20") -> tuple[str, Path, list[str]]:
    """The bench trace's probe twin (probe_twin): the workload's eager part under `graphmode run` (its runs as for any
    script, no report), whose untraced run (the timing run or the probe run) ends with the first-graph probe (a
    PyTorch step's: the torch probe of torch.cuda.graph's first capture)."""
    p = probe_twin(bench)
    return ("probe twin", p, [sys.executable, "-m", "graphmode", "run", "--no-report", "--no-html", "--out", str(p),
                              str(ROOT / "benchmarks" / "bench_eager.py"), *workload, "-n", n, "--warmup", warmup])


def _jobs(out: Path, quick: bool, procs: int, probe: bool = False) -> list[tuple[str, Path, list[str]]]:
    py = sys.executable
    kernels = CHAIN_KERNELS[:2] if quick else CHAIN_KERNELS
    dags = DAG_SHAPES[:1] if quick else DAG_SHAPES
    torch_steps = TORCH_STEPS[:1] if quick else TORCH_STEPS
    n = "60" if quick else str(ITERATIONS)
    jobs: list[tuple[str, Path, list[str]]] = []
    for i in range(1, procs + 1):  # processes round-robin over the workloads, so that a drift of the machine spreads over all
        for k in kernels:
            p = out / f"chain-{k}.p{i}.gmtrace"
            jobs.append((f"chain, {k} kernels", p, [py, "-m", "graphmode", "bench", "chain", "--kernels", str(k), "-n", n,
                                                    "--warmup", "20", "--out", str(p), "--no-report"]))
            if probe:
                jobs.append(_probe_job(p, ["chain", "--kernels", str(k)], n))
        for w, d in dags:
            p = out / f"dag-{w}x{d}.p{i}.gmtrace"
            jobs.append((f"dag, {w} x {d}", p, [py, "-m", "graphmode", "bench", "dag", "--width", str(w), "--depth", str(d), "-n", n,
                                                "--warmup", "20", "--out", str(p), "--no-report"]))
            if probe:
                jobs.append(_probe_job(p, ["dag", "--width", str(w), "--depth", str(d)], n))
        for s in torch_steps:
            p = out / f"torch-{s}.p{i}.gmtrace"
            jobs.append((f"PyTorch {s} (compare)", p, [py, str(Path(__file__).resolve()), "torch", s, str(p), "--iterations", n]))
            if probe:
                jobs.append(_probe_job(p, ["torch", "--step", s], n, warmup="10"))
    return jobs


def run(out: Path, model: Path | None, quick: bool, procs: int, probe: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "run.log"
    py = sys.executable
    began = time.perf_counter()
    if model is None:
        from graphmode.analyzers.costmodel import model_file_name

        name = model_file_name(_gpu_name())
        model = ROOT / "graphmode" / "data" / name
        print(f"calibrating into {model} ...", flush=True)
        if not _run([py, "-m", "graphmode", "calibrate", "--out", str(model)] + (["--quick"] if quick else []), log):
            raise SystemExit(f"calibration failed; see {log}")
        (out / name).write_bytes(model.read_bytes())
    rows = []
    jobs = _jobs(out, quick, procs, probe)
    recorded = {path: _run(cmd, log) for _label, path, cmd in jobs}
    for label, path, _cmd in jobs:
        if label == "probe twin":
            continue
        if recorded[path]:
            twin = probe_twin(path)
            rows.append(compare_trace(path, model, label, probe=twin if recorded.get(twin) else None))
        else:
            rows.append({"label": label, "trace": path.name, "error": f"recording failed; see {log.name}"})
    result = {"model": str(model), "seconds": round(time.perf_counter() - began, 1), "quick": quick, "procs": procs, "rows": rows,
              "probe": probe}
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    text = table(result)
    (out / "prediction.md").write_text(text + "\n")
    print(text)


def reanalyze(out: Path, model: Path, scripts: list[Path], build: str = "auto", probe: bool = True) -> dict[str, Any]:
    """The rows of an earlier run again, from its traces, with another cost model (no GPU), plus committed script
    recordings (`scripts`: their eager regions beside the graphs they measured). With `probe`, a trace's probe twin
    (probe_twin), where there is one, gives its first-graph extra. Written to OUT/results-<model>.json and
    OUT/prediction-<model>.md (-noprobe without `probe` where there were twins)."""
    old = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {"rows": []}
    paths = [(out / r["trace"], r["label"]) for r in old["rows"] if (out / r["trace"]).is_file()]
    twins = any(probe_twin(p).is_file() for p, _ in paths)
    rows = [compare_trace(p, model, label, build, probe=probe_twin(p) if probe and probe_twin(p).is_file() else None)
            for p, label in paths]
    rows += [compare_trace(p, model, f"script: {p.name.split('.')[0]}", build) for p in scripts]
    result = {"model": str(model), "seconds": old.get("seconds"), "quick": old.get("quick", False), "procs": old.get("procs", 1),
              "rows": rows, "reanalysed_from": str(out / "results.json"), "build": build}
    stem = model.stem.replace("costmodel-", "") + ("" if build == "auto" else f"-{build}") + ("-noprobe" if twins and not probe else "")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"results-{stem}.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    text = table(result)
    (out / f"prediction-{stem}.md").write_text(text + "\n")
    print(text)
    return result


def _gpu_name() -> str:
    from graphmode.tracer.cuda_util import init_device

    return init_device().name


def _us(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e3:.1f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.0f}%"


def coverage(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per quantity ('one_time', 'break_even', 'replay'): (processes whose 95% interval held the measured value,
    processes with both an interval and a measurement). A break-even interval without an upper end ("never") holds
    every value above its lower end."""
    out = {}
    for q in ("one_time", "break_even", "replay"):
        unit = "" if q == "break_even" else "_ns"
        held = n = 0
        for r in rows:
            meas, low, high = r.get(f"{q}_meas{unit}"), r.get(f"{q}_low{unit}"), r.get(f"{q}_high{unit}")
            if "error" in r or meas is None or low is None or (high is None and q != "break_even"):
                continue
            n += 1
            held += int(low <= meas and (high is None or meas <= high))
        out[q] = (held, n)
    return out


def table(result: dict[str, Any]) -> str:
    """Per workload (its processes pooled by aggregate): medians predicted and measured, the errors of the medians,
    and the targets met on the medians (and by how many processes on their own)."""
    lines = ["| workload | procs | nodes / edges | one-time predicted [95%] | measured (median [min, max]) | error | "
             "without build: predicted / measured | replay predicted | measured | error | break-even predicted [95%] | "
             "measured (median [min, max]) | within target: break-even / one-time (medians; processes) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in aggregate(result["rows"]):
        if "error" in r:
            lines.append(f"| {r['label']} | {r['procs']} | {r['error']} |" + " |" * 10)
            continue
        hi = _n(r["break_even_high"]) if r["break_even_high"] is not None else "never"
        lo_m, hi_m = r["one_time_meas_range"]
        be_lo, be_hi = r["break_even_meas_range"]
        ok = (("yes" if r["break_even_ok"] else "no") + " / " + ("yes" if r["one_time_ok"] else "no")
              + f" ({r['break_even_ok_procs']}/{r['procs']}; {r['one_time_ok_procs']}/{r['procs']})")
        lines.append(
            f"| {r['label']} | {r['procs']} | {r['nodes']} / {r['edges']} | {_us(r['one_time_pred_ns'])} [{_us(r['one_time_low_ns'])}, "
            f"{_us(r['one_time_high_ns'])}] us | {_us(r['one_time_meas_ns'])} [{_us(lo_m)}, {_us(hi_m)}] us | {_pct(r['one_time_err'])} | "
            f"{_us(r['rest_pred_ns'])} / {_us(r['rest_meas_ns'])} us ({_pct(r['rest_err'])}) | {_us(r['replay_pred_ns'])} us | "
            f"{_us(r['replay_meas_ns'])} us | {_pct(r['replay_err'])} | {_n(r['break_even_pred'])} [{_n(r['break_even_low'])}, {hi}] | "
            f"{_n(r['break_even_meas'])} [{_n(be_lo)}, {_n(be_hi)}] | {ok} |")
    lines.append("")
    lines.append("Within target: break-even within 20% or 1 replay / one-time cost within 25%, on the medians over processes "
                 f"(in brackets: processes within target on their own). Model: {Path(result['model']).name}"
                 + (f"; {result['seconds']} s in all." if result.get("seconds") is not None else "."))
    cov = coverage(result["rows"])
    lines.append("Intervals, per process: the 95% interval held the measured value for the one-time cost in {} of {}, the "
                 "break-even in {} of {}, the replay in {} of {}.".format(*cov["one_time"], *cov["break_even"], *cov["replay"]))
    probed = [r for r in result["rows"] if r.get("first_graph_from") == "this_process"]
    twins = [r for r in result["rows"] if r.get("probe_trace")]
    if twins:
        v = sorted(r["first_graph_extra_ns"] for r in probed)
        lines.append(f"First-graph extra: measured by the process's probe twin in {len(probed)} of {len(twins)} processes that had one"
                     + (f" (median {_us(statistics.median(v))} us, {_us(v[0])}-{_us(v[-1])} us)" if v else "")
                     + "; the model's elsewhere.")
    torch_twins = [r for r in twins if r.get("probe_torch_first_ns") is not None]
    if torch_twins:
        v = sorted(float(r["probe_torch_first_ns"]) for r in torch_twins)
        lines.append(f"torch.cuda.graph's own work around the first capture: measured by the PyTorch processes' probe twins in "
                     f"{len(torch_twins)} of {sum('PyTorch' in r['label'] for r in twins)} (median {_us(statistics.median(v))} us, "
                     f"{_us(v[0])}-{_us(v[-1])} us); the model's elsewhere.")
    return "\n".join(lines)


def _n(x: float | None) -> str:
    return "—" if x is None else f"{x:g}"


def pack(work: Path, dest: Path, limit_mb: float) -> None:
    """The traces of a run as one tar.gz of at most `limit_mb` (smallest first; what does not fit is named)."""
    import io
    import tarfile

    traces = sorted(work.glob("*.gmtrace"), key=lambda p: p.stat().st_size)
    dest.parent.mkdir(parents=True, exist_ok=True)
    kept: list[Path] = []
    for p in traces:  # a handful of traces: recompress with each added, keep it if the archive still fits
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for q in [*kept, p]:
                tar.add(q, arcname=q.name)
        if buf.tell() <= limit_mb * 2**20:
            kept.append(p)
            dest.write_bytes(buf.getvalue())
    left = [p.name for p in traces if p not in kept]
    print(f"{len(kept)} traces in {dest}" + (f"; left out (size): {', '.join(left)}" if left else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--model", type=Path, help="use this cost model instead of calibrating")
    r.add_argument("--quick", action="store_true", help="fewer sizes and iterations (a check that it runs)")
    r.add_argument("--procs", type=int, default=3, help="fresh processes per workload (the measured one-time cost of a "
                                                          "process's first graph varies between processes)")
    r.add_argument("--probe", action="store_true", help="give each bench process of chain and dag a probe twin (`graphmode run` of "
                                                         "benchmarks/bench_eager.py), whose first-graph probe its prediction uses")
    a = sub.add_parser("analyze", help="an earlier run's traces again with another cost model (no GPU), plus script recordings")
    a.add_argument("out", type=Path)
    a.add_argument("--model", type=Path, required=True)
    a.add_argument("--scripts", type=Path, nargs="*", default=[], help="committed script recordings (*.gmtrace) to add")
    a.add_argument("--build", choices=("auto", "capture", "node_api"), default="auto",
                   help="how the predicted graphs are made (default: as each trace built its graph)")
    a.add_argument("--no-probe", action="store_true", help="leave the probe twins out: the model's first-graph extra")
    t = sub.add_parser("table")
    t.add_argument("out", type=Path)
    k = sub.add_parser("pack", help="the traces of a run as one tar.gz under a size limit")
    k.add_argument("out", type=Path)
    k.add_argument("dest", type=Path)
    k.add_argument("--limit-mb", type=float, default=15.0)
    w = sub.add_parser("torch", help="(internal) record one PyTorch step with graphmode.compare")
    w.add_argument("name")
    w.add_argument("trace", type=Path)
    w.add_argument("--iterations", type=int, default=ITERATIONS)
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.out, args.model, args.quick, args.procs, args.probe)
    elif args.cmd == "analyze":
        reanalyze(args.out, args.model, args.scripts, args.build, probe=not args.no_probe)
    elif args.cmd == "table":
        print(table(json.loads((args.out / "results.json").read_text())))
    elif args.cmd == "pack":
        pack(args.out, args.dest, args.limit_mb)
    else:
        record_torch(args.name, args.trace, args.iterations)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
