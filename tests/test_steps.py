"""Steps, not just graphs (analyzers.steps): a step that replays several graphs is measured as its segments.

Two kinds of test: a synthetic iteration table (built here, named so) whose segment spans, savings and invariant
are worked out by hand; and real H200 recordings of third-party programs with several graphs a step
(tests/data/scripts/steps/recording.log), whose figures are checked against the programs' own clocks in the
same `graphmode run` process (the GRAPHMODE_TRUTH line of its timing run, which runs without CUPTI).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers import analyze, to_dict
from graphmode.analyzers.notes import note
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.steps import instances, step_pattern
from graphmode.tracer.store import load
from tests.conftest import unpacked_xz

STEPS = Path(__file__).resolve().parent / "data" / "scripts" / "steps"


# ---- synthetic: two graphs a step, eager work between and after them ----

def synthetic_two_graph_table() -> tuple[IterationTable, np.ndarray]:
    """SYNTHETIC. Four eager steps of 1000 ns: graph 1's eager twin at +0 (its GPU work ends at +300), the loss's
    eager kernels at +400, graph 2's twin at +500 (ends +800), the optimizer's kernels at +900. Then four graphed
    steps of 300 ns from 10,000: graph 1's replay at +0 (ends +50), the loss at +60, graph 2's replay at +100 (ends
    +180), the optimizer at +200. Returns the table and the GPU starts of every eager span (rows' own kernels too)."""
    rows: list[tuple[str, int, int, int, int, float]] = []  # mode, graph, stretch, gpu start, gpu end, period
    eager_starts: list[int] = []
    for k in range(4):
        s = k * 1000
        period = 1000.0 if k < 3 else math.nan
        rows += [("eager", 1, 1, s, s + 300, period), ("eager", 2, 2, s + 500, s + 800, period)]
        eager_starts += [s, s + 150, s + 400, s + 500, s + 650, s + 900]
    for k in range(4):
        s = 10_000 + k * 300
        period = 300.0 if k < 3 else math.nan
        rows += [("graph", 1, 3, s, s + 50, period), ("graph", 2, 4, s + 100, s + 180, period)]
        eager_starts += [s + 60, s + 200]
    n = len(rows)
    mode = np.array([r[0] for r in rows], dtype=object)
    gid = np.array([r[1] for r in rows], dtype=np.int64)
    stretch = np.array([r[2] for r in rows], dtype=np.int64)
    g0 = np.array([r[3] for r in rows], dtype=np.int64)
    g1 = np.array([r[4] for r in rows], dtype=np.int64)
    period = np.array([r[5] for r in rows], dtype=np.float64)
    i64 = np.zeros(n, dtype=np.int64)
    t = IterationTable(
        pass_id=0, mode=mode, graph_id=gid, stretch=stretch, role=np.full(n, "steady", dtype=object),
        source=np.full(n, "inferred", dtype=object), thread_id=i64 + 1, stream_id=i64 + 7, start_ns=g0, end_ns=g1,
        launch_ns=g0, launch_call_ns=i64, gpu_start_ns=g0, gpu_end_ns=g1, gpu_busy_ns=g1 - g0, other_gpu_ns=i64,
        period=period, cpu_period=period, work=period, gpu_bound=np.zeros(n, dtype=bool),
        timed_by=np.full(n, "", dtype=object), traced_work=np.full(n, np.nan))
    order = np.argsort(t.start_ns, kind="stable")
    return t.select(order), np.sort(np.asarray(eager_starts, dtype=np.int64))


def test_synthetic_step_pattern_is_the_run_of_graphs_between_replays_of_the_first() -> None:
    t, _ = synthetic_two_graph_table()
    assert step_pattern(t) == (1, 2)
    # a graph replayed on its own each step is its own step: no multi-graph pattern
    one = t.select(t.graph_id == 1)
    assert step_pattern(one) is None


def test_synthetic_segments_add_up_to_the_step_and_give_each_graph_its_own_saving() -> None:
    from graphmode.analyzers.steps import _occurrences

    t, starts = synthetic_two_graph_table()
    eager = instances(t, _occurrences(t, "eager", (1, 2), ("steady",)), starts)
    graphed = instances(t, _occurrences(t, "graph", (1, 2), ("steady",)), starts)
    # by hand: eager segments 400 (graph 1's twin), 100 (loss), 400 (graph 2's twin), 100 (optimizer) = 1000;
    # graphed 60, 40, 100, 100 = 300
    assert np.allclose(eager.spans[(0, "graph")][:3], 400) and np.allclose(eager.spans[(0, "eager")][:3], 100)
    assert np.allclose(eager.spans[(1, "graph")][:3], 400) and np.allclose(eager.spans[(1, "eager")][:3], 100)
    assert np.allclose(graphed.spans[(0, "graph")][:3], 60) and np.allclose(graphed.spans[(0, "eager")][:3], 40)
    assert np.allclose(graphed.spans[(1, "graph")][:3], 100) and np.allclose(graphed.spans[(1, "eager")][:3], 100)
    assert np.allclose(eager.period[:3], 1000) and np.allclose(graphed.period[:3], 300)
    # the last step has no next one: no period, no last segment
    assert math.isnan(eager.period[3]) and math.isnan(eager.spans[(1, "graph")][3])
    # each step's segments add up to its period
    total = sum(eager.spans[k][:3] for k in eager.spans)
    assert np.allclose(total, eager.period[:3])


def test_synthetic_timing_run_periods_scale_the_segments() -> None:
    """SYNTHETIC: where the timing run timed a step at 750 ns untraced (the measuring run: 1000), each segment is
    scaled by 0.75, so they still add up to the step."""
    from graphmode.analyzers.steps import _occurrences
    import dataclasses

    t, starts = synthetic_two_graph_table()
    anchor = (t.mode == "eager") & (t.graph_id == 1) & np.isfinite(t.period)
    t = dataclasses.replace(t, period=np.where(anchor, 750.0, t.period),
                            timed_by=np.where(anchor, "timing", t.timed_by).astype(object))
    eager = instances(t, _occurrences(t, "eager", (1, 2), ("steady",)), starts)
    assert eager.timed
    assert np.allclose(eager.spans[(0, "graph")][:3], 300) and np.allclose(eager.spans[(1, "eager")][:3], 75)
    assert np.allclose(sum(eager.spans[k][:3] for k in eager.spans), 750)


# ---- real recordings ----

def _unpacked(tmp_path: Path, name: str) -> Path:
    return unpacked_xz(STEPS / f"{name}.xz", tmp_path)


def _truths(fixture: str) -> list[dict]:
    """The program's own GRAPHMODE_TRUTH lines of the fixture's process: measuring, detail and timing runs."""
    lines = (STEPS / "recording.log").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.endswith(f"-> {fixture}"))
    return [json.loads(ln.split(" ", 1)[1]) for ln in lines[start + 1:start + 4]]


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    path = _unpacked(tmp_path_factory.mktemp("steps"), "mgc_mobilenet.gmtrace")
    with load(path) as t:
        return analyze(t)


