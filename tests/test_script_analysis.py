"""Iteration inference, periods, per-graph answers, diagnostics and the CPU profile on SYNTHETIC
user-script traces (tests/synthetic_script.py, meta workload='synthetic-script': one pass, which both
times the run and records its graphs) and on the real H200 recordings. Every expected number is
worked out by hand in the comments next to the assertions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from rich.console import Console

from graphmode.analyzers import TraceAnalysis, analyze
from graphmode.analyzers.cpu_profile import classify, summarise
from graphmode.analyzers.inference import find_sequence
from graphmode.analyzers.notes import note
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.analyzers.periods import IterationTable
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.reports.notes import word, words
from graphmode.reports.pitfall_words import advice, evidence, title
from graphmode.reports.terminal import print_report
from graphmode.tracer.profile_store import from_session_json
from synthetic_script import SYNC_LINE, ScriptTrace, eager_then_graph
from graphmode.tracer.store import load
from graphmode.tracer.validate import validate_trace

FIXTURES = sorted((Path(__file__).parent / "data").glob("*.gmtrace"))

# Eager loop K1, K2 at 1000, 2500, 4000 (the last K2 ends at 4250); capture 5000-5500, instantiate
# 5600-6000, upload 6000-6100 (one-time cost 500 + 400 + 100 = 1000); replays launched at 7000, 8000,
# 9000, each followed by a synchronize until its GPU work ends (except the last).
GAPS = dict(eager_starts=[1000, 2500, 4000], last_eager_end=4250, capture=(5000, 5500), instantiate=(5600, 6000),
            upload=(6000, 6100), replays=[(7000, (7030, 7200), 7200), (8000, (8030, 8200), 8200), (9000, (9030, 9210), None)])


def _analyze(path: Path) -> TraceAnalysis:
    with load(path) as trace:
        assert validate_trace(trace) == [], "a synthetic trace must itself be sound"
        return analyze(trace)


def _rows(t: IterationTable, mode: str) -> list[tuple[str, int, float, float]]:
    """(role, GPU start, period, work) of one mode's iterations."""
    sel = t.mode == mode
    return [(str(r), int(g), float(p), float(w)) for r, g, p, w in
            zip(t.role[sel], t.gpu_start_ns[sel], t.period[sel], t.work[sel])]


def test_find_sequence_non_overlapping_leftmost() -> None:
    # pattern 1,1 in 1,1,1,1,1: leftmost non-overlapping at 0 and 2 (4 is too short)
    assert find_sequence(np.array([1, 1, 1, 1, 1]), np.array([1, 1])).tolist() == [0, 2]
    assert find_sequence(np.array([3, 1, 2, 1, 2, 2]), np.array([1, 2])).tolist() == [1, 3]
    assert find_sequence(np.array([1, 2]), np.array([1, 2, 3])).tolist() == []


