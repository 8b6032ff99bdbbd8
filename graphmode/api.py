"""The Python API: `graphmode.trace`, `graphmode.compare`. Glue only; the work is in tracer/ and analyzers/.

Each function imports what it uses (the recording stack, the analyzers, the reports) when it is called: reaching
`graphmode.trace` or `graphmode.TraceHandle` loads this module, not numpy, DuckDB or the analyzers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmode.tracer.errors import NoGpuError, no_gpu_message

if TYPE_CHECKING:
    from graphmode.comparison import Comparison


def gpu_unavailable() -> str | None:
    """None when cupti-python loads and a GPU is usable, else why not (one line)."""
    try:
        import cupti  # noqa: F401
    except ImportError as e:
        return f"cupti-python is not importable ({e})"
    from graphmode.tracer.cuda_util import init_device

    try:
        init_device()
    except NoGpuError as e:
        return str(e).splitlines()[0]
    return None


def require_gpu(what: str) -> None:
    """Raises NoGpuError whose message is the command line's one line (no chained traceback)."""
    reason = gpu_unavailable()
    if reason is not None:
        raise NoGpuError(no_gpu_message(reason, what)) from None


@dataclass
class TraceHandle:
    """What `with graphmode.trace(...) as t:` gives: the file, then its analysis once the block ends."""

    path: Path
    _analysis: Any = field(default=None, repr=False)

    def load(self) -> Any:
        from graphmode.tracer.store import load

        return load(self.path)

    @property
    def analysis(self) -> Any:
        if self._analysis is None:
            from graphmode.analyzers import analyze

            with self.load() as t:
                self._analysis = analyze(t)
        return self._analysis

    def report(self) -> None:
        from graphmode.reports.terminal import print_report

        print_report(self.analysis)

    def _repr_html_(self) -> str:
        from graphmode.views import notebook_html

        return notebook_html(self.analysis)


@contextmanager
def trace(out: str | os.PathLike[str] = "graphmode-trace.gmtrace", detail: str = "graph",
          launch_sources: bool = False, profile: bool = False, sources: bool = False) -> Iterator[TraceHandle]:
    """Traces the CUDA work of a region of your program into `out`.

        with graphmode.trace("step.gmtrace") as t:
            for _ in range(100):
                g.replay()
        t.report()

    By default the region is recorded as `graphmode run`'s measuring run (what the headline needs, at
    little cost). `detail='node'`, `launch_sources`, `profile` or `sources` (the line that created each
    graph node) record more in the same run, which slows it; the report says which figures that affects.
    An exception inside the block is recorded (status 'failed') and re-raised; the trace is written.
    A graph built before the block is measured by its replays; what it cost to build is not in the trace (put the
    capture inside the block, or use `graphmode run`). Replays are recorded node by node, which CUDA graphs built
    before or replayed after the block survive (graph-level records crashed them) and which reads them up to 5% slower.
    """
    require_gpu("graphmode.trace()")
    from graphmode.tracer.run_configs import region_config
    from graphmode.tracer.script import ScriptTracer, _exception_info

    config = region_config(detail, launch_sources, profile, sources)
    tracer = ScriptTracer(out, config, workload="region")
    handle = TraceHandle(tracer.out)  # a rank of a job writes <stem>.rank<R>.gmtrace
    tracer.start()
    try:
        yield handle
    except KeyboardInterrupt as e:
        tracer.stop("interrupted", "interrupted by the user (Ctrl-C)", {"script": {"exception": _exception_info(e)}})
        raise
    except BaseException as e:
        tracer.stop("failed", f"the traced block raised {type(e).__name__}: {e}", {"script": {"exception": _exception_info(e)}})
        raise
    else:
        tracer.stop("complete")


def compare(step: Callable[..., Any], iters: int = 200, warmup: int = 10, out: str | os.PathLike[str] | None = None,
            detail: str = "graph", framework: str = "auto", outputs: Callable[[], Any] | None = None) -> Comparison:
    """Runs `step` eagerly and as a captured CUDA graph, checks both compute the same, and says what the graph buys.

    PyTorch: `step()` takes no argument and returns its output tensors (captured with torch.cuda.graph).
    Raw CUDA: `step(stream)` launches its work into the CUstream it is given (captured with
    cuStreamBeginCapture); pass `outputs=lambda: [...]` (host arrays) to have the outputs compared.
    The trace is written to `out` (default: graphmode-compare.gmtrace).
    """
    require_gpu("graphmode.compare()")
    # lazy: the analyzers, reports and the GPU stack load when asked for, not on `import graphmode`
    from graphmode.analyzers import analyze
    from graphmode.analyzers.comparison import comparison
    from graphmode.comparison import renderable
    from graphmode.tracer.compare import record_comparison
    from graphmode.tracer.store import load

    path = Path(out or "graphmode-compare.gmtrace")
    record_comparison(step, path, iters=iters, warmup=warmup, detail=detail, framework=framework, outputs=outputs)
    with load(path) as t:
        return renderable(comparison(analyze(t), t.meta.get("results_verified", {}), t.meta.get("verification", {}), path))
