"""Two threads, each on its own CUDA stream, run the same kind of work at the same time: an eager
loop, then replays of their own CUDA graph. Their launches interleave in time; graphmode keeps each
thread's iterations apart by stream.

    graphmode run examples/two_threads.py
"""

import threading

import torch

torch.manual_seed(0)
barrier = threading.Barrier(2)


def worker(width: int, results: dict) -> None:
    stream = torch.cuda.Stream()
    w = torch.randn(width, width, device="cuda") / width**0.5
    x = torch.randn(32, width, device="cuda")
    with torch.cuda.stream(stream):
        def step() -> torch.Tensor:
            return torch.tanh(torch.relu(x @ w) @ w)  # LINE: worker step

        step()
        stream.synchronize()
        barrier.wait()
        for _ in range(50):
            eager = step()
            stream.synchronize()
        g = torch.cuda.CUDAGraph()
        barrier.wait()  # capture one thread at a time: the other waits
        if width == 256:
            with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):  # CAPTURE
                out = step()
            barrier.wait()
        else:
            barrier.wait()
            with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):  # CAPTURE
                out = step()
        barrier.wait()
        for _ in range(50):
            g.replay()
            stream.synchronize()
        results[width] = bool(torch.allclose(eager, out, atol=1e-4))


results: dict = {}
threads = [threading.Thread(target=worker, args=(width, results)) for width in (256, 384)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert results == {256: True, 384: True}, results
print("ok: two threads, two streams, two graphs")
