"""The prediction (analyzers.predict): SYNTHETIC traces priced with the SYNTHETIC noise-free cost model of
tests/synthetic_costmodel.py, every expected number worked out by hand next to its assertion; then the
real recordings in tests/data (their eager part predicted, compared with the graph they measured)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import duckdb
import numpy as np
import jsonschema
import pytest
from rich.console import Console

from graphmode.analyzers import analyze
from graphmode.analyzers.break_even import smallest_replays
from graphmode.analyzers.costmodel import CostModel, ModelChoice, find_model
from graphmode.analyzers.notes import note
from graphmode.analyzers.predict import predict
from graphmode.analyzers.run_plan import lines_to_time
from graphmode.reports.json_report import load_schema, render_json
from graphmode.reports.notes import word, words
from graphmode.reports.terminal import print_report
from graphmode.tracer.store import load
from synthetic import SyntheticTrace
from synthetic_costmodel import synthetic_model
from tests.conftest import DATA

MODEL = ModelChoice(synthetic_model(), "exact", None)


def fork_join_trace(path: Path, iterations: int = 3, blocks: int | None = None, torch_events: dict[str, list[int]] | None = None) -> Path:
    """Timing pass 0: eager iterations of 100 us. Traced pass 1 (graph detail): each 50 us iteration
    launches, at offsets (ns) from its start:
        1000 K1 on s1 (GPU 5000-7000)   1200 record e1   1300 s2 waits e1 (event 11)
        1400 K2 on s2 (GPU 7500-9500)   1500 record e2   1600 K3 on s1 (GPU 7200-8200)
        1900 s1 waits e2 (event 12)     2000 K4 on s1 (GPU 10000-11000)   2200 synchronize until 12000
    Launch calls last 100 ns; records and waits 50 ns. `blocks`: every kernel's grid; `torch_events`: what
    PyTorch's hooks heard in the traced pass (meta.torch), e.g. cudagraph-tree recordings."""
    t = SyntheticTrace().add_pass(0, "timing").add_pass(1, "graph")
    t.iterations(0, "eager", [100_000] * iterations, start=1_000)
    for i in range(iterations):
        b = 1_000_000 + i * 50_000
        t.iteration(1, "eager", i, b, b + 50_000)

        def kernel(name: str, at: int, gpu: tuple[int, int], stream: int) -> None:
            corr = t.api(1, "cudaLaunchKernel", "kernel_launch", b + at, b + at + 100)
            t.span(1, name, b + gpu[0], b + gpu[1], corr, stream=stream, blocks=blocks)

        def wait(at: int, stream: int, event: int) -> None:
            corr = t.api(1, "cudaStreamWaitEvent", "event", b + at, b + at + 50)
            t._add("synchronizations", pass_id=1, type="stream_wait_event", start_ns=b + at + 10, end_ns=b + at + 40,
                   correlation_id=corr, stream_id=stream, event_id=event)

        kernel("K1", 1000, (5000, 7000), 1)
        t.api(1, "cudaEventRecord", "event", b + 1200, b + 1250)
        wait(1300, 2, 11)
        kernel("K2", 1400, (7500, 9500), 2)
        t.api(1, "cudaEventRecord", "event", b + 1500, b + 1550)
        kernel("K3", 1600, (7200, 8200), 1)
        wait(1900, 1, 12)
        kernel("K4", 2000, (10_000, 11_000), 1)
        t.api(1, "cudaStreamSynchronize", "sync", b + 2200, b + 12_000)
    if torch_events is not None:
        t.meta["torch"] = {"version": "2.11.0", "events": {**torch_events, "thread_id": [1] * len(torch_events["kind"])}}
    return t.write(path)


def _instantiated_before(path: Path, graph_id: int, start_ns: int) -> None:
    """Adds to the trace at `path` a graph instantiated at `start_ns` (10 ns long), before the synthetic regions."""
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO graph_events (pass_id, graph_id, event, start_ns, end_ns) VALUES (0, ?, 'instantiate', ?, ?)",
                [graph_id, start_ns, start_ns + 10])
    con.close()


def test_fork_join_prediction_worked_out_by_hand(tmp_path: Path) -> None:
    trace = load(fork_join_trace(tmp_path / "fj.gmtrace"))
    p = predict(trace, None, MODEL)
    assert (p.model_gpu, p.model_match) == ("SYNTHETIC GPU", "exact")
    [r] = p.regions
    assert (r.label, r.direction, r.iterations, r.synchronized) == ("eager iterations", "to_graph", 3, True)
    g = r.graph
    assert g is not None
    # edges: K1->K3->K4 (stream 1), K1->K2 (wait on e1), K2->K4 (wait on e2)
    assert (g.nodes, g.edges, g.kernels, g.streams, g.cross_stream_edges, g.event_pairing) == (4, 4, 4, 2, 2, "inferred")
    assert g.serial_ns == 6000  # 2000 + 2000 + 1000 + 1000
    # weights d + 150 (the model's per-kernel cost on a path): K1 K2 K4 = 2150 + 2150 + 1150 beats K1 K3 K4
    assert g.critical_path_ns == pytest.approx(5450) and g.critical_path_nodes == 3
    # GPU busy: K1 [5000, 7000] + K3 and K2 overlapping [7200, 9500] + K4 [10000, 11000] = 5300
    assert r.gpu_work_ns == pytest.approx(5300)
    # capture: model 10000 + 4*3000 + 2 records*1000 + 2 waits*1200 = 26400; from the issue time
    # (2100 - 1000 = 1100 ns, times the untraced/traced ratio 100000/50000 = 2) + 26400 - eager issue
    # (1000 + 4*2500 + 2*600 + 2*700 = 13600) = 15000: the larger, 26400
    assert r.capture is not None and r.capture.ns == pytest.approx(26_400)
    assert r.instantiate is not None and r.instantiate.ns == pytest.approx(40_000 + 4 * 4_000 + 4 * 500)  # 58000
    assert r.upload is not None and r.upload.ns == pytest.approx(30_000 + 4 * 300 + 4 * 50)  # 31400
    assert r.first_launch_excess is not None and r.first_launch_excess.ns == pytest.approx(5_000 + 4 * 800)  # 8200
    # no graph was instantiated before: the process's first graph, 20000 + 200000 + 0 + 5000 more
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(225_000)
    assert r.one_time is not None and r.one_time.ns == pytest.approx(26_400 + 58_000 + 31_400 + 8_200 + 225_000)  # 349000
    # 225000 of 349000 (64%) is the first graph's extra: the prediction says how uncertain that part is
    assert any(n.startswith("225 us of the predicted one-time cost (64%) is what the process's first graph costs") for n in words(r.notes)), r.notes
    # replay: host 8000 + 4*5 + 4*1 = 8024, plus the GPU span: the critical path K1 K2 K4 (5000) + the model's
    # 2000 + 3 kernels on it * 150 + K3 beside it 200 (the synthetic kernels have no grid: no wide share) = 7650
    assert r.replay_period is not None and r.replay_period.ns == pytest.approx(15_674)
    assert r.eager_period is not None and r.eager_period.ns == 100_000
    assert r.saved_per_iteration is not None and r.saved_per_iteration.ns == pytest.approx(84_326)
    assert r.break_even == 5  # ceil(349000 / 84326) = ceil(4.14)
    # a noise-free model and identical iterations: the interval collapses onto the point
    assert (r.break_even_low, r.break_even_high, r.never) == (5, 5, False)
    assert r.breakers == ()  # the synchronize ends each iteration: outside the captured region
    assert note("event_pairing_inferred") in p.notes and any("cudaEventRecord" in n for n in words(p.notes))


