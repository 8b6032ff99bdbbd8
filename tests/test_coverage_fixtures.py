"""Graph coverage, PyTorch's cudagraph decisions and the graph budget on REAL recordings (no GPU needed).

Every committed recording (tests/data/*.gmtrace, tests/data/scripts/, tests/data/coverage/) is checked
for the invariants of the coverage figures; then each recording against what its program was written
to do (examples/*.py: loop counts, kernels per step, the lines marked `# CAUSE:`, `# CALL:`, ...).
The issue-10 recordings under tests/data/coverage/ are made by tests/data/record_coverage.sh on a GPU;
their tests skip with a reason while they are absent.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jsonschema
import pytest

from graphmode.analyzers import TraceAnalysis, analyze
from graphmode.analyzers.notes import note
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.reports.pitfall_words import advice, evidence, title
from graphmode.tracer.store import Trace, load
from graphmode.tracer.validate import validate_trace
from tests.conftest import DATA, ROOT

EXAMPLES = ROOT / "examples"
COVERAGE = DATA / "coverage"
ALL = sorted(DATA.glob("*.gmtrace")) + sorted((DATA / "scripts").glob("*.gmtrace")) + sorted(COVERAGE.glob("*.gmtrace"))
_analyses: dict[Path, tuple[Trace, TraceAnalysis]] = {}


def _analysed(path: Path) -> tuple[Trace, TraceAnalysis]:
    if path not in _analyses:
        t = load(path)
        _analyses[path] = (t, analyze(t))
    return _analyses[path]


# Programs that did not do on the H200 (PyTorch 2.11) what they were written to do: not recorded, and why.
NOT_RECORDED: dict[str, str] = {}


def _recording(name: str) -> tuple[Trace, TraceAnalysis]:
    path = COVERAGE / f"{name}.gmtrace"
    if not path.exists():
        if name in NOT_RECORDED:
            pytest.skip(f"{path.relative_to(ROOT)} is not recorded: {NOT_RECORDED[name]}")
        pytest.skip(f"{path.relative_to(ROOT)} is not recorded yet: run `bash tests/data/record_coverage.sh` on a GPU machine")
    return _analysed(path)


def marked(example: str, tag: str) -> int:
    """The one line of examples/<example> carrying `# <tag>`."""
    lines = [i + 1 for i, text in enumerate((EXAMPLES / example).read_text().splitlines()) if f"# {tag}" in text]
    assert len(lines) == 1, (example, tag, lines)
    return lines[0]


def constant(example: str, name: str) -> object:
    """A module-level constant of an example, read from its source (NAME = literal)."""
    for node in ast.parse((EXAMPLES / example).read_text()).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return ast.literal_eval(node.value)
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):  # A, B = 1, 2
                for t, v in zip(target.elts, node.value.elts):
                    if isinstance(t, ast.Name) and t.id == name:
                        return ast.literal_eval(v)
    raise KeyError(name)


def line_of(source: str, example: str) -> int:
    m = re.fullmatch(r"(.*):(\d+)( .*)?", source)
    assert m and Path(m.group(1)).name == example, source
    return int(m.group(2))


# -- every recording -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(DATA)))
def test_coverage_invariants_on_every_recording(path: Path) -> None:
    t, a = _analysed(path)
    assert validate_trace(t) == []
    jsonschema.Draft202012Validator(load_schema()).validate(report_dict(a))
    c = a.coverage
    assert c is not None and c.pass_id == a.traced_pass_id
    for s in (c.run, *c.phases, *c.ranges):
        for share in (s.kernel_share, s.gpu_time_share, s.launch_call_share):
            assert share is None or 0.0 <= share <= 1.0
        assert s.graph_kernels <= c.run.graph_kernels and s.eager_kernels <= c.run.eager_kernels
    if c.phases:  # the phases cut the run into three: their counts add up to the run's
        for field in ("graph_kernels", "eager_kernels", "graph_launch_calls", "eager_launch_calls", "captured_launch_calls"):
            assert sum(getattr(p, field) for p in c.phases) == getattr(c.run, field), field
        assert sum(p.graph_gpu_ns for p in c.phases) == pytest.approx(c.run.graph_gpu_ns)
        assert [p.name for p in c.phases] == ["before the first graph", "building graphs", "steady state"]
    # each outermost graph-launch call is one graph launch of graph_events (both count launches that ran work)
    (launches,), = t.rows("SELECT count(*) FROM graph_events WHERE pass_id = ? AND event = 'launch'", [c.pass_id])
    assert c.run.graph_launch_calls == launches
    # eager kernels are the kernel spans outside graphs
    (eager,), = t.rows("SELECT count(*) FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' AND graph_id = 0", [c.pass_id])
    assert c.run.eager_kernels == eager
    b = a.graph_budget
    (graphs,), = t.rows("SELECT count(*) FROM graphs WHERE pass_id = ?", [c.pass_id])
    assert (b.graphs if b else 0) == graphs
    if b is not None:
        assert sum(r.replays for r in b.rows) == launches
        assert b.never_replayed == sum(1 for r in b.rows if r.replays == 0 and r.nodes > 0)


# -- the recordings in tests/data and tests/data/scripts ---------------------------------------------

def test_bench_chain_ranges_split_eager_and_replays() -> None:
    # `graphmode bench chain -n 40`: eager and eager_sync_each phases launch 40 x 20 kernels one by one; the replay
    # phase launches the 20-kernel graph 40 times
    for name in ("chain-graph", "chain-node"):
        _, a = _analysed(DATA / f"{name}.gmtrace")
        assert a.coverage is not None
        r = {s.name: s for s in a.coverage.ranges}
        assert (r["eager"].eager_kernels, r["eager"].graph_kernels, r["eager"].kernel_share) == (40 * 20, 0, 0.0)
        assert (r["eager_sync_each"].eager_kernels, r["eager_sync_each"].graph_launch_calls) == (40 * 20, 0)
        assert (r["replay"].graph_launch_calls, r["replay"].graph_kernels, r["replay"].eager_kernels) == (40, 40 * 20, 0)
        assert r["replay"].kernel_share == 1.0
        assert a.coverage.kernels_from_topology == (name == "chain-graph")


def test_cuda_python_capture_is_half_graphed() -> None:
    # examples/cuda_python_capture.py: 200 eager steps of KERNELS launches, capture of one step, 200 replays
    k = constant("cuda_python_capture.py", "KERNELS")
    assert k == 16
    for name in ("cuda_python_capture", "cuda_python_launch_sources"):
        _, a = _analysed(DATA / "scripts" / f"{name}.gmtrace")
        c = a.coverage
        assert c is not None
        assert (c.run.eager_kernels, c.run.graph_kernels, c.run.kernel_share) == (200 * k, 200 * k, 0.5)
        assert (c.run.graph_launch_calls, c.run.eager_launch_calls, c.run.captured_launch_calls) == (200, 200 * k, k)
        before, building, steady = c.phases
        assert (before.eager_kernels, before.graph_kernels) == (200 * k, 0)
        assert (building.captured_launch_calls, building.eager_launch_calls) == (k, 0)
        assert (steady.graph_kernels, steady.eager_kernels, steady.kernel_share) == (200 * k, 0, 1.0)
        assert steady.gpu_time_share is not None and steady.gpu_time_share > 0.99  # one DtoH copy at the end
        if name == "cuda_python_launch_sources":
            # --launch-sources: the eager remainder is attributed to the launch line of step()
            assert [line_of(e.source, "cuda_python_capture.py") for e in c.eager_lines][:1] == \
                [marked("cuda_python_capture.py", "LINE: launch")]
            assert c.eager_lines[0].launches == 200 * k and c.eager_lines_note is None
        else:
            assert c.eager_lines == () and c.eager_lines_note == note("launch_sources_hint")


def test_cupy_graph_coverage() -> None:
    # examples/cupy_graph.py: 100 eager steps of 10 x (multiply, add) kernels, then 100 replays of one captured step
    _, a = _analysed(DATA / "scripts" / "cupy_graph.gmtrace")
    c = a.coverage
    assert c is not None
    per_step = 10 * 2
    assert c.run.graph_kernels == 100 * per_step and c.run.graph_launch_calls == 100
    assert c.run.captured_launch_calls == per_step
    before, _, steady = c.phases
    assert before.eager_kernels == 100 * per_step + 1  # + cp.arange
    assert steady.graph_kernels == 100 * per_step and steady.kernel_share is not None and steady.kernel_share > 0.99


def test_torch_cudagraph_nvtx_ranges() -> None:
    # examples/torch_cudagraph.py --steps 20: NVTX 'eager loop' of 20 eager steps, 'replay loop' of 20 replays
    _, a = _analysed(DATA / "scripts" / "torch_cudagraph.gmtrace")
    c = a.coverage
    assert c is not None
    r = {s.name: s for s in c.ranges}
    eager, replay = r["eager loop"], r["replay loop"]
    assert (eager.graph_kernels, eager.graph_launch_calls, eager.kernel_share) == (0, 0, 0.0)
    assert eager.eager_kernels % 20 == 0
    assert (replay.graph_launch_calls, replay.eager_kernels, replay.kernel_share) == (20, 0, 1.0)
    assert replay.graph_kernels == eager.eager_kernels  # the same step, graphed
    assert a.torch_graphs is None  # recorded before the PyTorch hooks existed


def test_torch_compile_graph_launches_follow_the_warm_up_rule() -> None:
    # examples/torch_compile.py: 50 calls for each of the shapes (64, 64, 128); cudagraph trees run each new
    # shape once eagerly (warm-up), then record and replay: 3 x 50 - 2 graph launches, of two graphs
    _, a = _analysed(DATA / "scripts" / "torch_compile.gmtrace")
    c = a.coverage
    assert c is not None
    assert c.run.graph_launch_calls == 3 * 50 - 2 and c.run.graphs_launched == 2
    b = a.graph_budget
    assert b is not None and sorted(r.replays for r in b.rows if r.replays) == [49, 99]
    # the third graph is the empty one cudagraph trees capture to keep their memory pool alive
    (empty,) = [r for r in b.rows if not r.replays]
    assert (empty.nodes, empty.verdict, b.never_replayed) == (0, "empty graph", 0)


def test_broken_capture_has_no_graph_work() -> None:
    _, a = _analysed(DATA / "scripts" / "broken_capture.gmtrace")
    c = a.coverage
    assert c is not None
    assert (c.run.graph_kernels, c.run.graph_launch_calls, c.run.kernel_share) == (0, 0, 0.0)
    # This recording holds the measuring run alone (its detail run was not made after the failure, as
    # graphmode did then): kernel-launch calls are not recorded there, so their share is unknown, not 0%,
    # and no graph was seen built (no callbacks), so there is no budget row.
    assert c.run.launch_call_share is None and c.run.captured_launch_calls == 0
    assert a.graph_budget is None


# -- the issue-10 recordings (tests/data/coverage, recorded by tests/data/record_coverage.sh) ------------

def test_torch_compile_skips_names_each_cause() -> None:
    _, a = _recording("torch_compile_skips")
    ex = "torch_compile_skips.py"
    tg = a.torch_graphs
    assert tg is not None and tg.torch_version
    # PyTorch 2.11 skips one function, for the input it writes in place; the CPU tensor of `shift` is
    # partitioned out of its graph, not skipped (the example's docstring)
    assert [s.reason for s in tg.skips] == ["mutated_inputs"], [s.message for s in tg.skips]
    assert line_of(tg.skips[0].where, ex) == marked(ex, "CAUSE: mutated_inputs")
    skips = {p.where for p in a.pitfalls if p.kind == "cudagraph_skipped"}
    assert {line_of(w, ex) for w in skips} == {marked(ex, "CAUSE: mutated_inputs")}
    # mlp and shift are graphed: one warm-up call each, then a graph launch per call
    steps = constant(ex, "STEPS")
    assert isinstance(steps, int)
    c = a.coverage
    assert c is not None
    assert c.run.graph_launch_calls == 2 * (steps - 1) and c.run.graphs_launched == 2
    graphed = sorted((f for f in tg.functions if f.recordings), key=lambda f: f.name)
    assert [f.name for f in graphed] == ["mlp", "shift"] and all(f.warmups == 1 for f in graphed)
    assert [line_of(f.called_from[0], ex) for f in graphed] == [marked(ex, "CALL: mlp"), marked(ex, "CALL: shift")]
    # mlp's only eager run is the warm-up inside its first call (compilation, autotuning): no measured baseline; its
    # saving is predicted from Inductor's launch costs (analyzers.counterfactual), and marked so
    (g,) = [g for g in a.graphs if g.graph_id in set(graphed[0].graph_ids) and g.replays]
    assert g.eager is None and g.break_even is not None and g.break_even.basis == "predicted", g
    assert g.counterfactual is not None and g.counterfactual.framework == "inductor", g.counterfactual
    assert note("only_eager_run_is_first_call") in g.notes, g.notes
    # recorded with --launch-sources: the skipped function's call and the eager sum are among the lines with eager GPU work
    eager = {line_of(e.source, ex) for e in c.eager_lines if Path(e.source.split(":")[0]).name == ex}
    assert {marked(ex, "CALL: update_cache"), marked(ex, "eager: the sum of the cache")} <= eager


def test_torch_compile_shapes_records_a_graph_per_shape() -> None:
    _, a = _recording("torch_compile_shapes")
    ex = "torch_compile_shapes.py"
    sizes, calls = constant(ex, "BATCH_SIZES"), constant(ex, "CALLS")
    assert isinstance(sizes, tuple) and isinstance(calls, int)
    tg = a.torch_graphs
    assert tg is not None
    (layer,) = [f for f in tg.functions if f.recordings]
    assert layer.recordings == len(sizes) and len(set(layer.shapes)) == len(sizes)
    assert len(layer.graph_ids) == len(sizes) and len(layer.compile_ids) >= 2  # static first, then dynamic
    c = a.coverage
    assert c is not None
    assert c.run.graph_launch_calls == len(sizes) * calls - tg.warmups and c.run.graphs_launched == len(sizes)
    (p,) = [p for p in a.pitfalls if p.kind == "rerecorded_per_shape"]
    assert line_of(p.where, ex) == marked(ex, "CALL: layer") and p.cost_ns is not None and p.cost_ns > 0


def test_torch_overwritten_output_is_diagnosed_with_both_lines() -> None:
    t, a = _recording("torch_overwritten")
    ex = "torch_overwritten.py"
    assert t.meta["status"] == "failed"
    (p,) = [p for p in a.pitfalls if p.kind == "output_overwritten"]
    assert p.severity == "error" and a.pitfalls[0] is p
    assert line_of(p.where, ex) == marked(ex, "READ: overwritten output")
    assert f"{ex}:{marked(ex, 'PRODUCED: the output')}" in evidence(p)
    assert "cudagraph_mark_step_begin" in advice(p) and "clone" in advice(p)


def test_graph_per_batch_size_budget() -> None:
    t, a = _recording("graph_per_batch_size")
    ex = "graph_per_batch_size.py"
    sizes = constant(ex, "BATCH_SIZES")
    assert isinstance(sizes, tuple)
    mix = {1: 40, 2: 30, 4: 20, 8: 10, 16: 2, 32: 1, 64: 0, 128: 0}  # the program's request mix
    b = a.graph_budget
    assert b is not None and b.graphs == len(sizes)
    assert sorted(r.replays for r in b.rows) == sorted(mix.values())
    assert b.never_replayed == 2 and {r.verdict for r in b.rows if r.replays == 0} == {"never replayed"}
    assert {line_of(r.site, ex) for r in b.rows} == {marked(ex, "CAPTURE: one graph per batch size")}
    # one shared pool (every capture after the first passes the first graph's pool)
    assert b.memory_source == "pytorch pools" and b.shared_pools == 1
    assert a.torch_graphs is not None
    (pool,) = a.torch_graphs.pools
    assert len(pool.graph_ids) == len(sizes) and all(r.pool == pool.pool for r in b.rows)
    assert all(r.bytes is not None and r.bytes >= 0 for r in b.rows) and (b.total_bytes or 0) > 0
    c = a.coverage
    assert c is not None and c.run.graph_launch_calls == sum(mix.values())
    # start-up is timed as the per-graph results time it (the measuring run), not by the callback-slowed detail run
    costs = {g.graph_id: g.cost for g in a.graphs if g.cost is not None}
    assert {r.graph_id for r in b.rows} <= set(costs)
    for r in b.rows:
        k = costs[r.graph_id]
        assert k.pass_id != t.passes[-1].pass_id and r.startup_ns == sum(x or 0.0 for x in (k.build_ns, k.instantiate_ns, k.upload_ns))
    assert note("startup_from_measuring_run") in b.notes


def test_jax_jit_command_buffers_are_graphs() -> None:
    _, a = _recording("jax_jit")
    steps = constant("jax_jit.py", "STEPS")
    assert isinstance(steps, int)
    c = a.coverage
    assert c is not None and a.torch_graphs is None
    assert c.run.graphs_launched >= 1 and c.run.graph_kernels > 0
    # every jitted call after the first couple launches XLA's command buffer
    assert c.run.graph_launch_calls >= steps - 2
    steady = next(p for p in c.phases if p.name == "steady state")
    assert steady.graph_kernels > 0


def test_the_page_shows_coverage_pytorchs_decisions_and_the_budget() -> None:
    from graphmode.views import html_page

    t, a = _recording("graph_per_batch_size")
    page, _ = html_page(t, a)
    start = page.index("<section id='gm-graph-use'>")
    section = page[start:page.index("</section>", start)]
    text = re.sub(r"<[^>]+>", " ", section)
    c, b = a.coverage, a.graph_budget
    assert c is not None and b is not None
    # the run's coverage row, the shared pool and one budget row per graph, with the figures of the analysis
    assert f"{c.run.graph_kernels} of {c.run.graph_kernels + c.run.eager_kernels})" in text
    assert f"{c.run.graph_launch_calls} / " in text
    assert "(1, 0)" in text and text.count("never replayed") >= b.never_replayed
    assert section.count("<tr") >= 1 + len(b.rows)
