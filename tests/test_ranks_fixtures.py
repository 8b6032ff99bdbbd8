"""The committed two-rank recordings (tests/data/ranks/, recorded on two H200 by tests/data/ranks/record.sh).

Skipped with a reason until they are recorded; then the same checks as the live GPU tests run on
every CI machine, plus the reports on real rank traces.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from graphmode.analyzers.ranks import analyze_ranks
from graphmode.reports.ranks import load_ranks_schema, ranks_report_dict
from graphmode.tracer.rankset import rank_set_paths
from ranks_checks import check_allreduce_job, check_ddp_job
from tests.conftest import DATA

RANKS = DATA / "ranks"
RECORD = "record them on a 2-GPU machine with `bash tests/data/ranks/record.sh`"


def _job(name: str) -> list[Path]:
    folder = RANKS / name
    if not list(folder.glob("*.gmtrace")):
        pytest.skip(f"{folder.relative_to(DATA.parent.parent)} has no recordings yet: {RECORD}")
    paths = rank_set_paths([folder])
    assert paths is not None
    return paths


def test_allreduce_graph_recording() -> None:
    a = analyze_ranks(_job("allreduce_graph"))
    check_allreduce_job(a, replays=20)
    doc = ranks_report_dict(a)
    jsonschema.validate(doc, load_ranks_schema())
    assert json.loads(json.dumps(doc)) == doc


def test_ddp_graph_recording() -> None:
    check_ddp_job(analyze_ranks(_job("ddp_graph")), replays=10)


def test_recordings_are_small() -> None:
    files = list(RANKS.glob("*/*.gmtrace"))
    if not files:
        pytest.skip(RECORD)
    assert all(f.stat().st_size < 4 * 1024 * 1024 for f in files), {f.name: f.stat().st_size for f in files}


def test_the_page_of_a_real_job_stacks_the_ranks_and_aligns_one_replay() -> None:
    from graphmode.views import ranks_page

    a = analyze_ranks(_job("allreduce_graph"))
    page, drawn, note = ranks_page(a)
    assert drawn == 2, note
    data = json.loads(page.split("id='gm-data'>")[1].split("</script>")[0])
    plots = {p["div"]: p.get("figure") or p["timeline"] for p in data["plots"]}
    assert {"gm-heat", "gm-timeline", "gm-replay"} <= set(plots)
    assert len(plots["gm-heat"]["data"][0]["z"]) == 2  # one row of GPU activity per rank
    replay = plots["gm-replay"]  # a canvas timeline's spec (assets/timeline.js)
    assert "replay" in replay["title"]
    # both ranks' lanes in the aligned replay, and the straggler named on the page
    assert replay["lanes"] == ["rank 0", "rank 1"] and plots["gm-timeline"]["lanes"] == ["rank 0", "rank 1"]
    assert a.straggler is not None and f"rank {a.straggler.rank}" in page


def test_a_folder_of_unrelated_programs_is_not_reported_as_the_ranks_of_one_job() -> None:
    """`graphmode report tests/data/scripts` merged 11 recordings of 8 programs as '11 ranks', with min / median /
    max across them. They carry no rank and ran different programs: refused in one line saying so."""
    import os
    import subprocess
    import sys

    from typer.testing import CliRunner

    from graphmode.cli import app

    scripts = DATA / "scripts"
    for command in (["report"], ["report", "--json"], ["view"], ["export", "-f", "perfetto"]):
        result = CliRunner().invoke(app, [command[0], str(scripts), *command[1:]])
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, (command, result.output)
        assert "these 11 traces are not the ranks of one job: they ran 8 different programs, broken_capture.py " \
               "(broken_capture.gmtrace), cuda_python_capture.py (cuda_python_capture.gmtrace, cuda_python_eager_only.gmtrace, …)" \
               in result.output and "pass the traces of one job, or one trace file at a time" in result.output
    assert not list(scripts.glob("*.ranks*"))  # nothing written
    # ranks of two different jobs (each of world size 2, launched by torchrun): different programs
    proc = subprocess.run([sys.executable, "-m", "graphmode", "report", str(RANKS / "ddp_graph" / "ddp.rank0.gmtrace"),
                           str(RANKS / "allreduce_graph" / "ar.rank1.gmtrace")], cwd=DATA.parent.parent, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(DATA.parent.parent)})
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("graphmode: these 2 traces are not the ranks of one job: they ran 2 different programs, "
                                   "ranks_ddp_graph.py (ddp.rank0.gmtrace), ranks_allreduce_graph.py (ar.rank1.gmtrace); "
                                   "pass the traces of one job, or one trace file at a time")
