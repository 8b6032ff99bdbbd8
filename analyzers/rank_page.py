"""What the rank page (reports.ranks_html) draws from the ranks' traces beyond their analysis, read one rank trace
at a time and only what is drawn kept: GPU activity of every rank in time bins (the heatmap), the spans of up to
MAX_TIMELINE_RANKS ranks, and one replay of each of those ranks' graph on the job's clock.

`rank_page_data(a)` is called by the command that writes the page, beside `analyze_ranks`; the page renders the
two and does not read the traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.rank_results import RankSetAnalysis
from graphmode.analyzers.ranks import map_in_workers, start_worker, worker_database
from graphmode.tracer.store import TraceError, load

HEAT_BINS = 400
MAX_TIMELINE_RANKS = 16
MAX_TIMELINE_SPANS = 60_000  # over all ranks drawn; more: each rank keeps a window around its middle replay


@dataclass(frozen=True, eq=False)
class RankPageData:
    heat: np.ndarray  # ranks x HEAT_BINS: the share of each bin the rank's GPU was busy (at most 1)
    drawn: list[int]  # the ranks whose spans are drawn
    timeline: list[Any]  # per drawn rank: (lane, start, end, category, name), ns from the job's first traced moment
    replay: list[Any]  # per drawn rank with the chosen replay: (row, start, end, category, name), ns on the job's clock
    notes: tuple[Note, ...]  # what was left out (rank_page_ranks_drawn, rank_page_not_drawn, rank_page_windowed)
    replay_choice: tuple[str, int] | None  # the graph (key) shown replay by replay, and which replay


def rank_page_data(a: RankSetAnalysis, workers: int = 1) -> RankPageData:
    """What the rank page draws (module doc); the rank traces read by `workers` processes (analyzers.ranks.analyze_ranks
    says what that asks of a script)."""
    heat, drawn, timeline, replay, notes = _collect(a, workers)
    return RankPageData(heat, drawn, timeline, replay, notes, replay_choice(a))


def span_category(kind: np.ndarray, name: np.ndarray) -> np.ndarray:
    cat: np.ndarray = kind.astype(object).copy()
    uniq, inv = factorize(name)
    # once per distinct name
    nccl = np.array(["ncclDevKernel_" in u or "ncclKernel_" in u for u in uniq], dtype=bool)[inv]
    cat[nccl] = "NCCL collective"
    return cat


def replay_choice(a: RankSetAnalysis) -> tuple[str, int] | None:
    """The graph shown replay by replay (the first holding collectives, else the most replayed) and which
    replay: the middle one of the fewest any rank did."""
    candidates = [g for g in a.graphs_across if g.replays is not None and g.replays.min > 0]
    if not candidates:
        return None
    g = next((c for c in candidates if c.collectives), max(candidates, key=lambda c: c.replays.median if c.replays else 0))
    assert g.replays is not None
    return g.key, int(g.replays.min) // 2


@dataclass(frozen=True, eq=False)
class _RankDrawing:
    """What one rank's trace gives the page (_draw_rank), or why it could not be read (`error`)."""

    heat_bins: np.ndarray  # heatmap bins of the job's axis, with the GPU busy time in each
    heat_busy: np.ndarray
    spans: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None  # drawn ranks: (start, end, category, name), ns
    spans_in_run: int  # the rank's spans in its traced pass (drawn ranks)
    replay: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None  # the chosen replay's spans, on the job's clock
    error: str = ""


@dataclass(frozen=True)
class _RankToDraw:
    """What _draw_rank needs to know of one rank and of the page."""

    path: str
    pass_id: int
    offset: int  # the rank's clock offset onto the job's clock
    t0: float  # the job's first traced moment (ns)
    bin_ns: float
    draw_spans: bool  # one of the ranks drawn span by span
    budget: int  # spans drawn per rank at most
    middle_ns: int  # the middle of the rank's traced pass and its end (the window drawn of a long run)
    end_ns: int
    replay: tuple[int, int] | None  # the graph shown replay by replay (its id on this rank) and which replay


