"""Real `graphmode run` recordings of the examples (H200, tests/data/scripts/), checked without a GPU.

Recorded with tests/data/record.sh (its output is tests/data/scripts/recording.log): each holds the
measuring run (pass 0) and the detail run (pass 1), except broken_capture (recorded before a failed
measuring run got its detail run) and two_threads_measure_only (an earlier recording of two_threads
whose detail run was cut by the recording script's time limit: the measuring run alone, kept for what
the report does without a detail run). The expectations come from what each example does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from graphmode.analyzers import analyze
from graphmode.analyzers.notes import note
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.cli import app
from graphmode.reports.notes import word, words
from graphmode.tracer.cupti_session import api_sparse
from graphmode.tracer.store import Trace, load
from graphmode.tracer.validate import validate_trace
from tests.conftest import DATA, ROOT, unpacked_xz

SCRIPTS = DATA / "scripts"
ALL = sorted(SCRIPTS.glob("*.gmtrace"))


def _marked_lines(example: str, tag: str) -> set[int]:
    lines = (ROOT / "examples" / example).read_text().splitlines()
    return {i + 1 for i, line in enumerate(lines) if f"# {tag}" in line}


def _lines_of(sources: list[str], example: str) -> set[int]:
    out = set()
    for s in sources:
        m = re.match(r"(.*):(\d+) \S+$", s)
        assert m and Path(m.group(1)).name == example, s
        out.add(int(m.group(2)))
    return out


@pytest.fixture(scope="module", params=[p.name for p in ALL] or ["none"])
def recording(request: pytest.FixtureRequest) -> Trace:
    if request.param == "none":
        pytest.skip("no script recordings under tests/data/scripts")
    return load(SCRIPTS / request.param)


def test_every_recording_is_valid_and_says_how_it_ended(recording: Trace) -> None:
    assert validate_trace(recording) == []
    assert recording.meta["workload"] == "script"
    assert recording.meta["status"] in ("complete", "failed")
    assert recording.meta["script"]["exit_code"] == (0 if recording.meta["status"] == "complete" else 1)
    assert recording.meta["dropped_records"] == 0
    runs = recording.meta["runs"]
    # every run wrote a pass, but the probe run (meta.first_graph_probe only)
    assert [p.name for p in recording.passes] == [r["config"]["name"] for r in runs if r["config"]["name"] != "probe"]
    assert runs[0]["config"]["name"] == "measure" and runs[0]["config"]["callbacks"] is False
    if len(runs) > 1:
        assert runs[1]["config"]["name"] == "detail" and runs[1]["config"]["callbacks"] is True
    assert "cpu_profile" not in recording.meta  # the profiler is opt-in (--profile), in the detail run


def test_the_measuring_run_records_only_graph_lifecycle_calls(recording: Trace) -> None:
    """No Python callback and API records for the graph lifecycle, launches of graphs and synchronizations only."""
    names = {n for (n,) in recording.rows("SELECT DISTINCT name FROM api_calls WHERE pass_id = 0")}
    assert names and all(api_sparse(n) for n in names), sorted(n for n in names if not api_sparse(n))
    assert recording.rows("SELECT count(*) FROM api_calls WHERE pass_id = 0 AND source <> ''")[0][0] == 0
    assert recording.rows("SELECT count(*) FROM graph_nodes WHERE pass_id = 0")[0][0] == 0  # no topology read either
    run = recording.meta["runs"][0]
    assert run["api_filter"]["runtime_off"] > 100 and run["api_filter"]["runtime_recorded"] > 0


def test_every_recording_reports_and_renders(recording: Trace, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(recording.path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["schema_version"] == 2 and data["status"] == recording.meta["status"]
    launched = recording.rows("SELECT count(DISTINCT graph_id) FROM gpu_spans WHERE pass_id = 0 AND graph_id <> 0")[0][0]
    assert sum(1 for g in data["graphs"] if g["status"] == "replayed") == launched  # one answer per replayed graph
    res = runner.invoke(app, ["view", str(recording.path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    payload = json.loads(page.split("id='gm-data'>")[1].split("</script>")[0])
    assert "gm-timeline-full" in {p["div"] for p in payload["plots"]}


def test_torch_cudagraph() -> None:
    t = load(SCRIPTS / "torch_cudagraph.gmtrace")
    (gid, origin, n_nodes), = t.rows("SELECT graph_id, origin, num_nodes FROM graphs WHERE pass_id = 1")
    assert origin == "capture" and n_nodes >= 3
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id=? AND pass_id = 1 GROUP BY 1", [gid]))
    assert ev["capture"] == 1 and ev["instantiate"] == 1 and ev["launch"] == 20
    kernel_sources = [s for (s,) in t.rows("SELECT source FROM graph_nodes WHERE node_type='kernel' AND pass_id = 1")]
    assert _lines_of(kernel_sources, "torch_cudagraph.py") == _marked_lines("torch_cudagraph.py", "LINE")
    assert {"eager loop", "replay loop"} <= {n for (n,) in t.rows("SELECT name FROM markers WHERE kind='nvtx' AND pass_id = 0")}
    a = analyze(t)
    (g,) = a.graphs
    # the graph is named by the `with torch.cuda.graph(g):` line (not the step function's lines, where its nodes come from)
    with_line = next(i + 1 for i, line in enumerate((ROOT / "examples/torch_cudagraph.py").read_text().splitlines())
                     if line.startswith("with torch.cuda.graph(g)"))
    assert _lines_of([g.site], "torch_cudagraph.py") == {with_line}
    # 20 eager steps (19 periods: the last has no next step), 3 side-stream warm-ups, 20 replays (the first is the
    # first launch, the last has no period: 18 steady periods); a synchronize after each step: CPU-bound
    assert g.replays == 20 and g.warmup_iterations == 3 and g.eager is not None and g.graph is not None
    assert (g.eager.iterations, g.graph.iterations) == (19, 18)
    assert (g.eager.bound, g.graph.bound) == ("cpu", "cpu")
    it = find_iterations(t)
    warm = it.select((it.mode == "eager") & (it.role == "warmup"))
    steady = it.select((it.mode == "eager") & (it.role == "steady"))
    assert warm.size == 3 and len(set(warm.stream_id)) == 1 and set(warm.stream_id).isdisjoint(set(steady.stream_id))
    assert g.cost is not None and g.cost.build_ns and g.cost.instantiate_ns
    b = g.break_even
    assert b is not None and b.replays is not None and b.interval_low <= b.replays <= b.interval_high
    assert b.replays * b.saved_per_replay_ns >= b.one_time_ns > (b.replays - 1) * b.saved_per_replay_ns


def test_gpu_bound_loops_take_the_gpu_cadence_not_the_launch_cadence() -> None:
    """Eager steps and replays queued without synchronization: the CPU runs ahead, the GPU sets the pace. The
    example timed both loops itself (recording.log, measuring run's line): graphmode's periods match them."""
    t = load(SCRIPTS / "gpu_bound_replays.gmtrace")
    line = next(ln for ln in (SCRIPTS / "recording.log").read_text().splitlines() if ln.startswith("ok: eager"))
    own_eager, own_replay = (float(x) * 1e3 for x in re.findall(r"([\d.]+) us", line))
    (g,) = analyze(t).graphs
    assert g.eager is not None and g.graph is not None and g.eager.work is not None and g.graph.work is not None
    assert (g.eager.bound, g.graph.bound) == ("gpu", "gpu")
    assert g.eager.work.trimmed_mean == pytest.approx(own_eager, rel=0.02)
    assert g.graph.work.trimmed_mean == pytest.approx(own_replay, rel=0.02)
    # the launch calls come every few microseconds: what a launch-to-launch reading would have reported
    assert g.graph.cpu_period is not None and g.graph.cpu_period.median < 0.1 * g.graph.work.trimmed_mean


def test_cupy_replays_are_gpu_bound() -> None:
    """The issue's CuPy case: 100 replays launched back to back. Launch to launch is a few microseconds; each
    replay's GPU work takes far longer, and that is the period."""
    t = load(SCRIPTS / "cupy_graph.gmtrace")
    (gid, origin, n_nodes), = t.rows("SELECT graph_id, origin, num_nodes FROM graphs WHERE pass_id = 1")
    assert origin == "capture" and n_nodes == 20  # 10 iterations of `v * 1.0001 + 0.5`: two kernels each
    sources = [s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes WHERE pass_id = 1")]
    assert _lines_of(sources, "cupy_graph.py") == _marked_lines("cupy_graph.py", "LINE")
    (g,) = analyze(t).graphs
    assert g.replays == 100 and g.graph is not None and g.graph.bound == "gpu" and g.eager is not None
    assert g.graph.cpu_period is not None and g.graph.gpu_busy is not None and g.graph.work is not None
    assert g.graph.cpu_period.median < 0.2 * g.graph.work.median
    assert g.graph.work.median == pytest.approx(g.graph.gpu_busy.median, rel=0.05)  # back to back: the GPU never waits


def test_two_shapes_give_two_graphs_each_with_its_own_eager_work() -> None:
    t = load(SCRIPTS / "two_shapes.gmtrace")
    a = analyze(t)
    assert sorted(g.replays for g in a.graphs) == [40, 40] and len(a.graphs) == 2
    capture_line = _marked_lines("two_shapes.py", "CAPTURE")
    assert all(_lines_of([g.site], "two_shapes.py") == capture_line for g in a.graphs)
    it = find_iterations(t)
    captures = dict(t.rows("SELECT graph_id, min(start_ns) FROM graph_events WHERE pass_id = 1 AND event = 'capture' GROUP BY 1"))
    first, second = sorted(captures, key=lambda g: captures[g])
    eager = it.select((it.mode == "eager") & (it.role == "steady"))
    # batch 8's eager loop runs before its capture; batch 64's between the first graph's replays and its own capture
    assert set(eager.graph_id) == {first, second}
    e1, e2 = eager.select(eager.graph_id == first), eager.select(eager.graph_id == second)
    assert e1.size == e2.size == 40 and e1.start_ns.max() < e2.start_ns.min()
    replays1 = it.select((it.mode == "graph") & (it.graph_id == first))
    assert replays1.start_ns.max() < e2.start_ns.min()
    assert a.totals is not None and a.totals.graphs_replayed == 2 and a.totals.replays == 80
    assert a.totals.one_time_ns == pytest.approx(sum(g.cost.total_ns for g in a.graphs if g.cost is not None))


@pytest.mark.parametrize("name", ["two_threads", "two_threads_measure_only"])
def test_two_threads_keep_their_iterations_apart(name: str) -> None:
    """Two threads replay their own graphs on their own streams at the same time: two series, not one."""
    t = load(SCRIPTS / f"{name}.gmtrace")
    both = name == "two_threads"
    assert [p.name for p in t.passes] == (["measure", "detail"] if both else ["measure"])  # see the module docstring
    it = find_iterations(t)
    replays = it.select(it.mode == "graph")
    groups = {(int(g), int(s)) for g, s in zip(replays.graph_id, replays.stream_id)}
    assert len(groups) == 2 and len({s for _, s in groups}) == 2
    spans = []
    for g, s in groups:
        mine = replays.select((replays.graph_id == g) & (replays.stream_id == s))
        assert mine.size == 50 and len(set(mine.thread_id)) == 1
        spans.append((mine.start_ns.min(), mine.start_ns.max()))
    (a0, a1), (b0, b1) = spans
    assert a0 < b1 and b0 < a1  # the two loops ran at the same time
    a = analyze(t)
    if not both:
        assert all("structure was not recorded" in g.label for g in a.graphs)
        assert note("no_detail_run") in a.cannot_compute
        return
    # each graph named by the line of its own capture (one `with torch.cuda.graph` per thread's width)
    captures = _marked_lines("two_threads.py", "CAPTURE")
    assert len(captures) == 2 and _lines_of([g.site for g in a.graphs], "two_threads.py") == captures
    for g in a.graphs:
        assert g.status == "replayed" and g.replays == 50 and g.break_even is not None


def test_broken_capture_is_diagnosed_at_the_offending_line() -> None:
    t = load(SCRIPTS / "broken_capture.gmtrace")
    assert t.meta["status"] == "failed"
    failed = dict(t.rows("SELECT return_code, count(*) FROM api_calls WHERE return_code <> 0 GROUP BY 1"))
    assert 901 in failed  # the capture end reports the capture invalidated by the synchronization .item() needs
    pitfalls = [p for p in analyze(t).pitfalls if p.kind == "capture_failed"]
    assert pitfalls
    breaks = _marked_lines("broken_capture.py", "BREAKS")
    assert _lines_of([pitfalls[0].where], "broken_capture.py") == breaks


def test_cuda_python_capture_node_detail() -> None:
    t = load(SCRIPTS / "cuda_python_capture.gmtrace")
    assert [(p.name, p.detail) for p in t.passes] == [("measure", "graph"), ("detail", "node")]
    (gid, n_nodes, n_edges), = t.rows("SELECT graph_id, num_nodes, num_edges FROM graphs WHERE pass_id = 1")
    assert (n_nodes, n_edges) == (16, 15)  # 16 launches captured in one stream: a chain
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id=? AND pass_id = 1 GROUP BY 1", [gid]))
    assert ev == {"capture": 1, "instantiate": 1, "upload": 1, "launch": 200}
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE graph_id=? AND kind='kernel' AND pass_id = 1", [gid])[0][0] == 16 * 200
    sources = [s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes WHERE pass_id = 1")]
    assert _lines_of(sources, "cuda_python_capture.py") == _marked_lines("cuda_python_capture.py", "LINE")
    a = analyze(t)
    (g,) = a.graphs
    # 200 eager steps and 200 replays in the measuring run; periods for all but the last (and the first launch)
    assert g.replays == 200 and g.eager is not None and g.graph is not None
    assert (g.eager.iterations, g.graph.iterations) == (199, 198)
    assert {m.mode: m.iterations for m in a.modes} == {"eager": 199, "graph": 198}
    assert a.critical_paths and a.critical_paths[0].nodes == 16  # from the node-detail pass


def test_torch_compile_records_a_graph_per_shape() -> None:
    t = load(SCRIPTS / "torch_compile.gmtrace")
    a = analyze(t)
    replayed = sorted((g.replays for g in a.graphs if g.status == "replayed"), reverse=True)
    # shape (64, 256): 2 x 50 calls, the first of them warm-up and recording; shape (128, 256): recorded again
    assert replayed == [99, 49]
    never = [g for g in a.graphs if g.status != "replayed"]
    assert len(never) == 1 and never[0].status == "never_replayed" and never[0].nodes == 0  # cudagraph trees' empty graph
    for g in a.graphs:
        if g.status == "replayed":  # the only eager run of each shape is torch.compile's warm-up call: its first
            # run of freshly compiled kernels, no baseline (a first call pays module loading and set-up)
            assert g.warmup_iterations == 1 and g.eager is None, g
            assert note("only_eager_run_is_first_call") in g.notes, g.notes
    sources = [s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes WHERE source <> ''")]
    # Inductor's generated code is skipped: the nodes point at the user's function
    assert sources and all(Path(s.split(":")[0]).name == "torch_compile.py" for s in sources)


def test_launch_sources_attribute_eager_kernels_to_their_line() -> None:
    """Recorded with `graphmode run --launch-sources --detail node examples/cuda_python_capture.py`."""
    t = load(SCRIPTS / "cuda_python_launch_sources.gmtrace")
    assert t.meta["runs"][1]["config"]["launch_sources"] is True
    line = _marked_lines("cuda_python_capture.py", "LINE")
    rows = t.rows("""SELECT a.source, count(*) FROM gpu_spans s JOIN api_calls a USING (pass_id, correlation_id)
                     WHERE s.kind = 'kernel' AND s.graph_id = 0 AND pass_id = 1 GROUP BY 1""")
    assert len(rows) == 1 and _lines_of([rows[0][0]], "cuda_python_capture.py") == line and rows[0][1] == 16 * 200
    eager = [s for s in analyze(t).source_lines if s.kind == "eager launch" and s.count == 16 * 200]
    assert len(eager) == 1 and _lines_of([eager[0].source], "cuda_python_capture.py") == line


def test_graphmode_own_calls_are_not_in_the_recordings(recording: Trace) -> None:
    """The topology is read by graphmode itself; those driver calls are not the program's."""
    own = recording.rows("SELECT count(*) FROM api_calls WHERE name IN ('cuGraphGetNodes', 'cuGraphGetEdges', "
                         "'cuGraphNodeGetType', 'cuGraphKernelNodeGetParams', 'cuFuncGetName')")
    assert own[0][0] == 0


def test_periods_are_never_negative_and_warmups_precede_their_capture(recording: Trace) -> None:
    from graphmode.analyzers.script_graphs import script_graphs

    it = find_iterations(recording)
    assert np.all(it.period[np.isfinite(it.period)] >= 0) and np.all(it.work[np.isfinite(it.work)] >= 0)
    sg = script_graphs(recording)
    assert sg is not None and sg.timing_pass == 0
    caps = [(c.graph_id, c.start_ns) for c in sg.lifecycle if c.event == "capture"]
    assert caps or recording.path.name in ("two_threads.gmtrace", "cuda_python_eager_only.gmtrace") or len(recording.passes) == 1
    for g, start in caps:
        warm = it.select((it.role == "warmup") & (it.graph_id == g))
        assert warm.size == 0 or warm.gpu_start_ns.max() < start


def test_cudagraph_tree_recordings_add_pytorchs_own_work_to_the_one_time_cost() -> None:
    """examples/torch_compile.py in three runs (tests/data/scripts/timed/recording.log): the measuring run heard
    each cudagraph-tree recording start and end (meta.runs[0].torch). Each recording's wall time less its
    capture (cudaStreamBeginCapture to the end of cudaStreamEndCapture), its instantiation and the first replay
    it makes (GPU span + launch call) is PyTorch's own work, worked out here from the raw records."""
    with load(DATA / "scripts" / "timed" / "torch_compile.gmtrace") as t:
        assert validate_trace(t) == []
        ev = t.meta["runs"][0]["torch"]["events"]
        starts = [x for x, k in zip(ev["ts_ns"], ev["kind"]) if k == "start_cudagraph_recording"]
        ends = [x for x, k in zip(ev["ts_ns"], ev["kind"]) if k == "end_cudagraph_recording"]
        expected = []
        for w0, w1 in zip(starts, ends):
            c = t.sql("SELECT name, start_ns, end_ns, correlation_id FROM api_calls WHERE pass_id = 0 AND start_ns BETWEEN $1 AND $2 "
                      "ORDER BY start_ns", [w0, w1])
            names = [str(n) for n in c["name"]]

            def at(prefix: str) -> int:
                return next(i for i, n in enumerate(names) if n.startswith(prefix))

            capture = int(c["end_ns"][at("cudaStreamEndCapture")] - c["start_ns"][at("cudaStreamBeginCapture")])
            inst = int(c["end_ns"][at("cudaGraphInstantiate")] - c["start_ns"][at("cudaGraphInstantiate")])
            launch = at("cudaGraphLaunch")
            span = t.sql("SELECT end_ns - start_ns AS d FROM gpu_spans WHERE pass_id = 0 AND correlation_id = $1",
                         [int(c["correlation_id"][launch])])["d"]
            first = int(span[0]) + int(c["end_ns"][launch] - c["start_ns"][launch])
            expected.append(w1 - w0 - capture - inst - first)
        a = analyze(t)
    assert len(expected) == 2  # shapes 64 and 128: two recordings
    recorded = sorted((g for g in a.graphs if g.cost is not None and g.cost.framework_ns is not None), key=lambda g: g.graph_id)
    assert [g.cost.framework_ns for g in recorded if g.cost is not None] == [float(x) for x in expected]
    for g in recorded:
        c = g.cost
        assert c is not None and c.framework_ns is not None and c.build_ns is not None and c.instantiate_ns is not None
        assert c.total_ns == pytest.approx(c.build_ns + c.instantiate_ns + (c.first_launch_excess_ns or 0) + c.framework_ns)
    # the process's first recording pays far more of PyTorch's own work than the second (17.7 vs 2.3 ms on the H200)
    assert expected[0] > 3 * expected[1] > 0
    # the start-up table counts it too, as the one-time cost does
    assert a.graph_budget is not None
    startup = {r.graph_id: r for r in a.graph_budget.rows}
    for g in recorded:
        c = g.cost
        assert c is not None and c.framework_ns is not None and c.build_ns is not None and c.instantiate_ns is not None
        assert startup[g.graph_id].startup_ns == pytest.approx(c.build_ns + c.instantiate_ns + c.framework_ns)
    assert any(n.kind == "budget_framework_startup" for n in a.graph_budget.notes)
    assert any("PyTorch's own work around the capture" in n for n in words(a.graph_budget.notes))
    # the first recording's cost is mostly PyTorch's work (17.7 of 18.2 ms), and its note says so
    first = recorded[0]
    assert first.cost is not None and first.cost.framework_ns is not None
    assert any(n.startswith(f"{100 * first.cost.framework_ns / first.cost.total_ns:.0f}% of its one-time cost") for n in words(first.notes))


def test_a_transformers_decoder_whose_runs_cut_its_eager_steps_differently_is_still_timed_untraced(tmp_path: Path) -> None:
    """benchmarks/third_party/hf_compile_decode.py in three runs (tests/data/scripts/timed/recording.log): the
    measuring run found the default-mode twin's eager steps as 206 iterations, the detail run as 207 in other
    stretches. Their CPU-bound periods still come from the timing run, in order, and match the program's own
    timer in that run (its third GRAPHMODE_TRUTH line) within 5%; the measuring run's (its first line) is far slower."""
    truths = _truths("hf_decode.gmtrace.xz")
    with load(_unpacked(tmp_path, "hf_decode.gmtrace")) as t:
        assert validate_trace(t) == []
        a = analyze(t)
    (g,) = [g for g in a.graphs if g.status == "replayed"]
    assert g.eager is not None and g.eager.run == "timing" and g.eager.work is not None
    assert any(n.kind == "iterations_respread" and (n["measured"], n["detail"]) == (206, 207) for n in a.cannot_compute)
    own = truths[2]["eager_ns"]  # the timing run's own timer over its 200 steps
    assert g.eager.work.median == pytest.approx(own, rel=0.05)
    assert truths[0]["eager_ns"] > 1.3 * own  # what the measuring run's timer read: the period it would have kept
    # the replays too are CPU-bound and timed untraced
    assert g.graph is not None and g.graph.run == "timing" and g.graph.work is not None
    assert g.graph.work.median == pytest.approx(truths[2]["graph_ns"], rel=0.1)


def _unpacked(tmp_path: Path, name: str) -> Path:
    """A real recording committed compressed as tests/data/scripts/timed/NAME.xz, unpacked byte for byte."""
    return unpacked_xz(SCRIPTS / "timed" / f"{name}.xz", tmp_path)


def _truths(fixture: str) -> list[dict]:
    """The program's GRAPHMODE_TRUTH lines (measuring, detail, timing runs) under the fixture's heading in
    tests/data/scripts/timed/recording.log."""
    lines = (SCRIPTS / "timed" / "recording.log").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.endswith(f"-> {fixture}"))
    assert all(ln.startswith("GRAPHMODE_TRUTH ") for ln in lines[start + 1:start + 4])
    return [json.loads(ln.split(" ", 1)[1]) for ln in lines[start + 1:start + 4]]


def test_a_cudagraph_tree_recordings_one_time_cost_is_its_whole_call_timed_untraced(tmp_path: Path) -> None:
    """benchmarks/third_party/hf_compile_decode.py (transformers decoder, cudagraph trees) in three runs, the
    timing run hearing Dynamo's compilations. The recording call (line 92) spends about 3.5 ms outside PyTorch's
    recording window (its dispatch and bookkeeping), which the timing run times between the stamps of lines 92
    and 93. graphmode's one-time cost of the replayed graph then matches the program's own timer of that call in
    the same run (its third GRAPHMODE_TRUTH line: recording call + first replay - a steady replay) within 5%;
    without the statement it read 0.73-0.80 of it (benchmarks/notes/history.md, session 8)."""
    from graphmode.analyzers.run_plan import lines_to_time

    truths = _truths("hf_decode_call.gmtrace.xz")
    with load(_unpacked(tmp_path, "hf_decode_call.gmtrace")) as t:
        assert validate_trace(t) == []
        a = analyze(t)
        # what the analysis asks the timing run to stamp, from the first two runs: the loop's call line (69), the
        # recording call (92) and the next line (93), and the replay loop's anchor (98). This recording's timing run
        # also stamped 70, the line after the tree's pool capture (a block, whose statement is no longer read)
        asked = next(r for r in t.meta["runs"] if r["config"]["name"] == "timing")["config"]["stamp_lines"]
        assert [x.rsplit(":", 1)[1] for x in asked] == ["69", "70", "92", "93", "98"]
        assert [x.rsplit(":", 1)[1] for x in lines_to_time(t)] == ["69", "92", "93", "98"]
    (g,) = [g for g in a.graphs if g.status == "replayed"]
    c = g.cost
    assert c is not None and c.call_ns is not None and c.untraced_correction_ns is not None
    assert [(a_.rsplit(":", 1)[1], b_.rsplit(":", 1)[1]) for a_, b_ in c.call_lines] == [("92", "93")]
    own = truths[2]["capture_block_ns"] + truths[2]["first_replay_ns"] - truths[2]["graph_ns"]
    assert c.total_ns == pytest.approx(own, rel=0.05)
    assert c.total_ns - c.call_ns < 0.9 * own  # the window alone falls short of the call
    (timed,) = [n for n in g.notes if n.kind == "one_time_timed_untraced"]
    assert (timed["statement_starts"], timed["statement_ends"]) == (("hf_compile_decode.py:92",), ("hf_compile_decode.py:93",))
    assert "the statement around it (lines hf_compile_decode.py:92 to hf_compile_decode.py:93)" in word(timed), g.notes
    # the tree's first capture (an empty graph for its memory pool, inside the function's first call, which also
    # compiled it: about 0.9 s) is not charged with that call: it keeps its window's cost
    (pool,) = [g for g in a.graphs if g.status == "never_replayed"]
    assert pool.cost is not None and pool.cost.call_ns is None and pool.cost.total_ns < 5e6


def test_a_torch_cuda_graph_block_is_timed_by_the_timing_run(tmp_path: Path) -> None:
    """examples/torch_cudagraph.py in three runs: the `with torch.cuda.graph(g):` block heard in each. Its one-time
    cost holds PyTorch's work in the block (most of it) with the block as the timing run timed it; a block is a
    statement of its own, so nothing outside the window is added."""
    with load(_unpacked(tmp_path, "torch_cudagraph_block.gmtrace")) as t:
        assert validate_trace(t) == []
        a = analyze(t)
    (g,) = a.graphs
    c = g.cost
    assert c is not None and c.framework_ns is not None and c.untraced_correction_ns is not None and c.call_ns is None
    assert c.framework_ns > 0.5 * c.total_ns  # PyTorch's synchronize, empty_cache and pool work dominate a small capture
    parts = sum(x or 0.0 for x in (c.build_ns, c.instantiate_ns, c.upload_ns, c.first_launch_excess_ns, c.framework_ns,
                                   c.untraced_correction_ns))
    assert c.total_ns == pytest.approx(parts)
    assert any("as the timing run, without CUPTI, timed them" in n for n in words(g.notes))


def test_a_cupy_capture_is_timed_by_the_timing_run_between_two_line_stamps(tmp_path: Path) -> None:
    """benchmarks/third_party/cupy_chain.py in three runs: begin_capture (line 37), the captured step, end_capture
    (which instantiates), then line 40. The timing run stamps lines 37 and 40, and the span between them, with the
    first launch's excess, is the one-time cost: it matches the program's own timer of that block in the same run
    (its third GRAPHMODE_TRUTH line: block + first replay - a steady replay) within 3%. CUPTI had slowed that
    capture 1.36x in the measuring run (benchmarks/notes/history.md, session 8)."""
    from graphmode.analyzers.run_plan import lines_to_time

    truths = _truths("cupy_capture_span.gmtrace.xz")
    with load(_unpacked(tmp_path, "cupy_capture_span.gmtrace")) as t:
        assert validate_trace(t) == []
        a = analyze(t)
        asked = next(r for r in t.meta["runs"] if r["config"]["name"] == "timing")["config"]["stamp_lines"]
        assert lines_to_time(t) == asked and {"37", "40"} <= {x.rsplit(":", 1)[1] for x in asked}
    (g,) = a.graphs
    c = g.cost
    assert c is not None and c.untraced_correction_ns is not None and c.framework_ns is None
    assert [x.rsplit(":", 1)[1] for x in c.capture_lines] == ["37", "40"]
    own = truths[2]["capture_block_ns"] + truths[2]["first_replay_ns"] - truths[2]["graph_ns"]
    assert c.total_ns == pytest.approx(own, rel=0.03)
    assert c.total_ns == pytest.approx(sum(x or 0.0 for x in (c.build_ns, c.instantiate_ns, c.upload_ns,
                                                               c.first_launch_excess_ns, c.untraced_correction_ns)))
    (timed,) = [n for n in g.notes if n.kind == "one_time_timed_untraced"]
    assert timed["capture_lines"] == ("cupy_chain.py:37", "cupy_chain.py:40")
    assert "its capture through its instantiation (lines cupy_chain.py:37 to cupy_chain.py:40)" in word(timed), g.notes
    assert not any(n.kind == "one_time_traced" for n in g.notes)
