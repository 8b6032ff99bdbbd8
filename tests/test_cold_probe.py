"""A cold process's first capture (issue 30): `graphmode run` of a PyTorch program measures torch.cuda.graph's own work
around a process's first capture in the program's process after it ends (tracer.first_graph_probe), and the prediction
prices a first graph with it. A fresh machine's first process reads its libraries from disk, and its first capture
block waits for them: the probe now times the block's CPU time too, and the prediction takes the work alone as its
point, the block as measured still inside its interval (analyzers.predict._torch_probe_waited)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import load_benchmark, unpacked_xz

from graphmode.analyzers.predict import COLD_WAIT_MIN_NS, COLD_WAIT_SHARE, _process_torch_probe, _torch_probe_waited

S36 = Path(__file__).resolve().parent / "data" / "scripts" / "cold_s36"


def _graphed_b1_one_time() -> float:
    """The graphed twin's (timm's ViT with a graph per batch size) batch-1 one-time cost, the median of its untraced
    processes in the same device call, by their own clocks (script_fidelity's rule)."""
    figures = load_benchmark("script_fidelity").figures
    recs = [json.loads(line) for line in (S36 / "results.jsonl").read_text().splitlines()]
    graphed = [r["truth"] for r in recs if r["workload"] == "vit_batches" and r["config"] == "untraced"]
    assert len(graphed) == 2
    return statistics.median(figures(g["eager_b1_ns"], g["graph_b1_ns"], g["capture_block_b1_ns"],
                                     g["first_replay_b1_ns"])["one_time"] for g in graphed)


def _first_region(path: Path, tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    with load(unpacked_xz(path, tmp_path)) as t:
        a = analyze(t)
        probe = t.meta["first_graph_probe"]["torch"]
    regions = [r for r in a.prediction.regions if r.direction == "to_graph"]
    assert [r.graph.kernels if r.graph else None for r in regions] == [150, 126, 126, 126]  # one region a batch size
    return regions[0], probe


def test_a_fresh_machines_first_process_prices_its_first_capture_by_the_work_not_the_wait(tmp_path: Path) -> None:
    """A real recording (H200, session 36 device call 1): the call's first process, `graphmode run` of timm's ViT written
    eager-only, on a machine just started. Its probe's first capture block took 23.9 ms and its thread 8.0 ms of CPU,
    after a read from disk; the block waited 15.9 ms. The batch-1 graph's torch.cuda.graph work is priced at the block's
    work, its one-time cost lands within issue 30's 30% of the graphed twin's untraced processes (it read 2.7x them
    priced by the block as measured), and the interval still holds the block as measured."""
    r, probe = _first_region(S36 / "vit_eager-graphmode-cold.gmtrace.xz", tmp_path)
    waited = probe["blocks_ns"][0] - probe["blocks_cpu_ns"][0]
    assert waited > 10e6 and probe["blocks_major_faults"][0] >= 1 and probe["process_major_faults"] > 100
    assert r.framework is not None
    assert r.framework.ns == pytest.approx(probe["first_ns"] - waited)
    assert r.framework.high_ns >= probe["first_ns"] * 0.95  # the block as measured stays inside the interval
    note = next(n for n in r.notes if n.kind == "probe_cost" and n.get("waited_ns") is not None)
    assert note["waited_ns"] == pytest.approx(waited) and note["major_faults"] >= 1
    assert note["as_measured_ns"] == pytest.approx(probe["first_ns"])
    truth = _graphed_b1_one_time()
    assert r.one_time is not None and abs(r.one_time.ns / truth - 1) <= 0.30
    as_measured = r.one_time.ns + waited  # priced by the block as measured, the wait in it
    assert as_measured / truth > 2.0


def test_a_warm_process_keeps_its_probe_as_measured(tmp_path: Path) -> None:
    """A later process of the same call (real, H200): its probe's blocks took as much CPU time as wall time, so its first
    capture's work is the figure as measured, and no note speaks of a wait."""
    r, probe = _first_region(S36 / "vit_eager-graphmode-01.gmtrace.xz", tmp_path)
    assert all(abs(b - c) < 0.1e6 for b, c in zip(probe["blocks_ns"], probe["blocks_cpu_ns"]))
    assert r.framework is not None and r.framework.ns == pytest.approx(probe["first_ns"], rel=1e-6)
    assert not any(n.kind == "probe_cost" and n.get("waited_ns") is not None for n in r.notes)


def _synthetic(blocks: list[float], cpu: list[float] | None, first: float = 9e6) -> SimpleNamespace:
    """A synthetic stand-in for a trace: only the meta the probe's reading looks at."""
    torch: dict[str, Any] = {"first_ns": first, "later_ns": [0.3e6] * 4, "blocks_ns": blocks, "bodies_ns": [0.2e6] * 5,
                             "blocks_major_faults": [3, 0, 0, 0, 0]}
    if cpu is not None:
        torch["blocks_cpu_ns"] = cpu
    return SimpleNamespace(meta={"first_graph_probe": {"execs_before": 0, "torch": torch}})


@pytest.mark.parametrize(("block", "cpu", "cold"), [
    (10e6, 7e6, True),  # waited 3 ms, 30% of the block
    (10e6, 7.6e6, False),  # 2.4 ms: under COLD_WAIT_SHARE of the block
    (3e6, 2.2e6, False),  # 0.8 ms: under COLD_WAIT_MIN_NS
    (4e6, 2.9e6, True),  # 1.1 ms, 27.5%
    (10e6, None, False),  # a probe before session 36 timed no CPU time
])
def test_a_first_block_counts_as_waiting_past_both_thresholds(block: float, cpu: float | None, cold: bool) -> None:
    """Synthetic probes: the wait (block wall - CPU) counts from COLD_WAIT_MIN_NS and COLD_WAIT_SHARE of the block on;
    the first capture's figure then loses it (9 ms as measured, hand-computed below), and only then."""
    assert (COLD_WAIT_MIN_NS, COLD_WAIT_SHARE) == (1e6, 0.25)
    t = _synthetic([block, 0.5e6, 0.5e6, 0.5e6, 0.5e6], None if cpu is None else [cpu, 0.5e6, 0.5e6, 0.5e6, 0.5e6])
    got = _torch_probe_waited(t)  # type: ignore[arg-type]
    first = _process_torch_probe(t)["first"].median  # type: ignore[arg-type]
    if cold:
        assert cpu is not None and got == (pytest.approx(block - cpu), 3, 9e6)
        assert first == pytest.approx(9e6 - (block - cpu))
    else:
        assert got is None and first == pytest.approx(9e6)
