"""How true is the counterfactual (analyzers.counterfactual) for graphs with no eager twin? (issue 28)

Two checks, both on programs nobody here wrote, no GPU needed (the recordings and the programs' own clocks were made on
the H200 by benchmarks/counterfactual_gpu.sh):

1. Graphs with no eager twin, against the same program run without graphs in fresh untraced processes: torchvision
   ResNet-50 under torch.compile's reduce-overhead vs mode="default"; a JAX jitted loop with XLA's command buffers vs
   with them off. The predicted eager call and saving beside the medians of the programs' own clocks.
2. Graphs that do have an eager twin (transformers' Llama decode step compiled both ways in one process,
   benchmarks/third_party/hf_compile_decode.py): the counterfactual computed anyway, beside the eager period graphmode
   measured untraced (its timing run) and the program's own clock in that run.

    python3 benchmarks/counterfactual.py [--model FILE]    # prints both tables (markdown)
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphmode.analyzers import analyze  # noqa: E402
from graphmode.analyzers.costmodel import find_model  # noqa: E402
from graphmode.analyzers.counterfactual import counterfactual  # noqa: E402
from graphmode.analyzers.predict import uses_torch  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

PREFIX = "GRAPHMODE_TRUTH "
NO_TWIN = ROOT / "tests" / "data" / "scripts" / "counterfactual"
TWIN = ROOT / "tests" / "data" / "scripts" / "timed"


def _truths(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line[len(PREFIX):]) for line in log.read_text().splitlines() if line.startswith(PREFIX)]


def _open(path: Path, tmp: Path) -> Path:
    if path.suffix != ".xz":
        return path
    out = tmp / path.name[:-3]
    out.write_bytes(lzma.decompress(path.read_bytes()))
    return out


def _us(ns: float) -> str:
    return f"{ns / 1e3:,.1f}"


def _pct(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.0f}%"


def no_twin_table(model_path: str | None, tmp: Path) -> list[str]:
    truths = _truths(NO_TWIN / "recording.log")
    cases = [("ResNet-50, torch.compile reduce-overhead", "resnet50_ro.gmtrace.xz", "resnet50_compile", "mode", "default",
              "reduce-overhead", "call_ns"),
             ("JAX jitted loop, XLA command buffer", "jax_loop.gmtrace.xz", "jax_jit_loop", "label", "no_command_buffer",
              "command_buffer", "graph_ns"),
             ("ResNet-50 with a graph break: two graphs a step", "resnet50_break.gmtrace.xz", "resnet50_compile_break", "mode",
              "default", "reduce-overhead", "call_ns")]
    rows = ["| workload | framework, kernels | predicted eager [95%] | untraced without graphs (median, range) | "
            "predicted saving | untraced saving (medians) | graphed: graphmode / untraced |",
            "|---|---|---|---|---|---|---|"]
    for title, name, workload, key, eager_value, graph_value, field in cases:
        e = [t[field] for t in truths if t["workload"] == workload and t.get(key) == eager_value]
        g = [t[field] for t in truths if t["workload"] == workload and t.get(key) == graph_value]
        with load(_open(NO_TWIN / name, tmp)) as trace:
            a = analyze(trace, find_model(trace.meta, model_path) if model_path else None)
        em, gm = statistics.median(e), statistics.median(g)
        step = next((s for s in a.steps if len(s.graphs) > 1), None)
        if step is not None:  # several graphs a step: the step's figures (its graphs' counterfactuals added up)
            cfs = [x.counterfactual for x in a.graphs if x.graph_id in step.graphs and x.counterfactual is not None]
            assert step.eager_ns is not None and step.saved_ns is not None and step.graphed_ns is not None, name
            lo = step.graphed_ns + sum(c.saved.low_ns for c in cfs)
            hi = step.graphed_ns + sum(c.saved.high_ns for c in cfs)
            rows.append(f"| {title} | {cfs[0].framework}, {sum(c.kernels for c in cfs)} in {len(cfs)} graphs | "
                        f"{_us(step.eager_ns)} [{_us(lo)}–{_us(hi)}] ({_pct(step.eager_ns, em)}) | {_us(em)} ({_us(min(e))}–"
                        f"{_us(max(e))}, {len(e)} processes) | {_us(step.saved_ns)} ({_pct(step.saved_ns, em - gm)}) | "
                        f"{_us(em - gm)} | {_us(step.graphed_ns)} / {_us(gm)} |")
            continue
        cf = a.graphs[0].counterfactual
        assert cf is not None, name
        rows.append(f"| {title} | {cf.framework}, {cf.kernels} | {_us(cf.eager.ns)} [{_us(cf.eager.low_ns)}–{_us(cf.eager.high_ns)}] "
                    f"({_pct(cf.eager.ns, em)}) | {_us(em)} ({_us(min(e))}–{_us(max(e))}, {len(e)} processes) | "
                    f"{_us(cf.saved.ns)} ({_pct(cf.saved.ns, em - gm)}) | {_us(em - gm)} | {_us(cf.graphed_ns)} / {_us(gm)} |")
    return rows


def twin_table(model_path: str | None, tmp: Path) -> list[str]:
    truths = _truths(TWIN / "recording.log")
    rows = ["| recording | framework, kernels | counterfactual eager [95%] | graphmode's measured eager (timing run) | "
            "program's own eager clock, timing run |", "|---|---|---|---|---|"]
    hf = [t for t in truths if t.get("workload") == "hf_static_decode"]
    for i, name in enumerate(("hf_decode.gmtrace.xz", "hf_decode_call.gmtrace.xz")):
        with load(_open(TWIN / name, tmp)) as trace:
            a = analyze(trace, find_model(trace.meta, model_path) if model_path else None)
            model = (find_model(trace.meta, model_path) if model_path else find_model(trace.meta)).model
            assert model is not None and a.traced_pass_id is not None
            g = next(g for g in a.graphs if g.status == "replayed" and g.eager is not None)
            made = counterfactual(trace, a.traced_pass_id, g, model, uses_torch(trace))
        assert made is not None and g.eager is not None and g.eager.work is not None
        cf = made[0]
        measured = g.eager.work.trimmed_mean
        own = hf[3 * i + 2]["eager_ns"]  # the timing run's own line (measuring, detail, timing)
        rows.append(f"| {name} (graph {g.graph_id}) | {cf.framework}, {cf.kernels} | {_us(cf.eager.ns)} "
                    f"[{_us(cf.eager.low_ns)}–{_us(cf.eager.high_ns)}] | {_us(measured)} ({_pct(cf.eager.ns, measured)}) | "
                    f"{_us(own)} ({_pct(cf.eager.ns, own)}) |")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="a cost model file (default: the installed or bundled one)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        print("Graphs with no eager twin (us):\n")
        print("\n".join(no_twin_table(args.model, Path(d))))
        print("\nGraphs with an eager twin, priced as if they had none (us):\n")
        print("\n".join(twin_table(args.model, Path(d))))


if __name__ == "__main__":
    main()
