"""`graphmode calibrate` and the prediction on a real GPU (marker `gpu`; skipped with a reason where none is present).

One quick calibration (about half a minute on an H200) in a fresh process, then checks on what it measured:
every shape family built, graphmode's capture rules give the node and edge counts CUDA's capture made,
the fit and its residuals are sane, and a fresh `bench chain` recording is predicted from its eager part.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphmode.analyzers.costmodel import CostModel, ModelChoice, load_model
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> CostModel:
    out = tmp_path_factory.mktemp("calibrate") / "costmodel.json"
    proc = subprocess.run([sys.executable, "-m", "graphmode", "calibrate", "--quick", "--repeats", "3", "--replays", "10",
                           "--probes", "1", "--torch-probes", "1", "--launch-probes", "1", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Cost model for" in proc.stdout
    return load_model(out)


def test_launch_costs_were_measured_for_each_installed_framework(model: CostModel) -> None:
    """tracer.launch_probes in a fresh process per framework: a per-kernel slope and a per-call intercept for each
    launcher of the frameworks this Python has (the counterfactual's prices, analyzers.counterfactual)."""
    from graphmode.tracer.launch_probes import available

    frameworks = available()
    want = set()
    if "torch" in frameworks:
        want |= {"torch_pointwise", "torch_library", "inductor_triton", "inductor_extern"}
    if "xla" in frameworks:
        want |= {"xla_gemm", "xla_fusion"}
    assert want <= set(model.launch), (sorted(model.launch), model.calibration.get("launch_left_out"), model.calibration["errors"])
    for key, cost in model.launch.items():
        # a launch costs the CPU microseconds, not nothing and not milliseconds; the probe's kernels are short
        assert 500 < cost.per_kernel.median < 200_000, (key, cost)
        assert cost.per_call.median >= 0 and cost.gpu_per_kernel_ns < cost.per_kernel.median, (key, cost)
    # each framework's probe also ran traced, under `graphmode run`'s one run's session: what tracing adds (issue 29)
    from graphmode.analyzers.costmodel import TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE_COPIED

    assert any(p.get("traced") for p in model.launch_probes), "no traced launch probe ran"
    if "torch" in frameworks:
        # the one run of now copies the graphs PyTorch destroys in its capture block: its captures' keys
        assert {"torch_pointwise", "torch_library", TRACER_CAPTURE_NODE_COPIED, TRACER_CAPTURE_GRAPH_COPIED} <= set(model.tracer), sorted(model.tracer)
        # a capture under the one run's callbacks costs more than without them (1.2 ms a graph on the H200, session 26)
        assert 0 < model.tracer[TRACER_CAPTURE_GRAPH_COPIED].median < 50e6, model.tracer[TRACER_CAPTURE_GRAPH_COPIED]
        for key in ("torch_pointwise", "torch_library"):  # one process each side here: only its magnitude is checked
            assert abs(model.tracer[key].median) < 200_000, (key, model.tracer[key])


def test_every_shape_family_was_built_and_timed(model: CostModel) -> None:
    assert model.calibration["errors"] == [], model.calibration["errors"]
    kinds = {r["kind"] for r in model.table}
    assert kinds == {"chain", "event_chain", "forkjoin", "layers"}
    for r in model.table:
        assert 0 < r["instantiate"] and 0 < r["replay_gpu"] <= r["replay_wall"], r["shape"]
        # behind a busy GPU, launching a graph of external event nodes can take as long as a whole replay on an idle one
        # (H200: event-chain-16 42 us against 36 us, session 10; event-chain-32 67 against 63 us, session 8)
        assert r["launch_call"] < r["replay_wall"] or r["kind"] == "event_chain", r["shape"]


def test_torch_cuda_graphs_own_work_is_measured(model: CostModel) -> None:
    """Where PyTorch is installed: one fresh process captured the probe step 5 times with torch.cuda.graph; its
    first capture pays PyTorch's process-wide set-up (10-25 ms on the H200 against 1-3 ms later, benchmarks/notes/history.md)."""
    pytest.importorskip("torch")
    assert set(model.torch_capture) == {"first", "later", "replay_host", "replay_call", "capture_ratio", "first_graph_extra",
                                        "second_graph_extra"}, model.calibration["errors"]
    # the first graph's instantiate + first replay over the steady state: one sample, a finite number of ns
    assert model.torch_capture["first_graph_extra"].n == 1 and abs(model.torch_capture["first_graph_extra"].median) < 50e6
    assert model.torch_capture["capture_ratio"].n == 4 and model.torch_capture["capture_ratio"].median > 0
    first, later = model.torch_capture["first"], model.torch_capture["later"]
    assert (first.n, later.n) == (1, 4)
    assert 0 < later.median < first.median
    assert all(x > 0 for x in later.samples)
    # a replay through PyTorch: 20 timed; its host part is more than nothing and less than a millisecond
    host, call = model.torch_capture["replay_host"], model.torch_capture["replay_call"]
    assert host.n == call.n == 20 and 0 < call.median < 1e6 and 0 < host.median < 1e6


def test_cudagraph_trees_own_work_is_measured(model: CostModel) -> None:
    """One fresh process compiled two MLP steps with torch.compile(mode="reduce-overhead") and timed their recording
    calls against their steady calls: the tree's work around the capture, and its host time per call."""
    pytest.importorskip("torch")
    assert set(model.tree_capture) == {"first", "later", "call_host"}, model.calibration["errors"]
    assert model.tree_capture["first"].n == model.tree_capture["later"].n == 1
    assert model.tree_capture["call_host"].n == 2 and model.tree_capture["call_host"].median > 0
    assert model.tree_capture["first"].median > 0


def test_capture_makes_the_graph_graphmodes_capture_rules_predict(model: CostModel) -> None:
    # analyzers.eager_graph replays stream capture's rules; here CUDA's own capture is the judge
    for r in model.table:
        assert r["actual_nodes"] == r["predicted_nodes"], (r["shape"], r["actual_nodes"], r["predicted_nodes"])
        assert r["actual_edges"] == r["predicted_edges"], (
            f"{r['shape']}: CUDA's capture made {r['actual_edges']:.0f} edges, graphmode's capture rules predict "
            f"{r['predicted_edges']:.0f} (analyzers/eager_graph.py keeps redundant stream-order edges)")


def test_the_node_api_build_makes_the_same_graph_as_the_capture(model: CostModel) -> None:
    """Every shape of kernels, memsets and memcpys is also built with the node API (Calibrator.build); the driver's
    count of its nodes and edges is the captured graph's, and the build is fitted per node; a program-like fresh
    process measured a node-API program's first graph."""
    built = [r for r in model.table if r.get("build_api") is not None]
    assert {r["shape"] for r in built} >= {"kernel-chain-1", "memset-chain-8", "mixed-24", "forkjoin-2x4", "layers-4x3"}
    for r in built:
        assert (r["api_nodes"], r["api_edges"]) == (r["actual_nodes"], r["actual_edges"]), r["shape"]
    c = model.costs["build_api"]
    assert c.coefficient("kernel") > 0 and c.resid_sd < 0.5
    assert model.calibration["api_probes"] == 1 and model.first_graph_extra(api=True) is not None
    # the probes also timed the second graph's extra over the steady state
    assert model.first_graph_extra(nth=2) is not None and model.first_graph_extra(api=True, nth=2) is not None


def test_the_fit_is_sane(model: CostModel) -> None:
    c = model.costs
    assert c["instantiate"].coefficient("kernel") > 0 and c["capture"].coefficient("kernel") > 0
    assert c["eager_issue"].coefficient("kernel") > 0
    for q in ("capture", "instantiate", "launch_call"):
        assert c[q].resid_sd < 0.5, (q, c[q].resid_sd)  # relative: a fit worse than 50% per graph is no model
    assert set(model.node_gpu_ns) == {"kernel", "kernel_spin", "kernel_wide", "memset", "memcpy"} and min(model.node_gpu_ns.values()) > 0
    assert model.node_gpu_ns["kernel_spin"] > model.node_gpu_ns["kernel"]  # the ~5 us spin kernel is the longer one
    assert model.sm_count > 0 and model.calibration["wide_blocks"] == 8 * model.sm_count
    extra = model.first_graph.get("instantiate")
    # the model's: one fresh process set up like a program (--probe-program); the bare ones are kept as a control
    assert extra is not None and extra.n == 1 and model.calibration["probes"] == 1


def test_a_fresh_chain_recording_is_predicted_from_its_eager_part(model: CostModel, tmp_path: Path) -> None:
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    trace = tmp_path / "chain.gmtrace"
    proc = subprocess.run([sys.executable, "-m", "graphmode", "bench", "chain", "--kernels", "20", "-n", "50", "--out", str(trace),
                           "--no-report"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with load(trace) as t:
        a = analyze(t, ModelChoice(model, "exact", None))
    assert a.prediction is not None
    r = next(r for r in a.prediction.regions if r.mode == "eager")
    be = a.primary_break_even()
    assert r.graph is not None and (r.graph.nodes, r.graph.edges) == (20, 19)
    assert r.one_time is not None and r.replay_period is not None and be is not None and be.one_time_ns and be.graph_ns
    # a sanity bound, not the accuracy target (benchmarks/prediction.py measures that): within a factor of 3
    assert be.one_time_ns / 3 < r.one_time.ns < be.one_time_ns * 3
    assert be.graph_ns / 3 < r.replay_period.ns < be.graph_ns * 3
