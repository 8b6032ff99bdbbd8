"""The run model: what one trace recorded, built once per command and read by every analyzer.

`build_run(trace) -> Run` reads the passes by role (timing, traced, structure, stamps) and whether a
runner marked the iterations (`graphmode bench`, `graphmode.compare`); what takes longer to derive (a
script's graphs mapped onto a pass, that pass's iterations, a pass's line stamps) is derived on first
use and kept on the Run, so an analysis, its page and its diagnostics read one copy instead of
deriving it again from the trace (issue 28: the script graphs were rebuilt 10 times for one report
and page). The Run holds the trace as a read-only handle for the analyzers' own queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphmode.analyzers.untraced_windows import UntracedWindow, window_breaks, window_periods
from graphmode.analyzers.inference import (
    Occurrences,
    eager_occurrences,
    graph_replays,
    nvtx_ranges,
)
from graphmode.analyzers.periods import IterationTable, script_iterations
from graphmode.analyzers.repetition import loop_iterations, loops_beside_graphs
from graphmode.analyzers.script_graphs import ScriptGraphs, choose_passes, script_graphs
from graphmode.analyzers.stamps import StampsOf as StampsOf  # its home is the stamps module
from graphmode.analyzers.stamps import has_stamps, line_stamps
from graphmode.analyzers.untraced import LineTiming, timing_pass_id
from graphmode.analyzers.untraced import line_timing as _line_timing
from graphmode.tracer.store import PassInfo, Trace

# A pass's line stamps (analyzers.inference.line_stamps) by pass id: Run.line_stamps, which reads each pass's once


@dataclass(frozen=True, eq=False)
class Run:
    """One trace's run: its passes by role and what the analyzers derive from them, each derived once."""

    trace: Trace
    timing: PassInfo | None  # the pass without CUPTI activity ('timing' detail): undistorted wall times
    traced: PassInfo | None  # the first pass with CUDA activity (node, else graph detail)
    structure: PassInfo | None  # a script trace's pass that recorded the graphs (analyzers.script_graphs.choose_passes)
    measuring: PassInfo | None  # a script trace's pass that times the graphs' replays and eager work
    stamps: PassInfo | None  # the timing run that stamped the script's lines ('stamps' detail)
    runner: bool  # a runner (graphmode bench, graphmode.compare) marked the iterations: not a script trace
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def passes(self) -> list[PassInfo]:
        return list(self.trace.passes)

    def pass_info(self, pass_id: int | None) -> PassInfo | None:
        return next((p for p in self.trace.passes if p.pass_id == pass_id), None)

    def script_graphs(self, timing_pass: int | None = None) -> ScriptGraphs | None:
        """analyzers.script_graphs.script_graphs of this trace, mapped onto `timing_pass` (default: the measuring
        run), derived once per pass."""
        key = ("script_graphs", timing_pass)
        if key not in self._cache:
            sg = script_graphs(self.trace, timing_pass=timing_pass, stamps_of=self.line_stamps)
            self._cache[key] = sg
            if sg is not None:  # the default pass and its own id are one derivation
                self._cache[("script_graphs", sg.timing_pass)] = sg
        out: ScriptGraphs | None = self._cache[key]
        return out

    def replays(self, sg: ScriptGraphs) -> list[Occurrences]:
        """analyzers.inference.graph_replays of the pass `sg` is mapped onto, derived once per pass."""
        key = ("replays", sg.timing_pass, id(sg))
        if key not in self._cache:
            self._cache[key] = graph_replays(self.trace, sg)
        out: list[Occurrences] = self._cache[key]
        return out

    def iterations(self, sg: ScriptGraphs) -> tuple[IterationTable, dict[int, int]]:
        """table_for(trace, sg): the timing pass's iterations and the units per replay, derived once per pass."""
        key = ("iterations", sg.timing_pass, id(sg))
        if key not in self._cache:
            self._cache[key] = table_for(self.trace, sg, self.replays(sg))
        out: tuple[IterationTable, dict[int, int]] = self._cache[key]
        return out

    def line_timing(self, sg: ScriptGraphs) -> LineTiming | None:
        """analyzers.untraced.line_timing of the iterations of the pass `sg` is mapped onto (the timing run's untraced
        CPU periods for them, matched through the structure pass's line stamps), derived once; None where the trace has
        neither a timing run nor stamps in the structure pass, or where that pass is the structure pass (the one traced
        run) and either is missing."""
        key = ("line_timing", sg.timing_pass, id(sg))
        if key not in self._cache:
            out = None
            timed = timing_pass_id(self.trace) is not None
            if sg.structure_pass == sg.timing_pass:  # the one traced run stamped lines and a timing run followed
                detail = sg if timed and self.has_stamps(sg.structure_pass) else None
            elif timed or self.has_stamps(sg.structure_pass):
                detail = self.script_graphs(timing_pass=sg.structure_pass)
            else:
                detail = None
            if detail is not None:
                out = _line_timing(self.trace, self.iterations(sg)[0], self.iterations(detail)[0], self.line_stamps)
            self._cache[key] = out
        lt: LineTiming | None = self._cache[key]
        return lt

    def line_stamps(self, pass_id: int) -> dict[str, np.ndarray]:
        """analyzers.inference.line_stamps of a pass, read once."""
        key = ("line_stamps", pass_id)
        if key not in self._cache:
            self._cache[key] = line_stamps(self.trace, pass_id)
        out: dict[str, np.ndarray] = self._cache[key]
        return out

    def window_periods(self, pass_id: int) -> list[tuple[UntracedWindow, np.ndarray]]:
        """analyzers.untraced_windows.window_periods of a pass (its untraced windows' periods), derived once."""
        key = ("window_periods", pass_id)
        if key not in self._cache:
            self._cache[key] = window_periods(self.trace, pass_id, self.line_stamps)
        out: list[tuple[UntracedWindow, np.ndarray]] = self._cache[key]
        return out

    def has_stamps(self, pass_id: int) -> bool:
        key = ("has_stamps", pass_id)
        if key not in self._cache:
            self._cache[key] = has_stamps(self.trace, pass_id)
        return bool(self._cache[key])


