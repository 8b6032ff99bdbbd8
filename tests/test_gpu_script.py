"""`graphmode run` and the Python API on the examples, on a real GPU (marker `gpu`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_module
from graphmode.tracer.store import Trace, load
from graphmode.tracer.validate import validate_trace

pytestmark = pytest.mark.gpu
EXAMPLES = ROOT / "examples"


def _marked_lines(example: str, tag: str) -> set[int]:
    lines = (EXAMPLES / example).read_text().splitlines()
    return {i + 1 for i, line in enumerate(lines) if f"# {tag}" in line}


def _graphmode_run(tmp: Path, example: str, *args: str, expect: int = 0,
                   options: tuple[str, ...] = ()) -> tuple[Trace, subprocess.CompletedProcess[str]]:
    """`graphmode run [options] examples/<example> [args]`: args after the script are the script's. Without a --runs
    option, `--runs full` (measuring, detail, timing and probe runs): most tests here check what the detail and timing
    runs record; the default one traced run has tests of its own (test_one_traced_run_*)."""
    out = tmp / (Path(example).stem + ".gmtrace")
    if "--runs" not in options:
        options = ("--runs", "full", *options)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "graphmode", "run", "--out", str(out), *options,
                           str(EXAMPLES / example), *args],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == expect, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert out.exists() and out.with_suffix(".html").exists()
    return load(out), proc


needs_torch = needs_module("torch", "PyTorch")


@pytest.fixture(scope="module")
def torch_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trace, subprocess.CompletedProcess[str]]:
    return _graphmode_run(tmp_path_factory.mktemp("torch"), "torch_cudagraph.py", "--steps", "50", options=("--sources",))


@needs_torch
def test_torch_graph_found_with_its_lifecycle(torch_graph: tuple[Trace, subprocess.CompletedProcess[str]]) -> None:
    t, proc = torch_graph
    runs = [(p.pass_id, p.name, p.status) for p in t.passes]
    assert proc.stdout.count("ok: 50 eager steps and 50 replays") == len(runs)  # every run's output passes through
    assert t.meta["status"] == "complete" and t.meta["script"]["exit_code"] == 0
    assert runs[:2] == [(0, "measure", "complete"), (1, "detail", "complete")]
    # Python 3.12+: a third run without CUPTI when the two find CPU-bound iterations (its eager loop is)
    assert runs[2:] == ([(2, "timing", "complete")] if sys.version_info >= (3, 12) else [])
    assert validate_trace(t) == []
    assert not t.meta.get("callback_errors"), t.meta.get("callback_errors")
    # The detail run knows the graph (callbacks): what it was built from and its lifecycle.
    graphs = t.rows("SELECT graph_id, origin, num_nodes FROM graphs WHERE origin <> 'unknown' AND pass_id = 1")
    assert len(graphs) == 1 and graphs[0][1] == "capture" and graphs[0][2] >= 3
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id=? AND pass_id=1 GROUP BY 1", [graphs[0][0]]))
    assert ev["capture"] == 1 and ev["instantiate"] == 1 and ev["launch"] == 50
    # The measuring run has no callback: its 50 launches, and the lifecycle calls the detail run's are mapped onto.
    assert t.rows("SELECT count(*) FROM graph_events WHERE event = 'launch' AND pass_id = 0") == [(50,)]
    calls = dict(t.rows("SELECT regexp_extract(name, '^cuda([A-Za-z]+)', 1), count(*) FROM api_calls WHERE pass_id = 0 GROUP BY 1"))
    assert calls["StreamBeginCapture"] == calls["StreamEndCapture"] == calls["GraphInstantiateWithFlags"] == 1, calls
    # The measuring run heard the `with torch.cuda.graph(g):` block (tracer.torch_hooks): PyTorch's own work around
    # the capture (its synchronize, empty_cache, memory pool) is in the graph's one-time cost.
    kinds = ((t.meta["runs"][0].get("torch") or {}).get("events") or {}).get("kind") or []
    assert kinds.count("start_cuda_graph_block") == kinds.count("end_cuda_graph_block") == 1, kinds
    from graphmode.analyzers import analyze

    (g,) = [g for g in analyze(t).graphs if g.status == "replayed"]
    assert g.cost is not None and g.cost.framework_ns is not None and g.cost.framework_ns > 0


@needs_torch
def test_measuring_run_records_only_the_calls_the_analysis_reads(torch_graph: tuple[Trace, subprocess.CompletedProcess[str]]) -> None:
    t, _ = torch_graph
    from graphmode.tracer.cupti_session import api_sparse

    measured = {n for (n,) in t.rows("SELECT DISTINCT name FROM api_calls WHERE pass_id = 0")}
    detailed = {n for (n,) in t.rows("SELECT DISTINCT name FROM api_calls WHERE pass_id = 1")}
    assert measured and all(api_sparse(n) for n in measured), sorted(n for n in measured if not api_sparse(n))
    assert any(not api_sparse(n) for n in detailed)  # e.g. cudaGetDevice, cudaLaunchKernel
    # kernel launches are left to their GPU records (recording the calls slowed launch-bound code)
    assert not any(n.startswith("cudaLaunchKernel") for n in measured) and any(n.startswith("cudaGraphLaunch") for n in measured)
    assert any(n.startswith("cudaLaunchKernel") for n in detailed)
    run = t.meta["runs"][0]
    assert run["config"]["api_filter"] == "sparse" and run["api_filter"]["runtime_off"] > 100


@needs_torch
def test_torch_graph_nodes_attributed_to_source_lines(torch_graph: tuple[Trace, subprocess.CompletedProcess[str]]) -> None:
    t, _ = torch_graph
    lines = _marked_lines("torch_cudagraph.py", "LINE")
    rows = t.rows("SELECT source FROM graph_nodes n JOIN graphs g USING (pass_id, graph_id) WHERE n.node_type='kernel' AND pass_id = 1")
    assert rows
    for (source,) in rows:
        m = re.match(r"(.*):(\d+) (\w+)$", source)
        assert m and m.group(1).endswith("torch_cudagraph.py") and int(m.group(2)) in lines, source
    assert {int(re.match(r".*:(\d+) ", s).group(1)) for (s,) in rows} == lines  # every marked line made a node


@needs_torch
def test_nvtx_ranges_recorded(torch_graph: tuple[Trace, subprocess.CompletedProcess[str]]) -> None:
    t, _ = torch_graph
    names = {n for (n,) in t.rows("SELECT name FROM markers WHERE kind='nvtx'")}
    assert {"eager loop", "replay loop"} <= names


@needs_torch
def test_iterations_inferred(torch_graph: tuple[Trace, subprocess.CompletedProcess[str]]) -> None:
    t, _ = torch_graph
    from graphmode.analyzers.script_analysis import find_iterations

    it = find_iterations(t, 0)
    graph = it.mode == "graph"
    assert int(graph.sum()) == 50
    eager = (it.mode == "eager") & (it.role == "steady")
    assert int(eager.sum()) == 50 and int(((it.mode == "eager") & (it.role == "warmup")).sum()) == 3


@needs_torch
def test_broken_capture_diagnosed(tmp_path: Path) -> None:
    t, proc = _graphmode_run(tmp_path, "broken_capture.py", expect=1)
    assert t.meta["status"] == "failed"
    exc = t.meta["script"]["exception"]
    assert any("capturing" in c["message"] or "capture" in c["message"] for c in exc["chain"])
    broken = _marked_lines("broken_capture.py", "BREAKS")
    assert any(f.endswith("broken_capture.py") and line in broken for f, line, _ in exc["frames"])
    failed = t.rows("SELECT name, return_code FROM api_calls WHERE return_code IN (900, 901, 904, 905, 906, 907, 908)")
    assert failed, "the capture error code should be on the failing API call"
    from graphmode.analyzers import analyze

    kinds = {p.kind for p in analyze(t).pitfalls}
    assert any("capture" in k for k in kinds), kinds


@needs_torch
def test_a_capture_that_breaks_in_the_one_runs_untraced_capture_is_still_diagnosed(tmp_path: Path) -> None:
    """The default run makes the process's first capture with CUPTI detached through PyTorch's capture_end (Python
    3.12+): when it breaks, CUPTI attaches again as capture_end raises; the trace is kept, the run says it failed,
    and the pitfall names the user's line from the exception."""
    t, proc = _graphmode_run(tmp_path, "broken_capture.py", expect=1, options=("--runs", "auto"))
    assert t.meta["status"] == "failed" and validate_trace(t) == []
    (run,) = t.meta["runs"]
    if sys.version_info >= (3, 12):
        (c,) = run["untraced_captures"]["captures"]
        assert c["reason"] in ("capture_end_failed", "capture_end") and c["graph_id"] == 0, run["untraced_captures"]
        assert not run["untraced_captures"].get("errors"), run["untraced_captures"]
    from graphmode.analyzers import analyze

    (p,) = [p for p in analyze(t).pitfalls if p.kind == "capture_failed"]
    broken = _marked_lines("broken_capture.py", "BREAKS")
    assert any(p.where.endswith(f"broken_capture.py:{line}") or f"broken_capture.py:{line}" in p.where for line in broken), p