def test_a_probe_measured_term_is_drawn_for_a_new_process_not_resampled() -> None:
    """SYNTHETIC samples 100, 200, 400 ns (logs ln100 + {0, ln2, 2 ln2}: mean ln200, sd ln2): a new process draws from
    the log-normal exp(ln200 + ln2 * sqrt(1 + 1/3) * z), so its 97.5th percentile is 200 * exp(1.96 * 0.693 * 1.155) =
    959 ns, beyond the largest sample (resampling the three never exceeds 400). One sample is the value itself; a
    sample that is not positive keeps the values' own normal."""
    import math

    import numpy as np

    from graphmode.analyzers.costmodel import Spread
    from graphmode.analyzers.predict import _from_samples

    rng = np.random.default_rng(0)
    s = Spread.of([100.0, 200.0, 400.0])
    assert s is not None
    d = _from_samples(rng, s, 400_000)
    assert float(np.median(d)) == pytest.approx(200, rel=0.01)
    assert float(np.percentile(d, 97.5)) == pytest.approx(200 * math.exp(1.96 * math.log(2) * math.sqrt(4 / 3)), rel=0.02)
    one = Spread.of([250.0])
    assert one is not None and set(_from_samples(rng, one, 10).tolist()) == {250.0}
    mixed = Spread.of([-50.0, 50.0, 150.0])  # mean 50, sd 100
    assert mixed is not None
    d = _from_samples(rng, mixed, 400_000)
    assert float(np.mean(d)) == pytest.approx(50, abs=1) and float(np.std(d)) == pytest.approx(100 * math.sqrt(4 / 3), rel=0.01)


def test_a_node_api_build_is_priced_as_the_model_built_one(tmp_path: Path) -> None:
    """The SYNTHETIC fork-join trace priced as a graph built with the node API (`build='node_api'`): its making is
    the model's build_api for 4 kernels and 4 edges, 15000 + 4*8000 + 4*300 = 48200 ns (not the capture's 26400),
    and a node-API program's first graph (150000 + 100000 + 0 + 5000 = 255000) replaces the captured one's; the rest
    of the one-time cost and the replay are the same graph's, as worked out above. A model without a node-API
    measurement prices a capture and says so."""
    trace = load(fork_join_trace(tmp_path / "fj.gmtrace"))
    [cap] = predict(trace, None, MODEL).regions
    [api] = predict(trace, None, MODEL, build="node_api").regions
    assert (cap.build, api.build) == ("capture", "node_api")
    assert api.capture is not None and api.capture.ns == pytest.approx(48_200)
    assert api.first_graph_extra is not None and api.first_graph_extra.ns == pytest.approx(255_000)
    assert api.one_time is not None and api.one_time.ns == pytest.approx(48_200 + 58_000 + 31_400 + 8_200 + 255_000)  # 400800
    assert api.replay_period == cap.replay_period
    assert api.break_even == 5  # ceil(400800 / 84326) = ceil(4.75)
    # the note sets the build beside the capture the same work would take (26400 ns worked out above)
    assert any("node API" in n and "48.2 us to build, where a stream capture of the same work would take 26.4 us" in n for n in words(api.notes))
    old = dataclasses.replace(MODEL.model, costs={k: v for k, v in MODEL.model.costs.items() if k != "build_api"}, first_graph_api={})
    [r] = predict(trace, None, ModelChoice(old, "exact", None), build="node_api").regions
    assert r.build == "capture" and r.one_time == cap.one_time
    assert note("node_api_unmeasured") in r.notes and any("no node-API measurement" in n for n in words(r.notes))
    with pytest.raises(ValueError, match="choose one of"):
        predict(trace, None, MODEL, build="nodes")


def test_a_pytorch_program_pays_torch_cuda_graphs_own_work(tmp_path: Path) -> None:
    """The SYNTHETIC fork-join trace marked as a program that imported torch, priced with the synthetic model
    plus SYNTHETIC torch probes: the process's first capture adds the probes' 'first' median (12 ms) to the
    one-time cost of 349000 ns worked out above; after a graph was built, the 'later' median (1.5 ms); a trace
    without torch adds nothing."""
    from graphmode.analyzers.costmodel import torch_capture_spreads

    m = dataclasses.replace(synthetic_model(), torch_capture=torch_capture_spreads(
        [{"first_ns": 9e6, "later_ns": [1e6, 2e6]}, {"first_ns": 12e6, "later_ns": [1.5e6, 1.5e6]}, {"first_ns": 30e6, "later_ns": [1.5e6]}]))
    choice = ModelChoice(m, "exact", None)
    path = fork_join_trace(tmp_path / "fj.gmtrace")
    [plain] = predict(load(path), None, choice).regions
    assert plain.framework is None and plain.one_time is not None and plain.one_time.ns == pytest.approx(349_000)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO meta VALUES ('torch', ?)", [json.dumps({"version": "2.11.0"})])
    con.close()
    p = predict(load(path), None, choice)
    [r] = p.regions
    assert r.framework is not None and r.framework.ns == pytest.approx(12e6)
    assert r.one_time is not None and r.one_time.ns == pytest.approx(349_000 + 12e6)
    assert r.break_even == smallest_replays(349_000 + 12e6, 84_326)  # the saving is unchanged (no replay probe here)
    # the interval carries the probes' spread: 9 to 30 ms across processes
    assert r.one_time.low_ns < 349_000 + 11e6 and r.one_time.high_ns > 349_000 + 20e6
    (note,) = [n for n in words(p.notes) if "PyTorch's own work" in n]
    assert "is in the predicted one-time costs" in note and "12 ms [" in note
    _instantiated_before(path, 9, 10)
    [later] = predict(load(path), None, choice).regions
    assert later.framework is not None and later.framework.ns == pytest.approx(1.5e6)
    assert later.one_time is not None and later.one_time.ns == pytest.approx(349_000 - 225_000 + 1.5e6)


