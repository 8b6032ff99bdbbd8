"""A full disk while writing a trace, on a tiny tmpfs (needs root and mount; skipped with the reason otherwise),
and stdout redirected to a full disk (/dev/full).

SYNTHETIC rows written through TraceWriter, as the tracer writes them after a run: the writer must
refuse to start where there is no room, and when the disk fills up mid-way, carry on in the
temporary folder and say so, or fail with a message that says what was kept; never report
'complete' for a trace that lost rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphmode.tracer.errors import StorageError
from graphmode.tracer.store import TraceWriter, load


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def _spans(n: int, offset: int) -> dict[str, np.ndarray]:
    return {"pass_id": np.zeros(n, np.int32), "kind": np.full(n, "kernel", object), "start_ns": np.arange(n) + offset,
            "end_ns": np.arange(n) + offset + 5, "name": np.array([f"kernel_{i % 997}" for i in range(n)], dtype=object)}


def test_no_room_is_said_before_anything_runs(tiny_disk: Path) -> None:
    with pytest.raises(StorageError, match=r"only 0\.\d MB free on the disk holding .*tiny; a trace needs at least 16 MB"):
        TraceWriter(tiny_disk / "t.gmtrace")
    assert list(tiny_disk.iterdir()) == []


def test_a_disk_that_fills_up_moves_the_trace_to_the_temporary_folder(tiny_disk: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GRAPHMODE_MIN_FREE_MB", "0")
    path = tiny_disk / "t.gmtrace"
    with TraceWriter(path, {"workload": "synthetic"}) as w:
        for i in range(5):
            assert w.append("gpu_spans", _spans(20_000, i * 20_000)) == 20_000
    moved = w.path
    assert moved != path and moved.parent == Path(tempfile.gettempdir())
    err = capsys.readouterr().err
    assert f"no space left to write {path}" in err and f"the trace continues in {moved}" in err
    try:
        with load(moved) as t:
            assert t.count("gpu_spans") == 100_000 and t.meta["status"] == "complete"
            assert t.meta["relocated_from"] == str(path) and t.meta["workload"] == "synthetic"
    finally:
        moved.unlink()


def test_a_full_disk_with_nowhere_to_go_fails_and_says_what_was_kept(tiny_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMODE_MIN_FREE_MB", "0")
    monkeypatch.setattr(tempfile, "tempdir", str(tiny_disk))  # the temporary folder is on the same full disk
    path = tiny_disk / "t.gmtrace"
    w = TraceWriter(path, {"workload": "synthetic"})
    with pytest.raises(StorageError) as e:
        for i in range(5):
            w.append("gpu_spans", _spans(20_000, i * 20_000))
    message = str(e.value)
    assert f"writing 20,000 gpu_spans rows to {path} failed" in message and "No space left on device" in message
    assert "keeps what was written before" in message and "the rest of this recording was lost" in message
    with pytest.raises(StorageError):  # later writes do not pretend to work
        w.append("markers", {"pass_id": [0], "kind": ["phase"], "name": ["x"], "start_ns": [1], "end_ns": [2]})
    w.close("complete")  # a run's normal end: the status must not say complete
    with load(path) as t:
        assert t.meta["status"] in ("failed", "recording")
        if t.meta["status"] == "failed":
            assert "No space left on device" in t.meta["status_reason"]


def test_a_disk_too_full_for_the_last_checkpoint_moves_the_trace_first(tiny_disk: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Every append fits in the write-ahead log, but the checkpoint at close would not (seen on the H200 with a
    200 KB disk: DuckDB then invalidates the database): the trace moves before checkpointing."""
    monkeypatch.setenv("GRAPHMODE_MIN_FREE_MB", "0")
    path = tiny_disk / "t.gmtrace"
    w = TraceWriter(path, {"workload": "synthetic"})
    assert w.append("gpu_spans", _spans(1_000, 0)) == 1_000
    assert w.path == path  # still there: the log took it
    w.close("complete")
    moved = w.path
    try:
        assert moved != path and moved.parent == Path(tempfile.gettempdir())
        assert "too little space left to checkpoint the trace" in capsys.readouterr().err
        with load(moved) as t:
            assert t.count("gpu_spans") == 1_000 and t.meta["status"] == "complete"
    finally:
        moved.unlink()