@needs_torch
def test_torch_compile_records_graphs_again_on_new_shape(tmp_path: Path) -> None:
    t, _ = _graphmode_run(tmp_path, "torch_compile.py")
    n_graphs = t.rows("SELECT count(*) FROM graphs WHERE origin = 'capture'")[0][0]
    inst = t.rows("SELECT count(*) FROM graph_events WHERE event = 'instantiate'")[0][0]
    assert n_graphs >= 2 and inst >= 2
    # the measuring run heard each cudagraph-tree recording, and its PyTorch work is part of the one-time cost
    kinds = t.meta["runs"][0]["torch"]["events"]["kind"]
    assert kinds.count("start_cudagraph_recording") == kinds.count("end_cudagraph_recording") >= 2
    from graphmode.analyzers import analyze

    costs = [g.cost for g in analyze(t).graphs if g.cost is not None and g.cost.framework_ns is not None]
    assert len(costs) >= 2 and all(c.framework_ns is not None and c.framework_ns > 0 for c in costs)


@needs_torch
@pytest.mark.skipif(sys.version_info < (3, 12), reason="the one run's untraced capture goes with its windows (Python 3.12+)")
def test_the_one_run_leaves_torch_compiles_trees_traced(tmp_path: Path) -> None:
    """torch.compile(mode="reduce-overhead") in the default one run: the empty capture with which the cudagraph tree
    sets up its memory pool is the process's first graph; it is not made untraced (it would take the one untraced
    capture, tracer.script._tree_pool_capture), and once it exists no later capture may be (session 28, call 1): the
    trees' recordings are traced and corrected as before."""
    t, proc = _graphmode_run(tmp_path, "torch_compile.py", options=("--runs", "auto"))
    assert validate_trace(t) == [] and not t.meta.get("callback_errors"), t.meta.get("callback_errors")
    (run,) = t.meta["runs"]
    assert run["untraced_captures"]["captures"] == [] and not run["untraced_captures"].get("errors"), run
    from graphmode.analyzers import analyze

    costs = [g.cost for g in analyze(t).graphs if g.cost is not None and g.cost.total_ns > 0]
    assert costs and not any(c.capture_untraced for c in costs), costs


@needs_module("cupy", "CuPy")
def test_cupy_capture(tmp_path: Path) -> None:
    t, _ = _graphmode_run(tmp_path, "cupy_graph.py")
    graphs = t.rows("SELECT graph_id FROM graphs WHERE origin='capture'")
    assert len(graphs) == 1
    launches = t.rows("SELECT count(*) FROM graph_events WHERE event='launch' AND graph_id=?", [graphs[0][0]])
    assert launches[0][0] == 100
    assert validate_trace(t) == []


