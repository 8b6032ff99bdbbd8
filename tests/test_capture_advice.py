"""What to capture, and how (analyzers.capture_advice; issue 30 items 2 and 3): a region's lines, the PyTorch API that fits
it, and a step's graphs per input shape.

SYNTHETIC traces built here (tests/synthetic_script.py's ScriptTrace, one pass), every expected answer worked out next to
its assertion; then what the report says of real eager-only recordings."""

from __future__ import annotations

import lzma
from collections.abc import Sequence
from pathlib import Path

import jsonschema
import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.capture_advice import iteration_lines
from graphmode.analyzers.costmodel import ModelChoice
from graphmode.analyzers.notes import note
from graphmode.analyzers.predict import predict
from graphmode.analyzers.results import RegionPrediction
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.reports.prediction import advice_text, shape_group_text
from graphmode.reports.prediction_html import prediction_html
from graphmode.tracer.store import load
from synthetic_costmodel import FIRST_GRAPH_EXTRA, synthetic_model
from synthetic_script import ScriptTrace
from tests.conftest import DATA

TORCH = {"torch": {"version": "synthetic"}}  # meta.torch: the tracer heard the program import torch
STEPS = 25


def _loop(path: Path, step: Sequence[str], torch: bool, malloc_source: str = "", stamps: bool = False,
          sources: bool = False) -> Path:
    """SYNTHETIC eager loop, never synchronized: STEPS steps of the kernels `step`, kernel j of step i launched at
    100_000 + 1_000 i + 100 j (10 ns calls), run over 200_000 + 600 i + 100 j .. + 100. With `malloc_source`, a
    cudaMalloc (from that line) between each step's first and second launch (+50 .. +60). With `stamps`, the script's
    line 20 + j stamped 5 ns before kernel j's launch, line 3 (a helper function of the script) 2 ns before, and
    other.py:99 at the step's first launch + 1; with `sources`, each launch call's source is 'train.py:{40 + j} step'."""
    t = ScriptTrace()
    for i in range(STEPS):
        for j, name in enumerate(step):
            launch = 100_000 + 1_000 * i + 100 * j
            g = 200_000 + 600 * i + 100 * j
            corr = t.call("cudaLaunchKernel", "kernel_launch", launch, launch + 10, f"train.py:{40 + j} step" if sources else "")
            t.span(0, name, g, g + 100, corr)
            if stamps:
                t._add("line_stamps", pass_id=0, thread_id=1, thread_name="MainThread", file="/home/u/train.py", line=20 + j,
                       function="<module>", ts_ns=launch - 5)
                t._add("line_stamps", pass_id=0, thread_id=1, thread_name="MainThread", file="/home/u/train.py", line=3,
                       function="helper", ts_ns=launch - 2)
            if j == 0 and stamps:
                t._add("line_stamps", pass_id=0, thread_id=1, thread_name="MainThread", file="/home/u/other.py", line=99,
                       function="f", ts_ns=launch + 1)
            if j == 0 and malloc_source:
                t.call("cudaMalloc", "memory", launch + 50, launch + 60, malloc_source)
    t.call("cudaDeviceSynchronize", "sync", 100_000 + 1_000 * STEPS, 300_000)
    if stamps:
        t.meta["script"] = {"path": "/home/u/train.py", "argv": ["train.py"], "exit_code": 0, "exception": None}
    return t.write_script(path, **(TORCH if torch else {}))


def _region(path: Path) -> RegionPrediction:
    with load(path) as trace:
        [r] = predict(trace, None, None).regions
    return r


TRAIN = ("embed", "gemm", "relu", "loss", "relu_backward", "gemm", "multi_tensor_apply_kernel")


def test_a_training_step_with_its_optimizer_is_one_whole_step_graph(tmp_path: Path) -> None:
    """SYNTHETIC PyTorch loop of TRAIN (7 kernels): one kernel named like autograd's (relu_backward: 'backward') and one
    optimizer kernel (multi_tensor_apply_kernel): the whole step in one torch.cuda.graph."""
    a = _region(_loop(tmp_path / "train.gmtrace", TRAIN, torch=True)).advice
    assert a is not None and a.api == "torch_cuda_graph_whole_step"
    assert a.reasons == (note("advice_backward", kernels=1, example="relu_backward"),
                         note("advice_optimizer", kernels=1, example="multi_tensor_apply_kernel"))