def test_eager_and_graph_iterations_and_their_periods(tmp_path: Path) -> None:
    path = eager_then_graph(tmp_path / "gaps.gmtrace", **GAPS)
    with load(path) as trace:
        it = find_iterations(trace)
    nan = float("nan")
    # eager: K1, K2 occurrences start on the GPU at 1020, 2520, 4020. Period = the next one's GPU start - this
    # one's: 1500, 1500; the last has none. Each step synchronizes (the next launch comes after the GPU work
    # ended): CPU-bound, so work = period. The unrelated kernel X at 120 is no iteration. Three iterations
    # right before the capture, with no other eager run of the work: they count as warm-up, and being the
    # only eager runs, they are the baseline (with a note), the first of them left out.
    got = _rows(it, "eager")
    assert [r[:2] for r in got] == [("warmup", 1020), ("warmup", 2520), ("warmup", 4020)]
    assert [r[2] for r in got[:2]] == [1500.0, 1500.0] and np.isnan(got[2][2]) and [r[3] for r in got[:2]] == [1500.0, 1500.0]
    # replays: GPU starts 7030, 8030, 9030; periods 1000, 1000, none. The first is the graph's first launch.
    got = _rows(it, "graph")
    assert [(r[0], r[1]) for r in got] == [("first_launch", 7030), ("steady", 8030), ("steady", 9030)]
    assert [r[2] for r in got[:2]] == [1000.0, 1000.0] and np.isnan(got[2][2])
    assert not it.gpu_bound.any() and set(it.graph_id) == {1} and nan != nan
    a = _analyze(path)
    (g,) = a.graphs
    assert g.eager is not None and g.graph is not None and g.eager.work is not None and g.graph.work is not None
    # the baseline leaves out the first warm-up (a first call pays set-up): one period, 1500, remains
    assert (g.eager.iterations, g.eager.work.trimmed_mean, g.eager.bound) == (1, 1500.0, "cpu")
    assert note("first_warmup_left_out", first_call_ns=1500.0) in g.notes, g.notes
    assert "first warm-up iteration (0.0015 ms) is left out" in words(g.notes)[g.notes.index(note("first_warmup_left_out", first_call_ns=1500.0))]
    assert (g.graph.iterations, g.graph.work.trimmed_mean, g.graph.bound) == (1, 1000.0, "cpu")
    # one-time: capture 500 + instantiate 400 + upload 100, plus the first launch's excess: it cost span 170 +
    # call 20 = 190; the steady replays 190 and 180 + 20 = 200, median 195: excess -5 (noise, not clamped).
    # Break-even ceil(995 / (1500 - 1000)) = 2; 3 replays: paid back.
    assert g.cost is not None and (g.cost.build_ns, g.cost.instantiate_ns, g.cost.upload_ns) == (500, 400, 100)
    assert (g.cost.first_launch_ns, g.cost.steady_replay_ns, g.cost.first_launch_excess_ns) == (190, 195, -5)
    assert g.cost.total_ns == 995
    assert g.break_even is not None and g.break_even.replays == 2 and g.break_even.run_replays == 3
    assert note("tiny_sample", mode="replay", iterations=1) in g.notes  # one steady replay period
    assert g.warmup_iterations == 3 and note("eager_from_warmups", warmups=3) in g.notes
    # saved in the run: 500 per steady replay with a period (one) ; net of the one-time cost
    assert a.totals is not None and a.totals.saved_ns == 500 and a.totals.net_ns == 500 - 995


def test_a_cudagraph_tree_recording_adds_pytorchs_own_work_to_the_one_time_cost(tmp_path: Path) -> None:
    # SYNTHETIC: the GAPS trace, where PyTorch's cudagraph trees recorded graph 1 in a call that began at 4500
    # and ended at 7300 (tracer.torch_hooks: Dynamo's callback handler around each recording). Inside it: the
    # capture 500, instantiate 400 and upload 100, and the first replay, launched at 7000, which costs 190
    # (span 170 + call 20). PyTorch's own work is the rest: 2800 - 1000 - 190 = 1610; the one-time cost is
    # 995 (as above) + 1610 = 2605, and break-even ceil(2605 / 500) = 6 replays.
    def recording(t: ScriptTrace) -> None:
        t.meta["torch"] = {"version": "2.11.0", "events": {"kind": ["start_cudagraph_recording", "end_cudagraph_recording"],
                                                         "ts_ns": [4500, 7300], "thread_id": [1, 1]}}

    a = _analyze(eager_then_graph(tmp_path / "tree.gmtrace", **GAPS, extra=recording))
    (g,) = a.graphs
    assert g.cost is not None and g.cost.framework_ns == 1610 and g.cost.total_ns == 2605
    assert (g.cost.build_ns, g.cost.instantiate_ns, g.cost.first_launch_excess_ns) == (500, 400, -5)
    assert g.break_even is not None and g.break_even.replays == 6
    out = Console(record=True, width=200)
    print_report(a, console=out)
    assert "PyTorch recording work" in out.export_text()
    jsonschema.validate(report_dict(a), load_schema())
    # a recording that holds no capture of this graph adds nothing
    def elsewhere(t: ScriptTrace) -> None:
        t.meta["torch"] = {"events": {"kind": ["start_cudagraph_recording", "end_cudagraph_recording"],
                                      "ts_ns": [200, 300], "thread_id": [1, 1]}}

    (g,) = _analyze(eager_then_graph(tmp_path / "none.gmtrace", **GAPS, extra=elsewhere)).graphs
    assert g.cost is not None and g.cost.framework_ns is None and g.cost.total_ns == 995


