"""The memory a graph of a step would hold (analyzers.step_memory, from PyTorch's allocator history in the one traced
run): the rules on SYNTHETIC actions with hand-computed answers, then the real recordings of session 20 against what
the same programs graphed held."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.step_memory import MemoryEvents, cublas_workspace_bytes, step_memory, window_peak
from graphmode.analyzers.tracer_cost import TracerCorrection
from graphmode.tracer.store import load

MiB = 1 << 20


def _ev(rows: list[tuple[int, bool, int, int]], launches: list[tuple[int, int]]) -> MemoryEvents:
    ts, is_alloc, addr, size = (np.array(c) for c in zip(*rows))
    ls, le = (np.array(c, dtype=np.int64) for c in zip(*launches)) if launches else (np.zeros(0, np.int64),) * 2
    return MemoryEvents(ts.astype(np.int64), is_alloc.astype(bool), addr.astype(np.int64), size.astype(np.int64), le, ls)


def test_a_windows_peak_counts_only_its_own_blocks_while_live() -> None:
    """SYNTHETIC. A block from before the window (addr 9) freed inside it gives nothing back; A (4 MiB) and B (2 MiB)
    live together make the peak 6 MiB; A freed, C (3 MiB) reuses the room: 5 MiB. The pool: A takes a 20 MiB segment
    (a block under 10 MiB), B and C are split from it: 20 MiB reserved, one segment."""
    rows = [(1, False, 9, 8 * MiB), (2, True, 1, 4 * MiB), (3, True, 2, 2 * MiB), (4, False, 1, 4 * MiB),
            (5, True, 3, 3 * MiB), (6, False, 2, 2 * MiB)]
    ts, a, ad, sz = (np.array(c) for c in zip(*rows))
    assert window_peak(ts, a.astype(bool), ad, sz) == (6 * MiB, 20 * MiB, 1)


def test_the_pool_grows_by_the_caching_allocators_rules() -> None:
    """SYNTHETIC, by PyTorch's CUDACachingAllocator rules. Small blocks (<= 1 MiB) share 2 MiB segments: three of
    700 KiB take two (the third does not fit the 648 KiB the first segment has left); a 12 MiB block gets a segment of its own
    rounded to 2 MiB (12 MiB); two 8 MiB blocks share one 20 MiB segment; one freed, its room serves a 6 MiB block
    (best fit, no new segment). 2 + 2 + 12 + 20 = 36 MiB, in 4 segments."""
    kib = 1 << 10
    rows = [(1, True, 1, 700 * kib), (2, True, 2, 700 * kib), (3, True, 3, 700 * kib), (4, True, 4, 12 * MiB),
            (5, True, 5, 8 * MiB), (6, True, 6, 8 * MiB), (7, False, 5, 8 * MiB), (8, True, 7, 6 * MiB)]
    ts, a, ad, sz = (np.array(c) for c in zip(*rows))
    peak, reserved, segments = window_peak(ts, a.astype(bool), ad, sz)
    assert peak == 3 * 700 * kib + 12 * MiB + 16 * MiB
    assert reserved == 36 * MiB and segments == 4


def test_a_steps_window_starts_after_the_last_launch_before_it() -> None:
    """SYNTHETIC. Two recurrences whose first launches start at 100 and 200; the previous launch calls end at 90 and 190:
    the output allocated at 95 (before the first launch at 100) is the first step's, and the one at 195 the second's.
    A set-up block at 50 is before both. Step 1: 1 MiB at 95, 2 MiB at 110, the 1 MiB freed at 120, 1 MiB at 130: peak 3 MiB, 3 MiB live at its end (2 + 1).
    Step 2 [190, 290): its 1 MiB at 195 (after 190) and 5 MiB at 210: peak 6; the first step's blocks freed at 220
    change nothing of it. Live peaks 3 and 6: median 4.5 MiB. The pools: step 1's 1 MiB blocks are small (two 2 MiB
    segments: the first holds 1 MiB, then the 2 MiB block needs a large 20 MiB segment, the freed 1 MiB is reused by
    the third): 2 + 20 = 22 MiB; step 2's: 2 (small) + 20 (the 5 MiB block) = 22 MiB. Two segments each."""
    launches = [(80, 90), (100, 105), (180, 190), (200, 205), (280, 290)]
    rows = [(50, True, 8, 7 * MiB), (95, True, 1, 1 * MiB), (110, True, 2, 2 * MiB), (120, False, 1, 1 * MiB), (130, True, 3, 1 * MiB),
            (195, True, 4, 1 * MiB), (210, True, 5, 5 * MiB), (220, False, 2, 2 * MiB), (230, False, 3, 1 * MiB),
            (300, False, 4, 1 * MiB)]
    m = step_memory(_ev(rows, launches), np.array([100, 200]), np.array([200, 300]))
    assert m is not None
    assert (m.bytes, m.low_bytes, m.high_bytes, m.live_bytes, m.steps) == (22 * MiB, 22 * MiB, 22 * MiB, int(4.5 * MiB), 2)
    assert m.segments == 2


