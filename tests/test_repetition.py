"""The kernel repetition rule (analyzers.repetition): an eager-only loop's step found from its kernel sequence alone.

SYNTHETIC traces built here (tests/synthetic_script.py's ScriptTrace, one pass, no line stamps), every expected number
worked out next to its assertion; then one real recording (timm ViT at four batch sizes)."""

from __future__ import annotations

import lzma
from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.costmodel import ModelChoice
from graphmode.analyzers.inference import LOOP_STEP_MIN, MIN_SYNC_ITERATIONS, line_iterations
from graphmode.analyzers.notes import note
from graphmode.analyzers.predict import predict
from graphmode.analyzers.repetition import SAME_STEP_SHARE, kernel_steps, repeated_blocks
from graphmode.analyzers.run import build_run
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.reports.notes import word
from graphmode.tracer.store import load
from synthetic_costmodel import FIRST_GRAPH_EXTRA, synthetic_model
from synthetic_script import ScriptTrace
from tests.conftest import DATA

DECODE = tuple(f"decode_{j}" for j in range(6))


def _decode_loop(path: Path) -> Path:
    """SYNTHETIC decode-like script, no line stamps (the one traced run): a warm-up of 5 allocation rounds, each
    cudaMalloc, two `fill` kernels, cudaFree, cudaDeviceSynchronize (round r from w = 1_000 + 10_000 r: launches at w +
    100 and w + 200, kernels over w + 300..400 and w + 400..500, the synchronize at w + 600..700); then 25 decode steps
    of the 6 kernels DECODE, never synchronized: kernel j of step i launched at 100_000 + 1_000 i + 100 j, run over
    g = 200_000 + 600 i + 100 j .. g + 100 (the GPU behind the CPU); one synchronize at the end."""
    t = ScriptTrace()
    for r in range(5):
        w = 1_000 + 10_000 * r
        t.call("cudaMalloc", "memory", w, w + 50)
        t.eager_kernel("fill", w + 100, (w + 300, w + 400))
        t.eager_kernel("fill", w + 200, (w + 400, w + 500))
        t.call("cudaFree", "memory", w + 550, w + 580)
        t.call("cudaDeviceSynchronize", "sync", w + 600, w + 700)
    for i in range(25):
        for j, name in enumerate(DECODE):
            g = 200_000 + 600 * i + 100 * j
            t.eager_kernel(name, 100_000 + 1_000 * i + 100 * j, (g, g + 100))
    t.call("cudaDeviceSynchronize", "sync", 130_000, 216_000)
    return t.write_script(path)


def test_a_decode_loop_is_its_repeated_step_not_the_warm_up_between_synchronizations(tmp_path: Path) -> None:
    """SYNTHETIC (_decode_loop). Between synchronizations, the stretch [fill, fill] recurs 5 times (MIN_SYNC_ITERATIONS)
    and the decode steps' 150 kernels once: the synchronization rule alone would take the warm-up's [fill, fill] (10
    kernels, 5 x 200 ns of GPU time). Back to back, [fill] repeats 10 times (10 kernels) and DECODE 25 times (150
    kernels, 25 x 600 ns = 15_000 ns of GPU time, more than 1.1 x 1_000): the step is DECODE, 6 kernels, 25 recurrences,
    its iterations starting at each decode_0's GPU start 200_000 + 600 i. The prediction's region says so, and its graph
    is the 6-kernel chain with no capture breaker (the cudaMalloc and cudaFree lie in the warm-up, outside it)."""
    assert MIN_SYNC_ITERATIONS == 5
    with load(_decode_loop(tmp_path / "decode.gmtrace")) as trace:
        [step] = kernel_steps(trace, 0)
        assert (step.names, step.recurrences) == (DECODE, 25)
        it = find_iterations(trace)
        assert it.size == 25 and set(it.graph_id.tolist()) == {0}
        assert it.gpu_start_ns.tolist() == [200_000 + 600 * i for i in range(25)]
        assert set(it.source.tolist()) == {"repeat 6 25"}
        [r] = predict(trace, None, None).regions
    assert r.basis == note("basis_kernel_repetition", kernels=6, recurrences=25)
    assert "6 kernels" in word(r.basis) and "25 times back to back" in word(r.basis)
    assert r.graph is not None and (r.graph.nodes, r.graph.edges, r.graph.kernels) == (6, 5, 6)
    assert r.breakers == ()