def test_a_kernels_per_node_replay_cost_follows_its_duration(tmp_path: Path) -> None:
    # A model whose ~5 us calibration kernel (5200 ns) costs 50 ns per node in a replay and the short one
    # (1500 ns) 150: a 2000 ns kernel is 500/3700 of the way, 150 - 100 * 500/3700 = 136.49 ns; 1000 ns: 150
    m = synthetic_model()
    ov = m.costs["replay_gpu_overhead"]
    coef = list(ov.coef)
    coef[ov.features.index("path_kernel_spin")] = 50.0
    m.costs["replay_gpu_overhead"] = dataclasses.replace(ov, coef=tuple(coef))
    [r] = predict(load(fork_join_trace(tmp_path / "fj.gmtrace")), None, ModelChoice(m, "exact", None)).regions
    g2000 = 150 - 100 * 500 / 3700
    assert r.graph is not None and r.graph.critical_path_ns == pytest.approx(2000 + 2000 + 1000 + 2 * g2000 + 150)
    # GPU span: the critical path with its per-node costs + the model's 2000 + K3 beside the path 200
    assert r.replay_period is not None and r.replay_period.ns == pytest.approx(8024 + 5000 + 2 * g2000 + 150 + 2000 + 200)


def test_wide_kernels_replay_shorter_and_take_sms_from_the_path(tmp_path: Path) -> None:
    """The SYNTHETIC fork-join with every kernel spread over the GPU. The synthetic model has 100 SMs; a wide kernel
    runs 100 ns shorter in a replay than eagerly, and a wide kernel beside the path adds half its own time."""
    # 200 blocks: wide share 1. Path K1 K2 K4 (weights 1900 + 1900 + 900 beat K1 K3 K4), eager 5000; overhead
    # 2000 + 3 * -100 + K3 beside it (200 + 0.5 * 1000) = 2400: span 7400, replay 8024 + 7400
    [r] = predict(load(fork_join_trace(tmp_path / "wide.gmtrace", blocks=200)), None, MODEL).regions
    assert r.graph is not None and r.graph.critical_path_ns == pytest.approx(1900 + 1900 + 900)
    assert r.replay_period is not None and r.replay_period.ns == pytest.approx(8024 + 7400)
    # 50 blocks: half wide. Per kernel 0.5 * 150 + 0.5 * -100 = 25; overhead 2000 + 75 + 200 + 0.5 * (0.5 * 1000)
    [h] = predict(load(fork_join_trace(tmp_path / "half.gmtrace", blocks=50)), None, MODEL).regions
    assert h.replay_period is not None and h.replay_period.ns == pytest.approx(8024 + 5000 + 2000 + 75 + 200 + 250)


def test_a_program_recording_cudagraph_trees_is_priced_with_the_tree_probes(tmp_path: Path) -> None:
    """The SYNTHETIC fork-join as a PyTorch program whose hooks heard a cudagraph-tree recording, priced with SYNTHETIC
    tree probes: the first recording's median (25 ms) instead of torch.cuda.graph's, and the tree's call (60 us of
    host time) in place of the launch in each replay; after a recording earlier in the process, the later one's."""
    from graphmode.analyzers.costmodel import torch_capture_spreads, tree_capture_spreads

    trees = tree_capture_spreads([{"recordings": [{"framework_ns": f, "call_host_ns": h}, {"framework_ns": l, "call_host_ns": h}]}
                                  for f, l, h in ((20e6, 3e6, 50e3), (25e6, 4e6, 60e3), (40e6, 5e6, 70e3))])
    m = dataclasses.replace(synthetic_model(), tree_capture=trees,
                            torch_capture=torch_capture_spreads([{"first_ns": 9e6, "later_ns": [1e6]}]))
    choice = ModelChoice(m, "exact", None)
    after = {"kind": ["start_cudagraph_recording", "end_cudagraph_recording"], "ts_ns": [5_000_000, 6_000_000]}
    p = predict(load(fork_join_trace(tmp_path / "t.gmtrace", torch_events=after)), None, choice)
    [r] = p.regions
    assert r.framework is not None and r.framework.ns == pytest.approx(25e6)  # no recording before the region: the first
    assert r.one_time is not None and r.one_time.ns == pytest.approx(349_000 + 25e6)
    # synchronized replays: the tree's call (median 60 us) + the GPU span 7650 (test_fork_join_prediction_worked_out_by_hand)
    assert r.replay_period is not None and r.replay_period.ns == pytest.approx(60_000 + 7_650)
    assert any("cudagraph tree's replay is a call into PyTorch" in n for n in words(r.notes))
    assert any("cudagraph trees (torch.compile) were timed too" in n for n in words(p.notes))
    before = {"kind": ["start_cudagraph_recording", "end_cudagraph_recording"], "ts_ns": [100, 200]}
    [later] = predict(load(fork_join_trace(tmp_path / "l.gmtrace", torch_events=before)), None, choice).regions
    assert later.framework is not None and later.framework.ns == pytest.approx(4e6)
    # a model without tree probes prices torch.cuda.graph's first capture and says so
    bare = ModelChoice(dataclasses.replace(m, tree_capture={}), "exact", None)
    [old] = predict(load(fork_join_trace(tmp_path / "o.gmtrace", torch_events=after)), None, bare).regions
    assert old.framework is not None and old.framework.ns == pytest.approx(9e6)
    assert note("trees_unmeasured") in old.notes and any("torch.cuda.graph's stands in" in n for n in words(old.notes))


def test_a_pytorch_program_replays_through_torch_and_pays_its_host_time(tmp_path: Path) -> None:
    """SYNTHETIC torch probes that timed `g.replay()`: 12 us of host time around a synchronized replay (median of
    10, 12, 14 us) replaces the model's cuGraphLaunch + synchronize (8024 ns) in a PyTorch program's replay."""
    from graphmode.analyzers.costmodel import torch_capture_spreads

    m = dataclasses.replace(synthetic_model(), torch_capture=torch_capture_spreads(
        [{"first_ns": 9e6, "later_ns": [1e6], "replay_host_ns": [10e3, 12e3, 14e3], "replay_call_ns": [4e3, 5e3]}]))
    path = fork_join_trace(tmp_path / "fj.gmtrace", torch_events={"kind": [], "ts_ns": []})
    [r] = predict(load(path), None, ModelChoice(m, "exact", None)).regions
    assert r.replay_period is not None and r.replay_period.ns == pytest.approx(12_000 + 7_650)


