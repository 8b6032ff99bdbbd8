"""tracer.script._elsewhere (session 31's experiment): the detach's work on a helper thread kept off the caller's CPU,
the caller waiting; its value or its exception comes back to the caller."""

from __future__ import annotations

import os
import threading

import pytest

from graphmode.tracer.script import _elsewhere, _on_cpu


def test_runs_on_another_thread_and_returns_its_value() -> None:
    seen: list[int] = []
    assert _elsewhere(lambda: seen.append(threading.get_native_id()) or 7) == 7
    assert seen and seen[0] != threading.get_native_id()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere else to run")
def test_keeps_off_the_callers_cpu() -> None:
    here, mask = _on_cpu(), os.sched_getaffinity(0)
    assert here in mask
    allowed = _elsewhere(lambda: os.sched_getaffinity(0))
    assert allowed == mask - {here}
    assert os.sched_getaffinity(0) == mask  # the caller's own mask untouched


def test_raises_its_error_on_the_caller() -> None:
    def fail() -> None:
        raise RuntimeError("cuptiFinalize failed")

    with pytest.raises(RuntimeError, match="cuptiFinalize failed"):
        _elsewhere(fail)
