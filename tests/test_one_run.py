"""Issue 29: `graphmode run`'s one traced run, and the tracer's calibrated cost taken off its figures.

Hand-computed SYNTHETIC cases for the arithmetic (the fit of the tracer's cost from launch probes, the correction of
a period and of a capture, the break-even interval's allowance); real recordings of the one traced run on the H200
(tests/data/scripts/one_run, recording.log: the programs' own untraced clocks) for what the report says.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.break_even import CORRECTED_SLOWDOWN_BOUND, break_even_series
from graphmode.analyzers.costmodel import (TRACER_CAPTURE_GRAPH, TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE,
                                           TRACER_CAPTURE_NODE_COPIED, Spread, fit_launch_costs, fit_tracer_costs)
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.tracer_cost import CORRECTED, TracerCorrection, capture_correction, launch_extra, with_tracer_cost
from graphmode.tracer.store import load
from tests.conftest import load_benchmark, unpacked_xz

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "scripts" / "one_run"


def _probe(framework: str, traced: bool, rows: list[tuple[str, int, float, int]]) -> dict[str, object]:
    """A launch probe process's JSON (tracer.launch_probes): rows of (variant, ops, wall ns, kernels; -1 when traced)."""
    return {"framework": framework, "traced": traced,
            "rows": [{"variant": v, "ops": k, "wall_ns": w, "kernels": n, "gpu_ns": 0.0 if n >= 0 else -1.0}
                     for v, k, w, n in rows]}


def test_the_tracers_cost_is_the_traced_slope_less_the_untraced_one() -> None:
    """SYNTHETIC, by hand: untraced pointwise slopes (4000-1000)/30 = 100 and (4300-1100)/30 = 106.67 ns a kernel,
    median 103.33; traced processes (5500-1500)/30 = 133.33 and (5800-1600)/30 = 140 (their kernels counted by the
    untraced ones: 10 and 40): extras 30 and 36.67, median 33.33. Captures (kernels = ops): untraced slopes
    (1600-1000)/24 = 25 and (1700-1100)/24 = 25, intercepts 1000 - 25*8 = 800 and 900; traced (4000-3000)/24 = 41.67
    and (4300-3100)/24 = 50, intercepts 3000 - 41.67*8 = 2666.67 and 2700: per node +16.67 and +25, per graph
    2666.67 - 850 and 2700 - 850."""
    probes = [
        _probe("torch", False, [("pointwise", 8, 1000, 10), ("pointwise", 32, 4000, 40), ("capture", 8, 1000, 8), ("capture", 32, 1600, 32)]),
        _probe("torch", False, [("pointwise", 8, 1100, 10), ("pointwise", 32, 4300, 40), ("capture", 8, 1100, 8), ("capture", 32, 1700, 32)]),
        _probe("torch", True, [("pointwise", 8, 1500, -1), ("pointwise", 32, 5500, -1), ("capture", 8, 3000, 8), ("capture", 32, 4000, 32)]),
        _probe("torch", True, [("pointwise", 8, 1600, -1), ("pointwise", 32, 5800, -1), ("capture", 8, 3100, 8), ("capture", 32, 4300, 32)]),
    ]
    fit = fit_tracer_costs(probes)
    assert fit["torch_pointwise"].median == pytest.approx((4000 / 30 - 103.3333 + 140 - 103.3333) / 2, rel=1e-3)
    assert sorted(fit["torch_pointwise"].samples) == pytest.approx([133.3333 - 103.3333, 140 - 103.3333], rel=1e-4)
    assert sorted(fit[TRACER_CAPTURE_NODE].samples) == pytest.approx([1000 / 24 - 25, 50 - 25], rel=1e-4)
    assert sorted(fit[TRACER_CAPTURE_GRAPH].samples) == pytest.approx([3000 - 8000 / 24 - 850, 2700 - 850], rel=1e-4)
    # the launch costs are the untraced processes' alone
    launch, _ = fit_launch_costs([{**p, "rows": [r for r in p["rows"] if r["variant"] != "capture"]} for p in probes])  # type: ignore[index, union-attr]
    assert launch["torch_pointwise"].per_kernel.median == pytest.approx(103.3333, rel=1e-4)
    assert fit_tracer_costs(probes[:2]) == {}  # no traced twin: nothing to fit
    # the same traced processes copying destroyed graphs (session 26 on): their captures' cost goes to the copied
    # keys, over the same untraced baseline; the launches' costs are the same keys as before
    copied = probes[:2] + [{**p, "topology_copies": True} for p in probes[2:]]
    fit_q = fit_tracer_costs(copied)
    assert TRACER_CAPTURE_NODE not in fit_q and TRACER_CAPTURE_GRAPH not in fit_q
    assert sorted(fit_q[TRACER_CAPTURE_NODE_COPIED].samples) == pytest.approx([1000 / 24 - 25, 50 - 25], rel=1e-4)
    assert sorted(fit_q[TRACER_CAPTURE_GRAPH_COPIED].samples) == pytest.approx([3000 - 8000 / 24 - 850, 2700 - 850], rel=1e-4)
    assert fit_q["torch_pointwise"].samples == fit["torch_pointwise"].samples