def test_a_torch_cuda_graph_block_adds_pytorchs_own_work_once(tmp_path: Path) -> None:
    # SYNTHETIC: the GAPS trace captured inside `with torch.cuda.graph(g):`, entered at 4400 and left at 6900
    # (tracer.torch_hooks wraps __enter__/__exit__). Inside: capture 500, instantiate 400, upload 100; the
    # first replay (7000) comes after it. PyTorch's own work: 2500 - 1000 = 1500; one-time 995 + 1500 = 2495.
    def block(t: ScriptTrace) -> None:
        t.meta["torch"] = {"version": "2.11.0", "events": {"kind": ["start_cuda_graph_block", "end_cuda_graph_block"],
                                                         "ts_ns": [4400, 6900], "thread_id": [1, 1]}}

    (g,) = _analyze(eager_then_graph(tmp_path / "block.gmtrace", **GAPS, extra=block)).graphs
    assert g.cost is not None and g.cost.framework_ns == 1500 and g.cost.total_ns == 2495
    # a cudagraph-tree recording (4300-7300) that captures through such a block (4400-6900): the outer window
    # alone counts, as in the recording test above: 3000 - 1000 - 190 (its first replay) = 1810
    def nested(t: ScriptTrace) -> None:
        t.meta["torch"] = {"version": "2.11.0", "events": {
            "kind": ["start_cudagraph_recording", "start_cuda_graph_block", "end_cuda_graph_block", "end_cudagraph_recording"],
            "ts_ns": [4300, 4400, 6900, 7300], "thread_id": [1, 1, 1, 1]}}

    (g,) = _analyze(eager_then_graph(tmp_path / "nested.gmtrace", **GAPS, extra=nested)).graphs
    assert g.cost is not None and g.cost.framework_ns == 1810 and g.cost.total_ns == 995 + 1810


def test_the_timing_runs_capture_window_replaces_the_measuring_runs(tmp_path: Path) -> None:
    # SYNTHETIC: the block above (4400-6900 in the measuring run: 2500 ns, one-time 2495), and a timing run
    # (pass 2, no CUPTI) that heard the same block take 1800 ns on its own clock: CUPTI added 700 inside the
    # window, so the one-time cost is 2495 - 700 = 1795, and break-even ceil(1795 / 500) = 4 replays.
    def timed(t: ScriptTrace) -> None:
        t.meta["torch"] = {"version": "2.11.0", "events": {"kind": ["start_cuda_graph_block", "end_cuda_graph_block"],
                                                         "ts_ns": [4400, 6900], "thread_id": [1, 1]}}
        t.add_pass(2, "stamps")
        t.meta["runs"] = [{"pass_id": 2, "config": {"name": "timing"}, "torch": {"version": "2.11.0", "events": {
            "kind": ["start_cuda_graph_block", "end_cuda_graph_block"], "ts_ns": [50_000, 51_800], "thread_id": [7, 7]}}}]

    a = _analyze(eager_then_graph(tmp_path / "timed.gmtrace", **GAPS, extra=timed))
    (g,) = a.graphs
    assert g.cost is not None and g.cost.framework_ns == 1500 and g.cost.untraced_correction_ns == -700
    assert g.cost.total_ns == 1795 and g.break_even is not None and g.break_even.replays == 4
    (timed_note,) = [n for n in g.notes if n.kind == "one_time_timed_untraced"]
    assert (timed_note["windowed_ns"], timed_note["measured_ns"]) == (1795, 2495)  # 2495 measured less 700 untraced
    assert "as the timing run, without CUPTI, timed them: 1.79 us, where the measuring run read 2.5 us (1.39x)" in word(timed_note)
    assert not any(n.kind == "one_time_traced" for n in g.notes)
    out = Console(record=True, width=200)
    print_report(a, console=out)
    assert "untraced (timing run) correction" in out.export_text()
    jsonschema.validate(report_dict(a), load_schema())
    # a timing run that heard a different number of windows: the measuring run's stand, said so
    def other(t: ScriptTrace) -> None:
        timed(t)
        t.meta["runs"][0]["torch"]["events"] = {"kind": ["start_cuda_graph_block", "end_cuda_graph_block"] * 2,
                                                "ts_ns": [1, 2, 3, 4], "thread_id": [7] * 4}

    a = _analyze(eager_then_graph(tmp_path / "other.gmtrace", **GAPS, extra=other))
    (g,) = a.graphs
    assert g.cost is not None and g.cost.untraced_correction_ns is None and g.cost.total_ns == 2495
    assert note("capture_windows_mismatch", timing_windows=2, measured_windows=1) in a.cannot_compute


