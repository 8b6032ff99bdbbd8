"""How `graphmode run` starts and guards its runs, without a GPU: what is refused before the program runs,
and a run that stops when the `graphmode run` process that started it is killed."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from graphmode.tracer.errors import OutputPathError, StorageError
from graphmode.tracer.run_configs import PROBE_RUN, timing_config
from graphmode.tracer.script import run_script
from tests.conftest import ROOT

PROGRAM = "from pathlib import Path\nPath(__file__).with_name('ran').write_text('yes')\n"


def test_no_room_for_the_trace_is_said_before_the_program_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    monkeypatch.setenv("GRAPHMODE_MIN_FREE_MB", str(10**12))
    with pytest.raises(StorageError, match="free on the disk holding .*GRAPHMODE_MIN_FREE_MB"):
        run_script(script, [], tmp_path / "t.gmtrace")
    assert not (tmp_path / "ran").exists() and not (tmp_path / "t.gmtrace").exists()


def test_a_trace_that_would_overwrite_the_script_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    with pytest.raises(OutputPathError, match="is the input script .*would destroy the script"):
        run_script(script, [], script)
    assert script.read_text() == PROGRAM and not (tmp_path / "ran").exists()


def _stand_in_run(tmp_path: Path, script: Path, written: Path, start: str, stop_first: str = "pass") -> subprocess.Popen[str]:
    """run_in_this_process of `script` in a fresh process, its tracer a stand-in (no GPU) whose start runs `start` and
    whose stop runs `stop_first`, then writes the status and reason it was given to `written` as JSON."""
    driver = textwrap.dedent(f"""
        import json, sys, time
        from pathlib import Path
        import graphmode.tracer.script as s

        class StandIn:
            def __init__(self, *a, **k): pass
            def start(self): {start}
            def stop(self, status, reason, extra=None):
                {stop_first}
                Path({str(written)!r}).write_text(json.dumps({{"status": status, "reason": reason}}))
                return Path({str(tmp_path / "t.gmtrace")!r})

        s.ScriptTracer = s.TimingTracer = StandIn
        sys.exit(s.run_in_this_process({str(script)!r}, [], {str(tmp_path / "t.gmtrace")!r}))
    """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-c", driver], env=env, stdout=subprocess.PIPE, text=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals (prctl) are Linux's")
def test_a_run_gets_sigterm_when_graphmode_is_killed(tmp_path: Path) -> None:
    """The run's process asks for SIGTERM at its parent's death (the run then closes its trace as
    'interrupted'); here the parent is killed with SIGKILL, which it cannot catch or pass on."""
    mark = tmp_path / "got-sigterm"
    child = textwrap.dedent(f"""
        import os, signal, sys, time
        from graphmode.tracer.script import _stop_with_parent
        signal.signal(signal.SIGTERM, lambda *a: (open({str(mark)!r}, "w").write("yes"), sys.exit(0)))
        _stop_with_parent(int(sys.argv[1]))
        print("ready", flush=True)
        time.sleep(60)
    """)
    parent = textwrap.dedent(f"""
        import os, subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", {child!r}, str(os.getpid())])
        p.wait()
    """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-c", parent], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.time() + 10
        while not mark.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert mark.exists(), "the orphaned run did not get SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals as Linux delivers them")
def test_sigterms_after_the_first_do_not_stop_the_trace_being_written(tmp_path: Path) -> None:
    """A killed `graphmode run` can send its run several SIGTERMs within moments (PR_SET_PDEATHSIG fires each time
    the orphan passes from one dying thread of the parent to the next; H200, session 12: the run died of the
    second, its trace left 'recording'). Here a stand-in tracer (no GPU) takes 0.5 s to write its trace; three
    SIGTERMs 50 ms apart: the first stops the script, the others are ignored, the trace is written 'interrupted'
    and the run exits 143."""
    written = tmp_path / "written.json"
    script = tmp_path / "program.py"
    script.write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    proc = _stand_in_run(tmp_path, script, written, start="pass", stop_first="time.sleep(0.5)")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for _ in range(3):
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.05)
        assert proc.wait(timeout=20) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    import json

    assert json.loads(written.read_text()) == {"status": "interrupted", "reason": "terminated (SIGTERM)"}


def test_one_traced_run_by_default_and_for_a_rank_of_a_job() -> None:
    """issue 29: `graphmode run` traces the script once (plus, for a script that builds no graph, on Python 3.12+, the
    timing run: issue 30's prediction reads the loop's untraced period; else the untraced probe run); a detail run only
    where the user asked for what only it records; one rank of a job runs once."""
    from graphmode.analyzers.run_plan import plan_runs
    from graphmode.tracer import line_stamps

    timing = [("timing", "eager_only")] if line_stamps.AVAILABLE else []
    assert [(c.name, c.when) for c in plan_runs()] == [("single", ""), *timing, ("probe", "")]
    single = plan_runs()[0]
    # the measuring run's records, the API records a prediction reads, graph-level callbacks and (3.12+) the user's
    # lines; nothing per node, no Python call per launch
    assert (single.api_filter, single.callbacks, single.node_events, single.node_sources, single.launch_sources,
            single.profile, single.stamp) == ("needed", True, False, False, False, False, "all" if line_stamps.AVAILABLE else "")
    for asked in ({"detail": "node"}, {"launch_sources": True}, {"profile": True}):
        names = [c.name for c in plan_runs(**asked)]  # type: ignore[arg-type]
        assert names == ["measure", "detail", "probe"], asked  # the light run times, the detail run adds what was asked
        assert plan_runs(**asked)[0].api_filter == "needed" and plan_runs(**asked)[0].stamp == ""  # type: ignore[arg-type]
    assert [c.name for c in plan_runs(ranked=True)] == ["single"]  # ranks would re-rendezvous for a second run
    assert plan_runs(ranked=True)[0] == single
    assert [c.name for c in plan_runs(runs="2", ranked=True)] == ["measure", "detail"]
    assert plan_runs(runs="1") == [single]
    heavy = plan_runs(detail="node", ranked=True)[0]  # asked for node detail in one run: the detail run's configuration
    assert heavy.detail == "node" and heavy.api_filter == "all" and heavy.node_events
    with pytest.raises(ValueError, match="'full'"):
        plan_runs(runs="3")


def test_a_region_records_its_graph_replays_from_their_nodes() -> None:
    """`graphmode.trace()` attaches CUPTI to a program that may have instantiated its graphs already; under GRAPH_TRACE,
    CUPTI 13.0 crashed such a graph's replay (benchmarks/notes/s22, call 3). Its configurations, asked for more or
    not, fold each replay from its nodes' records instead; `graphmode run`'s runs, which attach before the program
    starts, keep GRAPH_TRACE. A RunConfig read back from an older trace's meta (no such field) is GRAPH_TRACE's."""
    from dataclasses import asdict

    from graphmode.analyzers.run_plan import plan_runs
    from graphmode.tracer.run_configs import MEASURE, RunConfig, region_config, session_kwargs

    for asked in ({}, {"detail": "node"}, {"launch_sources": True}, {"profile": True}, {"sources": True}):
        cfg = region_config(**asked)  # type: ignore[arg-type]
        assert cfg.graph_trace is False and session_kwargs(cfg)["graph_trace"] is False, asked
    assert {k: v for k, v in asdict(region_config()).items() if k != "graph_trace"} == \
        {k: v for k, v in asdict(MEASURE).items() if k != "graph_trace"}  # otherwise the measuring run's records
    assert region_config(detail="node").detail == "node" and region_config(detail="node").node_events
    assert all(c.graph_trace for c in plan_runs() + plan_runs(detail="node") + plan_runs(ranked=True))
    old = {k: v for k, v in asdict(MEASURE).items() if k != "graph_trace"}
    assert RunConfig(**old).graph_trace is True


def test_a_script_that_built_no_graph_gets_the_timing_run_on_python_312(monkeypatch: pytest.MonkeyPatch) -> None:
    """issues 29-30: on Python 3.12+ (line stamps), a script that built no graph gets the timing run right after the one
    traced run, which recorded its launches and stamped its lines (no detail run: two runs); a script that built graphs
    does not ('eager_only'); the probe run stays last, made only where the timing run was not."""
    from graphmode.analyzers.run_plan import plan_runs
    from graphmode.tracer import line_stamps

    monkeypatch.setattr(line_stamps, "AVAILABLE", True)
    plan = plan_runs()
    assert [(c.name, c.when, c.stamp) for c in plan] == [("single", "", "all"), ("timing", "eager_only", "lines"),
                                                         ("probe", "", "")]
    assert not plan[1].cupti and plan[1].stamp_lines == ()  # its lines are decided after the one run
    assert [c.api_filter for c in plan_runs(runs="full")] == ["sparse", "all", "none", "none"]  # asked-for runs keep 'all'
    monkeypatch.setattr(line_stamps, "AVAILABLE", False)
    assert [(c.name, c.stamp) for c in plan_runs()] == [("single", ""), ("probe", "")]


def test_a_script_that_built_no_graph_gets_its_timing_run(tmp_path: Path) -> None:
    """SYNTHETIC traces: the timing run planned 'eager_only' is made after a first run that instantiated no graph and
    ran kernels (a loop to predict a graph for), not after one that built a graph or ran no kernel."""
    from graphmode.analyzers.run_plan import built_no_graph
    from graphmode.tracer.store import load

    for instantiates, kernels, wanted in ((0, True, True), (1, True, False), (0, False, False)):
        path = _script_trace(tmp_path / f"t{instantiates}{kernels}.gmtrace", instantiates=instantiates, kernels=kernels)
        with load(path) as t:
            assert built_no_graph(t) is wanted, (instantiates, kernels)


def test_the_one_run_times_and_a_later_detail_run_gives_the_structure(tmp_path: Path) -> None:
    """SYNTHETIC: a trace of the one traced run ('single', pass 0) and a detail run (pass 1): the detail pass gives
    the structure, the one run the times; the one run alone is both."""
    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import SyntheticTrace

    from graphmode.analyzers.script_graphs import choose_passes
    from graphmode.tracer.store import load

    both = SyntheticTrace().add_pass(0, "graph", name="single").add_pass(1, "graph", name="detail").write(tmp_path / "b.gmtrace")
    with load(both) as t:
        structure, timing = choose_passes(t)
        assert structure is not None and timing is not None and (structure.name, timing.name) == ("detail", "single")
    alone = SyntheticTrace().add_pass(0, "graph", name="single").write(tmp_path / "a.gmtrace")
    with load(alone) as t:
        structure, timing = choose_passes(t)
        assert structure is not None and timing is not None and (structure.pass_id, timing.pass_id) == (0, 0)


def _script_trace(path: Path, instantiates: int = 0, measuring_s: float = 2.0, kernels: bool = True) -> Path:
    """A SYNTHETIC two-run script trace: measuring pass 0 lasting `measuring_s` with a kernel (unless not `kernels`)
    and `instantiates` graph instantiate calls, a detail pass 1."""
    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import SyntheticTrace

    t = SyntheticTrace().add_pass(0, "graph").add_pass(1, "graph")
    corr = t.api(0, "cudaLaunchKernel", "kernel_launch", 1_000, 2_000)
    if kernels:
        t.span(0, "K", 3_000, 4_000, corr)
    t.api(0, "cudaStreamSynchronize", "sync", int(measuring_s * 1e9) - 1_000, int(measuring_s * 1e9))
    for i in range(instantiates):
        t.api(0, "cudaGraphInstantiate", "instantiate", 5_000 + i * 1_000, 5_500 + i * 1_000)
    t.api(1, "cudaLaunchKernel", "kernel_launch", 1_000, 2_000)
    return t.write(path)


def test_auto_plans_a_probe_run_last_and_only_auto() -> None:
    from graphmode.analyzers.run_plan import plan_runs

    assert plan_runs()[-1] == PROBE_RUN and not PROBE_RUN.cupti and plan_runs(runs="full")[-1] == PROBE_RUN
    assert PROBE_RUN not in plan_runs(runs="2") and PROBE_RUN not in plan_runs(runs="1") and PROBE_RUN not in plan_runs(ranked=True)


def test_the_probe_run_is_made_for_a_short_eager_only_script_and_not_otherwise(tmp_path: Path) -> None:
    """SYNTHETIC traces: an eager-only script whose measuring run took 2 s wants the probe run (None); one that
    instantiated a graph does not (its own first graph is measured); nor one whose trace already has a probe (the
    timing run's), nor one that ran no kernel; a PyTorch program does (its probe run times torch.cuda.graph's first
    capture in its process), unless it recorded cudagraph trees; one whose measuring run took 90 s
    (> PROBE_RUN_MAX_S) does not, and the user is told why."""
    import duckdb

    from graphmode.analyzers.run_plan import PROBE_RUN_MAX_S, ProbeRunSkipped, probe_run_wanted
    from graphmode.reports.run_notes import probe_run_note
    from graphmode.tracer.script import _UNREADABLE, _decided

    def why(path: Path) -> object | None:  # as run_script asks it of the trace so far
        return _decided(path, probe_run_wanted, _UNREADABLE)

    assert why(_script_trace(tmp_path / "eager.gmtrace")) is None
    assert why(_script_trace(tmp_path / "graph.gmtrace", instantiates=1)) == ProbeRunSkipped("own_graphs")
    probed = _script_trace(tmp_path / "probed.gmtrace")
    con = duckdb.connect(str(probed))
    con.execute("INSERT INTO meta VALUES ('first_graph_probe', '{\"extra_ns\": 1.0}')")
    con.close()
    assert why(probed) == ProbeRunSkipped("probed")
    assert PROBE_RUN_MAX_S == 60.0
    long = why(_script_trace(tmp_path / "long.gmtrace", measuring_s=90.0))
    assert isinstance(long, ProbeRunSkipped) and long.kind == "too_long" and long.limit_s == 60.0
    assert abs(long.measuring_s - 90.0) < 1e-3  # pass 0 spans the synthetic API calls: 1 us to 90 s
    note = probe_run_note(long)
    assert note is not None and note.startswith("no probe run (the measuring run took 90 s, over 60 s)")
    assert why(tmp_path / "missing.gmtrace") is _UNREADABLE  # run_script then makes no probe run and says nothing
    assert why(_script_trace(tmp_path / "cpu.gmtrace", kernels=False)) == ProbeRunSkipped("no_kernels")  # nothing to predict
    torch = _script_trace(tmp_path / "torch.gmtrace")
    con = duckdb.connect(str(torch))
    con.execute("INSERT INTO meta VALUES ('torch', '{\"version\": \"2.11.0\"}')")
    con.close()
    assert why(torch) is None  # a PyTorch program: the probe run times torch.cuda.graph in its process
    trees = _script_trace(tmp_path / "trees.gmtrace")
    con = duckdb.connect(str(trees))
    con.execute("INSERT INTO meta VALUES ('torch', ?)", ['{"version": "2.11.0", "events": {"kind": ["start_cudagraph_recording"]}}'])
    con.close()
    assert why(trees) == ProbeRunSkipped("trees")  # cudagraph trees keep the calibration's tree probe
    # only the long run is told to the user; the other reasons are silent
    assert [probe_run_note(w) for w in (None, ProbeRunSkipped("probed"), ProbeRunSkipped("own_graphs"),
                                        ProbeRunSkipped("no_kernels"), ProbeRunSkipped("trees"))] == [None] * 5


def test_the_probe_run_writes_its_probe_and_its_run_and_no_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe run of an eager-only script (no GPU here: a stand-in for tracer.first_graph_probe that says 250 us)
    through run_in_this_process: the trace gains meta.first_graph_probe, with the run that measured it and the graphs the
    code instantiated before (none), and a meta.runs entry; its passes stay the measuring and detail runs'."""
    import graphmode.tracer.script as s
    from graphmode.tracer.store import load

    trace = _script_trace(tmp_path / "t.gmtrace")
    monkeypatch.setattr(s, "_probe_first_graph", lambda: {"extra_ns": 250_000.0})
    script = tmp_path / "program.py"
    script.write_text("x = 1\n")
    assert s.run_in_this_process(script, [], trace, PROBE_RUN, append=True, pass_id=3) == 0
    with load(trace) as t:
        assert t.meta["first_graph_probe"] == {"extra_ns": 250_000.0, "run": "probe", "execs_before": 0}
        assert [r["config"]["name"] for r in t.meta["runs"]] == ["probe"] and t.meta["runs"][0]["pass_id"] == 3
        assert [p.pass_id for p in t.passes] == [0, 1]
    failed = _script_trace(tmp_path / "failed.gmtrace")
    script.write_text("raise SystemExit(2)\n")
    assert s.run_in_this_process(script, [], failed, PROBE_RUN, append=True, pass_id=3) == 2
    with load(failed) as t:
        assert "first_graph_probe" not in t.meta and t.meta["runs"][0]["status"] == "failed"


