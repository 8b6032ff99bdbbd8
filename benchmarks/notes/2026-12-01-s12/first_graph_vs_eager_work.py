"""Session 12 experiment: does a process's first graph cost more the more eager work ran before it?

    python benchmarks/notes/2026-12-01-s12/first_graph_vs_eager_work.py drive OUT.jsonl REPS   # fresh processes over every config, shuffled
    python benchmarks/notes/2026-12-01-s12/first_graph_vs_eager_work.py one MODE N             # one fresh process (used by drive)

MODE: sync (N eager steps of the 20-kernel probe chain, each synchronized), nosync (N steps, one sync),
sleep (1 step, then N ms asleep), memset (1 step, then N steps of 20 memsets, each synchronized),
torch (a PyTorch MLP step run N times eagerly, then captured twice with keep_graph and instantiated apart).
Per process: the first graph's capture/instantiate/upload/first-launch and the second's, perf_counter_ns.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time


def one(mode: str, n: int) -> dict:
    import duckdb
    from cupti import cupti  # noqa: F401

    import graphmode.tracer.runner  # noqa: F401

    con = duckdb.connect()
    con.execute("SELECT 1").fetchall()
    if mode == "torch":
        return torch_one(n)
    from graphmode.tracer import calibrate as c

    cal = c.Calibrator()
    t_ready = time.perf_counter_ns()
    steps = [("op", "kernel", 0)] * c.PROBE_KERNELS
    plan = cal.plan(steps)
    cu = cal.cu
    launches = 0
    if mode == "sync":
        for _ in range(n):
            cal.issue(plan)
            cal.check(cu.cuCtxSynchronize(), "sync")
        launches = 20 * n
    elif mode == "nosync":
        for _ in range(n):
            cal.issue(plan)
        cal.check(cu.cuCtxSynchronize(), "sync")
        launches = 20 * n
    elif mode == "sleep":
        cal.issue(plan)
        cal.check(cu.cuCtxSynchronize(), "sync")
        time.sleep(n / 1000)
        launches = 20
    elif mode == "memset":
        cal.issue(plan)
        ms = cal.plan([("op", "memset", 0)] * 20)
        for _ in range(n):
            cal.issue(ms)
            cal.check(cu.cuCtxSynchronize(), "sync")
        launches = 20
    t_eager = time.perf_counter_ns() - t_ready
    rows = [cal.measure(steps, replays=5, gated=0, eager=0) for _ in range(3)]
    cal.close()
    keys = ("capture", "instantiate", "upload", "first_launch")
    return {"mode": mode, "n": n, "launches": launches, "eager_ms": t_eager / 1e6,
            **{f"{k}{i}": rows[i][k] for i in range(3) for k in keys}}


def torch_one(n: int) -> dict:
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    net = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(512, 512), torch.nn.ReLU())]).to(dev).eval()
    x = torch.randn(64, 512, device=dev)

    def step():
        with torch.no_grad():
            return torch.tanh(net(x)) * 0.5 + 1.0

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(n, 1)):
            step()
            torch.cuda.synchronize()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    out = {"mode": "torch", "n": n, "torch": torch.__version__}
    for i in range(3):
        g = torch.cuda.CUDAGraph(keep_graph=True)
        t0 = time.perf_counter_ns()
        with torch.cuda.graph(g):
            step()
        t1 = time.perf_counter_ns()
        g.instantiate()
        t2 = time.perf_counter_ns()
        g.replay()
        torch.cuda.synchronize()
        t3 = time.perf_counter_ns()
        out.update({f"block{i}": t1 - t0, f"instantiate{i}": t2 - t1, f"first_launch{i}": t3 - t2})
        del g
    return out


def drive(out: str, reps: int) -> None:
    configs = [("sync", k) for k in (0, 1, 5, 20, 50, 100, 200, 500, 1000)]
    configs += [("nosync", k) for k in (50, 200, 1000)] + [("sleep", k) for k in (20, 100, 400)]
    configs += [("memset", k) for k in (50, 400)] + [("torch", k) for k in (1, 20, 100)]
    todo = configs * reps
    random.Random(12).shuffle(todo)
    t0 = time.time()
    with open(out, "w") as f:
        for mode, n in todo:
            r = subprocess.run([sys.executable, __file__, "one", mode, str(n)], capture_output=True, text=True, timeout=120)
            line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else json.dumps(
                {"mode": mode, "n": n, "error": r.stderr[-400:]})
            f.write(line + "\n")
            f.flush()
    print(f"{len(todo)} processes, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    if sys.argv[1] == "one":
        print(json.dumps(one(sys.argv[2], int(sys.argv[3]))))
    else:
        drive(sys.argv[2], int(sys.argv[3]))
