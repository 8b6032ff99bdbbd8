"""Invariants over real H200 recordings in tests/data/*.gmtrace (skipped until they are committed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra: pip install -e '.[test]'")

from graphmode.analyzers import analyze
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.tracer.store import load

FIXTURES = sorted((Path(__file__).parent / "data").glob("*.gmtrace"))
params = [pytest.param(p, id=p.name) for p in FIXTURES] or [
    pytest.param(None, marks=pytest.mark.skip(reason="no real recordings under tests/data/*.gmtrace yet"))
]


@pytest.mark.parametrize("path", params)
def test_real_recording_invariants(path: Path) -> None:
    with load(path) as trace:
        a = analyze(trace)
        doc = report_dict(a)
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    for m in a.modes:
        for s in (m.wall, m.traced_wall, m.api_total, m.gpu_busy, m.gpu_idle, m.kernels):
            if s is not None:
                assert s.min >= 0 and s.p10 <= s.median <= s.p90
        if m.gpu_busy is not None and m.traced_wall is not None:
            assert m.gpu_busy.max <= m.traced_wall.max  # busy time is clipped to the iteration
        if m.api_total is not None and m.traced_wall is not None:
            assert m.api_total.max <= m.traced_wall.max  # outermost calls on one thread cannot exceed the span
    for o in a.overhead_saved:
        if o.graph_faster:
            assert o.wall_ns is not None and o.wall_ns >= 0
    for b in a.break_even:
        if b.replays is not None:
            assert b.saved_per_replay_ns is not None and b.one_time_ns is not None and b.saved_per_replay_ns > 0
            # consistent with its own inputs: n pays back, n - 1 does not
            assert b.replays * b.saved_per_replay_ns >= b.one_time_ns
            assert b.replays == 1 or (b.replays - 1) * b.saved_per_replay_ns < b.one_time_ns
            assert b.interval_low is not None and b.interval_low <= b.replays
            assert b.interval_high_never or (b.interval_high is not None and b.replays <= b.interval_high)
        if b.never:
            assert b.saved_per_replay_ns is not None and b.saved_per_replay_ns <= 0
    for c in a.graph_costs:
        parts = [x for x in (c.build_ns, c.instantiate_ns, c.upload_ns, c.first_launch_excess_ns) if x is not None]
        assert math.isclose(c.total_ns, sum(parts))
    for p in a.critical_paths:
        assert p.critical_path_ns <= p.serial_ns + 1e-9
