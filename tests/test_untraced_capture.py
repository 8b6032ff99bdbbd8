"""The one run's untraced capture in the analysis (analyzers.script_graphs tracer gaps, analyzers.per_graph): what
graphmode spent detaching and attaching CUPTI inside the program's capture block is not the program's."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import load_benchmark, unpacked_xz

from graphmode.analyzers.script_graphs import LifecycleCall, ScriptGraphs, one_time_parts, recording_work


def test_the_tracers_detach_attach_and_own_graph_are_left_out_of_the_capture_block() -> None:
    """SYNTHETIC, hand-computed: a torch.cuda.graph block [0, 1000]; CUPTI detached over [100, 300] (capture_begin at
    300), the body untraced until capture_end at 500, capture_end (the end of the capture and the instantiation) until
    600, then CUPTI attached and graphmode's own empty graph run over [600, 900]."""
    sg = ScriptGraphs(0, 0, (), {}, (LifecycleCall(5, "capture", 300, 500, 1, 0),
                                     LifecycleCall(5, "instantiate", 500, 600, 1, 0)),
                      recordings=((0, 1000),), recording_kinds=("block",), tracer_gaps=((100, 300), (600, 900)),
                      untraced_captures=frozenset({5}))
    assert sg.gaps_in(0, 1000) == 500 and sg.gaps_in(300, 500) == 0 and sg.gaps_in(500, 600) == 0
    parts = one_time_parts(sg, 5)
    assert parts["capture"] == 200 and parts["instantiate"] == 100 and parts["recordings"] == [(0, 1000)]
    assert recording_work(sg, (0, 1000)) == 300
    # what is left of the block for PyTorch's own work: 1000 - 500 (the tracer's) - 300 = 200
    assert 1000 - sg.gaps_in(0, 1000) - recording_work(sg, (0, 1000)) == 200


S29 = Path(__file__).resolve().parent / "data" / "scripts" / "untraced_capture_s29"


def _own_clock_one_time(workload: str, proc: int, subject: str) -> float:
    """The traced process's own clock (its GRAPHMODE_TRUTH figures): capture block + first replay - steady replay
    (benchmarks/script_fidelity.figures), graphmode's detach, attach and own graph inside the block included."""
    recs = [json.loads(line) for line in (S29 / "results.jsonl").read_text().splitlines()]
    (t,) = [r["truth"] for r in recs if r["workload"] == workload and r["config"] == "graphmode" and r["proc"] == proc]
    k = "" if subject == "graph" else f"_{subject}"
    figs = load_benchmark("script_fidelity").figures(t.get(f"eager{k}_ns"), t.get(f"graph{k}_ns"),
                                                     t.get(f"capture_block{k}_ns"), t.get(f"first_replay{k}_ns"))
    return float(figs["one_time"])


def test_a_recorded_decode_step_captured_untraced_is_adopted_and_costs_what_its_process_clocked(tmp_path: Path) -> None:
    """A real recording (H200, session 29 device call 3): the default `graphmode run` of a transformers decode step
    graphed with torch.cuda.graph. Its capture ran with CUPTI detached through capture_end; the graph is adopted from
    its first replay (123 kernels and the copy node the driver ran as a kernel, no edges), its capture and instantiation
    are the host-clock spans the run kept, nothing calibrated comes off, the eager twin is still found, and the one-time
    cost is within 6% of the same process's own clock (0.95x: graphmode's first replay is timed from the GPU)."""
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    with load(unpacked_xz(S29 / "hf_graph-graphmode-01.gmtrace.xz", tmp_path)) as t:
        (run,) = t.meta["runs"]
        (c,) = run["untraced_captures"]["captures"]
        gid = c["graph_id"]
        assert c["reason"] == "capture_end" and gid and "hf_static_decode.py" in c["source"]
        (num_nodes, num_edges, origin), = t.rows("SELECT num_nodes, num_edges, origin FROM graphs WHERE graph_id = ?", [gid])
        types = dict(t.rows("SELECT node_type, count(*) FROM graph_nodes WHERE graph_id = ? GROUP BY 1", [gid]))
        assert (num_nodes, num_edges, origin) == (124, 0, "capture") and types == {"kernel": 123, "memcpy": 1}
        assert t.rows("SELECT count(*) FROM graphs")[0][0] == 1  # graphmode's own empty graph is not in the trace
        spans = dict(t.rows("SELECT event, [start_ns, end_ns] FROM graph_events WHERE graph_id = ? AND event IN "
                            "('capture', 'instantiate')", [gid]))
        assert spans == {"capture": [c["begin_ns"], c["body_end_ns"]], "instantiate": [c["body_end_ns"], c["end_ns"]]}
        a = analyze(t)
    (g,) = [g for g in a.graphs if g.graph_id == gid]
    cost = g.cost
    assert cost is not None and cost.capture_untraced and cost.tracer_correction_ns is None
    assert cost.build_ns == c["body_end_ns"] - c["begin_ns"] and cost.instantiate_ns == c["end_ns"] - c["body_end_ns"]
    assert "one_time_capture_untraced" in [n.kind for n in g.notes]
    assert g.eager is not None and g.eager.run == "window"  # its kernels are the eager loop's (the copy node apart)
    gaps = (c["begin_ns"] - c["detach_start_ns"]) + (c["attach_end_ns"] - c["end_ns"])
    assert gaps > 10 * cost.total_ns  # graphmode's detach, attach and own graph: left out
    own = _own_clock_one_time("hf_graph", 1, "graph") - gaps
    assert 0.9 <= cost.total_ns / own <= 1.05, (cost.total_ns, own)
    be = g.break_even
    assert be is not None and be.interval_low is not None and be.interval_low <= 2 <= be.replays + 1  # untraced: 2


def test_a_recorded_graph_per_batch_size_has_its_first_capture_untraced_and_the_rest_corrected(tmp_path: Path) -> None:
    """A real recording (H200, session 29 device call 3): a timm ViT with a graph per batch size. Only the process's
    first capture runs untraced (MAX_UNTRACED_CAPTURES); the three after it are traced and corrected as before."""
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    with load(unpacked_xz(S29 / "vit_batches-graphmode-01.gmtrace.xz", tmp_path)) as t:
        (c,) = t.meta["runs"][0]["untraced_captures"]["captures"]
        a = analyze(t)
    costs = sorted(((g.graph_id, g.cost) for g in a.graphs if g.cost is not None), key=lambda x: x[0])
    assert len(costs) == 4 and costs[0][0] == c["graph_id"]
    first = costs[0][1]
    assert first.capture_untraced and first.tracer_correction_ns is None
    assert all(not k.capture_untraced and k.tracer_correction_ns is not None and k.tracer_correction_ns < 0
               for _, k in costs[1:])
    gaps = (c["begin_ns"] - c["detach_start_ns"]) + (c["attach_end_ns"] - c["end_ns"])
    own = _own_clock_one_time("vit_batches", 1, "b1") - gaps
    assert 0.95 <= first.total_ns / own <= 1.05, (first.total_ns, own)
