"""Prepared in session 34 for the next device session, not yet run (issue 30): does a PyTorch graph instantiate at the
cost model's price? In session 34's traces a PyTorch graph's instantiation, untraced, read 1.11-1.89x the model's
(1.50x median over 46 graphs of the decode step and a ViT), which prices it from small kernels' graphs by node counts.
One fresh untraced process, one STEP ('decode': benchmarks/third_party/hf_static_decode.py's step; 'vit': timm's ViT
at batch 2): warm-up on a side stream, then 5 captures with keep_graph=True (capture_end does not instantiate), each
graph's `g.instantiate()` timed; its nodes counted by type through cuda.bindings (cuGraphGetNodes, cuGraphNodeGetType)
and its edges (cuGraphGetEdges); and the bundled H200 model's price at those counts. One JSON line.
Usage: python instantiate_probe.py STEP"""

from __future__ import annotations

import json
import statistics as st
import sys
import time

import torch
from cuda.bindings import driver as cu

from graphmode.analyzers.costmodel import bundled_dir, load_model
from graphmode.tracer.topology import node_type_name

which = sys.argv[1]
assert which in ("decode", "vit"), which
ns = time.perf_counter_ns
torch.manual_seed(0)
if which == "decode":
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
else:
    import timm

    vit = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
    x = torch.randn(2, 3, 224, 224, device="cuda")

    def step() -> None:
        vit(x)

MODEL_TYPES = ("kernel", "memset", "memcpy", "host")


def counts(g: torch.cuda.CUDAGraph) -> dict[str, float]:
    """The graph's nodes by the model's types (others, events among them, counted as 'event') and its edges, read as
    tracer.calibrate reads a graph's topology (its raw cudaGraph_t as tracer.compare takes it)."""
    graph = cu.CUgraph(int(g.raw_cuda_graph()))
    count = int(cu.cuGraphGetNodes(graph, 0)[-1])
    nodes = list(cu.cuGraphGetNodes(graph, count)[1]) if count else []
    out = {k: 0.0 for k in (*MODEL_TYPES, "event")}
    for node in nodes:
        t = node_type_name(cu.cuGraphNodeGetType(node)[1])
        out[t if t in MODEL_TYPES else "event"] += 1
    out["edges"] = float(int(cu.cuGraphGetEdges(graph, 0)[-1]))
    return out


with torch.no_grad():
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    times, graphs, shape = [], [], {}
    for _ in range(5):
        g = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(g):
            step()
        torch.cuda.synchronize()
        t0 = ns()
        g.instantiate()
        times.append(ns() - t0)
        if not shape:
            shape = counts(g)
        graphs.append(g)
model_ns = load_model(bundled_dir() / "costmodel-nvidia-h200.json").costs["instantiate"].mean(shape)
print(json.dumps({"step": which, "counts": shape, "instantiate_us": [t / 1e3 for t in times],
                  "model_us": model_ns / 1e3, "ratio_later": st.median(times[1:]) / model_ns}))