@needs_module("cupy", "CuPy")
def test_an_unsynchronized_eager_loop_is_found_between_runs_of_its_call_line(tmp_path: Path) -> None:
    """benchmarks/third_party/cupy_chain.py --eager-only: 10 warm-up steps, then 300 steps of 32 elementwise kernels
    (16 x multiply, add) called from one line, no synchronization until the end. On Python 3.12+ the detail run's line
    stamps give the step (analyzers.inference.loop_step): the timed loop's `step(x)` line, 32 kernels, found in every
    run (310 iterations with the warm-ups); the prediction's region is it."""
    from graphmode.analyzers import analyze

    if sys.version_info < (3, 12):
        pytest.skip("line stamps need Python 3.12+ (sys.monitoring)")
    prog = ROOT / "benchmarks" / "third_party" / "cupy_chain.py"
    t, _ = _graphmode_run(tmp_path, str(prog), "--eager-only")
    call_line = next(i for i, ln in enumerate(prog.read_text().splitlines(), 1)
                     if ln.strip() == "step(x)" and "range(args.iters)" in prog.read_text().splitlines()[i - 2])
    a = analyze(t)
    [r] = [r for r in a.prediction.regions if r.direction == "to_graph"]
    # the timed loop's `for` line or its `step(x)` line (both run once a step at the script's top level)
    assert r.basis.kind == "basis_line" and r.basis["line"] in (f"cupy_chain.py:{call_line - 1}", f"cupy_chain.py:{call_line}"), r.basis
    assert r.graph is not None and r.graph.kernels == 32 and r.iterations >= 300
    eager = a.mode("eager")
    assert eager is not None and eager.iterations >= 290
    assert r.eager_period is not None and r.eager_period.ns == pytest.approx(eager.wall.median)  # type: ignore[union-attr]


