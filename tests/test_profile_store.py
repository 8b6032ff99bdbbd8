"""The CPU profile in its own tables (schema 2): a real pyinstrument session written and read back."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from graphmode.analyzers.cpu_profile import summarise
from graphmode.tracer import profile_store
from graphmode.tracer.profile_store import from_session_json, read_profile, write_profile
from graphmode.tracer.store import TraceWriter, load
from graphmode.tracer.validate import validate_trace


def _busy(n: int) -> float:
    total = 0.0
    for i in range(n):
        total += math.sqrt(i) * json.loads("[1.5]")[0]
    return total


@pytest.fixture(scope="module")
def session():  # type: ignore[no-untyped-def]
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0002)
    profiler.start()
    _busy(150_000)
    return profiler.stop()


def test_round_trip_gives_pyinstruments_own_session_back(tmp_path: Path, session) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "p.gmtrace"
    with TraceWriter(path, {"workload": "synthetic"}) as w:
        write_profile(w, (session, ""))
    with load(path) as t:
        assert validate_trace(t) == [] and t.legacy_profile is False
        stored = read_profile(t)
        assert stored is not None and stored.resample_interval is None
        back = stored.session()
        assert back.frame_records == [(list(s), t_) for s, t_ in session.frame_records]
        assert back.duration == session.duration and back.sys_prefixes == session.sys_prefixes
        # every distinct frame string once; stacks share their outer frames
        frames = {f for stack, _ in session.frame_records for f in stack}
        assert t.count("profile_frames") == len(frames)
        assert t.count("profile_samples") == len(session.frame_records)
        assert t.count("profile_stacks") < sum(len(s) for s, _ in session.frame_records)
        # the summary is the same as from the session pyinstrument gave
        assert summarise(stored) == summarise(from_session_json(json.loads(json.dumps(session.to_json()))))  # type: ignore[arg-type]
        assert "meta.cpu_profile" not in str(t.meta) and "cpu_profile" not in t.meta


def test_long_runs_are_resampled_as_pyinstruments_html_renderer_does(tmp_path: Path, session,  # type: ignore[no-untyped-def]
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_store, "MAX_SAMPLES", 40)
    assert len(session.frame_records) > 40
    interval = session.duration / 10000  # pyinstrument's renderers/html.py: then doubled until it fits
    expected = session.resample(interval)
    while len(expected.frame_records) > 40:
        interval *= 2
        expected = session.resample(interval)
    path = tmp_path / "r.gmtrace"
    with TraceWriter(path, {"workload": "synthetic"}) as w:
        write_profile(w, (session, ""))
    with load(path) as t:
        stored = read_profile(t)
        assert stored is not None and stored.resample_interval == pytest.approx(interval)
        assert stored.session().frame_records == [(list(s), t_) for s, t_ in expected.frame_records]
        assert stored.recorded_samples == len(session.frame_records)
        assert t.meta["cpu_profile_session"]["recorded_samples"] == len(session.frame_records)


def test_a_lost_profile_leaves_a_note(tmp_path: Path) -> None:
    class Broken:
        def stop(self) -> None:
            raise RuntimeError("sampler thread died")

    path = tmp_path / "n.gmtrace"
    with TraceWriter(path, {"workload": "synthetic"}) as w:
        write_profile(w, profile_store.stop_profiler(Broken()))
    with load(path) as t:
        assert t.meta["notes"] == ["the CPU profile was lost: pyinstrument could not stop (RuntimeError: sampler thread died)"]
        assert read_profile(t) is None
