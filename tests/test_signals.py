"""SIGTERM during a recording (tracer.signals): it stops the work as Ctrl-C does, once; later ones wait."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from graphmode.tracer.signals import Terminated, sigterm_interrupts


def test_the_first_sigterm_interrupts_later_ones_wait_and_the_handler_comes_back() -> None:
    """In the main thread: a SIGTERM inside the block raises Terminated (a KeyboardInterrupt, so `record` writes
    'interrupted'); a second one while the block finishes (the trace being written) is ignored; after the block the
    previous handler is back."""
    heard: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
    try:
        with pytest.raises(Terminated):
            with sigterm_interrupts():
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(1.0)  # the handler runs before this returns
                    pytest.fail("SIGTERM did not interrupt")
                finally:
                    os.kill(os.getpid(), signal.SIGTERM)  # arrives while what was recorded is written: ignored
                    time.sleep(0.05)
        assert issubclass(Terminated, KeyboardInterrupt)
        assert heard == []  # neither reached the handler from before
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert heard == [signal.SIGTERM]  # after the block: the previous handler again
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_off_the_main_thread_nothing_changes() -> None:
    seen: list[object] = []

    def work() -> None:
        with sigterm_interrupts():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [before]


def test_hold_ignores_sigterm_while_what_was_recorded_is_written() -> None:
    """`hold` (called before the trace is written): a first SIGTERM after it raises nothing and reaches no handler;
    after the block the previous handler is back. A custom exception class is what the first SIGTERM raises."""

    class Stop(BaseException):
        pass

    heard: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
    try:
        with sigterm_interrupts(Stop) as hold:
            hold()
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        assert heard == []
        with pytest.raises(Stop):
            with sigterm_interrupts(Stop):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1.0)
                pytest.fail("SIGTERM did not interrupt")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert heard == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