def _training_loop(path: Path, steps: int) -> Path:
    """SYNTHETIC training loop inside a function (`train(model, n)`), no synchronization, no line stamps: an `init`
    kernel, then `steps` steps of 52 kernels: forward (embed, 16 layers of [ln, gemm, gelu], loss), backward (one
    `backward` kernel), optimizer (adam). Kernel k of the whole sequence runs over 1_000 + 100 k .. + 100, launched 500
    ns before."""
    layer = ("ln", "gemm", "gelu")
    step = ("embed", *layer * 16, "loss", "backward", "adam")
    assert len(step) == 52
    t = ScriptTrace()
    for k, name in enumerate(("init", *step * steps)):
        g = 1_000 + 100 * k
        t.eager_kernel(name, g - 500, (g, g + 100))
    return t.write_script(path)


def test_a_training_step_in_a_function_is_the_whole_step_not_its_repeated_layer(tmp_path: Path) -> None:
    """SYNTHETIC (_training_loop, 25 steps). Blocks repeated back to back: the layer [ln, gemm, gelu] 16 times a step, 400
    times in all, covering 1_200 kernels; the step (52 kernels) 25 times, covering 1_300. Both cover at least half the
    most (650) and recur at least LOOP_STEP_MIN = 20 times: the longer, the step, is chosen. Its 25 iterations start at
    the GPU starts of each step's embed kernel: 1_000 + 100 (1 + 52 i)."""
    assert LOOP_STEP_MIN == 20
    with load(_training_loop(tmp_path / "train.gmtrace", 25)) as trace:
        [step] = kernel_steps(trace, 0)
        assert (len(step.names), step.recurrences, step.names[:4]) == (52, 25, ("embed", "ln", "gemm", "gelu"))
        it = find_iterations(trace)
        assert it.gpu_start_ns.tolist() == [1_000 + 100 * (1 + 52 * i) for i in range(25)]
        [r] = predict(trace, None, None).regions
    assert r.basis == note("basis_kernel_repetition", kernels=52, recurrences=25)


def _shapes_loop(path: Path, by: str) -> Path:
    """SYNTHETIC loop over four input shapes s = 1, 2, 4, 8, 30 steps each, no synchronization, each step the kernels
    [a, b, c] (the same names at every shape). by='time': kernel durations 100 s ns, no launch dimensions recorded;
    by='grid': every kernel 100 ns, launched with a grid of s blocks. Kernels one after another from 1_000."""
    t = ScriptTrace()
    g = 1_000
    for s in (1, 2, 4, 8):
        for _ in range(30):
            for name in ("a", "b", "c"):
                d = 100 * s if by == "time" else 100
                corr = t.call("cudaLaunchKernel", "kernel_launch", g - 50, g - 40)
                t.span(0, name, g, g + d, corr, blocks=s if by == "grid" else None)
                g += d
    return t.write_script(path)


def test_a_loop_over_input_shapes_is_one_region_per_shape(tmp_path: Path) -> None:
    """SYNTHETIC (_shapes_loop). The names repeat [a, b, c] 120 times back to back: one step of 3 kernels, 120
    recurrences. By GPU time: a step takes 300 s ns, so the medians of the 5 steps before and after change 2x (at least
    SHAPE_CHANGE = 1.5) at steps 30, 60 and 90, and nowhere else: four regions of 30 iterations, shape k of 4, each step
    300, 600, 1_200, 2_400 ns of GPU work. By launch dimensions (grids of 1, 2, 4, 8 blocks, equal durations): the same
    four regions."""
    for by in ("time", "grid"):
        with load(_shapes_loop(tmp_path / f"shapes-{by}.gmtrace", by)) as trace:
            [step] = kernel_steps(trace, 0)
            assert (step.names, step.recurrences) == (("a", "b", "c"), 120)
            regions = predict(trace, None, None).regions
        assert [r.basis for r in regions] == [note("basis_kernel_repetition", kernels=3, recurrences=120, shape=k, shapes=4)
                                              for k in (1, 2, 3, 4)], by
        assert [r.iterations for r in regions] == [30, 30, 30, 30]
        if by == "time":
            assert [r.gpu_work_ns for r in regions] == [300, 600, 1_200, 2_400]
        assert "input shape 2 of 4" in word(regions[1].basis)


