"""One run model, one analysis, views (issue 28, item 3): a command builds the run once, analyzes it once, and every
view (terminal, JSON, page) renders that analysis without reading the trace or analyzing again.

Counted on a real recording (tests/data/scripts/steps/mgc_mobilenet.gmtrace.xz: a measuring and a detail run, so two
passes a script's graphs are mapped onto); before the run model one `report --json` and one page derived the
script's graphs 10 times (analyze_script twice, the iteration table, the untraced timing twice, the diagnostics, the
prediction's regions, the page's timelines twice).
"""

from __future__ import annotations

import ast
import io
import json
import lzma
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import graphmode.analyzers
import graphmode.analyzers.run as run_module
from graphmode.analyzers.run import build_run
from graphmode.cli import app
from graphmode.reports.json_report import render_json
from graphmode.tracer.store import load

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "tests" / "data" / "scripts" / "steps"
REPORTS = ROOT / "reports"
# Exports and `graphmode info` read the trace itself (docs/design.md).
READS_THE_TRACE = {"perfetto.py", "parquet.py", "ranks_export.py", "info.py"}


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run_model") / "mgc_mobilenet.gmtrace"
    out.write_bytes(lzma.decompress((STEPS / "mgc_mobilenet.gmtrace.xz").read_bytes()))
    return out


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[Any]:
    """Counts analyze() calls and script_graphs derivations (by the pass they are mapped onto)."""
    counts: Counter[Any] = Counter()
    real_analyze, real_graphs = graphmode.analyzers.analyze, run_module.script_graphs

    def analyze(*args: Any, **kwargs: Any) -> Any:
        counts["analyze"] += 1
        return real_analyze(*args, **kwargs)

    def script_graphs(trace: Any, timing_pass: int | None = None, **kwargs: Any) -> Any:
        sg = real_graphs(trace, timing_pass=timing_pass, **kwargs)
        counts[("script_graphs", sg.timing_pass if sg is not None else None)] += 1
        return sg

    monkeypatch.setattr(graphmode.analyzers, "analyze", analyze)
    monkeypatch.setattr(run_module, "script_graphs", script_graphs)
    return counts


def _derivations(counts: Counter[Any]) -> dict[int, int]:
    return {k[1]: n for k, n in counts.items() if isinstance(k, tuple) and k[0] == "script_graphs"}


def test_run_style_flow_analyzes_once_and_maps_each_pass_once(mobilenet: Path, counted: Counter[Any], tmp_path: Path) -> None:
    """`graphmode run`'s report and page (graphmode.views.report_and_page), then the JSON of the same analysis."""
    from graphmode.views import report_and_page

    console = Console(file=io.StringIO(), width=160)
    with load(mobilenet) as trace:
        passes = {p.pass_id for p in trace.passes if p.detail in ("graph", "node")}
        analysis = report_and_page(trace, True, tmp_path / "page.html", console)
    doc = json.loads(render_json(analysis))
    assert counted["analyze"] == 1
    assert _derivations(counted) == {p: 1 for p in passes} and len(passes) == 2  # measuring and detail run, once each
    assert "Steps" in (tmp_path / "page.html").read_text(encoding="utf-8")
    assert doc["steps"] and console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", ["json", "html", "txt"])
