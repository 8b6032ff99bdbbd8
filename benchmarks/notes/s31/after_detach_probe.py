"""Session 31, device calls 1-4: session 30 found a process's first capture after a CUPTI session detached up to 1.9x
its untraced captures, in the capture's body (the forward inside it), and graphmode's own graph work after the detach
did not remove it. What is it? A fresh process: a timm ViT-small at batch 2, warmed up, three eager forwards timed (E0),
three captures untraced (U, the last), a session attached (the one run's kinds), a forward (A), the session stopped and
detached (cuptiFinalize), then MODE: 'none'; 'sleep' (0.3 s); 'eager' (ten eager forwards, each timed: does the launch
path stay slow for a while, or for the first of each kernel?); 'nofinal' (the session stopped without cuptiFinalize);
(call 2:) 'control' (no session, nothing: the captures' own spread); 'burn' (no session at all: 70 ms of numpy work over
256 MB instead, to evict the CPU's caches as a detach might); 'torchops' (300 tiny PyTorch operations on the GPU after
the detach: the dispatcher and launch path warmed, not the model's kernels); 'other' (five forwards of a torchvision
ResNet-18 after the detach: a different model's kernels); 'pinned' (the main thread pinned to the CPU it runs on, once
the session's threads exist: does the slow capture follow the thread moving to another core?); then the program's
capture (D). The CPU the main thread ran on is noted at each step (call 2 on). Call 3: 'thread' (the session stopped and
detached by a helper thread, the main thread waiting: does the slow capture follow the work having run on the main
thread's core? the helper runs on any CPU but the main thread's); each forward and body also gives the thread's minor
page faults and context switches (getrusage); 'burnthread' (burn on a helper thread on another CPU; 'burn' now runs on a
helper thread too, on any CPU). Each forward and body: wall and the thread's CPU time (us): wall above CPU time is
waiting (a lock, the GIL held by another thread), not work. Also the process's OS threads before and after. One JSON
line."""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time

import timm
import torch

from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

mode = sys.argv[1]
kw = dict(session_kwargs(single_config()), graph_trace=False)
if mode == "nofinal":
    kw["detach"] = False
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
ns, cpu = time.perf_counter_ns, time.thread_time_ns
graphs = []


def on_cpu() -> int:
    with open("/proc/thread-self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


cpus: list[int] = []


def threads() -> int:
    cpus.append(on_cpu())
    return len(os.listdir("/proc/self/task"))


def usage() -> tuple[int, int, int]:
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_minflt, r.ru_nvcsw, r.ru_nivcsw


def timed(f) -> list[int]:
    u0, t0, c0 = usage(), ns(), cpu()
    f()
    t1, c1, u1 = ns(), cpu(), usage()
    return [round((t1 - t0) / 1e3), round((c1 - c0) / 1e3)] + [b - a for a, b in zip(u0, u1)]


def forward() -> list[int]:
    r = timed(lambda: model(x))
    torch.cuda.synchronize()
    return r


def capture() -> dict[str, list[int]]:
    g = torch.cuda.CUDAGraph()
    out: dict[str, list[int]] = {}
    t0, c0 = ns(), cpu()
    with torch.cuda.graph(g):
        out["body"] = timed(lambda: model(x))
    out["block"] = [round((ns() - t0) / 1e3), round((cpu() - c0) / 1e3)]  # [wall, cpu, faults, vol., invol. switches]
    graphs.append(g)
    return out


with torch.no_grad():
    for _ in range(5):
        model(x)
    torch.cuda.synchronize()
    e0 = [forward() for _ in range(3)]
    capture(), capture()
    u = capture()
    th0 = threads()
    if mode == "control":
        a, th1, stop_us = [0, 0], threads(), 0
    elif mode in ("burn", "burnthread"):
        import numpy as np
        t0 = ns()
        main_cpu = on_cpu()

        def burn() -> None:
            if mode == "burnthread":
                os.sched_setaffinity(0, os.sched_getaffinity(0) - {main_cpu})
            buf = np.ones(32 << 20)  # 256 MB
            while ns() - t0 < 70_000_000:
                buf += 1.0

        helper = threading.Thread(target=burn)
        helper.start()
        helper.join()
        a, th1, stop_us = [0, 0], threads(), round((ns() - t0) / 1e3)
    else:
        s = CuptiSession(**kw)
        s.start()
        if mode == "pinned":
            os.sched_setaffinity(0, {on_cpu()})
        a = forward()
        th1 = threads()
        t0 = ns()
        if mode == "thread":
            main_cpu = on_cpu()

            def stop_elsewhere() -> None:  # on any CPU but the main thread's
                os.sched_setaffinity(0, os.sched_getaffinity(0) - {main_cpu})
                s.stop()

            helper = threading.Thread(target=stop_elsewhere)
            helper.start()
            helper.join()
        else:
            s.stop()
        stop_us = round((ns() - t0) / 1e3)
    th2 = threads()
    after = []
    if mode == "sleep":
        time.sleep(0.3)
    elif mode == "eager":
        after = [forward() for _ in range(10)]
    elif mode == "torchops":
        y = torch.zeros(16, device="cuda")
        after = [timed(lambda: [y.add_(1.0) for _ in range(300)])]
        torch.cuda.synchronize()
    elif mode == "other":
        import torchvision
        r18 = torchvision.models.resnet18().cuda().eval()
        z = torch.randn(1, 3, 224, 224, device="cuda")
        after = [timed(lambda: r18(z)) for _ in range(5)]
        torch.cuda.synchronize()
    th3 = threads()
    d = capture()
    threads()
    d2 = capture()
    threads()
print(json.dumps({"mode": mode, "E0": e0, "U": u, "A": a, "stop_us": stop_us, "after": after, "D": d, "D2": d2,
                  "threads": [th0, th1, th2, th3], "cpus": cpus}))