@needs_torch
def test_an_eager_pytorch_program_measures_torch_cuda_graphs_first_capture_in_its_process(tmp_path: Path) -> None:
    """benchmarks/bench_eager.py torch --step mlp: an 8-layer MLP step run eagerly (synchronized), no graph. The untraced
    run that ends `graphmode run` (the timing run, or the probe run) runs the calibration's torch probe in the program's
    process (tracer.first_graph_probe.probe_torch_capture), and the prediction takes torch.cuda.graph's first-capture
    work and the first graph's extra from it."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.costmodel import torch_capture_spreads
    from graphmode.analyzers.predict import _torch_probe_waited

    t, proc = _graphmode_run(tmp_path, str(ROOT / "benchmarks" / "bench_eager.py"), "torch", "--step", "mlp", "-n", "60", "--warmup", "10")
    probe = t.meta["first_graph_probe"]
    assert "error" not in probe, probe
    assert probe["run"] in ("timing", "probe") and probe["execs_before"] == 0 and f"+ {probe['run']} run" in proc.stderr
    torch_probe = probe["torch"]
    assert torch_probe["first_ns"] > 0 and len(torch_probe["instantiate_ns"]) >= 3 and 0 < probe["probe_ns"] < 30e9
    # each capture block's thread CPU time (never more than its wall time) and page faults (session 36)
    blocks, cpu = torch_probe["blocks_ns"], torch_probe["blocks_cpu_ns"]
    assert len(cpu) == len(blocks) == len(torch_probe["blocks_major_faults"]) == len(torch_probe["blocks_minor_faults"])
    assert all(0 < c <= b * 1.02 + 50e3 for b, c in zip(blocks, cpu)), (blocks, cpu)
    assert torch_probe["process_major_faults"] >= 0
    [r] = [r for r in analyze(t).prediction.regions if r.direction == "to_graph"]
    assert r.first_graph_from == "this_process"
    waited = _torch_probe_waited(t)  # a cold process's (a fresh machine's first): its wait left out
    if abs(blocks[0] - cpu[0]) < 0.1e6 or torch_probe["blocks_major_faults"][0] == 0:
        assert waited is None  # a block that worked all its time, or read nothing from disk, is as measured
    work = torch_capture_spreads([torch_probe])["first"].median  # its wait already left out (costmodel.cold_wait)
    assert work == pytest.approx(torch_probe["first_ns"] - (waited[0] if waited else 0.0))
    assert r.framework is not None and r.framework.ns == pytest.approx(work)


def test_cuda_python_capture_run(tmp_path: Path) -> None:
    t, _ = _graphmode_run(tmp_path, "cuda_python_capture.py", options=("--detail", "node"))
    assert [(p.name, p.detail) for p in t.passes][:2] == [("measure", "graph"), ("detail", "node")]
    assert {(p.name, p.detail) for p in t.passes[2:]} <= {("timing", "stamps")}
    (gid, n_nodes), = t.rows("SELECT graph_id, num_nodes FROM graphs WHERE origin='capture' AND pass_id = 1")
    assert n_nodes == 16
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id=? AND pass_id = 1 GROUP BY 1", [gid]))
    assert ev["launch"] == 200 and ev["upload"] == 1 and ev["instantiate"] == 1 and ev["capture"] == 1
    line = _marked_lines("cuda_python_capture.py", "LINE").pop()
    sources = {s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes WHERE graph_id=? AND pass_id = 1", [gid])}
    assert sources == {f"{EXAMPLES / 'cuda_python_capture.py'}:{line} step"}
    assert {n for (n,) in t.rows("SELECT DISTINCT name FROM graph_nodes WHERE graph_id=? AND pass_id = 1", [gid])} == {"axpb"}
    # the topology is read outside the program's calls (not inside its cuGraphInstantiate), and
    # graphmode's own reads are not reported as the program's calls
    own = t.rows("SELECT count(*) FROM api_calls WHERE name IN ('cuGraphGetNodes', 'cuGraphGetEdges', "
                 "'cuGraphNodeGetType', 'cuGraphKernelNodeGetParams', 'cuFuncGetName')")
    assert own[0][0] == 0
    # node detail: every replayed kernel carries a node id of the recorded topology
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE graph_id=? AND kind='kernel' AND pass_id = 1", [gid])[0][0] == 16 * 200
    assert validate_trace(t) == []


def test_exception_in_script_keeps_trace(tmp_path: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text("import sys\nprint('before', flush=True)\nraise ValueError('boom at step 3')\n")
    out = tmp_path / "boom.gmtrace"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "graphmode", "run", "--out", str(out), str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "before" in proc.stdout and "ValueError: boom at step 3" in proc.stderr
    t = load(out)
    assert t.meta["status"] == "failed" and "boom at step 3" in t.meta["status_reason"]
    assert t.meta["script"]["exception"]["frames"][-1][1] == 3


@needs_torch
def test_compare_torch_step(tmp_path: Path) -> None:
    import torch

    import graphmode

    w = torch.randn(256, 256, device="cuda") / 16
    x = torch.randn(16, 256, device="cuda")

    def step() -> torch.Tensor:
        h = x
        for _ in range(6):
            h = torch.relu(h @ w)
        return h

    c = graphmode.compare(step, iters=100, out=tmp_path / "cmp.gmtrace")
    assert c.outputs_match, c.verification
    assert c.eager_ns and c.graph_ns and c.one_time_ns and c.one_time_ns > 0
    assert c.saved_per_iteration_ns == pytest.approx(c.eager_ns - c.graph_ns)
    t = load(c.path)
    assert validate_trace(t) == []
    assert t.rows("SELECT count(*) FROM graphs")[0][0] == 2  # one per pass
    if c.break_even.replays is not None:
        be = c.break_even
        assert be.replays * be.eager_ns >= be.one_time_ns + be.replays * be.graph_ns


def test_compare_cuda_step_detects_wrong_graph(tmp_path: Path) -> None:
    """A step whose captured form computes something else must not be reported as equal."""
    import numpy as np

    import graphmode
    from graphmode.tracer import cuda_util

    cuda_util.init_device()
    from cuda.bindings import driver as cu

    n = 1024
    d = cuda_util.alloc(n * 4)
    calls = {"n": 0}

    def step(stream) -> None:  # eager calls write 1.0; the call made during capture writes 2.0
        calls["n"] += 1
        value = 2.0 if calls["n"] == 1 + 5 + 50 else 1.0
        cuda_util.check(cu.cuMemsetD32Async(d, int(np.float32(value).view(np.uint32)), n, stream))

    def outputs() -> list:
        return [cuda_util.dtoh(np.empty(n, dtype=np.float32), d)]

    c = graphmode.compare(step, iters=50, warmup=5, out=tmp_path / "wrong.gmtrace", outputs=outputs)
    assert not c.outputs_match


def test_launch_sources_attribute_eager_kernels(tmp_path: Path) -> None:
    t, _ = _graphmode_run(tmp_path, "cuda_python_capture.py", options=("--launch-sources",))
    line = _marked_lines("cuda_python_capture.py", "LINE").pop()
    rows = t.rows("""SELECT a.source, count(*) FROM gpu_spans s JOIN api_calls a USING (pass_id, correlation_id)
                     WHERE s.kind = 'kernel' AND s.graph_id = 0 AND pass_id = 1 GROUP BY 1""")
    assert rows == [(f"{EXAMPLES / 'cuda_python_capture.py'}:{line} step", 16 * 200)]


def test_ctrl_c_keeps_the_trace(tmp_path: Path) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text(
        "from graphmode.tracer import cuda_util\nfrom cuda.bindings import driver as cu\n"
        "cuda_util.init_device()\nd = cuda_util.alloc(4096)\n"
        "for _ in range(10):\n    cuda_util.check(cu.cuMemsetD32(d, 1, 1024))\n"
        "raise KeyboardInterrupt\n")
    out = tmp_path / "int.gmtrace"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "graphmode", "run", "--out", str(out), str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130
    t = load(out)
    assert t.meta["status"] == "interrupted"
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind='memset'")[0][0] == 10
    from graphmode.analyzers import analyze

    assert analyze(t).status == "interrupted"


def test_trace_context_manager_records_a_region(tmp_path: Path) -> None:
    import graphmode
    from graphmode.tracer.workloads import make_workload

    wl = make_workload("chain", n=10_000, kernels=4)
    wl.setup()
    step = wl.eager_modes()["eager"]
    with graphmode.trace(tmp_path / "region.gmtrace") as t:
        for _ in range(5):
            step()
    tr = t.load()
    assert tr.meta["workload"] == "region" and tr.meta["status"] == "complete"
    assert tr.rows("SELECT count(*) FROM gpu_spans WHERE kind='kernel'")[0][0] == 20
    assert validate_trace(tr) == []
    with pytest.raises(ZeroDivisionError):
        with graphmode.trace(tmp_path / "boom.gmtrace"):
            step()
            1 / 0
    assert load(tmp_path / "boom.gmtrace").meta["status"] == "failed"
    wl.teardown()


_REGION_AFTER_GRAPH = """
import sys
import graphmode
from cuda.bindings import driver as cu
from graphmode.tracer.workloads import make_workload

wl = make_workload("chain", n=10_000, kernels=4)
wl.setup()
graph, _ = wl.build_graph()
err, exe = cu.cuGraphInstantiate(graph, 0)
assert int(err) == 0, err
def replays(n):
    for _ in range(n):
        assert int(cu.cuGraphLaunch(exe, wl.stream)[0]) == 0
    cu.cuStreamSynchronize(wl.stream)
replays(3)  # instantiated and replayed before CUPTI attached
with graphmode.trace(sys.argv[1]) as t:
    replays(20)