def test_a_pytorch_programs_capture_scales_its_eager_issue_time(tmp_path: Path) -> None:
    """SYNTHETIC torch probe: later capture bodies of 40, 44 and 48 us against an eager step of 2.2 us (median of 2,
    2.2, 2.4): issuing in capture mode costs 20x (median ratio). The fork-join's eager issue time, 1100 ns traced
    times the untraced/traced ratio 2 = 2200 ns, times 20 = 44000 ns beats the model's capture of 26400 ns."""
    from graphmode.analyzers.costmodel import torch_capture_spreads

    tc = torch_capture_spreads([{"first_ns": 9e6, "later_ns": [1e6], "bodies_ns": [5e3, 40e3, 44e3, 48e3], "eager_step_ns": [2e3, 2.2e3, 2.4e3]}])
    assert tc["capture_ratio"].samples == pytest.approx((40 / 2.2, 20.0, 48 / 2.2))
    m = dataclasses.replace(synthetic_model(), torch_capture=tc)
    path = fork_join_trace(tmp_path / "fj.gmtrace", torch_events={"kind": [], "ts_ns": []})
    [r] = predict(load(path), None, ModelChoice(m, "exact", None)).regions
    assert r.capture is not None and r.capture.ns == pytest.approx(44_000)
    assert r.one_time is not None and r.one_time.ns == pytest.approx(349_000 - 26_400 + 44_000 + 9e6)
    assert any("times 20.00" in n for n in words(r.notes))
    # a ratio that would make the capture cheaper than the model's leaves the model's
    low = torch_capture_spreads([{"first_ns": 9e6, "later_ns": [1e6], "bodies_ns": [5e3, 4e3], "eager_step_ns": [2e3]}])
    [q] = predict(load(path), None, ModelChoice(dataclasses.replace(m, torch_capture=low), "exact", None)).regions
    assert q.capture is not None and q.capture.ns == pytest.approx(26_400)


def test_a_graph_built_before_the_region_removes_the_first_graph_extra(tmp_path: Path) -> None:
    path = fork_join_trace(tmp_path / "fj.gmtrace")
    _instantiated_before(path, 9, 10)
    [r] = predict(load(path), None, MODEL).regions
    assert r.first_graph_extra is None
    assert r.one_time is not None and r.one_time.ns == pytest.approx(349_000 - 225_000)


def test_a_processs_second_graph_pays_the_second_graphs_extra(tmp_path: Path) -> None:
    """A SYNTHETIC model whose probes timed the second graph too (95 us over the steady state): with one graph
    instantiated before the region, the region's graph would be the process's second and pays that instead of the
    first's 225 us (349000 - 225000 + 95000); with two before, neither."""
    from graphmode.analyzers.costmodel import Spread

    base = synthetic_model()
    second = {"second_capture": 10_000.0, "second_instantiate": 80_000.0, "second_upload": 0.0, "second_first_launch": 5_000.0}
    m = dataclasses.replace(base, first_graph={**base.first_graph, **{k: Spread.of([v] * 3) for k, v in second.items()}})
    choice = ModelChoice(m, "exact", None)
    path = fork_join_trace(tmp_path / "fj.gmtrace")
    [first] = predict(load(path), None, choice).regions
    assert first.first_graph_extra is not None and first.first_graph_extra.ns == pytest.approx(225_000)
    _instantiated_before(path, 9, 10)
    [r] = predict(load(path), None, choice).regions
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(95_000)
    assert r.one_time is not None and r.one_time.ns == pytest.approx(349_000 - 225_000 + 95_000)
    assert any("second graph" in n and "95 us" in n for n in words(r.notes)), r.notes
    _instantiated_before(path, 10, 30)
    [third] = predict(load(path), None, choice).regions
    assert third.first_graph_extra is None and third.one_time is not None and third.one_time.ns == pytest.approx(349_000 - 225_000)


def _torch_probed_model() -> CostModel:
    """The synthetic model with two torch probe processes: first capture 9 ms; first-graph extra (instantiate + first
    replay over the median from the third graph on) 135 us (tests/test_costmodel.py works it out)."""
    from graphmode.analyzers.costmodel import torch_capture_spreads

    us = 1e3
    return dataclasses.replace(synthetic_model(), torch_capture=torch_capture_spreads(
        [{"first_ns": 9e6, "instantiate_ns": [130 * us, 80 * us, 60 * us, 70 * us, 50 * us],
          "first_replay_ns": [120 * us, 90 * us, 80 * us, 90 * us, 80 * us]},
         {"first_ns": 9e6, "instantiate_ns": [200 * us, 100 * us, 60 * us, 60 * us, 60 * us],
          "first_replay_ns": [100 * us, 80 * us, 80 * us, 80 * us, 80 * us]}]))


def test_a_pytorch_programs_first_graph_pays_the_torch_probes_extra(tmp_path: Path) -> None:
    """SYNTHETIC: a PyTorch program's first graph pays the torch probe's first-graph extra (instantiate + first
    replay, 135 us: tests/test_costmodel.py works it out) instead of the driver probe's 225 us, whose capture share
    torch.cuda.graph's first capture (the framework term, 9 ms) already holds."""
    us = 1e3
    m = _torch_probed_model()
    path = fork_join_trace(tmp_path / "fj.gmtrace")
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO meta VALUES ('torch', ?)", [json.dumps({"version": "2.11.0"})])
    con.close()
    [r] = predict(load(path), None, ModelChoice(m, "exact", None)).regions
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(135 * us)
    assert r.framework is not None and r.framework.ns == pytest.approx(9e6)
    assert r.one_time is not None and r.one_time.ns == pytest.approx(349_000 - 225_000 + 135 * us + 9e6)


def test_synchronizations_inside_the_region_break_the_capture(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "graph")
    for i in range(4):
        b = 1_000_000 + i * 100_000
        t.iteration(0, "eager", i, b, b + 100_000)
        for k in range(3):  # launch, then synchronize after each kernel (eager_sync_each style)
            corr = t.api(0, "cudaLaunchKernel", "kernel_launch", b + 10_000 * k, b + 10_000 * k + 100)
            t.span(0, f"K{k}", b + 10_000 * k + 500, b + 10_000 * k + 1500, corr, stream=3)
            t.api(0, "cudaStreamSynchronize", "sync", b + 10_000 * k + 200, b + 10_000 * k + 1600)
        t.api(0, "cudaMalloc", "memory", b + 30_500, b + 31_000)  # after the last launch, but an allocation
        t._add("api_calls", pass_id=0, correlation_id=900 + i, api="runtime", name="cudaMemcpy", category="memcpy",
               start_ns=b + 5_000, end_ns=b + 6_000, thread_id=1, process_id=1, source="train.py:12 step")
    t.meta["workload"] = "synthetic-script"
    [r] = predict(load(t.write(tmp_path / "s.gmtrace")), None, MODEL).regions
    kinds = {(b.kind, b.api): b for b in r.breakers}
    # 3 synchronizes per iteration, the last after the last launch: 2 inside x 4 iterations
    assert kinds[("sync", "cudaStreamSynchronize")].calls == 8
    assert kinds[("sync", "cudaStreamSynchronize")].per_iteration == 2
    # a synchronous cudaMemcpy is a host read, with its line
    assert kinds[("host_read", "cudaMemcpy")].calls == 4 and kinds[("host_read", "cudaMemcpy")].where == "train.py:12 step"
    assert ("allocation", "cudaMalloc") not in kinds  # after the last launch: the allocation is outside the region
    # the issue time excludes the synchronizes inside it: the capture estimate does not pay for them
    assert r.capture is not None


