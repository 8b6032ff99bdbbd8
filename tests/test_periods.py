"""The period rules (analyzers.periods) and the per-graph arithmetic on SYNTHETIC traces built here,
every expected number worked out by hand next to its assertion (docs/metrics.md, "Iterations and periods")."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.break_even import break_even_series
from graphmode.analyzers.notes import note
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.analyzers.results import trimmed_mean
from graphmode.analyzers.script_graphs import primitive_root
from graphmode.reports.notes import word
from graphmode.tracer.store import load
from graphmode.tracer.validate import validate_trace
from synthetic_script import ScriptTrace


def _gpu_bound_trace(path: Path) -> Path:
    """Synthetic. Eager: K launched at 100, 110, 120, 130 (the CPU runs ahead), running back to back on the
    GPU: 200-1200, 1210-2210, 2220-3220, 3230-4230. Graph [K] captured 5000-5100, instantiated 5100-5200;
    replays launched at 6000, 6010, 6020, 6030, running 6100-6600, 6605-7105, 7110-7610, 7615-8115."""
    t = ScriptTrace()
    for launch, gpu in zip((100, 110, 120, 130), ((200, 1200), (1210, 2210), (2220, 3220), (3230, 4230))):
        t.eager_kernel("K", launch, gpu)
    t.captured_graph(1, ["K"], (5000, 5100), (5100, 5200), None, "train.py:9 main")
    for launch, gpu in zip((6000, 6010, 6020, 6030), ((6100, 6600), (6605, 7105), (7110, 7610), (7615, 8115))):
        t.replay(1, launch, gpu)
    return t.write_script(path)


def test_gpu_bound_loops_take_the_gpu_cadence(tmp_path: Path) -> None:
    path = _gpu_bound_trace(tmp_path / "gpu.gmtrace")
    with load(path) as trace:
        assert validate_trace(trace) == []
        it = find_iterations(trace)
    eager = it.select(it.mode == "eager")
    # the next launch (110) comes before this one's GPU end (1200): GPU-bound; period = GPU start to GPU start
    assert list(eager.gpu_bound) == [True, True, True, False]  # the last has no next iteration
    assert list(eager.period[:3]) == [1010, 1010, 1010] and np.isnan(eager.period[3])
    assert list(eager.cpu_period[:3]) == [10, 10, 10]  # launch to launch: what a CPU-side reading would say
    graph = it.select(it.mode == "graph")
    assert list(graph.role) == ["first_launch", "steady", "steady", "steady"]
    assert list(graph.period[:3]) == [505, 505, 505]
    (g,) = analyze(load(path)).graphs
    assert g.eager is not None and g.graph is not None and g.eager.work is not None and g.graph.work is not None
    assert (g.eager.bound, g.graph.bound) == ("gpu", "gpu")
    assert (g.eager.work.trimmed_mean, g.graph.work.trimmed_mean) == (1010, 505)
    # one-time 100 + 100, the first launch cost what a steady one does (span 500 + call 20): no excess.
    # saved 1010 - 505 = 505 >= 200: pays back after 1 replay. GPU-bound periods are not widened.
    assert g.cost is not None and g.cost.total_ns == 200 and g.break_even is not None
    assert (g.break_even.replays, g.break_even.interval_low, g.break_even.interval_high) == (1, 1, 1)
    assert not {n.kind for n in g.notes} & {"timed_untraced", "traced_cpu_bound_eager", "traced_cpu_bound_replays"}


def test_other_gpu_work_between_iterations_is_not_the_graphs(tmp_path: Path) -> None:
    """Synthetic: a benchmark harness's loop, a cache-flushing FLUSH kernel before each K (Triton's do_bench),
    everything launched ahead. GPU: FLUSH 0-900, K 905-1005, FLUSH 1010-1910, K 1915-2015, FLUSH 2020-2920,
    K 2925-3025. The graph holds K alone."""
    t = ScriptTrace()
    gpu = [(0, 900), (905, 1005), (1010, 1910), (1915, 2015), (2020, 2920), (2925, 3025)]
    for i, span in enumerate(gpu):
        t.eager_kernel("FLUSH" if i % 2 == 0 else "K", i, span)
    t.captured_graph(1, ["K"], (5000, 5100), (5100, 5200), None)
    for launch, span in ((6000, (6100, 6200)), (7000, (7100, 7200)), (8000, (8100, 8200))):
        t.replay(1, launch, span, launch + 300)
    with load(t.write_script(tmp_path / "flush.gmtrace")) as trace:
        it = find_iterations(trace)
    eager = it.select(it.mode == "eager")
    assert list(eager.gpu_start_ns) == [905, 1915, 2925]
    # period K to K: 1010; inside it, FLUSH's 900 of other work (window [905, 1915) is busy 100 + 900)
    assert list(eager.period[:2]) == [1010, 1010] and list(eager.other_gpu_ns[:2]) == [900, 900]
    # GPU-bound: K's work runs from the end of the FLUSH before it to its own end: 1005 - 900 = 105
    assert list(eager.gpu_bound[:2]) == [True, True] and list(eager.work[:2]) == [105, 105]


def test_an_unrolled_graph_is_compared_with_its_body(tmp_path: Path) -> None:
    """Synthetic: the graph runs A four times (Triton's do_bench_cudagraph unrolls the timed call); eagerly A
    only ever runs between FLUSH kernels, so the whole sequence never ran eagerly: its body A did."""
    assert primitive_root(("A", "A", "A", "A")) == ("A",)
    assert primitive_root(("A", "B", "A", "B")) == ("A", "B") and primitive_root(("A", "B", "A")) == ("A", "B", "A")
    t = ScriptTrace()
    # eager, CPU-bound: A launched at 1000, 2000, 3000, 4000, each after a FLUSH, each running 100
    for k in range(4):
        t.eager_kernel("FLUSH", 1000 * (k + 1) - 500, (1000 * (k + 1) - 490, 1000 * (k + 1) - 400))
        t.eager_kernel("A", 1000 * (k + 1), (1000 * (k + 1) + 10, 1000 * (k + 1) + 110))
    t.captured_graph(1, ["A"] * 4, (5000, 5100), (5100, 5200), None)
    for launch in (6000, 7000, 8000, 9000):  # replays of 4 x A take 450; launched 1000 apart, synchronized
        t.replay(1, launch, (launch + 30, launch + 480), launch + 500)
    a = analyze(load(t.write_script(tmp_path / "unrolled.gmtrace")))
    (g,) = a.graphs
    assert g.units_per_replay == 4 and g.eager is not None and g.eager.work is not None and g.graph is not None
    # eager: A's GPU starts 1010, 2010, 3010, 4010: period 1000 (CPU-bound, the FLUSH is part of the loop)
    assert g.eager.bound == "cpu" and g.eager.work.trimmed_mean == 1000
    # a replay (period 1000) does the work of 4 eager iterations (4000): saves 3000; one-time 200: 1 replay
    assert g.break_even is not None and g.break_even.eager_ns == 4000 and g.break_even.saved_per_replay_ns == 3000
    assert g.break_even.replays == 1 and g.eager_basis is not None and g.eager_basis["units_per_replay"] == 4
    assert word(g.eager_basis).endswith("run eagerly (a replay runs it 4 times)")


def test_trimmed_mean_and_its_standard_error() -> None:
    # 1..10: 10% (one value) cut from each end: mean of 2..9 = 5.5. Winsorized: 2,2,3,...,9,9, mean 5.5, squared
    # deviations 4 x 12.25 + 2 x 6.25 + 2 x 2.25 + 2 x 0.25 = 66.5, sd = sqrt(66.5 / 9) = 2.7183;
    # se = 2.7183 / (0.8 sqrt(10)) = 1.0745
    tm, se = trimmed_mean(np.arange(1, 11, dtype=float))
    assert tm == 5.5 and se == pytest.approx(math.sqrt(66.5 / 9) / (0.8 * math.sqrt(10)), rel=1e-12)
    assert se == pytest.approx(1.0745, abs=1e-4)
    # one outlier (a first step that autotunes) moves the plain mean, not the trimmed one
    v = np.array([100.0] * 9 + [100_000.0])
    assert trimmed_mean(v)[0] == 100.0 and v.mean() > 10_000


def test_break_even_interval_allows_for_a_tracer_slowed_side() -> None:
    e, g = np.full(5, 1500.0), np.full(5, 1000.0)
    # no spread: saved 500, one-time 1000 -> 2 replays, interval [2, 2]
    b = break_even_series("eager", e, g, 1, 1000.0, 10)
    assert (b.replays, b.interval_low, b.interval_high) == (2, 2, 2)
    # the eager side may be 25% too long: 1500 / 1.25 = 1200, saved 200 -> ceil(1000 / 200) = 5 replays at most
    b = break_even_series("eager", e, g, 1, 1000.0, 10, eager_inflation=0.25)
    assert (b.replays, b.interval_low, b.interval_high) == (2, 2, 5)
    # 50%: 1000 saves nothing: the upper end is never
    b = break_even_series("eager", e, g, 1, 1000.0, 10, eager_inflation=0.5)
    assert b.interval_high is None and b.interval_high_never
    # the replay side may be 100% too long: 1000 / 2 = 500, saved 1000 -> 1 replay at least
    b = break_even_series("eager", e, g, 1, 1000.0, 10, graph_inflation=1.0)
    assert (b.interval_low, b.replays, b.interval_high) == (1, 2, 2)
    # the one-time cost may be 50% too high (measured under CUPTI): 2500 / 1.5 = 1666.7 at 500 saved -> 4 replays at
    # least, against ceil(2500 / 500) = 5
    b = break_even_series("eager", e, g, 1, 2500.0, 10, one_time_inflation=0.5)
    assert (b.interval_low, b.replays, b.interval_high) == (4, 5, 5)
    # both allowances on the lower end: 1666.7 at 1500 - 1000 / 2 = 1000 saved -> 2
    b = break_even_series("eager", e, g, 1, 2500.0, 10, one_time_inflation=0.5, graph_inflation=1.0)
    assert (b.interval_low, b.replays) == (2, 5)
    # units: a replay (700) does 3 eager iterations (3 x 400 = 1200): saves 500
    b = break_even_series("eager", np.full(5, 400.0), np.full(5, 700.0), 3, 1000.0, 10)
    assert (b.eager_ns, b.saved_per_replay_ns, b.replays) == (1200, 500, 2)
    # a replay slower than the eager work never pays back
    b = break_even_series("eager", g, e, 1, 1000.0, 10)
    assert b.never and b.replays is None


def _eager_only_trace(path: Path, launches: bool) -> Path:
    """Synthetic eager-only script (no graph). An init kernel I launched at 100 (GPU 200-300), a synchronize
    400-500; then 6 steps at b = 10_000 * (i + 1): K1 launched at b (GPU b+100 .. b+300), K2 at b+50 (GPU b+300 ..
    b+400), a synchronize b+60 .. b+500; then 2 steps of X alone (launched at 80_000 and 90_000, GPU +100 .. +200,
    synchronized to +300). `launches` False: no launch records (as in the measuring run): kernels and
    synchronizations only."""
    t = ScriptTrace()

    def kernel(name: str, at: int, gpu: tuple[int, int]) -> None:
        if launches:
            t.eager_kernel(name, at, gpu)
        else:
            t.span(0, name, gpu[0], gpu[1], 0)

    kernel("I", 100, (200, 300))
    t.call("cudaStreamSynchronize", "sync", 400, 500)
    for i in range(6):
        b = 10_000 * (i + 1)
        kernel("K1", b, (b + 100, b + 300))
        kernel("K2", b + 50, (b + 300, b + 400))
        t.call("cudaStreamSynchronize", "sync", b + 60, b + 500)
    for b in (80_000, 90_000):
        kernel("X", b, (b + 100, b + 200))
        t.call("cudaStreamSynchronize", "sync", b + 10, b + 300)
    return t.write_script(path)


@pytest.mark.parametrize("launches", [True, False])
def test_an_eager_only_scripts_iterations_are_its_synchronized_steps(tmp_path: Path, launches: bool) -> None:
    """SYNTHETIC (_eager_only_trace). The stretches between synchronizations: [I] once, [K1, K2] six times, [X]
    twice: the step is [K1, K2] (it recurs at least MIN_SYNC_ITERATIONS = 5 times; X does not). Six eager iterations
    of graph 0, from the first kernel's launch (its GPU start without launch records) each; the period is the GPU
    start-to-start cadence, 10_000 (the last one of the stretch has none). The prediction predicts the graph of that
    step from its launches: 2 kernels, 1 edge."""
    from graphmode.analyzers.inference import MIN_SYNC_ITERATIONS
    from graphmode.analyzers.predict import predict

    assert MIN_SYNC_ITERATIONS == 5
    path = _eager_only_trace(tmp_path / "eager.gmtrace", launches)
    with load(path) as trace:
        it = find_iterations(trace)
        assert list(it.mode) == ["eager"] * 6 and set(it.graph_id.tolist()) == {0}
        first = 10_000 if launches else 10_100
        assert it.start_ns.tolist() == [first + 10_000 * i for i in range(6)]
        assert it.gpu_start_ns.tolist() == [10_100 + 10_000 * i for i in range(6)]
        assert it.period[:5].tolist() == [10_000.0] * 5 and math.isnan(it.period[5])
        if launches:  # the graph is built from the launches (the detail run's, in a `graphmode run` trace)
            [r] = predict(trace, None, None).regions
            assert (r.direction, r.mode, r.iterations) == ("to_graph", "eager", 6)
            assert r.graph is not None and (r.graph.nodes, r.graph.edges, r.graph.kernels) == (2, 1, 2)


def test_steps_that_recur_too_rarely_are_no_iterations_and_the_report_says_what_to_do(tmp_path: Path) -> None:
    """SYNTHETIC: only 4 synchronized steps of [K1, K2] (fewer than MIN_SYNC_ITERATIONS): no iteration is inferred,
    and the prediction, with nothing to predict, says how to mark the step (NVTX, --predict-lines)."""
    from rich.console import Console

    from graphmode.analyzers.predict import NO_REGION_NOTE, predict
    from graphmode.reports.prediction import print_prediction

    t = ScriptTrace()
    for i in range(4):
        b = 10_000 * (i + 1)
        t.eager_kernel("K1", b, (b + 100, b + 300))
        t.call("cudaStreamSynchronize", "sync", b + 60, b + 500)
    with load(t.write_script(tmp_path / "few.gmtrace")) as trace:
        assert find_iterations(trace).size == 0
        p = predict(trace, None, None)
    assert p.regions == () and NO_REGION_NOTE in p.notes
    console = Console(width=300, no_color=True, record=True)
    print_prediction(console, p)
    text = console.export_text()
    assert "Prediction: no region to predict" in text and "graphmode:eager" in text and "--predict-lines" in text
    from graphmode.reports.prediction_html import prediction_html

    assert "graphmode:eager" in prediction_html(p)  # the page's prediction section says the same


def _stamp(t: ScriptTrace, line: int, ts: int, function: str = "<module>") -> None:
    t._add("line_stamps", pass_id=0, thread_id=1, thread_name="MainThread", file="t.py", line=line, function=function, ts_ns=ts)


def _unsynchronized_loop(path: Path) -> Path:
    """SYNTHETIC eager-only script whose loop never synchronizes, one pass that stamped every line (as a detail run):
    an init kernel I (line 5 at 100, launched 110); then 6 steps at b = 10_000 * (i + 1), each the loop's line 10
    (stamped at b) calling a function whose line 2 (a `for` over three launches: stamped before each and once more on
    exit, at b + 10 + 100 * j, j = 0..3) launches K1, K1, K2 from line 3 (stamped at b + 20 + 100 * j, the launch at b +
    30 + 100 * j, GPU b + 50 + 100 * j .. +90); the GPU keeps up. One synchronize at the very end."""
    t = ScriptTrace()
    _stamp(t, 5, 100)
    t.eager_kernel("I", 110, (150, 200))
    for i in range(6):
        b = 10_000 * (i + 1)
        _stamp(t, 10, b)
        for j, name in enumerate(("K1", "K1", "K2")):
            _stamp(t, 2, b + 10 + 100 * j, "step")
            _stamp(t, 3, b + 20 + 100 * j, "step")
            t.eager_kernel(name, b + 30 + 100 * j, (b + 50 + 100 * j, b + 90 + 100 * j))
        _stamp(t, 2, b + 310, "step")
    t.call("cudaDeviceSynchronize", "sync", 70_000, 70_100)
    return t.write_script(path)


def test_a_loop_that_does_not_synchronize_is_cut_at_its_call_lines_runs(tmp_path: Path) -> None:
    """SYNTHETIC (_unsynchronized_loop). No stretch between synchronizations recurs (one synchronize). Cut at each
    line's runs, the stretches are: line 10: [K1, K1, K2] six times (18 kernels); line 2: [K1] 12 times (the last one's
    stretch [K2] and the exit's empty one aside: 12 kernels); line 3: [K1] 12 times (12). Line 10 covers the most: the
    step is [K1, K1, K2], six eager iterations of graph 0 starting at each K1 launch after a line-10 stamp, b + 30. The
    prediction's region says where the step came from; its graph is the 3-kernel chain."""
    from graphmode.analyzers.inference import loop_step
    from graphmode.analyzers.predict import predict

    path = _unsynchronized_loop(tmp_path / "loop.gmtrace")
    with load(path) as trace:
        assert loop_step(trace, 0) == (("K1", "K1", "K2"), "t.py:10")
        it = find_iterations(trace)
        assert list(it.mode) == ["eager"] * 6 and set(it.graph_id.tolist()) == {0}
        assert it.start_ns.tolist() == [10_000 * (i + 1) + 30 for i in range(6)]
        assert set(it.source.tolist()) == {"line t.py:10"}
        [r] = predict(trace, None, None).regions
    assert (r.direction, r.mode, r.iterations) == ("to_graph", "eager", 6)
    assert r.basis == note("basis_line", line="t.py:10")
    assert "between two runs of line t.py:10" in word(r.basis) and "does not synchronize" in word(r.basis)
    assert r.graph is not None and (r.graph.nodes, r.graph.edges, r.graph.kernels) == (3, 2, 3)


def test_an_outer_loop_over_identical_steps_is_not_the_step(tmp_path: Path) -> None:
    """SYNTHETIC: 5 epochs (line 20, stamped at e = 100_000 * (k + 1)) of 10 steps each (line 21, stamped at e + 1000 *
    (i + 1)), a step launching [K1, K2] (launches at +10 and +20), no synchronization. Both lines cover all 100 kernels;
    line 21's stretch recurs 50 times (at least LOOP_STEP_MIN = 20), line 20's 5: the step is line 21's, 50 iterations,
    though line 20's is longer. With only the epochs' line there, 5 epochs of 20 kernels would be the step."""
    from graphmode.analyzers.inference import LOOP_STEP_MIN, loop_step

    assert LOOP_STEP_MIN == 20

    def build(path: Path, steps_line: bool) -> Path:
        t = ScriptTrace()
        for k in range(5):
            e = 100_000 * (k + 1)
            _stamp(t, 20, e)
            for i in range(10):
                s = e + 1000 * (i + 1)
                if steps_line:
                    _stamp(t, 21, s)
                t.eager_kernel("K1", s + 10, (s + 30, s + 40))
                t.eager_kernel("K2", s + 20, (s + 40, s + 50))
        return t.write_script(path)

    with load(build(tmp_path / "epochs.gmtrace", True)) as trace:
        assert loop_step(trace, 0) == (("K1", "K2"), "t.py:21")
        assert find_iterations(trace).size == 50
    with load(build(tmp_path / "epochs-only.gmtrace", False)) as trace:
        assert loop_step(trace, 0) == (("K1", "K2") * 10, "t.py:20")
        assert find_iterations(trace).size == 5


def test_without_line_stamps_an_unsynchronized_loop_is_found_by_its_repeated_kernels(tmp_path: Path) -> None:
    """SYNTHETIC: the loop of _unsynchronized_loop without its stamps (a run on Python < 3.12, or with `--runs 1`): no
    line cuts it, but its kernels repeat [K1, K1, K2] 6 times back to back (analyzers.repetition): 6 iterations, the
    region's basis the kernel repetition. Kernels that repeat no block 5 times ([K1, K2] 4 times): no step, and the
    prediction says how to mark it."""
    from graphmode.analyzers.predict import NO_REGION_NOTE, predict

    t = ScriptTrace()
    for i in range(6):
        b = 10_000 * (i + 1)
        for j, name in enumerate(("K1", "K1", "K2")):
            t.eager_kernel(name, b + 30 + 100 * j, (b + 50 + 100 * j, b + 90 + 100 * j))
    with load(t.write_script(tmp_path / "nostamps.gmtrace")) as trace:
        assert find_iterations(trace).size == 6
        [r] = predict(trace, None, None).regions
    assert r.basis == note("basis_kernel_repetition", kernels=3, recurrences=6)
    t = ScriptTrace()
    for i in range(4):
        b = 10_000 * (i + 1)
        for j, name in enumerate(("K1", "K2")):
            t.eager_kernel(name, b + 30 + 100 * j, (b + 50 + 100 * j, b + 90 + 100 * j))
    with load(t.write_script(tmp_path / "fewer.gmtrace")) as trace:
        assert find_iterations(trace).size == 0
        p = predict(trace, None, None)
    assert p.regions == () and NO_REGION_NOTE in p.notes


def test_a_warmed_up_loop_of_repeated_bodies_is_cut_at_the_timed_loops_call_line(tmp_path: Path) -> None:
    """SYNTHETIC, shaped like benchmarks/third_party/cupy_chain.py: 3 warm-up steps called from line 8, then 25 steps
    from line 10, a step being a function whose line 2 launches [A, B] three times (stamped before each pair), no
    synchronization until the end. Line 2's stretch [A, B] recurs 84 times (168 kernels, warm-up included), line
    10's [A, B] x 3 25 times (150 kernels: at least half as many), and both recur at least 20 times: the longer,
    line 10's, is the step (line 8's 3 warm-ups recur too rarely to be a candidate). Its kernels are then looked for
    in the pass: the warm-up steps did the same work, so 28 iterations."""
    from graphmode.analyzers.inference import loop_step

    t = ScriptTrace()
    ts = 1000
    for line, steps in ((8, 3), (10, 25)):
        for _ in range(steps):
            _stamp(t, line, ts)
            for _ in range(3):
                _stamp(t, 2, ts + 10, "step")
                t.eager_kernel("A", ts + 20, (ts + 30, ts + 40))
                t.eager_kernel("B", ts + 50, (ts + 60, ts + 70))
                ts += 100
            ts += 1000
    with load(t.write_script(tmp_path / "warm.gmtrace")) as trace:
        assert loop_step(trace, 0) == (("A", "B") * 3, "t.py:10")
        it = find_iterations(trace)
        assert it.size == 28 and set(it.source.tolist()) == {"line t.py:10"}
