"""Hugging Face transformers: greedy decoding with a static KV cache (`StaticCache`), one token per step,
run eagerly and captured whole as one CUDA graph with `torch.cuda.graph` (the pattern serving engines use
for decode steps, and PyTorch's documented whole-network capture: warm-up on a side stream, capture, then
`g.replay()` in a loop with no synchronization between replays). The step feeds its own output back (the
next token and the next cache position are written in place), so the graph loop is replays only.

The model is a small Llama built from its config with random weights (nothing can be downloaded on the GPU
machine). Each loop is timed by the program's own clock with one synchronize at its end; the capture block
and the first replay are timed alone. Prints one GRAPHMODE_TRUTH line (benchmarks/third_party/_truth.py).

benchmarks/third_party/hf_compile_decode.py is the same decode step compiled with
torch.compile(mode="reduce-overhead"), as transformers' own guide does it.
"""

import argparse
import gc
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

from _truth import pool_memory, report

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--eager-only", action="store_true", help="the eager decode loop alone (issue 30: predict from it)")
args = p.parse_args()
ns = time.perf_counter_ns
torch.manual_seed(0)

cfg = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=args.layers,
                  num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024)
model = LlamaForCausalLM(cfg).to("cuda", torch.float16).eval()
# transformers 5's StaticCache writes each step at its own running offset (cache_position is not the write
# index), so the cache holds every step this program runs: prefill, both loops and their warm-ups
PROMPT, MAX_LEN = 16, 2 * args.steps + 64
try:
    cache = StaticCache(config=cfg, max_batch_size=1, max_cache_len=MAX_LEN, device="cuda", dtype=torch.float16)
except TypeError:  # transformers >= 4.56: layers are allocated on their first update
    cache = StaticCache(config=cfg, max_cache_len=MAX_LEN)


def step(tok: torch.Tensor, pos: torch.Tensor) -> None:
    """One decode step: the next token and position are written in place (static buffers for the graph)."""
    logits = model(tok, cache_position=pos, past_key_values=cache, return_dict=False, use_cache=True)[0]
    tok.copy_(torch.argmax(logits[:, -1], dim=-1)[:, None])
    pos.add_(1)


with torch.no_grad():
    prompt = torch.randint(0, cfg.vocab_size, (1, PROMPT), device="cuda")
    logits = model(prompt, cache_position=torch.arange(PROMPT, device="cuda"), past_key_values=cache,
                   return_dict=False, use_cache=True)[0]  # prefill (allocates the cache's layers)
    first = torch.argmax(logits[:, -1], dim=-1)[:, None]
    tok = first.clone()
    pos = torch.tensor([PROMPT], device="cuda")

    def reset() -> None:
        tok.copy_(first)
        pos.fill_(PROMPT)

    for _ in range(5):
        step(tok, pos)
    reset()
    torch.cuda.synchronize()
    t0 = ns()
    for _ in range(args.steps):
        step(tok, pos)
    torch.cuda.synchronize()
    eager_ns = (ns() - t0) / args.steps
    if args.eager_only:
        report(workload="hf_static_decode", eager_ns=eager_ns, steps=args.steps, layers=args.layers)
        raise SystemExit(0)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    reset()
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    t0 = ns()
    with torch.cuda.graph(g):
        step(tok, pos)
    capture_block_ns = ns() - t0
    # what torch.cuda.graph does before capturing (synchronize, gc.collect, empty_cache): not CUDA graph work
    t0 = ns()
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    housekeeping_ns = ns() - t0

    t0 = ns()
    g.replay()
    torch.cuda.synchronize()
    first_replay_ns = ns() - t0
    for _ in range(5):
        g.replay()
    reset()
    torch.cuda.synchronize()
    t0 = ns()
    for _ in range(args.steps):
        g.replay()
    torch.cuda.synchronize()
    graph_ns = (ns() - t0) / args.steps

pool_reserved_bytes, pool_allocated_bytes = pool_memory(torch, g.pool())  # after the timings: what the graph holds
report(workload="hf_static_decode", eager_ns=eager_ns, graph_ns=graph_ns, capture_block_ns=capture_block_ns,
       housekeeping_ns=housekeeping_ns, first_replay_ns=first_replay_ns, steps=args.steps, layers=args.layers,
       pool_reserved_bytes=pool_reserved_bytes, pool_allocated_bytes=pool_allocated_bytes)
