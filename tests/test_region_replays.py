"""`graphmode.trace()` around replays of graphs the program built before the block, on real recordings
(tests/data/scripts/region_s22/recording.log: the H200, session 22, device call 4).

Before session 22 such a region asked CUPTI for graph-level records (GRAPH_TRACE), and the graph's first replay in
it crashed the process (benchmarks/notes/s22, call 3). The region now folds each replay from its nodes' records
(tracer.decode.fold_graph_nodes). What it can and cannot say of such a graph: its replays, at their period; not its
one-time cost, which was paid before the trace (its first replay there read 7.1 ms against 12.6 us steady: the
tracer attaching, which the report used to call the graph's build cost)."""

from __future__ import annotations

import json
import lzma
import statistics
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from graphmode.analyzers import analyze
from graphmode.analyzers.results import TraceAnalysis
from graphmode.analyzers.tracer_cost import NODE_RECORDS_REPLAY_SLOWDOWN
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.reports.terminal import print_report
from graphmode.tracer.store import Trace, load
from graphmode.views import html_page
from rich.console import Console

DATA = Path(__file__).resolve().parent / "data" / "scripts" / "region_s22"


@pytest.fixture(scope="module", params=["region_after_graph_chain", "region_vit"])
def region(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Trace, TraceAnalysis]:
    out = tmp_path_factory.mktemp("region") / f"{request.param}.gmtrace"
    out.write_bytes(lzma.decompress((DATA / f"{request.param}.gmtrace.xz").read_bytes()))
    t = load(out)
    return request.param, t, analyze(t)


def _truth() -> dict[str, Any]:
    (line,) = [x for x in (DATA / "recording.log").read_text().splitlines() if x.startswith("GRAPHMODE_TRUTH ")]
    return json.loads(line.split(" ", 1)[1])


def test_each_replay_is_one_graph_span_folded_from_its_nodes(region: tuple[str, Trace, TraceAnalysis]) -> None:
    name, t, _ = region
    (cfg,) = [r["config"] for r in t.meta["runs"]]
    assert cfg["graph_trace"] is False and cfg["detail"] == "graph"
    spans = t.sql("SELECT graph_id, start_ns, end_ns FROM gpu_spans WHERE kind = 'graph' ORDER BY start_ns")
    replays = {"region_after_graph_chain": 20, "region_vit": 5 * 30}[name]
    assert len(spans["graph_id"]) == replays and len(set(spans["graph_id"].tolist())) == 1 and spans["graph_id"][0] != 0
    assert (spans["end_ns"] > spans["start_ns"]).all() and (spans["start_ns"][1:] >= spans["end_ns"][:-1]).all()
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE kind = 'kernel'")[0][0] == 0  # every node is in its replay


def test_a_graph_built_before_the_region_has_no_one_time_cost(region: tuple[str, Trace, TraceAnalysis]) -> None:
    name, t, a = region
    (g,) = a.graphs
    assert g.origin == "unknown" and g.cost is None and g.break_even is not None and g.break_even.one_time_ns is None
    assert "one_time_before_trace" in [n.kind for n in g.notes]
    assert "replays_from_node_records" in [n.kind for n in a.cannot_compute]
    # what the first replay's launch call took beyond the others is in the trace, and is not the graph's: the tracer
    # attaching to an executable it had not seen (7.1 ms against 14-28 us; a ViT's 412 us against 240 us)
    calls = t.sql("SELECT end_ns - start_ns AS d FROM api_calls WHERE category = 'graph_launch' ORDER BY start_ns")["d"]
    assert calls[0] > 1.5 * statistics.median(calls[1:].tolist())
    console = Console(record=True, width=200)
    print_report(a, console=console)
    text = console.export_text()
    assert "it cost" not in text.split("\n", 3)[1] + text.split("\n", 3)[2]  # the headline names no build cost
    assert "built before tracing started" in text and "had been built before tracing started" in text
    d = report_dict(a)
    jsonschema.validate(json.loads(json.dumps(d)), load_schema())
    (jg,) = d["graphs"]
    assert jg["cost"] is None and jg["break_even"]["one_time_ns"] is None
    page, _ = html_page(t, a)
    assert "built before tracing started" in page and "node by node" in page