def build_run(trace: Trace) -> Run:
    """The run model of a trace: its passes by role; the rest is derived on first use and kept."""
    structure, measuring = choose_passes(trace)
    runner = bool(trace.rows("SELECT count(*) FROM markers WHERE kind = 'iteration' AND name <> 'inferred'")[0][0])
    return Run(trace, trace.pass_by_detail("timing"), trace.pass_by_detail("node", "graph"), structure, measuring,
               trace.pass_by_detail("stamps"), runner)


def table_for(trace: Trace, sg: ScriptGraphs, replays: list[Occurrences] | None = None) -> tuple[IterationTable, dict[int, int]]:
    """The timing pass's iterations, and per graph the eager iterations a replay does the work of. A script that
    built no graph: its loop's steps, as graph 0's eager iterations (analyzers.repetition.loop_iterations: between
    synchronizations, between executions of its call line, or the block of kernels it repeats; one part per input shape).
    A script that built graphs: besides their eager twins, a loop of other eager work before the first graph or after
    the last replay, as graph 0's (analyzers.repetition.loops_beside_graphs).
    `replays`: the pass's graph_replays where already derived."""
    eager = eager_occurrences(trace, sg)
    if any(g.kernels for g in sg.graphs):  # an eager loop besides the graphs (the model run another way)
        eager = eager + loops_beside_graphs(trace, sg, eager)
    elif not eager:
        eager = loop_iterations(trace, sg)
    units = {o.graph_id: o.units for o in eager}
    replays = graph_replays(trace, sg) if replays is None else replays
    # an untraced window breaks every stretch across it: its iterations were not recorded (analyzers.untraced_windows)
    return script_iterations(trace, sg, replays, eager, nvtx_ranges(trace, sg.timing_pass),
                             window_breaks(trace, sg.timing_pass)), units