def _table(period: list[float], gpu_busy: list[float], gpu_bound: list[bool], start: list[int]) -> IterationTable:
    n = len(period)
    z = np.zeros(n, dtype=np.int64)
    return IterationTable(
        0, np.full(n, "eager", dtype=object), z + 1, z, np.full(n, "steady", dtype=object), np.full(n, "inferred", dtype=object),
        z, z, np.asarray(start, dtype=np.int64), np.asarray(start, dtype=np.int64) + np.asarray(period, dtype=np.int64),
        np.asarray(start, dtype=np.int64), z - 1, np.asarray(start, dtype=np.int64), np.asarray(start, dtype=np.int64) + 1,
        np.asarray(gpu_busy, dtype=np.int64), z, np.asarray(period, dtype=np.float64), np.full(n, np.nan),
        np.asarray(period, dtype=np.float64), np.asarray(gpu_bound), np.full(n, "", dtype=object), np.full(n, np.nan))


def test_a_cpu_bound_period_loses_the_tracers_cost_never_below_its_own_gpu_work() -> None:
    """SYNTHETIC: periods 1000, 1000, 1000 ns; the tracer added 300 to each; GPU work 500, 800, 900; the third row
    GPU-bound. 1000 - 300 = 700; 1000 - 300 = 700 < 800: 800; the GPU-bound row keeps 1000."""
    t = _table([1000, 1000, 1000], [500, 800, 900], [False, False, True], [0, 1000, 2000])
    c = with_tracer_cost(t, np.array([300.0, 300.0, 300.0]))
    assert list(c.period) == [700, 800, 1000] and list(c.work) == [700, 800, 1000]
    assert list(c.timed_by) == [CORRECTED, CORRECTED, ""]
    assert list(c.traced_work[:2]) == [1000, 1000] and np.isnan(c.traced_work[2])
    assert with_tracer_cost(t, np.zeros(3)) is t  # nothing to take off


def _spread(x: float) -> Spread:
    s = Spread.of([x])
    assert s is not None
    return s


def test_the_tracers_cost_of_a_period_is_priced_by_each_kernels_launcher(tmp_path: Path) -> None:
    """SYNTHETIC: eager kernels at 100, 200, 300 (pointwise: 10 ns each to trace) and 250 (a cuBLAS nvjet kernel: a
    library call, 30 ns); iterations [100, 250) and [250, 400): 10 + 10 = 20 (two kernels), then 30 + 10 = 40."""
    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import SyntheticTrace

    st = SyntheticTrace().add_pass(0, "graph", name="single")
    for at, name in ((100, "vectorized_elementwise_kernel"), (200, "vectorized_elementwise_kernel"),
                     (250, "nvjet_sm90_tst_64x8_64x16"), (300, "elementwise_kernel")):
        st.span(0, name, at, at + 10, 0)
    path = st.write(tmp_path / "t.gmtrace")
    c = TracerCorrection({"torch_pointwise": _spread(10.0), "torch_library": _spread(30.0)}, None, None, "torch")
    t = _table([150, 150], [20, 20], [False, False], [100, 250])
    with load(path) as trace:
        extra, count = launch_extra(trace, 0, t, c)
    assert list(extra) == [20.0, 40.0] and list(count) == [2, 2]


def test_a_capture_loses_the_tracers_cost_only_where_pytorch_made_it() -> None:
    """SYNTHETIC: 1,000 ns a graph + 10 ns a node: a 50-node PyTorch capture loses 1,500 ns; a CuPy or cuda-python one
    (framework 'raw') nothing: the calibration's per-graph part is PyTorch's (tracer_cost.capture_correction)."""
    c = TracerCorrection({}, _spread(1000.0), _spread(10.0), "torch")
    assert capture_correction(c, 50) == 1500.0
    assert capture_correction(TracerCorrection({}, _spread(1000.0), _spread(10.0), "raw"), 50) is None
    assert capture_correction(TracerCorrection({}, None, None, "torch"), 50) is None


def test_the_break_even_interval_allows_a_corrected_eager_period_either_way() -> None:
    """SYNTHETIC: eager 1000 ns, replay 200 ns, one-time 8000 ns: break-even ceil(8000 / 800) = 10. With the eager
    period allowed 50% either way: upper end ceil(8000 / (1000/1.5 - 200)) = ceil(17.14) = 18, lower end
    ceil(8000 / (1500 - 200)) = ceil(6.15) = 7."""
    e, g = np.full(50, 1000.0), np.full(50, 200.0)
    plain = break_even_series("eager", e, g, 1, 8000.0, 50)
    assert (plain.replays, plain.interval_low, plain.interval_high) == (10, 10, 10)
    spread = break_even_series("eager", e, g, 1, 8000.0, 50, eager_spread=0.5)
    assert (spread.replays, spread.interval_low, spread.interval_high) == (10, 7, 18)


