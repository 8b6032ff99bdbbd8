"""Analyzer arithmetic on SYNTHETIC traces (tests/synthetic.py); every expected number is worked out by hand here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers import TraceAnalysis, analyze
from graphmode.analyzers.break_even import bootstrap_medians, smallest_replays
from graphmode.analyzers.critical_path import longest_path, node_durations
from graphmode.analyzers.notes import note
from graphmode.reports.notes import break_even_reason, word, words
from synthetic import SyntheticTrace, basic_trace
from graphmode.tracer.store import load
from graphmode.tracer.validate import validate_trace


def _analyze(path: Path) -> TraceAnalysis:
    with load(path) as trace:
        assert validate_trace(trace) == [], "a synthetic trace must itself be sound"
        return analyze(trace)


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory) -> TraceAnalysis:
    return _analyze(basic_trace(tmp_path_factory.mktemp("basic") / "basic.gmtrace"))


def test_wall_time_comes_from_the_timing_pass_with_p10_p90(basic: TraceAnalysis) -> None:
    eager = basic.mode("eager")
    assert eager is not None and eager.wall is not None and eager.wall_source == "timing"
    # timing pass eager walls 1000, 1100, 1200: median 1100; p10 = 1000 + 0.2*100; p90 = 1100 + 0.8*100
    assert (eager.wall.median, eager.wall.p10, eager.wall.p90) == (1100, 1020, 1180)
    assert eager.iterations == 3 and eager.traced_iterations == 1


def test_api_time_counts_outermost_calls_on_the_iteration_thread(basic: TraceAnalysis) -> None:
    eager = basic.mode("eager")
    assert eager is not None and eager.api_launch and eager.api_sync and eager.api_other and eager.api_total
    # three cudaLaunchKernel of 100 each (their nested cuLaunchKernel not counted again; the launch on
    # thread 2 is not this iteration's) = 300; cudaStreamSynchronize 1500 (its driver twin has identical
    # timestamps and is counted once); cudaEventRecord 20 is 'other'
    assert eager.api_launch.median == 300
    assert eager.api_sync.median == 1500
    assert eager.api_other.median == 20
    assert eager.api_total.median == 1820
    graph = basic.mode("graph")
    assert graph is not None and graph.api_launch and graph.api_sync and graph.api_total
    # cudaGraphLaunch 50 (cuGraphLaunch nested), cudaStreamSynchronize 930
    assert (graph.api_launch.median, graph.api_sync.median, graph.api_total.median) == (50, 930, 980)


def test_gpu_busy_idle_and_gaps_with_overlapping_streams(basic: TraceAnalysis) -> None:
    eager = basic.mode("eager")
    assert eager is not None and eager.gpu_busy and eager.gpu_idle and eager.gpu_gap and eager.kernels
    # A [100150,100400] s7, B [100350,100700] s8 overlap by 50: union 550; C [101000,101200] 200 -> busy 750
    assert eager.gpu_busy.median == 750
    assert eager.gpu_idle.median == 2000 - 750  # iteration span 2000
    assert eager.gpu_gap.median == (101200 - 100150) - 750  # 300: the launch-bound gap before C
    assert eager.kernels.median == 3
    graph = basic.mode("graph")
    assert graph is not None and graph.gpu_busy and graph.gpu_idle and graph.gpu_gap
    # replay 0: A [100,300] and B [100,250] start at the same ns, C [300,400] -> 300; replay 1 serial: 450
    assert (graph.gpu_busy.median, graph.gpu_busy.min, graph.gpu_busy.max) == (375, 300, 450)
    assert graph.gpu_idle.median == ((1000 - 300) + (1000 - 450)) / 2
    assert graph.gpu_gap.max == 0


def test_launch_overhead_saved_per_iteration_and_per_kernel(basic: TraceAnalysis) -> None:
    saved = basic.primary_overhead_saved()
    assert saved is not None and saved.baseline == "eager"
    assert saved.wall_ns == 1100 - 500
    assert saved.api_ns == 1820 - 980
    assert saved.gpu_idle_ns == 1250 - 625
    assert saved.kernels_per_iteration == 3
    assert saved.wall_per_kernel_ns == 200 and saved.api_per_kernel_ns == 280
    assert saved.gpu_idle_per_kernel_ns == pytest.approx(625 / 3)
    assert saved.graph_faster is True


def test_one_time_cost_of_the_graph(basic: TraceAnalysis) -> None:
    (cost,) = basic.graph_costs
    assert (cost.graph_id, cost.label, cost.source) == (1, "diamond", "markers")
    assert (cost.build_ns, cost.instantiate_ns, cost.upload_ns, cost.first_launch_ns) == (2000, 3000, 500, 1500)
    # first launch 1500 against a steady replay (median graph iteration) of 500
    assert cost.first_launch_excess_ns == 1000
    assert cost.total_ns == 2000 + 3000 + 500 + 1000


def test_break_even_with_its_bootstrap_interval(basic: TraceAnalysis) -> None:
    b = basic.primary_break_even()
    assert b is not None and not b.never
    # 6500 / 600 = 10.83 -> 11 (11*600 = 6600 >= 6500, 10*600 = 6000 < 6500)
    assert b.replays == 11
    # Resample medians of 3 values: the smallest with probability 7/27 (two or three draws of it),
    # so the extreme savings 1200-400 = 800 (-> ceil(6500/800) = 9) and 1000-600 = 400
    # (-> ceil(6500/400) = 17) each occur with (7/27)^2 = 6.7% > 2.5%: the interval is [9, 17].
    assert (b.interval_low, b.interval_high, b.interval_high_never) == (9, 17, False)
    # 3 steady replays + the first launch; 4*1100 / (6500 + 4*500)
    assert b.run_replays == 4
    assert b.amortised_speedup == pytest.approx(4400 / 8500)


def test_per_kernel_eager_vs_in_graph(basic: TraceAnalysis) -> None:
    by_name = {k.name: k for k in basic.kernels}
    assert set(by_name) == {"A", "B", "C"}
    a = by_name["A"]
    assert a.eager and a.graph and (a.eager.median, a.graph.median, a.difference_ns) == (250, 200, -50)
    assert (a.eager_count, a.graph_count) == (1, 2)
    assert by_name["B"].difference_ns == 150 - 350
    assert by_name["C"].difference_ns == 100 - 200


def test_critical_path_of_the_diamond(basic: TraceAnalysis) -> None:
    (p,) = basic.critical_paths
    assert p.has_parallel_branches
    assert (p.serial_ns, p.critical_path_ns) == (450, 300)  # A(200)+B(150)+C(100); A -> C
    assert p.path_names == ("A", "C")
    assert p.measured_span is not None and p.measured_span.median == (300 + 450) / 2
    assert p.parallelism_delivered == pytest.approx((450 - 375) / (450 - 300))


def test_tracer_distortion_is_measured_and_warned(basic: TraceAnalysis) -> None:
    d = {x.mode: x for x in basic.distortion}
    assert d["eager"].ratio == pytest.approx(2000 / 1100) and d["eager"].slowdown_ns == 900
    assert d["graph"].ratio == pytest.approx(1000 / 500)
    (slowed,) = [w for w in basic.warnings if w.kind == "tracer_slowed" and w["mode"] == "eager"]
    assert slowed["ratio"] == pytest.approx(2000 / 1100) and (slowed["traced_ns"], slowed["untraced_ns"]) == (2000, 1100)
    assert "the tracer slowed eager iterations by 82% (median 2.0 us traced vs 1.1 us untraced)" in word(slowed)


def test_no_graph_at_all(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "timing").add_pass(1, "graph")
    t.iterations(0, "eager", [700, 900], start=1000)
    t.iteration(1, "eager", 0, 10_000, 11_000)
    c = t.api(1, "cudaLaunchKernel", "kernel_launch", 10_000, 10_200)
    t.span(1, "k", 10_300, 10_500, c)
    a = _analyze(t.write(tmp_path / "nograph.gmtrace"))
    eager = a.mode("eager")
    assert eager and eager.wall and eager.wall.median == 800 and eager.gpu_busy and eager.gpu_busy.median == 200
    assert a.mode("graph") is None and a.overhead_saved == () and a.graph_costs == ()
    (b,) = a.break_even
    assert b.replays is None and not b.never and b.reason == note("no_steady_replays", baseline="eager")
    assert "no steady graph replays" in break_even_reason(b.reason)
    kinds = [s.kind for s in a.cannot_compute]
    assert "no_graph_iterations" in kinds and "no_graph_built" in kinds


def test_graph_slower_than_eager_never_pays_back(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "timing").add_pass(1, "graph")
    t.iterations(0, "eager", [500, 600, 700], start=1000)
    t.op(0, "capture", 7, 5000, 6000)  # 1000
    t.op(0, "instantiate", 7, 6000, 7000)  # 1000
    t.op(0, "first_launch", 7, 7000, 8900)  # 1900
    t.iterations(0, "graph", [800, 900, 1000], start=10_000)
    t.graph(0, 7, "slow", [(1, "kernel", "k")], [])
    # graph-detail traced pass: the graph launch is one 'graph' span
    t.iteration(1, "graph", 0, 20_000, 21_000)
    c = t.api(1, "cudaGraphLaunch", "graph_launch", 20_000, 20_100)
    t.graph(1, 7, "slow", [(1, "kernel", "k")], [])
    t.span(1, "slow", 20_200, 20_800, c, kind="graph", graph_id=7)
    a = _analyze(t.write(tmp_path / "slow.gmtrace"))
    (b,) = a.break_even
    assert b.never and b.replays is None and b.reason == note("replay_not_faster", baseline="eager", replay_ns=900, eager_ns=600)
    assert "not faster" in break_even_reason(b.reason)
    assert b.saved_per_replay_ns == 600 - 900
    # one-time 1000 + 1000 + (1900 - 900) = 3000; 4 replays: 4*600 / (3000 + 4*900)
    assert b.one_time_ns == 3000 and b.amortised_speedup == pytest.approx(2400 / 6600)
    (saved,) = a.overhead_saved
    assert saved.wall_ns == -300 and saved.graph_faster is False
    graph = a.mode("graph")
    assert graph and graph.graph_launches and graph.kernels
    assert (graph.graph_launches.median, graph.kernels.median) == (1, 0)
    assert note("graph_detail_no_kernels") in a.cannot_compute and a.critical_paths == ()


def test_one_iteration_and_exact_break_even(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "timing")
    t.iterations(0, "eager", [1000], start=1000)
    t.op(0, "instantiate", 3, 3000, 4800)  # 1800, no first_launch marker
    t.iterations(0, "graph", [400], start=5000)
    a = _analyze(t.write(tmp_path / "one.gmtrace"))
    (b,) = a.break_even
    # 1800 / 600 = 3 exactly: 3*600 >= 1800 and 2*600 < 1800
    assert b.replays == 3 and (b.interval_low, b.interval_high) == (3, 3)
    assert b.run_replays == 1 and b.amortised_speedup == pytest.approx(1000 / (1800 + 400))
    assert note("one_iteration", mode="eager") in a.cannot_compute
    assert note("no_traced_pass") in a.cannot_compute
    assert note("first_launch_missing") in a.cannot_compute
    eager = a.mode("eager")
    assert eager and eager.api_total is None and eager.gpu_busy is None


def test_zero_replays(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "timing")
    t.iterations(0, "eager", [1000, 1000], start=1000)
    t.op(0, "capture", 5, 4000, 5000)  # 1000
    t.op(0, "instantiate", 5, 5000, 7000)  # 2000
    t.op(0, "first_launch", 5, 7000, 7700)  # 700, but no steady replay to compare with
    a = _analyze(t.write(tmp_path / "zero.gmtrace"))
    (cost,) = a.graph_costs
    assert cost.first_launch_excess_ns is None and cost.total_ns == 3000
    (b,) = a.break_even
    assert b.replays is None and not b.never and b.run_replays == 1 and b.amortised_speedup is None
    assert a.overhead_saved == ()


def test_no_markers_at_all(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "graph")
    c = t.api(0, "cudaLaunchKernel", "kernel_launch", 100, 200)
    t.span(0, "k", 300, 400, c)
    a = _analyze(t.write(tmp_path / "nomarkers.gmtrace", status="interrupted", dropped={0: 12}))
    assert a.modes == () and a.break_even == ()
    assert note("no_graph") in a.cannot_compute  # read as a script trace
    assert note("records_dropped", count=12) in a.warnings
    assert note("run_incomplete", status="interrupted", reason="synthetic: stopped on purpose") in a.warnings
    assert any(w.startswith("12 CUPTI activity records were dropped") for w in words(a.warnings))


def test_overlap_identical_and_zero_length_spans(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "graph")
    t.iteration(0, "eager", 0, 1000, 2000)
    c = t.api(0, "cudaLaunchKernel", "kernel_launch", 1000, 1050)
    for i, (s, e) in enumerate([(1100, 1400), (1100, 1400), (1200, 1300), (1350, 1500), (1600, 1600), (1700, 1800)]):
        t.span(0, "k", s, e, c, stream=i + 1)
    a = _analyze(t.write(tmp_path / "overlap.gmtrace"))
    m = a.mode("eager")
    assert m and m.gpu_busy and m.gpu_gap and m.gpu_idle and m.kernels
    # union [1100,1500] + [1700,1800] = 400 + 100; identical and contained spans add nothing, zero-length adds 0
    assert m.gpu_busy.median == 500
    assert m.gpu_gap.median == (1800 - 1100) - 500
    assert m.gpu_idle.median == 1000 - 500
    assert m.kernels.median == 6
    assert m.wall_source == "traced" and note("no_timing_pass") in a.cannot_compute


def test_dag_with_known_critical_path(tmp_path: Path) -> None:
    # 7(empty) -> 1(100) -> 2(300) -> 5(50); 1 -> 3(200) -> 4(200) -> 5; 6(500) on its own
    # paths: 1-2-5 = 450, 1-3-4-5 = 550, 6 = 500 -> critical 550; serial 1350
    t = SyntheticTrace().add_pass(0, "node")
    nodes = [(1, "kernel", "n1"), (2, "kernel", "n2"), (3, "kernel", "n3"), (4, "kernel", "n4"), (5, "kernel", "n5"),
             (6, "kernel", "n6"), (7, "empty", "")]
    t.graph(0, 9, "dag", nodes, [(7, 1), (1, 2), (1, 3), (2, 5), (3, 4), (4, 5)])
    t.iteration(0, "graph", 0, 10_000, 12_000)
    c = t.api(0, "cudaGraphLaunch", "graph_launch", 10_000, 10_050)
    # one replay with a span of 10_900 - 10_100 = 800 (n6 late, n2 after n3 and n4 on one stream)
    for node, (s, e) in {1: (10_100, 10_200), 3: (10_200, 10_400), 4: (10_400, 10_600), 2: (10_200, 10_500),
                         5: (10_600, 10_650), 6: (10_400, 10_900)}.items():
        t.span(0, f"n{node}", s, e, c, graph_id=9, node_id=node)
    a = _analyze(t.write(tmp_path / "dag.gmtrace"))
    (p,) = a.critical_paths
    assert (p.nodes, p.edges, p.has_parallel_branches) == (7, 6, True)
    assert p.serial_ns == 100 + 300 + 200 + 200 + 50 + 500
    assert p.critical_path_ns == 550
    assert p.path_node_ids == (7, 1, 3, 4, 5)
    assert p.measured_span is not None and p.measured_span.median == 800
    assert p.parallelism_delivered == pytest.approx((1350 - 800) / (1350 - 550))


def test_node_durations_are_medians_over_replays(tmp_path: Path) -> None:
    # SYNTHETIC: graph 1 replayed three times, graph 2 twice; durations chosen by hand.
    t = SyntheticTrace().add_pass(0, "node")
    t.graph(0, 1, "g1", [(1, "kernel", "a"), (2, "kernel", "b"), (3, "empty", "")], [(1, 2), (3, 1)])
    t.graph(0, 2, "g2", [(1, "kernel", "c")], [])
    start = 10_000
    for replay, (a, b) in enumerate([(100, 40), (300, 50), (200, 90)]):  # a: median 200; b: median 50
        t.iteration(0, "graph", replay, start, start + 1_000)
        c = t.api(0, "cudaGraphLaunch", "graph_launch", start, start + 10)
        t.span(0, "a", start + 20, start + 20 + a, c, graph_id=1, node_id=1)
        t.span(0, "b", start + 20 + a, start + 20 + a + b, c, graph_id=1, node_id=2)
        start += 2_000
    for replay, d in enumerate([70, 80]):  # c: median of two = 75
        t.iteration(0, "graph", 3 + replay, start, start + 1_000)
        c = t.api(0, "cudaGraphLaunch", "graph_launch", start, start + 10)
        t.span(0, "c", start + 20, start + 20 + d, c, graph_id=2, node_id=1)
        start += 2_000
    path = t.write(tmp_path / "nodes.gmtrace")
    with load(path) as trace:
        assert node_durations(trace, 0) == {(1, 1): 200.0, (1, 2): 50.0, (2, 1): 75.0}  # empty node 3: no entry
        assert node_durations(trace, 0, graph_id=2) == {(2, 1): 75.0}
        assert node_durations(trace, 0, graph_id=3) == {}
        (p1, p2) = analyze(trace).critical_paths
    assert (p1.serial_ns, p1.critical_path_ns, p2.serial_ns) == (250, 250, 75)  # the same weights


def test_a_chain_has_no_parallel_branches() -> None:
    dist, acyclic = longest_path(np.ones(3), np.array([0, 1]), np.array([1, 2]))
    assert acyclic and dist.max() == 3  # every node on one path
    _, acyclic = longest_path(np.ones(2), np.array([0, 1]), np.array([1, 0]))
    assert not acyclic


@pytest.mark.parametrize(("one_time", "saved", "expected"), [(1800, 600, 3), (1801, 600, 4), (0.3, 0.1, 3), (0, 5, 1), (10, 100, 1)])
def test_smallest_replays(one_time: float, saved: float, expected: int) -> None:
    assert smallest_replays(one_time, saved) == expected


def test_bootstrap_median_matches_resampling_probabilities() -> None:
    rng = np.random.default_rng(1)
    # n = 3 of [1, 2, 3]: P(median = 1) = P(at least two draws are 1) = 3*(1/3)^2*(2/3) + (1/3)^3 = 7/27
    med = bootstrap_medians(np.array([3.0, 1.0, 2.0]), 200_000, rng)
    assert np.mean(med == 1) == pytest.approx(7 / 27, abs=0.005)
    assert np.mean(med == 2) == pytest.approx(13 / 27, abs=0.005)
    # n = 2 of [10, 20]: median is 10, 15 or 20 with probabilities 1/4, 1/2, 1/4
    med2 = bootstrap_medians(np.array([10.0, 20.0]), 200_000, rng)
    assert np.mean(med2 == 15) == pytest.approx(0.5, abs=0.005)
    assert np.mean(med2 == 10) == pytest.approx(0.25, abs=0.005)
