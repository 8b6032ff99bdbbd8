"""Session 34: why a capture right after CUPTI's detach is slow (session 33, call 4: 1.35x the block, gone when the
detach comes before the capture's three warm-up steps). Is it time (something finishing after cuptiFinalize), the
first CUDA calls after the detach (graphmode could make them itself), or the program's own kernels' first launches
after it (only the program's work absorbs that)? CUPTI attached before CUDA is initialized, 40 traced eager steps
(E0), the capture's warm-up on a side stream, then the detach just before the capture block, and then, per MODE:
- 'at_begin': nothing (session 33's slow case);
- 'sleep': 50 ms of sleep;
- 'own': graphmode's own CUDA work (its empty graph, a stream capture of a memset of its own, a memset and an event);
- 'step': one of the program's eager steps, synchronized (what a linger would give);
- 'early_through': (reference) detached before the warm-up, nothing after;
- 'control': never attached.
Then capture U (block and body, us), E1 (150 eager steps), captures D and D2, E2, as context_probe.py. One JSON line.
Usage: python detach_probe.py MODE"""
from __future__ import annotations

import json
import sys
import time

mode = sys.argv[1]
MODES = ("control", "early_through", "at_begin", "sleep", "own", "step")
assert mode in MODES, mode
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


if mode != "control":
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


def own_work() -> None:
    """graphmode's own CUDA calls after a detach: its empty graph (tracer.script._own_graph), a stream capture of a
    memset of its own, instantiated and launched, a memset and an event record."""
    from cuda.bindings import driver as cu

    from graphmode.tracer.script import _own_graph

    _own_graph()
    _, stream = cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)
    _, buf = cu.cuMemAlloc(1 << 20)
    cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    cu.cuMemsetD8Async(buf, 1, 1 << 20, stream)
    _, graph = cu.cuStreamEndCapture(stream)
    _, exe = cu.cuGraphInstantiate(graph, 0)
    cu.cuGraphLaunch(exe, stream)
    cu.cuMemsetD8Async(buf, 2, 1 << 20, stream)
    _, ev = cu.cuEventCreate(0)
    cu.cuEventRecord(ev, stream)
    cu.cuStreamSynchronize(stream)
    for d in (lambda: cu.cuGraphExecDestroy(exe), lambda: cu.cuGraphDestroy(graph), lambda: cu.cuEventDestroy(ev),
              lambda: cu.cuMemFree(buf), lambda: cu.cuStreamDestroy(stream)):
        d()


def capture(tok: torch.Tensor, pos: torch.Tensor) -> list[int]:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    pos.fill_(PROMPT)
    torch.cuda.synchronize()
    detach("stop_us")  # here, as the one run (nothing attached otherwise)
    if len(graphs) == 0:
        t_after = ns()
        if mode == "sleep":
            time.sleep(0.05)
        elif mode == "own":
            own_work()
        elif mode == "step":
            step(tok, pos)
            pos.fill_(PROMPT)
            torch.cuda.synchronize()
        out["after_us"] = (ns() - t_after) // 1000
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
    out["E0"] = eager(tok, pos, 40)
    if mode == "early_through":
        detach("stop_us")
    out["U"] = capture(tok, pos)
    out["E1"] = eager(tok, pos, 150)
    out["D"] = capture(tok, pos)
    out["D2"] = capture(tok, pos)
    out["E2"] = eager(tok, pos, 40)
print(json.dumps(out))
