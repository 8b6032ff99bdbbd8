"""The words for what `graphmode run` decided between its runs (analyzers.run_plan): the line the CLI prints."""

from __future__ import annotations

from graphmode.analyzers.run_plan import ProbeRunSkipped


def probe_run_note(skipped: object | None) -> str | None:
    """The note for a probe run that was not made; None where the user need not be told (nothing to predict, or the
    program's own first graph is measured)."""
    if not isinstance(skipped, ProbeRunSkipped) or skipped.kind != "too_long":
        return None
    return (f"no probe run (the measuring run took {skipped.measuring_s:.0f} s, over {skipped.limit_s:.0f} s): a graph's "
            "first-graph extra in the prediction is the cost model's, not measured in this program's process")
