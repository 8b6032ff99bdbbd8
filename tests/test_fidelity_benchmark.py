"""benchmarks/fidelity.py without a GPU: its formulas on a synthetic case computed by hand, and its
analysis of the per-process summaries recorded on the H200 (the final set in benchmarks/results/fidelity, the
earlier sets of the same day in benchmarks/notes/2026-11-30)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from tests.conftest import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
FID4 = ROOT / "benchmarks" / "results" / "fidelity"  # set fid4, the protocol benchmarks/fidelity.py runs
NOTES = ROOT / "benchmarks" / "notes" / "2026-11-30"  # the earlier sets and the residue probe


def _fidelity():  # type: ignore[no-untyped-def]
    return load_benchmark("fidelity")


def test_ground_truth_formulas_by_hand() -> None:
    """Synthetic: eager 90 us, graph 40 us, capture 100 + instantiate 200 + upload 50 us, first launch
    70 us (30 us over a replay): one-time 380 us, saved 50 us, break-even 7.6 -> 8 replays."""
    it = {"eager": {"median": 90_000.0}, "graph": {"median": 40_000.0}}
    d = _fidelity()._derived(it, {"capture": 100_000.0, "instantiate": 200_000.0, "upload": 50_000.0,
                                  "first_launch": 70_000.0})
    assert d == {"saved_ns": 50_000.0, "one_time_ns": 380_000.0, "break_even_exact": 7.6, "break_even": 8.0}
    slower = _fidelity()._derived({"eager": {"median": 40_000.0}, "graph": {"median": 45_000.0}}, {"capture": 1.0})
    assert slower["break_even"] == math.inf and slower["saved_ns"] == -5_000.0


def test_recorded_accuracy_within_five_percent() -> None:
    """The H200 recording of the final protocol (fid4): graphmode's saved, one-time and break-even
    medians against the ground truth's, recomputed here from the per-process summaries."""
    fid = _fidelity()
    runs = [json.loads(p.read_text()) for p in sorted(FID4.glob("proc-*.json"))]
    assert len(runs) == 52
    for key in ("saved_ns", "one_time_ns", "break_even_exact"):
        truth = np.median([fid._derived(r["T1"]["iterations"], r["T1"]["ops"])[key] for r in runs])
        graphmode = np.median([r["graphmode"][key] for r in runs])
        assert abs(graphmode / truth - 1) < 0.05, (key, truth, graphmode)
    for mode in fid.MODES:  # the timing pass against the ground truth, per process
        ratio = np.median([r["graphmode"]["timing"][mode] / r["T1"]["iterations"][mode]["median"] for r in runs])
        assert abs(ratio - 1) < 0.02, (mode, ratio)


def test_analyze_prints_every_set() -> None:
    fid = _fidelity()
    text = fid.analyze([FID4])
    assert "52 processes (52 with graphmode)" in text
    # The accuracy row against medians recomputed here from the per-process files: saved per
    # iteration = eager median - graph median of the ground truth (docs/metrics.md), graphmode's as recorded.
    runs = [json.loads(p.read_text()) for p in sorted(FID4.glob("proc-*.json"))]
    truth = np.median([r["T1"]["iterations"]["eager"]["median"] - r["T1"]["iterations"]["graph"]["median"] for r in runs])
    measured = np.median([r["graphmode"]["saved_ns"] for r in runs])
    row = next(line for line in text.splitlines() if line.startswith("| launch overhead saved per iteration |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{truth / 1e3:.2f} us" and cells[2] == f"{measured / 1e3:.2f} us"
    assert cells[3] == f"{100 * (measured / truth - 1):+.1f}%"
    for name in ("fid1", "fid2", "fid3", "sp-aslr", "sp-noaslr"):
        assert "processes" in fid.analyze([NOTES / name])
    residue = fid.analyze([NOTES / "residue"])
    assert "4 processes" in residue and "after cupti.finalize()" in residue


def test_record_warms_each_workload_up_once_untraced_and_no_table_reads_it(tmp_path: Path, monkeypatch: Any) -> None:
    """`record --warm-up`: each workload runs once untraced before the interleaved processes, recorded as config
    'warm_up' (a fresh machine's first process runs cold, session 36); the truths the tables read are the untraced
    processes' alone. The processes are stand-ins (no GPU): run_one returns what it was asked to run."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    sf = load_benchmark("script_fidelity")
    calls: list[tuple[str, str]] = []

    def stand_in(workload: str, config: str, proc: int, out: Path, keep: bool, timeout: int, lines: Any = None,
                 report: bool = True) -> dict[str, Any]:
        calls.append((workload, config))
        return {"workload": workload, "config": config, "proc": proc, "exit_code": 0, "process_s": 1.0,
                "truth": {"eager_ns": 5.0 if config == "untraced" else 9.0}, "truths": [], "major_faults": 0}

    monkeypatch.setattr(sf, "run_one", stand_in)
    sf.record(tmp_path, 2, ["resnet_eager", "cupy_eager"], ["untraced", "graphmode"], "none", 10, warm_up=True)
    assert calls[:2] == [("resnet_eager", "untraced"), ("cupy_eager", "untraced")] and len(calls) == 2 + 2 * 4
    recs = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["config"] for r in recs[:2]] == ["warm_up", "warm_up"]
    assert sorted((r["workload"], r["config"]) for r in recs[2:]) == sorted(
        [(w, c) for w in ("resnet_eager", "cupy_eager") for c in ("untraced", "graphmode")] * 2)
    nf = load_benchmark("noise_floor")
    truths = nf.results_truths(tmp_path / "results.jsonl")
    assert sum(len(v) for t in truths.values() for v in t.values()) == 4  # 2 untraced processes a workload
    table = sf.slowdown_table(recs)  # the configs against untraced: graphmode's rows, none for the warm-ups
    assert "| graphmode |" in table and "warm_up" not in table
