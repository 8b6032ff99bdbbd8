"""Kernel names demangled (reports/names.py), in the terminal report too."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from graphmode.analyzers import analyze
from graphmode.cli import app
from graphmode.reports.names import NAME_WIDTH, cell, demangle, full_names, printable, short_name, shorten
from graphmode.reports.terminal import print_report
from graphmode.tracer.store import load

DATA = Path(__file__).parent / "data"
ROOT = DATA.parent.parent
SCRIPTS = DATA / "scripts"
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
    assert short_name("x" * 100, 20) == "x" * 10 + "…" + "x" * 9  # the middle elided: start and end kept


def test_local_names_demangle() -> None:
    with load(SCRIPTS / "torch_cudagraph.gmtrace") as trace:
        (name,) = trace.rows("SELECT DISTINCT name FROM gpu_spans WHERE starts_with(name, ?)", [TANH_PREFIX])[0]
    assert demangle(name).startswith("void at::native::vectorized_elementwise_kernel<4, "
                                     "at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}")
    short = short_name(name, 60)
    assert len(short) == 60 and short.startswith("at::native::vectorized_elemen") and "…" in short and not short.endswith("…")


def test_terminal_report_prints_demangled_names() -> None:
    console = Console(record=True, width=250, file=io.StringIO())
    print_report(analyze(load(SCRIPTS / "torch_cudagraph.gmtrace")), console=console)
    text = console.export_text()
    # 'at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3ul>>' (86 characters):
    # its first 30 and last 29 around the '…'
    assert short_name(ADD, 60) == "at::native::vectorized_element…dd<float>, array<char*, 3ul>>"
    assert short_name(ADD, 60) in text
    assert "_ZN2at6native" not in text


# ---- names a terminal would act on, and names too long for a table ------------------------------------------

EVIL = "evil\x1b[31mRED\x00nul\x07bel\x9bcsi\u202eabc"  # SYNTHETIC: ESC (an SGR sequence), NUL, BEL, C1 CSI, RLO
LONG = "k_" + "k" * 10_000 + "_END"  # SYNTHETIC: a 10,006-character kernel name


def test_printable_writes_out_what_a_terminal_would_act_on() -> None:
    assert printable(EVIL) == "evil\\x1b[31mRED\\x00nul\\x07bel\\x9bcsi\\u202eabc"
    assert printable("a\tb\nc\rd\x7f") == "a\\tb\\nc\\rd\\x7f"
    assert printable(os.fsdecode(b"run-\xff.gmtrace")) == "run-\\xff.gmtrace"  # an undecodable byte of a file name
    assert printable("résumé ∑ 漢字 →") == "résumé ∑ 漢字 →"  # printable Unicode stays


def test_shorten_keeps_the_start_and_the_end() -> None:
    assert shorten("abcdefghij", 10) == "abcdefghij"
    assert shorten("abcdefghij", 5) == "ab…ij"
    assert shorten(LONG, 60) == "k_" + "k" * 28 + "…" + "k" * 25 + "_END" and len(shorten(LONG, 60)) == 60
    assert cell(EVIL + LONG) == shorten(printable(EVIL + LONG), NAME_WIDTH)
    assert short_name(LONG, 60) == shorten(LONG, 60) and short_name(EVIL, 60) == printable(EVIL)
    with full_names():
        assert cell(LONG) == LONG and short_name(EVIL + LONG) == printable(EVIL + LONG)
    assert cell(LONG) != LONG  # the option lasts for its block only


def _injected(tmp_path: Path) -> Path:
    """tests/data/dag-node.gmtrace (a real recording) copied, with names INJECTED by this test: its kernel
    'branch_step' renamed to EVIL + LONG, its graph labelled with an OSC sequence (which retitles a terminal)."""
    import shutil

    import duckdb

    path = tmp_path / "injected.gmtrace"
    shutil.copy(DATA / "dag-node.gmtrace", path)
    with duckdb.connect(str(path)) as con:
        for table in ("gpu_spans", "graph_nodes"):
            con.execute(f"UPDATE {table} SET name = ? WHERE name = 'branch_step'", [EVIL + LONG])
        con.execute("UPDATE graphs SET label = ?", ["label\x1b]0;pwned\x07" + "L" * 5_000])
    return path


def _unprintable(text: str) -> list[str]:
    return sorted({repr(c) for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E})


def test_the_report_escapes_and_shortens_injected_names(tmp_path: Path) -> None:
    path = _injected(tmp_path)
    plain = CliRunner().invoke(app, ["report", str(DATA / "dag-node.gmtrace"), "--detail"], env={"COLUMNS": "120"})
    result = CliRunner().invoke(app, ["report", str(path), "--detail"], env={"COLUMNS": "120"})
    assert plain.exit_code == 0 and result.exit_code == 0, result.output
    text = result.output
    assert _unprintable(text) == []  # no ESC, NUL, BEL, C1 or bidi character reaches the terminal
    assert "evil\\x1b[31mRED\\x00nul" in text and "label\\x1b]0;pwned\\x07" in text  # written out instead
    # the 10k name and the 5k label were 85 and 40 lines of the report; shortened, the report is as long as the original's
    assert len(text.splitlines()) <= len(plain.output.splitlines()) + 2
    assert max(len(line) for line in text.splitlines()) <= 120 and text.count("k") < 2_000
    assert "kkkkkkkkkk_END" in text  # the end of the name is kept
    whole = CliRunner().invoke(app, ["report", str(path), "--full-names", "--detail"], env={"COLUMNS": "120"})
    assert whole.exit_code == 0 and _unprintable(whole.output) == []
    assert whole.output.count("k") > 10_000  # the whole name, behind the option


def test_the_report_escapes_injected_names_as_a_subprocess(tmp_path: Path) -> None:
    path = _injected(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(path), "--detail"], cwd=ROOT, capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("utf-8")
    assert _unprintable(out) == [] and "evil\\x1b[31mRED\\x00nul" in out and out.count("k") < 2_000


def test_the_short_report_escapes_an_injected_file_name(tmp_path: Path) -> None:
    """tests/data/scripts/torch_cudagraph.gmtrace (real) with the line that captured its graph INJECTED: a file
    name holding ESC. The short report (print_report(detail=False)) names that line under its table."""
    import shutil

    import duckdb

    path = tmp_path / "injected.gmtrace"
    shutil.copy(SCRIPTS / "torch_cudagraph.gmtrace", path)
    with duckdb.connect(str(path)) as con:
        for table in ("api_calls", "graph_nodes"):
            con.execute(f"UPDATE {table} SET source = ? WHERE source <> ''", ["/x/tr\x1bain.py:42 step"])
    console = Console(record=True, width=120, file=io.StringIO())
    with load(path) as trace:
        print_report(analyze(trace), console=console, detail=False)
    text = console.export_text()
    assert _unprintable(text) == [] and "captured at tr\\x1bain.py:42" in text