def _draw_rank(job: _RankToDraw) -> _RankDrawing:
    """One rank trace read for the page, and closed."""
    empty = np.zeros(0, np.int64)
    try:
        trace = load(job.path, worker_database())
    except TraceError as e:
        return _RankDrawing(empty, empty, None, 0, None, str(e))
    with trace:
        pid, off, t0 = job.pass_id, job.offset, job.t0
        b = trace.sql(f"""SELECT CAST(floor((start_ns + {off} - {t0}) / {job.bin_ns}) AS INTEGER) AS b,
                                 sum(end_ns - start_ns) AS busy FROM gpu_spans WHERE pass_id = ? GROUP BY 1""", [pid])
        spans, n = None, 0
        if job.draw_spans:
            n = int(trace.rows("SELECT count(*) FROM gpu_spans WHERE pass_id = ?", [pid])[0][0])
            where, params = "pass_id = ?", [pid]
            if n > job.budget:  # a window of the run, centred on its middle
                cut = trace.rows("""SELECT start_ns FROM gpu_spans WHERE pass_id = ? AND start_ns >= ?
                                    ORDER BY start_ns LIMIT 1 OFFSET ?""", [pid, job.middle_ns, job.budget - 1])
                hi = int(cut[0][0]) if cut else job.end_ns
                where, params = "pass_id = ? AND start_ns >= ? AND start_ns <= ?", [pid, job.middle_ns, hi]
            sp = trace.sql(f"SELECT kind, name, start_ns, end_ns FROM gpu_spans WHERE {where} ORDER BY start_ns", params)
            spans = (sp["start_ns"] + off - t0, sp["end_ns"] + off - t0, span_category(sp["kind"], sp["name"]), sp["name"])
        replay = None
        if job.replay is not None:
            launch = trace.rows("""SELECT correlation_id FROM graph_events WHERE pass_id = ? AND graph_id = ? AND event = 'launch'
                                   ORDER BY start_ns LIMIT 1 OFFSET ?""", [pid, *job.replay])
            if launch:
                sp = trace.sql(f"""SELECT kind, name, start_ns, end_ns FROM gpu_spans WHERE pass_id = ? AND correlation_id = ?
                                   AND graph_id <> 0 ORDER BY start_ns""", [pid, int(launch[0][0])])
                replay = (sp["start_ns"] + off, sp["end_ns"] + off, span_category(sp["kind"], sp["name"]), sp["name"])
    return _RankDrawing(b["b"], b["busy"], spans, n, replay)


def _collect(a: RankSetAnalysis, workers: int) -> tuple[np.ndarray, list[int], list[Any], list[Any], tuple[Note, ...]]:
    """One pass over the rank traces (by `workers` processes, analyzers.ranks.map_in_workers; each rank's drawing
    taken in the ranks' order): heatmap rows for every rank, spans of the ranks drawn, one replay each."""
    t0 = min(s.start_ns + a.offset_of(s.identity.rank) for s in a.ranks)
    t1 = max(s.end_ns + a.offset_of(s.identity.rank) for s in a.ranks)
    bin_ns = max((t1 - t0) / HEAT_BINS, 1.0)
    drawn = _drawn_ranks(a)
    per_rank_budget = MAX_TIMELINE_SPANS // max(len(drawn), 1)
    choice = replay_choice(a)
    heat = np.zeros((len(a.ranks), HEAT_BINS))
    timeline: list[Any] = []
    replay: list[Any] = []
    notes: list[Note] = []
    windowed: list[tuple[int, int]] = []  # (rank, its spans): drawn as a window of per_rank_budget spans
    graph_ids = {(g.rank, g.key): g.graph_id for g in a.graphs}
    jobs = []
    for s in a.ranks:
        r = s.identity.rank
        shown = choice is not None and r in drawn and (r, choice[0]) in graph_ids
        jobs.append(_RankToDraw(s.identity.path, s.pass_id, int(a.offset_of(r)), t0, bin_ns, r in drawn, per_rank_budget,
                                (s.start_ns + s.end_ns) // 2, s.end_ns,
                                (graph_ids[(r, choice[0])], choice[1]) if shown and choice is not None else None))
    for row, (s, d) in enumerate(zip(a.ranks, map_in_workers(_draw_rank, jobs, workers, initializer=start_worker))):
        r = s.identity.rank
        if d.error:
            notes.append(note("rank_page_not_drawn", rank=r, error=d.error))
            continue
        ok = (d.heat_bins >= 0) & (d.heat_bins < HEAT_BINS)
        np.add.at(heat[row], d.heat_bins[ok].astype(np.int64), d.heat_busy[ok].astype(np.float64))
        if d.spans is not None:
            if d.spans_in_run > per_rank_budget:
                windowed.append((r, d.spans_in_run))
            timeline.append((drawn.index(r), *d.spans))
        if d.replay is not None:
            replay.append((row, *d.replay))
    if windowed:
        notes.append(note("rank_page_windowed", windowed=len(windowed), drawn=len(drawn), budget=per_rank_budget,
                          most=max(n for _, n in windowed)))
    if len(drawn) < len(a.ranks):
        notes.insert(0, note("rank_page_ranks_drawn", drawn=tuple(drawn), ranks=len(a.ranks)))
    heat /= bin_ns
    return np.minimum(heat, 1.0), drawn, timeline, replay, tuple(notes)


def _drawn_ranks(a: RankSetAnalysis) -> list[int]:
    ranks = [s.identity.rank for s in a.ranks]
    if len(ranks) <= MAX_TIMELINE_RANKS:
        return ranks
    keep = set(ranks[: MAX_TIMELINE_RANKS // 2])
    if a.straggler is not None:
        keep.add(a.straggler.rank)
    for r in ranks[::-1]:
        if len(keep) >= MAX_TIMELINE_RANKS:
            break
        keep.add(r)
    return sorted(keep)
