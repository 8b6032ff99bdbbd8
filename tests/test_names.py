"""Kernel names demangled (reports/names.py), in the terminal report too."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from graphmode.reports.names import demangle, short_name
from graphmode.reports.terminal import print_report
from graphmode.tracer.store import load

SCRIPTS = Path(__file__).parent / "data" / "scripts"
# A kernel name as CUPTI recorded it in tests/data/scripts/torch_cudagraph.gmtrace (PyTorch's a + b).
ADD = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"
# One with a lambda in a function (a local name): pure-Python demanglers give up on these.
TANH_PREFIX = "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16tanh_kernel_cuda"


def test_demangle_gives_the_c_plus_plus_name() -> None:
    assert demangle(ADD) == ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                             "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    assert short_name(ADD) == "at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3ul>>"


def test_names_that_are_not_mangled_stay_as_they_are() -> None:
    for name in ("triton_poi_fused_add_gelu_1", "memcpy HtoD", "cupy_add__float32_float_float32", "_Znot_a_name", ""):
        assert demangle(name) == name
    assert short_name("x" * 100, 20) == "x" * 19 + "…"


def test_local_names_demangle() -> None:
    with load(SCRIPTS / "torch_cudagraph.gmtrace") as trace:
        (name,) = trace.rows("SELECT DISTINCT name FROM gpu_spans WHERE starts_with(name, ?)", [TANH_PREFIX])[0]
    assert demangle(name).startswith("void at::native::vectorized_elementwise_kernel<4, "
                                     "at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}")
    assert len(short_name(name, 60)) == 60 and short_name(name, 60).endswith("…")


def test_terminal_report_prints_demangled_names() -> None:
    console = Console(record=True, width=250, file=io.StringIO())
    print_report(load(SCRIPTS / "torch_cudagraph.gmtrace"), console=console)
    text = console.export_text()
    assert short_name(ADD, 60) == "at::native::vectorized_elementwise_kernel<4, CUDAFunctor_ad…"
    assert short_name(ADD, 60) in text
    assert "_ZN2at6native" not in text
