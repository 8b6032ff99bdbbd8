"""The kernel repetition rule (analyzers.repetition): an eager-only loop's step found from its kernel sequence alone.

SYNTHETIC traces built here (tests/synthetic_script.py's ScriptTrace, one pass, no line stamps), every expected number
worked out next to its assertion; then one real recording (timm ViT at four batch sizes)."""

from __future__ import annotations

import lzma
from pathlib import Path

import numpy as np

from graphmode.analyzers.inference import LOOP_STEP_MIN, MIN_SYNC_ITERATIONS
from graphmode.analyzers.notes import note
from graphmode.analyzers.predict import predict
from graphmode.analyzers.repetition import kernel_steps, repeated_blocks
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.reports.notes import word
from graphmode.tracer.store import load
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
