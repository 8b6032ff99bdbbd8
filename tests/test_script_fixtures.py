"""Real `graphmode run` recordings of the examples (H200, tests/data/scripts/), checked without a GPU.

Each was recorded with `graphmode run` on the GPU machine (torch_cudagraph with --steps 20,
cuda_python_capture with --detail node); the expectations come from what each example does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmode.analyzers import analyze
from graphmode.cli import app
from tests.conftest import DATA, ROOT
from graphmode.tracer.store import Trace, load
from graphmode.tracer.validate import validate_trace

SCRIPTS = DATA / "scripts"
ALL = sorted(SCRIPTS.glob("*.gmtrace"))


def _marked_lines(example: str, tag: str) -> set[int]:
    lines = (ROOT / "examples" / example).read_text().splitlines()
    return {i + 1 for i, line in enumerate(lines) if f"# {tag}" in line}


def _lines_of(sources: list[str], example: str) -> set[int]:
    out = set()
    for s in sources:
        m = re.match(r"(.*):(\d+) \S+$", s)
        assert m and Path(m.group(1)).name == example, s
        out.add(int(m.group(2)))
    return out


@pytest.fixture(scope="module", params=[p.name for p in ALL] or ["none"])
def recording(request: pytest.FixtureRequest) -> Trace:
    if request.param == "none":
        pytest.skip("no script recordings under tests/data/scripts")
    return load(SCRIPTS / request.param)


def test_every_recording_is_valid_and_says_how_it_ended(recording: Trace) -> None:
    assert validate_trace(recording) == []
    assert recording.meta["workload"] == "script"
    assert recording.meta["status"] in ("complete", "failed")
    assert recording.meta["script"]["exit_code"] == (0 if recording.meta["status"] == "complete" else 1)
    assert recording.meta["dropped_records"] == 0
    assert [p.detail for p in recording.passes] in (["graph"], ["node"])
    assert recording.legacy_profile and analyze(recording).cpu_profile is not None  # schema 1: meta.cpu_profile


def test_every_recording_reports_and_renders(recording: Trace, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(recording.path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    # The report speaks of this recording: its status, its traced pass, and as many graphs with a cost
    # as the trace holds graphs it saw built.
    assert data["schema_version"] == 1 and data["status"] == recording.meta["status"]
    assert data["traced_detail"] == recording.passes[0].detail and data["dropped_records"] == 0
    built = recording.rows("SELECT count(DISTINCT graph_id) FROM graph_events WHERE event IN ('capture', 'build', 'instantiate')")[0][0]
    assert len(data["graph_costs"]) == built
    assert data["cpu_profile"]["samples"] > 0
    res = runner.invoke(app, ["view", str(recording.path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    payload = json.loads(page.split("id='gm-data'>")[1].split("</script>")[0])
    assert "gm-timeline-full" in {p["div"] for p in payload["plots"]}
    assert "<h2>CPU profile</h2>" in page  # the run's pyinstrument profile, read from the profile tables


def test_torch_cudagraph() -> None:
    t = load(SCRIPTS / "torch_cudagraph.gmtrace")
    (gid, origin, n_nodes), = t.rows("SELECT graph_id, origin, num_nodes FROM graphs")
    assert origin == "capture" and n_nodes >= 3
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id=? GROUP BY 1", [gid]))
    assert ev["capture"] == 1 and ev["instantiate"] == 1 and ev["launch"] == 20
    kernel_sources = [s for (s,) in t.rows("SELECT source FROM graph_nodes WHERE node_type='kernel'")]
    assert _lines_of(kernel_sources, "torch_cudagraph.py") == _marked_lines("torch_cudagraph.py", "LINE")
    assert {"eager loop", "replay loop"} <= {n for (n,) in t.rows("SELECT name FROM markers WHERE kind='nvtx'")}
    iters = dict(t.rows("SELECT mode, count(*) FROM markers WHERE kind='iteration' GROUP BY 1"))
    assert iters["graph"] == 20
    assert iters["eager"] == 20 + 3  # the example's 20 eager steps + its 3 side-stream warm-up steps
    # lifecycle call sites: capture and instantiate come from the `with torch.cuda.graph(g):` line
    with_line = next(i + 1 for i, l in enumerate((ROOT / "examples/torch_cudagraph.py").read_text().splitlines())
                     if l.startswith("with torch.cuda.graph(g)"))
    sites = [s for (s,) in t.rows("SELECT source FROM api_calls WHERE category IN ('capture', 'instantiate') AND source <> ''")]
    assert sites and _lines_of(sites, "torch_cudagraph.py") == {with_line}


def test_broken_capture_is_diagnosed_at_the_offending_line() -> None:
    t = load(SCRIPTS / "broken_capture.gmtrace")
    assert t.meta["status"] == "failed"
    failed = dict(t.rows("SELECT return_code, count(*) FROM api_calls WHERE return_code <> 0 GROUP BY 1"))
    assert 900 in failed  # cudaErrorStreamCaptureUnsupported on the synchronisation .item() needs
    pitfalls = [p for p in analyze(t).pitfalls if p.kind == "capture_failed"]
    assert pitfalls
    breaks = _marked_lines("broken_capture.py", "BREAKS")
    assert _lines_of([pitfalls[0].where], "broken_capture.py") == breaks


def test_cuda_python_capture_node_detail() -> None:
    t = load(SCRIPTS / "cuda_python_capture.gmtrace")
    (gid, n_nodes, n_edges), = t.rows("SELECT graph_id, num_nodes, num_edges FROM graphs")
    assert (n_nodes, n_edges) == (16, 15)  # 16 launches captured in one stream: a chain
    ev = dict(t.rows("SELECT event, count(*) FROM graph_events WHERE graph_id=? GROUP BY 1", [gid]))
    assert ev == {"capture": 1, "instantiate": 1, "upload": 1, "launch": 200}
    assert t.rows("SELECT count(*) FROM gpu_spans WHERE graph_id=? AND kind='kernel'", [gid])[0][0] == 16 * 200
    sources = [s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes")]
    assert _lines_of(sources, "cuda_python_capture.py") == _marked_lines("cuda_python_capture.py", "LINE")
    a = analyze(t)
    assert {m.mode: m.iterations for m in a.modes} == {"eager": 200, "graph": 200}


def test_cupy_capture() -> None:
    t = load(SCRIPTS / "cupy_graph.gmtrace")
    (gid, origin, n_nodes), = t.rows("SELECT graph_id, origin, num_nodes FROM graphs")
    assert origin == "capture" and n_nodes == 20  # 10 iterations of `v * 1.0001 + 0.5`: two kernels each
    assert t.rows("SELECT count(*) FROM graph_events WHERE event='launch' AND graph_id=?", [gid])[0][0] == 100
    sources = [s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes")]
    assert _lines_of(sources, "cupy_graph.py") == _marked_lines("cupy_graph.py", "LINE")


def test_torch_compile_records_a_graph_per_shape() -> None:
    t = load(SCRIPTS / "torch_compile.gmtrace")
    launched = t.rows("""SELECT g.graph_id, count(*) FROM graphs g JOIN graph_events e USING (pass_id, graph_id)
                         WHERE e.event = 'launch' GROUP BY 1 ORDER BY 1""")
    # shape (64, 256): 2 x 50 calls, the first of them recording; shape (128, 256): recorded again
    assert [n for _, n in launched] == [99, 49]
    assert t.rows("SELECT count(*) FROM graph_events WHERE event='instantiate'")[0][0] >= 2
    sources = [s for (s,) in t.rows("SELECT DISTINCT source FROM graph_nodes WHERE source <> ''")]
    # Inductor's generated code is skipped: the nodes point at the user's function
    assert sources and all(Path(s.split(":")[0]).name == "torch_compile.py" for s in sources)


def test_launch_sources_attribute_eager_kernels_to_their_line() -> None:
    """Recorded with `graphmode run --launch-sources --detail node examples/cuda_python_capture.py`."""
    t = load(SCRIPTS / "cuda_python_launch_sources.gmtrace")
    assert t.meta["params"]["launch_sources"] is True
    line = _marked_lines("cuda_python_capture.py", "LINE")
    rows = t.rows("""SELECT a.source, count(*) FROM gpu_spans s JOIN api_calls a USING (pass_id, correlation_id)
                     WHERE s.kind = 'kernel' AND s.graph_id = 0 GROUP BY 1""")
    assert len(rows) == 1 and _lines_of([rows[0][0]], "cuda_python_capture.py") == line and rows[0][1] == 16 * 200
    eager = [s for s in analyze(t).source_lines if s.kind == "eager launch" and s.count == 16 * 200]
    assert len(eager) == 1 and _lines_of([eager[0].source], "cuda_python_capture.py") == line


def test_graphmode_own_calls_are_not_in_the_recordings(recording: Trace) -> None:
    """The topology is read by graphmode itself; those driver calls are not the program's."""
    own = recording.rows("SELECT count(*) FROM api_calls WHERE name IN ('cuGraphGetNodes', 'cuGraphGetEdges', "
                         "'cuGraphNodeGetType', 'cuGraphKernelNodeGetParams', 'cuFuncGetName')")
    assert own[0][0] == 0