def test_a_last_checkpoint_that_fails_loses_nothing_and_says_so(tiny_disk: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GRAPHMODE_MIN_FREE_MB", "0")
    monkeypatch.setattr(tempfile, "tempdir", str(tiny_disk))  # nowhere to move to
    path = tiny_disk / "t.gmtrace"
    w = TraceWriter(path, {"workload": "synthetic"})
    assert w.append("gpu_spans", _spans(3_000, 0)) == 3_000  # a log of ~390 KB: no room left to checkpoint it
    w.close("complete")  # no exception: every row was committed to the log
    err = " ".join(capsys.readouterr().err.split())
    assert f"the last checkpoint of {path} failed" in err and "nothing is lost" in err and "t.gmtrace.wal" in err
    with load(path) as t:  # the reader replays the log
        assert t.count("gpu_spans") == 3_000 and t.meta["status"] == "complete"


def test_adding_a_run_to_a_trace_that_was_never_written_is_refused(tmp_path: Path) -> None:
    """The first run of a script could not write its trace: the detail run must not create an empty
    database and leave it where the trace should be."""
    with pytest.raises(StorageError, match="no trace to add a run to"):
        TraceWriter(tmp_path / "none.gmtrace", append=True)
    assert not (tmp_path / "none.gmtrace").exists()


# ---- stdout on a full disk: /dev/full takes no byte (ENOSPC), as a redirect to a full disk does ----------

FULL = Path("/dev/full")
DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[1]
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")


@needs_dev_full
@pytest.mark.parametrize("args", [
    ["report", "dag-graph.gmtrace"],
    ["report", "dag-graph.gmtrace", "--json"],
    ["info", "dag-graph.gmtrace"],
    ["report", "ranks/ddp_graph"],  # a rank set's report is printed by another path (graphmode.ranks_cli)
], ids=["report", "report-json", "info", "ranks-report"])
def test_stdout_on_a_full_disk_is_one_line_naming_stdout(args: list[str]) -> None:
    """`graphmode report X > /dev/full` said 'cannot write the report to None' (report) or gave a traceback (info)."""
    cmd = [sys.executable, "-m", "graphmode", args[0], str(DATA / args[1]), *args[2:]]
    with open(FULL, "w") as full:
        proc = subprocess.run(cmd, cwd=REPO, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("graphmode: cannot write to stdout: No space left on device (ENOSPC); free space")
    assert "None" not in lines[0] and "Exception ignored" not in proc.stderr


def test_stdout_closed_is_one_line_naming_stdout() -> None:
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(DATA / "dag-graph.gmtrace")], cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 1 and proc.stderr.strip() == (
        "graphmode: cannot write to stdout: it is closed (EBADF); send stdout somewhere writable (or write to a file with -o FILE)")


@needs_dev_full
def test_stdout_on_a_full_disk_in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The command's own function, called in this process with sys.stdout on /dev/full."""
    import typer

    from graphmode.cli import info

    full = open(FULL, "w")
    monkeypatch.setattr(sys, "stdout", full)
    try:
        with pytest.raises(typer.Exit) as e:
            info(DATA / "dag-graph.gmtrace")
    finally:
        full.close()
    assert e.value.exit_code == 1
    assert capsys.readouterr().err.strip() == ("graphmode: cannot write to stdout: No space left on device (ENOSPC); "
                                              "free space where stdout goes, or send it elsewhere")


def test_a_closed_pipe_ends_quietly() -> None:
    """`graphmode report X | head -1`: the reader has what it wanted; no message, no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "graphmode", "report", str(DATA / "dag-graph.gmtrace")], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 1 and b"dag-graph.gmtrace" in first
    assert err == "", err