def _truths() -> dict[str, list[dict[str, float]]]:
    """recording.log: per workload, the untraced processes' own figures."""
    out: dict[str, list[dict[str, float]]] = {}
    for line in (DATA / "recording.log").read_text().splitlines():
        m = re.match(r"untraced (\S+) proc \d+ GRAPHMODE_TRUTH (.*)$", line)
        if m:
            out.setdefault(m.group(1), []).append(json.loads(m.group(2)))
    return out


def _traced_clock(name: str) -> dict[str, float]:
    for line in (DATA / "recording.log").read_text().splitlines():
        if line.startswith(f"traced {name} GRAPHMODE_TRUTH "):
            return json.loads(line.split("GRAPHMODE_TRUTH ", 1)[1])  # type: ignore[no-any-return]
    raise AssertionError(name)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("one_run")
    out = {}
    for f in DATA.glob("*.gmtrace.xz"):
        p = unpacked_xz(f, d)
        out[p.stem] = p
    return out


def test_a_recorded_one_run_is_one_pass_without_launch_records(recordings: dict[str, Path]) -> None:
    """The recordings are what the default `graphmode run` writes: one traced pass, 'single', no API record of a
    kernel launch, the graphs known by their callbacks."""
    for name, path in recordings.items():
        with load(path) as t:
            assert [(p.pass_id, p.name) for p in t.passes] == [(0, "single")], name
            assert t.rows("SELECT count(*) FROM api_calls WHERE category = 'kernel_launch'")[0][0] == 0, name
            assert t.rows("SELECT count(*) FROM graphs WHERE origin = 'capture'")[0][0] >= 1, name


def test_a_pytorch_decode_step_loses_the_tracers_cost_and_its_interval_holds_the_truth(recordings: dict[str, Path]) -> None:
    """The Llama decode step captured whole (hf_static_decode.py): its eager steps are CPU-bound; the traced run read
    them slower than the program's own untraced clocks, the analysis takes the calibrated cost of tracing each launch
    off (by launcher, from the bundled H200 model), says so, and the break-even's interval holds the one the untraced
    processes' clocks give."""
    truth = _truths()["hf_graph"]
    with load(recordings["hf_graph-graphmode-00"]) as t:
        a = analyze(t)
    g = a.graphs[0]
    assert g.eager is not None and g.eager.run == CORRECTED and g.eager.work is not None and g.eager.traced_work is not None
    traced, corrected = g.eager.traced_work.median, g.eager.work.median
    assert corrected < traced
    # what came off: the tracer's cost of the step's launches, a fraction of the step
    assert 0.05 * traced < traced - corrected < 0.5 * traced
    kinds = [n.kind for n in g.notes]
    assert "tracer_cost_taken_off" in kinds and "traced_cpu_bound_eager" not in kinds
    assert g.cost is not None and g.cost.tracer_correction_ns is not None and g.cost.tracer_correction_ns < 0
    assert "one_time_tracer_cost_taken_off" in kinds
    be = g.break_even
    assert be is not None and be.interval_low is not None
    for u in truth:
        one_time = u["capture_block_ns"] + u["first_replay_ns"] - u["graph_ns"]
        true_be = int(np.ceil(one_time / (u["eager_ns"] - u["graph_ns"])))
        assert be.interval_low <= true_be and (be.interval_high is None or true_be <= be.interval_high), (true_be, be)
    assert a.headline is not None and a.headline.period_source == CORRECTED
    # the replay is not touched: the tracer does not slow the GPU
    assert g.graph is not None and g.graph.run != CORRECTED


def test_a_graph_per_batch_size_each_corrected(recordings: dict[str, Path]) -> None:
    """timm's ViT with a graph per batch size: every graph's eager twin is corrected, within the stated bound of the
    program's own untraced clock (either way: at batch 8 this process ran barely slowed, and the correction overshot),
    and over the four sizes the corrected periods are nearer the untraced clocks than the traced ones."""
    truth = _truths()["vit_batches"]
    with load(recordings["vit_batches-graphmode-00"]) as t:
        a = analyze(t)
    replayed = sorted((g for g in a.graphs if g.status == "replayed"), key=lambda g: g.graph_id)
    assert len(replayed) == 4
    errors = []
    for b, g in zip((1, 2, 4, 8), replayed):
        assert g.eager is not None and g.eager.run == CORRECTED and g.eager.work is not None and g.eager.traced_work is not None
        untraced = float(np.median([u[f"eager_b{b}_ns"] for u in truth]))
        # the break-even's figure (the trimmed mean): within the bound its interval allows, either way
        assert 1 / (1 + CORRECTED_SLOWDOWN_BOUND) <= g.eager.work.trimmed_mean / untraced <= 1 + CORRECTED_SLOWDOWN_BOUND, b
        errors.append((abs(g.eager.work.trimmed_mean / untraced - 1), abs(g.eager.traced_work.trimmed_mean / untraced - 1)))
        assert g.graph is not None and g.graph.work is not None
        assert g.graph.work.median == pytest.approx(float(np.median([u[f"graph_b{b}_ns"] for u in truth])), rel=0.05)
    assert float(np.median([c for c, _ in errors])) < float(np.median([r for _, r in errors]))