print("ok")
"""


def test_a_region_replays_a_graph_instantiated_before_it(tmp_path: Path) -> None:
    """README's `with graphmode.trace(): g.replay()`, on a graph instantiated before the block: under CUPTI's GRAPH_TRACE
    its first replay crashed the process (SIGSEGV, CUPTI 13.0, driver 580: benchmarks/notes/s22, call 3). The region
    records each replay folded from its nodes' records: one graph span per replay, the graph named as built before
    tracing started, no kernel left over as eager work. Run in a child process, where a crash fails the test."""
    out = tmp_path / "region.gmtrace"
    proc = subprocess.run([sys.executable, "-c", _REGION_AFTER_GRAPH, str(out)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (proc.returncode, proc.stderr[-2000:])
    t = load(out)
    assert t.meta["status"] == "complete" and validate_trace(t) == []
    graphs = t.sql("SELECT graph_id, start_ns, end_ns FROM gpu_spans WHERE kind = 'graph' ORDER BY start_ns")
    assert len(graphs["graph_id"]) == 20 and len(set(graphs["graph_id"].tolist())) == 1 and graphs["graph_id"][0] != 0
    assert (graphs["end_ns"] > graphs["start_ns"]).all()
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'kernel'")[0][0] == 0  # the 80 nodes are in the spans
    (origin,) = t.rows("SELECT origin FROM graphs WHERE graph_id = ?", [int(graphs["graph_id"][0])])[0]
    assert origin == "unknown"
    from graphmode.analyzers import analyze

    assert analyze(t).status == "complete"


_GRAPH_INSIDE_REGION = """
import sys
import graphmode
from cuda.bindings import driver as cu
from graphmode.tracer.workloads import make_workload

wl = make_workload("chain", n=10_000, kernels=4)
wl.setup()
def replays(exe, n):
    for _ in range(n):
        assert int(cu.cuGraphLaunch(exe, wl.stream)[0]) == 0
    assert int(cu.cuStreamSynchronize(wl.stream)[0]) == 0
with graphmode.trace(sys.argv[1]) as t:
    graph, _ = wl.build_graph()
    err, exe = cu.cuGraphInstantiate(graph, 0)
    assert int(err) == 0, err
    replays(exe, 5)