def test_graph_only_trace_gets_the_eager_converse(tmp_path: Path) -> None:
    """A trace that only replays graph 5 (3 kernel nodes in a chain), as XLA runs. Replays take 10 us
    (launch + synchronize), the graph's GPU span is 4 us; its capture took 20 us and instantiate 41 us."""
    t = SyntheticTrace().add_pass(0, "graph")
    t.graph(0, 5, "xla step", [(51, "kernel", "a"), (52, "kernel", "b"), (53, "kernel", "c")], [(51, 52), (52, 53)])
    t._add("graph_events", pass_id=0, graph_id=5, event="capture", start_ns=100, end_ns=20_100)
    t._add("graph_events", pass_id=0, graph_id=5, event="instantiate", start_ns=30_000, end_ns=71_000)
    for i in range(4):
        b = 100_000 + i * 10_000
        t.iteration(0, "graph", i, b, b + 10_000)
        t._add("markers", pass_id=0, kind="iteration", name="inferred", mode="graph", iteration=i, start_ns=b, end_ns=b + 10_000,
               thread_id=1, graph_id=5)
        corr = t.api(0, "cudaGraphLaunch", "graph_launch", b, b + 500)
        t.span(0, "xla step", b + 1_000, b + 5_000, corr, kind="graph", graph_id=5)
        t.api(0, "cudaStreamSynchronize", "sync", b + 600, b + 9_900)
    path = t.write(tmp_path / "g.gmtrace")
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM markers WHERE kind = 'iteration' AND graph_id = 0")  # only the graph's own iterations
    con.close()
    trace = load(path)
    a = analyze(trace, MODEL)
    assert a.prediction is not None
    [r] = a.prediction.regions
    assert (r.direction, r.graph_id, r.iterations, r.synchronized) == ("to_eager", 5, 4, True)
    # eager: issue 1000 + 3*2500 = 8500 ns vs GPU 4000 (the replay's span) + 3*1000 (eager gaps) = 7000:
    # CPU-bound, 8500 + 3000 (synchronize tail) = 11500
    assert r.eager_period is not None and r.eager_period.ns == pytest.approx(11_500)
    assert r.replay_period is not None and r.replay_period.ns == 10_000
    assert r.saved_per_iteration is not None and r.saved_per_iteration.ns == pytest.approx(1_500)
    assert r.measured_one_time_ns == 61_000  # capture 20000 + instantiate 41000 (graph_events)
    assert r.break_even == 41  # ceil(61000 / 1500) = ceil(40.7)


def test_without_a_cost_model_the_graph_is_still_built_and_the_report_says_why(tmp_path: Path) -> None:
    trace = load(fork_join_trace(tmp_path / "fj.gmtrace"))
    p = predict(trace, None, ModelChoice(None, "none", note("no_cost_model")))
    [r] = p.regions
    assert r.graph is not None and r.graph.nodes == 4
    assert r.one_time is None and r.break_even is None
    assert r.eager_period is not None and r.eager_period.ns == 100_000
    assert p.model_note == note("no_cost_model") and "graphmode calibrate" in word(p.model_note)


def test_predict_lines_spec_errors_say_what_to_write(tmp_path: Path) -> None:
    trace = load(fork_join_trace(tmp_path / "fj.gmtrace"))
    with pytest.raises(ValueError, match="FILE:LINE"):
        predict(trace, None, MODEL, ["train.py"])
    p = predict(trace, None, MODEL, ["train.py:3-9"])
    assert note("lines_without_sources", lines="train.py:3-9") in p.notes and any("--launch-sources" in n for n in words(p.notes))


# ---- the real recordings (H200) with the synthetic model: the construction and the comparison are real,
# ---- the prices synthetic


@pytest.mark.parametrize("name", ["chain-graph", "chain-node", "dag-graph", "dag-node"])
def test_bench_recordings_predict_from_their_eager_iterations(name: str) -> None:
    trace = load(DATA / f"{name}.gmtrace")
    a = analyze(trace, MODEL)
    p = a.prediction
    assert p is not None
    r = next(r for r in p.regions if r.mode == "eager")
    eager = a.mode("eager")
    assert eager is not None and eager.wall is not None and eager.gpu_busy is not None
    # the eager period is the timing pass's median eager iteration, as in the measured break-even
    assert r.eager_period is not None and r.eager_period.ns == eager.wall.median
    # GPU work: the same union of spans the per-iteration metrics take (ops placed by launch there, by GPU start here)
    assert r.gpu_work_ns == pytest.approx(eager.gpu_busy.median, rel=0.02)
    be = a.primary_break_even()
    assert be is not None
    assert (r.measured_one_time_ns, r.measured_replay_ns, r.measured_break_even) == (be.one_time_ns, be.graph_ns, be.replays)
    assert r.graph is not None and r.graph.nodes == (20 if name.startswith("chain") else 15)
    assert r.one_time is not None and r.saved_per_iteration is not None and r.break_even is not None
    assert r.break_even == smallest_replays(r.one_time.ns, r.saved_per_iteration.ns)
    assert r.break_even_low is not None and r.break_even_low <= r.break_even
    assert r.break_even_high_never or (r.break_even_high is not None and r.break_even <= r.break_even_high)
    assert r.first_graph_extra is not None  # the bench builds its process's first graph after these iterations
    # the dag's graph is built with the node API (trace: graphs.origin 'explicit'), the chain's captured: priced alike
    assert r.build == ("node_api" if name.startswith("dag") else "capture")
    if name.startswith("chain"):
        s = next(r for r in p.regions if r.mode == "eager_sync_each")
        [sync] = [b for b in s.breakers if b.kind == "sync"]
        assert sync.calls == 19 * 40  # 20 synchronizes per iteration, the last one ends it


