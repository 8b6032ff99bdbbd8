"""Session 23: can a sampler thread see the lent H200's CPU speed phases, and what does it cost the program?

Calls 1 and 3 showed the machine's CPU-bound figures moving together in phases of seconds: a ViT-small forward at 5.0-5.9
ms a call in one stretch and 3.2-3.4 ms in the next, in one process, untraced; a cudaGetDevice call at 275 ns against
143 ns in the same stretches; a pure-Python reference loop correlated 0.54-0.82 with the ViT's block times.

Here: a daemon thread times a fixed pure-Python loop (REF_N integer additions, holding the GIL for its duration) every
PERIOD_S, while the main thread runs ViT blocks of 30 calls. Blocks alternate between sampler on and sampler off (A/B:
its cost), 2 x BLOCKS blocks. Prints one JSON line a block: its per-call time, and the samples taken during it (on) or
none (off)."""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np
import timm
import torch

REF_N, PERIOD_S, BLOCKS = 20_000, 0.05, 30
samples: list[tuple[int, int]] = []
on = threading.Event()


def ref() -> int:
    t0 = time.perf_counter_ns()
    s = 0
    for i in range(REF_N):
        s += i
    return time.perf_counter_ns() - t0


def sampler() -> None:
    while True:
        on.wait()
        samples.append((time.perf_counter_ns(), ref()))
        time.sleep(PERIOD_S)


threading.Thread(target=sampler, daemon=True).start()
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(1, 3, 224, 224, device="cuda")
label = sys.argv[1] if len(sys.argv) > 1 else ""
with torch.no_grad():
    for _ in range(10):
        model(x)
    torch.cuda.synchronize()
    for b in range(2 * BLOCKS):
        state = b % 2 == 0
        (on.set if state else on.clear)()
        time.sleep(0.06)  # let the sampler settle into its state
        n0 = len(samples)
        t0 = time.perf_counter_ns()
        for _ in range(30):
            model(x)
        torch.cuda.synchronize()
        t1 = time.perf_counter_ns()
        got = [d for t, d in samples[n0:] if t0 <= t < t1]
        # the reference in the main thread right after the block: the same loop, no other thread
        main_ref = ref()
        print(json.dumps({"label": label, "block": b, "sampler": state, "vit_us": round((t1 - t0) / 30 / 1e3, 1),
                          "samples_us": [round(d / 1e3, 1) for d in got], "main_ref_us": round(main_ref / 1e3, 1)}),
              flush=True)
on.clear()
_ = np  # numpy is imported for timm's sake only