def test_a_step_outside_the_kept_history_has_no_figure() -> None:
    """SYNTHETIC. The history begins at 500 (PyTorch's ring kept the latest actions): steps at 100-300 are not read."""
    m = step_memory(_ev([(500, True, 1, MiB), (600, False, 1, MiB)], [(90, 95)]), np.array([100, 200]), np.array([200, 300]))
    assert m is None


def test_what_the_history_cost_is_taken_off_with_the_stamps() -> None:
    """SYNTHETIC. Stamps at 10 and 30 (100 ns each), allocator actions at 15, 20, 40 (50 ns each): [10, 35) holds two
    stamps and two actions: 300 ns."""
    c = TracerCorrection({}, None, None, "torch", 100.0, np.array([10, 30]), 50.0, np.array([15, 20, 40]))
    assert float(c.host_cost(10, 35)) == 300.0
    assert list(c.host_cost(np.array([0, 35]), np.array([35, 50]))) == [300.0, 50.0]


def test_the_cublas_workspace_is_pytorchs_size_for_the_gpu() -> None:
    """PyTorch's rule: 32 MiB from compute capability 9.0 (Hopper) to 12.x, 4096 KiB x 2 + 16 KiB x 8 before;
    CUBLAS_WORKSPACE_CONFIG's ':SIZE:COUNT' pairs (KiB) where the program set it."""
    assert cublas_workspace_bytes("9.0") == 32 << 20 and cublas_workspace_bytes("12.0") == 32 << 20
    assert cublas_workspace_bytes("8.0") == (4096 * 2 + 16 * 8) * 1024
    assert cublas_workspace_bytes("9.0", ":4096:1:16:8") == (4096 + 128) * 1024


# ---- real recordings: session 20, device call 2 (tests/data/scripts/memory_s20/recording.log)

S20 = Path(__file__).parent / "data" / "scripts" / "memory_s20"
# the pool of the graphed program's graph(s), as PyTorch's own snapshot gave it, within this of the prediction
MEMORY_TARGET = 0.05


def _graphed_truth(program: str) -> dict[str, float]:
    for line in (S20 / "recording.log").read_text().splitlines():
        m = re.match(rf"^{program} graphed r1 untraced GRAPHMODE_TRUTH (\{{.*\}})$", line)
        if m:
            return dict(json.loads(m[1]))
    raise AssertionError(f"no graphed truth for {program}")


def _analysis(tmp_path: Path, program: str):  # type: ignore[no-untyped-def]
    p = tmp_path / f"{program}.gmtrace"
    p.write_bytes(lzma.decompress((S20 / f"{program}-r1.gmtrace.xz").read_bytes()))
    with load(p) as t:
        return t.meta["runs"][0], analyze(t)


