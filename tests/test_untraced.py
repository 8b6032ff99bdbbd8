"""The timing run: line stamps matched to iterations (analyzers.untraced), and the stamper itself
(tracer.line_stamps) under a Python with sys.monitoring.

The traces here are SYNTHETIC (numbers chosen by hand; hand calculations beside the assertions); the real
three-run recording is tested in tests/test_script_fixtures.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers.notes import note
from graphmode.analyzers.periods import IterationTable, empty_table
from graphmode.analyzers.untraced import line_timing, starting_lines, with_untraced
from graphmode.reports.notes import word, words
from graphmode.tracer.store import load
from synthetic import SyntheticTrace

ROOT = Path(__file__).resolve().parent.parent


def _table(pass_id: int, launch: list[int], period: list[float], busy: list[int], gpu_bound: list[bool],
           thread: int = 11, stretch: list[int] | None = None) -> IterationTable:
    """Eager iterations of graph 1, steady, one stretch unless given."""
    n = len(launch)
    t = empty_table(pass_id)
    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return dataclasses.replace(
        t, mode=np.full(n, "eager", dtype=object), graph_id=i64([1] * n), stretch=i64(stretch or [0] * n),
        role=np.full(n, "steady", dtype=object), source=np.full(n, "inferred", dtype=object), thread_id=i64([thread] * n),
        stream_id=i64([7] * n), start_ns=i64(launch), end_ns=i64(launch), launch_ns=i64(launch), launch_call_ns=i64([5] * n),
        gpu_start_ns=i64(launch), gpu_end_ns=i64(launch), gpu_busy_ns=i64(busy), other_gpu_ns=i64([0] * n),
        period=np.asarray(period, dtype=np.float64), cpu_period=np.asarray(period, dtype=np.float64),
        work=np.asarray(period, dtype=np.float64), gpu_bound=np.asarray(gpu_bound), timed_by=np.full(n, "", dtype=object),
        traced_work=np.full(n, np.nan))


def _stamps_trace(path: Path, timing: list[int], stamp_cost: float | None = None) -> Path:
    """Synthetic. Detail pass 1, thread 11: the loop's `for` line t.py:4 at 90, 290, 490, 690 and its body's
    first line t.py:5 at 100, 300, 500, 700, then t.py:5 once more at 900 (the capture). Timing pass 2,
    thread 22 (another process): t.py:5 at the times given."""
    t = SyntheticTrace().add_pass(1, "graph").add_pass(2, "stamps")
    for ts in (90, 290, 490, 690):
        t._add("line_stamps", pass_id=1, thread_id=11, thread_name="MainThread", file="t.py", line=4, function="<module>", ts_ns=ts)
    for ts in (100, 300, 500, 700, 900):
        t._add("line_stamps", pass_id=1, thread_id=11, thread_name="MainThread", file="t.py", line=5, function="<module>", ts_ns=ts)
    for ts in timing:
        t._add("line_stamps", pass_id=2, thread_id=22, thread_name="MainThread", file="t.py", line=5, function="<module>", ts_ns=ts)
    if stamp_cost is not None:  # the timing run's entry in meta.runs, as TimingTracer writes it
        t.meta["runs"] = [{"pass_id": 2, "config": {"name": "timing", "stamp_lines": ["t.py:5"]}, "stamp_cost_ns": stamp_cost}]
    return t.write(path)


def test_untraced_periods_come_from_the_timing_runs_stamps(tmp_path: Path) -> None:
    path = _stamps_trace(tmp_path / "s.gmtrace", [1000, 1060, 1130, 1190, 1500])
    # detail run: four eager iterations whose first launch calls begin at 150, 350, 550, 750
    detail = _table(1, [150, 350, 550, 750], [200, 200, 200, float("nan")], [30, 30, 65, 30], [False] * 4)
    # measuring run: the same four, CPU-bound and slowed (120 each); GPU busy 30, 30, 65, 30
    measure = _table(0, [5000, 5120, 5240, 5360], [120, 120, 120, float("nan")], [30, 30, 65, 30], [False] * 4, thread=99)
    with load(path) as trace:
        loc, seq = starting_lines(trace, detail)
        # the last stamp on thread 11 before 150 is t.py:5 at 100 (its execution 0), and so on
        assert list(loc) == ["t.py:5"] * 4 and list(seq) == [0, 1, 2, 3]
        lt = line_timing(trace, measure, detail)
    # executions 0..3 of t.py:5 in the timing run: 1000, 1060, 1130, 1190: periods 60, 70, 60, none for the last
    assert lt.timing_pass == 2 and lt.notes == ()
    assert list(lt.untraced[:3]) == [60, 70, 60] and np.isnan(lt.untraced[3])
    fixed = with_untraced(measure, lt)
    # max(untraced, GPU busy): 60, 70, max(60, 65) = 65 (GPU-bound once the tracer's cost is gone)
    assert list(fixed.work[:3]) == [60, 70, 65] and list(fixed.period[:3]) == [60, 70, 65]
    assert list(fixed.gpu_bound[:3]) == [False, False, True]
    assert list(fixed.timed_by) == ["timing", "timing", "timing", ""]
    assert list(fixed.traced_work[:3]) == [120, 120, 120]


def test_the_timing_runs_own_stamps_are_counted_per_iteration(tmp_path: Path) -> None:
    # one stamp (t.py:5) per iteration, each measured by the run at 2 ns: 2 ns of each period are the stamps'
    from graphmode.analyzers.untraced import stamp_overhead

    path = _stamps_trace(tmp_path / "s.gmtrace", [1000, 1060, 1130, 1190, 1500], stamp_cost=2.0)
    detail = _table(1, [150, 350, 550, 750], [200, 200, 200, float("nan")], [30] * 4, [False] * 4)
    measure = _table(0, [5000, 5120, 5240, 5360], [120, 120, 120, float("nan")], [30] * 4, [False] * 4, thread=99)
    with load(path) as trace:
        lt = line_timing(trace, measure, detail)
    assert lt.stamp_ns is not None and list(lt.stamp_ns[:3]) == [2, 2, 2] and np.isnan(lt.stamp_ns[3])
    assert stamp_overhead(with_untraced(measure, lt), lt) == {(1, "eager"): 2.0}


def test_a_line_run_a_different_number_of_times_is_not_matched(tmp_path: Path) -> None:
    # the timing run executed t.py:5 four times, the detail run five: the runs did different things
    path = _stamps_trace(tmp_path / "s.gmtrace", [1000, 1060, 1130, 1190])
    detail = _table(1, [150, 350, 550, 750], [200, 200, 200, float("nan")], [30] * 4, [False] * 4)
    measure = _table(0, [5000, 5120, 5240, 5360], [120, 120, 120, float("nan")], [30] * 4, [False] * 4)
    with load(path) as trace:
        lt = line_timing(trace, measure, detail)
    assert np.isnan(lt.untraced).all()
    assert lt.notes == (note("stamp_count_mismatch", count=1, lines=("t.py:5",)),)
    assert with_untraced(measure, lt) is measure


def test_runs_whose_iterations_differ_keep_the_measured_period(tmp_path: Path) -> None:
    # the measuring run found the four iterations as two stretches of two, so two periods (rows 0 and 2) where
    # the detail run has three: 2 against 3 is beyond SPLIT_TOLERANCE (10%), not the same iterations
    path = _stamps_trace(tmp_path / "s.gmtrace", [1000, 1060, 1130, 1190, 1500])
    detail = _table(1, [150, 350, 550, 750], [200, 200, 200, float("nan")], [30] * 4, [False] * 4)
    measure = _table(0, [5000, 5120, 5240, 5360], [120, float("nan"), 120, float("nan")], [30] * 4, [False] * 4,
                     stretch=[0, 0, 1, 1])
    with load(path) as trace:
        lt = line_timing(trace, measure, detail)
    assert np.isnan(lt.untraced).all()
    assert any(n.kind == "iterations_differ" and (n["measured"], n["detail"]) == (4, 4) for n in lt.notes)


def test_iterations_cut_differently_take_the_timing_runs_periods_in_order(tmp_path: Path) -> None:
    """SYNTHETIC: 21 eager iterations, every 200 ns in the detail run (t.py:5 starts each), the timing run 60 ns
    apart except 90 ns for iterations 10 and 11. The measuring run cut them into stretches of 10 and 11, so
    it has 19 periods where the detail run has 20 (within 10%): its periods are the timing run's 20, evenly
    spread over its 19 in order."""
    from synthetic import SyntheticTrace

    n = 21
    t = SyntheticTrace().add_pass(1, "graph").add_pass(2, "stamps")
    for i in range(n):
        t._add("line_stamps", pass_id=1, thread_id=11, thread_name="MainThread", file="t.py", line=5, function="<module>", ts_ns=100 + 200 * i)
    timing = np.cumsum([1000] + [90 if i in (10, 11) else 60 for i in range(n - 1)])
    for ts in timing:
        t._add("line_stamps", pass_id=2, thread_id=22, thread_name="MainThread", file="t.py", line=5, function="<module>", ts_ns=int(ts))
    path = t.write(tmp_path / "s.gmtrace")
    detail = _table(1, [150 + 200 * i for i in range(n)], [200.0] * (n - 1) + [float("nan")], [30] * n, [False] * n)
    m_period = [120.0] * 9 + [float("nan")] + [120.0] * 10 + [float("nan")]
    measure = _table(0, [5000 + 120 * i for i in range(n)], m_period, [30] * n, [False] * n, stretch=[0] * 10 + [1] * 11)
    with load(path) as trace:
        lt = line_timing(trace, measure, detail)
    d = np.diff(timing)  # the detail rows' untraced periods, rows 0..19: 60 x 10, 90, 90, 60 x 8
    pick = np.round(np.linspace(0, 19, 19)).astype(int)  # 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, ... (9 is skipped)
    rows = [i for i in range(n) if np.isfinite(m_period[i])]
    assert list(lt.untraced[rows]) == list(d[pick]) and np.isnan(lt.untraced[[9, 20]]).all()
    assert sorted(lt.untraced[rows]) == [60.0] * 17 + [90.0] * 2
    assert any(x.kind == "iterations_respread" and (x["measured"], x["detail"], x["periods"]) == (21, 21, 20) for x in lt.notes)


def test_gpu_bound_rows_and_partly_timed_modes_are_left_alone(tmp_path: Path) -> None:
    path = _stamps_trace(tmp_path / "s.gmtrace", [1000, 1060, 1130, 1190, 1500])
    detail = _table(1, [150, 350, 550, 750], [200, 200, 200, float("nan")], [30] * 4, [False] * 4)
    # row 1 is GPU-bound in the measuring run: its period is the GPU's, kept; the others are timed
    measure = _table(0, [5000, 5120, 5240, 5360], [120, 120, 120, float("nan")], [30] * 4, [False, True, False, False])
    with load(path) as trace:
        lt = line_timing(trace, measure, detail)
    fixed = with_untraced(measure, lt)
    assert list(fixed.work[:3]) == [60, 120, 60] and list(fixed.timed_by[:3]) == ["timing", "", "timing"]
    # CPU-bound rows with a period: 0, 2 (row 1 is GPU-bound, row 3 has none). Timed: only row 0, one of two,
    # under TIMED_SHARE (80%): the mode keeps the measuring run's periods
    partial = dataclasses.replace(lt, untraced=np.array([60, 70, np.nan, np.nan]))
    assert with_untraced(measure, partial) is measure


def test_a_mostly_timed_mode_leaves_its_untimed_iterations_out(tmp_path: Path) -> None:
    """Synthetic: 6 CPU-bound iterations with a period, 5 timed (83% >= 80%): the sixth (a change of line
    between two iterations, say) is left out of the period rather than mixed in at its traced length."""
    n = 7
    measure = _table(0, list(range(0, 700, 100)), [120.0] * 6 + [float("nan")], [30] * n, [False] * n)
    lt_values = np.array([60, 60, 60, np.nan, 60, 60, np.nan])
    from graphmode.analyzers.untraced import LineTiming

    fixed = with_untraced(measure, LineTiming(2, lt_values, ()))
    assert list(fixed.timed_by) == ["timing"] * 3 + ["untimed"] + ["timing"] * 2 + [""]
    assert np.isnan(fixed.work[3]) and list(fixed.work[[0, 1, 2, 4, 5]]) == [60] * 5


def _python_with_monitoring() -> str | None:
    """An interpreter with sys.monitoring (3.12+) that runs: this one, or one on PATH or under pyenv."""
    if sys.version_info >= (3, 12):
        return sys.executable
    pyenv = Path.home() / ".pyenv" / "versions"
    candidates = [shutil.which(n) for n in ("python3.13", "python3.12")]
    candidates += [str(p) for p in sorted(pyenv.glob("3.1[2-9]*/bin/python3"))] if pyenv.is_dir() else []
    for c in candidates:
        if c and subprocess.run([c, "-c", "import sys; sys.monitoring"], capture_output=True, timeout=30).returncode == 0:
            return c
    return None


STAMPER_DRIVER = r"""
import importlib.util, json, sys, threading, runpy
spec = importlib.util.spec_from_file_location("line_stamps", sys.argv[1])
ls = importlib.util.module_from_spec(spec); spec.loader.exec_module(ls)
user = sys.argv[2]
lines = None if sys.argv[3] == "all" else [(user, int(x)) for x in sys.argv[3].split(",")]
s = ls.LineStamper(lambda f: f == user, lines, limit=int(sys.argv[4]))
s.start()
runpy.run_path(user, run_name="__main__")
s.stop()
cols = s.columns(1000)
print(json.dumps({"n": len(s), "truncated": s.truncated, "cols": cols, "main": threading.get_native_id()}))
"""

USER_SCRIPT = """import threading
def step(i):
    return i * 2
