"""The words for what `graphmode run` decided between its runs (analyzers.run_plan): the line the CLI prints."""

from __future__ import annotations

from graphmode.analyzers.run_plan import ProbeRunSkipped, TimingRunSkipped


def probe_run_note(skipped: object | None) -> str | None:
    """The note for a probe run that was not made; None where the user need not be told (nothing to predict, or the
    program's own first graph is measured)."""
    if not isinstance(skipped, ProbeRunSkipped) or skipped.kind != "too_long":
        return None
    return (f"no probe run (the measuring run took {skipped.measuring_s:.0f} s, over {skipped.limit_s:.0f} s): a graph's "
            "first-graph extra in the prediction is the cost model's, not measured in this program's process")


def timing_run_note(skipped: object | None) -> str | None:
    """The note for the timing run of a script that built no graph, where it was not made (its first run was long)."""
    if not isinstance(skipped, TimingRunSkipped):
        return None
    if skipped.kind == "windows":
        return None  # the one run timed its loops itself: the report's notes say so (eager_untraced_window)
    return (f"no timing run (the first run took {skipped.measuring_s:.0f} s, over {skipped.limit_s:.0f} s: a long script "
            "is run once): the prediction's eager period is the traced run's, the tracer's calibrated cost taken off, "
            "with a wider interval; `--runs full` times the loop untraced")
