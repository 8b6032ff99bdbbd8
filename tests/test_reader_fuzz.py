"""Every reader command on damaged, truncated, locked, foreign, hostile-string and schema-edge traces.

All traces are generated here (copies of a real recording, damaged on purpose, or synthetic traces
written by TraceWriter and then edited with DuckDB). Each of `info`, `report`, `report --json`,
`view`, `export --format perfetto` and `export --format parquet` must end with either a correct
result or one clear line (`graphmode: ...`), never a traceback and never a hang (a watchdog ends
the test process with a stack dump after WATCHDOG_S), and must leave the input byte-for-byte as it
was, with no file added next to it.
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from perfetto_rules import read_perfetto
from synthetic_timeline import write_synthetic_trace
from typer.testing import CliRunner

from graphmode.cli import app
from graphmode.tracer.schema import SCHEMA_VERSION, TABLES
from tests.conftest import DATA, ROOT

WATCHDOG_S = 120
HOSTILE = "exp[lr=0.1] [/x] [bold red]loud[/] \\[esc] [link=file:///etc/passwd]x[/link] ü‮rtl"
COMMANDS = ["info", "report", "report-json", "view", "perfetto", "parquet"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"


def _edit(path: Path, *statements: str) -> Path:
    """Edits a written trace with plain SQL (what a foreign tool or a hand-edit could do)."""
    con = duckdb.connect(str(path))
    for s in statements:
        con.execute(s)
    con.close()
    return path


def _synthetic(tmp: Path, name: str) -> Path:
    path = tmp / name
    write_synthetic_trace(path, iterations=3, kernels_per_iteration=3)
    return path


def _meta(key: str, value: object) -> str:
    return f"UPDATE meta SET value = '{json.dumps(value)}' WHERE key = '{key}'"


# name -> builder(tmp) -> path. Each builds one trace of one kind.
CASES: dict[str, Callable[[Path], Path]] = {
    "empty": lambda d: _write(d / "empty.gmtrace", b""),
    "text": lambda d: _write(d / "text.gmtrace", b"not a trace\n"),
    "duck-magic-junk": lambda d: _write(d / "junk.gmtrace", b"\0" * 8 + b"DUCK" + random.Random(5).randbytes(40_000)),
    "other-duckdb": lambda d: _edit(d / "other.gmtrace", "CREATE TABLE sales (x INTEGER)"),
    "truncated-third": lambda d: _cut(d, 1 / 3),
    "truncated-most": lambda d: _cut(d, 0.9),
    "bytes-flipped-1": lambda d: _flip(d, 1),
    "bytes-flipped-2": lambda d: _flip(d, 2),
    "bytes-flipped-3": lambda d: _flip(d, 3),
    "schema-minus-5": lambda d: _edit(_synthetic(d, "v-5.gmtrace"), _meta("schema_version", -5)),
    "schema-zero": lambda d: _edit(_synthetic(d, "v0.gmtrace"), _meta("schema_version", 0)),
    "schema-string": lambda d: _edit(_synthetic(d, "vs.gmtrace"), _meta("schema_version", "2")),
    "schema-bool": lambda d: _edit(_synthetic(d, "vb.gmtrace"), _meta("schema_version", True)),
    "schema-newer": lambda d: _edit(_synthetic(d, "vn.gmtrace"), _meta("schema_version", SCHEMA_VERSION + 1)),
    "no-format": lambda d: _edit(_synthetic(d, "nf.gmtrace"), "DELETE FROM meta WHERE key = 'format'"),
    "missing-table": lambda d: _edit(_synthetic(d, "mt.gmtrace"), "DROP TABLE gpu_spans"),
    "missing-column": lambda d: _edit(_synthetic(d, "mc.gmtrace"), "ALTER TABLE gpu_spans DROP COLUMN stream_id"),
    "wrong-column-type": lambda d: _edit(_synthetic(d, "wt.gmtrace"), "ALTER TABLE gpu_spans ALTER start_ns TYPE VARCHAR"),
    "meta-not-json": lambda d: _edit(_synthetic(d, "mj.gmtrace"), "UPDATE meta SET value = '{oops' WHERE key = 'workload'"),
    "dropped-not-a-count": lambda d: _edit(_synthetic(d, "dc.gmtrace"), _meta("dropped_records", "abc")),
    "null-times": lambda d: _edit(_synthetic(d, "nt.gmtrace"),
                                  "UPDATE gpu_spans SET start_ns = NULL WHERE rowid % 3 = 0",
                                  "UPDATE api_calls SET end_ns = NULL WHERE rowid % 5 = 0",
                                  "UPDATE markers SET start_ns = NULL WHERE rowid = 2"),
    "null-everywhere": lambda d: _edit(_synthetic(d, "ne.gmtrace"),
                                       "UPDATE gpu_spans SET name = NULL, graph_id = NULL, stream_id = NULL WHERE rowid % 2 = 0",
                                       "UPDATE api_calls SET category = NULL, thread_id = NULL WHERE rowid % 4 = 0",
                                       "UPDATE markers SET mode = NULL, iteration = NULL WHERE rowid % 3 = 0",
                                       "UPDATE passes SET detail = NULL WHERE pass_id = 0"),
    "negative-durations": lambda d: _edit(_synthetic(d, "nd.gmtrace"),
                                          "UPDATE gpu_spans SET end_ns = start_ns - 1000 WHERE rowid % 4 = 1",
                                          "UPDATE markers SET end_ns = start_ns - 5 WHERE kind = 'iteration' AND rowid % 2 = 0"),
    "no-rows": lambda d: _edit(_synthetic(d, "nr.gmtrace"), *[f"DELETE FROM {t}" for t in TABLES if t != "meta"]),
    "extra-table-and-column": lambda d: _edit(_synthetic(d, "ex.gmtrace"), "CREATE TABLE future (x INTEGER)",
                                              "ALTER TABLE gpu_spans ADD COLUMN future_col INTEGER"),
    "hostile-strings": lambda d: _hostile(d),
    "thousands-of-meta-keys": lambda d: _edit(_synthetic(d, "mk.gmtrace"),
                                              "INSERT INTO meta SELECT 'key' || i, '\"' || repeat('x', 500) || '\"' FROM range(5000) t(i)",
                                              f"INSERT INTO meta VALUES ('callback_errors', '{json.dumps([f'error {i}' for i in range(500)])}')"),
    "hostile-path": lambda d: _synthetic(_mkdir(d / "runs" / "exp[lr=0.1] [/x]"), "t [bold].gmtrace"),
    "version-1-recording": lambda d: _copy(d, DATA / "scripts" / "cuda_python_capture.gmtrace"),
}


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True)
    return p


def _copy(d: Path, src: Path) -> Path:
    out = d / src.name
    shutil.copyfile(src, out)
    return out


def _cut(d: Path, keep: float) -> Path:
    data = (DATA / "dag-node.gmtrace").read_bytes()
    out = d / "cut.gmtrace"
    out.write_bytes(data[: int(len(data) * keep)])
    return out


def _flip(d: Path, seed: int) -> Path:
    data = bytearray((DATA / "dag-node.gmtrace").read_bytes())
    rng = random.Random(seed)
    for _ in range(200):  # past the header: DuckDB must find the damage itself
        i = rng.randrange(4096, len(data))
        data[i] ^= 1 << rng.randrange(8)
    out = d / f"flipped{seed}.gmtrace"
    out.write_bytes(bytes(data))
    return out


def _hostile(d: Path) -> Path:
    path = d / "hostile.gmtrace"
    write_synthetic_trace(path, iterations=3, kernels_per_iteration=3, kernel_name=HOSTILE, nvtx_message=HOSTILE)
    reason = f"the script raised ValueError: expected [batch, seq] got [seq] {HOSTILE}"
    return _edit(path, _meta("workload", HOSTILE), _meta("status", "failed"), _meta("status_reason", reason),
                 f"INSERT INTO meta VALUES ('callback_errors', '{json.dumps([HOSTILE, 'topology of graph 2: [/x]'])}')",
                 f"INSERT INTO meta VALUES ('{HOSTILE}', '{json.dumps(HOSTILE)}')",
                 f"UPDATE api_calls SET source = '{HOSTILE}:12 step'")


def _run(command: str, trace: Path, out_dir: Path) -> tuple[int, str, Path | None]:
    runner = CliRunner()
    args = {
        "info": ["info", str(trace)],
        "report": ["report", str(trace)],
        "report-json": ["report", "--json", str(trace)],
        "view": ["view", str(trace), "-o", str(out_dir / "v.html")],
        "perfetto": ["export", str(trace), "-f", "perfetto", "-o", str(out_dir / "p.pftrace")],
        "parquet": ["export", str(trace), "-f", "parquet", "-o", str(out_dir / "pq")],
    }[command]
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    try:
        result = runner.invoke(app, args, env={"COLUMNS": "400"})
    finally:
        faulthandler.cancel_dump_traceback_later()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        raise AssertionError(f"{command} on {trace.name} raised:\n" + "".join(traceback.format_exception(result.exception)))
    output = {"view": out_dir / "v.html", "perfetto": out_dir / "p.pftrace", "parquet": out_dir / "pq"}.get(command)
    return result.exit_code, result.output, output


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_reader_command_gives_a_result_or_one_clear_line(case: str, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    trace = CASES[case](src)
    before = {p: _digest(p) for p in trace.parent.iterdir()}
    for command in COMMANDS:
        out_dir = tmp_path / f"out-{command}"
        out_dir.mkdir()
        code, output, produced = _run(command, trace, out_dir)
        assert "Traceback" not in output and "MarkupError" not in output, (case, command, output)
        if code != 0:
            lines = [line for line in output.splitlines() if line.strip()]
            assert code in (1, 2) and lines and lines[-1].startswith("graphmode: "), (case, command, output)
            assert len(lines[-1]) < 600, (case, command, lines[-1])
            assert produced is None or not produced.exists() or command == "parquet", (case, command)
            continue
        if command == "report-json":
            doc = json.loads(output[output.index("{"):])
            assert doc["schema_version"] == 2
        elif command == "perfetto":
            assert produced is not None and read_perfetto(produced).problems == [], (case, command)
        elif command == "parquet":
            assert produced is not None and len(list(produced.glob("*.parquet"))) == len(TABLES)
        elif command == "view":
            assert produced is not None and produced.stat().st_size > 0
        elif command == "info":
            assert "tables" in output and output.count("\n") < 200, (case, output.count("\n"))
    after = {p: _digest(p) for p in trace.parent.iterdir()}
    assert after == before, f"{case}: the input folder changed: {sorted(set(after) ^ set(before))}"


def test_damaged_files_are_refused_not_misread(tmp_path: Path) -> None:
    """The kinds that cannot be read say why in their own words."""
    expect = {"empty": "not a graphmode trace", "text": "not a graphmode trace", "other-duckdb": "not a graphmode trace",
              "schema-minus-5": "schema version -5 was never written", "schema-newer": "newer than this graphmode reads",
              "schema-string": "without a valid schema version", "missing-table": "missing table(s) ['gpu_spans']",
              "missing-column": "has no column stream_id", "wrong-column-type": "is VARCHAR, not BIGINT",
              "truncated-third": "damaged or truncated", "no-format": "not a graphmode trace"}
    for case, words in expect.items():
        d = tmp_path / case
        d.mkdir()
        code, output, _ = _run("info", CASES[case](d), d)
        assert code == 2 and words in " ".join(output.split()), (case, output)


def test_readable_edge_cases_report_what_they_left_out(tmp_path: Path) -> None:
    d = tmp_path / "n"
    d.mkdir()
    trace = CASES["null-times"](d)
    code, output, _ = _run("report", trace, d)
    text = " ".join(output.split())
    assert code == 0 and "gpu_spans row(s) have no start_ns or end_ns (NULL): left out" in text
    code, output, _ = _run("info", trace, d)
    assert code == 0 and "invariants broken" in output and "have no start_ns or end_ns" in " ".join(output.split())
    d = tmp_path / "neg"
    d.mkdir()
    code, output, _ = _run("report", CASES["negative-durations"](d), d)
    assert code == 0 and "end before they start (negative duration): left out" in " ".join(output.split())


def test_hostile_strings_print_verbatim(tmp_path: Path) -> None:
    trace = _hostile(tmp_path)
    for command in ("info", "report"):
        code, output, _ = _run(command, trace, tmp_path)
        assert code == 0, output
        flat = "".join(output.split())
        # markup is not read, and the right-to-left override (which would reorder what follows it on screen) is
        # written out as an escape (reports.names.printable)
        assert "".join(HOSTILE.replace("\u202e", "\\u202e").split()) in flat, (command, output)
        assert "\u202e" not in output
        assert "".join("expected [batch, seq] got [seq]".split()) in flat
    (tmp_path / "p").mkdir()
    path_case = CASES["hostile-path"](tmp_path / "p")
    code, output, _ = _run("info", path_case, tmp_path)
    assert code == 0 and "exp[lr=0.1] [/x]" in output and "t [bold].gmtrace" in output


def test_a_trace_held_open_by_a_writer_is_in_use_not_damaged(tmp_path: Path) -> None:
    """Another process holds the file open for writing (DuckDB's lock): say so, name the process, say what to do."""
    trace = _synthetic(tmp_path, "busy.gmtrace")
    before = _digest(trace)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('open', flush=True); time.sleep(60)", str(trace)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        for command in COMMANDS:
            out_dir = tmp_path / f"o-{command}"
            out_dir.mkdir()
            code, output, _ = _run(command, trace, out_dir)
            text = " ".join(output.split())
            assert code == 2 and f"in use by another process (process {holder.pid})" in text, (command, output)
            assert "damaged" not in text and "record it again" not in text and "cp " in text
    finally:
        holder.kill()
        holder.wait()
    assert _digest(trace) == before


def test_a_killed_writer_leaves_a_readable_trace_marked_recording(tmp_path: Path) -> None:
    """SIGKILL while recording (the write-ahead log not yet checkpointed): readable, status 'recording', unchanged by reading."""
    trace = tmp_path / "killed.gmtrace"
    code = ("import sys, time; sys.path.insert(0, sys.argv[2]); from graphmode.tracer.store import TraceWriter, PassInfo; "
            "w = TraceWriter(sys.argv[1], {'workload': 'synthetic'}); "
            "w.append('markers', {'pass_id': [0], 'kind': ['phase'], 'name': ['eager'], 'start_ns': [1], 'end_ns': [2]}); "
            "print('written', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(trace), str(ROOT)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
    proc.kill()
    proc.wait()
    before = {p.name: _digest(p) for p in tmp_path.iterdir()}
    code_, output, _ = _run("info", trace, tmp_path)
    assert code_ == 0 and "run status: recording" in output and re.search(r"markers\s*│\s*1\s*│", output), output
    assert {p.name: _digest(p) for p in tmp_path.iterdir()} == before


def test_output_equal_to_the_input_is_refused(tmp_path: Path) -> None:
    trace = _synthetic(tmp_path, "t.gmtrace")
    before = _digest(trace)
    runner = CliRunner()
    for args in (["view", str(trace), "-o", str(trace)], ["export", str(trace), "-f", "perfetto", "-o", str(trace)],
                 ["export", str(trace), "-f", "parquet", "-o", str(trace)], ["report", str(trace), "-o", str(trace)],
                 ["report", "--json", str(trace), "-o", str(trace)],
                 ["report", str(trace), "-o", str(tmp_path / "." / "t.gmtrace")]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and "is the input trace" in res.output and "Traceback" not in res.output, (args, res.output)
    link = tmp_path / "alias.json"
    link.symlink_to(trace)
    res = runner.invoke(app, ["report", "--json", str(trace), "-o", str(link)])
    assert res.exit_code == 2 and "is the input trace" in res.output
    assert _digest(trace) == before


def test_missing_output_folders_are_named_not_created(tmp_path: Path) -> None:
    trace = _synthetic(tmp_path, "t.gmtrace")
    runner = CliRunner()
    missing = tmp_path / "no" / "such"
    for args in (["view", str(trace), "-o", str(missing / "v.html")],
                 ["export", str(trace), "-f", "perfetto", "-o", str(missing / "p.pftrace")],
                 ["export", str(trace), "-f", "parquet", "-o", str(missing / "pq")],
                 ["report", str(trace), "-o", str(missing / "r.txt")]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and f"folder {missing}" in " ".join(res.output.split()) and "does not exist" in res.output, res.output
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--window", "0:inf", "must be finite"), ("--window", "nan:5", "must be finite"), ("--window", "-inf:3", "must be finite"),
    ("--window", "5", "wants START:END"), ("--window", "1:2:3", "wants START:END"),
    ("--window", "3:1", "END must be greater than START; write --window 1:3"),
    # a negative window was drawn as if it meant something (-5:3 showed the pass's first 3 ms)
    ("--window", "-5:3", "from the start of the traced pass, so START and END cannot be negative; write --window 0:3"),
    ("--window", "-5:-3", "cannot be negative; write --window 1.5:20"), ("--window", "2.5:2.5", "write --window 2.5:3.5"),
    ("--iterations", "-5:3", "iterations count from 0, so START and END cannot be negative; write --iterations 0:3"),
    ("--iterations", "1.5:3", "wants START:END"), ("--iterations", "3:2", "END must be greater than START; write --iterations 2:3"),
    ("--iterations", "4:4", "END must be greater than START; write --iterations 4:5"),
])
def test_view_range_options_give_clear_errors(tmp_path: Path, option: str, value: str, words: str) -> None:
    trace = _synthetic(tmp_path, "t.gmtrace")
    res = CliRunner().invoke(app, ["view", str(trace), option, value, "-o", str(tmp_path / "v.html")])
    assert res.exit_code == 2 and words in res.output and "Traceback" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "v.html").exists()


def test_a_negative_window_is_refused_as_a_subprocess(tmp_path: Path) -> None:
    trace = _synthetic(tmp_path, "t.gmtrace")
    proc = subprocess.run([sys.executable, "-m", "graphmode", "view", str(trace), "--window", "-5:3", "-o", str(tmp_path / "v.html")],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "" and not (tmp_path / "v.html").exists()
    assert proc.stderr == ("graphmode: --window -5:3: times are milliseconds from the start of the traced pass, so START "
                           "and END cannot be negative; write --window 0:3\n")


def test_version_and_help_are_quick_and_light() -> None:
    proc = subprocess.run([sys.executable, "-m", "graphmode", "--version"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    from graphmode import __version__

    assert proc.returncode == 0 and proc.stdout.strip() == f"graphmode {__version__}"


def test_info_on_every_committed_recording_is_fast_and_short() -> None:
    """`graphmode info` used to print the whole pyinstrument profile: 4.7 MB and minutes on some recordings."""
    recordings = sorted(DATA.rglob("*.gmtrace")) + [ROOT / "graphmode" / "data" / "chain-h200.gmtrace"]  # every one
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    for path in recordings:
        cpu = []
        for _ in range(3):  # up to three tries: the best counts
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "graphmode", "info", str(path)], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=60)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU time of the command (user + system): what it costs, whatever else this shared machine runs
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            assert proc.returncode == 0, proc.stderr
            assert wall < 10, (path.name, wall)
            if cpu[-1] < 1.0:
                break
        lines = proc.stdout.count("\n")
        assert min(cpu) < 1.0, (path.name, cpu)
        assert lines < 200, (path.name, lines)