total = 0
for i in range(5):
    total += step(i)
t = threading.Thread(target=lambda: [step(j) for j in range(3)])
t.start(); t.join()
"""


def stamper_driver(tmp_path: Path, user_source: str, driver_source: str) -> Callable[..., dict]:
    """Writes a user script and a driver script of the stamper into `tmp_path`; returns run(*args): the driver run
    under a Python 3.12+ (graphmode not importable: the driver loads tracer/line_stamps.py from its file) with the
    stamper's file, the user script and `args`, and the JSON it printed."""
    py = _python_with_monitoring()
    assert py is not None
    user = tmp_path / "user.py"
    user.write_text(user_source)
    driver = tmp_path / "driver.py"
    driver.write_text(driver_source)
    stamper = ROOT / "tracer" / "line_stamps.py"

    def run(*args: object) -> dict:
        out = subprocess.run([py, str(driver), str(stamper), str(user), *map(str, args)], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "PYTHONPATH": ""})
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    return run


@pytest.mark.skipif(_python_with_monitoring() is None, reason="no Python 3.12+ here (sys.monitoring): the stamper needs one")
def test_the_stamper_stamps_the_users_lines_and_only_the_chosen_ones(tmp_path: Path) -> None:
    call = stamper_driver(tmp_path, USER_SCRIPT, STAMPER_DRIVER)

    def run(lines: str, limit: int = 1000) -> dict:
        return call(lines, limit)

    every = run("all")
    c = every["cols"]
    pairs = list(zip(c["function"], c["line"]))
    # the loop line 5 runs 6 times (5 iterations and the exit), line 6 five times, step's line 3 five times
    # on the main thread; the other thread's three calls of step (from the lambda on line 7) are not stamped
    assert pairs.count(("<module>", 5)) == 6 and pairs.count(("<module>", 6)) == 5
    assert pairs.count(("step", 3)) == 5
    assert set(c["thread_id"]) == {every["main"]}  # the OS thread id, as CUPTI's records carry it
    assert set(c["thread_name"]) == {"MainThread"}  # Python's name: how runs are matched thread by thread
    assert all(b >= a for a, b in zip(c["ts_ns"], c["ts_ns"][1:]))  # in time order (offset 1000 applied)
    chosen = run("6")
    assert chosen["n"] == 5 and set(chosen["cols"]["line"]) == {6} and not chosen["truncated"]
    capped = run("all", limit=4)
    assert capped["n"] == 4 and capped["truncated"]


