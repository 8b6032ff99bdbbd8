"""Which Python line a CUDA call is attributed to (tracer.sources.user_location), without a GPU."""

from __future__ import annotations

import inspect

from graphmode.tracer.sources import user_location


def _body() -> object:
    here = inspect.currentframe()
    return user_location(here)  # a frame inside its body: this line


def _on_first_line() -> object: return user_location(inspect.currentframe())  # noqa: E704


def test_a_frame_in_its_body_gives_its_own_line() -> None:
    loc = _body()
    assert isinstance(loc, tuple) and loc[0] is _body.__code__
    assert loc[1] == _body.__code__.co_firstlineno + 2


def test_a_frame_on_its_first_line_gives_its_callers_line() -> None:
    """A torch.compile'd function runs Dynamo's code in its frame, which sits on the function's first line
    (the decorator's, seen on the H200: 'torch_compile_shapes.py:19 layer' for the call at line 29); the
    caller's line names the call. The one-line def above stands in for it."""
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    loc = _on_first_line()
    assert isinstance(loc, tuple) and loc[0] is test_a_frame_on_its_first_line_gives_its_callers_line.__code__
    assert loc[1] == line
