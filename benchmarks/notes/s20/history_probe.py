"""Session 20, call 1: what PyTorch's allocator history gives on the lent GPU (torch 2.11): its signature, the
clock of its entries' time_us, whether it can be enabled before CUDA is initialized, and what it costs a launch."""
import inspect
import statistics
import sys
import time

import torch

mem = torch.cuda.memory
print("torch", torch.__version__, "signature", inspect.signature(mem._record_memory_history_impl))
print("initialized before:", torch.cuda.is_initialized())
t_wall0 = time.time_ns()
try:
    mem._record_memory_history(enabled="all", context=None, stacks="python", max_entries=100000)
    print("enabled before init: ok; initialized now:", torch.cuda.is_initialized())
except Exception as e:
    print("enable before init failed:", type(e).__name__, e)
x = torch.randn(1024, 1024, device="cuda")
y = x * 2
del y
torch.cuda.synchronize()
t_wall1 = time.time_ns()
snap = mem._snapshot()
tr = snap["device_traces"][0]
print("entries after init-time enable:", len(tr), tr[:3])
if tr:
    print("time_us range vs time.time_ns/1000:", tr[0]["time_us"] - t_wall0 / 1000, tr[-1]["time_us"] - t_wall1 / 1000)
mem._record_memory_history(enabled=None)

def loop(n):
    a = torch.randn(256, device="cuda")
    for _ in range(n):
        a = a + 1.0
    torch.cuda.synchronize()

def timed(n=20000):
    t0 = time.perf_counter_ns(); loop(n); return (time.perf_counter_ns() - t0) / n

loop(1000)
off, on = [], []
for r in range(5):
    off.append(timed())
    mem._record_memory_history(enabled="all", context=None, stacks="python", max_entries=300000)
    on.append(timed())
    t0 = time.perf_counter_ns()
    s = mem._snapshot()
    snap_ms = (time.perf_counter_ns() - t0) / 1e6
    n = len(s["device_traces"][0])
    mem._record_memory_history(enabled=None)
    print(f"round {r}: off {off[-1]:.0f} ns/launch, on {on[-1]:.0f} ns/launch, snapshot of {n} entries {snap_ms:.0f} ms")
print(f"median off {statistics.median(off):.0f} on {statistics.median(on):.0f} ns a launch (an add: one alloc, one free)")
acts = {}
for e in s["device_traces"][0]:
    acts[e["action"]] = acts.get(e["action"], 0) + 1
print("actions", acts, "keys", sorted(s["device_traces"][0][-1].keys()))