def test_the_anchor_line_runs_once_per_iteration_closest_before_the_launch() -> None:
    """SYNTHETIC stamps of one thread: a loop at line 5 calls step() (line 6); step's own loop (line 2) runs
    line 3, which launches, three times. Launches happen at line 3's first execution in each step."""
    from graphmode.analyzers.untraced import anchor_line

    one_step = ["f:5", "f:6", "f:2", "f:3", "f:2", "f:3", "f:2", "f:3", "f:2", "f:4"]  # f:4 returns
    locs = np.array(one_step * 4, dtype=object)
    first_launch = np.array([3 + 10 * i for i in range(4)])  # the position of each step's first f:3
    # windows (3, 13], (13, 23], (23, 33]: f:3 three times, f:2 four times; f:4, f:5 and f:6 once each. Closest
    # before the launch: f:6 (2 stamps before it), then f:5 (3), then f:4 (4)
    assert anchor_line(locs, first_launch[:-1], first_launch[1:]) == "f:6"
    assert anchor_line(locs, first_launch[:-1], first_launch[1:], allowed={"f:4", "f:3"}) == "f:4"
    assert anchor_line(locs, first_launch[:-1], first_launch[1:], allowed={"f:3"}) is None  # f:3 runs 3 times a step
    assert anchor_line(locs, first_launch[:0], first_launch[:0]) is None  # no consecutive iterations: no window
    # a line that runs once in the first window but twice in a later one does not qualify
    odd = locs.copy()
    odd[25] = "f:6"
    assert anchor_line(odd, first_launch[:-1], first_launch[1:]) == "f:5"