def test_report_command_analyzes_once(mobilenet: Path, counted: Counter[Any], tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(app, ["report", str(mobilenet), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert counted["analyze"] == 1
    assert set(_derivations(counted).values()) == {1} and len(_derivations(counted)) == 2


def test_view_command_analyzes_once(mobilenet: Path, counted: Counter[Any], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["view", str(mobilenet), "-o", str(tmp_path / "v.html")])
    assert result.exit_code == 0, result.output
    assert counted["analyze"] == 1
    assert set(_derivations(counted).values()) == {1}


def test_a_run_keeps_what_it_derived(mobilenet: Path) -> None:
    with load(mobilenet) as trace:
        run = build_run(trace)
        sg = run.script_graphs()
        assert sg is not None and run.script_graphs() is sg and run.script_graphs(timing_pass=sg.timing_pass) is sg
        assert run.iterations(sg) is run.iterations(sg)
        assert not run.runner and run.structure is not None and run.measuring is not None
        assert run.structure.pass_id != run.measuring.pass_id


def _calls(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of every call to a method named sql or rows, or to a function named analyze."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("sql", "rows", "analyze"):
                out.append((f.attr, node.lineno))
            elif isinstance(f, ast.Name) and f.id == "analyze":
                out.append((f.id, node.lineno))
    return out


def _imports_analyze(tree: ast.AST) -> list[int]:
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and any(a.name == "analyze" for a in node.names)]


def test_renderers_neither_analyze_nor_query_the_trace() -> None:
    """reports/ renders an analysis (and the page's data, analyzers.page): no analyze(), no trace.sql / trace.rows."""
    checked = 0
    for path in sorted(REPORTS.glob("*.py")):
        if path.name in READS_THE_TRACE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not _imports_analyze(tree), f"{path.name} imports analyze"
        assert not _calls(tree), f"{path.name} analyzes or queries the trace: {_calls(tree)}"
        checked += 1
    assert checked >= 20


def test_the_check_sees_a_query() -> None:
    """The ast check above finds what it looks for (so its silence means something)."""
    tree = ast.parse("from graphmode.analyzers import analyze\ndef f(trace):\n    trace.rows('SELECT 1')\n    return analyze(trace)\n")
    assert _imports_analyze(tree) == [1] and [n for n, _ in _calls(tree)] == ["rows", "analyze"]


@pytest.mark.parametrize("name", ["chain-graph", "chain-node", "dag-graph", "dag-node"])
def test_a_bench_trace_is_a_run_with_one_step(name: str) -> None:
    """A runner trace's graph and eager iterations are the run model's one step (analyzers.steps.runner_step): the
    same figures the headline states, in the structure a script trace's steps have; the JSON still validates."""
    import jsonschema

    from graphmode.analyzers import analyze
    from graphmode.reports.json_report import load_schema, report_dict

    with load(ROOT / "tests" / "data" / f"{name}.gmtrace") as trace:
        a = analyze(trace)
    (step,) = a.steps
    h, b = a.headline, a.primary_break_even()
    assert h is not None and b is not None and h.subject == "graph_mode"
    assert step.graphs == tuple({c.graph_id for c in a.graph_costs}) and step.basis == "measured"
    assert (step.eager_ns, step.graphed_ns, step.saved_ns, step.one_time_ns) == (h.eager_ns, h.graphed_ns, h.saved_ns, h.one_time_ns)
    assert step.break_even == b and (b.replays, b.interval_low, b.interval_high) == (h.break_even, h.interval_low, h.interval_high)
    assert step.graphed_steps == a.mode("graph").iterations and step.eager_steps == a.mode(b.baseline).iterations  # type: ignore[union-attr]
    assert step.saved_ns is not None and step.saved_in_run_ns == step.saved_ns * b.run_replays
    (segment,) = step.segments
    assert segment.kind == "graph" and segment.graph_id == step.graphs[0] and segment.saved_ns == step.saved_ns
    doc = report_dict(a)
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    assert doc["steps"][0]["break_even"]["replays"] == doc["headline"]["break_even"]


@pytest.mark.parametrize("name", ["chain-node", "dag-graph"])
def test_a_bench_trace_feeds_the_shared_pipeline_from_its_markers(name: str) -> None:
    """analyze() has one pipeline; a runner trace's part of it (analyzers.runner_analysis) reads the runner's iteration
    table of the timing pass (source 'runner'), whose medians are the modes' wall times: each the median of the
    iteration markers' spans, read here with SQL. Its step is the analysis's, and it states no per-graph result."""
    import numpy as np

    from graphmode.analyzers import analyze
    from graphmode.analyzers.runner_analysis import analyze_runner

    with load(ROOT / "tests" / "data" / f"{name}.gmtrace") as trace:
        run = build_run(trace)
        parts = analyze_runner(run)
        a = analyze(run)
        assert run.runner and run.timing is not None and parts.timing_pass == run.timing.pass_id
        spans = trace.rows("SELECT mode, end_ns - start_ns FROM markers WHERE pass_id = ? AND kind = 'iteration'",
                           [run.timing.pass_id])
    assert set(parts.table.source) == {"runner"} and parts.timing_run == "timing"
    for m in parts.modes:
        by_sql = float(np.median([d for mode, d in spans if mode == m.mode]))
        assert m.wall is not None and m.wall.median == by_sql
        assert float(np.median(parts.table.work[parts.table.mode == m.mode])) == by_sql
    assert parts.graphs == () and parts.steps == a.steps and tuple(a.modes) == parts.modes
    assert a.break_even == parts.break_even and a.graph_costs == parts.costs


def test_each_pass_line_stamps_are_read_once(mobilenet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The untraced timing, the one-time costs and the step model read the stamps through the Run (3 reads a pass
    before it)."""
    import graphmode.analyzers.inference as inference
    import graphmode.analyzers.steps as steps
    import graphmode.analyzers.untraced as untraced
    from graphmode.analyzers import analyze

    reads: Counter[int] = Counter()
    real = inference.line_stamps

    def line_stamps(trace: Any, pass_id: int) -> Any:
        reads[pass_id] += 1
        return real(trace, pass_id)

    for module, name in ((inference, "line_stamps"), (steps, "line_stamps"), (untraced, "_stamps"), (run_module, "line_stamps")):
        monkeypatch.setattr(module, name, line_stamps)
    with load(mobilenet) as trace:
        stamped = {p.pass_id for p in trace.passes if p.detail in ("graph", "stamps") and p.name != "measure"}
        a = analyze(build_run(trace))
    assert a.steps and dict(reads) == {p: 1 for p in stamped} and len(stamped) == 2  # the detail and the timing run
