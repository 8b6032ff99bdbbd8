"""SIGTERM during a recording stops it as Ctrl-C does, so that what was recorded is written, marked 'interrupted'.

Without this, `kill`, a job scheduler's time limit or a container stop ends `graphmode bench` (or graphmode.compare)
by SIGTERM's default action, mid-pass, and the trace is left 'recording'. `graphmode run`'s script runner
(tracer.script.run_in_this_process) uses the same guard.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the recording stops as on Ctrl-C (every `except KeyboardInterrupt` treats it so)."""


@contextmanager
def sigterm_interrupts(exc: type[BaseException] = Terminated) -> Iterator[Callable[[], object]]:
    """Within the block, the first SIGTERM raises `exc` (Terminated) in the main thread; later ones are ignored until
    the block is left, and the previous handler is back after. A killed parent can send several at once
    (PR_SET_PDEATHSIG fires per dying thread: docs/design.md). The block gets `hold`: once called, SIGTERM is
    ignored until the block is left, for writing what was recorded (a SIGTERM then would leave the trace unfinished).
    Off the main thread, where Python cannot set handlers, nothing changes. `graphmode run`'s script runner
    (tracer.script.run_in_this_process) passes an exception of its own, which the user's `except KeyboardInterrupt`
    does not catch."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise exc()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def sigterm_deferred() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGTERM is noted, not acted on: for a step that must not stop half-way (the tracer's start,
    which opens the trace file and attaches CUPTI, about a second). The block gets `pending`, which says whether one
    came; the caller acts on it after the block (`graphmode run`'s script runner then records the run 'interrupted'
    without running the script). Off the main thread nothing changes (and `pending` says False)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: came.append(signum))
    try:
        yield lambda: bool(came)
    finally:
        signal.signal(signal.SIGTERM, previous)
