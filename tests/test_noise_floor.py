"""benchmarks/noise_floor.py: how often a program's own untraced processes meet issues 29 and 30's targets against each
other, and what a perfect eager clock of an eager-only process would score. SYNTHETIC truths, hand-computed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import ROOT, load_benchmark


@pytest.fixture(autouse=True)
def _benchmarks_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the benchmarks import each other (eager_only, script_fidelity)


def _row(workload: str, truth: dict, config: str = "untraced") -> str:
    return json.dumps({"workload": workload, "config": config, "proc": 0, "exit_code": 0, "truth": truth})


def test_leave_one_out_and_a_perfect_eager_clock_on_hand_computed_truths(tmp_path: Path) -> None:
    """Three graphed processes (one-time = capture block + first replay - replay; break-even = ceil(one-time / saved)):
    A eager 10, replay 2, one-time 32 -> 4; B one-time 40 -> 5; C eager 6, one-time 32 -> 8 (median 5). Each against the
    median of the other two: A 4 vs 6.5 (miss), B 5 vs 6 (within 1), C 8 vs 4.5 (miss); one-time 32, 40, 32 against 36,
    32, 36: all within 25%; eager 10, 10, 6 against 8, 8, 10: none within 15%. Eager-only processes at 9, 4 and 1 priced
    with the median replay (2) and one-time (32): ceil(32 / 7) = 5 (a hit), 16 (a miss), never (a miss)."""
    def graphed(eager: float, block: float) -> dict:
        return {"eager_ns": eager, "graph_ns": 2.0, "capture_block_ns": block, "first_replay_ns": 4.0}

    results = tmp_path / "results.jsonl"
    results.write_text("\n".join([
        _row("resnet", graphed(10.0, 30.0)), _row("resnet", graphed(10.0, 38.0)), _row("resnet", graphed(6.0, 30.0)),
        _row("resnet", graphed(1.0, 1.0), config="graphmode"),  # a traced process: not a truth
        _row("resnet_eager", {"eager_ns": 9.0}), _row("resnet_eager", {"eager_ns": 4.0}),
        _row("resnet_eager", {"eager_ns": 1.0})]) + "\n")
    nf = load_benchmark("noise_floor")
    (r,) = nf.rows(nf.results_truths(results))
    assert r["program"] == "resnet" and r["break_evens"] == [4.0, 5.0, 8.0] and r["median_break_even"] == 5.0
    assert [x["break_even"] for x in r["loo"]] == [False, True, False]
    assert all(x["one_time_25"] and x["one_time"] for x in r["loo"])
    assert not any(x["eager"] for x in r["loo"])
    assert [(o["break_even"], o["hit"]) for o in r["oracle"]] == [(5.0, True), (16.0, False), (math.inf, False)]


def test_the_break_even_target() -> None:
    hit = load_benchmark("eager_only").break_even_hit
    assert hit(3, 2) and hit(12, 10) and not hit(13, 10) and not hit(4, 2)  # 20% or 1 replay
    assert hit(math.inf, math.inf) and not hit(math.inf, 40) and not hit(40, math.inf)
