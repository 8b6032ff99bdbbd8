"""Issue 30's check: what `graphmode run` predicts from an eager-only program, beside what the same program graphed
measured by its own clocks in fresh untraced processes.

Reads the recordings (default: tests/data/scripts/eager_only/*.gmtrace.xz, made by benchmarks/notes/s18/call3.sh)
and the truths the device calls printed (GRAPHMODE_TRUTH lines in benchmarks/notes/s18/call*-truth.txt), and prints a
markdown table: per predicted region, the predicted replay, one-time cost, break-even and eager period against the
graphed processes' (median and range, each process's break-even from its own eager step, replay and one-time cost:
capture block + first replay - steady replay, benchmarks/script_fidelity.py's rule) and the eager-only processes'
own eager clocks; and the memory each graph would hold against the pool the graphed program's graph held (its
`pool_reserved*_bytes`, printed since session 20). Truths may also be script_fidelity's results.jsonl (its untraced processes; traces named
'<workload>-graphmode-NN.gmtrace' by it). Usage: python benchmarks/eager_only.py [TRACE ...] [--truths FILE ...]
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from script_fidelity import figures  # benchmarks/: the truth's figures, one rule

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "GRAPHMODE_TRUTH "
# which truth line belongs to which program and kind: '<program> ... graphed ...' or '<program> eager-only ...'
LINE = re.compile(r"^(?P<program>\w+) (?P<kind>graphed|eager-only)\b.*?untraced.*?" + re.escape(PREFIX) + r"(?P<json>\{.*\})(?: \(call \d+\))?$")


def truths(files: list[Path]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """program -> {'graphed': [truth dicts], 'eager-only': [...]} from the device calls' truth files."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for f in files:
        for line in f.read_text().splitlines():
            m = LINE.match(line.strip())
            if m:
                out.setdefault(m["program"], {}).setdefault(m["kind"], []).append(json.loads(m["json"]))
    return out


# script_fidelity's workloads: the graphed program and its eager-only twin, one program of the check
PAIRS = {"hf_graph": ("decode", "graphed"), "hf_eager": ("decode", "eager-only"),
         "vit_batches": ("vit", "graphed"), "vit_eager": ("vit", "eager-only"),
         "resnet": ("resnet", "graphed"), "resnet_eager": ("resnet", "eager-only"),
         "mobilenet_fn_graph": ("mobilenet", "graphed"), "mobilenet_fn": ("mobilenet", "eager-only"),
         "cupy": ("cupy", "graphed"), "cupy_eager": ("cupy", "eager-only"),
         "mgc_mobilenet": ("mgc_mobilenet", "graphed"), "vit_layers": ("vit_layers", "graphed"), "jax": ("jax", "graphed")}


