"""Trace store round trip, bad files, and the `info` / `demo` / `bench` commands without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmode.cli import app, bundled_recording
from tests.conftest import DATA, ROOT, gpu_unavailable_reason
from graphmode.tracer.schema import SCHEMA_VERSION, TABLES
from graphmode.tracer.errors import StorageError
from graphmode.tracer.store import PassInfo, TraceError, TraceWriter, load
from graphmode.tracer.validate import validate_trace

runner = CliRunner()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_round_trip_keeps_columns_and_meta(tmp_path: Path) -> None:
    """Synthetic: a handful of rows written and read back unchanged."""
    path = tmp_path / "rt.gmtrace"
    with TraceWriter(path, {"workload": "synthetic", "params": {"n": 3}}) as w:
        w.add_pass(PassInfo(0, "traced", "graph", 100, 900, 0, "complete"))
        w.append("api_calls", {"pass_id": [0, 0], "correlation_id": [7, 8], "api": ["driver", "driver"],
                               "name": ["cuLaunchKernel", "cuGraphLaunch"], "category": ["kernel_launch", "graph_launch"],
                               "start_ns": [110, 300], "end_ns": [120, 310], "thread_id": [5, 5]})
        w.append("gpu_spans", {"pass_id": [0], "kind": ["kernel"], "name": ["k<1>"], "start_ns": [130],
                               "end_ns": [150], "correlation_id": [7], "grid_x": [4]})
    t = load(path)
    assert t.meta["workload"] == "synthetic" and t.meta["params"] == {"n": 3}
    assert t.meta["status"] == "complete" and t.meta["schema_version"] == SCHEMA_VERSION
    assert t.passes == [PassInfo(0, "traced", "graph", 100, 900, 0, "complete")]
    spans = t.table("gpu_spans")
    assert list(spans["name"]) == ["k<1>"] and int(spans["grid_x"][0]) == 4 and int(spans["graph_id"][0]) == 0
    api = t.table("api_calls", pass_id=0)
    assert list(api["correlation_id"]) == [7, 8] and list(api["source"]) == ["", ""]
    assert validate_trace(t) == []


def test_writer_rejects_unknown_columns(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "x.gmtrace") as w:
        with pytest.raises(ValueError, match="no column"):
            w.append("gpu_spans", {"colour": ["red"]})
        with pytest.raises(ValueError, match="different lengths"):
            w.append("gpu_spans", {"name": ["a", "b"], "start_ns": [1]})


def test_exception_in_writer_block_marks_trace_failed_and_keeps_rows(tmp_path: Path) -> None:
    path = tmp_path / "f.gmtrace"
    with pytest.raises(RuntimeError):
        with TraceWriter(path) as w:
            w.append("markers", {"pass_id": [0], "kind": ["phase"], "name": ["eager"], "start_ns": [1], "end_ns": [2]})
            raise RuntimeError("workload blew up")
    t = load(path)
    assert t.meta["status"] == "failed" and "workload blew up" in t.meta["status_reason"]
    assert t.count("markers") == 1


def test_validator_finds_broken_invariants(tmp_path: Path) -> None:
    """Synthetic: a span that ends before it starts, an uncorrelated span, an unknown graph id."""
    path = tmp_path / "bad.gmtrace"
    with TraceWriter(path) as w:
        w.add_pass(PassInfo(0, "traced", "node", 0, 100, 0, "complete"))
        w.append("gpu_spans", {"pass_id": [0, 0], "kind": ["kernel", "kernel"], "name": ["a", "b"],
                               "start_ns": [10, 30], "end_ns": [5, 40], "correlation_id": [1, 2], "graph_id": [0, 9]})
        w.append("api_calls", {"pass_id": [0], "correlation_id": [1], "start_ns": [1], "end_ns": [2]})
    problems = validate_trace(load(path))
    assert any("end before they start" in p for p in problems)
    assert any("matches no API call" in p for p in problems)
    assert any("graph id that is not in the recorded graphs" in p for p in problems)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not a graphmode trace"),
        (b"just some text that is not a database at all", "not a graphmode trace"),
    ],
)
def test_foreign_files_give_one_line_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "foreign.gmtrace"
    path.write_bytes(content)
    with pytest.raises(TraceError, match=message):
        load(path)


def test_missing_truncated_other_duckdb_and_newer_schema(tmp_path: Path) -> None:
    import duckdb

    with pytest.raises(TraceError, match="no such file"):
        load(tmp_path / "nope.gmtrace")
    real = (DATA / "chain-graph.gmtrace").read_bytes()
    cut = tmp_path / "cut.gmtrace"
    cut.write_bytes(real[: len(real) // 3])
    with pytest.raises(TraceError, match="damaged or truncated"):
        load(cut)
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE sales (x INTEGER)")
    con.close()
    with pytest.raises(TraceError, match="not a graphmode trace"):
        load(other)
    newer = tmp_path / "newer.gmtrace"
    with TraceWriter(newer, {"schema_version": SCHEMA_VERSION + 1}):
        pass
    with pytest.raises(TraceError, match="newer than this graphmode reads"):
        load(newer)


def test_info_on_real_fixture() -> None:
    res = runner.invoke(app, ["info", str(DATA / "dag-node.gmtrace")])
    assert res.exit_code == 0, res.output
    assert "NVIDIA H200" in res.output and "trace passes the validator" in res.output
    for table in TABLES:
        if table != "meta":
            assert table in res.output


def test_info_on_bad_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gmtrace"
    bad.write_text("hello")
    res = runner.invoke(app, ["info", str(bad)])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and "not a graphmode trace" in res.output


def test_info_subprocess_on_every_fixture() -> None:
    for path in sorted(DATA.glob("*.gmtrace")):
        proc = subprocess.run([sys.executable, "-m", "graphmode", "info", str(path)], cwd=ROOT, env=_env(),
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "trace passes the validator" in proc.stdout


def test_bundled_recording_is_real_and_valid() -> None:
    t = load(bundled_recording())
    assert t.meta["gpu_name"] == "NVIDIA H200" and t.meta["workload"] == "chain"
    assert t.meta["status"] == "complete" and validate_trace(t) == []
    assert [p.detail for p in t.passes] == ["timing", "node"]


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU is present: demo would run the benchmark")
def test_demo_without_gpu_says_it_shows_a_recording() -> None:
    proc = subprocess.run([sys.executable, "-m", "graphmode", "demo"], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "No usable GPU here" in proc.stdout and "bundled real recording" in proc.stdout
    assert "NVIDIA H200" in proc.stdout and "pays back after" in proc.stdout


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU is present")
def test_bench_without_gpu_fails_and_points_to_demo(tmp_path: Path) -> None:
    out = tmp_path / "x.gmtrace"
    proc = subprocess.run([sys.executable, "-m", "graphmode", "bench", "chain", "--out", str(out)], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3
    assert "no usable GPU" in proc.stderr and "graphmode demo" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_bench_rejects_bad_options() -> None:
    res = runner.invoke(app, ["bench", "spiral"])
    assert res.exit_code == 2 and "unknown workload 'spiral'" in res.output
    res = runner.invoke(app, ["bench", "chain", "--detail", "everything"])
    assert res.exit_code == 2 and "--detail must be 'graph' or 'node'" in res.output


def test_help_is_instant_and_imports_no_gpu_stack() -> None:
    """`graphmode --help` loads the CLI and nothing heavy: no GPU stack, no DuckDB, plotly, numpy or analyzer."""
    heavy = ("cupti", "cuda", "duckdb", "plotly", "numpy", "pyinstrument", "perfetto")
    code = ("import sys, json, runpy; sys.argv = ['graphmode', '--help']\n"
            "try:\n    runpy.run_module('graphmode', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} "
            "or m.startswith(('graphmode.analyzers', 'graphmode.reports', 'graphmode.api')))))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_tracer_errors_show_in_info_and_the_report() -> None:
    """Real recording: cupy_graph's tracer could not read two graphs' topology at destruction (meta.callback_errors)."""
    path = DATA / "scripts" / "cupy_graph.gmtrace"
    errors = load(path).meta["callback_errors"]
    assert len(errors) == 2 and all("cuGraphGetNodes failed" in e for e in errors)
    res = runner.invoke(app, ["info", str(path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "the tracer hit 2 error(s) while recording" in res.output
    assert all(e in res.output for e in errors)
    res = runner.invoke(app, ["report", str(path)], env={"COLUMNS": "300"})
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "warning: the tracer hit 2 error(s) while recording, so some data is missing" in text
    doc = json.loads(runner.invoke(app, ["report", "--json", str(path)]).output)
    (errs,) = [w for w in doc["warnings"] if w["kind"] == "tracer_errors"]  # the tracer's own text among its values
    assert errs["values"]["count"] == 2 and any("cuGraphGetNodes failed" in e for e in errs["values"]["errors"])
    assert errs["text"].startswith("the tracer hit 2 error(s) while recording, so some data is missing")


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU is present")
@pytest.mark.parametrize("call", ["graphmode.compare(lambda: None)", "graphmode.trace('x.gmtrace').__enter__()"])
def test_python_api_without_gpu_raises_the_cli_message(tmp_path: Path, call: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import graphmode; {call}"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("graphmode.tracer.errors.NoGpuError: no usable GPU: ")
    assert "needs an NVIDIA GPU with CUDA and CUPTI" in last and "graphmode demo" in last
    # one exception, not a chain of the driver's errors
    assert proc.stderr.count("Traceback") == 1 and "During handling" not in proc.stderr and "direct cause" not in proc.stderr
    assert not (tmp_path / "x.gmtrace").exists()
    import graphmode
    from graphmode import NoGpuError

    with pytest.raises(NoGpuError) as e:
        eval(call, {"graphmode": graphmode})  # the same call, in this process
    assert str(e.value) == last.split(": ", 1)[1] and e.value.__cause__ is None


def test_every_graphmode_error_is_one_hierarchy() -> None:
    from graphmode import GraphmodeError, TraceError as TopTraceError
    from graphmode.tracer.cuda_util import CudaError, NoGpuError
    from graphmode.tracer.errors import OutputPathError, StorageError, TraceInUseError

    for cls in (TraceError, TraceInUseError, OutputPathError, NoGpuError, CudaError, StorageError):
        assert issubclass(cls, GraphmodeError)
    assert TopTraceError is TraceError and issubclass(TraceError, ValueError) and issubclass(NoGpuError, RuntimeError)
    assert {NoGpuError.exit_code, CudaError.exit_code, TraceError.exit_code} == {3, 1, 2}


def test_load_does_not_parse_a_version_1_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real recording (schema 1) whose meta.cpu_profile is a 46.5 MB JSON string: load() leaves it alone."""
    parsed: list[int] = []
    original = json.loads

    def spy(text: str | bytes, *args: object, **kwargs: object) -> object:
        parsed.append(len(text))
        return original(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json, "loads", spy)
    with load(DATA / "legacy" / "torch_compile_v1.gmtrace") as t:  # recorded before the profile tables
        assert t.legacy_profile and "cpu_profile" not in t.meta and t.meta["schema_version"] == 1
        assert max(parsed) < 10_000
        from graphmode.tracer.profile_store import profile_summary_line

        assert profile_summary_line(t).startswith("pyinstrument session stored as one 46.5 MB JSON string")
        assert max(parsed) < 10_000  # the summary line measures the string without parsing it


