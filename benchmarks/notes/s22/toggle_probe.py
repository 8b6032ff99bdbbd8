"""Session 22: can the one traced run measure its program untraced, in the same process, by switching CUPTI's activity
records off for stretches of it? (issue 29: one run, its eager figures within 15% of untraced; the lent H200's processes
differ up to 1.7x from each other, so an untraced figure from another process carries that noise.)

Per workload, in one process: 5 untraced blocks; the one run's CUPTI session (tracer.run_configs.single_config, our
buffer callbacks) started; 5 cycles of three blocks: ON (every kind the session enabled), OFF_KEEP_GRAPH (every kind off
but GRAPH_TRACE and MARKER), OFF (every kind off; the session stays subscribed to its resource callbacks); the session
stopped (cuptiFinalize); 5 untraced blocks again. A block is CALLS calls of the workload then one synchronize: its
median per call is the block's figure. Also: what each switch costs (activity_enable / activity_disable of all kinds),
and how many kernel and graph records CUPTI wrote inside each kind of block (OFF blocks must have none).

Workloads: a timm ViT-small forward at batch 1 (CPU-bound); a torchvision ResNet-18 training step at batch 32; the ViT
captured with torch.cuda.graph before the session, replayed. Prints one JSON line per workload."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import timm
import torch
import torchvision

from graphmode.tracer.cupti_records import cupti_module, records_by_kind
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

CYCLES, PLAIN = 5, 5


def vit() -> tuple[str, int, object]:
    m = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda")

    def call() -> None:
        with torch.no_grad():
            m(x)
    return "vit_b1", 30, call


def resnet_train() -> tuple[str, int, object]:
    m = torchvision.models.resnet18().cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def call() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn(m(x), y).backward()
        opt.step()
    return "resnet18_train", 10, call


def vit_graph() -> tuple[str, int, object]:
    m = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        m(x)
    return "vit_b1_replay", 30, g.replay


def block(call, calls: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / calls / 1e3


def run(make) -> dict:
    name, calls, call = make()
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    out: dict = {"workload": name, "calls_per_block": calls, "blocks": {}}
    b = out["blocks"]
    b["untraced_before"] = [block(call, calls) for _ in range(PLAIN)]
    cupti = cupti_module()
    K = cupti.ActivityKind
    s = CuptiSession(**session_kwargs(single_config()))
    s.start()
    kinds = list(s._kinds)
    keep = [k for k in kinds if k in (K.GRAPH_TRACE, K.MARKER)]
    windows: list[tuple[str, int, int]] = []
    switch_ns: dict[str, list[int]] = {"enable_all": [], "disable_all_but_graph": [], "disable_rest": []}
    for k in ("on", "off_keep_graph", "off"):
        b[k] = []
    for _ in range(CYCLES):
        for state in ("on", "off_keep_graph", "off"):
            t0 = cupti.get_timestamp()
            b[state].append(block(call, calls))
            windows.append((state, int(t0), int(cupti.get_timestamp())))
            # the switch into the next state
            if state == "on":
                t = time.perf_counter_ns()
                for k in kinds:
                    if k not in keep:
                        cupti.activity_disable(k)
                switch_ns["disable_all_but_graph"].append(time.perf_counter_ns() - t)
            elif state == "off_keep_graph":
                t = time.perf_counter_ns()
                for k in keep:
                    cupti.activity_disable(k)
                switch_ns["disable_rest"].append(time.perf_counter_ns() - t)
            else:
                t = time.perf_counter_ns()
                for k in kinds:
                    cupti.activity_enable(k)
                switch_ns["enable_all"].append(time.perf_counter_ns() - t)
    raw = s.stop()
    b["untraced_after"] = [block(call, calls) for _ in range(PLAIN)]
    recs = records_by_kind(raw.chunks)
    counts: dict[str, dict[str, int]] = {}
    for kind_name, kind in (("kernel", int(K.CONCURRENT_KERNEL)), ("graph", int(K.GRAPH_TRACE)),
                            ("runtime", int(K.RUNTIME)), ("driver", int(K.DRIVER))):
        r = recs.get(kind)
        starts = np.asarray(r["start"], dtype=np.int64) if r is not None and len(r) else np.zeros(0, np.int64)
        c = counts[kind_name] = {}
        for state, lo, hi in windows:
            c[state] = c.get(state, 0) + int(((starts >= lo) & (starts < hi)).sum())
    out["records_in_blocks"] = counts
    out["switch_us_median"] = {k: float(np.median(v)) / 1e3 for k, v in switch_ns.items()}
    out["median_us"] = {k: round(float(np.median(v)), 1) for k, v in b.items()}
    out["blocks"] = {k: [round(x, 1) for x in v] for k, v in b.items()}
    out["cupti_buffers"] = raw.buffers
    return out


if __name__ == "__main__":
    import faulthandler

    faulthandler.enable()
    for w in sys.argv[1:] or ["vit", "resnet_train", "vit_graph"]:
        print(json.dumps(run({"vit": vit, "resnet_train": resnet_train, "vit_graph": vit_graph}[w])), flush=True)