def test_the_replay_period_against_the_programs_own_clock_in_the_same_process() -> None:
    """The ViT program timed its replays itself (blocks of 30, each ended by a synchronize) before, inside and after
    the region. graphmode's replay period is within 1% of the program's clock inside the region; that clock read the
    replays 4.7-4.9% slower than outside it (recording every node), within the bound the report states."""
    truth = _truth()
    out = Path(__file__).resolve().parent / "data" / "scripts" / "region_s22" / "region_vit.gmtrace.xz"
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.gmtrace"
        p.write_bytes(lzma.decompress(out.read_bytes()))
        with load(p) as t:
            (g,) = analyze(t).graphs
    inside = statistics.median(truth["traced"]) * 1e3
    outside = statistics.median(truth["untraced_before"] + truth["untraced_after"]) * 1e3
    assert g.graph is not None
    assert abs(g.graph.period.trimmed_mean / inside - 1) < 0.01, (g.graph.period.trimmed_mean, inside)
    assert 0 < inside / outside - 1 <= NODE_RECORDS_REPLAY_SLOWDOWN, inside / outside


def test_builds_the_pass_could_not_link_are_not_called_before_tracing(tmp_path: Path) -> None:
    """A measuring run without callbacks (examples/two_threads.py, two threads each capturing a graph) records the
    captures and instantiations as API calls it cannot link to the graphs' ids: those graphs were built in the trace,
    so they keep their first-launch excess, and nothing says they were built before it."""
    with load(Path(__file__).resolve().parent / "data" / "scripts" / "two_threads_measure_only.gmtrace") as t:
        a = analyze(t)
        assert {g.origin for g in a.graphs} == {"unknown"} and all(g.cost is not None for g in a.graphs)
        kinds = {n.kind for g in a.graphs for n in g.notes} | {n.kind for n in (a.graph_budget.notes if a.graph_budget else ())}
        assert not kinds & {"one_time_before_trace", "budget_built_before_trace"}


def test_the_break_even_interval_allows_replays_read_node_by_node_synthetic(tmp_path: Path) -> None:
    """SYNTHETIC (tests/synthetic_script.py): 20 eager iterations 1,100 ns apart, a capture, instantiate and upload of
    1,000 ns in all, and 20 replays the GPU runs back to back every 1,000 ns (GPU-bound). Saved 100 a replay, break-even
    ceil(1,000 / 100) = 10. The interval's lower end allows the one-time cost 1.5x too high (a traced run's capture):
    ceil(666.7 / 100) = 7; recorded as a region, node by node, the replays may also read 15% long:
    ceil(666.7 / (1,100 - 1,000 / 1.15)) = ceil(666.7 / 230.4) = 3."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from synthetic_script import eager_then_graph

    eager = [1000 + 1100 * i for i in range(20)]
    replays = [(40_000 + 200 * i, (41_000 + 1000 * i, 41_995 + 1000 * i), None) for i in range(20)]
    lows = {}
    for nodes in (False, True):
        def region(t: Any, nodes: bool = nodes) -> None:
            if nodes:
                t.meta["runs"] = [{"pass_id": 0, "config": {"name": "measure", "detail": "graph", "graph_trace": False}}]
        path = eager_then_graph(tmp_path / f"nodes-{nodes}.gmtrace", eager_starts=eager, last_eager_end=eager[-1] + 200,
                                capture=(30_000, 30_500), instantiate=(30_600, 31_000), upload=(31_000, 31_100),
                                replays=replays, extra=region)
        with load(path) as t:
            a = analyze(t)
        (g,) = a.graphs
        assert g.graph is not None and g.graph.bound == "gpu" and g.break_even is not None
        assert (g.break_even.eager_ns, g.break_even.graph_ns, g.break_even.one_time_ns, g.break_even.replays) == \
            (1100.0, 1000.0, 1000.0, 10)
        lows[nodes] = g.break_even.interval_low
        assert ("replays_from_node_records" in [n.kind for n in a.cannot_compute]) is nodes
    assert lows == {False: 7, True: 3}
