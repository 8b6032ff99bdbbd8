"""SIGTERM during a recording stops it as Ctrl-C does, so that what was recorded is written, marked 'interrupted'.

Without this, `kill`, a job scheduler's time limit or a container stop ends `graphmode bench` (or graphmode.compare)
by SIGTERM's default action, mid-pass, and the trace is left 'recording'. (`graphmode run` handles SIGTERM in its
script runner, tracer.script.run_in_this_process, with the same rule for later signals.)
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the recording stops as on Ctrl-C (every `except KeyboardInterrupt` treats it so)."""


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, the first SIGTERM raises Terminated in the main thread; later ones are ignored until the block
    is left (what was recorded is being written then), and the previous handler is back after. A killed parent can
    send several at once (PR_SET_PDEATHSIG fires per dying thread: docs/design.md). Off the main thread, where
    Python cannot set handlers, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
