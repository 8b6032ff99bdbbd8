"""`graphmode run` on program shapes that used to lose the trace or mislead, on a real GPU (marker `gpu`).

    python3 -m pytest -m gpu -q tests/test_gpu_store.py

Each program is written here into the test's folder:
- a graph of memset nodes only (no kernel), replayed, whose cuGraphExecUpdate with a changed
  topology fails with CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE (910), then is instantiated again;
- a script that runs torch.profiler with CUDA activity under graphmode;
- a run whose trace goes to a tiny tmpfs (no room at start; the disk filling up mid-way);
- a run killed with SIGKILL while the program runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from graphmode.tracer.errors import TraceInUseError
from graphmode.tracer.store import load
from graphmode.tracer.validate import validate_trace
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu

ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

MEMSET_GRAPHS = textwrap.dedent('''
    from cuda.bindings import driver as cu

    def ok(result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"CUDA error {err}")
        return rest[0] if len(rest) == 1 else rest

    ok(cu.cuInit(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
    ok(cu.cuCtxSetCurrent(ctx))
    buf = ok(cu.cuMemAlloc(1 << 16))
    stream = ok(cu.cuStreamCreate(0))

    def memset_graph(n):
        g = ok(cu.cuGraphCreate(0))
        prev = []
        for i in range(n):
            p = cu.CUDA_MEMSET_NODE_PARAMS()
            p.dst, p.pitch, p.value, p.elementSize, p.width, p.height = int(buf) + 1024 * i, 0, i, 4, 256, 1
            prev = [ok(cu.cuGraphAddMemsetNode(g, prev, len(prev), p, ctx))]
        return g

    exe = ok(cu.cuGraphInstantiate(memset_graph(2), 0))
    for _ in range(5):
        ok(cu.cuGraphLaunch(exe, stream))
    ok(cu.cuStreamSynchronize(stream))
    g2 = memset_graph(3)
    err = cu.cuGraphExecUpdate(exe, g2)[0]
    print("update returned", int(err))
    assert int(err) == 910, err  # CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: the topology changed
    exe2 = ok(cu.cuGraphInstantiate(g2, 0))
    for _ in range(5):
        ok(cu.cuGraphLaunch(exe2, stream))
    ok(cu.cuStreamSynchronize(stream))
    print("memset graphs ok")
''')

TORCH_PROFILER = textwrap.dedent('''
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(1 << 16, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            x = x * 1.0001
        torch.cuda.synchronize()
    cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    print("torch.profiler CUDA events:", len(cuda))
''')

SLEEPER = textwrap.dedent('''
    import sys, time
    from cuda.bindings import driver as cu
    cu.cuInit(0)
    ctx = cu.cuDevicePrimaryCtxRetain(cu.cuDeviceGet(0)[1])[1]
    cu.cuCtxSetCurrent(ctx)
    buf = cu.cuMemAlloc(1 << 20)[1]
    for _ in range(100):
        cu.cuMemsetD8(buf, 1, 1 << 20)
    cu.cuCtxSynchronize()
    print("ready", flush=True)
    time.sleep(120)
''')


def _run(tmp: Path, source: str, out: Path, *options: str, env: dict[str, str] | None = None,
         timeout: int = 300) -> subprocess.CompletedProcess[str]:
    script = tmp / "program.py"
    script.write_text(source)
    return subprocess.run([sys.executable, "-m", "graphmode", "run", "--out", str(out), *options, str(script)],
                          cwd=tmp, env=env or ENV, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("runs", "detail"), [("2", "graph"), ("2", "node"), ("auto", "graph")])
def test_graphs_without_kernels_and_a_failed_update(tmp_path: Path, runs: str, detail: str) -> None:
    """`--runs 2` (a measuring run, which names no graph, then the detail run) and the default one traced run: the two
    explicit memset graphs, the failed update, one pass naming the graphs and 10 launches in each run."""
    out = tmp_path / "memset.gmtrace"
    proc = _run(tmp_path, MEMSET_GRAPHS, out, "--runs", runs, "--detail", detail)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "memset graphs ok" in proc.stdout and "Traceback" not in proc.stderr
    passes = [0, 1] if runs == "2" else [0]
    with load(out) as t:
        assert t.meta["status"] == "complete" and validate_trace(t) == []
        assert [p.pass_id for p in t.passes] == passes
        assert t.rows("SELECT count(*), sum(num_nodes) FROM graphs WHERE origin = 'explicit'") == [(2, 5)]
        assert t.rows("SELECT DISTINCT node_type FROM graph_nodes") == [("memset",)]
        events = t.rows("SELECT event, return_code FROM graph_events WHERE event <> 'launch' ORDER BY start_ns")
        assert ("update", 910) in events
        assert [e for e, _ in events if e == "instantiate"] == ["instantiate", "instantiate"]
        # 10 launches in each run
        assert t.rows("SELECT pass_id, count(*) FROM graph_events WHERE event = 'launch' GROUP BY 1 ORDER BY 1") == [(p, 10) for p in passes]
        update_graph = t.rows("SELECT graph_id FROM graph_events WHERE event = 'update'")[0][0]
        first_graph = t.rows("SELECT graph_id FROM graph_events WHERE event = 'instantiate' ORDER BY start_ns LIMIT 1")[0][0]
        assert update_graph == first_graph  # the update concerns the executable it tried to change
    report = subprocess.run([sys.executable, "-m", "graphmode", "report", str(out)], cwd=tmp_path, env=ENV,
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and "Traceback" not in report.stderr


def test_the_programs_own_torch_profiler_is_warned_about_and_noted(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "prof.gmtrace"
    proc = _run(tmp_path, TORCH_PROFILER, out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "program.py imports torch.profiler (Kineto) (line 3)" in proc.stderr  # before the run
    events = int(proc.stdout.split("torch.profiler CUDA events:")[1].split()[0])
    with load(out) as t:
        notes = t.meta.get("notes", [])
    noted = [n for n in notes if "torch's profiler with CUDA activity" in n]
    # the program's profiler was started once with CUDA activity; if Kineto got no CUPTI, it has no GPU event
    assert len(noted) == 1 and events == 0, (notes, events, proc.stderr[-2000:])
    report = subprocess.run([sys.executable, "-m", "graphmode", "report", str(out)], cwd=tmp_path,
                            env={**ENV, "COLUMNS": "300"}, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and "torch's profiler with CUDA activity" in report.stdout


def _tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")


def test_no_room_for_the_trace_is_said_before_the_program_runs(tmp_path: Path) -> None:
    disk = tmp_path / "tiny"
    _tmpfs(disk, "200k")
    try:
        proc = _run(tmp_path, MEMSET_GRAPHS, disk / "t.gmtrace")
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "free on the disk holding" in proc.stderr and "GRAPHMODE_MIN_FREE_MB" in proc.stderr
        assert "memset graphs ok" not in proc.stdout  # refused before the program ran
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_disk_filling_up_during_the_run_keeps_the_trace(tmp_path: Path) -> None:
    disk = tmp_path / "tiny"
    _tmpfs(disk, "200k")
    try:
        out = disk / "t.gmtrace"
        proc = _run(tmp_path, MEMSET_GRAPHS, out, "--detail", "node", env={**ENV, "GRAPHMODE_MIN_FREE_MB": "0"})
        assert "Traceback" not in proc.stderr and "TransactionException" not in proc.stderr, proc.stderr[-3000:]
        assert "memset graphs ok" in proc.stdout
        if proc.returncode == 0:  # moved to the temporary folder, and said so
            assert f"no space left to write {out}" in proc.stderr and "the trace continues in" in proc.stderr
            moved = Path(proc.stderr.split("the trace continues in ")[1].split()[0])
            assert moved.parent == Path(tempfile.gettempdir())
            with load(moved) as t:
                assert t.meta["status"] == "complete" and t.meta["relocated_from"] == str(out)
                assert t.count("graph_events") > 0
            moved.unlink()
        else:  # nowhere to go: one clear line that says what was kept
            assert proc.returncode == 1 and "No space left on device" in proc.stderr
            assert "keeps what was written before" in proc.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=False)


@pytest.mark.parametrize("killed", ["graphmode", "all"])
def test_sigkill_leaves_a_readable_trace(tmp_path: Path, killed: str) -> None:
    """kill -9 of `graphmode run` alone: its run gets SIGTERM, stops the script and closes the trace as
    'interrupted' (not left running, orphaned, with the file locked). kill -9 of the whole process group: the
    trace is readable as it was, marked 'recording'."""
    out = tmp_path / "killed.gmtrace"
    script = tmp_path / "program.py"
    script.write_text(SLEEPER)
    proc = subprocess.Popen([sys.executable, "-m", "graphmode", "run", "--out", str(out), str(script)], cwd=tmp_path,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        deadline = time.time() + 120
        while time.time() < deadline and proc.stdout.readline().strip() != "ready":
            pass
        if killed == "graphmode":
            os.kill(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    status = "interrupted" if killed == "graphmode" else "recording"
    deadline = time.time() + 60
    while True:  # the run closes its trace within moments of its parent's death
        try:
            with load(out) as t:
                meta = dict(t.meta)
            if meta["status"] == "recording" != status and time.time() < deadline:
                time.sleep(0.5)  # read between two of the run's writes, before it heard SIGTERM and closed the trace
                continue
            if meta["status"] != status and proc.stderr is not None:  # what graphmode's run said as it ended
                meta["stderr"] = proc.stderr.read()[-3000:]
            assert meta["status"] == status and meta["workload"] == "script", meta
            break
        except TraceInUseError:
            assert time.time() < deadline, "the orphaned run still holds the trace a minute after graphmode was killed"
            time.sleep(0.5)
    if killed == "graphmode":
        with load(out) as t:
            assert "terminated (SIGTERM)" in t.meta["status_reason"]
    info = subprocess.run([sys.executable, "-m", "graphmode", "info", str(out)], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0 and f"run status: {status}" in info.stdout
    report = subprocess.run([sys.executable, "-m", "graphmode", "report", str(out)], cwd=tmp_path, env=ENV,
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0 and f"did not complete (status '{status}'" in " ".join(report.stdout.split())

def test_sigterm_stops_a_bench_and_keeps_what_it_recorded(tmp_path: Path) -> None:
    """`graphmode bench` stopped by SIGTERM (kill, a scheduler's time limit) ends as on Ctrl-C (tracer.signals): exit
    143, the trace closed 'interrupted' with the reason, not left 'recording' by SIGTERM's default action."""
    out = tmp_path / "bench.gmtrace"
    proc = subprocess.Popen([sys.executable, "-m", "graphmode", "bench", "chain", "-n", "200000", "--no-report", "--out", str(out)],
                            cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not out.exists():
            time.sleep(0.2)
        time.sleep(3.0)  # inside the first pass's eager loops (200,000 iterations each)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-2000:]
    assert "terminated (SIGTERM)" in err
    with load(out) as t:
        assert (t.meta["status"], t.meta["status_reason"]) == ("interrupted", "terminated (SIGTERM)")
