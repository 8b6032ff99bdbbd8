"""Session 34 (issue 30): how the prediction prices a PyTorch step's capture, three ways, on recordings of four
third-party programs written eager-only, beside the same programs graphed and timed by their own clocks (the capture
block plus the first replay less a steady one; one graphed process each):
- segments (the prediction since session 34): the eager issue time plus the cudaMalloc of the segments a new private
  pool would allocate for the step (analyzers.step_memory), each at the run's own median cudaMalloc;
- ratio (before): the eager issue time plus the torch probe's ratio excess over the step's kernel dispatch (costmodel
  'capture_ratio', 1.66 on the H200); read here by hiding the run's cudaMalloc calls (malloc_cost -> None);
- additive: the ratio's excess swapped for a fixed F a capture, what call 1's capture_ratio_probe.py read for the
  calibration's own MLP step (a later capture's body less the step issued eagerly, c1/ratio.jsonl, median of 3).
Sets: session 24's one run with untraced windows (tests/data/scripts/windows_s24) and session 20's runs with the
allocator history (tests/data/scripts/memory_s20, whose traced runs read the programs' eager steps high).
Usage: python capture_pricing.py"""

from __future__ import annotations

import json
import lzma
import statistics as st
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
from script_fidelity import figures  # noqa: E402

from graphmode.analyzers import analyze  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

PREDICT = sys.modules["graphmode.analyzers.predict"]  # the module (the package re-exports a function of that name)
DATA = ROOT / "tests" / "data" / "scripts"
ratio_lines = [json.loads(x) for x in (Path(__file__).parent / "c1" / "ratio.jsonl").read_text().splitlines() if x]
extras = [st.median(r["bodies_us"][1:]) - r["eager_synced_us"] for r in ratio_lines if r["step"] == "mlp"]
F = st.median(extras) * 1e3
print(f"F = {F / 1e3:.0f} us (the MLP's later bodies less its eager step: {', '.join(f'{x:.0f}' for x in extras)} us)\n")


def truth(log: Path, prefix: str) -> dict[str, Any]:
    for line in log.read_text().splitlines():
        if line.startswith(prefix):
            return dict(json.loads(line.split("GRAPHMODE_TRUTH ", 1)[1]))
    raise KeyError(prefix)


def regions(path: Path, hide_mallocs: bool) -> list[Any]:
    real = PREDICT.malloc_cost
    if hide_mallocs:
        PREDICT.malloc_cost = lambda trace, pass_id: None
    try:
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "t.gmtrace"
            p.write_bytes(lzma.decompress(path.read_bytes()))
            with load(p) as trace:
                return [r for r in analyze(trace).prediction.regions if r.direction == "to_graph"]
    finally:
        PREDICT.malloc_cost = real


SETS = [("s24", DATA / "windows_s24" / f"{p}_one.gmtrace.xz", DATA / "windows_s24" / "recording.log",
         f"{p} graphed GRAPHMODE_TRUTH ", p) for p in ("decode", "mobilenet", "resnet", "vit")]
SETS += [("s20", DATA / "memory_s20" / f"{q}-r1.gmtrace.xz", DATA / "memory_s20" / "recording.log",
          f"{q} graphed r1 untraced GRAPHMODE_TRUTH ", p)
         for p, q in (("decode", "hf_static_decode"), ("mobilenet", "mobilenet_train_fn"), ("resnet", "resnet_train"),
                      ("vit", "vit_batch_graphs"))]
print("| set | program, region | graphed one-time | segments | ratio | additive | segments / graphed | ratio / graphed "
      "| additive / graphed |")
print("|---|---|---|---|---|---|---|---|---|")
for label, path, log, prefix, program in SETS:
    t = truth(log, prefix)
    for r_seg, r_ratio, k in zip(regions(path, False), regions(path, True),
                                 ["_b1", "_b2", "_b4", "_b8"] if program == "vit" else [""]):
        graphed = figures(t.get(f"eager{k}_ns"), t.get(f"graph{k}_ns"), t.get(f"capture_block{k}_ns"),
                          t.get(f"first_replay{k}_ns"))["one_time"]
        n = next((n for n in r_ratio.notes if n.kind == "torch_capture_ratio"), None)
        excess = (float(n["ratio"]) - 1.0) * float(n["dispatch_ns"]) if n is not None else 0.0
        seg, ratio = r_seg.one_time.ns, r_ratio.one_time.ns
        additive = ratio - excess + F
        print(f"| {label} | {program} {k.strip('_')} | {graphed / 1e6:.2f} ms | {seg / 1e6:.2f} | {ratio / 1e6:.2f} | "
              f"{additive / 1e6:.2f} | {seg / graphed:.2f} | {ratio / graphed:.2f} | {additive / graphed:.2f} |")
