"""Prepared in session 33 for the next device session, not yet run (issue 30): is the torch probe's capture ratio
(`graphmode calibrate`, costmodel 'capture_ratio': a capture's body over the same step issued eagerly, synchronized after
each step; 1.66 on the H200) the ratio of a real program's step? The prediction prices a PyTorch step's capture as its
eager issue time plus (ratio - 1) times its kernels' dispatch, and priced the transformers decode step's capture at
3.34 ms (issue 2.44 ms) where session 33's probes measured a capture body of 1.0-1.13x the step's unsynchronized eager
time. One fresh process, one STEP: 'mlp' (tracer.calibrate.torch_capture_probe's step) or 'decode' (the decode step of
benchmarks/third_party/hf_static_decode.py). Warm-up on a side stream, then: the step issued eagerly with a synchronize
after each (host time of the call, as the calibration), the same unsynchronized (a loop's mean per step), five
captures (each a new graph; body = the step's calls in capture mode). One JSON line with the ratios of the later
captures' median body to each eager figure.
Usage: python capture_ratio_probe.py STEP"""

from __future__ import annotations

import json
import statistics as st
import sys
import time

import torch

which = sys.argv[1]
assert which in ("mlp", "decode"), which
ns = time.perf_counter_ns
torch.manual_seed(0)
if which == "mlp":
    net = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(512, 512), torch.nn.ReLU())]).cuda().eval()
    x = torch.randn(64, 512, device="cuda")

    def step() -> None:
        torch.tanh(net(x)) * 0.5 + 1.0
else:
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

    cfg = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=2,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024)
    model = LlamaForCausalLM(cfg).to("cuda", torch.float16).eval()
    try:
        cache = StaticCache(config=cfg, max_batch_size=1, max_cache_len=512, device="cuda", dtype=torch.float16)
    except TypeError:
        cache = StaticCache(config=cfg, max_cache_len=512)
    tok = torch.zeros((1, 1), dtype=torch.long, device="cuda")
    pos = torch.tensor([16], device="cuda")

    def step() -> None:
        logits = model(tok, cache_position=pos, past_key_values=cache, return_dict=False, use_cache=True)[0]
        tok.copy_(torch.argmax(logits[:, -1], dim=-1)[:, None])

with torch.no_grad():
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    synced = []
    for _ in range(20):
        t0 = ns()
        step()
        synced.append(ns() - t0)
        torch.cuda.synchronize()
    t0 = ns()
    for _ in range(40):
        step()
    torch.cuda.synchronize()
    loop = (ns() - t0) / 40
    bodies, graphs = [], []
    for _ in range(5):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            b0 = ns()
            step()
            bodies.append(ns() - b0)
        graphs.append(g)
        torch.cuda.synchronize()
later = st.median(bodies[1:])
print(json.dumps({"step": which, "eager_synced_us": st.median(synced) / 1e3, "eager_loop_us": loop / 1e3,
                  "bodies_us": [b / 1e3 for b in bodies], "ratio_synced": later / st.median(synced),
                  "ratio_loop": later / loop}))