# ---- real recordings: three runs of examples/ on the H200 (tests/data/scripts/timed/recording.log) ----

TIMED = ROOT / "tests" / "data" / "scripts" / "timed"


def _line_cadence(trace, line: str, every: int = 1) -> float:  # type: ignore[no-untyped-def]
    """Median interval between every `every`-th stamp of one line in the timing run: the loop's own cadence,
    read straight from the stamps (independently of the matching in analyzers.untraced)."""
    file, _, n = line.rpartition(":")
    ts = trace.sql("SELECT ts_ns FROM line_stamps l JOIN passes p USING (pass_id) WHERE p.detail = 'stamps' AND file = ? "
                   "AND line = ? ORDER BY ts_ns", [file, int(n)])["ts_ns"].astype(np.int64)
    return float(np.median(np.diff(ts[::every])))


def test_a_cpu_bound_eager_loop_is_timed_by_the_timing_run() -> None:
    """CuPy: 100 eager steps of 10 fused kernels (one line, executed 10 times a step), CPU-bound; replays
    GPU-bound. The eager period is the timing run's; the replay period stays the measuring run's."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.run_plan import lines_to_time
    from graphmode.tracer.validate import validate_trace

    with load(TIMED / "cupy_graph.gmtrace") as trace:
        assert [(p.name, p.detail) for p in trace.passes] == [("measure", "graph"), ("detail", "graph"), ("timing", "stamps")]
        assert validate_trace(trace) == []
        (timing_run,) = [r for r in trace.meta["runs"] if r["config"]["name"] == "timing"]
        # the timing run of this recording stamped the line that launches (14), which runs 10 times a step; the
        # analysis now chooses the step's call line (20), which runs once a step (a tenth of the stamps), and
        # still reads the recording through the line it was given
        assert timing_run["config"]["stamp_lines"] == ["examples/cupy_graph.py:14"]
        # and the lines around the capture through its instantiation: begin_capture (22) and the line after
        # end_capture (25), for the capture's untraced time
        assert lines_to_time(trace) == ["examples/cupy_graph.py:20", "examples/cupy_graph.py:22", "examples/cupy_graph.py:25"]
        cadence = _line_cadence(trace, "examples/cupy_graph.py:14", every=10)  # a step starts every 10th execution
        a = analyze(trace)
    (g,) = a.graphs
    assert g.eager is not None and g.graph is not None and g.eager.work is not None and g.eager.traced_work is not None
    assert (g.eager.run, g.eager.bound, g.graph.run, g.graph.bound) == ("timing", "cpu", "measure", "gpu")
    assert abs(g.eager.work.median - cadence) <= 0.02 * cadence
    assert g.eager.traced_work.median > g.eager.work.median  # the measuring run was slower: CUPTI's cost
    kinds = {n.kind for n in g.notes}
    assert not kinds & {"traced_cpu_bound_eager", "traced_cpu_bound_replays"}  # no tracer allowance on a period timed untraced
    assert "timed_untraced" in kinds
    b = g.break_even
    assert b is not None and b.eager_ns == g.eager.work.trimmed_mean
    # the one-time cost comes from the measuring run (CUPTI slows captures): the lower end allows it 1.5x too high
    from graphmode.analyzers.break_even import CAPTURE_SLOWDOWN_BOUND, smallest_replays

    assert g.cost is not None and b.graph_ns is not None and note("one_time_traced", slowdown_bound=CAPTURE_SLOWDOWN_BOUND) in g.notes
    assert b.interval_low == min(b.replays, smallest_replays(g.cost.total_ns / (1 + CAPTURE_SLOWDOWN_BOUND), b.eager_ns - b.graph_ns))


def test_an_eager_only_loop_is_timed_by_the_timing_run_which_also_measures_the_first_graph(tmp_path: Path) -> None:
    """examples/cuda_python_capture.py --eager-only (tests/data/scripts/timed/recording.log, session 14): 200 synchronized
    steps of 16 tiny kernels and no graph. The step is found between the synchronizations (analyzers.inference.
    sync_iterations), it is CPU-bound, so the timing run stamped its call line (66) and measured the first graph's
    extra at its end; no probe run. The headline's eager period and the prediction's are the timing run's, which
    is the cadence of line 66 in the timing run's own stamps."""
    import lzma

    from graphmode.analyzers import analyze
    from graphmode.analyzers.run_plan import lines_to_time
    from graphmode.tracer.validate import validate_trace

    path = tmp_path / "cuda_python_eager_only.gmtrace"
    path.write_bytes(lzma.decompress((TIMED / "cuda_python_eager_only.gmtrace.xz").read_bytes()))
    with load(path) as trace:
        assert [(p.name, p.detail) for p in trace.passes] == [("measure", "graph"), ("detail", "graph"), ("timing", "stamps")]
        assert validate_trace(trace) == []
        (timing_run,) = [r for r in trace.meta["runs"] if r["config"]["name"] == "timing"]
        line = timing_run["config"]["stamp_lines"][0]
        assert line.endswith("examples/cuda_python_capture.py:66") and lines_to_time(trace) == [line]
        probe = trace.meta["first_graph_probe"]
        assert (probe["run"], probe["execs_before"]) == ("timing", 0) and probe["extra_ns"] > 0
        cadence = _line_cadence(trace, line)
        a = analyze(trace)
    eager = a.mode("eager")
    assert eager is not None and eager.wall is not None and eager.traced_wall is not None
    assert eager.wall_source == "timing" and eager.iterations >= 190
    assert abs(eager.wall.median - cadence) <= 0.02 * cadence
    assert eager.traced_wall.median > eager.wall.median  # the detail run (every call traced) was slower
    [r] = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert r.eager_period is not None and r.eager_period.ns == pytest.approx(eager.wall.median)
    assert r.first_graph_from == "this_process" and r.first_graph_extra is not None
    assert r.first_graph_extra.ns == pytest.approx(probe["extra_ns"])
    assert any(n.kind == "eager_period_scaled" and n["run"] == "timing" for n in r.notes)
    assert any("(from the timing run)" in n for n in words(r.notes))