@pytest.mark.parametrize("program", ["hf_static_decode", "resnet_train", "mobilenet_train_fn"])
def test_a_steps_graph_holds_what_the_graphed_program_measured(tmp_path: Path, program: str) -> None:
    """A decode step with a static cache (nothing of its own kept: one small segment, and the cuBLAS workspace its
    first capture allocates), and two training steps (their gradients and activations, two workspaces): the predicted
    pool of the one graph is within MEMORY_TARGET of the pool the graphed program held, by PyTorch's own snapshot."""
    run, a = _analysis(tmp_path, program)
    assert run["allocator_history"]["entries"] > 0 and not run["allocator_history"]["full"]
    [r] = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert r.memory is not None and r.memory.workspace_bytes in (32 << 20, 64 << 20)
    truth = _graphed_truth(program)["pool_reserved_bytes"]
    assert abs(r.memory.bytes / truth - 1) <= MEMORY_TARGET, (r.memory, truth)
    assert r.memory.live_bytes <= r.memory.bytes - r.memory.workspace_bytes  # the segments round the live peak up


def test_one_graph_per_batch_size_holds_what_each_graphed_pool_measured(tmp_path: Path) -> None:
    """The timm ViT at batch sizes 1, 2, 4, 8: each shape's predicted pool within MEMORY_TARGET of what its graph's pool
    held in the graphed program (the first, batch 1, with the cuBLAS workspace of torch.cuda.graph's stream); the
    group's memory is their sum (each graph its own pool), and the largest of them."""
    from graphmode.reports.prediction import shape_group_text

    _, a = _analysis(tmp_path, "vit_batch_graphs")
    truth = _graphed_truth("vit_batch_graphs")
    regions = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert len(regions) == 4
    for r, b in zip(regions, (1, 2, 4, 8)):
        assert r.memory is not None
        assert abs(r.memory.bytes / truth[f"pool_reserved_b{b}_bytes"] - 1) <= MEMORY_TARGET, (b, r.memory)
    assert [r.memory.workspace_bytes for r in regions if r.memory] == [32 << 20, 0, 0, 0]
    [g] = a.prediction.shape_groups
    assert g.memory_bytes == sum(r.memory.bytes for r in regions if r.memory)
    assert g.memory_largest_bytes == max(r.memory.bytes for r in regions if r.memory)
    assert "each in its own pool" in shape_group_text(g)


def test_the_json_report_gives_each_graphs_memory(tmp_path: Path) -> None:
    """The JSON report of the ViT recording validates against its schema and gives each region's memory and the
    shape group's, as the analysis has them."""
    import jsonschema

    from graphmode.reports.json_report import load_schema, report_dict

    p = tmp_path / "vit.gmtrace"
    p.write_bytes(lzma.decompress((S20 / "vit_batch_graphs-r1.gmtrace.xz").read_bytes()))
    with load(p) as t:
        a = analyze(t)
    doc = json.loads(json.dumps(report_dict(a)))
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    regions = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert [r["memory"]["bytes"] for r in doc["prediction"]["regions"] if r["direction"] == "to_graph"] == \
        [r.memory.bytes for r in regions if r.memory]
    assert doc["prediction"]["shape_groups"][0]["memory_bytes"] == a.prediction.shape_groups[0].memory_bytes


def test_a_workspace_is_a_kept_block_of_its_size_followed_by_a_blas_kernel(tmp_path: Path) -> None:
    """DERIVED from the ResNet-18 recording: its two 32 MiB workspaces (each followed by a cutlass GEMM) count; a
    SYNTHETIC 32 MiB block added before them, kept and followed by the program's first kernel (not a GEMM: a
    parameter's initialization, say), does not."""
    from graphmode.analyzers.step_memory import kept_workspaces
    from graphmode.tracer.store import TraceWriter

    p = tmp_path / "resnet.gmtrace"
    p.write_bytes(lzma.decompress((S20 / "resnet_train-r1.gmtrace.xz").read_bytes()))
    with load(p) as t:
        assert kept_workspaces(t, 0, 32 << 20) == 2
        first_launch, name = t.rows("SELECT c.start_ns, g.name FROM api_calls c JOIN gpu_spans g ON g.pass_id = c.pass_id "
                                    "AND g.correlation_id = c.correlation_id WHERE c.pass_id = 0 AND g.kind = 'kernel' "
                                    "ORDER BY c.start_ns LIMIT 1")[0]
    assert "gemm" not in name.lower()
    w = TraceWriter(p, append=True)
    try:
        w.append("memory_events", {"pass_id": [0], "ts_ns": [int(first_launch) - 1000], "action": ["alloc"],
                                   "addr": [1 << 40], "size": [32 << 20], "stream": [0]})
    finally:
        w.close(keep_status=True)
    with load(p) as t:
        assert kept_workspaces(t, 0, 32 << 20) == 2


