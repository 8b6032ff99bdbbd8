"""Hugging Face transformers: greedy decoding with a static KV cache, one token per step, following
transformers' own guide to static caches with torch.compile (its `decode_one_tokens` helper, a
`StaticCache`, `torch.compile(..., mode="reduce-overhead", fullgraph=True)`). The model is a small Llama
built from its config with random weights (nothing can be downloaded on the GPU machine).

The same decode step is compiled twice, so that both modes launch the same Inductor kernels:
- mode="default": Inductor's kernels launched by the CPU each step (the eager twin);
- mode="reduce-overhead": PyTorch's cudagraph trees record the step as a CUDA graph (on its second call,
  the first being the warm-up) and replay it; `torch.compiler.cudagraph_mark_step_begin()` marks each step.
Each loop is timed by the program's own clock with one synchronize at its end; the recording call and the
first replay are timed alone. Prints one GRAPHMODE_TRUTH line (benchmarks/third_party/_truth.py).
"""

import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

from _truth import report

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--layers", type=int, default=2)
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


def decode_one_tokens(cur_token, cache_position, past_key_values):
    logits = model(cur_token, cache_position=cache_position, past_key_values=past_key_values,
                   return_dict=False, use_cache=True)[0]
    return torch.argmax(logits[:, -1], dim=-1)[:, None]


def decode_one_tokens_graphed(cur_token, cache_position, past_key_values):  # same body, its own code object
    logits = model(cur_token, cache_position=cache_position, past_key_values=past_key_values,
                   return_dict=False, use_cache=True)[0]
    return torch.argmax(logits[:, -1], dim=-1)[:, None]


eager_step = torch.compile(decode_one_tokens, mode="default", fullgraph=True)
graph_step = torch.compile(decode_one_tokens_graphed, mode="reduce-overhead", fullgraph=True)

with torch.no_grad():
    prompt = torch.randint(0, cfg.vocab_size, (1, PROMPT), device="cuda")
    cache_position = torch.arange(PROMPT, device="cuda")
    logits = model(prompt, cache_position=cache_position, past_key_values=cache, return_dict=False, use_cache=True)[0]
    first_token = torch.argmax(logits[:, -1], dim=-1)[:, None]
    pos = torch.tensor([PROMPT], device="cuda")

    def run(fn, n: int, mark: bool) -> torch.Tensor:
        tok = first_token
        pos.fill_(PROMPT)
        for _ in range(n):
            if mark:
                torch.compiler.cudagraph_mark_step_begin()
            tok = fn(tok, pos, cache).clone()
            pos.add_(1)
        return tok

    t0 = ns()
    run(eager_step, 1, False)
    torch.cuda.synchronize()
    eager_compile_ns = ns() - t0
    run(eager_step, 5, False)
    torch.cuda.synchronize()
    t0 = ns()
    run(eager_step, args.steps, False)
    torch.cuda.synchronize()
    eager_ns = (ns() - t0) / args.steps

    t0 = ns()
    run(graph_step, 1, True)  # compile (or reuse Inductor's cache) and cudagraph trees' warm-up run
    torch.cuda.synchronize()
    graph_compile_ns = ns() - t0
    tok = first_token
    pos.fill_(PROMPT)
    t0 = ns()
    torch.compiler.cudagraph_mark_step_begin()
    tok = graph_step(tok, pos, cache).clone()  # the recording call: capture + instantiate
    torch.cuda.synchronize()
    capture_block_ns = ns() - t0
    pos.add_(1)
    t0 = ns()
    torch.compiler.cudagraph_mark_step_begin()
    tok = graph_step(tok, pos, cache).clone()  # the first replay
    torch.cuda.synchronize()
    first_replay_ns = ns() - t0
    run(graph_step, 5, True)
    torch.cuda.synchronize()
    t0 = ns()
    run(graph_step, args.steps, True)
    torch.cuda.synchronize()
    graph_ns = (ns() - t0) / args.steps

report(workload="hf_compile_decode", eager_ns=eager_ns, graph_ns=graph_ns, capture_block_ns=capture_block_ns,
       housekeeping_ns=0, first_replay_ns=first_replay_ns, eager_compile_ns=eager_compile_ns,
       graph_compile_ns=graph_compile_ns, steps=args.steps, layers=args.layers)