@pytest.mark.parametrize("name", ["cuda_python_capture", "torch_cudagraph", "torch_compile", "cupy_graph"])
def test_script_recordings_predict_the_graph_each_one_built(name: str) -> None:
    trace = load(DATA / "scripts" / f"{name}.gmtrace")
    a = analyze(trace, MODEL)
    assert a.prediction is not None
    regions = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert regions, "every script recording has eager iterations inferred from its graph's kernels"
    for r in regions:
        nodes = trace.rows("SELECT count(*) FROM graph_nodes WHERE graph_id = ? AND node_type IN ('kernel', 'memcpy', 'memset')",
                           [r.graph_id])[0][0]
        # the predicted graph has the measured graph's GPU nodes: the eager twin launched the same work
        assert r.graph is not None and r.graph.nodes == nodes
        assert r.measured_replay_ns is not None
        # the eager baseline is the per-graph answer's, not the detail run's slowed iterations: prediction
        # and measurement compare against the same eager period
        g = next(g for g in a.graphs if g.graph_id == r.graph_id)
        if g.eager is None:  # no eager baseline in the per-graph answer (torch.compile's one first-call warm-up)
            assert any("traced pass" in n for n in words(r.notes))
            continue
        assert g.eager.work is not None and r.eager_period is not None
        assert r.eager_period.ns == pytest.approx(g.eager.work.median)
        run = {"measure": "measuring"}.get(g.eager.run, g.eager.run)
        assert any(f"per-graph answer's (from the {run} run)" in n for n in words(r.notes))
        assert not any("traced pass" in n for n in words(r.notes))


def test_launch_source_lines_region(tmp_path: Path) -> None:
    trace = load(DATA / "scripts" / "cuda_python_launch_sources.gmtrace")
    p = predict(trace, None, MODEL, ["cuda_python_capture.py:49"])
    r = next(r for r in p.regions if r.label.startswith("lines"))
    # 200 eager steps of 16 launches from line 49, each ended by the synchronize of line 68
    assert r.graph is not None and (r.graph.nodes, r.graph.edges) == (16, 15)
    assert r.iterations == 200 and r.synchronized


def test_prediction_in_json_and_terminal(tmp_path: Path) -> None:
    a = analyze(load(DATA / "dag-node.gmtrace"), MODEL)
    doc = json.loads(render_json(a))
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    region = doc["prediction"]["regions"][0]
    assert region["graph"]["edges"] == 18 and region["break_even"] is not None
    out = tmp_path / "report.txt"
    with open(out, "w") as f:
        print_report(a, Console(file=f, width=200, no_color=True))
    text = out.read_text()
    assert "Prediction: what a CUDA graph would cost and save" in text and "break-even replays" in text


def test_analyze_refuses_a_bad_line_spec_and_survives_a_failing_prediction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = load(fork_join_trace(tmp_path / "fj.gmtrace"))
    with pytest.raises(ValueError, match="FILE:FIRST-LAST"):
        analyze(trace, MODEL, ["train.py:9-3x"])
    import graphmode.analyzers as analyzers_pkg

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(analyzers_pkg, "predict", broken)
    a = analyze(trace, MODEL)
    assert a.prediction is None and a.modes  # the measured report is intact
    assert note("prediction_failed", error_type="RuntimeError", error="boom") in a.cannot_compute


def test_the_bundled_model_when_there_is_one_predicts_the_h200_recordings() -> None:
    from graphmode.analyzers.costmodel import bundled_dir, choose_model, load_model

    files = [p for p in sorted(bundled_dir().glob("costmodel-*.json")) if not p.name.endswith(".measurements.json")]
    if not files:
        pytest.skip("no cost model bundled yet in graphmode/data/ (written by `graphmode calibrate` on the H200)")
    trace = load(DATA / "chain-node.gmtrace")
    choice = choose_model(trace.meta, [load_model(p) for p in files])
    assert choice.match in ("exact", "same_gpu"), choice.note  # the fixtures were recorded on the H200 too
    a = analyze(trace, choice)
    assert a.prediction is not None
    r = next(r for r in a.prediction.regions if r.mode == "eager")
    be = a.primary_break_even()
    assert be is not None and be.one_time_ns and be.graph_ns and r.one_time is not None and r.replay_period is not None
    # a sanity bound on a recording made in another process (benchmarks/prediction.py measures the accuracy)
    assert be.one_time_ns / 2 < r.one_time.ns < be.one_time_ns * 2
    assert be.graph_ns / 2 < r.replay_period.ns < be.graph_ns * 2


def test_the_page_draws_the_prediction_beside_the_measured_break_even() -> None:
    import json
    import re

    from graphmode.views import html_page

    trace = load(DATA / "chain-graph.gmtrace")
    a = analyze(trace, MODEL)
    assert a.prediction is not None
    r = next(r for r in a.prediction.regions if r.mode == "eager")
    assert r.one_time is not None and r.replay_period is not None and r.break_even is not None
    page, _ = html_page(trace, a)
    # the prediction section, with the figures of the analysis
    start = page.index("<section id='gm-prediction'>")
    text = re.sub(r"<[^>]+>", " ", page[start:page.index("</section>", start)])
    assert f"{r.break_even:,} [" in text and "measured: one-time cost" in text
    # the break-even chart: the predicted graph line (one-time + n x replay) and the predicted crossing
    figure = json.loads(page.split("id='gm-data'>")[1].split("</script>")[0])
    chart = next(p["figure"] for p in figure["plots"] if p["div"] == "gm-break-even")
    names = [t.get("name", "") for t in chart["data"]]
    assert any(n.startswith("graph, predicted:") for n in names) and "predicted break-even" in names
    (marker,) = [t for t in chart["data"] if t.get("name") == "predicted break-even"]
    assert marker["x"] == [r.break_even]


