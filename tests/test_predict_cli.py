"""`graphmode calibrate` (without a GPU: refusal, and refitting saved measurements) and `graphmode report`
with a cost model and named lines; in-process (CliRunner) and as a subprocess. SYNTHETIC model and
measurements (tests/synthetic_costmodel.py); real dag recording."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from graphmode.analyzers.costmodel import load_model, save_model
from graphmode.cli import app
from graphmode.reports.json_report import load_schema
from synthetic_costmodel import EAGER_GAP_NS, FIRST_GRAPH_EXTRA, MACHINE, NODE_GPU_NS, TRUE, synthetic_model, synthetic_table
from tests.conftest import DATA, ROOT, gpu_unavailable_reason


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_model(synthetic_model(), tmp_path_factory.mktemp("model") / "costmodel-synthetic-gpu.json")


def test_calibrate_from_saved_measurements_needs_no_gpu(tmp_path: Path) -> None:
    raw = tmp_path / "costmodel-synthetic-gpu.measurements.json"
    raw.write_text(json.dumps({"machine": MACHINE, "calibration": {"note": "synthetic"}, "table": synthetic_table(),
                               "node_gpu_ns": NODE_GPU_NS, "eager_gap_ns": EAGER_GAP_NS,
                               "first_graph_probes": [FIRST_GRAPH_EXTRA] * 3}))
    result = CliRunner().invoke(app, ["calibrate", "--from-measurements", str(raw)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = tmp_path / "costmodel-synthetic-gpu.json"
    assert f"cost model written to {out}" in result.output and "Cost model for SYNTHETIC GPU" in result.output
    assert load_model(out).costs["instantiate"].coefficient("kernel") == pytest.approx(TRUE["instantiate"]["kernel"])


def test_calibrate_from_measurements_fits_the_launch_probes_synthetic(tmp_path: Path) -> None:
    """SYNTHETIC launch probes in a measurements file (tracer.launch_probes' rows): the refit model holds each
    launcher's slope and intercept, hand-computed: XLA's matmul probe 10 kernels in 100 us and 40 in 250 us is 5 us a
    kernel and 50 us a call; and the terminal prints the launch-cost table."""
    raw = tmp_path / "costmodel-synthetic-gpu.measurements.json"
    probe = {"framework": "xla", "rows": [{"variant": "gemm", "ops": 8, "kernels": 10, "wall_ns": 100_000.0, "gpu_ns": 5_000.0},
                                          {"variant": "gemm", "ops": 32, "kernels": 40, "wall_ns": 250_000.0, "gpu_ns": 20_000.0}]}
    raw.write_text(json.dumps({"machine": MACHINE, "calibration": {"note": "synthetic"}, "table": synthetic_table(),
                               "node_gpu_ns": NODE_GPU_NS, "eager_gap_ns": EAGER_GAP_NS,
                               "first_graph_probes": [FIRST_GRAPH_EXTRA] * 3, "launch_probes": [probe, probe]}))
    result = CliRunner().invoke(app, ["calibrate", "--from-measurements", str(raw)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    model = load_model(tmp_path / "costmodel-synthetic-gpu.json")
    assert set(model.launch) == {"xla_gemm"} and len(model.launch_probes) == 2
    assert model.launch["xla_gemm"].per_kernel.median == pytest.approx(5_000.0)
    assert model.launch["xla_gemm"].per_call.median == pytest.approx(50_000.0)
    assert "Eager launch cost per framework" in result.output and "xla_gemm" in result.output


def test_calibrate_from_a_file_that_is_not_measurements_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "x.measurements.json"
    bad.write_text("{}")
    result = CliRunner().invoke(app, ["calibrate", "--from-measurements", str(bad)])
    assert result.exit_code == 2 and "not a calibration measurements file" in result.output


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="this machine has a GPU: calibrate would run")
def test_calibrate_without_a_gpu_refuses_with_a_reason() -> None:
    result = CliRunner().invoke(app, ["calibrate"])
    assert result.exit_code == 3 and "no usable GPU" in result.output and "measures the GPU it runs on" in result.output


def test_report_with_a_cost_model_and_lines(model_file: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--detail", str(DATA / "dag-node.gmtrace"), "--cost-model", str(model_file),
                                      "--predict-lines", "dag.py:10-20"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Prediction: what a CUDA graph would cost and save (cost model: SYNTHETIC GPU, driver 0.0)" in text
    assert "no cost model for NVIDIA H200: using the one calibrated on SYNTHETIC GPU" in text
    assert "15 / 18" in text  # nodes / edges of the eager twin's capture
    assert "lines dag.py:10-20: the trace has no call source lines" in text


def test_report_prices_the_dag_as_built_with_the_node_api_unless_told(model_file: Path) -> None:
    """The dag recording's graph was built with cuGraphAdd*Node: by default its eager twin's predicted graph is priced
    as a node-API build; --predict-build capture prices a capture; a value it does not know is refused."""
    def report(*extra: str) -> str:
        result = CliRunner().invoke(app, ["report", "--detail", str(DATA / "dag-node.gmtrace"), "--cost-model", str(model_file), *extra],
                                    env={"COLUMNS": "250"})
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())

    assert "(node-API build)" in report() and "priced as built with the explicit node API" in report()
    assert "(node-API build)" not in report("--predict-build", "capture")
    result = CliRunner().invoke(app, ["report", str(DATA / "dag-node.gmtrace"), "--predict-build", "nodes"])
    assert result.exit_code == 2 and "choose one of auto, capture, node_api" in result.output


def test_report_refuses_a_bad_line_spec_and_a_missing_model(model_file: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(DATA / "dag-node.gmtrace"), "--predict-lines", "dag.py"])
    assert result.exit_code == 2 and "FILE:LINE or FILE:FIRST-LAST" in result.output
    result = CliRunner().invoke(app, ["report", str(DATA / "dag-node.gmtrace"), "--cost-model", str(tmp_path / "none.json")])
    assert result.exit_code == 2 and "no such cost model file" in result.output


def test_report_json_with_a_model_as_a_subprocess(model_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", "--detail", str(DATA / "chain-node.gmtrace"), "--cost-model", str(model_file),
                           "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    regions = {r["mode"]: r for r in doc["prediction"]["regions"]}
    assert regions["eager"]["graph"]["nodes"] == 20 and regions["eager"]["break_even"] >= 1
    assert [b["kind"] for b in regions["eager_sync_each"]["breakers"]] == ["sync"]