def test_a_capture_outside_pytorch_keeps_its_traced_figures_and_says_so(recordings: dict[str, Path]) -> None:
    """CuPy (cupy_chain.py): no launcher of it was calibrated and its capture is not PyTorch's: nothing comes off, and
    the notes give the measured bounds of a traced figure."""
    with load(recordings["cupy-graphmode-00"]) as t:
        a = analyze(t)
    g = a.graphs[0]
    assert g.eager is not None and g.eager.run == "single"
    assert g.cost is not None and g.cost.tracer_correction_ns is None
    kinds = [n.kind for n in g.notes]
    assert "tracer_cost_taken_off" not in kinds and "one_time_traced" in kinds


def test_an_older_recording_is_not_corrected() -> None:
    """A pass recorded by another configuration (the detail run's, every API call and node callbacks) is not what the
    calibration measured: its figures keep their traced readings."""
    with load(ROOT / "tests" / "data" / "scripts" / "torch_cudagraph.gmtrace") as t:
        a = analyze(t)
    for g in a.graphs:
        for p in (g.eager, g.graph):
            assert p is None or p.run != CORRECTED
        assert g.cost is None or g.cost.tracer_correction_ns is None


def test_the_one_run_is_reported_alike_in_json(recordings: dict[str, Path]) -> None:
    """The JSON report validates and carries the correction: the graph's one-time part and the period's source."""
    import jsonschema

    from graphmode.reports.json_report import report_dict

    with load(recordings["hf_graph-graphmode-00"]) as t:
        d = report_dict(analyze(t))
    schema = json.loads((ROOT / "reports" / "report.schema.json").read_text())
    jsonschema.validate(d, schema)
    g = d["graphs"][0]
    assert g["cost"]["tracer_correction_ns"] < 0
    assert d["headline"]["period_source"] == CORRECTED


S19 = ROOT / "tests" / "data" / "scripts" / "one_run_s19"


def _s19_truth(config: str) -> dict[str, float]:
    for line in (S19 / "recording.log").read_text().splitlines():
        if line.startswith(f"mgc_mobilenet {config} GRAPHMODE_TRUTH "):
            return {k: float(v) for k, v in json.loads(line.split("GRAPHMODE_TRUTH ", 1)[1]).items() if k.endswith("_ns")}
    raise AssertionError(config)


def test_the_one_run_times_make_graphed_callables_with_its_warm_ups(tmp_path: Path) -> None:
    """The real recording of `graphmode run` on a MobileNetV3 step graphed by make_graphed_callables (session 19: the one
    traced run stamps the user's lines). The step's one-time cost is the statement that made both graphs, warm-ups
    included, timed by the run's own stamps of that line and the next (which read what the program's own clock read of
    the call in that process), less the tracer's calibrated cost of the launches and stamps inside it and of the two
    captures: basis 'statement_corrected'. Before, the one run gave the captures alone: 0.24x the untraced call."""
    import graphmode.analyzers.steps as steps_module
    p = unpacked_xz(S19 / "mgc_mobilenet-graphmode-00.gmtrace.xz", tmp_path)
    seen: list[tuple[int, int, float]] = []
    real = steps_module.window_extra

    def spy(trace: Any, pass_id: int, lo: int, hi: int, c: Any) -> float:
        v = real(trace, pass_id, lo, hi, c)
        seen.append((lo, hi, v))
        return v

    with load(p) as t:
        assert [(x.name, x.detail) for x in t.passes] == [("single", "graph")]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(steps_module, "window_extra", spy)
            a = analyze(t)
    (step,) = [s for s in a.steps if len(s.graphs) == 2]
    assert step.one_time_basis == "statement_corrected" and step.one_time_statement.endswith("mgc_mobilenet.py:54")
    (lo, hi, extra), = seen
    traced = _s19_truth("graphmode")["make_graphed_ns"]
    assert (hi - lo) == pytest.approx(traced, rel=0.05)  # the stamps' span is the call as the program timed it, traced
    costs = [g.cost for g in a.graphs if g.graph_id in step.graphs]
    captures = -sum(c.tracer_correction_ns or 0.0 for c in costs if c is not None)
    excess = sum(c.first_launch_excess_ns or 0.0 for c in costs if c is not None)
    assert extra > 0 and captures > 0
    assert step.one_time_ns == pytest.approx((hi - lo) - extra - captures + excess)
    untraced = _s19_truth("untraced")["make_graphed_ns"]
    assert abs(step.one_time_ns / untraced - 1) <= 0.25  # 0.82x of the one untraced process (0.24x before)
    # the untraced process's break-even (its one-time cost: the call and its first step over a steady one) is within 1
    # replay, and inside the interval (which allows the corrected statement CORRECTED_CAPTURE_BOUND too high)
    u = _s19_truth("untraced")
    truth = math.ceil((u["make_graphed_ns"] + u["first_step_ns"] - u["graph_ns"]) / (u["eager_ns"] - u["graph_ns"]))
    b = step.break_even
    assert b is not None and b.replays is not None and abs(b.replays - truth) <= 1
    assert b.interval_low is not None and b.interval_high is not None and b.interval_low <= truth <= b.interval_high
    assert a.headline is not None and a.headline.one_time_statement.endswith("mgc_mobilenet.py:54")


