"""Issue 30 on real recordings: four eager-only third-party programs under the default `graphmode run` on the H200
(tests/data/scripts/eager_only/, session 18, device call 3; what their own clocks read untraced and graphed is in its
recording.log). The step is found in each (a decode loop that does not synchronize, a training loop inside a function,
a forward at four input shapes, a training loop), the prediction is priced against it, and what the graphed programs
measured is the check: the issue's targets where they hold here (docs/benchmarks.md gives every figure, misses too)."""

from __future__ import annotations

import ast
import json
import lzma
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.counterfactual import dispatch_ns, framework_of
from graphmode.analyzers.results import RegionPrediction, TraceAnalysis
from graphmode.tracer.store import load

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "scripts" / "eager_only"
SCRIPTS = ROOT / "benchmarks" / "third_party"
LOG = re.compile(r"^(?P<program>\w+) (?P<kind>graphed|eager-only) untraced.*?GRAPHMODE_TRUTH (?P<json>\{.*\}) \(call \d\)$")


def _truths(kind: str, program: str) -> list[dict[str, Any]]:
    out = []
    for line in (DATA / "recording.log").read_text().splitlines():
        m = LOG.match(line)
        if m and m["kind"] == kind and m["program"] == program:
            out.append(json.loads(m["json"]))
    assert out, (kind, program)
    return out


def _graphed(program: str, suffix: str = "") -> dict[str, float]:
    """Medians over the graphed processes: replay, one-time cost (capture block + first replay - replay) and each
    process's break-even from its own eager step."""
    rows = _truths("graphed", program)
    replay = [float(t[f"graph{suffix}_ns"]) for t in rows]
    one = [float(t[f"capture_block{suffix}_ns"]) + float(t[f"first_replay{suffix}_ns"]) - float(t[f"graph{suffix}_ns"]) for t in rows]
    be = [math.ceil(o / (float(t[f"eager{suffix}_ns"]) - r)) for o, r, t in zip(one, replay, rows)]
    return {"replay": statistics.median(replay), "one_time": statistics.median(one), "break_even": statistics.median(be)}


def _timing_cadences(path: Path, line: int) -> list[float]:
    """Per uninterrupted run of stamps of `line` in the timing run (its own clock, perf_counter_ns), the median time
    between two of them: what the timing run read of each loop over that line, computed from its stamps alone."""
    with load(path) as t:
        (tp,) = [p.pass_id for p in t.passes if p.detail == "stamps"]
        rows = t.rows("SELECT line, ts_ns FROM line_stamps WHERE pass_id = ? ORDER BY ts_ns", [tp])
    out, run_ts = [], []
    for ln, ts in rows + [(-1, 0)]:
        if ln == line:
            run_ts.append(int(ts))
            continue
        if len(run_ts) > 2:
            out.append(float(statistics.median([b - a for a, b in zip(run_ts, run_ts[1:])])))
        run_ts = []
    return out


@pytest.fixture(scope="module")
def analyses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[TraceAnalysis, dict[str, Any]]]:
    d = tmp_path_factory.mktemp("eager_only")
    out = {}
    for f in sorted(DATA.glob("*.gmtrace.xz")):
        p = d / f.name.removesuffix(".xz")
        p.write_bytes(lzma.decompress(f.read_bytes()))
        with load(p) as t:
            out[p.stem.removesuffix(".gmtrace")] = (analyze(t), {"passes": [(x.name, x.detail) for x in t.passes],
                                                              "runs": t.meta["runs"], "probe": t.meta.get("first_graph_probe"), "path": p})
    assert set(out) == {"hf_static_decode", "mobilenet_train_fn", "vit_batch_graphs", "resnet_train"}
    return out


def _regions(a: TraceAnalysis) -> list[RegionPrediction]:
    return [r for r in a.prediction.regions if r.direction == "to_graph"]


def _function_lines(script: Path, name: str) -> tuple[int, int]:
    fn = next(n for n in ast.walk(ast.parse(script.read_text())) if isinstance(n, ast.FunctionDef) and n.name == name)
    assert fn.end_lineno is not None
    return fn.lineno, fn.end_lineno


def test_the_default_run_of_a_script_that_built_no_graph(analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]]) -> None:
    """The one traced run, then the detail run recording only the API calls the prediction reads, then the timing run,
    which made the first-graph probe (no probe run)."""
    for name, (_, t) in analyses.items():
        assert t["passes"] == [("single", "graph"), ("detail", "graph"), ("timing", "stamps")], name
        detail = next(r["config"] for r in t["runs"] if r["config"]["name"] == "detail")
        assert (detail["api_filter"], detail["node_events"]) == ("needed", False), name
        assert t["probe"] is not None and t["probe"]["run"] == "timing", name


@pytest.mark.parametrize("program, function", [("hf_static_decode", "step"), ("mobilenet_train_fn", "train"),
                                               ("resnet_train", "step")])