def test_an_outer_repetition_of_identical_steps_is_the_step_and_a_one_off_stretch_never_is() -> None:
    """SYNTHETIC name sequences. [A, B] x 10, repeated 5 times (epochs of identical steps): the block read as [A, B] x 10
    reduces to its primitive [A, B], 50 recurrences. A stretch run once ([s1, s2, s3] then [x, y] x 6): only [x, y]
    (6 recurrences); the one-off stretch is no block. [x, y] x 4 alone: fewer than MIN_SYNC_ITERATIONS, no step."""
    [b] = repeated_blocks(np.array(["A", "B"] * 50))
    assert (b.names, b.recurrences) == (("A", "B"), 50)
    [b] = repeated_blocks(np.array(["s1", "s2", "s3"] + ["x", "y"] * 6))
    assert (b.names, b.recurrences, b.runs) == (("x", "y"), 6, ((3, 15),))
    assert repeated_blocks(np.array(["x", "y"] * 4)) == []


def test_the_real_vit_at_four_batch_sizes_repeats_one_block_per_batch_size(tmp_path: Path) -> None:
    """The H200 recording of benchmarks/third_party/vit_batch_graphs.py (tests/data/scripts/one_run): per batch size
    (1, 2, 4, 8) 3 warm-up calls then 30 eager calls in a row, then its capture. The script says 33 eager calls per batch
    size, one after another: four blocks, each 33 recurrences, their runs following each other (cuBLAS picks other
    kernels at batch 1: 150 kernels a call there, 126 at the other three)."""
    out = tmp_path / "vit.gmtrace"
    out.write_bytes(lzma.decompress((DATA / "scripts" / "one_run" / "vit_batches-graphmode-00.gmtrace.xz").read_bytes()))
    with load(out) as trace:
        blocks = kernel_steps(trace, 0)
    assert [(len(b.names), b.recurrences) for b in blocks] == [(150, 33), (126, 33), (126, 33), (126, 33)]
    runs = [b.runs for b in blocks]
    assert all(len(r) == 1 for r in runs) and all(a[0][1] == b[0][0] for a, b in zip(runs, runs[1:]))


def _library_shapes_loop(path: Path, torch: bool = False) -> Path:
    """SYNTHETIC mirror of the real ViT at four batch sizes (benchmarks/third_party/vit_batch_graphs.py --eager-only):
    one loop line for all shapes s = 1, 2, 4, 8, 30 steps each, never synchronized, where the library picks other GEMM
    kernels by size (as cuBLAS does), so that each shape's step has kernel names of its own besides those all shapes
    share:
      s = 1: embed, ln, gemv, scal, act, add, ln, gemv, scal, act, add, gemv   (12 kernels)
      s = 2, 4, 8: embed, ln, G, act, add, ln, G, act, add, G                   (10 kernels; G = gemm_64x64, gemm_128x64,
                                                                                 gemm_128x128)
    Every kernel of shape s runs 100 s ns with a grid of s blocks, one after another from 1_000, launched 50 ns before
    (10 ns calls). Line stamps: the script's loop line 38 and its body line 39, 55 and 53 ns before each step's first
    kernel (the same two lines at every shape)."""
    t = ScriptTrace()
    g = 1_000
    for s, gemm in ((1, "gemv"), (2, "gemm_64x64"), (4, "gemm_128x64"), (8, "gemm_128x128")):
        body = ("ln", gemm, "scal", "act", "add") if s == 1 else ("ln", gemm, "act", "add")
        for _ in range(30):
            for j, name in enumerate(("embed", *body, *body, gemm)):
                if j == 0:
                    for line, before in ((38, 55), (39, 53)):
                        t._add("line_stamps", pass_id=0, thread_id=1, thread_name="MainThread", file="/home/u/vit.py",
                               line=line, function="<module>", ts_ns=g - before)
                corr = t.call("cudaLaunchKernel", "kernel_launch", g - 50, g - 40)
                t.span(0, name, g, g + 100 * s, corr, blocks=s)
                g += 100 * s
    t.call("cudaDeviceSynchronize", "sync", g, g + 100)
    t.meta["script"] = {"path": "/home/u/vit.py", "argv": ["vit.py"], "exit_code": 0, "exception": None}
    return t.write_script(path, **({"torch": {"version": "synthetic"}} if torch else {}))