def test_what_tracing_added_to_a_stretch_is_its_launches_and_stamps(tmp_path: Path) -> None:
    """SYNTHETIC: launch calls at 100, 200, 300 (pointwise kernels: 10 ns each to trace) and 250 (a cuBLAS nvjet kernel:
    30 ns); stamps at 150, 260 and 500, 5 ns each. The stretch [100, 300): kernels launched at 100, 200, 250 (10 + 10 + 30
    = 50) and stamps at 150, 260 (2 x 5 = 10): 60. A period [100, 250) of an iteration starting at its launch call 100:
    its kernel at 100 and 200 (20) and the stamp at 150 (5): 25."""
    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import SyntheticTrace

    from graphmode.analyzers.tracer_cost import window_extra

    st = SyntheticTrace().add_pass(0, "graph", name="single")
    for at, name in ((100, "vectorized_elementwise_kernel"), (200, "vectorized_elementwise_kernel"),
                     (250, "nvjet_sm90_tst_64x8_64x16"), (300, "elementwise_kernel")):
        corr = st.api(0, "cudaLaunchKernel", "kernel_launch", at, at + 5)
        st.span(0, name, at + 1000, at + 1010, corr)  # the GPU runs behind: the stretch is read on the CPU's side
    path = st.write(tmp_path / "t.gmtrace")
    c = TracerCorrection({"torch_pointwise": _spread(10.0), "torch_library": _spread(30.0)}, None, None, "torch",
                         per_stamp=5.0, stamps=np.array([150, 260, 500], dtype=np.int64))
    with load(path) as trace:
        assert window_extra(trace, 0, 100, 300, c) == 60.0
        t = _table([150], [20], [False], [1100])
        t = dataclasses.replace(t, start_ns=np.array([100], dtype=np.int64))
        extra, count = launch_extra(trace, 0, t, c)
    # the kernels by their GPU start in [1100, 1250): 1100 and 1200 (20); the stamps by the CPU side [100, 250): 150 (5)
    assert list(extra) == [25.0] and list(count) == [2]


def test_the_one_run_says_what_its_stamps_cost_where_it_is_more_than_a_trace(tmp_path: Path) -> None:
    """DERIVED from the MobileNetV3 recording (438 stamps at 620 ns, 0.27 ms of a run of seconds: not said); the same
    trace with its measured stamp cost set to 1 ms a stamp (438 ms, a share of the run above STAMPS_SAID_SHARE): the
    note gives the count, the cost each and in all, and the share of the run."""
    from graphmode.analyzers.script_analysis import STAMPS_SAID_SHARE
    from graphmode.reports.notes import word
    from graphmode.tracer.store import TraceWriter

    p = unpacked_xz(S19 / "mgc_mobilenet-graphmode-00.gmtrace.xz", tmp_path)
    with load(p) as t:
        assert not [n for n in analyze(t).cannot_compute if n.kind == "one_run_stamps"]
        took = t.passes[0].end_ns - t.passes[0].start_ns
        stamps = t.rows("SELECT count(*) FROM line_stamps WHERE pass_id = 0")[0][0]
        runs = t.meta["runs"]
    assert stamps * 1e6 >= STAMPS_SAID_SHARE * took
    w = TraceWriter(p, append=True)
    try:
        w.set_meta({"runs": [dict(r, stamp_cost_ns=1e6) if r["pass_id"] == 0 else r for r in runs]})
    finally:
        w.close(keep_status=True)
    with load(p) as t:
        (n,) = [n for n in analyze(t).cannot_compute if n.kind == "one_run_stamps"]
    assert n["stamps"] == stamps and n["per_stamp_ns"] == 1e6
    assert n["total_ns"] == pytest.approx(stamps * 1e6) and n["share"] == pytest.approx(stamps * 1e6 / took)
    assert f"{stamps:,} times" in word(n)


