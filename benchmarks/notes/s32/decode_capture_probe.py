"""Prepared in session 32 for the next device session, not yet run: what in a traced process slows the decode step's
capture? Session 32 found that graphmode's one run captures the transformers decode step 1.3-2x slower than the
program's untraced processes by the program's own clock, with CUPTI detached for the capture and however short the
detach (benchmarks/notes/s32). Session 30's probe (s30/capture_parts_probe.py) toggled graphmode's pieces for a ViT, in
one process; this does it for the decode step, one fresh process per MODE, so a piece's effect on the whole process
shows. The model, its static KV cache and the step are hf_static_decode.py's (benchmarks/third_party).

A fresh process: the model, a prefill, 5 warm-up steps; E0 (40 eager steps, the mean per step, us); capture U (a graph
of the step as the program makes it: warm-up on a side stream, then `with torch.cuda.graph`; its block and its body,
us); then MODE during 150 eager steps:
- 'control': nothing;
- 'session': a CUPTI session with the one run's kinds attached for the 150 steps, then stopped and detached
  (cuptiFinalize), as the one run's detach before a capture;
- 'history': PyTorch's allocator history on (as the one run records it), left on;
- 'stamper': graphmode's line stamper on (sys.monitoring LINE events on this script's code), left on;
- 'hooks': graphmode's PyTorch hooks installed (torch.cuda.graph block, CUDAGraph, cudagraph loggers), left on;
- 'all': all four;
then E1 (the 150 steps' mean) and captures D and D2. One JSON line.
Usage: python decode_capture_probe.py MODE"""

from __future__ import annotations

import json
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

from graphmode.tracer import allocator_history
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config
from graphmode.tracer.script import start_stamper
from graphmode.tracer.torch_hooks import TorchHooks

mode = sys.argv[1]
assert mode in ("control", "session", "history", "stamper", "hooks", "all"), mode
ns = time.perf_counter_ns
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024)
model = LlamaForCausalLM(cfg).to("cuda", torch.float16).eval()
PROMPT, MAX_LEN = 16, 512
try:
    cache = StaticCache(config=cfg, max_batch_size=1, max_cache_len=MAX_LEN, device="cuda", dtype=torch.float16)
except TypeError:
    cache = StaticCache(config=cfg, max_cache_len=MAX_LEN)


def step(tok: torch.Tensor, pos: torch.Tensor) -> None:
    logits = model(tok, cache_position=pos, past_key_values=cache, return_dict=False, use_cache=True)[0]
    tok.copy_(torch.argmax(logits[:, -1], dim=-1)[:, None])
    pos.add_(1)


graphs = []  # kept alive, each with its own pool


def capture(tok: torch.Tensor, pos: torch.Tensor) -> list[int]:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    pos.fill_(PROMPT)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    t0 = ns()
    with torch.cuda.graph(g):
        b0 = ns()
        step(tok, pos)
        b1 = ns()
    t1 = ns()
    graphs.append(g)
    pos.fill_(PROMPT)
    return [(t1 - t0) // 1000, (b1 - b0) // 1000]


def eager(tok: torch.Tensor, pos: torch.Tensor, n: int) -> int:
    torch.cuda.synchronize()
    t0 = ns()
    for _ in range(n):  # no synchronization between steps, as the program's loop
        step(tok, pos)
    torch.cuda.synchronize()
    pos.fill_(PROMPT)
    return (ns() - t0) // n // 1000


out: dict[str, object] = {"mode": mode}
with torch.no_grad():
    prompt = torch.randint(0, cfg.vocab_size, (1, PROMPT), device="cuda")
    logits = model(prompt, cache_position=torch.arange(PROMPT, device="cuda"), past_key_values=cache,
                   return_dict=False, use_cache=True)[0]
    tok = torch.argmax(logits[:, -1], dim=-1)[:, None].clone()
    pos = torch.tensor([PROMPT], device="cuda")
    eager(tok, pos, 5)
    out["E0"] = eager(tok, pos, 40)
    out["U"] = capture(tok, pos)
    session = stamper = hooks = None
    if mode in ("history", "all"):
        allocator_history.enable(torch)
    if mode in ("stamper", "all"):
        stamper = start_stamper(single_config())
    if mode in ("hooks", "all"):
        hooks = TorchHooks(None, recordings_only=False).install()
    if mode in ("session", "all"):
        session = CuptiSession(**dict(session_kwargs(single_config()), graph_trace=False))
        session.start()
    out["E1"] = eager(tok, pos, 150)
    if session is not None:
        t0 = ns()
        session.stop()
        out["stop_us"] = (ns() - t0) // 1000
    out["D"] = capture(tok, pos)
    out["D2"] = capture(tok, pos)
    out["E2"] = eager(tok, pos, 40)
    if stamper is not None:
        stamper.stop()
    if hooks is not None:
        hooks.uninstall()
print(json.dumps(out))
