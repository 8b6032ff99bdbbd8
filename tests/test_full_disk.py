"""A full disk while writing a trace, on a tiny tmpfs (needs root and mount; skipped with the reason otherwise).

SYNTHETIC rows written through TraceWriter, as the tracer writes them after a run: the writer must
refuse to start where there is no room, and when the disk fills up mid-way, carry on in the
temporary folder and say so, or fail with a message that says what was kept; never report
'complete' for a trace that lost rows.
"""

from __future__ import annotations

import os
import subprocess
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