def test_the_timing_run_ends_with_the_first_graph_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timing run is untraced too: where it is made, its process measures the first graph's extra (a stand-in for
    tracer.first_graph_probe here, no GPU), and the probe run is then not wanted."""
    import graphmode.tracer.script as s
    from graphmode.tracer.store import load

    trace = _script_trace(tmp_path / "t.gmtrace")
    monkeypatch.setattr(s, "_probe_first_graph", lambda: {"extra_ns": 123_000.0})
    script = tmp_path / "program.py"
    script.write_text("x = 1\n")
    assert s.run_in_this_process(script, [], trace, timing_config(()), append=True, pass_id=2) == 0
    with load(trace) as t:
        assert t.meta["first_graph_probe"] == {"extra_ns": 123_000.0, "run": "timing", "execs_before": 0}
    from graphmode.analyzers.run_plan import ProbeRunSkipped, probe_run_wanted

    with load(trace) as t:
        assert probe_run_wanted(t) == ProbeRunSkipped("probed")


def test_a_long_script_that_built_no_graph_is_run_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 29: `auto` plans the timing run for a script that built no graph, but not for one whose first run took over
    TIMING_RUN_MAX_S (60 s): it is run once (no probe run either: PROBE_RUN_MAX_S), and the user is told why and what
    to run. run_script with
    the analyzers' decisions; each run a stand-in that writes a SYNTHETIC trace of 2 s or 90 s (no GPU here)."""
    from graphmode.analyzers.run_plan import DECISIONS, TIMING_RUN_MAX_S, TimingRunSkipped, plan_runs, timing_run_wanted
    from graphmode.reports.run_notes import timing_run_note
    from graphmode.tracer import line_stamps
    from graphmode.tracer import script as script_module
    from graphmode.tracer.store import load

    monkeypatch.setattr(line_stamps, "AVAILABLE", True)
    script = tmp_path / "loop.py"
    script.write_text("pass\n")
    for seconds, runs in ((2.0, ["single", "timing"]), (90.0, ["single"])):
        made: list[str] = []

        def child(config: Any, path: Path, args: list[str], out: Path, append: bool, pass_id: int,
                  seconds: float = seconds) -> tuple[int, dict[str, Any]]:
            made.append(config.name)
            if pass_id == 0:
                _script_trace(out, measuring_s=seconds)
            if config.name == "timing":  # the timing run ends with the first-graph probe (no probe run after it)
                import duckdb

                con = duckdb.connect(str(out))
                con.execute("INSERT INTO meta VALUES ('first_graph_probe', '{\"extra_ns\": 1.0}')")
                con.close()
            return 0, {"path": str(out)}

        monkeypatch.setattr(script_module, "_run_child", child)
        decide = dataclasses.replace(DECISIONS, lines_to_time=lambda trace: ["loop.py:1"])  # a line to stamp
        done = script_module.run_script(script, [], tmp_path / f"t{seconds:.0f}.gmtrace", plan_runs(), decide)
        assert made == runs, seconds
        if seconds > TIMING_RUN_MAX_S:
            assert isinstance(done.timing_skipped, TimingRunSkipped) and abs(done.timing_skipped.measuring_s - 90.0) < 1e-3
            note = timing_run_note(done.timing_skipped)
            assert note is not None and note.startswith("no timing run (the first run took 90 s, over 60 s")
            assert "--runs full" in note
            with load(done.path) as t:
                assert timing_run_wanted(t) == done.timing_skipped
        else:
            assert done.timing_skipped is None and timing_run_note(done.timing_skipped) is None


