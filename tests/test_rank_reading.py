"""How analyzers.ranks reads a job's ranks fast: the single-trace analysis's metrics alone (analyzers.analyze_metrics),
the installed cost models read once, the ranks' metadata through one database (tracer.store.read_metas), and the
ranks read by worker processes. Each is checked to give what the slower way gave, on the committed two-rank H200
recordings (tests/data/ranks) and on SYNTHETIC ranks (tests/synthetic_ranks.py)."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from graphmode.analyzers import analyze, analyze_metrics, sources, to_dict
from graphmode.analyzers.costmodel import find_model
from graphmode.analyzers.critical_path import critical_path_notes, critical_paths
from graphmode.analyzers.notes import note
from graphmode.analyzers.rank_page import rank_page_data
from graphmode.analyzers.ranks import analyze_ranks
from graphmode.analyzers.run import build_run
from graphmode.reports.ranks import render_ranks_json
from graphmode.reports.ranks_html import render_ranks_html
from graphmode.tracer.store import TraceError, load, read_meta, read_metas, trace_database
from synthetic_ranks import RankPlan, job
from tests.conftest import DATA

NODE_DETAIL = DATA / "legacy" / "cuda_python_capture_v1.gmtrace"  # one node-detail pass, graph 1 of 16 nodes
RECORDED = sorted((DATA / "ranks").glob("*/*.gmtrace"))
# what analyze() adds to analyze_metrics(): derived from the metrics, and not read by the job's report
DERIVED = {"coverage", "torch_graphs", "graph_budget", "pitfalls", "cpu_profile", "prediction", "headline", "kernels"}


def _metrics_of(analysis: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in analysis.items() if k not in DERIVED}
    out["kernels"] = [{k: v for k, v in kernel.items() if k != "sources"} for kernel in analysis["kernels"]]
    return out


@pytest.mark.parametrize("path", [*RECORDED, NODE_DETAIL], ids=lambda p: p.name)
def test_the_metrics_alone_are_those_of_the_whole_analysis(path: Path) -> None:
    with load(path) as trace:
        whole = to_dict(analyze(trace))
        metrics = to_dict(analyze_metrics(build_run(trace), find_model(trace.meta)))
    assert whole["graphs"] or whole["graph_costs"]  # a recording with graphs: the per-graph figures are compared
    assert _metrics_of(metrics) == _metrics_of(whole)
    assert metrics["prediction"] is None and metrics["pitfalls"] == [] and metrics["headline"] is None
    with load(path) as trace:
        without = to_dict(analyze_metrics(build_run(trace), find_model(trace.meta), details=False))
    assert without["critical_paths"] == [] and without["source_lines"] == []
    assert {k: v for k, v in without.items() if k not in ("critical_paths", "source_lines")} == \
           {k: v for k, v in metrics.items() if k not in ("critical_paths", "source_lines")}


@pytest.mark.parametrize("damage", [
    "DELETE FROM gpu_spans WHERE graph_id = 1 AND graph_node_id <> 0",  # a graph whose nodes have no spans
    "INSERT INTO graph_edges SELECT pass_id, graph_id, to_node_id, from_node_id FROM graph_edges LIMIT 1",  # a cycle
], ids=["no_spans", "cycle"])
def test_the_critical_paths_notes_alone_are_theirs(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "damaged.gmtrace"
    shutil.copy(NODE_DETAIL, path)
    with duckdb.connect(str(path)) as con:
        assert con.execute("SELECT count(*) FROM graph_edges").fetchone() != (0,)
        con.execute(damage)
    with load(path) as trace:
        paths, notes = critical_paths(trace, 0)
        assert paths == [] and len(notes) == 1
        assert critical_path_notes(trace, 0) == notes
    with load(NODE_DETAIL) as trace:
        assert critical_path_notes(trace, 0) == critical_paths(trace, 0)[1] == []


@pytest.mark.parametrize("limit", [0, 1, 500])
def test_whether_source_lines_are_truncated_is_known_without_them(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr(sources, "MAX_SOURCE_LINES", limit)
    for path in [*RECORDED, NODE_DETAIL]:
        with load(path) as trace:
            for p in trace.passes:
                assert sources.source_lines_truncated(trace, p.pass_id) == sources.source_lines(trace, p.pass_id)[1]
    with load(NODE_DETAIL) as trace:  # one line: truncated below one row
        assert sources.source_lines_truncated(trace, 0) is (limit == 0)


def test_the_recorded_jobs_read_by_worker_processes_give_the_same_report() -> None:
    if not RECORDED:
        pytest.skip("tests/data/ranks has no recordings yet")
    for folder in sorted({p.parent for p in RECORDED}):
        paths = sorted(folder.glob("*.gmtrace"))
        assert render_ranks_json(analyze_ranks(paths, workers=2)) == render_ranks_json(analyze_ranks(paths, workers=1))


def test_synthetic_ranks_read_by_worker_processes_give_the_same_report(tmp_path: Path) -> None:
    # 5 SYNTHETIC ranks on two hosts, one straggling, one file damaged: what the pool returns is put in the job's
    # tables in the order given, so the report is the one a single process writes, the damaged file's note included
    plans = [RankPlan(r, 6, host="hostA" if r < 3 else "hostB", clock_offset=0 if r < 3 else 5_000,
                      graph_late=200 if r == 4 else 10 * r) for r in range(5)] + [RankPlan(5, 6)]
    paths = job(tmp_path, plans)
    paths[5].write_bytes(paths[5].read_bytes()[:5000])  # truncated, as by a full disk
    seen: list[tuple[int, int]] = []
    pooled = analyze_ranks(paths, workers=2, progress=lambda done, total: seen.append((done, total)))
    single = analyze_ranks(paths, workers=1)
    assert render_ranks_json(pooled) == render_ranks_json(single)
    assert [s.identity.rank for s in pooled.ranks] == [0, 1, 2, 3, 4]
    assert any(w.kind == "trace_left_out" and "train.rank5.gmtrace" in str(w["error"]) for w in pooled.warnings)
    assert pooled.straggler is not None and pooled.straggler.rank == 4
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_the_page_read_by_worker_processes_is_the_same(tmp_path: Path) -> None:
    # 18 SYNTHETIC ranks, more than the page draws span by span (analyzers.rank_page.MAX_TIMELINE_RANKS), rank 9
    # straggling; rank 17's file damaged after the analysis: the page says it could not draw it, either way
    paths = job(tmp_path, [RankPlan(r, 18, graph_late=300 if r == 9 else 0) for r in range(18)])
    a = analyze_ranks(paths, workers=2)
    paths[17].write_bytes(paths[17].read_bytes()[:5000])
    pooled, single = rank_page_data(a, workers=2), rank_page_data(a, workers=1)
    assert render_ranks_html(a, pooled) == render_ranks_html(a, single)
    assert len(pooled.drawn) == 16 and 9 in pooled.drawn and pooled.timeline and pooled.replay
    assert [n.kind for n in pooled.notes] == ["rank_page_ranks_drawn", "rank_page_not_drawn"]


def test_a_note_crosses_processes_whole() -> None:
    n = note("collective_counts_differ", op="AllReduce", short_ranks=(1, 3), most=3)
    back = pickle.loads(pickle.dumps(n))
    assert back == n and back["short_ranks"] == (1, 3)
    with pytest.raises(TypeError):
        back.values["most"] = 4  # type: ignore[index]  # still read-only


def test_metadata_read_through_one_database_is_each_files_own(tmp_path: Path) -> None:
    paths = job(tmp_path, [RankPlan(r, 3) for r in range(3)])
    paths[1].write_bytes(paths[1].read_bytes()[:5000])
    missing = tmp_path / "absent.gmtrace"
    metas = read_metas([*paths, missing])
    assert metas[0] == read_meta(paths[0]) and metas[2] == read_meta(paths[2])
    assert metas[0]["rank"]["rank"] == 0 and metas[2]["rank"]["rank"] == 2
    for bad, path in ((metas[1], paths[1]), (metas[3], missing)):
        assert isinstance(bad, TraceError)
        with pytest.raises(TraceError) as alone:
            read_meta(path)
        assert str(bad) == str(alone.value)


def test_traces_opened_in_one_database_are_each_their_own(tmp_path: Path) -> None:
    # a worker opens rank after rank in one database (tracer.store.trace_database): each trace in a connection of its
    # own sees its own file's tables, two at once included, and closing one detaches its file
    paths = job(tmp_path, [RankPlan(0, 2), RankPlan(1, 2)])
    database = trace_database()
    tables = ["api_calls", "gpu_spans", "graph_events", "graph_nodes"]
    try:
        with load(NODE_DETAIL, database) as a, load(paths[1], database) as b, load(paths[1]) as alone:
            for t in (a, b):
                assert t.meta == read_meta(t.path) and t.notes == []
            assert b.counts(tables) == alone.counts(tables) and a.counts(tables) != b.counts(tables)
            with load(NODE_DETAIL) as a_alone:
                assert a.counts(tables) == a_alone.counts(tables)
            assert to_dict(analyze(b)) == to_dict(analyze(alone))
        attached = {r[0] for r in database.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        assert not any(name.startswith("trace") for name in attached), attached
        paths[1].write_bytes(paths[1].read_bytes()[:5000])
        with pytest.raises(TraceError) as damaged:
            load(paths[1], database)
        with pytest.raises(TraceError) as alone_damaged:
            load(paths[1])
        assert str(damaged.value) == str(alone_damaged.value)
        with load(paths[0], database) as again:  # the database still opens traces after a failed one
            assert again.meta["rank"]["rank"] == 0
    finally:
        database.close()