def test_nvtx_ranges_take_precedence(tmp_path: Path) -> None:
    def ranges(t: ScriptTrace) -> None:
        t.nvtx("graphmode:graph step", 7000, 7900)
        t.nvtx("graphmode:graph", 8000, 8900)
        t.nvtx("graphmode:eager", 950, 2400)
        t.nvtx("graphmode:eager_sync_each", 100, 400)
        t.nvtx("data loading", 0, 50)  # not ours: ignored

    with load(eager_then_graph(tmp_path / "nvtx.gmtrace", **GAPS, extra=ranges)) as trace:
        it = find_iterations(trace)
    # the ranges replace the inferred iterations of their mode; graph ids from the first iteration inside each;
    # period = start to the next range's start (the last range of a mode has none)
    graph = it.select(it.mode == "graph")
    assert list(graph.start_ns) == [7000, 8000] and list(graph.graph_id) == [1, 1] and set(graph.source) == {"nvtx"}
    assert graph.period[0] == 1000 and np.isnan(graph.period[1])
    eager = it.select(it.mode == "eager")
    assert list(eager.start_ns) == [950] and list(eager.graph_id) == [1] and eager.period[0] == 1450  # a single range: its length
    other = it.select(it.mode == "eager_sync_each")
    assert list(other.graph_id) == [0]  # X at 100 is no occurrence of K1, K2


def test_sync_between_replays_eats_the_saving(tmp_path: Path) -> None:
    path = eager_then_graph(tmp_path / "gaps.gmtrace", **GAPS)
    a = _analyze(path)
    b = a.primary_break_even()
    assert b is not None and b.replays == 2 and b.run_replays == 3  # ceil(1000 / (1500 - 1000)); 3 replays: paid back
    assert [p.kind for p in a.pitfalls] == ["gaps_between_replays"]
    p = a.pitfalls[0]
    # intervals [7000, 8000) and [8000, 9000): the graph's GPU work covers 170 of each, 830 idle.
    # A replay saves 500; back to back it could save 500 + 830 = 1330: the gaps eat 830/1330 = 62%.
    assert p.graph_id == 1 and p.cost_ns == 2 * 830
    assert "median 0.8 us" in evidence(p) and "its GPU work: 0.2 us" in evidence(p) and "over 2 replay intervals" in evidence(p)
    assert "2 of them hold a synchronising call (cudaStreamSynchronize ×2 at train.py:30 step)" in evidence(p)
    assert "eat 62%" in evidence(p)
    assert p.facts["with_sync"] == 2 and p.facts["sync_calls"] == ("cudaStreamSynchronize",) and p.facts["sync_counts"] == (2,)
    assert p.where == SYNC_LINE and "synchronise" in advice(p)