def test_a_loop_over_shapes_whose_library_kernels_differ_by_name_is_one_step_with_a_graph_per_shape(tmp_path: Path) -> None:
    """SYNTHETIC (_library_shapes_loop). Blocks repeated back to back: one per shape (12 kernels x 30, then 10 x 30 three
    times with other G names), their runs following each other. Shapes 1 and 2 share 7 kernels by name (embed, ln x 2,
    act x 2, add x 2): at least SAME_STEP_SHARE = 1/2 of each (12 and 10), and all 7 have other grids (1 vs 2 blocks):
    the same step at two shapes (shape_steps); likewise 2 with 4 and 4 with 8. So one step, four shapes in GPU order:
    regions 'shape k of 4', 30 iterations each, GPU work per step 12 x 100 = 1_200, 10 x 200 = 2_000, 10 x 400 = 4_000,
    10 x 800 = 8_000 ns. The line rule (line 38 cuts the launches into four stretches, 30 each) takes one of them
    (30 iterations): the repeated blocks cover more than 1.1x its GPU time and stand.
    Priced with the synthetic cost model (tests/synthetic_costmodel.py, noise-free), each shape's graph a chain of n
    kernels of d = 100 s ns: a kernel of s blocks on its 100 SMs is s/100 wide (per node -100) and the rest short (150):
    replay = 2_000 + n x (d + 150 - 2.5 s): 2_000 + 12 x 247.5 = 4_970; 2_000 + 10 x 345 = 5_450; 2_000 + 10 x 540 =
    7_400; 2_000 + 10 x 930 = 11_300 ns. One-time, a chain of n kernels: capture 10_000 + 3_000 n (the issue, 50 ns a
    launch, is far below the model's eager issue), instantiate 40_000 + 4_000 n + 500 (n - 1), upload 30_000 + 300 n +
    50 (n - 1), first launch 5_000 + 800 n: n = 12: 46_000 + 93_500 + 34_150 + 14_600 = 188_250; n = 10: 40_000 +
    84_500 + 33_450 + 13_000 = 170_950. Together, shape k priced as the process's k-th graph: the first + FIRST_GRAPH_EXTRA
    225_000 = 413_250, the others 170_950 each: 926_100. A PyTorch program: one torch.cuda.graph per shape, each from the
    loop's lines 38-39."""
    assert SAME_STEP_SHARE == 0.5 and sum(FIRST_GRAPH_EXTRA.values()) == 225_000
    with load(_library_shapes_loop(tmp_path / "vit.gmtrace")) as trace:
        blocks = kernel_steps(trace, 0)
        assert sorted((len(b.names), b.recurrences, b.runs) for b in blocks) == [
            (10, 30, ((360, 660),)), (10, 30, ((660, 960),)), (10, 30, ((960, 1_260),)), (12, 30, ((0, 360),))]
        sg = build_run(trace).script_graphs()
        assert sg is not None
        [line] = line_iterations(trace, sg)
        assert line.source == "line /home/u/vit.py:38" and line.gpu_start.size == 30
        p = predict(trace, None, ModelChoice(synthetic_model(), "exact", None))
    assert [r.label for r in p.regions] == [f"eager iterations, shape {k} of 4" for k in (1, 2, 3, 4)]
    assert [r.basis for r in p.regions] == [note("basis_kernel_repetition", kernels=n, recurrences=30, shape=k, shapes=4)
                                            for n, k in ((12, 1), (10, 2), (10, 3), (10, 4))]
    assert [r.iterations for r in p.regions] == [30, 30, 30, 30]
    assert [r.gpu_work_ns for r in p.regions] == [1_200, 2_000, 4_000, 8_000]
    assert [r.replay_period.ns if r.replay_period else None for r in p.regions] == pytest.approx([4_970, 5_450, 7_400, 11_300], abs=1)
    [g] = p.shape_groups
    assert g.basis == note("basis_kernel_repetition", kernels=12, recurrences=30)
    assert (g.shapes, g.labels[0], g.labels[-1]) == (4, "eager iterations, shape 1 of 4", "eager iterations, shape 4 of 4")
    assert g.one_time is not None and g.one_time.ns == pytest.approx(926_100, abs=1)
    with load(_library_shapes_loop(tmp_path / "vit-torch.gmtrace", torch=True)) as trace:
        p = predict(trace, None, None)
    assert [r.advice.api if r.advice else None for r in p.regions] == ["torch_cuda_graph_per_shape"] * 4
    assert [r.advice.lines if r.advice else None for r in p.regions] == ["vit.py:38-39"] * 4


