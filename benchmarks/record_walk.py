"""What reading CUPTI's records costs graphmode (session 31): `name_pointers` runs inside every detach
(CuptiSession.stop reads the kernel and marker names before cuptiFinalize frees them), just before the program's next
work, which benchmarks/notes/s31 found slowed by any such work; `records_by_kind` runs in the decode after the run. Both
walk the buffers record by record (tracer.cupti_records._walk). Timed on synthetic buffers of the shapes a run makes,
and on the buffers of a real session where a GPU is present (`--live`: a PyTorch forward loop, traced with the one run's
kinds). Prints one JSON line per case: records, and the median of REPEATS timings (ms) of each function; then the first
call of `name_pointers` in a fresh process (what the first detach pays: until session 31 numpy's np.unique imported
numpy.ma there, 8-10 ms on a CPU machine).

    python3 benchmarks/record_walk.py [--repeats 5] [--live STEPS [--workloads mlp,train,vit] [--save DIR]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer.cupti_records import cupti_module, name_pointers, record_dtypes, records_by_kind


def synthetic(runs: list[tuple[int, int]], seed: int = 0, names: int = 64) -> bytes:
    """Records of (kind, count) runs in order; kernel and marker names drawn from `names` pointers from 0x1000, marker
    domains from 4 from 0x2000 (synthetic; tests/test_record_walk.py builds its buffers with it too)."""
    dtypes = record_dtypes()
    rng = np.random.default_rng(seed)
    out = []
    for kind, count in runs:
        a = np.zeros(count, dtype=dtypes[kind])
        a["kind"] = kind
        if "name" in a.dtype.names:
            a["name"] = rng.integers(0x1000, 0x1000 + names, count)
        if "domain" in a.dtype.names:
            a["domain"] = rng.integers(0x2000, 0x2004, count)
        out.append(a.tobytes())
    return b"".join(out)


def cases() -> dict[str, list[bytes]]:
    K = cupti_module().ActivityKind
    kernel, runtime, driver = int(K.CONCURRENT_KERNEL), int(K.RUNTIME), int(K.DRIVER)
    return {
        "one forward (126 kernels, 20 API)": [synthetic([(runtime, 20), (kernel, 126)])],
        "20k kernels in runs of 2000, API runs of 200": [synthetic([(runtime, 200), (kernel, 2000)] * 10)],
        "20k kernels and 20k API alternating": [synthetic([(kernel, 1), (runtime, 1)] * 20000)],
        "100k kernels in runs of 5000": [synthetic([(kernel, 5000), (driver, 50)] * 20)],
        "10k API records, each then two kernels": [synthetic([(runtime, 1), (kernel, 2)] * 10000)],
        "40k records of three kinds at random": [synthetic([(int(k), 1) for k in np.random.default_rng(0).choice(
            [kernel, runtime, driver], 40000)])],
    }


def live(steps: int, workload: str = "mlp") -> list[bytes]:
    """The buffers of a real session with the one run's kinds: a small PyTorch MLP's forward STEPS times ('mlp'), a
    torchvision ResNet-18 training step (forward, backward, SGD step; 'train'), or a timm ViT-small forward at batch 1
    ('vit'), never synchronized between steps."""
    import torch

    from graphmode.tracer.cupti_session import CuptiSession
    from graphmode.tracer.run_configs import session_kwargs, single_config

    if workload == "train":
        import torchvision

        model = torchvision.models.resnet18().cuda()
        x, y = torch.randn(8, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (8,), device="cuda")
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    else:
        if workload == "vit":
            import timm

            model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
            x = torch.randn(1, 3, 224, 224, device="cuda")
        else:
            model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(16)]).cuda()
            x = torch.randn(8, 256, device="cuda")

        def step() -> None:
            with torch.no_grad():
                model(x)
    step()  # warm: the allocator's segments, cuBLAS handles
    torch.cuda.synchronize()
    s = CuptiSession(**dict(session_kwargs(single_config()), graph_trace=False))
    s.start()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return s.stop().chunks


def timed(f: Any, chunks: list[bytes], repeats: int) -> float:
    f(chunks)  # first call apart: imports, numpy's first use
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(chunks)
        times.append((time.perf_counter() - t0) * 1e3)
    return round(statistics.median(times), 3)


FIRST_CALL = """
import json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
from record_walk import cases
from graphmode.tracer.cupti_records import name_pointers
chunks = next(iter(cases().values()))
before = set(sys.modules)
t0 = time.perf_counter()
name_pointers(chunks)
t1 = time.perf_counter()
new = sorted(m for m in set(sys.modules) - before if "." not in m or m.startswith("numpy."))
print(json.dumps({{"case": "first call in a fresh process", "name_pointers_ms": round((t1 - t0) * 1e3, 3),
                  "modules_imported": new}}))
"""


def first_call() -> None:
    import subprocess

    code = FIRST_CALL.format(bench=str(Path(__file__).resolve().parent))
    print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--live", type=int, default=0, help="also a real session of this many steps (needs a GPU)")
    ap.add_argument("--workloads", default="mlp", help="the live sessions' workloads, comma-separated: mlp, train, vit")
    ap.add_argument("--save", type=Path, help="a folder: each live session's buffers saved there (LIVE_WORKLOAD.npz)")
    args = ap.parse_args()
    todo = cases()
    for workload in args.workloads.split(",") if args.live else ():
        todo[f"live: {args.live} steps of {workload}"] = chunks = live(args.live, workload)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(args.save / f"live_{workload}.npz", *[np.frombuffer(c, dtype=np.uint8) for c in chunks])
    for name, chunks in todo.items():
        records = sum(len(v) for v in records_by_kind(chunks).values())
        print(json.dumps({"case": name, "records": records, "bytes": sum(map(len, chunks)),
                          "name_pointers_ms": timed(name_pointers, chunks, args.repeats),
                          "records_by_kind_ms": timed(records_by_kind, chunks, args.repeats)}))
    first_call()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