def test_a_backward_pass_without_an_optimizer_kernel_is_make_graphed_callables(tmp_path: Path) -> None:
    """SYNTHETIC PyTorch loop of TRAIN less its last kernel: a backward kernel (relu_backward), no optimizer kernel: the
    model through make_graphed_callables, the optimizer left eager."""
    a = _region(_loop(tmp_path / "fb.gmtrace", TRAIN[:-1], torch=True)).advice
    assert a is not None and a.api == "make_graphed_callables"
    assert a.reasons == (note("advice_backward", kernels=1, example="relu_backward"), note("advice_no_optimizer"))


def test_a_forward_step_is_torch_cuda_graph_around_it_and_an_optimizer_kernel_alone_is_no_training(tmp_path: Path) -> None:
    """SYNTHETIC PyTorch decode-like loop of 4 kernels, one of them multi_tensor_apply_kernel (a _foreach_copy_, as
    cudagraph trees copy inputs) but none named like a backward kernel: a forward step, torch.cuda.graph around it; its
    4 kernels said."""
    a = _region(_loop(tmp_path / "fwd.gmtrace", ("embed", "gemm", "multi_tensor_apply_kernel", "argmax"), torch=True)).advice
    assert a is not None and a.api == "torch_cuda_graph"
    assert a.reasons == (note("advice_forward_only", kernels=4),)


def test_a_program_without_pytorch_gets_no_pytorch_advice_and_breakers_must_move_out_first(tmp_path: Path) -> None:
    """SYNTHETIC loop of TRAIN in a program that never imported torch (no meta.torch, no at::native kernel): no API, the
    reason said; a cudaMalloc from train.py:12 inside each step (before its last launch) breaks the capture: one
    breaker of kind 'allocation', to move out first, with its line."""
    r = _region(_loop(tmp_path / "plain.gmtrace", TRAIN, torch=False, malloc_source="train.py:12 step"))
    assert r.advice is not None and r.advice.api == ""
    assert r.advice.reasons == (note("advice_not_pytorch"),
                                note("advice_move_out_first", breakers=1, kinds=("allocation",), apis=("cudaMalloc",),
                                     wheres=("train.py:12 step",)))
    text = advice_text(r)
    assert "no PyTorch API advice" in text and "cudaMalloc at train.py:12 step (allocation)" in text


def test_the_lines_of_an_iteration_from_line_stamps_or_launch_sources_or_unknown(tmp_path: Path) -> None:
    """SYNTHETIC. iteration_lines over the window [100_000, 101_000) (steps of 4 kernels, launches at 100_000 + 1_000 i +
    100 j): inside it, step 0's stamps of lines 21, 22, 23 (at 100_095, 100_195, 100_295) and 3 (100_098, 100_198,
    100_298), and step 1's line 20 (100_995) and 3 (100_998), as a loop's own line falls at an iteration's end; step 0's
    line 20 (99_995) falls before it; other.py:99 (100_001) is not the script's file. Spans: lines 3 and 20-23, 16 lines
    apart (more than SPAN_GAP = 3): 'train.py:3,20-23', from line stamps. A window with no stamp (200_000 .. 200_500): lines_not_in_iteration. Launch sources (no stamps): the calls
    of step 0 come from train.py lines 40..43: 'train.py:40-43'. Neither recorded: unknown, lines_unrecorded."""
    step = ("a", "b", "c", "d")
    with load(_loop(tmp_path / "stamps.gmtrace", step, torch=False, stamps=True)) as trace:
        assert iteration_lines(trace, 0, 100_000, 101_000) == ("train.py:3,20-23", "line_stamps", None)
        # a window with no stamp in it (the GPU's time, after every launch)
        assert iteration_lines(trace, 0, 200_000, 200_500) == ("", "", note("lines_not_in_iteration", recorded="line_stamps"))
    with load(_loop(tmp_path / "sources.gmtrace", step, torch=False, sources=True)) as trace:
        assert iteration_lines(trace, 0, 100_000, 101_000) == ("train.py:40-43", "launch_sources", None)
    with load(_loop(tmp_path / "none.gmtrace", step, torch=False)) as trace:
        assert iteration_lines(trace, 0, 100_000, 101_000) == ("", "", note("lines_unrecorded"))


