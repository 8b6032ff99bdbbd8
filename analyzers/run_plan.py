"""What `graphmode run` decides between the runs of a script: which runs to make, which lines the timing run
stamps, whether the probe run is wanted. Pure functions of the options and of the trace recorded so far; the
front door hands them to tracer.script.run_script (as a RunDecisions), which only executes the runs.

A skipped probe run is said as a kind and its numbers (ProbeRunSkipped); reports.run_notes words it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import numpy as np

from graphmode.analyzers.predict import uses_torch, uses_trees
from graphmode.analyzers.run import build_run
from graphmode.analyzers.timing_run import call_lines, capture_lines
from graphmode.analyzers.torch_windows import torch_windows
from graphmode.analyzers.untraced import chosen_lines, starting_lines
from graphmode.analyzers.untraced_windows import MIN_WINDOW_PERIODS, untraced_windows
from graphmode.tracer.run_configs import MEASURE, PROBE_RUN, RunConfig, detail_config, single_config, timing_config
from graphmode.tracer.script import RunDecisions, instantiations
from graphmode.tracer.store import Trace

# The probe run runs the script once more: not for a script whose measuring run took longer than this (s). Nor the
# timing run that `auto` plans for a script that built no graph: a long script is run once by default (issue 29: at
# most 2x its wall time; many programs take minutes to load a model, some cannot run twice); `--runs full` times it.
PROBE_RUN_MAX_S = 60.0
TIMING_RUN_MAX_S = PROBE_RUN_MAX_S

__all__ = ["DECISIONS", "PROBE_RUN_MAX_S", "TIMING_RUN_MAX_S", "ProbeRunSkipped", "TimingRunSkipped", "built_no_graph",
           "lines_to_time", "plan_runs", "probe_run_wanted", "timing_run_wanted"]


@dataclass(frozen=True)
class ProbeRunSkipped:
    """Why the probe run was not made. `kind`: 'probed' (the trace has a first-graph probe already: the timing
    run's), 'own_graphs' (the measuring run instantiated graphs: its own first graph is measured), 'no_kernels' (no
    loop to predict a graph for), 'trees' (PyTorch's cudagraph trees keep the calibration's tree probe), 'too_long'
    (the measuring run took `measuring_s`, over `limit_s`: the only kind the user is told)."""

    kind: Literal["probed", "own_graphs", "no_kernels", "trees", "too_long"]
    measuring_s: float = 0.0
    limit_s: float = PROBE_RUN_MAX_S


@dataclass(frozen=True)
class TimingRunSkipped:
    """Why the timing run `auto` planned for a script that built no graph was not made: its first run took
    `measuring_s`, over `limit_s` (TIMING_RUN_MAX_S, kind 'too_long'), or that run timed its loops untraced in windows
    of its own (kind 'windows': `windows` of them, tracer.untraced_windows)."""

    measuring_s: float
    limit_s: float = TIMING_RUN_MAX_S
    kind: Literal["too_long", "windows"] = "too_long"
    windows: int = 0


def plan_runs(detail: str = "graph", launch_sources: bool = False, profile: bool = False, sources: bool = True,
              runs: str = "auto", ranked: bool = False) -> list[RunConfig]:
    """The runs `graphmode run` makes (docs/design.md, "graphmode run: the runs it makes").

    'auto' (the default): one traced run (tracer.run_configs.single_config: the measuring run's records, the launches'
    API records, graph-level callbacks and stamps of the user's lines; the tracer's calibrated cost is taken off by the
    analysis), then a detail run only where the user asked for what only it records (node detail, the line of every
    launch, a CPU profile), or, where the script built no graph (built_no_graph), the timing run (Python 3.12+, where
    the first run took at most TIMING_RUN_MAX_S: timing_run_wanted; the loop's CPU-bound periods untraced, since the
    one run's tracer cost per launch in framework code can exceed the calibrated one 2-3x, and the first-graph
    probe), then the probe run where the prediction wants it
    (probe_run_wanted), except for one rank of a multi-process job
    (`ranked`): the one run alone. A job's ranks would each start their second run when their own first run ended, and a rank's second
    run could meet what another rank's first run left behind (docs/ranks.md).
    '1': the one traced run alone; with node detail, launch sources or a profile asked for, the detail run's
    configuration instead (everything in one run, slowed by its callbacks: the report says so).
    '2': the measuring run (no callbacks at all), then the detail run (every API call, node callbacks, line stamps).
    'full': those two, then the timing run (no CUPTI, stamps of the loop's lines) and the probe run where wanted."""
    asked = detail == "node" or launch_sources or profile
    if runs == "1" or (runs == "auto" and ranked):
        if asked:
            return [detail_config(detail, launch_sources, profile, name="single", sources=sources)]
        # a rank's run has no untraced windows: detaching CUPTI beside the job's collectives was not tried
        return [single_config(windows=not ranked)]
    if runs == "auto":
        if asked:
            return [single_config("measure"), detail_config(detail, launch_sources, profile, sources=sources), PROBE_RUN]
        # A script that built no graph is found its step and priced from the one run (its launch records and line
        # stamps), then timed by the timing run where the one run stamped lines (Python 3.12+): the loop's CPU-bound
        # periods untraced, since the one run's tracer cost per launch in framework code can exceed the calibrated one
        # 2-3x, and the first-graph probe. Two runs; a detail run before it, three (benchmarks/notes/s18, s19).
        single = single_config()
        plan = [single]
        if single.stamp:
            plan.append(dataclasses.replace(timing_config(()), when="eager_only"))
        return plan + [PROBE_RUN]  # where no timing run made the probe (probe_run_wanted)
    if runs == "2":
        return [MEASURE, detail_config(detail, launch_sources, profile, sources=sources)]
    if runs == "full":
        plan = [MEASURE, detail_config(detail, launch_sources, profile, sources=sources)]
        if plan[1].stamp:  # Python 3.12+: a timing run where the first two find CPU-bound iterations
            plan.append(timing_config(()))
        return plan + [PROBE_RUN]  # where no timing run measured the first graph's extra (probe_run_wanted)
    raise ValueError(f"runs must be 'auto', '1', '2' or 'full', not {runs!r}")


def probe_run_wanted(trace: Trace) -> ProbeRunSkipped | None:
    """None where the probe run is wanted: the trace has no first-graph probe yet (the timing run makes one), the
    measuring run instantiated no graph (a script that builds graphs has its own first graph measured) and ran
    kernels (else there is no loop to predict a graph for); a PyTorch program's probe run times torch.cuda.graph's
    first capture (tracer.first_graph_probe.probe_torch_capture), except one that records cudagraph trees (priced
    with the calibration's tree probe, analyzers.predict), and except where the measuring run took longer than
    PROBE_RUN_MAX_S (the probe run would run the script once more). Otherwise why not."""
    if "first_graph_probe" in trace.meta:
        return ProbeRunSkipped("probed")
    if instantiations(trace) != 0:
        return ProbeRunSkipped("own_graphs")
    if not trace.rows("SELECT count(*) FROM gpu_spans WHERE pass_id = 0 AND kind = 'kernel'")[0][0]:
        return ProbeRunSkipped("no_kernels")
    if uses_torch(trace) and uses_trees(trace):
        return ProbeRunSkipped("trees")
    took = _first_run_s(trace)
    if took > PROBE_RUN_MAX_S:
        return ProbeRunSkipped("too_long", measuring_s=took)
    return None


def _first_run_s(trace: Trace) -> float:
    first = trace.passes[0] if trace.passes else None
    return (first.end_ns - first.start_ns) / 1e9 if first is not None else 0.0


def timing_run_wanted(trace: Trace) -> TimingRunSkipped | None:
    """None where the timing run planned for a script that built no graph ('eager_only') is made; else why not: the
    first run timed its loops in untraced windows of its own (analyzers.untraced_windows: a window of at least
    MIN_WINDOW_PERIODS periods), or took longer than TIMING_RUN_MAX_S (the prediction then comes from the one run, its
    eager period corrected and its interval wider: analyzers.predict, note prediction_eager_one_run)."""
    took = _first_run_s(trace)
    first = trace.passes[0].pass_id if trace.passes else 0
    # the anchor's executions inside a window, after the one that opened it: its periods, the first left out
    usable = [w for w in untraced_windows(trace, first) if w.iterations - 1 >= MIN_WINDOW_PERIODS]
    if usable:
        return TimingRunSkipped(took, kind="windows", windows=len(usable))
    return TimingRunSkipped(took) if took > TIMING_RUN_MAX_S else None


def lines_to_time(trace: Trace) -> list[str]:
    """The lines a timing run should stamp ('file:line'): those that start the detail run's iterations of
    each graph and mode that is CPU-bound in the measuring run, the two lines around each of PyTorch's capture
    windows (`call_lines`) and around each other capture through its instantiation (`capture_lines`). Empty when
    there are none, or when the detail run has no line stamps (Python < 3.12)."""
    run = build_run(trace)
    sg = run.script_graphs()
    if sg is None or not run.has_stamps(sg.structure_pass):
        return []
    stamps = run.line_stamps(sg.structure_pass)
    windows = torch_windows(trace, sg.structure_pass, callbacks_pass=True)
    around = sorted({x for pair in call_lines(stamps, windows) if pair is not None for x in pair}
                    | {x for pair in capture_lines(trace, sg.structure_pass, stamps, windows).values() for x in pair})
    measure = run.iterations(sg)[0]
    # the one traced run that stamped lines is its own detail run
    detail_sg = sg if sg.structure_pass == sg.timing_pass else run.script_graphs(timing_pass=sg.structure_pass)
    if detail_sg is None:
        return around
    detail = run.iterations(detail_sg)[0]
    cpu = ~measure.gpu_bound & np.isfinite(measure.period)
    groups = {(int(g), str(m)) for g, m in zip(measure.graph_id[cpu], measure.mode[cpu])}
    if not groups:
        return around
    loc = starting_lines(trace, detail, stamps)[0]
    mask = np.array([(int(g), str(m)) in groups for g, m in zip(detail.graph_id, detail.mode)], dtype=bool)
    return sorted(set(chosen_lines(loc, mask)) | set(around))


# What the front door hands to tracer.script.run_script.
def built_no_graph(trace: Trace) -> bool:
    """Whether the runs planned for a script that built no graph (`when='eager_only'`: the timing run) are made: the
    first run instantiated no graph and ran kernels (a loop whose graph the prediction prices, analyzers.predict)."""
    if instantiations(trace) != 0:
        return False
    return bool(trace.rows("SELECT count(*) FROM gpu_spans WHERE pass_id = 0 AND kind = 'kernel'")[0][0])


DECISIONS = RunDecisions(lines_to_time=lines_to_time, why_no_probe_run=probe_run_wanted, built_no_graph=built_no_graph,
                         why_no_timing_run=timing_run_wanted)