def test_an_unsynchronized_cupy_loop_is_found_and_timed_against_the_programs_own_clock(tmp_path: Path) -> None:
    """benchmarks/third_party/cupy_chain.py --eager-only --iters 60 (tests/data/scripts/timed/recording.log, session 14):
    10 warm-up steps and 60 timed ones of 32 elementwise kernels, no synchronization until each loop's end. The detail
    run's line stamps give the step (analyzers.inference.loop_step): 32 kernels between two runs of the timed loop's
    line; it is found in every run (70 iterations with the warm-ups). The loop is CPU-bound, so the timing run times
    it: its median step is within 10% of the program's own clock in that run (its third GRAPHMODE_TRUTH line, a mean
    over the loop), and the prediction's eager period is that median."""
    import lzma

    from graphmode.analyzers import analyze
    from graphmode.analyzers.inference import loop_step, sync_iterations
    from graphmode.analyzers.script_graphs import script_graphs

    truths = [json.loads(ln.split(" ", 1)[1]) for ln in (TIMED / "recording.log").read_text().splitlines()[
        next(i for i, ln in enumerate((TIMED / "recording.log").read_text().splitlines()) if ln.endswith("-> cupy_unsynchronized.gmtrace.xz")) + 1:][:3]]
    path = tmp_path / "cupy_unsynchronized.gmtrace"
    path.write_bytes(lzma.decompress((TIMED / "cupy_unsynchronized.gmtrace.xz").read_bytes()))
    with load(path) as trace:
        assert [(p.name, p.detail) for p in trace.passes] == [("measure", "graph"), ("detail", "graph"), ("timing", "stamps")]
        assert sync_iterations(trace, script_graphs(trace)) == []  # no step between synchronizations
        step, line = loop_step(trace, 1)
        assert len(step) == 32 and line == "cupy_chain.py:37"
        a = analyze(trace)
    eager = a.mode("eager")
    assert eager is not None and eager.wall is not None and eager.wall_source == "timing" and eager.iterations >= 65
    assert eager.wall.median == pytest.approx(truths[2]["eager_ns"], rel=0.1)
    [r] = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert r.basis == note("basis_line", line="cupy_chain.py:37") and r.graph is not None and r.graph.kernels == 32
    assert r.iterations == 70 and not r.synchronized
    assert r.eager_period is not None and r.eager_period.ns == pytest.approx(eager.wall.median)


def test_cpu_bound_replays_of_jax_are_timed_by_the_timing_run() -> None:
    """JAX: a jitted step that XLA runs as a graph, called 200 times from one line; CPU-bound replays."""
    from graphmode.analyzers import analyze

    with load(TIMED / "jax_jit.gmtrace") as trace:
        lines = [r for r in trace.meta["runs"] if r["config"]["name"] == "timing"][0]["config"]["stamp_lines"]
        loop = max(lines, key=lambda x: trace.rows("SELECT count(*) FROM line_stamps WHERE pass_id = 2 AND file || ':' || "
                                                    "CAST(line AS VARCHAR) = ?", [x])[0][0])
        cadence = _line_cadence(trace, loop)
        a = analyze(trace)
    g = a.primary_graph()
    assert g is not None and g.graph is not None and g.graph.work is not None and g.replays >= 100
    assert (g.graph.run, g.graph.bound) == ("timing", "cpu")
    assert abs(g.graph.work.median - cadence) <= 0.05 * cadence