def _shapes_loop(path: Path, torch: bool) -> Path:
    """SYNTHETIC loop over four input shapes s = 1, 2, 4, 8, 30 steps each, never synchronized, each step the kernels
    [a, b, c], every kernel 100 ns with a grid of s blocks (tests/test_repetition.py's, by launch dimensions); kernel
    calls 50 ns before their kernel, 10 ns long."""
    t = ScriptTrace()
    g = 1_000
    for s in (1, 2, 4, 8):
        for _ in range(30):
            for name in ("a", "b", "c"):
                corr = t.call("cudaLaunchKernel", "kernel_launch", g - 50, g - 40)
                t.span(0, name, g, g + 100, corr, blocks=s)
                g += 100
    return t.write_script(path, **(TORCH if torch else {}))


def test_a_step_over_four_shapes_is_one_graph_per_shape_with_their_one_time_cost_together(tmp_path: Path) -> None:
    """SYNTHETIC (_shapes_loop), priced with the synthetic cost model (tests/synthetic_costmodel.py, noise-free). Each
    shape's graph: 3 kernels in a chain, 2 edges.
    capture = max(model capture 10_000 + 3 x 3_000 = 19_000, issue + 19_000 - model eager issue (1_000 + 3 x 2_500 =
    8_500)), issue = first call start to last call end = 210 ns: 19_000; instantiate 40_000 + 3 x 4_000 + 2 x 500 =
    53_000; upload 30_000 + 3 x 300 + 2 x 50 = 31_000; first launch excess 5_000 + 3 x 800 = 7_400: 110_400. Shape 1 is
    priced as the process's first graph (no graph before it): + FIRST_GRAPH_EXTRA 225_000 = 335_400; shape k as the
    process's k-th graph, in its own row too (one graph per shape, a note saying which): the later three 110_400 each
    (the model has no second-graph extra). Together 666_600, not 4 x 335_400 = 1_341_600. Memory: no basis in an eager trace (a typed reason). Not PyTorch: no
    API. A PyTorch program: each shape's region advises one torch.cuda.graph per shape (advice_shapes, k of 4)."""
    assert sum(FIRST_GRAPH_EXTRA.values()) == 225_000
    choice = ModelChoice(synthetic_model(), "exact", None)
    with load(_shapes_loop(tmp_path / "shapes.gmtrace", torch=False)) as trace:
        p = predict(trace, None, choice)
    assert [r.one_time.ns if r.one_time else None for r in p.regions] == pytest.approx([335_400] + [110_400] * 3, abs=1)
    assert [next((n["nth"] for n in r.notes if n.kind == "shape_later_graph"), None) for r in p.regions] == [None, 2, 3, 4]
    [g] = p.shape_groups
    assert g.basis == note("basis_kernel_repetition", kernels=3, recurrences=120)
    assert (g.shapes, len(g.labels), g.memory_bytes) == (4, 4, None)
    assert g.labels[1] == "eager iterations, shape 2 of 4"
    # a synthetic program that is not PyTorch's: its allocations are not read (analyzers.step_memory)
    assert g.memory_unknown == note("step_memory_unknown", reason="not_torch") and g.memory_largest_bytes is None
    assert g.one_time is not None and g.one_time.ns == pytest.approx(666_600, abs=1)
    assert g.one_time.low_ns <= g.one_time.ns <= g.one_time.high_ns
    assert all(r.advice is not None and r.advice.api == "" for r in p.regions)
    text = shape_group_text(g)
    assert "one graph per shape" in text and "one-time cost of all 4 graphs 666.6 us" in text and "not known" in text

    with load(_shapes_loop(tmp_path / "torch_shapes.gmtrace", torch=True)) as trace:
        p = predict(trace, None, None)
    assert [r.advice.api if r.advice else None for r in p.regions] == ["torch_cuda_graph_per_shape"] * 4
    assert [r.advice.reasons[0] if r.advice else None for r in p.regions] == [note("advice_shapes", shape=k, shapes=4)
                                                                               for k in (1, 2, 3, 4)]
    assert len(p.shape_groups) == 1
    assert "reduce-overhead" in advice_text(p.regions[0])


def _real(name: str, tmp_path: Path) -> Path:
    """A committed real recording (tests/data/scripts/...), decompressed where it is .xz."""
    src = DATA / "scripts" / name
    if src.suffix != ".xz":
        return src
    out = tmp_path / src.stem
    out.write_bytes(lzma.decompress(src.read_bytes()))
    return out