def test_a_capture_is_corrected_by_the_calibration_of_its_session(recordings: dict[str, Path]) -> None:
    """A pass whose session copied the graphs it saw destroyed (the one run since session 26) takes its captures' cost
    from the copied keys, an older one from the keys measured before: the decode step's recording, its run entry said
    so in memory,
    against a model whose two capture calibrations differ (SYNTHETIC values, 100 us and 1 us apart)."""
    from graphmode.analyzers.costmodel import bundled_dir, load_model
    from graphmode.analyzers.tracer_cost import topology_copies, tracer_correction

    model = load_model(bundled_dir() / "costmodel-nvidia-h200.json")
    captures = {TRACER_CAPTURE_GRAPH: _spread(500_000.0), TRACER_CAPTURE_NODE: _spread(10_000.0),
                TRACER_CAPTURE_GRAPH_COPIED: _spread(400_000.0), TRACER_CAPTURE_NODE_COPIED: _spread(9_000.0)}
    model = dataclasses.replace(model, tracer={**model.tracer, **captures},
                                tracer_sparse={**model.tracer_sparse, **captures})
    with load(recordings["hf_graph-graphmode-00"]) as t:
        pid = next(p.pass_id for p in t.passes if p.name == "single")
        assert not topology_copies(t, pid)
        read = tracer_correction(t, pid, model, torch_program=True)
        for r in t.meta["runs"]:
            if r.get("pass_id") == pid:
                r["config"]["topology_copies"] = True
        assert topology_copies(t, pid)
        copies = tracer_correction(t, pid, model, torch_program=True)
    assert read is not None and copies is not None
    assert capture_correction(read, 100) == pytest.approx(500_000 + 100 * 10_000)
    assert capture_correction(copies, 100) == pytest.approx(400_000 + 100 * 9_000)
    assert copies.per_kernel == read.per_kernel  # a launch's cost is the same calibration either way


COPIED = ROOT / "tests" / "data" / "scripts" / "copied_s26"


def test_a_recording_of_the_copied_session_takes_its_captures_cost_from_its_own_calibration(tmp_path: Path) -> None:
    """A real recording (session 26, device call 4: the graphed Llama decode step under the default `graphmode run`,
    the one run copying the graph PyTorch destroys in its capture block): the copy was read at the end as the graph's
    topology, the capture's tracing cost comes off by the copied session's calibration in the bundled model, and the
    break-even's interval holds both untraced processes' break-evens of the same device call (results.jsonl)."""
    from graphmode.analyzers.costmodel import (TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE_COPIED, bundled_dir,
                                               load_model)
    from graphmode.analyzers.tracer_cost import topology_copies

    path = unpacked_xz(COPIED / "hf_graph-graphmode-00.gmtrace.xz", tmp_path)
    model = load_model(bundled_dir() / "costmodel-nvidia-h200.json")
    with load(path) as t:
        run = next(r for r in t.meta["runs"] if r.get("pass_id") == 0)
        assert run["config"]["topology_copies"] is True and topology_copies(t, 0)
        assert run["topology_copies"]["copied"] >= 1 and run["topology_copies"]["read_at_destroy"] == 0
        a = analyze(t)
        nodes = t.rows("SELECT count(*) FROM graph_nodes WHERE pass_id = 0 AND graph_id = ?", [a.graphs[0].graph_id])[0][0]
    g = a.graphs[0]
    assert nodes >= 100  # the decode step's kernels, read from the copy
    assert g.cost is not None and g.cost.tracer_correction_ns is not None
    want = model.tracer[TRACER_CAPTURE_GRAPH_COPIED].median + model.tracer[TRACER_CAPTURE_NODE_COPIED].median * nodes
    assert -g.cost.tracer_correction_ns == pytest.approx(want, rel=1e-6)
    be = g.break_even
    assert be is not None and be.interval_low is not None
    untraced = [json.loads(line)["truth"] for line in (COPIED / "results.jsonl").read_text().splitlines()
                if json.loads(line)["config"] == "untraced"]
    assert len(untraced) == 2
    for u in untraced:
        one_time = u["capture_block_ns"] + u["first_replay_ns"] - u["graph_ns"]
        true_be = int(np.ceil(one_time / (u["eager_ns"] - u["graph_ns"])))
        assert be.interval_low <= true_be and (be.interval_high is None or true_be <= be.interval_high), (true_be, be)


RATIOS = ROOT / "benchmarks" / "results" / "one_run" / "one_run_ratios.jsonl"
SLOW_CAPTURE = ROOT / "tests" / "data" / "scripts" / "slow_capture_s27"


def _ratios() -> list[dict[str, Any]]:
    """The bounds record (benchmarks/one_run_bounds.py): one row a graph, step or predicted region."""
    return [json.loads(line) for line in RATIOS.read_text().splitlines() if line.strip()]