def test_loops_on_other_threads_keep_the_measured_period_and_say_why() -> None:
    """Two threads, each with its own eager loop and graph: the timing run stamps the main thread's lines
    only, so `graphmode run` made no timing run, and the report says why the periods keep the flag."""
    from graphmode.analyzers import analyze

    with load(TIMED / "two_threads.gmtrace") as trace:
        assert [p.name for p in trace.passes] == ["measure", "detail"]
        assert trace.rows("SELECT count(*) FROM line_stamps WHERE pass_id = 1")[0][0] > 0  # the detail run stamped
        a = analyze(trace)
    assert len([g for g in a.graphs if g.status == "replayed"]) == 2
    for g in a.graphs:
        assert g.eager is not None and g.eager.run == "measure"
        assert {n.kind for n in g.notes} & {"traced_cpu_bound_eager", "traced_cpu_bound_replays"}
    assert any(n.kind == "unstamped_iterations" for n in a.cannot_compute)


@pytest.mark.parametrize("available", [True, False])
def test_run_plans_make_a_timing_run_only_where_python_can_stamp(monkeypatch: pytest.MonkeyPatch, available: bool) -> None:
    import graphmode.tracer.line_stamps as line_stamps
    from graphmode.analyzers.run_plan import plan_runs

    monkeypatch.setattr(line_stamps, "AVAILABLE", available)
    auto = plan_runs(runs="full")
    # (then the probe run, made where no timing run measured the first graph: tests/test_script_runs.py)
    assert [c.name for c in auto] == (["measure", "detail", "timing", "probe"] if available else ["measure", "detail", "probe"])
    assert auto[1].stamp == ("all" if available else "")
    if available:  # no CUPTI at all; its lines are chosen after the detail run
        assert (auto[2].cupti, auto[2].stamp, auto[2].stamp_lines) == (False, "lines", ())
    assert [c.name for c in plan_runs(runs="2")] == ["measure", "detail"]
    (single,) = plan_runs(runs="auto", ranked=True)
    # it stamps the user's lines where it can (what a stamp costs is measured and taken off its periods)
    assert (single.name, single.stamp) == ("single", "all" if available else "")
    # by default, the timing run only for a script that built no graph, right after the one run
    assert [c.name for c in plan_runs(runs="auto")] == (["single", "timing", "probe"] if available else ["single", "probe"])
    assert all(c.when == "eager_only" for c in plan_runs(runs="auto")[1:-1])


