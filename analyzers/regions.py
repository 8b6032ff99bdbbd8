"""Repeated regions of a trace that a CUDA graph could replace (for analyzers.predict).

A region is a set of iterations of the same work: the eager iterations of the traced pass (the runner's
markers, a script's inferred iterations per graph, NVTX `graphmode:eager` ranges; the steady ones of the
iteration module once it gives roles), every NVTX range name repeated at least MIN_NVTX_REPEATS times,
and runs of calls from lines the user names. Each comes with its windows in the traced pass (where its
operations are read) and its periods from the wall pass (timing pass when it has the same iterations).
docs/metrics.md, "Prediction", gives the rules.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers.inference import LINE_SOURCE
from graphmode.analyzers.notes import Note, NoteValue, note
from graphmode.analyzers.repetition import REPEAT_SOURCE, SHAPE_MARK, parse_repeat, parse_shape
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.analyzers.run import Run, build_run
from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.untraced import short_loc, with_untraced
from graphmode.analyzers.untraced_windows import with_windows
from graphmode.tracer.store import Trace

EAGER_MODES = ("eager", "eager_sync_each")
MIN_NVTX_REPEATS = 3
SYNC_BASIS = note("basis_synchronized")  # a script's synchronized loop (graph 0): the stretch between synchronizations


@dataclass
class Region:
    label: str
    basis: Note  # how its iterations were found (reports.notes words it)
    mode: str
    graph_id: int  # graph measured in the trace that did this work (0: none)
    starts: np.ndarray  # windows in the traced pass
    ends: np.ndarray
    wall: np.ndarray  # periods (ns) from the wall pass
    wall_start: int  # first start in the wall pass (is a graph instantiated before it?)
    wall_traced: bool  # the periods include the tracer's overhead
    correction: float  # timing/traced ratio of the mode's median (1 without a timing pass)
    runner: bool  # iterations written by graphmode's runner (bench / compare)
    loop: bool = False  # a script that built no graph: its loop's steps, inferred (analyzers.inference), the headline's
    # a loop of several regions (steps, input shapes): the median period of this region's iterations in the measuring
    # run over that of all the loop's iterations there (loop_shares), by which the headline's eager period, the loop's,
    # is this region's; 1 for a loop of one region
    loop_share: float = 1.0


def _iteration_windows(run: Run, pass_id: int) -> dict[str, np.ndarray]:
    """Iterations of a pass as columns mode, graph_id, name, start_ns, end_ns (steady ones only when the
    iteration table (analyzers.script_analysis.find_iterations) says which are warm-ups)."""
    trace = run.trace
    try:
        t = find_iterations(run, pass_id)
        role, mode, gid = np.asarray(t.role), np.asarray(t.mode).astype(str), np.asarray(t.graph_id)
        steady = role == "steady"
        # a graph whose only eager runs are warm-ups (torch.compile's one call before recording): those
        with_steady = {(m, g) for m, g in zip(mode[steady & (mode != "graph")], gid[steady & (mode != "graph")])}
        steady |= (role == "warmup") & np.array([(m, g) not in with_steady for m, g in zip(mode, gid)], dtype=bool)
        # eager iterations of no graph, inferred: a script's synchronized steps
        # (analyzers.inference.sync_iterations),
        # or those between runs of its loop's call line (line_iterations: source 'line FILE:N'),
        source = np.asarray(t.source).astype(str)
        loop = (np.asarray(t.graph_id) == 0) & (mode != "graph")
        # or the block its kernels repeat (analyzers.repetition: 'repeat LENGTH RECURRENCES'); each maybe ' shape K/N'
        name = np.array([_loop_name(str(s)) if lp else "" for s, lp in zip(source.tolist(), loop.tolist())], dtype=object)
        return {"mode": np.asarray(t.mode, dtype=object)[steady], "graph_id": np.asarray(t.graph_id, dtype=np.int64)[steady],
                "name": name.astype(object)[steady],
                "start_ns": np.asarray(t.start_ns, dtype=np.int64)[steady], "end_ns": np.asarray(t.end_ns, dtype=np.int64)[steady]}
    except (AttributeError, TypeError, KeyError, ValueError):
        pass  # an interface still moving: the markers below say the same for bench and script traces
    return trace.sql("SELECT mode, graph_id, name, start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration' "
                     "ORDER BY start_ns", [pass_id])


def _loop_name(source: str) -> str:
    """The region name of an eager-only loop's iterations from their source: 'synchronized', 'line FILE:N' or 'repeat
    LENGTH RECURRENCES', with the source's shape mark (analyzers.repetition.split_by_shape); '' for other sources."""
    base, k, n = parse_shape(source)
    name = "synchronized" if base == "inferred" else base if base.startswith((LINE_SOURCE, REPEAT_SOURCE)) else ""
    return f"{name}{SHAPE_MARK}{k}/{n}" if name and n else name


def _loop_label(mode: str, name: str) -> tuple[str, Note] | None:
    """An eager-only loop's region (a _loop_name): its label and basis, which says the rule that found the step, which
    step it is where the rule found several (step S of M), and where the step changes shape, which shape (shape K of N)."""
    base, k, n = parse_shape(name)
    shape: dict[str, NoteValue] = {"shape": k, "shapes": n} if n else {}
    step, steps = parse_repeat(base)[2:] if base.startswith(REPEAT_SOURCE) else (0, 0)
    label = f"{mode} iterations" + (f", step {step} of {steps}" if steps else "") + (f", shape {k} of {n}" if n else "")
    if base == "synchronized":
        return label, (note("basis_synchronized", **shape) if n else SYNC_BASIS)
    if base.startswith(LINE_SOURCE):
        return label, note("basis_line", line=short_loc(base[len(LINE_SOURCE):]), **shape)
    if base.startswith(REPEAT_SOURCE):
        length, recurrences = parse_repeat(base)[:2]
        of: dict[str, NoteValue] = {"step": step, "steps": steps} if steps else {}
        return label, note("basis_kernel_repetition", kernels=length, recurrences=recurrences, **of, **shape)
    return None


def _label(mode: str, graph_id: int, name: str) -> tuple[str, Note]:
    """A region's label (its name in every view) and its basis (how its iterations were found)."""
    if graph_id == 0 and (loop := _loop_label(mode, name)) is not None:
        return loop
    if name == "inferred":
        return (f"{mode} iterations doing graph {graph_id}'s work", note("basis_graph_kernels"))
    if name == "nvtx":
        return (f"NVTX graphmode:{mode} ranges", note("basis_nvtx_markers"))
    if name == mode:
        return (f"{mode} iterations", note("basis_runner_markers"))
    return (f"{mode} iterations" + (f" of graph {graph_id}" if graph_id else ""), note("basis_iteration_table"))


