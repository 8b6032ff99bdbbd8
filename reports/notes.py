"""The words of the analyzers' notes: one template per note kind (analyzers.notes.Note), and `word(note)`.

Every report (terminal, page, JSON, notebook, rank reports) words a note here, so they say the same
sentence and a sentence is changed in one place. A template is a format string over the note's values,
with three conversions of our own: `!h` a duration in ns as a person reads it (reports.units.human_ns),
`!j` a tuple joined with ', ', `!s` a count's plural 's' ('' for 1); or a function of the note for a
sentence whose parts depend on its values. tests/test_notes.py checks that every kind an analyzer
emits has a template here.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from typing import Any

from graphmode.analyzers.notes import Note
from graphmode.reports.units import human_ns


class _Formatter(string.Formatter):
    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "h":
            return human_ns(value)
        if conversion == "j":
            return ", ".join(map(str, value))
        if conversion == "s":
            return "" if value == 1 else "s"
        return super().convert_field(value, conversion)


_FORMAT = _Formatter()


def fill(template: str, values: Mapping[str, Any]) -> str:
    """A template's sentence for these values (the conversions above)."""
    return _FORMAT.vformat(template, (), dict(values))


def _num(n: Note, key: str) -> float:
    value = n[key]
    assert isinstance(value, (int, float)), (n.kind, key, value)
    return float(value)


def _run_incomplete(n: Note) -> str:
    reason = f": {n['reason']}" if n["reason"] else ""
    return f"the run did not complete (status '{n['status']}'{reason}): figures cover only what was recorded"


def _tracer_errors(n: Note) -> str:
    errors = n["errors"]
    assert isinstance(errors, tuple)
    more = int(_num(n, "count")) - len(errors)
    shown = "; ".join(map(str, errors)) + (f"; and {more} more" if more > 0 else "")
    return f"the tracer hit {n['count']} error(s) while recording, so some data is missing: {shown}"


def _tracer_slowed(n: Note) -> str:
    ratio, traced, untraced = _num(n, "ratio"), _num(n, "traced_ns"), _num(n, "untraced_ns")
    return (f"the tracer slowed {n['mode']} iterations by {100 * (ratio - 1):.0f}% (median {traced / 1e3:.1f} us traced "
            f"vs {untraced / 1e3:.1f} us untraced): CPU and GPU figures come from the slowed pass")


def _break_even_unknown(n: Note) -> str:
    return f"break-even against {n['baseline']}: {word(Note(str(n['reason']), n.values))}"


def break_even_reason(reason: Note | None) -> str:
    """Why a break-even is not a number (BreakEven.reason), or '' when it is."""
    return "" if reason is None else word(reason)


def _replay_not_faster(n: Note) -> str:
    replay, eager = _num(n, "replay_ns"), _num(n, "eager_ns")
    return (f"a graph replay (median {replay / 1e3:.1f} us) is not faster than a {n['baseline']} iteration "
            f"(median {eager / 1e3:.1f} us), so the one-time cost is never paid back")


def _graph_replay_not_faster(n: Note) -> str:
    replay, eager = _num(n, "replay_ns"), _num(n, "eager_ns")
    return (f"a replay ({replay / 1e3:,.1f} us) is not faster than the eager work it replaces "
            f"({eager / 1e3:,.1f} us), so the one-time cost is never paid back")


def _build_mismatch(n: Note) -> str:
    mine = int(_num(n, "measured_calls"))
    tail = "the extra ones are not attributed" if mine else "their one-time costs come from the detail run"
    return (f"the measuring run made {mine} {n['event']} call{'s' if mine != 1 else ''} and the detail run "
            f"{n['detail_calls']}: the runs did not build the same graphs, so {tail}")


def _unknown_executables(n: Note) -> str:
    ids = n["graph_ids"]
    assert isinstance(ids, tuple)
    return (f"graph executable id{'s' if n['count'] != 1 else ''} {', '.join(map(str, ids))} of the measuring "
            "run match no graph of the detail run: reported as graphs of unknown origin")


def _unstamped(n: Note) -> str:
    graphs, what = n["graph_ids"], n["what"]
    assert isinstance(graphs, tuple) and isinstance(what, tuple)
    which = "; ".join(f"graph {g} ({w})" for g, w in zip(graphs, what))
    return ("CPU-bound iterations launched from another thread than the main one, or from code outside the script, "
            f"keep the measuring run's period (the timing run stamps the script's lines on the main thread only): {which}")


Template = str | Callable[[Note], str]

