"""Tracer tests on a real GPU (marker `gpu`; skipped with a reason where none is present).

They record the built-in workloads at small sizes and check the trace against what the workload
did: kernel counts, graph ids and node ids, correlation, lifecycle, verified outputs, topology.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from graphmode.tracer.store import Trace, load
from graphmode.tracer.validate import validate_trace

pytestmark = pytest.mark.gpu

ITERS = 30
CHAIN_KERNELS = 20
DAG_WIDTH, DAG_DEPTH = 4, 3


def _record(tmp_path_factory: pytest.TempPathFactory, workload: str, detail: str, **params: int) -> Trace:
    from graphmode.tracer.runner import record
    from graphmode.tracer.workloads import make_workload

    out = tmp_path_factory.mktemp(f"{workload}-{detail}") / "trace.gmtrace"
    record(make_workload(workload, **params), out, iterations=ITERS, warmup=3, detail=detail)
    return load(out)


@pytest.fixture(scope="module", params=["graph", "node"])
def chain(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Trace:
    return _record(tmp_path_factory, "chain", request.param, n=100_000, kernels=CHAIN_KERNELS)


@pytest.fixture(scope="module", params=["graph", "node"])
def dag(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Trace:
    return _record(tmp_path_factory, "dag", request.param, n=1 << 16, width=DAG_WIDTH, depth=DAG_DEPTH)


def _kernels_in_phase(t: Trace, pass_id: int, phase: str, from_graph: bool) -> int:
    cond = "s.graph_id <> 0" if from_graph else "s.graph_id = 0"
    return int(t.rows(
        f"""SELECT count(*) FROM gpu_spans s, markers m
            WHERE s.pass_id = ? AND m.pass_id = s.pass_id AND m.kind = 'phase' AND m.name = ?
              AND s.kind = 'kernel' AND {cond} AND s.start_ns >= m.start_ns AND s.end_ns <= m.end_ns""",
        [pass_id, phase])[0][0])


def test_chain_complete_verified_and_valid(chain: Trace) -> None:
    assert chain.meta["status"] == "complete", chain.meta.get("status_reason")
    assert chain.meta["dropped_records"] == 0
    assert chain.meta["results_verified"] and all(chain.meta["results_verified"].values()), chain.meta["verification"]
    assert [p.detail for p in chain.passes] == ["timing", chain.meta["params"]["detail"]]
    assert validate_trace(chain) == []


def test_chain_kernel_counts_per_mode(chain: Trace) -> None:
    traced = chain.passes[1].pass_id
    for mode in ("eager", "eager_sync_each"):
        assert _kernels_in_phase(chain, traced, mode, from_graph=False) == CHAIN_KERNELS * ITERS, mode
    iters = chain.rows("SELECT mode, count(*) FROM markers WHERE kind='iteration' GROUP BY mode ORDER BY mode")
    assert dict(iters) == {"eager": 2 * ITERS, "eager_sync_each": 2 * ITERS, "graph": 2 * ITERS}
    if chain.passes[1].detail == "node":
        assert _kernels_in_phase(chain, traced, "replay", from_graph=True) == CHAIN_KERNELS * ITERS
        # plus the first launch, inside the build phase
        total = chain.rows("SELECT count(*) FROM gpu_spans WHERE pass_id=? AND graph_id<>0 AND kind='kernel'", [traced])
        assert total[0][0] == CHAIN_KERNELS * (ITERS + 1)
    else:
        graph_spans = chain.rows("SELECT count(*) FROM gpu_spans WHERE pass_id=? AND kind='graph'", [traced])
        assert graph_spans[0][0] == ITERS + 1
        assert _kernels_in_phase(chain, traced, "replay", from_graph=True) == 0  # GRAPH_TRACE replaces them


def test_replayed_work_has_ids_in_topology(chain: Trace) -> None:
    traced = chain.passes[1].pass_id
    orphans = chain.rows(
        """SELECT count(*) FROM gpu_spans s WHERE s.pass_id = ? AND s.graph_id <> 0 AND NOT EXISTS (
             SELECT 1 FROM graphs g WHERE g.pass_id = s.pass_id AND g.graph_id = s.graph_id)""", [traced])
    assert orphans[0][0] == 0
    if chain.passes[1].detail == "node":
        missing = chain.rows(
            """SELECT count(*) FROM gpu_spans s WHERE s.pass_id = ? AND s.graph_id <> 0 AND (s.graph_node_id = 0 OR NOT EXISTS (
                 SELECT 1 FROM graph_nodes n WHERE n.pass_id = s.pass_id AND n.node_id = s.graph_node_id))""", [traced])
        assert missing[0][0] == 0
        per_node = chain.rows("SELECT graph_node_id, count(*) FROM gpu_spans WHERE pass_id=? AND graph_id<>0 GROUP BY 1", [traced])
        assert len(per_node) == CHAIN_KERNELS and {c for _, c in per_node} == {ITERS + 1}


def test_eager_kernels_correlate_to_earlier_launch(chain: Trace) -> None:
    traced = chain.passes[1].pass_id
    rows = chain.rows(
        """SELECT count(*), count(a.correlation_id), count(*) FILTER (WHERE a.category = 'kernel_launch' AND a.start_ns <= s.start_ns)
           FROM gpu_spans s LEFT JOIN api_calls a ON a.pass_id = s.pass_id AND a.correlation_id = s.correlation_id
           WHERE s.pass_id = ? AND s.kind = 'kernel' AND s.graph_id = 0""", [traced])
    total, correlated, launched_before = rows[0]
    assert total == CHAIN_KERNELS * (2 * ITERS + 3) and correlated == total and launched_before == total


def test_lifecycle_once_per_graph(chain: Trace) -> None:
    for p in chain.passes:
        ev = dict(chain.rows("SELECT event, count(*) FROM graph_events WHERE pass_id=? AND event <> 'launch' GROUP BY 1", [p.pass_id]))
        assert ev == {"capture": 1, "instantiate": 1, "upload": 1, "destroy": 1}
        ops = dict(chain.rows("SELECT name, count(*) FROM markers WHERE pass_id=? AND kind='op' GROUP BY 1", [p.pass_id]))
        assert ops == {"capture": 1, "instantiate": 1, "upload": 1, "first_launch": 1}
    traced = chain.passes[1].pass_id
    api = dict(chain.rows("SELECT category, count(*) FROM api_calls WHERE pass_id=? GROUP BY 1", [traced]))
    assert api["instantiate"] == 1 and api["upload"] == 1 and api["capture"] == 2  # begin + end
    assert api["graph_launch"] == ITERS + 1
    launches = chain.rows("SELECT count(*) FROM graph_events WHERE pass_id=? AND event='launch'", [traced])
    assert launches[0][0] == ITERS + 1
    # graphmode's own topology reads are not reported as the program's calls
    own = chain.rows("SELECT count(*) FROM api_calls WHERE name IN ('cuGraphGetNodes', 'cuGraphGetEdges', "
                     "'cuGraphNodeGetType', 'cuGraphKernelNodeGetParams', 'cuFuncGetName')")
    assert own[0][0] == 0


def test_dag_topology_equals_the_one_built(dag: Trace) -> None:
    assert dag.meta["status"] == "complete" and all(dag.meta["results_verified"].values()), dag.meta["verification"]
    assert validate_trace(dag) == []
    for p in dag.passes:
        (gid, origin, num_nodes, num_edges), = dag.rows(
            "SELECT graph_id, origin, num_nodes, num_edges FROM graphs WHERE pass_id=?", [p.pass_id])
        assert origin == "explicit"
        assert num_nodes == 1 + DAG_WIDTH * DAG_DEPTH + 1 + 1
        assert num_edges == DAG_WIDTH + DAG_WIDTH * (DAG_DEPTH - 1) + DAG_WIDTH + 1
        types = dict(dag.rows("SELECT node_type, count(*) FROM graph_nodes WHERE pass_id=? GROUP BY 1", [p.pass_id]))
        assert types == {"memset": 1, "kernel": DAG_WIDTH * DAG_DEPTH + 1, "memcpy": 1}
        deg = dag.rows(
            """SELECT n.node_type, n.name,
                      (SELECT count(*) FROM graph_edges e WHERE e.pass_id=n.pass_id AND e.to_node_id=n.node_id) AS indeg,
                      (SELECT count(*) FROM graph_edges e WHERE e.pass_id=n.pass_id AND e.from_node_id=n.node_id) AS outdeg
               FROM graph_nodes n WHERE n.pass_id=?""", [p.pass_id])
        by = {(t, name): (i, o) for t, name, i, o in deg if name != "branch_step"}
        assert by[("memset", "memset")] == (0, DAG_WIDTH)
        assert by[("kernel", "join_sum")] == (DAG_WIDTH, 1)
        assert by[("memcpy", "memcpy")] == (1, 0)
        branch = [(i, o) for t, name, i, o in deg if name == "branch_step"]
        assert sorted(branch) == sorted([(1, 1)] * DAG_WIDTH * DAG_DEPTH)


def test_dag_eager_twin_uses_several_streams(dag: Trace) -> None:
    traced = dag.passes[1].pass_id
    streams = dag.rows(
        """SELECT count(DISTINCT s.stream_id) FROM gpu_spans s, markers m WHERE s.pass_id=? AND m.pass_id=s.pass_id
           AND m.kind='phase' AND m.name='eager' AND s.kind='kernel' AND s.start_ns BETWEEN m.start_ns AND m.end_ns""", [traced])
    assert streams[0][0] == DAG_WIDTH + 1
    if dag.passes[1].detail == "node":
        nodes = dag.rows("SELECT count(DISTINCT graph_node_id) FROM gpu_spans WHERE pass_id=? AND graph_id<>0", [traced])
        assert nodes[0][0] == 1 + DAG_WIDTH * DAG_DEPTH + 1 + 1  # kernels, memset and memcpy nodes all seen


def test_bench_cli_writes_a_trace(tmp_path: Path) -> None:
    out = tmp_path / "cli.gmtrace"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "graphmode", "bench", "chain", "-n", "20", "--kernels", "5", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"trace written to {out}" in proc.stdout
    t = load(out)
    assert t.meta["params"]["kernels_per_step"] == 5 and t.meta["params"]["iterations"] == 20
    assert validate_trace(t) == []