def marker_regions(source: Trace | Run, traced_id: int, timing_id: int | None) -> list[Region]:
    run = source if isinstance(source, Run) else build_run(source)
    trace = run.trace
    tr = _iteration_windows(run, traced_id)
    wl = _iteration_windows(run, timing_id) if timing_id is not None else None
    out: list[Region] = []
    if tr["mode"].size == 0:
        return out
    # graphmode's runner (bench, compare) writes phase markers; a script's traced pass has none.
    runner = bool(trace.rows("SELECT count(*) FROM markers WHERE pass_id = ? AND kind = 'phase'", [traced_id])[0][0])
    modes = tr["mode"].astype(str)
    gids = tr["graph_id"].astype(np.int64)
    names = tr["name"].astype(str)
    for mode in EAGER_MODES:
        # per (mode, graph): a handful; an eager-only loop (graph 0) per step found and input shape, in the order they
        # first ran (shape 1 first)
        keys = {(int(a), str(b) if a == 0 else "") for a, b in zip(gids[modes == mode], names[modes == mode])}
        first = {k: int(tr["start_ns"][(modes == mode) & (gids == k[0]) & ((names == k[1]) if k[0] == 0 else True)].min()) for k in keys}
        for g, part in sorted(keys, key=lambda k: (k[0], first[k], k[1])):
            sel = (modes == mode) & (gids == g) & ((names == part) if g == 0 else True)
            starts, ends = tr["start_ns"][sel].astype(np.int64), tr["end_ns"][sel].astype(np.int64)
            label, basis = _label(mode, int(g), names[sel][0])
            loop = g == 0 and _loop_label(mode, names[sel][0]) is not None
            wall, wall_traced, wall_start, correction = ends - starts, True, int(starts.min()), 1.0
            if wl is not None and wl["mode"].size:
                wsel = (wl["mode"].astype(str) == mode) & (wl["graph_id"].astype(np.int64) == g)
                if g == 0 and "name" in wl:
                    wsel &= wl["name"].astype(str) == part
                if wsel.any():
                    ws, we = wl["start_ns"][wsel].astype(np.int64), wl["end_ns"][wsel].astype(np.int64)
                    wall, wall_traced, wall_start = we - ws, False, int(ws.min())
                    traced_med = float(np.median(ends - starts))
                    correction = float(np.median(wall)) / traced_med if traced_med > 0 else 1.0
            out.append(Region(label, basis, mode, int(g), starts, ends, wall, wall_start, wall_traced, correction, runner, loop))
    shares = loop_shares(run) if sum(r.loop for r in out) > 1 else {}
    return [dataclasses.replace(r, loop_share=shares.get(r.label, 1.0)) if r.loop else r for r in out]