def test_graph_not_replayed_enough(tmp_path: Path) -> None:
    # one-time 500 + 3000 + 100 = 3600; replays at GPU 9030, 9530, 10030 (spans of 370): periods 500, 500, none;
    # the first is the first launch, so the steady replay period is 500 (replay 2). Saved 1500 - 500 = 1000;
    # break-even ceil(3600 / 1000) = 4 > 3 replays; lost 3600 - 3 * 1000 = 600.
    # Gaps [9000, 9500) and [9500, 10000): 370 busy, 130 idle; 130 / (1000 + 130) = 12%: not reported.
    path = eager_then_graph(tmp_path / "few.gmtrace", [1000, 2500, 4000], 4250, (5000, 5500), (5600, 8600), (8600, 8700),
                            [(9000, (9030, 9400), 9400), (9500, (9530, 9900), 9900), (10000, (10030, 10400), None)])
    a = _analyze(path)
    assert [p.kind for p in a.pitfalls] == ["never_paid_back"]
    p = a.pitfalls[0]
    assert p.cost_ns == 600 and p.graph_id == 1
    assert "replayed 3 times" in evidence(p) and "needs 4 replays" in evidence(p) and "3.6 us" in evidence(p)
    assert "this graph's own eager and replay periods" in evidence(p) and "lost 0.6 us net" in evidence(p)


def test_graph_slower_than_eager(tmp_path: Path) -> None:
    # replays every 2000 (GPU 1770 each): the steady replay period is 2000 (replay 2; the first is the first
    # launch, the last has none) vs eager 1500 (the second warm-up's period: the first warm-up is left out of
    # the baseline). The gaps (230) cannot explain it: 230 - 500 < 0, so only 'graph_slower' (cost 500 x 3 replays).
    path = eager_then_graph(tmp_path / "slow.gmtrace", [1000, 2500, 4000], 4250, (5000, 5500), (5600, 6000), (6000, 6100),
                            [(7000, (7030, 8800), 8800), (9000, (9030, 10800), 10800), (11000, (11030, 12800), None)])
    a = _analyze(path)
    assert [p.kind for p in a.pitfalls] == ["graph_slower"]
    p = a.pitfalls[0]
    assert p.cost_ns == 1500
    assert "takes 2.0 us (median of 1) vs 1.5 us (median of 1)" in evidence(p) and "0.5 us slower" in evidence(p)


def _failed_capture(path: Path, message: str) -> Path:
    t = ScriptTrace()
    t.call("cudaStreamBeginCapture", "capture", 1000, 1010, "model.py:10 capture_step")
    t.call("cudaLaunchKernel", "kernel_launch", 1020, 1030, "model.py:11 capture_step")
    t.call("cuLaunchKernel", "kernel_launch", 1022, 1028, api="driver")  # nested in the runtime call
    t.call("cudaStreamSynchronize", "sync", 1040, 1045, "model.py:12 capture_step", rc=900)
    t.call("cudaStreamEndCapture", "capture", 1050, 1060, "model.py:14 capture_step", rc=901)
    exc = {"type": "RuntimeError", "message": message,
           "frames": [["train.py", 40, "<module>"], ["model.py", 12, "capture_step"],
                      ["/venv/lib/python3.11/site-packages/torch/_tensor.py", 900, "item"]]}
    return t.write_script(path, status="failed", script={"path": "train.py", "argv": ["train.py"], "exit_code": 1, "exception": exc})


