"""Perfetto JSON against the trace-event rules, Parquet round trip, the export command line.

Synthetic traces (meta workload='synthetic', tests/synthetic_timeline.py) whose counts are known;
real recordings under tests/data/*.gmtrace when the lead has committed them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic_timeline import STREAM_ID, write_synthetic_trace
from trace_event_rules import check_trace_events
from typer.testing import CliRunner

from graphmode.cli import app
from graphmode.reports.parquet import export_parquet
from graphmode.reports.perfetto import export_perfetto, nesting_tracks
from graphmode.tracer.schema import TABLES
from graphmode.tracer.store import PassInfo, TraceWriter, load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "tests" / "data").glob("*.gmtrace"))


def _slices(doc: dict, cat: str) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat]


@pytest.mark.parametrize("detail", ["node", "graph"])
def test_perfetto_synthetic_follows_trace_event_rules(tmp_path: Path, detail: str) -> None:
    counts = write_synthetic_trace(tmp_path / "t.gmtrace", iterations=4, kernels_per_iteration=5, detail=detail)
    out = tmp_path / "t.json"
    with load(tmp_path / "t.gmtrace") as trace:
        export_perfetto(trace, out)
    doc = json.loads(out.read_text())
    assert check_trace_events(doc) == []
    assert len(_slices(doc, "kernel")) == counts.kernels
    assert len(_slices(doc, "graph")) == counts.graph_spans
    assert len([e for e in doc["traceEvents"] if e.get("ph") == "X" and e["pid"] == 1 and e["cat"] not in
                ("phase", "iteration", "op", "nvtx")]) == counts.api_calls
    # One flow per GPU span: every kernel and graph span was launched by a recorded API call.
    assert sum(1 for e in doc["traceEvents"] if e.get("ph") == "s") == counts.kernels + counts.graph_spans
    node_kernels = [e for e in _slices(doc, "kernel") if e["args"]["graph_id"] != 0]
    assert len(node_kernels) == counts.graph_kernels
    assert all(e["args"]["graph_node_id"] >= 100 and e["args"]["stream_id"] == STREAM_ID for e in node_kernels)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert f"stream {STREAM_ID}" in names and "thread 4242 · CUDA runtime API" in names


def test_overlapping_gpu_spans_go_to_separate_tracks(tmp_path: Path) -> None:
    """Two kernels of one stream overlap partially (parallel graph branches): Perfetto needs 2 tracks."""
    path = tmp_path / "overlap.gmtrace"
    with TraceWriter(path, {"workload": "synthetic", "dropped_records": 0}) as w:
        w.add_pass(PassInfo(1, "traced", "node", 0, 10_000, 0, "complete"))
        w.append("api_calls", {"pass_id": [1, 1], "correlation_id": [1, 2], "api": ["runtime"] * 2,
                               "name": ["cudaLaunchKernel"] * 2, "category": ["kernel_launch"] * 2,
                               "start_ns": [0, 500], "end_ns": [400, 900], "thread_id": [9, 9]})
        w.append("gpu_spans", {"pass_id": [1, 1], "kind": ["kernel"] * 2, "name": ["a", "b"],
                               "start_ns": [1000, 1500], "end_ns": [3000, 4000], "stream_id": [3, 3],
                               "correlation_id": [1, 2]})
    out = tmp_path / "o.json"
    with load(path) as trace:
        export_perfetto(trace, out)
    doc = json.loads(out.read_text())
    assert check_trace_events(doc) == []
    kernels = _slices(doc, "kernel")
    assert len({e["tid"] for e in kernels}) == 2


def test_nesting_tracks_known_answer() -> None:
    # [0,10] holds [1,3] and [4,6]; [5,12] overlaps [0,10] partially -> second track; [12,13] fits track 0.
    start = np.array([0, 1, 4, 5, 12])
    end = np.array([10, 3, 6, 12, 13])
    assert nesting_tracks(start, end).tolist() == [0, 0, 0, 1, 0]
    assert nesting_tracks(np.array([0, 5]), np.array([5, 9])).tolist() == [0, 0]


def test_checker_catches_broken_documents() -> None:
    names = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
             {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}}]
    overlap = names + [{"ph": "X", "name": "a", "ts": 0, "dur": 10, "pid": 1, "tid": 1},
                       {"ph": "X", "name": "b", "ts": 5, "dur": 10, "pid": 1, "tid": 1}]
    assert any("without nesting" in p for p in check_trace_events(overlap))
    dangling = names + [{"ph": "X", "name": "a", "ts": 0, "dur": 1, "pid": 1, "tid": 1},
                        {"ph": "s", "cat": "c", "name": "f", "id": 1, "ts": 5, "pid": 1, "tid": 1},
                        {"ph": "B", "name": "open", "ts": 7, "pid": 1, "tid": 1}]
    problems = check_trace_events(dangling)
    assert any("never closed" in p for p in problems) and any("start(s)" in p for p in problems)


def test_parquet_round_trip(tmp_path: Path) -> None:
    import pandas as pd
    import pyarrow.parquet as pq

    write_synthetic_trace(tmp_path / "t.gmtrace", kernel_name="k<'quoted'>", iterations=3, kernels_per_iteration=4)
    with load(tmp_path / "t.gmtrace") as trace:
        files = export_parquet(trace, tmp_path / "pq")
        assert sorted(f.stem for f in files) == sorted(TABLES)
        for table in TABLES:
            original = trace.table(table)
            read = pq.read_table(tmp_path / "pq" / f"{table}.parquet")
            assert read.column_names == [c for c, _ in TABLES[table]]
            for col in read.column_names:
                assert read.column(col).to_pylist() == original[col].tolist(), (table, col)
        frame = pd.read_parquet(tmp_path / "pq" / "gpu_spans.parquet")
        assert len(frame) == trace.count("gpu_spans")
        assert set(frame["name"]) == {"k<'quoted'>"}


def test_export_cli_in_process_and_as_subprocess(tmp_path: Path) -> None:
    trace = tmp_path / "t.gmtrace"
    write_synthetic_trace(trace)
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(trace), "--format", "perfetto", "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.output
    assert check_trace_events(json.loads((tmp_path / "p.json").read_text())) == []
    bad = runner.invoke(app, ["export", str(trace), "--format", "csv"])
    assert bad.exit_code == 2 and "perfetto" in bad.output
    proc = subprocess.run([sys.executable, "-m", "graphmode", "export", str(trace), "-f", "parquet", "-o", str(tmp_path / "pq")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "pq").glob("*.parquet"))) == len(TABLES)


@pytest.mark.skipif(not FIXTURES, reason="no real recordings under tests/data/*.gmtrace yet")
@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_perfetto_real_fixture(tmp_path: Path, fixture: Path) -> None:
    out = tmp_path / "f.json"
    with load(fixture) as trace:
        export_perfetto(trace, out)
        gpu_spans = trace.count("gpu_spans")
    doc = json.loads(out.read_text())
    assert check_trace_events(doc) == []
    assert sum(1 for e in doc["traceEvents"] if e.get("ph") == "X" and e["pid"] >= 100) == gpu_spans