replays(exe, 20)  # after the block: CUPTI detached
wl.reset()
replays(exe, 1)
ok, why = wl.verify()
assert ok, why
print("ok")
"""


def test_a_graph_built_in_a_region_replays_after_it(tmp_path: Path) -> None:
    """A graph instantiated inside `graphmode.trace()` and replayed after the block, once CUPTI detached: under
    GRAPH_TRACE such a replay hit an illegal memory access (a timm ViT's torch.cuda.graph, CUPTI 13.0, driver 580:
    benchmarks/notes/s22, call 4). The region records no GRAPH_TRACE: the replays after it run, and compute what
    they should (the workload's own check of its outputs)."""
    out = tmp_path / "inside.gmtrace"
    proc = subprocess.run([sys.executable, "-c", _GRAPH_INSIDE_REGION, str(out)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (proc.returncode, proc.stderr[-2000:])
    t = load(out)
    ids = t.sql("SELECT graph_id FROM gpu_spans WHERE kind = 'graph'")["graph_id"]
    assert len(ids) == 5 and len(set(ids.tolist())) == 1 and ids[0] != 0  # the 5 replays inside, one graph
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'kernel'")[0][0] == 0  # its nodes folded into them


def test_an_eager_run_measures_its_processs_first_graph_and_the_prediction_uses_it(tmp_path: Path) -> None:
    """`graphmode run` on eager-only cuda-python code: an untraced run (the timing run, or else the probe run) ends with
    the first-graph probe (tracer.first_graph_probe) in the script's process, and the prediction's first-graph extra is
    that measurement. With the graph part run too, the program's own graph is its first: no probe."""
    from graphmode.analyzers import analyze
    from graphmode.tracer.first_graph_probe import PROBE_GRAPHS

    t, proc = _graphmode_run(tmp_path, "cuda_python_capture.py", "--eager-only")
    probe = t.meta["first_graph_probe"]
    assert "error" not in probe, probe
    # measured untraced: by the timing run where there is one, else by the probe run
    assert probe["run"] in ("timing", "probe") and probe["execs_before"] == 0
    assert f"+ {probe['run']} run" in proc.stderr
    assert len(probe["graphs"]) == PROBE_GRAPHS and 0 < probe["probe_ns"] < 5e9
    assert probe["extra_ns"] > 0  # a process's first graph costs more (H200: 150-880 us)
    a = analyze(t)
    [r] = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert r.first_graph_from == "this_process"
    assert r.first_graph_extra is not None and r.first_graph_extra.ns == pytest.approx(probe["extra_ns"])
    if sys.version_info >= (3, 12):
        # the loop (200 synchronized steps of 16 tiny kernels) is CPU-bound: a timing run stamps its call line, times
        # its steps untraced and measures the first graph's extra at its end; no probe run follows
        assert [x["config"]["name"] for x in t.meta["runs"]] == ["measure", "detail", "timing"] and probe["run"] == "timing"
        eager = a.mode("eager")
        assert eager is not None and eager.wall_source == "timing" and eager.wall is not None
        assert r.eager_period is not None and r.eager_period.ns == pytest.approx(eager.wall.median)
    (tmp_path / "full").mkdir()
    full, _ = _graphmode_run(tmp_path / "full", "cuda_python_capture.py")
    assert "first_graph_probe" not in full.meta and "probe" not in [r["config"]["name"] for r in full.meta["runs"]]
    assert all(r.first_graph_from != "this_process" for r in analyze(full).prediction.regions)


@needs_torch
def test_one_traced_run_by_default(tmp_path: Path) -> None:
    """issue 29: plain `graphmode run` runs the script once, traced lightly (API records of the launches, which a
    script that built no graph is predicted from, but no node callback and no getter or query), names the graph from
    graph-level callbacks, with its topology, and (Python 3.12+) stamps the user's lines, saying what a stamp cost."""
    t, proc = _graphmode_run(tmp_path, "torch_cudagraph.py", "--steps", "50", options=("--runs", "auto"))
    assert proc.stdout.count("ok: 50 eager steps and 50 replays") == 1  # one run
    assert [(p.pass_id, p.name, p.status) for p in t.passes] == [(0, "single", "complete")]
    assert validate_trace(t) == [] and not t.meta.get("callback_errors"), t.meta.get("callback_errors")
    (run,) = t.meta["runs"]
    assert "context_error_at_end" not in run
    assert t.rows("SELECT count(*) FROM api_calls WHERE category = 'kernel_launch'")[0][0] >= 50 * 3  # eager steps
    assert t.rows("SELECT count(*) FROM api_calls WHERE name LIKE '%Get%' OR name LIKE '%Query%'")[0][0] == 0
    assert t.rows("SELECT count(*) FROM graph_nodes WHERE source <> ''")[0][0] == 0  # no node callbacks
    if sys.version_info >= (3, 12):
        assert t.rows("SELECT count(*) FROM line_stamps")[0][0] > 50 and run["stamp_cost_ns"] > 0
        # the CPU's speed on the main thread (analyzers.cpu_speed): a sample at the first stamp at least, on the pass's
        # clock (CUPTI's, as the stamps are), each the reference loop's measured time
        speed = run["cpu_speed"]
        p = t.passes[0]
        assert speed["ts_ns"] and len(speed["ts_ns"]) == len(speed["ns"]) and all(0 < x < 1e9 for x in speed["ns"])
        assert all(p.start_ns <= x <= p.end_ns for x in speed["ts_ns"]), (speed, p)
    graphs = t.rows("SELECT graph_id, origin, num_nodes FROM graphs WHERE origin = 'capture'")
    assert len(graphs) == 1 and graphs[0][2] >= 3
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'graph'")[0][0] >= 50
    if sys.version_info >= (3, 12):
        _check_untraced_capture(t, run, graphs[0][0])


def _check_untraced_capture(t: Trace, run: dict, gid: int) -> None:
    """The process's first capture ran with CUPTI detached through PyTorch's capture_end (tracer.untraced_windows
    .CaptureController): the graph is adopted from its first replay (its kernels in order, no edges), its capture and
    instantiation are capture_begin to capture_end and capture_end itself, its one-time cost leaves out graphmode's
    detach, attach and own empty graph, and nothing calibrated came off it."""
    info = run["untraced_captures"]
    assert not info.get("errors"), info
    (c,) = info["captures"]
    assert c["graph_id"] == gid and c["reason"] == "capture_end", c
    assert c["detach_ns"] > 0 and c["attach_ns"] > 0 and c["source"], c
    assert c["detach_start_ns"] <= c["begin_ns"] < c["body_end_ns"] <= c["end_ns"] < c["attach_end_ns"], c
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id = ? GROUP BY 1", [gid]))
    assert ev["capture"] == 1 and ev["instantiate"] == 1 and ev["launch"] >= 50, ev
    spans = dict(t.rows("SELECT event, [start_ns, end_ns] FROM graph_events WHERE graph_id = ? AND event IN "
                        "('capture', 'instantiate')", [gid]))
    assert spans == {"capture": [c["begin_ns"], c["body_end_ns"]], "instantiate": [c["body_end_ns"], c["end_ns"]]}, spans
    (edges,) = t.rows("SELECT num_edges FROM graphs WHERE graph_id = ?", [gid])[0]
    assert edges == 0
    # graphmode's own empty graph is not in the trace, nor its calls
    assert t.rows("SELECT count(*) FROM graphs WHERE origin <> 'capture'")[0][0] == 0
    assert run.get("replays_from_nodes") is True  # attached again without GRAPH_TRACE
    from graphmode.analyzers import analyze

    (g,) = [g for g in analyze(t).graphs if g.graph_id == gid]
    assert g.status == "replayed" and g.cost is not None and g.cost.capture_untraced, g.cost
    assert g.cost.tracer_correction_ns is None and g.cost.build_ns == c["body_end_ns"] - c["begin_ns"], (g.cost, c)
    assert g.cost.instantiate_ns == c["end_ns"] - c["body_end_ns"]
    assert "one_time_capture_untraced" in [n.kind for n in g.notes]


STEP_MEMORY_SCRIPT = '''import torch

x = torch.randn(1 << 20, device="cuda")  # 4 MiB


def step(x):
    a = x * 2  # 4 MiB
    b = a + 1  # 4 MiB more
    return b.relu()  # and 4 MiB more: 12 MiB of the step's own blocks live together; a and b freed on return


y = step(x)
for _ in range(60):
    y = step(x)  # the previous y (a block from before the step) is freed here: not the step's
    torch.cuda.synchronize()
print("ok")
'''


@needs_torch
def test_the_one_run_records_what_each_step_allocates(tmp_path: Path) -> None:
    """issue 30: the one traced run records PyTorch's allocator history (tracer.allocator_history), on the trace's
    clock, with what an action cost; the prediction gives the step's graph the peak of its own live blocks (three 4 MiB
    tensors live together: 12 MiB) and the pool a capture would reserve for them (one 20 MiB segment)."""
    from graphmode.analyzers import analyze

    prog = tmp_path / "step_memory.py"
    prog.write_text(STEP_MEMORY_SCRIPT)
    t, proc = _graphmode_run(tmp_path, str(prog), options=("--runs", "1"))
    (run,) = t.meta["runs"]
    hist = run["allocator_history"]
    assert hist["entries"] > 60 * 3 and not hist["full"] and hist["entry_cost_ns"] > 0, hist
    p = t.passes[0]
    lo, hi, allocs = t.rows("SELECT min(ts_ns), max(ts_ns), count(*) FILTER (WHERE action = 'alloc') FROM memory_events")[0]
    assert p.start_ns <= lo <= hi <= p.end_ns and allocs >= 60 * 3
    [r] = [r for r in analyze(t).prediction.regions if r.direction == "to_graph"]
    assert r.memory is not None, r.memory_unknown
    # 4 MiB blocks come from the large pool's 20 MiB segments: one holds all three
    assert (r.memory.live_bytes, r.memory.bytes) == (12 << 20, 20 << 20) and r.memory.steps >= 10


WINDOWS_SCRIPT = '''import torch

x = torch.randn(256, 256, device="cuda")


def step(x):
    return (x @ x).relu().sum()


for _ in range(80):  # an eager loop: 24 steps traced, then a window of up to 32 untraced, the rest traced
    y = step(x)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()  # the graph comes after the window: recorded by the session attached again
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    step(x)
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(g):
    out = step(x)
for _ in range(30):
    g.replay()
torch.cuda.synchronize()
assert torch.allclose(out, step(x), rtol=1e-3), (out, step(x))
print("ok")
'''


@needs_torch
@pytest.mark.skipif(sys.version_info < (3, 12), reason="untraced windows are opened from line stamps (Python 3.12+)")
def test_the_one_run_detaches_cupti_for_an_untraced_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 24's windows (tracer.untraced_windows) as they were before session 35 (no linger, at most 32 iterations:
    GRAPHMODE_WINDOW_LINGER_MS=0, GRAPHMODE_WINDOW_ITERATIONS=32): the one traced run detaches CUPTI for a stretch of a
    steady loop before the process's first graph, attaches it again, and records the graph built after it; each
    session's correlation ids stay apart in the trace."""
    prog = tmp_path / "windows.py"
    prog.write_text(WINDOWS_SCRIPT)
    monkeypatch.setenv("GRAPHMODE_UNTRACED_WINDOWS", "1")
    monkeypatch.setenv("GRAPHMODE_WINDOW_LINGER_MS", "0")
    monkeypatch.setenv("GRAPHMODE_WINDOW_ITERATIONS", "32")
    t, proc = _graphmode_run(tmp_path, str(prog), options=("--runs", "1"))
    assert "ok" in proc.stdout
    assert validate_trace(t) == [] and not t.meta.get("callback_errors"), t.meta.get("callback_errors")
    (run,) = t.meta["runs"]
    info = run["untraced_windows"]
    # three sessions: before the window, after it, and after the untraced capture of the graph (its body detached)
    assert not info.get("errors") and info["sessions"] == 3, info
    assert [c["reason"] for c in run["untraced_captures"]["captures"]] == ["capture_end"]
    (w,) = info["windows"]
    file, _, line = w["anchor"].rpartition(":")
    # the loop's lines (its `for`, its call of step, step's own line): each runs once a step
    assert file.endswith("windows.py") and int(line) in (7, 10, 11), w
    assert w["reason"] in ("iterations", "left") and 20 <= w["iterations"] <= 32, w
    p = t.passes[0]
    assert p.start_ns < w["start_ns"] < w["end_ns"] < p.end_ns
    inside = t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'kernel' AND start_ns > ? AND start_ns < ?",
                    [w["start_ns"] + 1_000_000, w["end_ns"] - 1_000_000])[0][0]
    assert inside == 0  # detached: nothing recorded
    anchors = t.rows("SELECT count(*) FROM line_stamps WHERE line = ? AND ts_ns BETWEEN ? AND ?",
                     [int(line), w["start_ns"], w["end_ns"]])[0][0]
    assert anchors == w["iterations"] + 1  # but every execution of the loop's line stamped
    n, distinct = t.rows("SELECT count(*), count(DISTINCT correlation_id) FROM api_calls")[0]
    assert n == distinct  # the second session's ids moved past the first's
    launches = t.rows("SELECT count(*) FROM api_calls WHERE category = 'kernel_launch' AND start_ns < ?", [w["start_ns"]])[0][0]
    assert launches >= 24
    graphs = t.rows("SELECT num_nodes FROM graphs WHERE origin = 'capture'")
    assert len(graphs) == 1 and graphs[0][0] >= 2
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'graph'")[0][0] >= 30  # folded from the nodes' records


@needs_torch
@pytest.mark.skipif(sys.version_info < (3, 12), reason="untraced windows are opened from line stamps (Python 3.12+)")
def test_by_default_the_window_lasts_to_the_loops_end_and_the_capture_takes_its_linger_over(tmp_path: Path) -> None:
    """Since session 35 (benchmarks/notes/s35): the one run's window lasts to its loop's end (56 of the 80 steps after 24
    traced), CUPTI stays detached through the warm-up, and the capture takes that state over (adopted: no detach just
    before it); the graph is still known from its replays, its one-time cost read untraced."""
    from graphmode.analyzers import analyze

    prog = tmp_path / "windows.py"
    prog.write_text(WINDOWS_SCRIPT)
    t, proc = _graphmode_run(tmp_path, str(prog), options=("--runs", "1"))
    assert "ok" in proc.stdout
    assert validate_trace(t) == [] and not t.meta.get("callback_errors"), t.meta.get("callback_errors")
    (run,) = t.meta["runs"]
    info = run["untraced_windows"]
    (w,) = info["windows"]
    assert w["reason"] == "left" and w["iterations"] >= 50 and w["linger_reason"] == "capture", w
    # two sessions: before the window, and after the capture (none between: the capture took the linger over)
    assert not info.get("errors") and info["sessions"] == 2, info
    [c] = run["untraced_captures"]["captures"]
    assert c["reason"] == "capture_end" and c.get("adopted") is True, c
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'graph'")[0][0] >= 30
    (g,) = [g for g in analyze(t).graphs if g.cost is not None and g.cost.total_ns > 0]
    notes = [n for n in g.notes if n.kind == "one_time_capture_untraced"]
    assert notes and notes[0].get("adopted") is True, g.notes


EAGER_LOOP_SCRIPT = '''import torch

x = torch.randn(256, 256, device="cuda")
w = [torch.randn(256, 256, device="cuda") for _ in range(8)]


def step(x):
    for m in w:
        x = (x @ m).relu()
    return x


for _ in range(100):
    y = step(x)
    torch.cuda.synchronize()
print("ok: eager loop done")
'''


@needs_torch
@pytest.mark.skipif(sys.version_info < (3, 12), reason="untraced windows are opened from line stamps (Python 3.12+)")
def test_an_eager_only_script_is_run_once_its_loop_timed_in_a_window(tmp_path: Path) -> None:
    """issue 29 and 30: by default a PyTorch script that built no graph is run once: its loop is timed with CUPTI
    detached in an untraced window, and torch.cuda.graph's first capture is measured in its own process after it ended,
    CUPTI detached (no timing run, no probe run); the prediction's eager period is the window's level."""
    from graphmode.analyzers import analyze

    prog = tmp_path / "eager_loop.py"
    prog.write_text(EAGER_LOOP_SCRIPT)
    t, proc = _graphmode_run(tmp_path, str(prog), options=("--runs", "auto"))
    assert proc.stdout.count("ok: eager loop done") == 1  # one run (the report says "ok" elsewhere)
    assert [p.name for p in t.passes] == ["single"]
    (run,) = t.meta["runs"]
    assert run["untraced_windows"]["windows"] and not run["untraced_windows"].get("errors")
    probe = t.meta["first_graph_probe"]
    assert "error" not in probe and probe["run"] == "single" and probe["execs_before"] == 0, probe
    a = analyze(t)
    [r] = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert r.first_graph_from == "this_process"
    kinds = {n.kind: n for n in r.notes}
    assert kinds["eager_period_scaled"]["run"] == "window", kinds
    assert any(n.kind == "eager_untraced_window" for n in a.cannot_compute), [n.kind for n in a.cannot_compute]


TWO_CAPTURES_SCRIPT = '''import torch

x = torch.randn(1 << 16, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    (x * 2 + 1).relu()
torch.cuda.current_stream().wait_stream(s)
small, large = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
with torch.cuda.graph(small):  # three kernels
    a = (x * 2 + 1).relu()
with torch.cuda.graph(large):
    b = ((x * 3 + 1).relu() * 4 - 2).abs()  # six
for _ in range(20):
    large.replay()  # the second graph replayed first
    small.replay()
torch.cuda.synchronize()
print("ok")
'''


@needs_torch
@pytest.mark.skipif(sys.version_info < (3, 12), reason="the one run's untraced captures go with its windows (Python 3.12+)")
@pytest.mark.parametrize("exec_named", [True, False], ids=["pytorch_names_the_executable", "without_its_name"])
def test_the_one_run_makes_each_capture_untraced_and_knows_which_graph_is_which(tmp_path: Path, exec_named: bool) -> None:
    """Two torch.cuda.graph captures, the second replayed first: both made with CUPTI detached (the second in a session
    attached again, without GRAPH_TRACE, after the first), each adopted by the executable PyTorch names (so not by the
    order of their first replays), its nodes its own first replay's: 3 and 6 kernels. Without that name (PyTorch before
    2.8 has no raw_cuda_graph_exec; hidden here), by the order CUPTI made the executables in: the same graphs."""
    from graphmode.analyzers import analyze

    prog = tmp_path / "two_captures.py"
    hide = "" if exec_named else "torch.cuda.CUDAGraph.raw_cuda_graph_exec = None  # as before PyTorch 2.8\n"
    prog.write_text(TWO_CAPTURES_SCRIPT.replace("import torch\n", "import torch\n" + hide, 1))
    t, proc = _graphmode_run(tmp_path, str(prog), options=("--runs", "1"))
    assert validate_trace(t) == [] and not t.meta.get("callback_errors"), t.meta.get("callback_errors")
    (run,) = t.meta["runs"]
    info = run["untraced_captures"]
    assert not info.get("errors"), info
    first, second = info["captures"]
    assert first["reason"] == second["reason"] == "capture_end", info
    for c in (first, second):  # PyTorch's hooks' memory samples, next to the detach and the attach, are gaps too
        assert c["own_start_ns"] < c["detach_start_ns"] and c["own_end_ns"] > c["attach_end_ns"], c
        moved = (c["detach_start_ns"] - c["own_start_ns"]) + (c["own_end_ns"] - c["attach_end_ns"])  # CUPTI's clock
        assert c["samples_ns"] > 0 and abs(c["samples_ns"] - moved) < 1000, c
    if exec_named:
        assert first["exec_id"] and second["exec_id"], info
        assert first["graph_id"] == first["exec_id"] and second["graph_id"] == second["exec_id"], info
    else:
        assert not first.get("exec_id") and not second.get("exec_id"), info  # written only where known
        assert 0 < first["graph_id"] < second["graph_id"], info  # CUPTI numbers executables in the order made
    nodes = dict(t.rows("SELECT graph_id, count(*) FROM graph_nodes WHERE node_type = 'kernel' GROUP BY 1"))
    assert nodes == {first["graph_id"]: 3, second["graph_id"]: 6}, nodes
    # graphmode's own empty graph after each attach is not the program's (CuptiSession.own_work)
    graphs = {g for (g,) in t.rows("SELECT graph_id FROM graphs")}
    assert graphs == {first["graph_id"], second["graph_id"]}, graphs
    launches = dict(t.rows("SELECT graph_id, count(*) FROM graph_events WHERE event = 'launch' GROUP BY 1"))
    assert launches == {first["graph_id"]: 20, second["graph_id"]: 20}, launches
    costs = {g.graph_id: g.cost for g in analyze(t).graphs if g.cost is not None}
    assert all(costs[c["graph_id"]].capture_untraced for c in (first, second)), costs