def test_failed_capture_names_the_call_and_the_line(tmp_path: Path) -> None:
    a = _analyze(_failed_capture(tmp_path / "broken.gmtrace", "CUDA error: operation not permitted when stream is capturing"))
    assert [p.kind for p in a.pitfalls] == ["capture_failed"]
    p = a.pitfalls[0]
    assert p.severity == "error" and title(p) == "Stream capture broken by cudaStreamSynchronize"
    assert p.where == "model.py:12 capture_step"
    # times from the pass start (1000): the failing call at 40 ns, the capture begun at 0
    assert "cudaStreamSynchronize returned 900 (stream capture unsupported" in evidence(p)
    assert "inside the capture begun at 0.0 us by model.py:10 capture_step" in evidence(p)
    assert "1 later call returned 901" in evidence(p)
    # the exception's innermost user frame, not torch's
    assert "RuntimeError: CUDA error: operation not permitted when stream is capturing at model.py:12 capture_step" in evidence(p)
    assert ".item()" in advice(p)


def test_capture_failure_from_the_exception_alone(tmp_path: Path) -> None:
    t = ScriptTrace()
    t.call("cudaMalloc", "memory", 0, 10)
    exc = {"type": "RuntimeError", "message": "CUDA graph capture failed", "frames": [["train.py", 7, "<module>"]]}
    path = t.write_script(tmp_path / "exc.gmtrace", status="failed",
                          script={"path": "train.py", "argv": [], "exit_code": 1, "exception": exc})
    a = _analyze(path)
    assert [(p.kind, p.where) for p in a.pitfalls] == [("capture_failed", "train.py:7 <module>")]


def test_repeated_instantiation_counts_and_costs_the_repeats(tmp_path: Path) -> None:
    t = ScriptTrace()
    line = "loop.py:5 step"
    t.captured_graph(1, ["A", "B"], (100, 300), (300, 700), (700, 750), line)
    t.captured_graph(2, ["A", "B"], (1000, 1250), (1250, 1550), (1550, 1600), line)
    t.captured_graph(3, ["A", "B"], (2000, 2200), (2200, 2500), None, line)
    t.captured_graph(4, ["C"], (3000, 3100), (3100, 3200), None, "other.py:1 f")
    a = _analyze(t.write_script(tmp_path / "again.gmtrace"))
    assert [p.kind for p in a.pitfalls] == ["repeated_instantiation"]
    p = a.pitfalls[0]
    # repeats: captures of graphs 2 and 3 (250 + 200) + instantiations 2 and 3 (300 + 300) + the second upload (50)
    assert p.cost_ns == 450 + 600 + 50
    assert "instantiated 3 times from 3 graphs (ids 1, 2, 3)" in evidence(p) and "the 2 repeats cost 1.1 us" in evidence(p)
    assert "35.5% of the run" in evidence(p)  # 1100 / (3200 - 100)
    assert (p.facts["instantiations"], p.facts["graph_ids"], p.facts["cost_ns"], p.facts["run_ns"]) == (3, (1, 2, 3), 1100, 3100)
    assert p.where == line


def _busy(n: int) -> int:
    total = 0
    for i in range(n):
        total += json.dumps({"i": i}).__len__()
    return total


@pytest.fixture(scope="module")
def session() -> dict:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    _busy(60_000)
    profiler.stop()
    assert profiler.last_session is not None
    return json.loads(json.dumps(profiler.last_session.to_json()))  # as stored in meta.cpu_profile


def test_cpu_profile_of_a_real_pyinstrument_session(session: dict) -> None:
    stored = from_session_json(session)
    assert stored is not None
    prof = summarise(stored, cuda_api_ns=None)
    by = {c.name: c for c in prof.categories}
    assert prof.sampled_ns > 0 and abs(sum(c.ns for c in prof.categories) - prof.sampled_ns) < 1e-3
    assert abs(sum(c.fraction for c in prof.categories) - 1) < 1e-9
    assert by["user"].ns > 0 and by["other"].ns > 0  # this test file's loop, and the json module
    assert by["framework"].ns == 0 and by["cuda_binding"].ns == 0
    assert prof.top_user_lines and prof.top_user_lines[0].function in ("_busy", "test_cpu_profile_of_a_real_pyinstrument_session", "session")
    assert any(f.location.startswith(__file__) and f.function == "_busy" for f in prof.top_user_lines)


