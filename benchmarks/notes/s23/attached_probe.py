"""Session 23 (issue 29): what the one traced run costs a CPU-bound call that its calibrated per-launch costs do not
explain. On call 2's quiet machine the correction took the ResNet-18 step and the MobileNetV3 step to 1.01x and 1.07x
of untraced, but left the ViT-small forward at batch 1 at 1.3-1.6x and the Llama decode step at 1.39x.

The hypothesis measured: CUPTI attached costs every CUDA API call (getters and queries too, which the one run does not
record), so what tracing adds follows a program's API calls, not its kernels.

Per workload, in one process, 2 cycles of 4 states, 5 blocks each (a block: N calls, one synchronize; its figure the
mean per call); between states the session is stopped (cuptiFinalize):
  U  untraced;
  I  CUPTI attached idle (no activity kind but GRAPH_TRACE, which an eager call never writes; no callback);
  S  the one run's session (tracer.run_configs.single_config);
  A  the same with every driver and runtime API call recorded (api_filter 'all'): its records count each call.
In each state also: the per-call time of 20,000 cudaGetDevice (runtime) and cuCtxGetCurrent (driver) calls from
cuda.bindings. Prints one JSON line per workload: medians per state, the getters' per-call times, the kernels and the
API calls per workload call (from state A's records, by name)."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import Counter

import numpy as np
import torch
from cuda.bindings import driver, runtime

from graphmode.tracer.cupti_records import cupti_module, records_by_kind
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.decode import _api_names
from graphmode.tracer.run_configs import session_kwargs, single_config

CYCLES, BLOCKS, GETTERS = 2, 5, 20_000


def vit():
    import timm
    m = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda")

    def call() -> None:
        with torch.no_grad():
            m(x)
    return "vit_b1", 30, call


def resnet_train():
    import torchvision
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


def hf_decode():
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache
    cfg = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=2,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=4096)
    model = LlamaForCausalLM(cfg).to("cuda", torch.float16).eval()
    try:
        cache = StaticCache(config=cfg, max_batch_size=1, max_cache_len=4096, device="cuda", dtype=torch.float16)
    except TypeError:
        cache = StaticCache(config=cfg, max_cache_len=4096)
    tok = torch.randint(0, 8192, (1, 1), device="cuda")
    pos = torch.tensor([16], device="cuda")
    steps = [0]

    def call() -> None:
        with torch.no_grad():
            logits = model(tok, cache_position=pos, past_key_values=cache, return_dict=False, use_cache=True)[0]
            tok.copy_(torch.argmax(logits[:, -1], dim=-1)[:, None])
            pos.add_(1)
            steps[0] += 1
            if steps[0] % 3000 == 0:  # keep the cache position in range (no synchronize)
                pos.fill_(16)
    return "hf_decode", 30, call


def block(call, n: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / n / 1e3


def getters() -> tuple[float, float]:
    t0 = time.perf_counter_ns()
    for _ in range(GETTERS):
        runtime.cudaGetDevice()
    t1 = time.perf_counter_ns()
    for _ in range(GETTERS):
        driver.cuCtxGetCurrent()
    t2 = time.perf_counter_ns()
    return (t1 - t0) / GETTERS, (t2 - t1) / GETTERS


def session(state: str) -> CuptiSession | None:
    if state == "U":
        return None
    if state == "I":
        return CuptiSession(detail="graph", api_filter="none", gpu_kinds=False, callbacks=False)
    cfg = single_config() if state == "S" else dataclasses.replace(single_config(), api_filter="all")
    return CuptiSession(**session_kwargs(cfg))


def run(make) -> dict:
    name, n, call = make()
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    cupti = cupti_module()
    K, D = cupti.ActivityKind, cupti.CallbackDomain
    b: dict[str, list[float]] = {s: [] for s in "UISA"}
    g: dict[str, list[tuple[float, float]]] = {s: [] for s in "UISA"}
    counted: Counter = Counter()
    kernels = 0
    calls_in_a = 0
    for _ in range(CYCLES):
        for state in "UISA":
            s = session(state)
            if s is not None:
                s.start()
            g[state].append(getters())
            after_getters = int(cupti.get_timestamp()) if s is not None else 0
            block(call, 3)  # the first calls after an attach are not the state's
            for _ in range(BLOCKS):
                b[state].append(block(call, n))
            if s is not None:
                raw = s.stop()
                if state == "A":
                    # count A's workload calls only: the getter loops ran before after_getters
                    recs = records_by_kind(raw.chunks)
                    for kind, dom in ((int(K.RUNTIME), int(D.RUNTIME_API)), (int(K.DRIVER), int(D.DRIVER_API))):
                        r = recs.get(kind)
                        if r is not None and len(r):
                            r = r[np.asarray(r["start"], dtype=np.int64) >= after_getters]
                            counted.update(str(x) for x in _api_names(r, dom))
                    kr = recs.get(int(K.CONCURRENT_KERNEL))
                    kernels += 0 if kr is None else len(kr)
                    calls_in_a += 3 + BLOCKS * n
    per_call = {k: round(v / calls_in_a, 2) for k, v in counted.most_common()}
    return {"workload": name, "calls_per_block": n,
            "median_us": {s: round(float(np.median(v)), 1) for s, v in b.items()},
            "blocks_us": {s: [round(x, 1) for x in v] for s, v in b.items()},
            "getters_ns": {s: [[round(a), round(c)] for a, c in v] for s, v in g.items()},
            "kernels_per_call": round(kernels / calls_in_a, 2),
            "api_calls_per_call": round(sum(counted.values()) / calls_in_a, 2), "api_per_call": per_call}


for w in sys.argv[1:] or ["vit", "hf_decode", "resnet_train"]:
    print(json.dumps(run({"vit": vit, "hf_decode": hf_decode, "resnet_train": resnet_train}[w])), flush=True)