def test_a_trace_whose_name_is_not_utf8_opens_and_exports(tmp_path: Path) -> None:
    """A file name with byte 0xff (a Latin-1 'ÿ'; Python holds it as a lone surrogate, os.fsdecode) is a
    name DuckDB cannot take: the trace used to be called damaged. It must read as the same file does."""
    import shutil

    name = os.fsdecode(b"run-\xff.gmtrace")
    odd = tmp_path / name
    shutil.copy(DATA / "dag-graph.gmtrace", odd)
    with load(DATA / "dag-graph.gmtrace") as same, load(odd) as t:
        assert t.path == odd and t.meta == same.meta and t.count("gpu_spans") == same.count("gpu_spans") > 0
        assert validate_trace(t) == []
    report = runner.invoke(app, ["report", str(odd), "--json"])
    assert report.exit_code == 0, report.output
    assert json.loads(report.output)["graph_costs"][0]["total_ns"] == pytest.approx(506_700, abs=100)  # 506.7 us, as the fixture
    text = runner.invoke(app, ["report", str(odd)], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "costs 506.7 us to build, pays back after 9 replays" in text.output
    assert "run-\\xff.gmtrace" in text.output  # the byte written out: the name cannot be printed as it is
    info = runner.invoke(app, ["info", str(odd)], env={"COLUMNS": "200"})
    assert info.exit_code == 0 and "trace passes the validator" in info.output and "run-\\xff.gmtrace" in info.output
    junk = tmp_path / os.fsdecode(b"junk-\xff.gmtrace")
    junk.write_bytes(b"not a trace")
    bad = runner.invoke(app, ["report", str(junk)])
    assert bad.exit_code == 2 and "junk-\\xff.gmtrace: not a graphmode trace (not a DuckDB file)" in bad.output
    perfetto = runner.invoke(app, ["export", str(odd), "-f", "perfetto"])
    assert perfetto.exit_code == 0 and (tmp_path / name.replace(".gmtrace", ".pftrace")).stat().st_size > 0
    parquet = runner.invoke(app, ["export", str(odd), "-f", "parquet"])
    assert parquet.exit_code == 0, parquet.output
    assert len(list((tmp_path / name.replace(".gmtrace", "_parquet")).glob("*.parquet"))) == len(TABLES)


def test_a_new_trace_whose_name_is_not_utf8_is_refused_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / os.fsdecode(b"new-\xff.gmtrace")
    with pytest.raises(StorageError, match="its name is not UTF-8, which DuckDB cannot open; choose a UTF-8 name"):
        TraceWriter(out)
    assert not out.exists()
