"""CuPy: an elementwise chain captured on a stream and replayed.

    graphmode run examples/cupy_graph.py
"""

import cupy as cp

x = cp.arange(1 << 20, dtype=cp.float32)
stream = cp.cuda.Stream(non_blocking=True)


def step(v: cp.ndarray) -> cp.ndarray:
    for _ in range(10):
        v = v * 1.0001 + 0.5  # LINE: one fused elementwise kernel per iteration
    return v


with stream:
    for _ in range(100):
        eager = step(x)
    stream.synchronize()
    stream.begin_capture()
    captured = step(x)
    graph = stream.end_capture()
    for _ in range(100):
        graph.launch(stream)
    stream.synchronize()

assert cp.allclose(eager, captured)
print("ok")
