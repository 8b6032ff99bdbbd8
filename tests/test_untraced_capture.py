"""The one run's untraced capture in the analysis (analyzers.script_graphs tracer gaps, analyzers.per_graph): what
graphmode spent detaching and attaching CUPTI inside the program's capture block is not the program's."""

from __future__ import annotations

from graphmode.analyzers.script_graphs import LifecycleCall, ScriptGraphs, one_time_parts, recording_work


def test_the_tracers_detach_and_attach_are_left_out_of_the_capture_and_its_window() -> None:
    """SYNTHETIC, hand-computed: a torch.cuda.graph block [0, 1000]; CUPTI detached over [100, 300] (the capture
    begins at 300), the body untraced until 500, CUPTI attached over [500, 800], EndCapture [800, 850], the
    instantiation [850, 950]."""
    sg = ScriptGraphs(0, 0, (), {}, (LifecycleCall(5, "capture", 300, 850, 1, 9),
                                     LifecycleCall(5, "instantiate", 850, 950, 1, 10)),
                      recordings=((0, 1000),), recording_kinds=("block",), tracer_gaps=((100, 300), (500, 800)),
                      untraced_captures=frozenset({5}))
    assert sg.gaps_in(0, 1000) == 500 and sg.gaps_in(300, 850) == 300 and sg.gaps_in(850, 950) == 0
    parts = one_time_parts(sg, 5)
    assert parts["capture"] == 250  # the body (200) and EndCapture (50)
    assert parts["instantiate"] == 100 and parts["recordings"] == [(0, 1000)]
    assert recording_work(sg, (0, 1000)) == 350
    # what is left of the block for PyTorch's own work: 1000 - 500 (the tracer's) - 350 = 150
    assert 1000 - sg.gaps_in(0, 1000) - recording_work(sg, (0, 1000)) == 150
