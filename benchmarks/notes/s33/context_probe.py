"""Session 33: is a traced process's capture slow because its CUDA context was made with CUPTI attached? Call 1's
probe (benchmarks/notes/s32/decode_capture_probe.py) turned graphmode's pieces on after the model was loaded and found
no slower capture body after any of them, while graphmode's one run, whose CUPTI session is attached from the
process's start, captures the decode step's body 1.3-2x slower than untraced processes. This probe attaches the one
run's CUPTI session at other moments, one fresh process per MODE:
- 'control': never;
- 'early': before CUDA is initialized (before the model is built), detached after the prefill and 5 warm-up steps;
- 'early_through': before CUDA is initialized, detached after the 40 steps of E0 (as the one run: traced eager steps,
  then a detach, then the capture);
- 'late': after the model, prefill and warm-up (the context made untraced), detached after E0's 40 steps;
- 'at_begin' (added for call 4): as 'early_through', but detached where the one run detaches, just before the capture
  block (after the capture's 3 warm-up steps on a side stream), not before them.
Then the same as decode_capture_probe.py: capture U (block and body, us), E1 (150 eager steps untraced, the mean per
step), captures D and D2, E2. A mode's U body against control's U body is the figure (across processes), D against U
within one process says whether it passes. One JSON line.
Usage: python context_probe.py MODE"""

from __future__ import annotations

import json
import sys
import time

mode = sys.argv[1]
assert mode in ("control", "early", "early_through", "late", "at_begin"), mode
ns = time.perf_counter_ns
out: dict[str, object] = {"mode": mode}
session = None


def attach() -> None:
    global session
    from graphmode.tracer.cupti_session import CuptiSession
    from graphmode.tracer.run_configs import session_kwargs, single_config

    session = CuptiSession(**session_kwargs(single_config()))
    session.start()


def detach(key: str) -> None:
    global session
    if session is not None:
        t0 = ns()
        session.stop()
        out[key] = (ns() - t0) // 1000
        session = None


if mode in ("early", "early_through", "at_begin"):
    attach()

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache  # noqa: E402

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


graphs = []


def capture(tok: torch.Tensor, pos: torch.Tensor) -> list[int]:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    pos.fill_(PROMPT)
    torch.cuda.synchronize()
    detach("stop_us")  # 'at_begin': here, as the one run (nothing attached otherwise)
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
    for _ in range(n):
        step(tok, pos)
    torch.cuda.synchronize()
    pos.fill_(PROMPT)
    return (ns() - t0) // n // 1000


with torch.no_grad():
    prompt = torch.randint(0, cfg.vocab_size, (1, PROMPT), device="cuda")
    logits = model(prompt, cache_position=torch.arange(PROMPT, device="cuda"), past_key_values=cache,
                   return_dict=False, use_cache=True)[0]
    tok = torch.argmax(logits[:, -1], dim=-1)[:, None].clone()
    pos = torch.tensor([PROMPT], device="cuda")
    eager(tok, pos, 5)
    if mode == "early":
        detach("stop_us")
    if mode == "late":
        attach()
    out["E0"] = eager(tok, pos, 40)
    if mode != "at_begin":
        detach("stop_us")
    out["U"] = capture(tok, pos)
    out["E1"] = eager(tok, pos, 150)
    out["D"] = capture(tok, pos)
    out["D2"] = capture(tok, pos)
    out["E2"] = eager(tok, pos, 40)
print(json.dumps(out))
