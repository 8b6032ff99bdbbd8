"""torch.compile(mode="reduce-overhead") records CUDA graphs itself (cudagraph trees); a new input
shape makes it record again.

    graphmode run examples/torch_compile.py
"""

import torch


def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(a @ b) + a.sum(dim=0, keepdim=True)


fc = torch.compile(f, mode="reduce-overhead")
b = torch.randn(256, 256, device="cuda")
for n in (64, 64, 128):  # the third call has a new shape: re-recording
    a = torch.randn(n, 256, device="cuda")
    for _ in range(50):
        out = fc(a, b)
    torch.cuda.synchronize()
    assert torch.allclose(out, f(a, b), rtol=1e-3, atol=1e-3)
print("ok")
