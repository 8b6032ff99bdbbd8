"""tracer.untraced_windows: when the one traced run detaches CUPTI and attaches it again, driven by made-up stamps
(synthetic: no GPU, no CUPTI; the detach and attach are recorded, not made)."""

from __future__ import annotations

import random

from graphmode.tracer.untraced_windows import WindowController


def drive(lines: list[int], may: bool = True, **kw):
    """Feeds the line indices as stamps 1 us apart; returns the controller and the calls it made, with positions."""
    calls: list[tuple[str, int]] = []
    pos = [0]
    c = WindowController(lambda: calls.append(("detach", pos[0])), lambda: calls.append(("attach", pos[0])),
                         lambda: may, lambda a, b: lines[a:b], clock=lambda: 0, **kw)
    for i, idx in enumerate(lines):
        pos[0] = i
        c.on_stamp(idx, i, i * 1000)
    c.finish(len(lines) * 1000)
    return c, calls


def loop(n: int, body: tuple[int, ...] = (1, 2, 3)) -> list[int]:
    return [x for _ in range(n) for x in body]


def test_a_steady_loop_gets_one_window_after_the_traced_iterations():
    lines = [0] + loop(100) + [9]  # setup, 100 iterations of lines 1-3, a line after the loop
    c, calls = drive(lines, traced_before=24, window_iterations=32)
    (w,) = c.windows
    # line 1 runs at positions 1, 4, 7, ...: its gap (3 stamps) came out the same 24 times at its 25th execution, after
    # 24 whole iterations traced
    assert w.anchor == 1 and w.gap == 3
    assert w.start_pos == 1 + 3 * 24
    assert w.iterations == 32 and w.reason == "iterations"
    assert w.end_pos == w.start_pos + 3 * 32
    assert calls == [("detach", w.start_pos), ("attach", w.end_pos)]


def test_a_window_closes_before_a_line_outside_the_loop_runs():
    lines = [0] + loop(30) + [9, 9]  # the window opens at the 25th iteration; the loop ends after the 30th
    c, calls = drive(lines, traced_before=24, window_iterations=32)
    (w,) = c.windows
    assert w.reason == "left" and w.iterations == 5  # the anchor's executions after the one that opened it
    assert lines[w.end_pos] == 9 and calls[-1] == ("attach", w.end_pos)


def test_each_entry_of_a_loop_gets_its_window_and_no_more():
    lines = []
    for _ in range(3):  # an outer loop over shapes, as a model served at several batch sizes
        lines += [7] + loop(100)
    c, _ = drive(lines, traced_before=24, window_iterations=10)
    assert len(c.windows) == 3
    assert all(w.reason == "iterations" and w.iterations == 10 for w in c.windows)


def test_a_changed_body_closes_the_window():
    lines = loop(40) + [1, 2, 5, 3] + loop(20)  # line 5 ran once inside the loop, after the window opened
    c, _ = drive(lines, traced_before=24, window_iterations=32)
    assert c.windows[0].reason == "left"


def test_no_window_while_a_graph_exists_or_the_loop_is_irregular():
    assert drive(loop(100), may=False)[0].windows == []
    rng = random.Random(0)  # a body whose lines run a varying number of times each iteration
    irregular = [x for _ in range(100) for x in [1] + [2] * rng.randint(1, 4) + [3] * rng.randint(1, 4)]
    assert drive(irregular)[0].windows == []


def test_a_window_open_at_the_end_closes_there():
    c, calls = drive(loop(40), traced_before=24, window_iterations=32)
    (w,) = c.windows
    assert w.reason == "end" and calls[-1][0] == "attach"


def test_a_failed_detach_leaves_the_run_traced():
    def fail() -> None:
        raise RuntimeError("CUPTI said no")

    c = WindowController(fail, lambda: None, lambda: True, lambda a, b: [], clock=lambda: 0)
    for i in range(200):
        c.on_stamp(1, i, i)
    assert c.windows == [] and not c.detached and c.errors == ["detach: RuntimeError: CUPTI said no"]
