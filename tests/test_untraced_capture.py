"""The one run's untraced capture in the analysis (analyzers.script_graphs tracer gaps, analyzers.per_graph): what
graphmode spent detaching and attaching CUPTI inside the program's capture block is not the program's."""

from __future__ import annotations

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