def test_graphmodes_own_frames_are_told_apart_from_another_checkout() -> None:
    # a profile recorded from another checkout (or install) of graphmode: its frames are not "your lines"
    assert classify("/elsewhere/graphmode-src/tracer/script.py", True) == "tracer"
    assert classify("/venv/lib/python3.12/site-packages/graphmode/tracer/script_child.py", False) == "tracer"
    assert classify("/home/u/project/train.py", True) == "user"


def test_classify_frames() -> None:
    # the second argument is pyinstrument's Frame.is_application_code for the frame
    assert classify("/venv/lib/python3.11/site-packages/torch/nn/functional.py", False) == "framework"
    assert classify("/venv/lib/python3.11/site-packages/torch/cuda/graphs.py", False) == "cuda_binding"
    assert classify("/venv/lib/python3.11/site-packages/cuda/bindings/driver.py", False) == "cuda_binding"
    assert classify("/usr/lib/python3.11/json/encoder.py", False) == "other"
    assert classify("/home/me/train.py", True) == "user"
    assert classify("/home/me/.local/lib/python3.11/site-packages/six.py", True) == "other"


def test_reports_carry_diagnostics_and_profile(tmp_path: Path, session: dict) -> None:
    from graphmode.views import html_page

    path = _failed_capture(tmp_path / "broken.gmtrace", "<script>alert(1)</script> while capturing")
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("INSERT INTO meta VALUES ('cpu_profile', ?)", [json.dumps(session)])
    con.close()
    with load(path) as trace:
        a = analyze(trace)
        assert a.cpu_profile is not None
        # outermost API calls: 10 + 10 + 5 + 10 (the driver call nested in cudaLaunchKernel not again)
        assert a.cpu_profile.cuda_api_ns == 35
        doc = report_dict(a)
        jsonschema.Draft202012Validator(load_schema()).validate(doc)
        assert doc["pitfalls"][0]["kind"] == "capture_failed" and doc["cpu_profile"]["samples"] == session["sample_count"]
        console = Console(record=True, width=200)
        print_report(a, console)
        text = console.export_text()
        assert "Diagnostics" in text and "Stream capture broken by cudaStreamSynchronize" in text and "CPU profile" in text
        page, _ = html_page(trace, a)
    assert "<h2>Diagnostics</h2>" in page and "<h2>CPU profile</h2>" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<iframe class='pyinstrument'" in page and 'srcdoc="&lt;!DOCTYPE html&gt;' in page


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_real_recordings_have_no_false_pitfalls(path: Path) -> None:
    with load(path) as trace:
        a = analyze(trace)
    assert a.pitfalls == () and a.cpu_profile is None


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_inference_finds_the_bench_iterations_of_real_recordings(path: Path) -> None:
    """The runner marked its iterations; inference from the recorded work alone (as for a script) must find
    one iteration starting inside each of them, and every graph launch."""
    from graphmode.analyzers.run import table_for
    from graphmode.analyzers.script_graphs import script_graphs

    with load(path) as trace:
        traced = trace.pass_by_detail("node", "graph")
        assert traced is not None
        sg = script_graphs(trace, timing_pass=traced.pass_id)
        assert sg is not None
        it, _ = table_for(trace, sg)
        bench = trace.sql("SELECT mode, start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration'", [traced.pass_id])
        launches = trace.rows("SELECT count(*) FROM graph_events WHERE pass_id = ? AND event = 'launch'", [traced.pass_id])[0][0]
    for ours, theirs in (("eager", "eager"), ("eager", "eager_sync_each"), ("graph", "graph")):
        starts = np.sort(it.start_ns[it.mode == ours])
        sel = bench["mode"] == theirs
        inside = np.searchsorted(starts, bench["end_ns"][sel]) - np.searchsorted(starts, bench["start_ns"][sel])
        assert np.all(inside == 1), f"{theirs}: {np.bincount(inside)}"
    assert int((it.mode == "graph").sum()) == launches  # every launch, the first included