def test_pytorchs_pool_growing_is_not_a_capture_breaker(tmp_path: Path) -> None:
    """PyTorch's caching allocator calls cudaMalloc under capture in relaxed mode (the graph takes the blocks from its
    pool): in the ViT's steps (a PyTorch program) those calls are a note, not a breaker, and the advice does not ask to
    move them out. In a CuPy program (tests/data/scripts/timed/cupy_unsynchronized) its cudaMalloc is not PyTorch's pool
    growing: it ran in the loop's first iteration only (2 calls of 310 iterations), so it is said as a first call's
    one-off (analyzers.predict._breakers), not as the pool's growth."""
    _, a = _analysis(tmp_path, "vit_batch_graphs")
    regions = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert not [b for r in regions for b in r.breakers if b.api.startswith("cudaMalloc")]
    grew = [n for r in regions for n in r.notes if n.kind == "torch_pool_grew"]
    assert grew and all(int(n["calls"]) >= 1 for n in grew)
    p = tmp_path / "cupy.gmtrace"
    p.write_bytes(lzma.decompress((S20.parent / "timed" / "cupy_unsynchronized.gmtrace.xz").read_bytes()))
    with load(p) as t:
        cupy = [r for r in analyze(t).prediction.regions if r.direction == "to_graph"]
    assert not [n for r in cupy for n in r.notes if n.kind == "torch_pool_grew"]
    (first,) = [n for r in cupy for n in r.notes if n.kind == "breakers_first_iteration_only"]
    assert first["apis"] == ("cudaMalloc_v3020",) and first["calls"] == 2


def test_the_history_is_read_into_columns_on_the_traces_clock() -> None:
    """tracer.allocator_history against a stand-in for torch (no GPU here): `enable` asks for no stack context and skips
    the free requests where PyTorch's signature allows it; `collect` takes the traced device's actions, Unix-time
    microseconds moved by the given clock map, addresses and sizes as int64."""
    import types

    from graphmode.tracer import allocator_history

    calls: list[dict[str, object]] = []

    def record(**kw: object) -> None:
        calls.append(kw)

    def impl(enabled: object = "all", context: object = "all", stacks: str = "all", max_entries: int = 0,
             device: object = None, clear_history: bool = False, compile_context: bool = False,
             global_record_annotations: bool = False, skip_actions: object = None) -> None:
        """PyTorch 2.11's signature."""

    traces = [[], [{"action": "alloc", "addr": 0x7F00_0000_0000, "size": 4 << 20, "stream": 0, "time_us": 1_000_000},
                   {"action": "free_completed", "addr": 0x7F00_0000_0000, "size": 4 << 20, "stream": 0, "time_us": 1_000_250}]]
    memory = types.SimpleNamespace(_record_memory_history=record, _record_memory_history_impl=impl,
                                   _snapshot=lambda: {"device_traces": traces})
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(memory=memory))
    said = allocator_history.enable(torch)
    assert calls[-1]["context"] is None and calls[-1]["skip_actions"] == ["free_requested"] and calls[-1]["clear_history"]
    assert said["skipped"] == ["free_requested"] and said["max_entries"] == allocator_history.MAX_ENTRIES
    cols = allocator_history.collect(torch, 1, lambda unix_ns: unix_ns - 999_000_000)  # Unix ns -> a trace clock
    assert cols["ts_ns"].tolist() == [1_000_000, 1_250_000] and cols["action"] == ["alloc", "free_completed"]
    assert cols["addr"].dtype == np.int64 and cols["size"].tolist() == [4 << 20, 4 << 20]
    assert allocator_history.collect(torch, 3, lambda x: x)["ts_ns"].size == 0  # a device with no trace
