"""How fast the CPU ran under a run's figures (issue 29, item 4: the distortion a report states is measured).

A CPU-bound figure (an eager step whose launches set its pace, a capture) is as fast as the CPU that ran it. On the lent
H200 the same ViT forward ran at 3.3-3.9 ms a call in some stretches of a process and 6.0-6.7 ms in others, untraced,
and a fixed pure-Python loop on the same thread ran 1.78x slower in the slow stretches (benchmarks/notes/s23). Whoever
compares such a figure with another process's, or with the timing run's, compares the CPU's speeds too.

The runs that stamp the user's lines (tracer.line_stamps) time that loop on the main thread at most every 50 ms
(meta.runs[].cpu_speed: when each sample started, on the pass's clock, and what it took). Here, per pass: the fastest and
slowest tenth of the samples, their ratio, the share of samples SLOW_AT times the fastest tenth or slower, and the median
sample against the fastest tenth of any run of the trace. Two notes:
- `cpu_speed_varied`: inside one run the slowest tenth took VARIED_AT times the fastest or more, and VARIED_SHARE of
  the samples or more were slow;
- `cpu_speed_slower_run`: of a trace's runs, one whose median sample took VARIED_AT times another's fastest tenth or more
  (graphmode run's timing run on a slow CPU while the traced run had a fast one: the untraced eager figures it gives
  read high).

Where a script that built no graph has its loop read by two runs (analyzers.predict: the timing run's reading and the
one traced run's, its tracer's cost taken off, averaged), a run whose median sample took VARIED_AT times the other's
or more is left out of that eager level (slower_run): in the one recording of session 23 where both runs took enough
samples and one ran on a slower CPU (1.64x), the kept reading was nearer the program's untraced clock than the mean for
each of its four shapes (benchmarks/notes/s23).

The figures themselves are not scaled by the samples: on the lent H200 the ViT's calls slowed less than the reference in
the slow stretches (1.64x against 1.78x), so dividing by the reference's slowdown put eager figures 0-30% below the
untraced programs' (benchmarks/notes/s23). Said, not corrected."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.torch_windows import run_entry
from graphmode.tracer.store import Trace

MIN_SAMPLES = 5  # fewer: too few to say how the speed moved
VARIED_AT = 1.25  # the slowest tenth this much slower than the fastest: the report says the CPU's speed moved
SLOW_AT = 1.25  # a sample this much slower than the fastest tenth is a slow one
# and at least this share of a run's samples slow: one sample an interrupt stretched is not a slow stretch (a quiet 2-core
# VM read 1.10-1.20x between the tenths, with 0-7% of 40 samples slow)
VARIED_SHARE = 0.1


@dataclass(frozen=True)
class CpuSpeed:
    """The CPU's speed on a run's main thread, from its samples of the reference loop (all times ns)."""

    pass_id: int
    run: str  # the run's name ('single', 'detail', 'timing')
    samples: int
    fast_ns: float  # the reference's time at the 10th percentile of the samples
    slow_ns: float  # at the 90th
    ratio: float  # slow_ns / fast_ns
    slow_share: float  # of the samples, those SLOW_AT x fast_ns or slower
    median_ns: float  # the median sample
    spent_ns: float  # the reference's own time in the run, all samples
    run_ns: float  # the run's length, on its clock
    reference: str  # what the reference is
    every_ns: int  # the least time between two samples
    vs_fastest: float = float("nan")  # median_ns over the fastest tenth of any run of the trace (cpu_speeds)

    @property
    def varied(self) -> bool:
        return self.samples >= MIN_SAMPLES and self.ratio >= VARIED_AT and self.slow_share >= VARIED_SHARE


def samples(trace: Trace, pass_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(start times on the pass's clock, the reference's times), sorted by start; empty where the run took none."""
    return _columns(_said(trace, pass_id))


def _said(trace: Trace, pass_id: int) -> dict[str, Any]:
    """The run's meta.runs[].cpu_speed entry ({} where it has none)."""
    said = run_entry(trace, pass_id).get("cpu_speed")
    return said if isinstance(said, dict) else {}