def test_graphmode_run_goes_on_once_a_run_wrote_its_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 29 (benchmarks/notes/s20, call 3: a run's process took 1.1-1.5 s to end after its trace was closed):
    _run_child returns when the run's process says its trace is written (its exit code with it), the process still
    ending; finish_runs waits for it. A stand-in process (no GPU here) writes the result, then takes 1.5 s to end."""
    import subprocess
    import time

    from graphmode.tracer import script as script_module
    from graphmode.tracer.run_configs import single_config

    stand_in = ("import json, sys, time; spec = json.loads(sys.argv[1]); "
                "open(spec['result'], 'w').write(json.dumps({'path': spec['out'], 'exit_code': 3})); time.sleep(1.5)")
    real_popen = subprocess.Popen

    def popen(cmd: list[str], **kw: Any) -> Any:
        return real_popen([cmd[0], "-c", stand_in, cmd[3]], **kw)

    monkeypatch.setattr(script_module.subprocess, "Popen", popen)
    t0 = time.perf_counter()
    status, said = script_module._run_child(single_config(), tmp_path / "s.py", [], tmp_path / "t.gmtrace", False, 0)
    returned = time.perf_counter() - t0
    assert (status, said["path"]) == (3, str(tmp_path / "t.gmtrace"))
    assert returned < 1.4 and len(script_module._EXITING) == 1
    script_module.finish_runs()
    assert time.perf_counter() - t0 >= 1.5 and script_module._EXITING == []


def test_sigterm_while_the_tracer_starts_writes_the_trace_interrupted(tmp_path: Path) -> None:
    """SIGTERM in the second or so of the tracer's start (its trace file open, CUPTI attaching) used to take SIGTERM's
    default action and leave the trace 'recording'. Now it waits for the start to end; the script is then not run, the
    trace is written 'interrupted' and the run exits 143. A stand-in tracer (no GPU) whose start takes 1 s."""
    written, ran = tmp_path / "written.json", tmp_path / "ran"
    script = tmp_path / "program.py"
    script.write_text(f"open({str(ran)!r}, 'w').close()\n")
    proc = _stand_in_run(tmp_path, script, written, start="print('starting', flush=True); time.sleep(1.0)")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "starting"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    import json

    assert json.loads(written.read_text()) == {"status": "interrupted",
                                               "reason": "terminated (SIGTERM) before the script started"}
    assert not ran.exists()


def test_sigterm_deferred_notes_a_sigterm_and_restores_the_handler() -> None:
    """tracer.signals.sigterm_deferred: a SIGTERM inside the block is noted (the process lives on) and the previous
    handler is back after it."""
    from graphmode.tracer.signals import sigterm_deferred

    before = signal.getsignal(signal.SIGTERM)
    with sigterm_deferred() as pending:
        assert not pending()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert pending()
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_tracer_that_fails_to_start_writes_nothing_and_leaves_the_process_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A start that raises (NoGpuError on a machine without a GPU) reaches the caller as it is: no trace is written
    (stop is not called), the script is not run, and sys.argv, sys.path and the SIGTERM handler are as before."""
    import graphmode.tracer.script as s

    calls: list[str] = []

    class StandIn:
        def __init__(self, *a: Any, **k: Any) -> None:
            pass

        def start(self) -> None:
            raise RuntimeError("no GPU here")

        def stop(self, *a: Any, **k: Any) -> Path:
            calls.append("stop")
            return tmp_path / "t.gmtrace"

    monkeypatch.setattr(s, "ScriptTracer", StandIn)
    monkeypatch.setattr(s, "TimingTracer", StandIn)
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    argv, path, handler = sys.argv[:], sys.path[:], signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError, match="no GPU here"):
        s.run_in_this_process(script, [], tmp_path / "t.gmtrace")
    assert calls == [] and not (tmp_path / "ran").exists()
    assert (sys.argv, sys.path, signal.getsignal(signal.SIGTERM)) == (argv, path, handler)
