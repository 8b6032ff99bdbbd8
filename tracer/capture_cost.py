"""What the one traced run's CUPTI session adds to a torch.cuda.graph capture, measured in the program's own process
after it ended (issue 29; docs/metrics.md, "What tracing adds, taken off").

A capture under the one run's session took 1.8-2.3x its untraced time on the H200 (benchmarks/notes/s25, call 4: a timm
ViT's forward at batch 2, 3.4 ms untraced, 6.3 ms traced, in one process). The analysis takes that cost off each graph
the run captured (analyzers.tracer_cost.capture_correction). A calibration made on another machine or another day
(`graphmode calibrate`, the bundled model) read it 2-4x too high there: per captured kernel 19.3 us against 4.7 us on
the machine of that call, so that the ViT's captures were read at 0.65-0.73x their untraced processes'. The cost also
depends on what is captured: the ViT's kernels (GEMMs) cost more each than a chain of pointwise adds.

So a run that captured graphs in a PyTorch program measures it itself, after the program ended and the run's own
session stopped: a throwaway session with the run's configuration attached, captures of a chain of pointwise adds and
of a chain of small matmuls (library kernels) at two lengths, then the same captures with CUPTI detached; twice, in
turn (attached, detached, attached, detached), so that drift falls on both. The records of the throwaway session are
never read. The analysis fits per graph and per captured kernel of each kind (analyzers.tracer_cost.run_capture_costs).
About 0.3-0.6 s of the run's wall time.
"""

from __future__ import annotations

import time
from typing import Any

SIZES = (8, 32)  # captured kernels per graph
CAPTURES = 4  # timed captures per variant and size, after one untimed
ROUNDS = 2  # attached then detached, ROUNDS times
VARIANTS = ("pointwise", "library")


def _chains(torch: Any) -> dict[str, Any]:
    y = torch.zeros(1 << 14, device="cuda")
    a = torch.randn(64, 64, device="cuda")
    b = torch.randn(64, 64, device="cuda")

    def pointwise(k: int) -> None:
        for _ in range(k):
            y.add_(1.0)

    def library(k: int) -> None:
        x = a
        for _ in range(k):
            x = torch.mm(x, b)  # cuBLAS: a library kernel (analyzers.counterfactual.LIBRARY_KERNEL)

    return {"pointwise": pointwise, "library": library}


def _captures(torch: Any, chains: dict[str, Any], stream: Any) -> dict[str, dict[str, list[int]]]:
    """Host time of each timed capture (capture and instantiation, synchronized), per variant and size (ns)."""
    out: dict[str, dict[str, list[int]]] = {}
    for name in VARIANTS:
        fn = chains[name]
        for k in SIZES:
            times = []
            for i in range(CAPTURES + 1):
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                t0 = time.perf_counter_ns()
                with torch.cuda.graph(g, stream=stream):
                    fn(k)
                torch.cuda.synchronize()
                if i:
                    times.append(time.perf_counter_ns() - t0)
                del g
            out.setdefault(name, {})[str(k)] = times
    return out


def measure(session_kwargs: dict[str, Any]) -> dict[str, Any]:
    """{'sizes', 'rounds': [{'attached': {variant: {size: [ns]}}, 'detached': ...}], 'attach_ns'} or {'error': why}.
    Call with the run's own session stopped (detached): it attaches and detaches a session of its own."""
    from graphmode.tracer.cupti_session import CuptiSession

    try:
        import torch

        chains = _chains(torch)
        stream = torch.cuda.Stream()
        with torch.no_grad():
            for name in VARIANTS:  # the kernels loaded and cuBLAS's handle made before anything is timed
                chains[name](2)
        torch.cuda.synchronize()
        rounds = []
        for _ in range(ROUNDS):
            session = CuptiSession(**session_kwargs)
            session.start()
            try:
                with torch.no_grad():
                    attached = _captures(torch, chains, stream)
            finally:
                session.stop()  # detached (cuptiFinalize); its records are never read
            with torch.no_grad():
                detached = _captures(torch, chains, stream)
            rounds.append({"attached": attached, "detached": detached})
        return {"sizes": list(SIZES), "captures": CAPTURES, "rounds": rounds}
    except Exception as e:  # the run's records are written already: a failed measurement costs them nothing
        return {"error": f"{type(e).__name__}: {e}"}
