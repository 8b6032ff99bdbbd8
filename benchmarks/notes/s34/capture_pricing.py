"""Session 34 (issue 30): the prediction's capture priced as today (the eager issue time plus the torch probe's ratio
excess over the step's kernel dispatch: costmodel 'capture_ratio', 1.66 on the H200) against an additive excess (the
eager issue time plus a fixed cost a capture, F), on session 24's one-run recordings of four third-party programs
written eager-only (tests/data/scripts/windows_s24), beside the same programs graphed and timed by their own clocks
(recording.log: the capture block plus the first replay less a steady one). F: what call 1's capture_ratio_probe.py
read for the calibration's own MLP step, a later capture's body less the step issued eagerly (c1/ratio.jsonl, the
median over 3 processes). The counterfactual takes the ratio's excess off the predicted one-time cost and adds F.
Usage: python capture_pricing.py"""

from __future__ import annotations

import json
import lzma
import statistics as st
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
from script_fidelity import figures  # noqa: E402

from graphmode.analyzers import analyze  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

S24 = ROOT / "tests" / "data" / "scripts" / "windows_s24"
ratio_lines = [json.loads(x) for x in (Path(__file__).parent / "c1" / "ratio.jsonl").read_text().splitlines() if x]
extras = [st.median(r["bodies_us"][1:]) - r["eager_synced_us"] for r in ratio_lines if r["step"] == "mlp"]
F = st.median(extras) * 1e3
print(f"F = {F / 1e3:.0f} us (the MLP's later bodies less its eager step: {', '.join(f'{x:.0f}' for x in extras)} us)")


def truth(program: str) -> dict:
    for line in (S24 / "recording.log").read_text().splitlines():
        if line.startswith(f"{program} graphed GRAPHMODE_TRUTH "):
            return json.loads(line.split("GRAPHMODE_TRUTH ", 1)[1])
    raise KeyError(program)


print("| program, region | graphed one-time | predicted today | ratio's excess | additive | today / graphed | "
      "additive / graphed |")
print("|---|---|---|---|---|---|---|")
for program in ("decode", "mobilenet", "resnet", "vit"):
    t = truth(program)
    subjects = [f"b{b}" for b in (1, 2, 4, 8)] if program == "vit" else [""]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.gmtrace"
        path.write_bytes(lzma.decompress((S24 / f"{program}_one.gmtrace.xz").read_bytes()))
        with load(path) as trace:
            regions = [r for r in analyze(trace).prediction.regions if r.direction == "to_graph"]
    for r, s in zip(regions, subjects):
        k = f"_{s}" if s else ""
        graphed = figures(t.get(f"eager{k}_ns"), t.get(f"graph{k}_ns"), t.get(f"capture_block{k}_ns"),
                          t.get(f"first_replay{k}_ns"))["one_time"]
        n = next((n for n in r.notes if n.kind == "torch_capture_ratio"), None)
        excess = (float(n["ratio"]) - 1.0) * float(n["dispatch_ns"]) if n is not None else 0.0
        today = r.one_time.ns if r.one_time is not None else float("nan")
        additive = today - excess + F
        print(f"| {program} {s} | {graphed / 1e6:.2f} ms | {today / 1e6:.2f} | {excess / 1e6:.2f} | "
              f"{additive / 1e6:.2f} | {today / graphed:.2f} | {additive / graphed:.2f} |")