def _timed(run: Run, t: IterationTable) -> IterationTable:
    """The measuring run's iterations with the CPU-bound ones the timing run timed untraced (analyzers.untraced), and
    the loops its untraced windows leveled (analyzers.untraced_windows), as the analysis reads them
    (analyzers.script_analysis, from the same Run); `t` where neither timed any."""
    sg = run.script_graphs()
    lt = run.line_timing(sg) if sg is not None else None
    t = with_untraced(t, lt) if lt is not None else t
    if sg is not None and (windows := run.window_periods(sg.timing_pass)):
        t = with_windows(t, windows)[0]
    return t


def loop_shares(run: Run) -> dict[str, float]:
    """An eager-only loop found as several regions (steps, or a step's input shapes): per region label, the median
    period (work) of its steady iterations over that of all the loop's steady iterations, in the timing run where it
    timed them, or as the one run's untraced windows leveled them (untraced: the traced run's own cost grows with a
    region's launches, so its shares are not the program's), else in the measuring run. The headline's eager period is
    the loop's, taken over all of them (the timing run's, or the measuring run's with the tracer's cost taken off,
    analyzers.tracer_cost); a region's is its own share of it."""
    t = _timed(run, find_iterations(run))
    sel = (np.asarray(t.graph_id) == 0) & (np.asarray(t.role) == "steady") & np.isfinite(np.asarray(t.work, dtype=np.float64))
    sel &= np.isin(np.asarray(t.mode).astype(str), EAGER_MODES)
    if not sel.any():
        return {}
    work = np.asarray(t.work, dtype=np.float64)[sel]
    labels = np.array([(lab[0] if (lab := _loop_label(str(m), _loop_name(str(src)))) is not None else "")
                       for m, src in zip(np.asarray(t.mode)[sel].tolist(), np.asarray(t.source)[sel].tolist())], dtype=object)
    whole = float(np.median(work))
    if whole <= 0:
        return {}
    return {str(lab): float(np.median(work[labels == lab])) / whole for lab in set(labels.tolist()) if lab}