def test_pytorch_programs_are_told_what_the_prediction_leaves_out() -> None:
    """The cost model prices CUDA's calls only. A PyTorch program whose run heard cudagraph-tree recordings gets
    their measured PyTorch work (examples/torch_compile.py: 17.7 ms for the first recording, 2.32 ms the second);
    one that only captured with torch.cuda.graph is told the H200's range; a CuPy program is told nothing."""
    with load(DATA / "scripts" / "timed" / "torch_compile.gmtrace") as t:
        a = analyze(t)
    spent = sorted(g.cost.framework_ns for g in a.graphs if g.cost is not None and g.cost.framework_ns is not None)
    assert len(spent) == 2 and a.prediction is not None
    (note,) = [n for n in words(a.prediction.notes) if "PyTorch's own work" in n]
    assert f"spent {spent[0] / 1e6:.3g} ms to {spent[1] / 1e6:.3g} ms each" in note
    with load(DATA / "scripts" / "torch_cudagraph.gmtrace") as t:
        choice = find_model(t.meta)  # the shipped H200 model: its calibration timed torch.cuda.graph
        p = analyze(t).prediction
        assert choice.model is not None and {"first", "later", "replay_host", "replay_call"} <= set(choice.model.torch_capture)
        assert p is not None and any("is in the predicted one-time costs" in n for n in words(p.notes))
        priced = [r for r in p.regions if r.direction == "to_graph"]
        medians = {choice.model.torch_capture[k].median for k in ("first", "later")}
        assert priced and all(r.framework is not None and r.framework.ns in medians for r in priced)
        bare = ModelChoice(dataclasses.replace(choice.model, torch_capture={}), "exact", None)
        p = analyze(t, bare).prediction  # a model calibrated without PyTorch: the prediction says what it leaves out
    assert p is not None and any(n.startswith("a PyTorch program:") for n in words(p.notes))
    assert all(r.framework is None for r in p.regions)
    with load(DATA / "scripts" / "timed" / "cupy_graph.gmtrace") as t:
        p = analyze(t).prediction
    assert p is not None and not any("PyTorch" in n for n in words(p.notes))


def _probe_in_meta(path: Path, probe: dict[str, object]) -> None:
    """What `graphmode run`'s first-graph probe (tracer.first_graph_probe) leaves in meta.first_graph_probe."""
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO meta VALUES ('first_graph_probe', ?)", [json.dumps(probe)])
    con.close()


def test_the_first_graph_extra_measured_in_the_process_replaces_the_models(tmp_path: Path) -> None:
    """SYNTHETIC: the script's own process measured its first graph's extra, 150 us, after it ended: the region's graph
    (the process's first) pays that instead of the model's 225 us (349000 - 225000 + 150000 = 274000). With a graph
    instantiated before the region, the probe's graph was not the process's first: the probe is not used (nor where
    the run counted graphs instantiated before the probe). A probe that failed ('error') leaves the model's."""
    path = fork_join_trace(tmp_path / "fj.gmtrace")
    _probe_in_meta(path, {"extra_ns": 150_000.0, "build": 60_000.0, "instantiate": 80_000.0, "upload": 8_000.0, "first_launch": 2_000.0,
                          "run": "probe", "probe_ns": 46_000_000})
    [r] = predict(load(path), None, MODEL).regions
    assert r.first_graph_from == "this_process"
    assert ("the first graph's extra was measured in this program's process: graphmode's probe ran after the script ended, in "
            "the probe run (the script once more, untraced) and took 46 ms, outside every timing") in words(r.notes), r.notes
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(150_000)
    assert r.one_time is not None and r.one_time.ns == pytest.approx(274_000)
    # 150000 / 274000 = 55%
    assert any(n.startswith("150 us of the predicted one-time cost (55%)") and "as measured so" in n for n in words(r.notes)), r.notes
    _instantiated_before(path, 9, 10)
    [later] = predict(load(path), None, MODEL).regions
    assert later.first_graph_from == "" and later.first_graph_extra is None
    assert later.one_time is not None and later.one_time.ns == pytest.approx(349_000 - 225_000)
    counted = fork_join_trace(tmp_path / "counted.gmtrace")
    _probe_in_meta(counted, {"extra_ns": 150_000.0, "execs_before": 1})
    [c] = predict(load(counted), None, MODEL).regions
    assert c.first_graph_from == "model" and c.first_graph_extra is not None and c.first_graph_extra.ns == pytest.approx(225_000)
    # The run's own count decides, not the trace's graphs: a graph after the regions (as in a `graphmode bench` trace
    # given another process's probe, benchmarks/prediction.py) with a count of none before the probe
    _probe_in_meta(counted_zero := fork_join_trace(tmp_path / "zero.gmtrace"), {"extra_ns": 150_000.0, "execs_before": 0})
    _instantiated_before(counted_zero, 9, 5_000_000)
    [z] = predict(load(counted_zero), None, MODEL).regions
    assert z.first_graph_from == "this_process" and z.first_graph_extra is not None and z.first_graph_extra.ns == pytest.approx(150_000)
    failed = fork_join_trace(tmp_path / "failed.gmtrace")
    _probe_in_meta(failed, {"error": "CudaError: cuGraphInstantiate failed"})
    [m] = predict(load(failed), None, MODEL).regions
    assert m.first_graph_from == "model" and m.first_graph_extra is not None and m.first_graph_extra.ns == pytest.approx(225_000)


def test_a_pytorch_program_keeps_the_torch_probes_first_graph_extra(tmp_path: Path) -> None:
    """SYNTHETIC: torch.cuda.graph makes its own streams before its first graph, which pre-pays much of the extra the
    in-process probe measures (docs/metrics.md): a PyTorch program's prediction keeps the torch probe's 135 us."""
    us = 1e3
    m = _torch_probed_model()
    path = fork_join_trace(tmp_path / "fj.gmtrace")
    _probe_in_meta(path, {"extra_ns": 400_000.0})
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO meta VALUES ('torch', ?)", [json.dumps({"version": "2.11.0"})])
    con.close()
    [r] = predict(load(path), None, ModelChoice(m, "exact", None)).regions
    assert r.first_graph_from == "torch_probe"
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(135 * us)


def test_a_pytorch_programs_own_process_measures_torch_cuda_graphs_work(tmp_path: Path) -> None:
    """SYNTHETIC: the probe run of a PyTorch program ran the calibration's torch probe in the program's process
    (meta.first_graph_probe.torch): its first capture's own work 6 ms (the model's probes: 9 ms), instantiate + first
    replay 190, 130, 110, 110, 110 us: the first graph's extra 190 - 110 = 80 us (the model's: 135). The prediction
    takes both from the process, with the model's relative spread; `first_graph_from` says so, and a note says where
    they were measured. With a graph instantiated before the probe (execs_before 1) the model's stand."""
    us = 1e3
    m = _torch_probed_model()
    torch_probe = {"first_ns": 6e6, "later_ns": [1e6, 1.1e6], "instantiate_ns": [100 * us, 60 * us, 50 * us, 50 * us, 50 * us],
                   "first_replay_ns": [90 * us, 70 * us, 60 * us, 60 * us, 60 * us], "probe_ns": 80e6}
    for before, source, framework, extra in ((0, "this_process", 6e6, 80 * us), (1, "torch_probe", 9e6, 135 * us)):
        path = fork_join_trace(tmp_path / f"fj{before}.gmtrace")
        _probe_in_meta(path, {"torch": torch_probe, "probe_ns": 80e6, "run": "probe", "execs_before": before})
        con = duckdb.connect(str(path))
        con.execute("INSERT INTO meta VALUES ('torch', ?)", [json.dumps({"version": "2.11.0"})])
        con.close()
        [r] = predict(load(path), None, ModelChoice(m, "exact", None)).regions
        assert r.first_graph_from == source
        assert r.framework is not None and r.framework.ns == pytest.approx(framework)
        assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(extra)
        measured_note = [n for n in words(r.notes) if n.startswith("torch.cuda.graph's own work around the process's first capture (6 ms) was "
                                                            "measured in this program's process")]
        assert bool(measured_note) == (before == 0), r.notes
        assert all("in the probe run (the script once more, untraced) and took 80 ms" in n for n in measured_note)