def test_the_stated_bounds_hold_on_the_benchmark_record() -> None:
    """Issue 29, item 4: the bounds a report states for the one run's figures hold for every graph of the recorded
    benchmark set: the default `graphmode run` of third-party programs on the H200 against the same programs' untraced
    processes (sessions 25-27, benchmarks/one_run_bounds.py). A corrected one-time cost: CORRECTED_CAPTURE_BOUND too
    high, CORRECTED_CAPTURE_LOW_BOUND too low (until session 27 it said 1.75x, which 14 of these 52 exceeded);
    an eager period leveled by an untraced window, a graph's eager twin or a region predicted from an eager-only program:
    WINDOW_EAGER_BOUND either way (a graph's was bounded as traced, too long only, and 27 of 48 read shorter than the
    untraced median; a prediction's at 1.4x, which 4 of 21 exceeded); a replay folded from its nodes' records (the one run
    after a window): NODE_RECORDS_REPLAY_SLOWDOWN too long (5% until session 27; the decode step's read 11%); a one-time
    cost as traced, where no calibration of the tracer is known: SINGLE_CAPTURE_BOUND too high (1.85 until session 27,
    against up to 3.41 here); a CPU-bound period with the tracer's cost taken off: CORRECTED_SLOWDOWN_BOUND either way
    (0.85 until session 27, against up to 2.26x here)."""
    from graphmode.analyzers.break_even import (CORRECTED_CAPTURE_BOUND, CORRECTED_CAPTURE_LOW_BOUND,
                                                CORRECTED_SLOWDOWN_BOUND, SINGLE_CAPTURE_BOUND, UNTRACED_CAPTURE_BOUND,
                                                UNTRACED_CAPTURE_LOW_BOUND, WINDOW_EAGER_BOUND)
    from graphmode.analyzers.tracer_cost import NODE_RECORDS_REPLAY_SLOWDOWN

    rows = _ratios()
    # since session 29 the one run's PyTorch captures are made with CUPTI detached: nothing is corrected, their own
    # bounds (25 graphs of the decode step, ResNet-18 and the ViT with a graph per batch size, three device calls)
    untraced = [r for r in rows if r.get("capture_untraced")]
    assert len(untraced) >= 20 and sum(r["subject"] != "b1" and r["workload"] == "vit_batches" for r in untraced) >= 9 and {r["workload"] for r in untraced} >= {"hf_graph", "resnet", "vit_batches"}
    for r in untraced:
        assert r["corrected_ns"] == r["traced_ns"]  # nothing calibrated came off
        assert 1 / (1 + UNTRACED_CAPTURE_LOW_BOUND) <= r["corrected_ratio"] <= 1 + UNTRACED_CAPTURE_BOUND, r
    one = [r for r in rows if "corrected_ratio" in r and not r.get("capture_untraced")]
    assert len(one) >= 40 and len({r["call"] for r in one}) >= 4
    for r in one:
        assert r["untraced_processes"] >= 2 and r["untraced_min_ns"] <= r["untraced_ns"] <= r["untraced_max_ns"]
        assert r["corrected_ratio"] == pytest.approx(r["corrected_ns"] / r["untraced_ns"])
        assert 1 / (1 + CORRECTED_CAPTURE_LOW_BOUND) <= r["corrected_ratio"] <= 1 + CORRECTED_CAPTURE_BOUND, r
    assert sum(r["corrected_ratio"] > 1.75 for r in one) >= 1  # what the earlier bound missed is in the record
    assert all(r["traced_ratio"] <= 1 + SINGLE_CAPTURE_BOUND for r in one)  # as traced, where no calibration is known
    window = [r for r in rows if r.get("eager_source") == "window"]
    assert len(window) >= 60 and sum(bool(r.get("prediction")) for r in window) >= 20
    for r in window:
        assert r["eager_ratio"] == pytest.approx(r["eager_ns"] / r["eager_untraced_ns"])
        assert 1 / (1 + WINDOW_EAGER_BOUND) <= r["eager_ratio"] <= 1 + WINDOW_EAGER_BOUND, r
    assert sum(r["eager_ratio"] < 1 for r in window) >= 1  # shorter than untraced: why the bound is two-sided
    # GPU-bound replays (a CPU-bound one, corrected, has its own bound below)
    folded = [r for r in rows if r.get("replays_from_nodes") and r.get("replay_source") != "corrected"]
    assert len(folded) >= 40
    for r in folded:  # the untraced processes agree on a replay (within 1%): the bound is the tracer's, one way
        assert r["replay_untraced_max_ns"] <= 1.01 * r["replay_untraced_min_ns"]
        assert 1 / 1.01 <= r["replay_ratio"] <= 1 + NODE_RECORDS_REPLAY_SLOWDOWN, r
    assert max(r["replay_ratio"] for r in folded) > 1.05  # what the earlier bound (5%) missed
    corrected = [r["eager_ratio"] for r in rows if r.get("eager_source") == "corrected"] + \
        [r["replay_ratio"] for r in rows if r.get("replay_source") == "corrected"]
    assert len(corrected) >= 10
    assert all(1 / (1 + CORRECTED_SLOWDOWN_BOUND) <= x <= 1 + CORRECTED_SLOWDOWN_BOUND for x in corrected)
    assert max(corrected) > 1.85  # what the earlier bound (0.85) missed
    ok, text = load_benchmark("one_run_bounds").check(rows)
    assert ok and "DO NOT" not in text
    # a device call's rows alone (session 30: every capture untraced, none corrected): checked for what they hold
    s30 = [r for r in rows if r["call"].startswith("s30-")]
    assert s30 and not any("corrected_ratio" in r and not r.get("capture_untraced") for r in s30)
    ok, text = load_benchmark("one_run_bounds").check(s30)
    assert ok and "captured untraced" in text and "traced and corrected" not in text
    assert load_benchmark("one_run_bounds").check([])[0] is False  # nothing checked is no pass


