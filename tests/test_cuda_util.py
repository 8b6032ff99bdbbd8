"""tracer.cuda_util's GPU check, against a stand-in for cuda-python's driver module (no GPU here)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from graphmode.tracer import cuda_util


def _driver(init_error: int = 0, count: int = 1) -> tuple[Any, list[str]]:
    called: list[str] = []

    def call(name: str, *result: Any) -> Any:
        def f(*args: Any) -> Any:
            called.append(name)
            return result
        return f

    return types.SimpleNamespace(cuInit=call("cuInit", init_error), cuDeviceGetCount=call("cuDeviceGetCount", 0, count),
                                 cuDevicePrimaryCtxRetain=call("cuDevicePrimaryCtxRetain", 0, object())), called


def test_the_gpu_check_makes_no_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """`graphmode run`'s own process checks the GPU with cuInit and the device count alone: no primary context (which
    would hold GPU memory for the whole of the script's runs); a missing device is the error init_device gives."""
    drv, called = _driver()
    monkeypatch.setattr(cuda_util, "_driver", lambda: drv)
    monkeypatch.setattr(cuda_util, "_DEVICE", None)
    monkeypatch.setattr(cuda_util, "check", lambda result, what: result[1])
    cuda_util.check_device(0)
    assert called == ["cuInit", "cuDeviceGetCount"]
    with pytest.raises(cuda_util.NoGpuError, match="no CUDA device 1"):
        cuda_util.check_device(1)
    drv, called = _driver(init_error=100)
    monkeypatch.setattr(cuda_util, "_driver", lambda: drv)
    with pytest.raises(cuda_util.NoGpuError, match="cuInit failed"):
        cuda_util.check_device(0)
    assert "cuDevicePrimaryCtxRetain" not in called
