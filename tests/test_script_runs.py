"""How `graphmode run` starts and guards its runs, without a GPU: what is refused before the program runs,
and a run that stops when the `graphmode run` process that started it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphmode.tracer.errors import OutputPathError, StorageError
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
    driver = textwrap.dedent(f"""
        import json, sys, time
        from pathlib import Path
        import graphmode.tracer.script as s

        class StandIn:
            def __init__(self, *a, **k): pass
            def start(self): pass
            def stop(self, status, reason, extra=None):
                time.sleep(0.5)
                Path({str(written)!r}).write_text(json.dumps({{"status": status, "reason": reason}}))
                return Path({str(tmp_path / "t.gmtrace")!r})

        s.ScriptTracer = s.TimingTracer = StandIn
        sys.exit(s.run_in_this_process({str(script)!r}, [], {str(tmp_path / "t.gmtrace")!r}))
    """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-c", driver], env=env, stdout=subprocess.PIPE, text=True)
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


def test_one_rank_of_a_job_is_run_once_unless_asked_for_two() -> None:
    from graphmode.tracer.script import plan_runs

    assert [c.name for c in plan_runs()][:2] == ["measure", "detail"]  # (+ 'timing' on Python 3.12: tests/test_untraced.py)
    assert [c.name for c in plan_runs(ranked=True)] == ["single"]  # ranks would re-rendezvous for a second run
    assert [c.name for c in plan_runs(runs="2", ranked=True)] == ["measure", "detail"]
    assert [c.name for c in plan_runs(runs="1")] == ["single"]
    single = plan_runs(detail="node", ranked=True)[0]
    assert single.detail == "node" and single.api_filter == "all" and single.node_events