def test_the_measured_first_graph_extra_carries_the_calibrations_relative_spread() -> None:
    """SYNTHETIC: calibration probes' first-graph extras 200, 225, 300 us (median 225; log sd 0.21, over the floor);
    the process measured 150 us: its samples are 150 * (200, 225, 300) / 225 = 133.33, 150, 200 us. No spread to
    borrow: the value alone."""
    from graphmode.analyzers.costmodel import Spread

    pr = sys.modules["graphmode.analyzers.predict"]
    s = pr._around(150_000.0, Spread.of([200_000.0, 225_000.0, 300_000.0]))
    assert s.samples == pytest.approx((400_000 / 3, 150_000.0, 200_000.0)) and s.median == pytest.approx(150_000)
    assert pr._around(5.0, None).samples == (5.0,)
    assert pr._around(5.0, Spread.of([7.0])).samples == (5.0,)
    # SYNTHETIC: a calibration whose extras barely vary (440, 450, 460 us: log sd 0.02) lends too little: the measured
    # 300 us stands for another graph's, so its samples get MEASURED_EXTRA_LOG_SD = 0.2 around it (median 300)
    assert pr.MEASURED_EXTRA_LOG_SD == 0.2
    narrow = pr._around(300_000.0, Spread.of([440_000.0, 450_000.0, 460_000.0]))
    assert narrow.median == pytest.approx(300_000) and np.log(narrow.samples).std(ddof=1) == pytest.approx(0.2)


def test_an_eager_only_recording_is_predicted_with_its_own_first_graph_extra() -> None:
    """A real H200 recording (session 13): `graphmode run examples/cuda_python_capture.py --eager-only`, the eager loop
    of 200 synchronized steps of 16 kernels and no graph. Its runs: measuring, detail, then the probe run, which
    measured the process's first-graph extra. The prediction finds the synchronized loop (analyzers.inference.
    sync_iterations), builds its 16-node chain, and prices the graph as the process's first with that extra."""
    trace = load(DATA / "scripts" / "cuda_python_eager_only.gmtrace")
    assert [r["config"]["name"] for r in trace.meta["runs"]] == ["measure", "detail", "probe"]
    probe = trace.meta["first_graph_probe"]
    assert (probe["run"], probe["execs_before"]) == ("probe", 0) and probe["extra_ns"] > 0
    a = analyze(trace)
    [r] = a.prediction.regions
    assert (r.direction, r.mode, r.iterations) == ("to_graph", "eager", 200)
    assert (r.label, r.basis) == ("eager iterations", note("basis_synchronized"))
    assert word(r.basis) == "inferred: the stretch between synchronizations that recurs most"
    assert r.graph is not None and (r.graph.nodes, r.graph.edges, r.graph.kernels) == (16, 15, 16)
    assert r.first_graph_from == "this_process"
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(probe["extra_ns"])
    assert r.break_even is not None and r.break_even == smallest_replays(r.one_time.ns, r.saved_per_iteration.ns)  # type: ignore[union-attr]
    # the headline's eager iterations are the synchronized loop's, from the measuring run (CUPTI activity only), and
    # the prediction's eager period is theirs, not the detail run's (every API call traced: slower)
    eager = a.mode("eager")
    assert eager is not None and eager.wall is not None and eager.wall_source == "measure" and eager.iterations >= 190
    assert eager.traced_wall is not None and eager.traced_wall.median > eager.wall.median
    assert r.eager_period is not None and r.eager_period.ns == pytest.approx(eager.wall.median)
    assert any("the eager period is the loop's, as its per-iteration table reads it (from the measuring run)" in n for n in words(r.notes))
    assert not any("come from a traced pass" in n for n in words(r.notes))
    # a timing run would stamp the loop's call line (the loop is CPU-bound in the measuring run)
    assert [ln.rsplit("/", 1)[-1] for ln in lines_to_time(trace)] == ["cuda_python_capture.py:66"]
    # the detail run ran with callbacks and simply saw no graph: nothing is said to be missing
    assert note("no_detail_run") not in a.cannot_compute
    assert note("graph_detail_no_kernels") not in a.cannot_compute
    # JSON (schema-valid) and terminal say where the extra comes from
    doc = json.loads(render_json(a))
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    assert doc["prediction"]["regions"][0]["first_graph_from"] == "this_process"
    console = Console(width=200, no_color=True, record=True)
    print_report(a, console)
    text = console.export_text()
    assert "(measured in this process)" in text
    # no kernel ran in a graph: the kernel table keeps its eager columns only
    assert "Kernels: GPU duration, median (top 1 by GPU time; none ran in a graph)" in text and "in graph " not in text


def test_a_malloc_costs_what_the_programs_own_cudamalloc_calls_took() -> None:
    """SYNTHETIC api_calls rows (name, duration): the runtime's cudaMalloc calls where recorded (a driver cuMemAlloc
    beneath them is not counted twice), else the driver's; cudaMallocHost and cudaMallocAsync are other calls; none:
    None (the prediction then prices the capture by the torch probe's ratio)."""
    from types import SimpleNamespace
    from typing import Any

    from graphmode.analyzers.predict import malloc_cost

    def trace(rows: list[tuple[str, int]]) -> Any:
        return SimpleNamespace(rows=lambda sql, params: rows)

    m = malloc_cost(trace([("cudaMalloc_v3020", 100), ("cuMemAlloc_v2", 90), ("cudaMalloc_v3020", 300),
                           ("cudaMallocHost_v3020", 5000), ("cudaMallocAsync_v11020", 7)]), 0)
    assert m is not None and m.n == 2 and m.median == 200.0
    m = malloc_cost(trace([("cuMemAlloc_v2", 90), ("cuMemAlloc_v2", 110), ("cuMemAlloc_v2", 130)]), 0)
    assert m is not None and m.n == 3 and m.median == 110.0
    assert malloc_cost(trace([("cudaMallocHost_v3020", 5000)]), 0) is None
