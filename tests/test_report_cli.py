"""`graphmode report` in-process (typer's CliRunner) and as a subprocess, on a SYNTHETIC trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console
from typer.testing import CliRunner

from graphmode.analyzers import analyze
from graphmode.cli import app
from graphmode.reports.json_report import REPORT_SCHEMA_VERSION, load_schema
from graphmode.reports.terminal import headline, print_report
from graphmode.reports.units import human_ns
from synthetic import SyntheticTrace, basic_trace
from graphmode.tracer.store import load

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def basic_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return basic_trace(tmp_path_factory.mktemp("cli") / "basic.gmtrace")


def test_report_headline_first(basic_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(basic_path), "--detail"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # rich wraps long lines
    # hand calculation in tests/test_analyzers.py: saves 600 ns, costs 6.5 us, 11 replays [9, 17]
    assert result.output.splitlines()[1].startswith("Graph mode saves 600 ns per iteration vs eager")
    assert "costs 6.50 us to build, pays back after 11 replays [9, 17]" in text
    assert text.index("Graph mode saves") < text.index("Break-even") < text.index("Per iteration")
    assert "tracer slowed eager iterations by 82%" in result.output  # 2000 / 1100 = 1.82
    # without --detail: the same headline and break-even, and the detail sections one option away
    short = CliRunner().invoke(app, ["report", str(basic_path)], env={"COLUMNS": "120"})
    assert short.exit_code == 0 and short.output.splitlines()[1] == result.output.splitlines()[1]
    assert "Break-even" in short.output and "Per iteration" not in short.output and "--detail" in short.output


def test_report_json_validates_and_is_versioned(basic_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(basic_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    assert doc["schema_version"] == REPORT_SCHEMA_VERSION == 2
    assert doc["break_even"][0]["replays"] == 11 and doc["graph_costs"][0]["total_ns"] == 6500
    # a note: its kind and numbers for a program, the terminal's sentence for a person
    (slowed,) = [w for w in doc["warnings"] if w["kind"] == "tracer_slowed" and w["values"]["mode"] == "eager"]
    assert (slowed["values"]["traced_ns"], slowed["values"]["untraced_ns"]) == (2000, 1100)
    assert slowed["text"] == ("the tracer slowed eager iterations by 82% (median 2.0 us traced vs 1.1 us untraced): "
                              "CPU and GPU figures come from the slowed pass")
    text = CliRunner().invoke(app, ["report", str(basic_path), "--detail"], env={"COLUMNS": "400"}).output
    assert all(n["text"] in text for n in doc["warnings"] + doc["cannot_compute"])


def test_report_to_a_file(basic_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["report", str(basic_path), "-o", str(out)])
    assert result.exit_code == 0 and json.loads(out.read_text())["overhead_saved"][0]["wall_ns"] == 600
    txt = tmp_path / "r.txt"
    assert CliRunner().invoke(app, ["report", str(basic_path), "-o", str(txt)]).exit_code == 0
    assert "pays back after 11 replays" in txt.read_text()
    bad = CliRunner().invoke(app, ["report", str(basic_path), "-o", str(tmp_path / "no" / "such" / "dir.txt")])
    assert bad.exit_code == 2 and "does not exist" in bad.output and not (tmp_path / "no").exists()


def test_report_missing_and_bad_files_give_one_line(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "nope.gmtrace")])
    assert missing.exit_code == 2 and "no such file" in missing.output and "Traceback" not in missing.output
    junk = tmp_path / "junk.gmtrace"
    junk.write_text("not a trace")
    r = CliRunner().invoke(app, ["report", str(junk)])
    assert r.exit_code == 2 and "not a graphmode trace" in r.output


def test_report_as_a_subprocess(basic_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(basic_path), "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    jsonschema.Draft202012Validator(load_schema()).validate(json.loads(proc.stdout))
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(basic_path)],
                          cwd=REPO, env={**env, "COLUMNS": "120"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Graph mode saves 600 ns" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", "/nonexistent.gmtrace"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such file" in proc.stderr


def test_print_report_for_bench_and_one_mode_statements(tmp_path: Path) -> None:
    t = SyntheticTrace().add_pass(0, "timing")
    t.iterations(0, "graph", [400, 600], start=1000)  # a script that only replays graphs
    path = t.write(tmp_path / "graph_only.gmtrace")
    console = Console(record=True, width=120)
    with load(path) as trace:
        analysis = print_report(analyze(trace), console)
    text = console.export_text()
    assert "No eager-vs-graph comparison in this trace (no eager baseline)" in text
    assert "no eager iterations" in text and "no traced pass" in text
    assert headline(analysis).startswith("No eager-vs-graph comparison")
    # schema-valid even when most metrics are null
    from graphmode.reports.json_report import report_dict

    jsonschema.Draft202012Validator(load_schema()).validate(report_dict(analysis))


@pytest.mark.parametrize(("ns", "text"), [(None, "—"), (12, "12 ns"), (1500, "1.50 us"), (25_000, "25.0 us"),
                                          (2_500_000, "2.50 ms"), (3e9, "3.00 s"), (-300, "-300 ns")])
def test_human_units(ns: float | None, text: str) -> None:
    assert human_ns(ns) == text


def test_report_picks_what_to_write_from_the_output_name(tmp_path: Path) -> None:
    """`report -o r.html` wrote the text report into r.html: the name picks the renderer (.html the page that
    `view` writes, .json the JSON, any other name the text), as pyinstrument's renderers are picked."""
    trace = REPO / "tests" / "data" / "dag-graph.gmtrace"
    runner = CliRunner()
    for name in ("r.html", "v.html", "r.json", "r.txt", "r.report"):
        command = "view" if name == "v.html" else "report"
        result = runner.invoke(app, [command, str(trace), "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_bytes()
    assert page.startswith(b"<!DOCTYPE html>") and page == (tmp_path / "v.html").read_bytes()
    assert json.loads((tmp_path / "r.json").read_text())["graph_costs"][0]["total_ns"] == pytest.approx(506_700, abs=100)
    for name in ("r.txt", "r.report"):
        text = (tmp_path / name).read_text()
        assert "costs 506.7 us to build, pays back after 9 replays" in text and "<html" not in text
    both = runner.invoke(app, ["report", str(trace), "--json", "-o", str(tmp_path / "x.html")])
    assert both.exit_code == 2 and "--json writes JSON, but -o" in both.output and "x.html names an HTML page" in both.output
    assert not (tmp_path / "x.html").exists()
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(trace), "-o", str(tmp_path / "s.HTML")],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith(f"report written to {tmp_path / 's.HTML'} (")
    assert (tmp_path / "s.HTML").read_bytes() == page


def test_a_rank_sets_report_picks_what_to_write_from_the_output_name(tmp_path: Path) -> None:
    job = REPO / "tests" / "data" / "ranks" / "ddp_graph"
    runner = CliRunner()
    for command, name in (("report", "r.html"), ("view", "v.html"), ("report", "r.json")):
        result = runner.invoke(app, [command, str(job), "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "r.html").read_bytes() == (tmp_path / "v.html").read_bytes()
    assert json.loads((tmp_path / "r.json").read_text())["kind"] == "graphmode-ranks"


def test_a_glob_or_folder_naming_one_trace_gives_that_files_report(tmp_path: Path) -> None:
    """`report 'tests/data/dag-graph.gmtr*'` gave a one-rank job's report ('one-time —'); the file alone gives 506.7 us."""
    import shutil

    trace = REPO / "tests" / "data" / "dag-graph.gmtrace"
    folder = tmp_path / "one"
    folder.mkdir()
    copy = folder / trace.name
    shutil.copy(trace, copy)
    runner = CliRunner()

    def report(named: Path | str, *args: str) -> str:
        result = runner.invoke(app, ["report", str(named), *args], env={"COLUMNS": "150"})
        assert result.exit_code == 0, result.output
        return result.output

    assert "costs 506.7 us to build, pays back after 9 replays" in report(trace)
    for args in ((), ("--json",)):
        assert report(REPO / "tests" / "data" / "dag-graph.gmtr*", *args) == report(trace, *args)
        assert report(folder, *args) == report(copy, *args) == report(folder / "*.gmtrace", *args)
    page = runner.invoke(app, ["view", str(folder), "-o", str(tmp_path / "v.html")])
    assert page.exit_code == 0 and "ranks" not in page.output and (tmp_path / "v.html").stat().st_size > 0
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(REPO / "tests" / "data" / "dag-graph.gmtr*")],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "150"}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "costs 506.7 us to build, pays back after 9 replays" in proc.stdout
    assert "ranks: 1" not in proc.stdout and "one-time —" not in proc.stdout