def results_truths(path: Path) -> dict[str, dict[str, list[dict]]]:
    """program -> {'graphed': [...], 'eager-only': [...]}: the untraced processes' truths of a results.jsonl."""
    out: dict[str, dict[str, list[dict]]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("config") != "untraced" or r.get("exit_code") != 0 or not r.get("truth") or r["workload"] not in PAIRS:
            continue
        program, kind = PAIRS[r["workload"]]
        out.setdefault(program, {}).setdefault(kind, []).append(r["truth"])
    return out


def batch_sizes(graphed: list[dict[str, Any]]) -> list[int]:
    """The batch sizes a graphed program's truths time apart ('graph_b8_ns': a graph per batch size), sorted; [] for
    one graph."""
    return sorted({int(m[1]) for d in graphed for k in d if (m := re.match(r"graph_b(\d+)_ns", k))})


def graphed_figures(t: dict[str, Any], suffix: str = "") -> dict[str, float] | None:
    """replay, one-time cost, eager step and break-even of one graphed process (suffix '_b8' for a batch size), by
    script_fidelity.figures; None where its timers lack one of them."""
    f = figures(t.get(f"eager{suffix}_ns"), t.get(f"graph{suffix}_ns"), t.get(f"capture_block{suffix}_ns"),
                t.get(f"first_replay{suffix}_ns"))
    if {"eager", "replay", "one_time"} - set(f):
        return None
    return {"replay": f["replay"], "one_time": f["one_time"], "eager": f["eager"], "break_even": f.get("break_even", math.inf)}


def _spread(values: list[float], scale: float = 1e6, unit: str = "ms") -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    if scale == 1:
        return f"{med:g} ({min(values):g}-{max(values):g})" if len(values) > 1 else f"{med:g}"
    return f"{med / scale:.2f} ({min(values) / scale:.2f}-{max(values) / scale:.2f}) {unit}" if len(values) > 1 else f"{med / scale:.2f} {unit}"


def _err(pred: float | None, truth: list[float]) -> str:
    if pred is None or not truth:
        return "-"
    return f"{100 * (pred / statistics.median(truth) - 1):+.0f}%"


def predictions(path: Path) -> list[Any]:
    """The trace's predicted regions (to_graph), in the order the report gives them."""
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    with tempfile.TemporaryDirectory() as tmp:
        p = path
        if path.suffix == ".xz":
            p = Path(tmp) / path.stem
            p.write_bytes(lzma.decompress(path.read_bytes()))
        with load(p) as trace:
            a = analyze(trace)
    return [r for r in a.prediction.regions if r.direction == "to_graph"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--truths", nargs="*", type=Path)
    args = ap.parse_args(argv)
    traces = args.traces or sorted((ROOT / "tests/data/scripts/eager_only").glob("*.gmtrace.xz"))
    files = args.truths or sorted((ROOT / "benchmarks/notes/s18").glob("call*-truth.txt"))
    found = truths([f for f in files if f.suffix != ".jsonl"])
    for f in files:
        if f.suffix == ".jsonl":  # script_fidelity's results: its untraced processes
            for program, kinds in results_truths(f).items():
                for kind, ts in kinds.items():
                    found.setdefault(program, {}).setdefault(kind, []).extend(ts)
    print("| program, region | replay: predicted / graphed | one-time: predicted / graphed | break-even: predicted "
          "[95%] / graphed | eager: predicted / eager-only untraced | memory: predicted / graphed pool |")
    print("|---|---|---|---|---|---|")
    hits = {"replay": [0, 0], "one_time": [0, 0], "break_even": [0, 0]}
    for path in traces:
        program = re.sub(r"-r\d+$", "", path.name.split(".")[0])  # '<program>-r2.gmtrace': round 2 of a device call
        if (m := re.match(r"(\w+)-graphmode(?:_\w+)?-\d+$", program)) and m[1] in PAIRS:  # script_fidelity's name
            program = PAIRS[m[1]][0]
        t = found.get(program, {})
        regions = predictions(path)
        sizes = batch_sizes(t.get("graphed", []))
        for i, r in enumerate(regions):
            suffix = f"_b{sizes[i]}" if sizes and len(sizes) == len(regions) else ""
            figs = [f for d in t.get("graphed", []) if (f := graphed_figures(d, suffix)) is not None]
            eager_only = [float(d[f"eager{suffix}_ns"]) for d in t.get("eager-only", []) if f"eager{suffix}_ns" in d]
            rp = r.replay_period.ns if r.replay_period else None
            ot = r.one_time.ns if r.one_time else None
            ep = r.eager_period.ns if r.eager_period else None
            label = f"{program}{', ' + suffix[1:] if suffix else ''} ({r.graph.kernels if r.graph else '?'} kernels)"
            # the graph's pool as the graphed program printed it (truths of session 20 on: _truth.pool_memory)
            pools = [float(d[k]) for d in t.get("graphed", []) if (k := f"pool_reserved{suffix}_bytes") in d]
            mem = r.memory.bytes if r.memory else None
            if figs:
                for key, pred, tol in (("replay", rp, 0.25), ("one_time", ot, 0.30)):
                    if pred is not None:
                        hits[key][0] += abs(pred / statistics.median(f[key] for f in figs) - 1) <= tol
                        hits[key][1] += 1
                be = math.inf if r.break_even is None else float(r.break_even)
                hits["break_even"][0] += break_even_hit(be, statistics.median(f["break_even"] for f in figs))
                hits["break_even"][1] += 1
            print(f"| {label} | {rp / 1e6 if rp else float('nan'):.2f} / {_spread([f['replay'] for f in figs])} "
                  f"({_err(rp, [f['replay'] for f in figs])}) | {ot / 1e6 if ot else float('nan'):.2f} / "
                  f"{_spread([f['one_time'] for f in figs])} ({_err(ot, [f['one_time'] for f in figs])}) | "
                  f"{r.break_even} [{r.break_even_low}, {r.break_even_high}] / {_spread([f['break_even'] for f in figs], 1)} | "
                  f"{ep / 1e6 if ep else float('nan'):.2f} / {_spread(eager_only)} ({_err(ep, eager_only)}) | "
                  f"{f'{mem / 2**20:.1f}' if mem is not None else '-'} / {_spread(pools, 2**20, 'MiB')} ({_err(mem, pools)}) |")
    print()
    print("within target of the graphed processes' median: " + ", ".join(
        f"{k.replace('_', '-')} {h}/{n}" for k, (h, n) in hits.items()) + " (replay 25%, one-time 30%, break-even 20% or 1 "
          "replay; benchmarks/noise_floor.py: how often the programs' own processes meet them)")
    return 0


def break_even_hit(pred: float, truth: float) -> bool:
    """Issue 30's break-even target: within 20% or 1 replay (never: a hit only against never)."""
    if math.isinf(pred) or math.isinf(truth):
        return math.isinf(pred) and math.isinf(truth)
    return abs(pred - truth) <= max(1.0, 0.2 * truth)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