CPU_BOUND = ROOT / "tests" / "data" / "scripts" / "cpu_bound_s27"


def test_a_jax_call_replay_corrected_is_bounded_as_measured(tmp_path: Path) -> None:
    """Session 27's call 2: a jitted JAX call (an XLA command buffer a call, CPU-bound) under the default `graphmode
    run` read 2.14x its untraced processes' call even with the tracer's calibrated cost taken off, on a machine whose
    traced process's CPU ran 1.5x slower than its fastest tenth. The record holds that row; the graph says its replay
    may be CORRECTED_SLOWDOWN_BOUND too long, and the bound covers it."""
    from graphmode.analyzers.break_even import CORRECTED_SLOWDOWN_BOUND

    name = "jax-graphmode-00.gmtrace"
    path = unpacked_xz(CPU_BOUND / f"{name}.xz", tmp_path)
    got = load_benchmark("one_run_bounds").rows_of("s27-call2", CPU_BOUND / "results.jsonl", tmp_path)
    want = [r for r in _ratios() if r["call"] == "s27-call2" and r["trace"] == name]
    assert len(got) == len(want) == 1
    assert got[0]["replay_ns"] == pytest.approx(want[0]["replay_ns"], rel=1e-9)
    assert got[0]["replay_source"] == "corrected" and 1.5 < got[0]["replay_ratio"] <= 1 + CORRECTED_SLOWDOWN_BOUND
    with load(path) as t:
        g = next(g for g in analyze(t).graphs if g.status == "replayed")
    said = [n for n in g.notes if n.kind == "tracer_cost_taken_off" and n["mode"] == "graph"]
    assert said and said[0]["slowdown_bound"] == CORRECTED_SLOWDOWN_BOUND


@pytest.mark.parametrize("fixture, call", [(COPIED, "s26-call4"), (SLOW_CAPTURE, "s27-call1")])
def test_the_bounds_record_is_what_the_analysis_reads_from_the_committed_recordings(fixture: Path, call: str,
                                                                                    tmp_path: Path) -> None:
    """Two of the record's traces are committed (the decode step on session 26's machine, corrected 1.59x; and on
    session 27's, whose captures ran 3x untraced: corrected 2.65x): the benchmark reads from them, with today's analysis
    and bundled model, what the record holds; its eager period is a window's."""
    name = "hf_graph-graphmode-00.gmtrace"
    unpacked_xz(fixture / f"{name}.xz", tmp_path)
    got = load_benchmark("one_run_bounds").rows_of(call, fixture / "results.jsonl", tmp_path)
    want = [r for r in _ratios() if r["call"] == call and r["trace"] == name]
    assert len(got) == 1 and len(want) == 1
    for key in ("untraced_ns", "traced_ns", "corrected_ns", "eager_ns", "eager_untraced_ns", "replay_ns"):
        assert got[0][key] == pytest.approx(want[0][key], rel=1e-9), key
    assert got[0]["eager_source"] == want[0]["eager_source"] == "window"


def test_a_windowed_eager_period_is_bounded_either_way(tmp_path: Path) -> None:
    """The decode step recorded on session 27's machine: its eager period was leveled by an untraced window, so the
    graph says so (eager_window_bound, not the traced run's one-sided traced_cpu_bound_eager), and its break-even
    interval allows that period WINDOW_EAGER_BOUND either way: its lower end is at most the break-even with the eager
    period 1 + WINDOW_EAGER_BOUND times longer and the one-time cost at its corrected bound's lowest."""
    from graphmode.analyzers.break_even import CORRECTED_CAPTURE_BOUND, WINDOW_EAGER_BOUND, smallest_replays

    path = unpacked_xz(SLOW_CAPTURE / "hf_graph-graphmode-00.gmtrace.xz", tmp_path)
    with load(path) as t:
        a = analyze(t)
    g = next(g for g in a.graphs if g.status == "replayed")
    kinds = {n.kind for n in g.notes}
    assert g.eager is not None and g.eager.run == "window"
    assert "eager_window_bound" in kinds and "traced_cpu_bound_eager" not in kinds
    be = g.break_even
    assert be is not None and be.replays is not None and be.interval_low is not None
    widest = smallest_replays(be.one_time_ns / (1 + CORRECTED_CAPTURE_BOUND),
                              be.eager_ns * (1 + WINDOW_EAGER_BOUND) - be.graph_ns)
    assert be.interval_low <= widest <= be.replays
    from graphmode.reports.notes import word

    text = word(next(n for n in g.notes if n.kind == "eager_window_bound"))
    assert f"{1 + WINDOW_EAGER_BOUND:.2f}x slower or faster" in text