def test_the_timing_run_appends_a_pass_without_loading_cupti(tmp_path: Path) -> None:
    """The timing run's process (`python -m graphmode.tracer.script_child`), on a script that needs no GPU:
    it adds a pass of detail 'stamps' and its entry in meta.runs to the trace the earlier runs wrote, and
    never imports CUPTI or cuda.bindings. Under Python < 3.12 it has no stamps and says so."""
    from graphmode.tracer.run_configs import timing_config
    from graphmode.tracer.store import TraceWriter

    script = tmp_path / "loop.py"
    script.write_text("import sys\ntotal = 0\nfor i in range(50):\n    total += i\n"
                      "print('cupti' in sys.modules or 'cuda.bindings' in sys.modules)\n")
    trace = tmp_path / "t.gmtrace"
    TraceWriter(trace, {"workload": "script"}).close()  # what the measuring and detail runs leave
    spec = {"config": dataclasses.asdict(timing_config([f"{script}:4"])), "out": str(trace), "append": True, "pass_id": 2}
    p = subprocess.run([sys.executable, "-m", "graphmode.tracer.script_child", json.dumps(spec), str(script)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"  # nothing of CUDA's was loaded in the script's process
    with load(trace) as t:
        assert [(x.pass_id, x.name, x.detail, x.status) for x in t.passes] == [(2, "timing", "stamps", "complete")]
        (run,) = t.meta["runs"]
        n = t.rows("SELECT count(*) FROM line_stamps WHERE pass_id = 2 AND line = 4")[0][0]
    assert run["config"]["stamp_lines"] == [f"{script}:4"] and run["script"]["exit_code"] == 0
    if sys.version_info >= (3, 12):
        assert n == 50 and run["line_stamps"] == 50
        assert 0 < run["stamp_cost_ns"] < 100_000  # measured after the script: what one stamp costs it
    else:
        assert n == 0 and "no line stamps in the timing run" in p.stderr


def test_the_timing_run_hears_pytorchs_capture_windows(tmp_path: Path) -> None:
    """The timing run's process on a script that imports a stand-in `torch` (a package in the script's folder
    whose torch.cuda.graphs.graph is a context manager that sleeps 2 ms): it hears each `with graph():` block
    start and end on its own clock (meta.runs[].torch), as the measuring run does, and still loads nothing of
    CUDA's."""
    from graphmode.tracer.run_configs import timing_config
    from graphmode.tracer.store import TraceWriter

    pkg = tmp_path / "torch"
    (pkg / "cuda").mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = 'stand-in'\nfrom . import cuda\n")
    (pkg / "cuda" / "__init__.py").write_text("from . import graphs\n")
    (pkg / "cuda" / "graphs.py").write_text(
        "import time\nclass graph:\n    def __enter__(self):\n        time.sleep(0.002)\n        return self\n"
        "    def __exit__(self, *exc):\n        return None\n")
    script = tmp_path / "capture.py"
    script.write_text("import sys\nimport torch\nfor _ in range(2):\n    with torch.cuda.graphs.graph():\n        pass\n"
                      "print('cupti' in sys.modules or 'cuda.bindings' in sys.modules)\n")
    trace = tmp_path / "t.gmtrace"
    TraceWriter(trace, {"workload": "script"}).close()
    spec = {"config": dataclasses.asdict(timing_config([f"{script}:4"])), "out": str(trace), "append": True, "pass_id": 2}
    p = subprocess.run([sys.executable, "-m", "graphmode.tracer.script_child", json.dumps(spec), str(script)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
    with load(trace) as t:
        (run,) = t.meta["runs"]
    ev = run["torch"]["events"]
    assert ev["kind"] == ["start_cuda_graph_block", "end_cuda_graph_block"] * 2
    ts = ev["ts_ns"]
    assert all(2_000_000 <= ts[i + 1] - ts[i] < 1_000_000_000 for i in (0, 2))  # each block slept 2 ms inside its window


def _call_trace(path: Path, timing_line10: list[int], timing_line11: list[int], detail_compile: tuple[int, int] | None = None,
                timing_compile: tuple[int, int] | None = None) -> Path:
    """Synthetic. A compiled step called from s.py:10, the next line s.py:11. Detail pass 1 (thread 11): PyTorch's
    recording window 1000-5000 (meta.torch); s.py:10 stamped at 100 (a warm-up call), 900 (the recording call),
    6000, 6400; s.py:11 at 800, 5600, 6300, 6700. Timing pass 2 (thread 22, its own clock): the window
    20,000-23,000 (its meta.runs entry) and the two lines at the times given."""
    t = SyntheticTrace().add_pass(1, "graph").add_pass(2, "stamps")

    def stamp(pass_id: int, thread: int, line: int, times: list[int]) -> None:
        for ts in times:
            t._add("line_stamps", pass_id=pass_id, thread_id=thread, thread_name="MainThread", file="s.py", line=line,
                   function="<module>", ts_ns=ts)

    stamp(1, 11, 10, [100, 900, 6000, 6400])
    stamp(1, 11, 11, [800, 5600, 6300, 6700])
    stamp(2, 22, 10, timing_line10)
    stamp(2, 22, 11, timing_line11)
    window = ["start_cudagraph_recording", "end_cudagraph_recording"]
    compile_ = ["start_dynamo", "end_dynamo"]

    def events(win: list[int], comp: tuple[int, int] | None, th: int) -> dict[str, list]:
        kinds, ts = (compile_ + window, [*comp, *win]) if comp else (window, win)
        return {"kind": kinds, "ts_ns": ts, "thread_id": [th] * len(kinds)}

    t.meta["torch"] = {"version": "2.11.0", "events": events([1000, 5000], detail_compile, 11)}
    t.meta["runs"] = [{"pass_id": 2, "config": {"name": "timing", "stamp_lines": ["s.py:10", "s.py:11"]},
                       "torch": {"version": "2.11.0", "events": events([20_000, 23_000], timing_compile, 22)}}]
    return t.write(path)


def test_the_statement_around_a_recording_is_timed_by_the_timing_run(tmp_path: Path) -> None:
    from graphmode.analyzers.per_graph import call_part
    from graphmode.analyzers.torch_windows import torch_windows
    from graphmode.analyzers.timing_run import _stamps, call_lines, timing_run_one_time

    # the timing run: a warm-up call 10,000-10,400, the recording call 19,500-23,800 around the window
    # 20,000-23,000, then four replay calls of 200 each
    path = _call_trace(tmp_path / "c.gmtrace", [10_000, 19_500, 24_000, 24_300, 24_600, 24_900],
                       [10_400, 23_800, 24_200, 24_500, 24_800, 25_100])
    with load(path) as trace:
        # detail run: the last stamp before 1000 is s.py:10 (at 900), the first after 5000 is s.py:11 (at 5600)
        assert call_lines(_stamps(trace, 1), torch_windows(trace, 1, callbacks_pass=True)) == [("s.py:10", "s.py:11")]
        (call,), _ = timing_run_one_time(trace, 1, 2, torch_windows(trace, 2, callbacks_pass=False))
    assert call is not None and call.lines == ("s.py:10", "s.py:11")
    # span 23,800 - 19,500 = 4300 around a window of 3000: 1300 outside it
    assert (call.span_ns, call.window_ns, call.outside_ns) == (4300, 3000, 1300)
    # the statement without a window: 400 (the warm-up), 200, 200, 200, 200: median 200 of 5
    assert (call.steady_ns, call.steady_count) == (200, 5)
    # one-time part: 1300 outside + a first replay of 150 inside the window - a steady call of 200 = 1250
    assert call_part(call, 150, 250) == 1250
    # without STEADY_CALLS (3) steady runs: a recording's call stands for a replay period (250): 1300 + 150 - 250
    few = dataclasses.replace(call, steady_ns=None, steady_count=2)
    assert call_part(few, 150, 250) == 1200
    # never below zero: a statement faster outside the window than a steady call adds nothing
    assert call_part(dataclasses.replace(call, steady_ns=2000.0), 150, 250) == 0


def test_a_statement_without_its_lines_stamped_around_the_window_is_not_timed(tmp_path: Path) -> None:
    from graphmode.analyzers.torch_windows import torch_windows
    from graphmode.analyzers.timing_run import timing_run_one_time

    # the timing run stamped s.py:10 only after the window: no stamp of it before 20,000
    path = _call_trace(tmp_path / "n.gmtrace", [24_000], [24_200])
    with load(path) as trace:
        assert timing_run_one_time(trace, 1, 2, torch_windows(trace, 2, callbacks_pass=False))[0] == (None,)


def test_a_capture_outside_pytorch_is_timed_by_the_timing_run(tmp_path: Path) -> None:
    """SYNTHETIC. The detail run (pass 1, thread 11) captured graph 7 from 1000 (cudaStreamBeginCapture) to 1500
    and instantiated it 1520-1900; s.py:30 (begin_capture) was stamped at 990, s.py:33 (the line after the
    instantiation) at 1910: a span of 920, of which 900 is the region and 20 the two statements' own work around
    it. The timing run (pass 2) stamped s.py:30 at 50,000 and s.py:33 at 50,600: making the graph took 600 there,
    the statements' own work included (CuPy's end_capture destroys the captured graph, for instance)."""
    from graphmode.analyzers.timing_run import _stamps, capture_lines, timing_run_one_time

    def build(timing: list[tuple[int, int]]) -> Path:
        t = SyntheticTrace().add_pass(1, "graph").add_pass(2, "stamps")
        t._add("graph_events", pass_id=1, graph_id=7, exec_id=1007, event="capture", start_ns=1000, end_ns=1500, correlation_id=1, thread_id=11)
        t._add("graph_events", pass_id=1, graph_id=7, exec_id=1007, event="instantiate", start_ns=1520, end_ns=1900, correlation_id=2, thread_id=11)
        for line, ts in [(30, 990), (33, 1910)]:
            t._add("line_stamps", pass_id=1, thread_id=11, thread_name="MainThread", file="s.py", line=line, function="<module>", ts_ns=ts)
        for line, ts in timing:
            t._add("line_stamps", pass_id=2, thread_id=22, thread_name="MainThread", file="s.py", line=line, function="<module>", ts_ns=ts)
        return t.write(tmp_path / f"c{len(timing)}.gmtrace")

    with load(build([(30, 50_000), (33, 50_600)])) as trace:
        assert capture_lines(trace, 1, _stamps(trace, 1), ()) == {7: ("s.py:30", "s.py:33")}
        (span,) = timing_run_one_time(trace, 1, 2, ())[1].values()
    assert (span.span_ns, span.outside_ns) == (600, 20)  # the whole span counts (CaptureSpan)
    # the lines ran a different number of times in the timing run: not matched
    with load(build([(30, 40_000), (30, 50_000), (33, 50_600)])) as trace:
        assert timing_run_one_time(trace, 1, 2, ())[1] == {}
    # a statement much longer than its capture (a library call that captures, then benchmarks: the next line is
    # stamped 10,000 after the instantiation): outside 10,090 of 11,000 is over MAX_OUTSIDE_SHARE, not used
    t = SyntheticTrace().add_pass(1, "graph")
    t._add("graph_events", pass_id=1, graph_id=7, exec_id=1007, event="capture", start_ns=1000, end_ns=1500, correlation_id=1, thread_id=11)
    t._add("graph_events", pass_id=1, graph_id=7, exec_id=1007, event="instantiate", start_ns=1520, end_ns=1900, correlation_id=2, thread_id=11)
    for line, ts in [(30, 900), (33, 11_900)]:
        t._add("line_stamps", pass_id=1, thread_id=11, thread_name="MainThread", file="s.py", line=line, function="<module>", ts_ns=ts)
    with load(t.write(tmp_path / "long.gmtrace")) as trace:
        assert capture_lines(trace, 1, _stamps(trace, 1), ()) == {}


def test_a_compilation_in_the_recording_statement_is_not_recording_work(tmp_path: Path) -> None:
    """SYNTHETIC, the statement above compiling first: Dynamo compiled 19,600-19,900 in the timing run, inside the
    span 19,500-23,800 and outside the window 20,000-23,000 (the detail run: 920-990). The statement's time
    outside the window is 1300 - 300 = 1000. A timing run that did not hear compilations (recorded before it did),
    where the detail run's statement compiled, gives no answer rather than count the compilation."""
    from graphmode.analyzers.torch_windows import torch_windows
    from graphmode.analyzers.timing_run import timing_run_one_time

    timing10, timing11 = [10_000, 19_500, 24_000, 24_300, 24_600, 24_900], [10_400, 23_800, 24_200, 24_500, 24_800, 25_100]
    path = _call_trace(tmp_path / "c.gmtrace", timing10, timing11, detail_compile=(920, 990), timing_compile=(19_600, 19_900))
    with load(path) as trace:
        (call,), _ = timing_run_one_time(trace, 1, 2, torch_windows(trace, 2, callbacks_pass=False))
    assert call is not None and (call.compile_ns, call.outside_ns) == (300, 1000)
    path = _call_trace(tmp_path / "old.gmtrace", timing10, timing11, detail_compile=(920, 990))
    with load(path) as trace:
        assert timing_run_one_time(trace, 1, 2, torch_windows(trace, 2, callbacks_pass=False))[0] == (None,)
