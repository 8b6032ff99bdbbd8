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
    from graphmode.reports.ranks_html import render_ranks_html

    a = analyze_ranks(_job("allreduce_graph"))
    page, drawn, note = render_ranks_html(a)
    assert drawn == 2, note
    data = json.loads(page.split("id='gm-data'>")[1].split("</script>")[0])
    plots = {p["div"]: p["figure"] for p in data["plots"]}
    assert {"gm-heat", "gm-timeline", "gm-replay"} <= set(plots)
    assert len(plots["gm-heat"]["data"][0]["z"]) == 2  # one row of GPU activity per rank
    replay = plots["gm-replay"]
    assert "replay" in replay["layout"]["title"]["text"]
    # both ranks' lanes in the aligned replay, and the straggler named on the page
    lanes = json.dumps(replay["layout"])
    assert all(f"rank {r}" in lanes for r in (0, 1))
    assert a.straggler is not None and f"rank {a.straggler.rank}" in page