TEMPLATES: dict[str, Template] = {
    # TraceAnalysis.warnings: data lost or distorted
    "run_incomplete": _run_incomplete,
    "pass_incomplete": "pass {pass_id} ({detail}) has status '{status}'",
    "tracer_errors": _tracer_errors,
    "recording_note": "while recording: {text}",
    "reading_note": "reading the trace: {text}",
    "records_dropped": "{count:,} CUPTI activity records were dropped for lack of buffer space: API and GPU figures undercount",
    "tracer_slowed": _tracer_slowed,
    "cpu_profile_unreadable": "the CPU profile is not shown: {error}",
    # TraceAnalysis.cannot_compute: what the trace does not allow, and why
    "no_graph": "no CUDA graph was built or replayed in this run: nothing to compare (graphmode answers what graphs buy)",
    "no_graph_replayed": "no graph was replayed: savings and break-even need replays",
    "graph_without_eager": ("graph {graph_id}: no eager run of its work was found (its kernel sequence never ran outside a graph), "
                            "so what it saves is unknown"),
    "no_timing_pass": ("no timing pass: wall times come from the traced pass and include the tracer's overhead; "
                       "the tracer distortion cannot be measured"),
    "timing_pass_without_iterations": ("the timing pass has no iteration markers: wall times come from the traced pass and "
                                       "include the tracer's overhead"),
    "no_traced_pass": ("no traced pass (graph or node detail): CPU time in CUDA API calls, GPU busy/idle time, kernel counts, "
                       "per-kernel durations and critical paths need CUDA activity"),
    "no_iteration_markers": ("no iteration markers (markers.kind = 'iteration'): per-iteration metrics, overhead saved and "
                             "break-even need the runner's iterations (record with `graphmode bench`)"),
    "one_iteration": "{mode} has one iteration: its p10/p90 equal the median and give no spread",
    "no_graph_iterations": ("no graph-mode iterations (zero steady replays): launch overhead saved and break-even need "
                            "graph replays"),
    "no_eager_iterations": "no eager iterations: launch overhead saved and break-even need an eager baseline",
    "costs_from_traced_pass": "one-time graph costs come from pass {pass_id} (traced): the wall pass recorded none",
    "first_launch_missing": ("some graphs have no first_launch op marker: their first launch's excess is not included in "
                             "the one-time cost"),
    "no_graph_built": "no graph was built (no op markers or graph lifecycle events): no one-time graph cost",
    "break_even_unknown": _break_even_unknown,
    # BreakEven.reason: why a break-even is not a number (analyzers.break_even)
    "no_eager_wall_times": "no {baseline} iterations with a wall time",
    "no_steady_replays": "no steady graph replays (graph-mode iterations) in the run: the replay time is unknown",
    "no_one_time_cost": "no one-time graph cost was recorded (no op markers or graph lifecycle events)",
    "replay_not_faster": _replay_not_faster,
    "graph_no_eager_iterations": "no {baseline} iterations of this graph's work were found",
    "graph_no_steady_replays": "no steady replays of this graph: the replay time is unknown",
    "graph_no_one_time_cost": "no one-time cost was recorded for this graph",
    "graph_replay_not_faster": _graph_replay_not_faster,
    "kernel_table_truncated": "more than {limit} kernel names: the per-kernel table keeps the {limit} with the most GPU time",
    "graph_detail_no_kernels": ("graph-detail trace: kernels inside a graph launch are recorded as one 'graph' span, so "
                                "per-kernel eager-vs-graph durations and the critical path need a node-detail recording "
                                "(`--detail node`)"),
    "source_table_truncated": ("more than {limit} source lines launched GPU work: the table keeps the {limit} with the most "
                               "GPU time"),
    "prediction_failed": "the graph prediction failed ({error_type}: {error}); please report it",
    "critical_path_no_spans": "graph {graph_id} ({label}) has no measured node spans: no critical path",
    "critical_path_cycle": "graph {graph_id} ({label}) has a cycle in its recorded edges: no critical path",
    # a script trace (analyzers.script_analysis, script_graphs, untraced)
    "step_model_failed": "the step model failed ({error_type}: {error}); each graph is reported alone; please report it",
    "build_mismatch": _build_mismatch,
    "unknown_executables": _unknown_executables,
    "no_detail_run": ("this trace holds no run that recorded the graphs (the detail run is missing): graphs are known by their "
                      "executable ids only, without their capture lines, topology or eager counterparts; record with "
                      "`graphmode run`, which makes both runs"),
    "capture_windows_mismatch": ("the timing run heard {timing_windows} PyTorch capture window(s) and the measuring run "
                                 "{measured_windows}: the one-time costs keep the measuring run's"),
    "unstamped_iterations": _unstamped,
    "stamp_count_mismatch": ("line{count!s} {lines!j} ran a different number of times in the timing run than in the detail "
                             "run: the iterations they start keep the measuring run's period"),
    "iterations_respread": ("graph {graph_id}: its {mode} iterations were found as {measured} in the measuring run and "
                            "{detail} in the detail run, in other stretches: they take the timing run's {periods} periods in "
                            "order (the timing run's distribution, not iteration by iteration)"),
    "iterations_differ": ("graph {graph_id}: its {mode} iterations differ between the measuring and detail runs ({measured} "
                          "and {detail} iterations): they keep the measuring run's period"),
}


def word(n: Note) -> str:
    """The sentence a person reads for a note."""
    template = TEMPLATES.get(n.kind)
    if template is None:
        raise KeyError(f"no wording for note kind {n.kind!r}: add it to reports.notes.TEMPLATES")
    return template(n) if callable(template) else fill(template, n.values)


def words(notes: tuple[Note, ...]) -> list[str]:
    return [word(n) for n in notes]


def note_dict(n: Note) -> dict[str, Any]:
    """A note as JSON: its kind and values for a program, its sentence for a person."""
    return {"kind": n.kind, "values": {k: list(v) if isinstance(v, tuple) else v for k, v in n.values.items()}, "text": word(n)}