def _columns(said: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(start times, the reference's times) of a cpu_speed entry, sorted by start."""
    ts = np.asarray(said.get("ts_ns") or [], dtype=np.int64)
    ns = np.asarray(said.get("ns") or [], dtype=np.float64)
    n = min(ts.size, ns.size)
    order = np.argsort(ts[:n], kind="stable")
    return ts[:n][order], ns[:n][order]


def cpu_speed(trace: Trace, pass_id: int) -> CpuSpeed | None:
    """The pass's CPU speed, or None where its run took no sample (no line stamps: Python < 3.12, an older trace, a
    run that does not stamp)."""
    said = _said(trace, pass_id)
    _, ns = _columns(said)
    ns = ns[ns > 0]
    if not ns.size:
        return None
    p = next((p for p in trace.passes if p.pass_id == pass_id), None)
    fast, slow = (float(x) for x in np.percentile(ns, [10, 90]))
    return CpuSpeed(pass_id, p.name if p is not None else "", int(ns.size), fast, slow, slow / fast if fast > 0 else float("nan"),
                    float(np.mean(ns >= SLOW_AT * fast)), float(np.median(ns)), float(ns.sum()),
                    float(p.end_ns - p.start_ns) if p is not None else float("nan"), str(said.get("reference", "")),
                    int(said.get("every_ns", 0) or 0))


def cpu_speeds(trace: Trace) -> tuple[CpuSpeed, ...]:
    """Every pass's CPU speed, in pass order (passes without samples left out), each with its median against the
    fastest tenth of any of them (vs_fastest)."""
    out = [s for s in (cpu_speed(trace, p.pass_id) for p in trace.passes) if s is not None]
    fastest = min((s.fast_ns for s in out if s.fast_ns > 0), default=0.0)
    return tuple(replace(s, vs_fastest=s.median_ns / fastest) if fastest > 0 else s for s in out)


def speed_notes(speeds: tuple[CpuSpeed, ...]) -> list[Note]:
    """A note per run whose CPU speed moved by VARIED_AT or more; and, where the trace has runs with enough samples,
    one per run whose median took VARIED_AT times the fastest tenth of another run or more."""
    notes = [note("cpu_speed_varied", pass_id=s.pass_id, run=s.run, samples=s.samples, ratio=s.ratio,
                  slow_share=s.slow_share, slow_at=SLOW_AT, fast_ns=s.fast_ns, slow_ns=s.slow_ns, every_ns=s.every_ns)
             for s in speeds if s.varied]
    sampled = [s for s in speeds if s.samples >= MIN_SAMPLES]
    if len(sampled) < 2:
        return notes
    fastest = min(sampled, key=lambda s: s.fast_ns)
    for s in sampled:
        ratio = s.median_ns / fastest.fast_ns if fastest.fast_ns > 0 else float("nan")
        if s is not fastest and ratio >= VARIED_AT:
            notes.append(note("cpu_speed_slower_run", pass_id=s.pass_id, run=s.run, median_ns=s.median_ns,
                              other_run=fastest.run, other_fast_ns=fastest.fast_ns, ratio=ratio))
    return notes


def slower_run(speeds: tuple[CpuSpeed, ...], a: int, b: int) -> tuple[int, float] | None:
    """Of passes `a` and `b`, the one whose median sample took VARIED_AT times the other's or more, with that ratio; None
    where either took fewer than MIN_SAMPLES samples or neither ran that much slower. (analyzers.predict: a script's
    eager level from the run whose CPU was not slow.)"""
    sa = next((s for s in speeds if s.pass_id == a), None)
    sb = next((s for s in speeds if s.pass_id == b), None)
    if sa is None or sb is None or min(sa.samples, sb.samples) < MIN_SAMPLES or min(sa.median_ns, sb.median_ns) <= 0:
        return None
    if sa.median_ns >= VARIED_AT * sb.median_ns:
        return a, sa.median_ns / sb.median_ns
    if sb.median_ns >= VARIED_AT * sa.median_ns:
        return b, sb.median_ns / sa.median_ns
    return None
