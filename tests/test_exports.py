"""Perfetto protobuf against the rules trace processor applies, Parquet round trip, the export command line.

Synthetic traces (meta workload='synthetic', tests/synthetic_timeline.py) whose counts are known;
real recordings under tests/data/*.gmtrace.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from perfetto_rules import check_nesting, read_perfetto
from synthetic_timeline import STREAM_ID, write_synthetic_trace
from typer.testing import CliRunner

from graphmode.cli import app
from graphmode.reports.parquet import export_parquet
from graphmode.reports.perfetto import NestingTracks, export_perfetto
from graphmode.tracer.schema import TABLES
from graphmode.tracer.store import PassInfo, TraceWriter, load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "tests" / "data").glob("*.gmtrace")) + sorted((ROOT / "tests" / "data" / "scripts").glob("*.gmtrace"))


def _nesting(start: list[int], end: list[int]) -> list[int]:
    n = NestingTracks()
    return [n.place(s, e)[0] for s, e in sorted(zip(start, end), key=lambda x: (x[0], -x[1]))]


@pytest.mark.parametrize("detail", ["node", "graph"])
def test_perfetto_synthetic_follows_the_rules(tmp_path: Path, detail: str) -> None:
    counts = write_synthetic_trace(tmp_path / "t.gmtrace", iterations=4, kernels_per_iteration=5, detail=detail)
    out = tmp_path / "t.pftrace"
    with load(tmp_path / "t.gmtrace") as trace:
        result = export_perfetto(trace, out)
        markers = trace.count("markers")
    parsed = read_perfetto(out)
    assert parsed.problems == [] and check_nesting(parsed) == []
    by_cat: dict[str, list[dict]] = {}
    for s in parsed.slices:
        by_cat.setdefault(s["category"], []).append(s)
    assert len(by_cat["kernel"]) == counts.kernels
    assert len(by_cat.get("graph", [])) == counts.graph_spans
    host = {uuid for uuid, t in parsed.tracks.items() if t["parent"] == 1}
    api = [s for s in parsed.slices if s["track"] in host and s["category"] not in ("phase", "iteration", "op", "nvtx")]
    assert len(api) == counts.api_calls
    assert result.events == len(parsed.slices) == counts.api_calls + counts.kernels + counts.graph_spans + markers
    # One flow per launch call that caused GPU work (a node-detail replay's kernels share their launch's):
    replays = counts.graph_kernels // 5 if detail == "node" else counts.graph_spans  # 5 kernels per replay
    assert result.flows == counts.eager_kernels + replays
    terminated = [s for s in parsed.slices if s["terminating"]]
    assert len(terminated) == result.flows
    node_kernels = [s for s in by_cat["kernel"] if s["args"].get("graph_id", 0) != 0]
    assert len(node_kernels) == counts.graph_kernels
    assert all(s["args"]["graph_node_id"] >= 100 for s in node_kernels)
    names = {t["name"] for t in parsed.tracks.values()}
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
    out = tmp_path / "o.pftrace"
    with load(path) as trace:
        export_perfetto(trace, out)
    parsed = read_perfetto(out)
    assert parsed.problems == [] and check_nesting(parsed) == []
    kernels = [s for s in parsed.slices if s["category"] == "kernel"]
    assert len({s["track"] for s in kernels}) == 2
    assert sorted((s["start"], s["end"]) for s in kernels) == [(1000, 3000), (1500, 4000)]  # ns from the first record (0)


def test_nesting_tracks_known_answer() -> None:
    # [0,10] holds [1,3] and [4,6]; [5,12] overlaps [0,10] partially -> second track; [12,13] fits track 0.
    assert _nesting([0, 1, 4, 5, 12], [10, 3, 6, 12, 13]) == [0, 0, 0, 1, 0]
    assert _nesting([0, 5], [5, 9]) == [0, 0]


def test_checker_catches_broken_traces(tmp_path: Path) -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    p = trace.packet.add()
    p.trusted_packet_sequence_id, p.sequence_flags = 1, 1
    p.track_descriptor.uuid = 5
    for ts, kind in ((10, pb.TrackEvent.TYPE_SLICE_BEGIN), (5, pb.TrackEvent.TYPE_SLICE_BEGIN)):
        q = trace.packet.add()
        q.trusted_packet_sequence_id, q.sequence_flags, q.timestamp = 1, 2, ts
        q.track_event.type, q.track_event.track_uuid, q.track_event.name_iid = kind, 5, 9
        q.track_event.terminating_flow_ids.append(77)
    (tmp_path / "bad.pftrace").write_bytes(trace.SerializeToString())
    problems = read_perfetto(tmp_path / "bad.pftrace").problems
    assert any("back in time" in p for p in problems) and any("interned id never defined" in p for p in problems)


def test_perfetto_export_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    """Synthetic: packets are written in chunks; the writer never holds more than one chunk."""
    from graphmode.reports import perfetto

    write_synthetic_trace(tmp_path / "t.gmtrace", iterations=60, kernels_per_iteration=50)
    chunks: list[int] = []
    original = perfetto._Writer.flush

    def spy(self: perfetto._Writer) -> None:
        chunks.append(len(self.chunk.packet))
        original(self)

    perfetto._Writer.flush = spy  # type: ignore[method-assign]
    try:
        with load(tmp_path / "t.gmtrace") as trace:
            old = perfetto.PACKETS_PER_WRITE
            perfetto.PACKETS_PER_WRITE = 500
            try:
                result = export_perfetto(trace, tmp_path / "t.pftrace")
            finally:
                perfetto.PACKETS_PER_WRITE = old
    finally:
        perfetto._Writer.flush = original  # type: ignore[method-assign]
    assert max(chunks) <= 500 and len(chunks) > 10
    assert read_perfetto(tmp_path / "t.pftrace").problems == [] and result.events > 6000


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
    result = runner.invoke(app, ["export", str(trace), "--format", "perfetto", "-o", str(tmp_path / "p.pftrace")])
    assert result.exit_code == 0, result.output
    assert "ui.perfetto.dev" in result.output and read_perfetto(tmp_path / "p.pftrace").problems == []
    bad = runner.invoke(app, ["export", str(trace), "--format", "csv"])
    assert bad.exit_code == 2 and "perfetto" in bad.output
    proc = subprocess.run([sys.executable, "-m", "graphmode", "export", str(trace), "-f", "parquet", "-o", str(tmp_path / "pq")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "pq").glob("*.parquet"))) == len(TABLES)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_perfetto_real_fixture(tmp_path: Path, fixture: Path) -> None:
    out = tmp_path / "f.pftrace"
    with load(fixture) as trace:
        result = export_perfetto(trace, out)
        gpu_spans = trace.count("gpu_spans")
        api_calls = trace.count("api_calls")
        linked = trace.rows("""SELECT count(*) FROM (SELECT DISTINCT pass_id, correlation_id FROM gpu_spans g
                               WHERE correlation_id <> 0 AND EXISTS (SELECT 1 FROM api_calls a
                               WHERE a.pass_id = g.pass_id AND a.correlation_id = g.correlation_id))""")[0][0]
    parsed = read_perfetto(out)
    assert parsed.problems == [] and check_nesting(parsed) == []
    gpu_tracks = {u for u, t in parsed.tracks.items() if t["parent"] >= 100 and t["parent"] < 1000}
    assert sum(1 for s in parsed.slices if s["track"] in gpu_tracks) == gpu_spans
    api_tracks = {u for u, t in parsed.tracks.items() if t["parent"] == 1 and " API" in t["name"]}
    assert sum(1 for s in parsed.slices if s["track"] in api_tracks) == api_calls
    assert result.flows == linked == sum(1 for s in parsed.slices if s["terminating"])


def test_export_onto_a_fifo_writes_into_it_and_keeps_it_a_fifo(tmp_path: Path) -> None:
    """`export -o FIFO` must stream into the FIFO: renaming a finished file onto it (as a regular file's export
    is written) would replace the FIFO with a regular file and leave its reader waiting."""
    import os
    import stat

    from fifo_reader import FifoReader

    trace = ROOT / "tests" / "data" / "dag-graph.gmtrace"
    fifo = tmp_path / "out.pftrace"
    reader = FifoReader(fifo)
    result = CliRunner().invoke(app, ["export", str(trace), "-f", "perfetto", "-o", str(fifo)])
    data = reader.wait()
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.pftrace"]  # no .partial left beside it
    copy = tmp_path / "read.pftrace"
    copy.write_bytes(data)
    parsed = read_perfetto(copy)
    with load(trace) as t:
        spans = t.count("gpu_spans") + t.count("api_calls")
    assert parsed.problems == [] and len(parsed.slices) >= spans > 0
    assert f"written to {fifo} ({len(data) / 1e6:.1f} MB)" in " ".join(result.output.split())


def test_export_onto_a_device_node_writes_into_it(tmp_path: Path) -> None:
    """A character device (a null device made here, as /dev/null is: major 1, minor 3) stays a device."""
    import os
    import stat

    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")
    trace = ROOT / "tests" / "data" / "dag-graph.gmtrace"
    for args in (["export", str(trace), "-f", "perfetto"], ["report", str(trace)], ["report", str(trace), "--json"]):
        result = CliRunner().invoke(app, [*args, "-o", str(null)])
        assert result.exit_code == 0, (args, result.output)
        assert stat.S_ISCHR(os.stat(null).st_mode), f"{args}: the device node was replaced by a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_an_export_that_fails_leaves_no_file_and_a_regular_file_is_replaced_whole(tmp_path: Path) -> None:
    from graphmode.reports.output import open_output

    out = tmp_path / "report.txt"
    out.write_text("the old report\n")
    out.chmod(0o640)
    with pytest.raises(RuntimeError):
        with open_output(out) as f:
            f.write("half of a new one")
            raise RuntimeError("interrupted")
    assert out.read_text() == "the old report\n" and sorted(p.name for p in tmp_path.iterdir()) == ["report.txt"]
    with open_output(out) as f:
        f.write("the new report\n")
    assert out.read_text() == "the new report\n" and (out.stat().st_mode & 0o777) == 0o640
    link = tmp_path / "latest.txt"
    link.symlink_to(out)
    with open_output(link) as f:
        f.write("through the link\n")
    assert link.is_symlink() and out.read_text() == "through the link\n"
