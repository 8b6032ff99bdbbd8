"""A capture that fails: `.item()` synchronises with the host, which a capturing stream forbids.

    graphmode run examples/broken_capture.py      # exits 1; the report names the call and the line
"""

import torch

x = torch.randn(1024, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    y = x * 2
torch.cuda.current_stream().wait_stream(side)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
    scale = y.sum().item()  # BREAKS: host sync inside capture
    z = y / scale
