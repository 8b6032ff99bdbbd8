"""Session 13 experiment: a first-graph probe that creates no stream, run in the workload's own process after its
eager run, against the workload's real first graph in another identical process.

    python benchmarks/notes/2026-12-01-s13/probe_no_streams.py drive OUT.jsonl REPS
    python benchmarks/notes/2026-12-01-s13/probe_no_streams.py one WORKLOAD WHAT

Call 2 found that creating 17 streams before the first graph takes ~200 us off its instantiate extra, and the
Calibrator makes 17 streams: call 1's in-process probes had pre-paid what they meant to measure. This probe loads
its own module and one 64 KB buffer (neither changed the extra in call 2) and builds its graphs with the node API,
launched on the NULL stream. WHAT:
  real     the workload's own graph (as in probe_in_process.py)
  rep      the probe's replica of the real graph: chain-K a chain of K tiny kernels; dag-W-D memset -> W branches of
           D tiny kernels -> a join kernel -> a memcpy (device to device)
  chain20  a chain of 20 tiny kernels whatever the workload
  s17real  17 streams made, then the real graph;  s1real  one stream made, then the real graph
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from probe_in_process import GRAPHS, eager, workload_graphs  # noqa: E402


class NoStreamProbe:
    def __init__(self) -> None:
        import ctypes

        from cuda.bindings import driver as cu

        from graphmode.tracer import calibrate as c
        from graphmode.tracer import cuda_util as cu_util
        from graphmode.tracer.cuda_util import KernelArgs

        self.cu = cu
        self.device = cu_util.init_device()
        self.module = cu_util.compile_module(c.SOURCE, "probe.cu", self.device)
        self.f = cu_util.get_function(self.module, "tiny")
        self.buf = cu_util.alloc(1 << 16)
        self.args = KernelArgs((self.buf, ctypes.c_uint64))

    def build(self, width: int, depth: int, ends: bool) -> object:
        from graphmode.tracer.cuda_util import check

        cu, ctx = self.cu, self.device.context
        graph = check(cu.cuGraphCreate(0), "cuGraphCreate")

        def kernel(deps: list) -> object:
            p = cu.CUDA_KERNEL_NODE_PARAMS()
            p.func = self.f
            p.gridDimX, p.gridDimY, p.gridDimZ = 1, 1, 1
            p.blockDimX, p.blockDimY, p.blockDimZ = 32, 1, 1
            p.sharedMemBytes = 0
            p.kernelParams = self.args.address
            return check(cu.cuGraphAddKernelNode(graph, deps or None, len(deps), p), "cuGraphAddKernelNode")

        head: list = []
        if ends:
            ms = cu.CUDA_MEMSET_NODE_PARAMS()
            ms.dst, ms.pitch, ms.value, ms.elementSize, ms.width, ms.height = self.buf, 0, 0, 4, 256, 1
            head = [check(cu.cuGraphAddMemsetNode(graph, None, 0, ms, ctx), "cuGraphAddMemsetNode")]
        tails = []
        for _ in range(width):
            prev = head
            for _ in range(depth):
                prev = [kernel(prev)]
            tails += prev
        if ends:
            join = kernel(tails)
            cp = cu.CUDA_MEMCPY3D()
            cp.srcMemoryType = cp.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
            cp.srcDevice, cp.dstDevice = self.buf, self.buf + (1 << 15)
            cp.WidthInBytes, cp.Height, cp.Depth = 4096, 1, 1
            check(cu.cuGraphAddMemcpyNode(graph, [join], 1, cp, ctx), "cuGraphAddMemcpyNode")
        return graph

    def graphs(self, width: int, depth: int, ends: bool, n: int = GRAPHS) -> list[dict]:
        from graphmode.tracer.cuda_util import check

        cu, clock = self.cu, time.perf_counter_ns
        out = []
        for _ in range(n):
            a = clock(); graph = self.build(width, depth, ends); b = clock()
            gexec = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate"); c = clock()
            check(cu.cuGraphUpload(gexec, 0), "cuGraphUpload"); check(cu.cuStreamSynchronize(0), "sync"); d = clock()
            check(cu.cuGraphLaunch(gexec, 0), "cuGraphLaunch"); check(cu.cuStreamSynchronize(0), "sync"); e = clock()
            check(cu.cuGraphExecDestroy(gexec), "cuGraphExecDestroy")
            check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
            out.append({"build": b - a, "instantiate": c - b, "upload": d - c, "first_launch": e - d})
        return out


def one(workload: str, what: str) -> dict:
    import duckdb
    from cupti import cupti  # noqa: F401

    import graphmode.tracer.runner  # noqa: F401
    from graphmode.tracer import cuda_util as cu_util
    from graphmode.tracer.workloads import make_workload

    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SELECT 1").fetchall()
    parts = workload.split("-")
    wl = make_workload(parts[0], **({"width": int(parts[1]), "depth": int(parts[2])} if parts[0] == "dag" else {"kernels": int(parts[1])}))
    wl.setup()
    eager(wl)
    t1 = time.perf_counter()
    if what in ("real", "s17real", "s1real"):
        [cu_util.new_stream() for _ in range({"real": 0, "s17real": 17, "s1real": 1}[what])]
        rows = workload_graphs(wl)
    else:
        p = NoStreamProbe()
        if what == "chain20":
            rows = p.graphs(1, 20, False)
        elif parts[0] == "chain":
            rows = p.graphs(1, int(parts[1]), False)
        else:
            rows = p.graphs(int(parts[1]), int(parts[2]), True)
    return {"workload": workload, "what": what, "graphs": rows, "probe_s": time.perf_counter() - t1}


def drive(out: str, reps: int) -> None:
    wls = ["chain-5", "chain-20", "chain-80", "dag-2-2", "dag-4-3", "dag-8-4"]
    todo = [(w, x) for w in wls for x in ("real", "rep", "chain20")] + [("dag-8-4", "s17real"), ("chain-20", "s1real")]
    todo = todo * reps
    random.Random(132).shuffle(todo)
    t0 = time.time()
    with open(out, "w") as f:
        for w, x in todo:
            r = subprocess.run([sys.executable, __file__, "one", w, x], capture_output=True, text=True, timeout=120)
            line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else json.dumps(
                {"workload": w, "what": x, "error": r.stderr[-600:]})
            f.write(line + "\n")
            f.flush()
    print(f"{len(todo)} processes, {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "one":
        print(json.dumps(one(sys.argv[2], sys.argv[3])))
    else:
        drive(sys.argv[2], int(sys.argv[3]))