def _non_overlapping(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask keeping the leftmost of overlapping ranges (sorted by start): nested or crossing ranges of one
    name are not separate iterations."""
    keep = np.ones(starts.size, dtype=bool)
    last_end = -np.inf
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):  # per range of one name: iterations, not events
        if s < last_end:
            keep[i] = False
        else:
            last_end = e
    return keep


def nvtx_regions(trace: Trace, traced_id: int) -> list[Region]:
    r = trace.sql("SELECT name, start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'nvtx' AND NOT starts_with(name, 'graphmode:') "
                  "AND name IN (SELECT name FROM markers WHERE pass_id = ? AND kind = 'nvtx' GROUP BY name HAVING count(*) >= ?) "
                  "ORDER BY name, start_ns", [traced_id, traced_id, MIN_NVTX_REPEATS])
    out: list[Region] = []
    names = r["name"].astype(str) if r["name"].size else np.zeros(0, dtype=str)
    for name in np.unique(names):  # per repeated range name
        sel = names == name
        s, e = r["start_ns"][sel].astype(np.int64), r["end_ns"][sel].astype(np.int64)
        keep = _non_overlapping(s, e)
        if int(keep.sum()) < MIN_NVTX_REPEATS:
            continue
        s, e = s[keep], e[keep]
        out.append(Region(f"NVTX range '{name}'", note("basis_nvtx_ranges", ranges=int(keep.sum()), name=str(name)), "eager", 0, s, e, e - s,
                           int(s.min()), True, 1.0, False))
    return out


_LINES = re.compile(r"^(?P<file>.+?):(?P<a>\d+)(?:-(?P<b>\d+))?$")
_SOURCE = re.compile(r"(.*):(\d+)(?: .*)?")


def parse_line_spec(spec: str) -> tuple[str, int, int]:
    """'train.py:40-52' -> ('train.py', 40, 52); 'train.py:40' -> ('train.py', 40, 40). ValueError says what to
    write."""
    m = _LINES.match(spec.strip())
    if m is None:
        raise ValueError(f"--predict-lines {spec!r}: write FILE:LINE or FILE:FIRST-LAST (like train.py:40-52)")
    a, b = int(m.group("a")), int(m.group("b") or m.group("a"))
    if b < a:
        raise ValueError(f"--predict-lines {spec!r}: the last line comes before the first")
    return m.group("file"), a, b


def line_regions(trace: Trace, traced_id: int, specs: Sequence[str]) -> tuple[list[Region], list[Note]]:
    """Regions from lines the user names ('file.py:12-30'), from the calls' source lines (recorded with
    --launch-sources). An iteration is a run of consecutive calls from those lines; a call from another
    line ends it (the loop's synchronize, say), and it lasts until the next run starts. If the lines
    make a single run, it is cut at each launch of the first kernel launched from them instead."""
    out: list[Region] = []
    notes: list[Note] = []
    calls = trace.sql("SELECT start_ns, end_ns, source FROM api_calls WHERE pass_id = ? AND source <> '' ORDER BY start_ns, end_ns DESC",
                      [traced_id])
    src = calls["source"].astype(str) if calls["source"].size else np.zeros(0, dtype=str)
    uniq, inv = factorize(src)
    parsed = [_SOURCE.fullmatch(u) for u in uniq]  # per distinct source line
    for spec in specs:
        file, a, b = parse_line_spec(spec)
        if src.size == 0:
            notes.append(note("lines_without_sources", lines=spec))
            continue
        hit_u = np.array([p is not None and (p.group(1) == file or p.group(1).endswith("/" + file)) and a <= int(p.group(2)) <= b
                          for p in parsed], dtype=bool)
        inside = hit_u[inv]
        if not inside.any():
            notes.append(note("lines_without_calls", lines=spec))
            continue
        t = calls["start_ns"].astype(np.int64)
        change = np.flatnonzero(np.diff(inside.astype(np.int8)) != 0) + 1
        run_first = np.concatenate([[0], change])
        starts = t[run_first[inside[run_first]]]
        if starts.size < 2:
            launches = trace.sql(
                """SELECT min(a.start_ns) AS t, any_value(s.name) AS name, any_value(a.source) AS source FROM gpu_spans s JOIN api_calls a
                   ON a.pass_id = s.pass_id AND a.correlation_id = s.correlation_id
                   WHERE s.pass_id = ? AND s.graph_id = 0 AND a.source <> '' AND a.start_ns >= ? GROUP BY s.correlation_id ORDER BY t""",
                [traced_id, int(starts[0])])
            key = (str(launches["source"][0]), str(launches["name"][0])) if launches["t"].size else ("", "")
            first = (launches["source"].astype(str) == key[0]) & (launches["name"].astype(str) == key[1]) if launches["t"].size else \
                np.zeros(0, dtype=bool)
            starts = launches["t"][first].astype(np.int64)
        if starts.size < 2:
            notes.append(note("lines_ran_once", lines=spec))
            continue
        last_end = int(calls["end_ns"][inside].max())
        ends = np.append(starts[1:], max(last_end, int(starts[-1])) + 1)
        out.append(Region(f"lines {spec}", note("basis_line_runs", runs=int(starts.size), file=file, first=a, last=b), "eager", 0, starts, ends,
                           (ends - starts).astype(np.int64), int(starts.min()), True, 1.0, False))
    return out, notes
