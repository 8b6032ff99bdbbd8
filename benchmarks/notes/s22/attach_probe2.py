"""Session 22, call 5: a graph instantiated inside a traced region, replayed after CUPTI detached (call 4: under
GRAPH_TRACE a timm ViT's replay after the session stopped hit an illegal memory access).
One variant per process: python3 attach_probe2.py VARIANT; prints 'ok VARIANT' when the replays after the region ran
and matched the replay made inside it.
  region_torch       torch.cuda.graph of a small chain inside graphmode.trace() (region_config: no GRAPH_TRACE)
  measure_torch      the same inside a ScriptTracer with the measuring run's configuration (GRAPH_TRACE), as
                     graphmode.trace() recorded before this session
"""

from __future__ import annotations

import faulthandler
import sys
import tempfile

import torch

import graphmode
from graphmode.tracer.run_configs import MEASURE
from graphmode.tracer.script import ScriptTracer

faulthandler.enable()
variant = sys.argv[1]
out = f"{tempfile.mkdtemp()}/t.gmtrace"
x = torch.ones(1 << 16, device="cuda")
y = torch.zeros_like(x)


def capture():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y.copy_(x * 2 + 1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y.copy_(x * 2 + 1)
    return g


if variant == "region_torch":
    with graphmode.trace(out):
        g = capture()
        g.replay()
else:
    t = ScriptTracer(out, MEASURE, workload="region")
    t.start()
    g = capture()
    g.replay()
    t.stop("complete")
torch.cuda.synchronize()
x.fill_(3.0)
for _ in range(20):
    g.replay()
torch.cuda.synchronize()
assert torch.all(y == 7.0).item(), y[:4]
print("ok", variant, flush=True)