def test_real_eager_only_recordings_say_their_lines_and_no_pytorch_advice(tmp_path: Path) -> None:
    """REAL recordings (H200), both cuda-python or CuPy programs that built no graph, recorded with line stamps.
    cuda_python_capture.py --eager-only: its loop (lines 67-68: step(stream), cuStreamSynchronize) calls step() (lines
    49-51) and ok() (lines 21-24): the lines stamped in most of its iterations read as three spans, 21-23,48-49,66-68
    (two stamped lines more than SPAN_GAP apart start a new span). cupy_chain.py (its loop at line 37,
    the line rule's basis): lines 27-29,37-39 (step()'s body and the timed loop run in most of its iterations; its
    10-step warm-up loop at 33-34, in a few, is not the step's). Neither imported torch: no PyTorch API; the cuda-python
    program no API, with the reason; the CuPy program CuPy's stream capture, since CuPy launched every kernel of its
    step (16 multiplies and 16 adds: cupy_multiply__..., cupy_add__...), said with the shortest name, and so the terminal
    says. The CuPy loop's
    2 cudaMalloc calls ran in its first iteration only (of 310): a first call's one-off, said in a note, not a capture
    breaker (the program's graphed version captures the same step after warm-up). No step changes shape: no shape group.
    The JSON validates against the schema."""
    for name, lines, first_only, api in (
            ("timed/cuda_python_eager_only.gmtrace.xz", "cuda_python_capture.py:21-23,48-49,66-68", (), ""),
            ("timed/cupy_unsynchronized.gmtrace.xz", "cupy_chain.py:27-29,37-39", ("cudaMalloc_v3020",), "cupy_stream_capture")):
        with load(_real(name, tmp_path)) as trace:
            analysis = analyze(trace)
        p = analysis.prediction
        assert p is not None and p.shape_groups == ()
        [r] = p.regions
        assert r.advice is not None and (r.advice.lines, r.advice.lines_from, r.advice.api) == (lines, "line_stamps", api)
        if api:
            reason = r.advice.reasons[0]
            assert r.graph is not None and r.graph.kernels == 32
            assert reason.kind == "advice_cupy" and reason["kernels"] == reason["of"] == 32
            assert str(reason["example"]).startswith("cupy_")
            text = advice_text(r)
            assert "stream.begin_capture()" in text and "CuPy launched 32 of the step's 32 GPU operations" in text
        else:
            assert r.advice.reasons[0] == note("advice_not_pytorch")
        assert r.breakers == () and r.advice.reasons[-1].kind != "advice_move_out_first"
        said = [n for n in r.notes if n.kind == "breakers_first_iteration_only"]
        assert tuple(a for n in said for a in n["apis"]) == first_only
        doc = report_dict(analysis)
        jsonschema.Draft202012Validator(load_schema()).validate(doc)
        assert doc["prediction"]["regions"][0]["advice"]["lines"] == lines
        assert f"lines {lines} (from line stamps)" in prediction_html(p)


def test_a_real_training_step_is_whole_step_advice(tmp_path: Path) -> None:
    """REAL recording (H200): a MobileNet training step that the program also captured (graph 1): its eager iterations
    run autograd's kernels (nll_loss_backward_reduce_cuda_kernel_2d, ...) and torch.optim's foreach kernels
    (multi_tensor_apply): the whole step in one torch.cuda.graph; lines 33-36,42-43 of mgc_mobilenet.py from line stamps:
    step()'s body and timed_loop()'s loop over it, run in most of the iterations (not the 5-step warm-up loop at 48-49)."""
    with load(_real("steps/mgc_mobilenet.gmtrace.xz", tmp_path)) as trace:
        p = predict(trace, analyze(trace), None)
    r = next(r for r in p.regions if r.graph_id == 1)
    assert r.advice is not None and (r.advice.api, r.advice.lines) == ("torch_cuda_graph_whole_step", "mgc_mobilenet.py:33-36,42-43")
    kinds = [n.kind for n in r.advice.reasons]
    assert kinds[:3] == ["advice_backward", "advice_optimizer", "advice_program_graphs_it"]
    assert "multi_tensor_apply" in str(r.advice.reasons[1]["example"])
