"""Session 23: where the lent H200's timing swings come from (issues 29 and 30 compare figures across processes and
across blocks of one process; a CPU-bound ViT call swung 3.2-6.2 ms within one process in session 22).

One process, untraced: a timm ViT-small forward at batch 1 (CPU-bound: its launches, not its kernels, set its pace).
Before and after each block of 30 calls it reads what might explain a slow block:
- a pure-Python reference (a fixed loop of integer additions, no CUDA): the CPU's own speed for Python at that moment;
- 2,000 `x.add_(1)` launches without a synchronize (PyTorch's dispatch and the driver's launch path, no model);
- /proc/stat's total and steal jiffies (a virtual machine's CPU taken by its host), /proc/loadavg;
- the CPU the process ran on, and that CPU's clock (/proc/cpuinfo 'cpu MHz', or cpufreq where present).
Prints a header JSON line, then one JSON line a block. Usage: noise_probe.py LABEL [BLOCKS]"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

LABEL = sys.argv[1]
BLOCKS = int(sys.argv[2]) if len(sys.argv) > 2 else 40


def stat() -> tuple[int, int]:
    f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in f]
    return sum(v), (v[7] if len(v) > 7 else 0)


def cpu_now() -> int:
    return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])


def mhz(cpu: int) -> float | None:
    p = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
    if p.exists():
        return int(p.read_text()) / 1e3
    for block in Path("/proc/cpuinfo").read_text().split("\n\n"):
        lines = dict(x.split(":", 1) for x in block.splitlines() if ":" in x)
        if lines and int(lines.get("processor\t", lines.get("processor", "-1"))) == cpu:
            return float(lines.get("cpu MHz\t\t", lines.get("cpu MHz", "nan")))
    return None


def py_ref() -> float:
    t0 = time.perf_counter_ns()
    s = 0
    for i in range(200_000):
        s += i
    return (time.perf_counter_ns() - t0) / 1e3


import timm  # noqa: E402
import torch  # noqa: E402

model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(1, 3, 224, 224, device="cuda")
y = torch.zeros(1024, device="cuda")
head = {"label": LABEL, "pid": os.getpid(), "affinity": sorted(os.sched_getaffinity(0)), "nproc": os.cpu_count(),
        "loadavg": Path("/proc/loadavg").read_text().strip(), "torch_threads": torch.get_num_threads(),
        "governor": (Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
                     if Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists() else None)}
print(json.dumps(head), flush=True)
with torch.no_grad():
    for _ in range(10):
        model(x)
    torch.cuda.synchronize()
    for b in range(BLOCKS):
        tot0, steal0 = stat()
        cpu0 = cpu_now()
        ref0 = py_ref()
        t0 = time.perf_counter_ns()
        for _ in range(2000):
            y.add_(1)
        torch.cuda.synchronize()
        adds = (time.perf_counter_ns() - t0) / 2000 / 1e3
        t0 = time.perf_counter_ns()
        for _ in range(30):
            model(x)
        torch.cuda.synchronize()
        vit = (time.perf_counter_ns() - t0) / 30 / 1e3
        ref1 = py_ref()
        tot1, steal1 = stat()
        cpu1 = cpu_now()
        print(json.dumps({"label": LABEL, "block": b, "t": time.time(), "vit_us": round(vit, 1), "add_us": round(adds, 2),
                          "pyref_us": [round(ref0), round(ref1)], "cpu": [cpu0, cpu1], "mhz": mhz(cpu1),
                          "steal_jiffies": steal1 - steal0, "total_jiffies": tot1 - tot0,
                          "loadavg": Path("/proc/loadavg").read_text().split()[0]}), flush=True)