def test_the_step_is_found_and_its_lines_are_the_steps(analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]],
                                                       program: str, function: str) -> None:
    """One region, recurring at least as often as the program's timed loop steps (never a stretch run once), timed by
    the timing run, with lines inside the function that is the step (or the loop body that calls it)."""
    a, _ = analyses[program]
    (r,) = _regions(a)
    steps = int(_truths("eager-only", program)[0].get("steps", 40))
    assert r.iterations >= steps
    assert any(n.kind == "eager_period_scaled" and n["run"] == "timing" for n in r.notes)
    assert r.advice is not None and r.advice.lines_from == "line_stamps"
    file, spans = r.advice.lines.rsplit(":", 1)
    assert file == f"{program}.py"
    lo, hi = _function_lines(SCRIPTS / file, function)
    bounds = [(int(a), int(b)) for a, _, b in (x.partition("-") if "-" in x else (x, "", x) for x in spans.split(","))]
    # the step function's body is one of the spans (a function called from the loop: the loop's lines are another)
    assert any(lo <= a and b <= hi for a, b in bounds), (r.advice.lines, lo, hi)
    training = program != "hf_static_decode"
    assert r.advice.api == ("torch_cuda_graph_whole_step" if training else "torch_cuda_graph")


@pytest.mark.parametrize("program", ["hf_static_decode", "mobilenet_train_fn", "resnet_train"])
def test_predictions_against_what_the_graphed_program_measured(analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]],
                                                               program: str) -> None:
    """Issue 30's targets: replay within 25% and one-time cost within 30% of the graphed processes' median; break-even
    within 20% or 1 replay where the timing run's eager step agreed with the graphed processes' (the decode and
    MobileNetV3 loops; ResNet-18's timing run read its step 1.3x theirs, a miss docs/benchmarks.md records)."""
    (r,) = _regions(analyses[program][0])
    truth = _graphed(program)
    assert r.replay_period is not None and r.one_time is not None and r.break_even is not None
    assert abs(r.replay_period.ns / truth["replay"] - 1) <= 0.25
    assert abs(r.one_time.ns / truth["one_time"] - 1) <= 0.30
    if program != "resnet_train":
        assert abs(r.break_even - truth["break_even"]) <= max(1, 0.2 * truth["break_even"])


def test_a_forward_at_four_batch_sizes_is_four_regions_priced_as_one_graph_each(
        analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]]) -> None:
    """timm's ViT at batch 1, 2, 4 and 8: four regions, shape 1 to 4 in the order they ran; each replay within 25% of
    the graphed program's for that batch size; the later shapes priced as the process's 2nd to 4th graph (the first
    graph's extra and PyTorch's first capture counted once), so their one-time costs add up to the shape group's."""
    a, _ = analyses["vit_batch_graphs"]
    regions = _regions(a)
    assert [r.label.rsplit(", ", 1)[-1] for r in regions] == [f"shape {k} of 4" for k in range(1, 5)]
    for r, b in zip(regions, (1, 2, 4, 8)):
        assert r.replay_period is not None
        assert abs(r.replay_period.ns / _graphed("vit_batch_graphs", f"_b{b}")["replay"] - 1) <= 0.25, b
        assert r.advice is not None and r.advice.api == "torch_cuda_graph_per_shape"
    # the lines run in most of each shape's 33 recurrences: the timed loop over args.calls, not the 3-call warm-up loop
    # whose calls the same block of kernels also covers
    loop = next(n for n in ast.walk(ast.parse((SCRIPTS / "vit_batch_graphs.py").read_text())) if isinstance(n, ast.For)
                and "args.calls" in ast.unparse(n.iter))
    assert {r.advice.lines for r in regions if r.advice} == {f"vit_batch_graphs.py:{loop.lineno}-{loop.end_lineno}"}
    # each shape's eager period is what the timing run read of that shape's loop (untraced), not a share taken from the
    # traced run, whose own cost grows with a shape's launches (batch 1 launches 162 ops, the others 126)
    cadences = _timing_cadences(analyses["vit_batch_graphs"][1]["path"], loop.lineno + 1)
    assert len(cadences) == 4
    for r, c in zip(regions, cadences):
        assert r.eager_period is not None and r.eager_period.ns == pytest.approx(c, rel=0.05)
    later = [next(n for n in r.notes if n.kind == "shape_later_graph") for r in regions[1:]]
    assert [(n["shape"], n["nth"]) for n in later] == [(2, 2), (3, 3), (4, 4)]
    assert not any(n.kind == "shape_later_graph" for n in regions[0].notes)
    (group,) = a.prediction.shape_groups
    assert group.one_time is not None and all(r.one_time is not None for r in regions)
    assert group.one_time.ns == pytest.approx(sum(r.one_time.ns for r in regions if r.one_time is not None))
    first, second = regions[0].one_time, regions[1].one_time
    assert first is not None and second is not None and second.ns < first.ns  # the first capture's work is paid once