@pytest.fixture(scope="module")
def vit(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    path = _unpacked(tmp_path_factory.mktemp("steps"), "vit_layers.gmtrace")
    with load(path) as t:
        return analyze(t)


def test_make_graphed_callables_step_is_one_step_of_two_graphs_against_the_programs_own_clock(mobilenet) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/third_party/mgc_mobilenet.py: torchvision MobileNetV3's training step with the model graphed by
    make_graphed_callables (a forward and a backward graph; loss and optimizer eager). The timing run's own clock:
    eager step, graphed step, and make_graphed_callables whole (its three warm-ups and both captures)."""
    truth = _truths("mgc_mobilenet.gmtrace.xz")[2]
    (step,) = [s for s in mobilenet.steps if len(s.graphs) > 1]
    assert len(step.graphs) == 2 and step.basis == "measured" and step.period_source == "timing"
    assert step.eager_ns == pytest.approx(truth["eager_ns"], rel=0.05)
    assert step.graphed_ns == pytest.approx(truth["graph_ns"], rel=0.05)
    saved = truth["eager_ns"] - truth["graph_ns"]
    assert step.saved_ns == pytest.approx(saved, rel=0.05)
    # the one-time cost is the graphing statement, warm-ups included, as the timing run timed it
    assert step.one_time_basis == "statement" and step.one_time_statement.endswith("mgc_mobilenet.py:54")
    one_time = truth["make_graphed_ns"] + truth["first_step_ns"] - truth["graph_ns"]
    assert step.one_time_ns == pytest.approx(one_time, rel=0.1)
    be = step.break_even
    assert be is not None and be.replays is not None
    assert abs(be.replays - math.ceil(one_time / saved)) <= 1
    assert be.interval_low is not None and be.interval_low <= be.replays <= (be.interval_high or be.replays)


def test_each_graphs_saving_is_its_segment_and_they_add_up_to_the_step(mobilenet) -> None:  # type: ignore[no-untyped-def]
    (step,) = [s for s in mobilenet.steps if len(s.graphs) > 1]
    by_id = {g.graph_id: g for g in mobilenet.graphs}
    savings = [by_id[g].break_even.saved_per_replay_ns for g in step.graphs]
    assert all(s is not None and 0 < s < step.saved_ns for s in savings)  # never the whole step's period
    # the invariant: graphs' savings + the change in the eager stretches = the step's saving, within 2%
    assert step.graphs_saved_ns == pytest.approx(sum(savings), rel=1e-9)
    assert step.invariant_residual_ns is not None and abs(step.invariant_residual_ns) < 0.02 * step.saved_ns
    assert step.graphs_saved_ns + step.remainder_saved_ns + step.invariant_residual_ns == pytest.approx(step.saved_ns)
    assert all(by_id[g].break_even.basis == "measured" for g in step.graphs)
    # the run's total counts each step once: its saving times its graphed steps
    assert mobilenet.totals.saved_ns == pytest.approx(step.saved_ns * step.graphed_steps, rel=1e-9)
    # the headline's break-even is the step's
    assert mobilenet.break_even[0].replays == step.break_even.replays


def test_per_layer_graphs_step_has_eight_graphs_and_its_eager_step_from_its_line(vit) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/third_party/vit_layer_graphs.py: a torchvision VisionTransformer's 4 encoder layers each graphed
    (a forward and a backward graph a layer). Autograd runs the eager backward for the whole model, so no layer's
    backward graph has an eager twin kernel for kernel; the eager step is timed between executions of the step's
    line (the one that starts each graphed step too). The graphs' own savings are then not stated."""
    truth = _truths("vit_layers.gmtrace.xz")[2]
    (step,) = [s for s in vit.steps if len(s.graphs) > 1]
    assert len(step.graphs) == 8 and step.basis == "measured"
    assert step.eager_ns == pytest.approx(truth["eager_ns"], rel=0.05)
    assert step.graphed_ns == pytest.approx(truth["graph_ns"], rel=0.05)
    assert step.saved_ns == pytest.approx(truth["eager_ns"] - truth["graph_ns"], rel=0.05)
    one_time = truth["make_graphed_ns"] + truth["first_step_ns"] - truth["graph_ns"]
    assert step.one_time_basis == "statement" and step.one_time_ns == pytest.approx(one_time, rel=0.1)
    assert step.break_even is not None and abs(step.break_even.replays - math.ceil(one_time / step.saved_ns)) <= 1
    by_id = {g.graph_id: g for g in vit.graphs}
    assert all(by_id[g].break_even is None or by_id[g].break_even.saved_per_replay_ns is None for g in step.graphs)
    assert step.graphs_saved_ns is None and step.invariant_residual_ns is None
    assert vit.totals.saved_ns == pytest.approx(step.saved_ns * step.graphed_steps, rel=1e-9)


def test_steps_are_in_the_json_report_and_valid_against_the_schema(mobilenet) -> None:  # type: ignore[no-untyped-def]
    import jsonschema

    from graphmode.reports.json_report import load_schema, report_dict

    d = report_dict(mobilenet)
    jsonschema.validate(d, load_schema())
    (s,) = [s for s in d["steps"] if len(s["graphs"]) > 1]
    assert s["saved_ns"] == pytest.approx(s["eager_ns"] - s["graphed_ns"])
    assert s["break_even"]["replays"] >= 1 and s["basis"] == "measured"
    assert to_dict(mobilenet)["steps"][0]["step_id"] == 1


def test_a_whole_step_graph_is_its_own_one_graph_step_with_its_per_graph_answer() -> None:
    """tests/data/scripts/torch_cudagraph.gmtrace (one graph replacing a whole loop step): the step is that graph,
    with the graph's own figures, unchanged."""
    with load(Path(__file__).resolve().parent / "data" / "scripts" / "torch_cudagraph.gmtrace") as t:
        a = analyze(t)
    g = a.graphs[0]
    (s,) = a.steps
    assert s.graphs == (g.graph_id,) and s.saved_ns == g.break_even.saved_per_replay_ns
    assert s.break_even == g.break_even and s.one_time_ns == g.cost.total_ns
    assert s.invariant_residual_ns == 0.0


def test_two_compiled_functions_a_step_are_one_step_without_an_eager_twin() -> None:
    """tests/data/coverage/torch_compile_skips.gmtrace (examples/torch_compile_skips.py): two functions compiled with
    reduce-overhead replay their graphs once each a decode-like step; their kernels never ran eagerly. One step of
    both graphs, measured graphed; its saving is predicted (analyzers.counterfactual: each graph's kernels priced at
    Inductor's launch costs) and marked so everywhere; no measured eager mode is kept."""
    with load(Path(__file__).resolve().parent / "data" / "coverage" / "torch_compile_skips.gmtrace") as t:
        a = analyze(t)
    (step,) = [s for s in a.steps if len(s.graphs) > 1]
    assert len(step.graphs) == 2 and step.basis == "predicted" and step.eager is None
    assert step.graphed_ns is not None and step.graphed_steps >= 20
    by_id = {g.graph_id: g for g in a.graphs}
    graphs = [by_id[g] for g in step.graphs]
    assert all(g.eager is None and g.counterfactual is not None and g.break_even is not None
               and g.break_even.basis == "predicted" for g in graphs)
    # the eager stretches between the graphs run eagerly in both modes: the step saves what its graphs save
    saved = sum(g.break_even.saved_per_replay_ns for g in graphs)  # type: ignore[union-attr,misc]
    assert step.saved_ns == pytest.approx(saved) and step.eager_ns == pytest.approx(step.graphed_ns + saved)
    assert step.invariant_residual_ns == 0.0 and step.break_even is not None and step.break_even.basis == "predicted"
    assert a.headline.subject == "step" and a.headline.basis == "predicted" and a.headline.graphed_ns == step.graphed_ns
    assert a.mode("eager") is None and not a.overhead_saved


def test_a_failing_step_model_costs_the_steps_not_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    import graphmode.analyzers.script_analysis as sa

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(sa, "find_steps", broken)
    with load(Path(__file__).resolve().parent / "data" / "scripts" / "torch_cudagraph.gmtrace") as t:
        a = analyze(t)
    assert a.steps == () and a.graphs and a.graphs[0].break_even is not None
    assert note("step_model_failed", error_type="RuntimeError", error="injected") in a.cannot_compute


def test_the_page_shows_the_step_and_the_totals_add_up(mobilenet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The page's steps table is the analysis's step, and the run's totals count the step's one-time cost once:
    saved less one-time is the net the headline states."""
    from graphmode.views import html_page

    (step,) = [s for s in mobilenet.steps if len(s.graphs) > 1]
    t = mobilenet.totals
    assert t.one_time_ns == pytest.approx(step.one_time_ns)  # the statement, warm-ups included; not the graphs' own
    assert t.net_ns == pytest.approx(t.saved_ns - t.one_time_ns)
    assert mobilenet.headline.net_ns == pytest.approx(t.net_ns)
    path = _unpacked(tmp_path, "mgc_mobilenet.gmtrace")
    with load(path) as trace:
        page, _ = html_page(trace, mobilenet)
    section = page.split("id='gm-steps'")[1].split("</section>")[0]
    assert "step 1" in section and "graph 1" in section and "graph 4" in section and "eager work between" in section