def _train_then_eval(path: Path) -> Path:
    """SYNTHETIC script of two loops of 8 kernels a step, 30 steps each, never synchronized, at one batch size: training
    (embed, ln, gemm, act, loss, act_backward, gemm_backward, adam), then evaluation (embed, ln, gemm, act, head, softmax,
    topk, copy). Every kernel 100 ns with a grid of 4 blocks, one after another from 1_000, launched 50 ns before."""
    t = ScriptTrace()
    g = 1_000
    for step in (("embed", "ln", "gemm", "act", "loss", "act_backward", "gemm_backward", "adam"),
                 ("embed", "ln", "gemm", "act", "head", "softmax", "topk", "copy")):
        for _ in range(30):
            for name in step:
                corr = t.call("cudaLaunchKernel", "kernel_launch", g - 50, g - 40)
                t.span(0, name, g, g + 100, corr, blocks=4)
                g += 100
    return t.write_script(path)


def test_two_loops_of_other_steps_are_two_regions_not_one_nor_shapes(tmp_path: Path) -> None:
    """SYNTHETIC (_train_then_eval). Two blocks, each 8 kernels repeated 30 times (so both once read 'repeat 8 30' and
    made one region of 60 iterations). They share 4 kernels by name (embed, ln, gemm, act: half of each), launched with
    the same grids: not one step at two shapes but two steps, regions 'step 1 of 2' (training) and 'step 2 of 2'
    (evaluation), 30 iterations and 800 ns of GPU work each, no shape group."""
    with load(_train_then_eval(tmp_path / "two.gmtrace")) as trace:
        p = predict(trace, None, None)
    assert [r.label for r in p.regions] == ["eager iterations, step 1 of 2", "eager iterations, step 2 of 2"]
    assert [r.basis for r in p.regions] == [note("basis_kernel_repetition", kernels=8, recurrences=30, step=k, steps=2) for k in (1, 2)]
    assert [r.iterations for r in p.regions] == [30, 30] and [r.gpu_work_ns for r in p.regions] == [800, 800]
    assert p.shape_groups == ()
    assert "step 2 of the 2 steps" in word(p.regions[1].basis)


def test_each_shape_of_an_eager_only_loop_is_priced_against_its_own_eager_period(tmp_path: Path) -> None:
    """SYNTHETIC (_library_shapes_loop, analysed whole). The headline's eager period is the loop's: the median of its
    120 steps' periods, 30 each of 1_200, 2_000, 4_000 and 8_000 ns (kernels back to back: a step's period is its GPU
    time), (2_000 + 4_000) / 2 = 3_000. Each shape's region takes its own share of it (Region.loop_share: its median over
    the loop's, 0.4, 2/3, 4/3, 8/3): eager periods 1_200, 2_000, 4_000, 8_000 ns, not 3_000 for every shape (shape 4's
    steps would then be faster eagerly than their own GPU work)."""
    with load(_library_shapes_loop(tmp_path / "vit.gmtrace")) as trace:
        a = analyze(trace)
    m = a.mode("eager")
    assert m is not None and m.wall is not None and m.wall.median == 3_000
    assert a.prediction is not None
    assert [r.eager_period.ns if r.eager_period else None for r in a.prediction.regions] == pytest.approx([1_200, 2_000, 4_000, 8_000])