def test_a_python_heavy_steps_capture_adds_the_ratio_to_its_dispatch_only(
        analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]]) -> None:
    """The decode step runs transformers' Python besides its 123 kernels' dispatch: its capture is its issue time plus
    the probe's ratio excess on the dispatch (each kernel at its launcher's calibrated price), not issue x ratio."""
    a, _ = analyses["hf_static_decode"]
    (r,) = _regions(a)
    n = next(n for n in r.notes if n.kind == "torch_capture_ratio")
    issue, ratio, dispatch = float(n["issue_ns"]), float(n["ratio"]), float(n["dispatch_ns"])
    assert 0 < dispatch < issue
    assert r.capture is not None and r.capture.ns == pytest.approx(issue + (ratio - 1) * dispatch)


def test_dispatch_is_each_kernel_at_its_launchers_price() -> None:
    """SYNTHETIC kernel names, the bundled H200 model: three pointwise kernels, a cuBLAS one and a copy (priced as a
    kernel of the first's launcher)."""
    model = _bundled()
    names = ["elementwise_kernel", "elementwise_kernel", "reduce_kernel", "nvjet_tst_128x64"]
    pointwise, library = (model.launch[k].per_kernel.median for k in ("torch_pointwise", "torch_library"))
    assert dispatch_ns(names, 1, framework_of(names, True), model) == pytest.approx(4 * pointwise + library)
    assert dispatch_ns([], 0, "torch", model) is None


def _bundled() -> Any:
    from graphmode.analyzers.costmodel import load_model

    return load_model(ROOT / "graphmode" / "data" / "costmodel-nvidia-h200.json")


def test_the_headline_of_a_step_at_four_shapes_says_so(analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]]) -> None:
    """The headline's figures are the first shape's, with how many shapes there are and what all their graphs cost
    once (the shape group's), the same in the terminal's sentence and the JSON, which validates against the schema;
    a one-shape step's headline has no shapes."""
    import jsonschema

    from graphmode.reports.headline import sentence
    from graphmode.reports.json_report import load_schema, report_dict

    a, _ = analyses["vit_batch_graphs"]
    h = a.headline
    (group,) = a.prediction.shape_groups
    first = _regions(a)[0]
    assert h is not None and group.one_time is not None and first.one_time is not None
    assert (h.subject, h.shapes, h.shapes_one_time_ns) == ("prediction", 4, pytest.approx(group.one_time.ns))
    assert h.one_time_ns == pytest.approx(first.one_time.ns)
    text = sentence(a)
    assert "runs at 4 input shapes, one graph each" in text and "all 4 graphs cost" in text
    doc = report_dict(a)
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    assert doc["headline"]["shapes"] == 4 and doc["headline"]["sentence"] == text
    h1 = analyses["hf_static_decode"][0].headline
    assert h1 is not None and (h1.shapes, h1.shapes_one_time_ns) == (0, None)


def test_an_eager_period_from_the_timing_run_widens_the_break_even_intervals_upper_end(
        analyses: dict[str, tuple[TraceAnalysis, dict[str, Any]]]) -> None:
    """The timing run may itself run a CPU-bound loop up to TIMING_RUN_SLOWDOWN_BOUND slower than untraced (ResNet-18's
    read 12.4 ms a step where untraced processes read 8.8-11.0): the predicted break-even interval's upper end allows an
    eager period that much shorter, with a note, as a script's own graphs' intervals do."""
    from graphmode.analyzers.break_even import TIMING_RUN_SLOWDOWN_BOUND, smallest_replays

    for name, (a, _) in analyses.items():
        for r in _regions(a):
            assert r.eager_period is not None and r.replay_period is not None and r.one_time is not None
            assert any(n.kind == "prediction_eager_timed" and n["slowdown_bound"] == TIMING_RUN_SLOWDOWN_BOUND for n in r.notes)
            deflated = r.eager_period.ns / (1 + TIMING_RUN_SLOWDOWN_BOUND) - r.replay_period.ns
            assert deflated > 0 and r.break_even_high is not None, name
            assert r.break_even_high >= smallest_replays(r.one_time.ns, deflated), name


def test_the_one_traced_run_alone_says_why_it_predicts_nothing(tmp_path: Path) -> None:
    """DERIVED from the real decode recording: its one traced run's pass alone (the other runs' rows deleted), what
    `--runs 1` or one rank of a job records for a script that built no graph. The step is still found from its kernels,
    but that run kept no launch call to build the graph from: no prediction, and the note says why and what to run,
    not that no repeated region exists."""
    import duckdb

    p = tmp_path / "single.gmtrace"
    p.write_bytes(lzma.decompress((DATA / "hf_static_decode.gmtrace.xz").read_bytes()))
    con = duckdb.connect(str(p))
    for (table,) in con.execute("SELECT table_name FROM information_schema.columns WHERE column_name = 'pass_id'").fetchall():
        con.execute(f"DELETE FROM {table} WHERE pass_id <> 0")
    con.close()
    with load(p) as t:
        assert [x.name for x in t.passes] == ["single"]
        a = analyze(t)
    assert a.prediction is not None and _regions(a) == []
    (n,) = [n for n in a.prediction.notes if n.kind in ("prediction_needs_launch_records", "no_region")]
    assert n.kind == "prediction_needs_launch_records" and n["pass_name"] == "single"
    steps = int(_truths("eager-only", "hf_static_decode")[0]["steps"])
    assert int(n["iterations"]) >= steps
