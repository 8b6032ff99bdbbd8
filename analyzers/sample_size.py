"""Which medians rest on too few iterations to trust: one outlier moves a median of 2 or 4 values.

`TINY_SAMPLE` is the one threshold the reports use to flag them (a script that ran its eager loop
twice before capturing it gives an 'eager median' of 2 iterations).
"""

from __future__ import annotations

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.results import ModeMetrics

TINY_SAMPLE = 5  # fewer steady iterations than this: a tiny sample


def tiny_sample(iterations: int) -> bool:
    return 0 < iterations < TINY_SAMPLE


def tiny_sample_note(mode: str, iterations: int) -> Note | None:
    """A 'tiny_sample' note (reports: 'eager median from 2 iterations: tiny sample'), or None when the sample is
    large enough."""
    if not tiny_sample(iterations):
        return None
    return note("tiny_sample", mode=mode, iterations=iterations)
