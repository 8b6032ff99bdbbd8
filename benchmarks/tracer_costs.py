"""What each part of CUPTI tracing costs the traced program, per event (H200; issue 9's design).

In one process, on the `chain` workload's tiny kernel (1,024 elements), measures:

- the CPU cost of one cuLaunchKernel call under activity configurations (none; API records for every
  call; API records for the calls the analysis reads; kernel records; both; graphmode's measuring-run
  kinds);
- the cost of one Python CUPTI callback (an empty one, and graphmode's own) on cuLaunchKernel;
- the cost of capturing and instantiating a 10-kernel graph with no callbacks, with empty Python
  resource callbacks, and with graphmode's graph-level and node-level resource callbacks.

Each configuration is started (and CUPTI detached with cuptiFinalize) around its own timed blocks;
medians of 7 blocks. Prints a table and writes JSON to the path given.

    python3 benchmarks/tracer_costs.py OUT.json
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

LAUNCHES = 2000
BLOCKS = 7
GRAPHS = 40


def main(out: str) -> None:
    from cupti import cupti

    from graphmode.tracer import cuda_util
    from graphmode.tracer.cupti_session import CuptiSession
    from graphmode.tracer.workloads import make_workload

    wl: Any = make_workload("chain", n=1024, kernels=10)
    wl.setup()
    cu = wl.cu
    launch, fn, b, t, s, a = cu.cuLaunchKernel, wl.fn, wl.blocks, wl.threads, wl.stream, wl.args.address
    sync = cu.cuStreamSynchronize
    ns = time.perf_counter_ns

    def launch_block() -> float:
        sync(s)
        t0 = ns()
        for _ in range(LAUNCHES):
            launch(fn, b, 1, 1, t, 1, 1, 0, s, a, 0)
        t1 = ns()
        sync(s)
        return (t1 - t0) / LAUNCHES

    def graph_block() -> float:
        t0 = ns()
        for _ in range(GRAPHS):
            graph, _ = wl.build_graph()
            ex = cuda_util.check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
            cuda_util.check(cu.cuGraphExecDestroy(ex), "cuGraphExecDestroy")
            cuda_util.check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
        return (ns() - t0) / GRAPHS

    def measure(block: Callable[[], float], start: Callable[[], Any] | None, stop: Callable[[Any], None] | None) -> float:
        h = start() if start else None
        block()  # warm-up
        vals = [block() for _ in range(BLOCKS)]
        if stop:
            stop(h)
        return float(np.median(vals))

    K = cupti.ActivityKind

    def activity(kinds: list[Any], filtered: bool | str = False) -> Callable[[], Any]:
        def start() -> Any:
            bufs: list[int] = []
            cupti.activity_register_callbacks(lambda: (8 << 20, 0), lambda acts: bufs.append(len(acts)))
            for k in kinds:
                cupti.activity_enable(k)
            if filtered is True:
                CuptiSession._filter_api(cupti)
            elif filtered == "lifecycle":
                import re

                keep = re.compile(r"^cu(da)?(Graph(Instantiate|Upload|ExecUpdate|Destroy|ExecDestroy)|Stream(Begin|End)Capture)")
                for enum, switch in ((cupti.driver_api_trace_cbid, cupti.activity_enable_driver_api),
                                     (cupti.runtime_api_trace_cbid, cupti.activity_enable_runtime_api)):
                    for name, value in enum.__members__.items():
                        try:
                            switch(int(value), 1 if keep.match(name) else 0)
                        except Exception:
                            pass
            return kinds
        return start

    def stop_activity(kinds: Any) -> None:
        cupti.activity_flush_all(1)
        for k in kinds:
            cupti.activity_disable(k)
        cupti.finalize()

    def callback(fn_: Callable[..., None], domain: Any, cbids: list[int]) -> Callable[[], Any]:
        def start() -> Any:
            sub = cupti.subscribe(fn_, 0)
            for c in cbids:
                cupti.enable_callback(1, sub, domain, c)
            return sub
        return start

    def stop_callback(sub: Any) -> None:
        cupti.unsubscribe(sub)
        cupti.finalize()

    def session(**kw: Any) -> Callable[[], Any]:
        def start() -> Any:
            sess = CuptiSession("graph", **kw)
            sess.start()
            return sess
        return start

    def stop_session(sess: Any) -> None:
        sess.stop()

    launch_cbid = int(cupti.driver_api_trace_cbid.cuLaunchKernel)
    D = cupti.CallbackDomain
    results: dict[str, float] = {}
    api = [K.DRIVER, K.RUNTIME]
    rest = [K.CONCURRENT_KERNEL, K.MEMCPY, K.MEMSET, K.SYNCHRONIZATION, K.GRAPH_TRACE]
    results["launch: untraced"] = measure(launch_block, None, None)
    results["launch: API records, every call"] = measure(launch_block, activity(api), stop_activity)
    results["launch: API records, needed calls"] = measure(launch_block, activity(api, True), stop_activity)
    results["launch: kernel records only"] = measure(launch_block, activity([K.CONCURRENT_KERNEL]), stop_activity)
    results["launch: API (every call) + kernel records"] = measure(launch_block, activity(api + [K.CONCURRENT_KERNEL]), stop_activity)
    results["launch: measuring-run kinds (needed API)"] = measure(launch_block, activity(api + rest, True), stop_activity)
    results["launch: measuring-run kinds, API records for graph lifecycle only"] = measure(
        launch_block, activity(api + rest, "lifecycle"), stop_activity)
    results["launch: empty Python callback on cuLaunchKernel"] = measure(
        launch_block, callback(lambda *x: None, D.DRIVER_API, [launch_cbid]), stop_callback)

    def graphmode_api_callback() -> Callable[[], Any]:
        sess = CuptiSession("graph", source_api=r"^cuLaunchKernel$", api_filter="needed", node_events=False)

        def start() -> Any:
            sess.start()
            return sess
        return start
    results["launch: graphmode's API callback (call site)"] = measure(launch_block, graphmode_api_callback(), stop_session)
    results["graph build: untraced"] = measure(graph_block, None, None)
    res = [int(getattr(cupti.CallbackIdResource, n)) for n in ("GRAPH_CREATED", "GRAPH_CLONED", "GRAPH_DESTROY_STARTING",
                                                            "GRAPHEXEC_CREATE_STARTING", "GRAPHEXEC_CREATED", "GRAPHEXEC_DESTROY_STARTING")]
    node_res = [int(getattr(cupti.CallbackIdResource, n)) for n in ("GRAPHNODE_CREATED", "GRAPHNODE_CLONED",
                                                                 "GRAPHNODE_DESTROY_STARTING", "GRAPHNODE_DEPENDENCY_CREATED")]
    results["graph build: empty Python callbacks, graph-level"] = measure(graph_block, callback(lambda *x: None, D.RESOURCE, res), stop_callback)
    results["graph build: empty Python callbacks, graph + node level"] = measure(
        graph_block, callback(lambda *x: None, D.RESOURCE, res + node_res), stop_callback)
    results["graph build: graphmode session, graph-level callbacks"] = measure(
        graph_block, session(api_filter="needed", node_events=False), stop_session)
    results["graph build: graphmode session, node callbacks"] = measure(
        graph_block, session(api_filter="needed", node_events=True), stop_session)
    results["graph build: activity only (measuring-run kinds)"] = measure(graph_block, activity(api + rest, True), stop_activity)
    wl.teardown()
    for k, v in results.items():
        print(f"{k:60s} {v / 1e3:10.2f} us", flush=True)
    with open(out, "w") as f:
        json.dump({"unit": "ns per launch / per graph (capture 10 kernels + instantiate + destroy)", "results": results,
                   "launches_per_block": LAUNCHES, "graphs_per_block": GRAPHS, "blocks": BLOCKS}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tracer_costs.json")
