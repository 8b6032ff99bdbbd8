"""Iteration inference, diagnostics and the CPU profile on SYNTHETIC user-script traces
(tests/synthetic_script.py, meta workload='synthetic-script') and on the real H200 recordings.
Every expected number is worked out by hand in the comments next to the assertions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from rich.console import Console

from graphmode.analyzers import TraceAnalysis, analyze
from graphmode.analyzers.cpu_profile import classify, summarise
from graphmode.tracer.profile_store import from_session_json
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.reports.terminal import print_report
from synthetic_script import SYNC_LINE, ScriptTrace, add_inferred_iterations, eager_then_graph
from graphmode.tracer.infer import find_sequence, infer_iterations
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


def _iterations(cols: dict[str, np.ndarray], mode: str) -> list[tuple[int, int, int, int, str]]:
    sel = cols["mode"] == mode
    return [(int(i), int(s), int(e), int(g), str(n)) for i, s, e, g, n in
            zip(cols["iteration"][sel], cols["start_ns"][sel], cols["end_ns"][sel], cols["graph_id"][sel], cols["name"][sel])]


def test_find_sequence_non_overlapping_leftmost() -> None:
    # pattern 1,1 in 1,1,1,1,1: leftmost non-overlapping at 0 and 2 (4 is too short)
    assert find_sequence(np.array([1, 1, 1, 1, 1]), np.array([1, 1])).tolist() == [0, 2]
    assert find_sequence(np.array([3, 1, 2, 1, 2, 2]), np.array([1, 2])).tolist() == [1, 3]
    assert find_sequence(np.array([1, 2]), np.array([1, 2, 3])).tolist() == []


def test_eager_and_graph_iterations_are_inferred(tmp_path: Path) -> None:
    path = eager_then_graph(tmp_path / "gaps.gmtrace", **GAPS)
    cols = add_inferred_iterations(path)
    assert set(cols["kind"]) == {"iteration"} and set(cols["pass_id"]) == {0}
    # eager: each occurrence of K1, K2 runs to the next one's first launch; the last to its GPU end (4250).
    # The unrelated kernel X at 100 is not an iteration.
    assert _iterations(cols, "eager") == [(0, 1000, 2500, 1, "inferred"), (1, 2500, 4000, 1, "inferred"),
                                          (2, 4000, 4250, 1, "inferred")]
    # graph: launch to the next launch (host gap and synchronize included); the last to its GPU end 9210
    assert _iterations(cols, "graph") == [(0, 7000, 8000, 1, "inferred"), (1, 8000, 9000, 1, "inferred"),
                                          (2, 9000, 9210, 1, "inferred")]
    assert np.all(np.diff(cols["start_ns"]) >= 0)
    a = _analyze(path)
    eager, graph = a.mode("eager"), a.mode("graph")
    assert eager is not None and eager.wall is not None and graph is not None and graph.wall is not None
    assert (eager.wall.median, graph.wall.median) == (1500, 1000)  # medians of 1500, 1500, 250 and 1000, 1000, 210


def test_nvtx_ranges_take_precedence(tmp_path: Path) -> None:
    def ranges(t: ScriptTrace) -> None:
        t.nvtx("graphmode:graph step", 7000, 7900)
        t.nvtx("graphmode:graph", 8000, 8900)
        t.nvtx("graphmode:eager", 950, 2400)
        t.nvtx("graphmode:eager_sync_each", 100, 400)
        t.nvtx("data loading", 0, 50)  # not ours: ignored

    cols = add_inferred_iterations(eager_then_graph(tmp_path / "nvtx.gmtrace", **GAPS, extra=ranges))
    # the ranges replace the inferred iterations of their mode; graph ids from the launch / occurrence inside
    assert _iterations(cols, "graph") == [(0, 7000, 7900, 1, "nvtx"), (1, 8000, 8900, 1, "nvtx")]
    assert _iterations(cols, "eager") == [(0, 950, 2400, 1, "nvtx")]
    assert _iterations(cols, "eager_sync_each") == [(0, 100, 400, 0, "nvtx")]  # X at 100 is no occurrence of K1, K2


def test_sync_between_replays_eats_the_saving(tmp_path: Path) -> None:
    path = eager_then_graph(tmp_path / "gaps.gmtrace", **GAPS)
    add_inferred_iterations(path)
    a = _analyze(path)
    b = a.primary_break_even()
    assert b is not None and b.replays == 2 and b.run_replays == 3  # ceil(1000 / (1500 - 1000)); 3 replays: paid back
    assert [p.kind for p in a.pitfalls] == ["gaps_between_replays"]
    p = a.pitfalls[0]
    # intervals [7000, 8000) and [8000, 9000): the graph's GPU work covers 170 of each, 830 idle.
    # A replay saves 500; back to back it could save 500 + 830 = 1330: the gaps eat 830/1330 = 62%.
    assert p.graph_id == 1 and p.cost_ns == 2 * 830
    assert "median 0.8 us" in p.evidence and "its GPU work: 0.2 us" in p.evidence and "over 2 replay intervals" in p.evidence
    assert "2 of them hold a synchronising call (cudaStreamSynchronize ×2 at train.py:30 step)" in p.evidence
    assert "eat 62%" in p.evidence
    assert p.where == SYNC_LINE and "synchronise" in p.advice


def test_graph_not_replayed_enough(tmp_path: Path) -> None:
    # one-time 500 + 3000 + 100 = 3600; replays [9000, 9500) = 500 and [9500, 9900) = 400: median 450;
    # saved 1500 - 450 = 1050; break-even ceil(3600 / 1050) = 4 > 2 replays; lost 3600 - 2 * 1050 = 1500.
    # Gap [9000, 9500): 370 busy, 130 idle; 130 / (1050 + 130) = 11%: not reported.
    path = eager_then_graph(tmp_path / "few.gmtrace", [1000, 2500, 4000], 4250, (5000, 5500), (5600, 8600), (8600, 8700),
                            [(9000, (9030, 9400), 9400), (9500, (9530, 9900), None)])
    add_inferred_iterations(path)
    a = _analyze(path)
    assert [p.kind for p in a.pitfalls] == ["never_paid_back"]
    p = a.pitfalls[0]
    assert p.cost_ns == 1500 and p.graph_id == 1
    assert "replayed 2 times" in p.evidence and "needs 4 replays" in p.evidence and "3.6 us" in p.evidence
    assert "break-even from the analysis" in p.evidence and "lost 1.5 us net" in p.evidence


def test_graph_slower_than_eager(tmp_path: Path) -> None:
    # replays every 2000 (GPU 1770 each, last ends at 12800): walls 2000, 2000, 1800, median 2000 vs eager 1500.
    # The gaps (230) cannot explain it: 230 - 500 < 0, so only 'graph_slower' (cost 500 x 3 replays).
    path = eager_then_graph(tmp_path / "slow.gmtrace", [1000, 2500, 4000], 4250, (5000, 5500), (5600, 6000), (6000, 6100),
                            [(7000, (7030, 8800), 8800), (9000, (9030, 10800), 10800), (11000, (11030, 12800), None)])
    add_inferred_iterations(path)
    a = _analyze(path)
    assert [p.kind for p in a.pitfalls] == ["graph_slower"]
    p = a.pitfalls[0]
    assert p.cost_ns == 1500
    assert "takes 2.0 us (median of 3) vs 1.5 us (median of 3)" in p.evidence and "0.5 us slower" in p.evidence


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
    assert p.severity == "error" and p.title == "Stream capture broken by cudaStreamSynchronize"
    assert p.where == "model.py:12 capture_step"
    # times from the pass start (1000): the failing call at 40 ns, the capture begun at 0
    assert "cudaStreamSynchronize returned 900 (stream capture unsupported" in p.evidence
    assert "inside the capture begun at 0.0 us by model.py:10 capture_step" in p.evidence
    assert "1 later call returned 901" in p.evidence
    # the exception's innermost user frame, not torch's
    assert "RuntimeError: CUDA error: operation not permitted when stream is capturing at model.py:12 capture_step" in p.evidence
    assert ".item()" in p.advice


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
    assert "instantiated 3 times from 3 graphs (ids 1, 2, 3)" in p.evidence and "the 2 repeats cost 1.1 us" in p.evidence
    assert "35.5% of the run" in p.evidence  # 1100 / (3200 - 100)
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


def test_classify_frames() -> None:
    # the second argument is pyinstrument's Frame.is_application_code for the frame
    assert classify("/venv/lib/python3.11/site-packages/torch/nn/functional.py", False) == "framework"
    assert classify("/venv/lib/python3.11/site-packages/torch/cuda/graphs.py", False) == "cuda_binding"
    assert classify("/venv/lib/python3.11/site-packages/cuda/bindings/driver.py", False) == "cuda_binding"
    assert classify("/usr/lib/python3.11/json/encoder.py", False) == "other"
    assert classify("/home/me/train.py", True) == "user"
    assert classify("/home/me/.local/lib/python3.11/site-packages/six.py", True) == "other"


def test_reports_carry_diagnostics_and_profile(tmp_path: Path, session: dict) -> None:
    from graphmode.reports.html import render_html

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
        page, _ = render_html(trace, analysis=a)
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
    """The runner marked its iterations; inference must find one iteration start inside each of them."""
    with load(path) as trace:
        traced = trace.pass_by_detail("node", "graph")
        assert traced is not None
        cols = infer_iterations(trace, traced.pass_id)
        bench = trace.sql("SELECT mode, start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration'", [traced.pass_id])
        launches = trace.rows("SELECT count(*) FROM graph_events WHERE pass_id = ? AND event = 'launch'", [traced.pass_id])[0][0]
    for ours, theirs in (("eager", "eager"), ("eager", "eager_sync_each"), ("graph", "graph")):
        starts = np.sort(cols["start_ns"][cols["mode"] == ours])
        sel = bench["mode"] == theirs
        inside = np.searchsorted(starts, bench["end_ns"][sel]) - np.searchsorted(starts, bench["start_ns"][sel])
        assert np.all(inside == 1), f"{theirs}: {np.bincount(inside)}"
    assert int((cols["mode"] == "graph").sum()) == launches  # every launch, the first included
