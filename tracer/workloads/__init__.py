"""Built-in workloads (cuda-python + NVRTC, no framework needed).

A workload owns its device buffers and kernels and exposes, for the runner:
- `eager_modes`: the eager variants it can run, each a callable step that launches one iteration's
  work and waits for it;
- `build_graph()`: builds the same work as a CUDA graph (stream capture or explicit node API) and
  returns (graph handle, origin);
- `reset()` and `verify()`: zero the outputs before a mode and check them on the host after it.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from graphmode.tracer.workloads.chain import ChainWorkload
from graphmode.tracer.workloads.dag import DagWorkload


class Workload(Protocol):
    name: str
    params: dict[str, Any]
    stream: Any

    def setup(self) -> None: ...

    def eager_modes(self) -> dict[str, Callable[[], None]]: ...

    def build_graph(self) -> tuple[Any, str]: ...

    def reset(self) -> None: ...

    def verify(self) -> tuple[bool, str]: ...

    def teardown(self) -> None: ...


def make_workload(name: str, **params: Any) -> Workload:
    if name == "chain":
        return ChainWorkload(**params)
    if name == "dag":
        return DagWorkload(**params)
    raise ValueError(f"unknown workload {name!r}; built-in workloads are 'chain' and 'dag'")
