"""Iterations of a user's script, found in what CUPTI recorded (a script writes no iteration markers).

The rules (docs/metrics.md, "Iterations of a user script"), on the timing pass:

- **graph**: each GPU execution of a graph (a `graph` span, or a replay's node spans grouped by
  correlation id) is one replay of the graph it maps to (analyzers.script_graphs). The first launch
  of a graph in the run is its first launch (its excess over a steady replay is a one-time cost).
- **eager**: the graph's *unit* (its kernel sequence, or the body it repeats when it is an unrolled
  loop) is looked for among the eager kernels of each stream, in GPU order; each non-overlapping
  occurrence, leftmost first, is one eager iteration. Kernels of other work between occurrences (a
  benchmark harness's cache flush, an optimizer left eager) do not break them: they are the other
  GPU work of that iteration. Graphs with the same unit share its occurrences; each stretch of them
  goes to the graph captured next after it (else the last one before it).
- **stretches**: iterations of one graph, mode and stream in a row; a capture, explicit build or
  instantiation, a replay of the graph (for eager work) or eager work of the graph (for replays)
  between two of them ends a stretch. An eager stretch of at most WARMUP_MAX iterations that runs
  right before the graph's capture (no other eager iteration of it in between) is its **warm-up**.
- **eager-only scripts** (no graph with kernels, so no unit to look for): the loop that launches a step
  and waits for it. The kernels are cut at the ends of the synchronizing calls; the stretch between two
  of them that recurs at least MIN_SYNC_ITERATIONS times and covers the most kernels is the step, and
  each such stretch is one eager iteration (`sync_iterations`). A loop that never synchronizes is
  not found this way: an NVTX range `graphmode:eager` around its step marks it.
- **NVTX**: ranges named `graphmode:eager`, `graphmode:eager_sync_each` or `graphmode:graph` are
  explicit iterations of that mode and replace the inferred ones of that mode.

Everything is vectorised over events; the Python loops run per graph, per unit, per stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers.script_graphs import ScriptGraphs
from graphmode.analyzers.stamps import has_stamps, line_stamps
from graphmode.tracer.store import Trace

# An eager stretch this short, right before its graph's capture, is a warm-up: PyTorch's documentation
# warms up 3 steps on a side stream, make_graphed_callables 3, torch.compile's cudagraph trees 1.
WARMUP_MAX = 11
MIN_SYNC_ITERATIONS = 5  # an eager-only script's step: a kernel sequence between synchronizations, repeated this often
NVTX_PREFIX = "graphmode:"
NVTX_MODES = ("eager_sync_each", "eager", "graph")  # longest prefix first


@dataclass(frozen=True)
class Occurrences:
    """Iterations of one mode for one graph on one stream, sorted by GPU start. Times in ns; -1: unknown."""

    mode: str
    graph_id: int
    stream_id: int
    source: str  # 'inferred' | 'nvtx'
    launch: np.ndarray  # CPU start of the first launch call (-1 when the pass has no record of it)
    thread: np.ndarray  # thread of that call (0 unknown)
    gpu_start: np.ndarray
    gpu_end: np.ndarray
    gpu_busy: np.ndarray  # GPU time of the iteration's own work
    launch_call_ns: np.ndarray  # duration of the first launch call (-1 unknown)
    units: int = 1  # eager iterations (of this unit) one replay of the graph does the work of


def find_sequence(codes: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """Start positions of the non-overlapping occurrences of `pattern` in `codes`, leftmost first.

    Candidates shrink one pattern position at a time (a loop over the pattern, not the events).
    """
    n, m = codes.size, pattern.size
    if m == 0 or n < m:
        return np.zeros(0, dtype=np.int64)
    cand = np.flatnonzero(codes[: n - m + 1] == pattern[0])
    for k in range(1, m):
        if cand.size == 0:
            break
        cand = cand[codes[cand + k] == pattern[k]]
    if cand.size <= 1 or np.all(np.diff(cand) >= m):
        return cand.astype(np.int64)
    # A self-overlapping pattern (e.g. one kernel repeated): keep the leftmost, skip what overlaps it.
    nxt = np.searchsorted(cand, cand + m, side="left")
    keep, i = [], 0
    while i < cand.size:  # one step per occurrence kept (per iteration), not per event
        keep.append(i)
        i = int(nxt[i])
    return cand[np.asarray(keep, dtype=np.int64)].astype(np.int64)


_LAUNCH_SQL = """
WITH launch AS (  -- the earliest call with a correlation id is the launch (a runtime call wraps its driver call)
  SELECT correlation_id, min(start_ns) AS launch_ns, arg_min(end_ns - start_ns, start_ns) AS call_ns,
         arg_min(thread_id, start_ns) AS thread_id
  FROM api_calls WHERE pass_id = $1 AND category IN ('kernel_launch', 'graph_launch') GROUP BY correlation_id
)
"""

_REPLAYS_SQL = _LAUNCH_SQL + """
-- one row per launch: a node-detail replay's nodes may run on several streams (branches of a fork/join);
-- the replay's stream is that of its first node
SELECT s.graph_id, arg_min(s.stream_id, s.start_ns) AS stream_id, min(s.start_ns) AS gpu_start, max(s.end_ns) AS gpu_end,
       sum(s.end_ns - s.start_ns) AS busy, coalesce(min(l.launch_ns), -1) AS launch_ns,
       coalesce(min(l.call_ns), -1) AS call_ns, coalesce(min(l.thread_id), 0) AS thread_id
FROM gpu_spans s LEFT JOIN launch l ON l.correlation_id = s.correlation_id AND s.correlation_id <> 0
WHERE s.pass_id = $1 AND s.graph_id <> 0 AND (s.kind = 'graph' OR NOT EXISTS
      (SELECT 1 FROM gpu_spans g WHERE g.pass_id = $1 AND g.kind = 'graph'))
GROUP BY s.graph_id, s.correlation_id, CASE WHEN s.correlation_id = 0 THEN s.start_ns ELSE 0 END
ORDER BY gpu_start
"""

_EAGER_SQL = _LAUNCH_SQL + """
SELECT s.name, s.stream_id, s.start_ns, s.end_ns, coalesce(l.launch_ns, -1) AS launch_ns,
       coalesce(l.call_ns, -1) AS call_ns, coalesce(l.thread_id, 0) AS thread_id
FROM gpu_spans s LEFT JOIN launch l ON l.correlation_id = s.correlation_id
WHERE s.pass_id = $1 AND s.kind = 'kernel' AND s.graph_id = 0
ORDER BY s.stream_id, s.start_ns
"""

_NVTX_SQL = """
SELECT name, start_ns, end_ns, thread_id FROM markers
WHERE pass_id = $1 AND kind = 'nvtx' AND starts_with(name, 'graphmode:') ORDER BY start_ns
"""


def graph_replays(trace: Trace, sg: ScriptGraphs) -> list[Occurrences]:
    """Replays per (graph, stream) of the timing pass, graph ids mapped to the structure pass."""
    r = trace.sql(_REPLAYS_SQL, [sg.timing_pass])
    if not r["graph_id"].size:
        return []
    gid = np.array([sg.exec_to_graph.get(int(g), int(g)) for g in r["graph_id"]], dtype=np.int64)
    out = []
    for g, stream in sorted({(int(a), int(b)) for a, b in zip(gid, r["stream_id"])}):  # per graph and stream
        sel = (gid == g) & (r["stream_id"] == stream)
        out.append(Occurrences("graph", g, stream, "inferred", r["launch_ns"][sel].astype(np.int64),
                               r["thread_id"][sel].astype(np.int64), r["gpu_start"][sel].astype(np.int64),
                               r["gpu_end"][sel].astype(np.int64), r["busy"][sel].astype(np.int64),
                               r["call_ns"][sel].astype(np.int64)))
    return out


def eager_occurrences(trace: Trace, sg: ScriptGraphs, step: tuple[str, ...] = (), source: str = "inferred") -> list[Occurrences]:
    """Eager occurrences of every graph's work, per stream. The unit is the graph's whole kernel
    sequence where it ran eagerly, else the body it repeats (an unrolled loop: a replay does that many
    eager iterations); graphs with the same unit share its occurrences (`_owners`). `step`: instead of the graphs'
    units, this kernel sequence as graph 0's (`line_iterations`), its occurrences' source `source`."""
    e = trace.sql(_EAGER_SQL, [sg.timing_pass])
    names = e["name"]
    if names.size == 0:
        return []
    vocab, codes = factorize(names)
    stream = e["stream_id"].astype(np.int64)
    start, end = e["start_ns"].astype(np.int64), e["end_ns"].astype(np.int64)
    streams = np.unique(stream)
    bounds = np.searchsorted(stream, np.append(streams, np.iinfo(np.int64).max))
    found: dict[tuple[str, ...], list[tuple[int, np.ndarray]]] = {}

    # Work spread over several streams (a fork/join step) never shows its whole sequence in one stream:
    # it is looked for in all eager kernels together, in launch order (GPU order where launches were not
    # recorded), as stream -1.
    merged = np.lexsort((start, np.where(e["launch_ns"] >= 0, e["launch_ns"], start)))

    def occurrences(unit: tuple[str, ...]) -> list[tuple[int, np.ndarray]]:
        if unit not in found:  # per distinct unit
            wanted = np.asarray(unit, dtype=vocab.dtype)
            idx = np.minimum(np.searchsorted(vocab, wanted), vocab.size - 1)
            hits: list[tuple[int, np.ndarray]] = []
            if np.all(vocab[idx] == wanted):
                for k, st in enumerate(streams):  # per stream
                    lo, hi = int(bounds[k]), int(bounds[k + 1])
                    pos = find_sequence(codes[lo:hi], idx) + lo
                    if pos.size:
                        hits.append((int(st), pos))
                if not hits and streams.size > 1:
                    pos = find_sequence(codes[merged], idx)
                    if pos.size:
                        hits.append((-1, pos))
            found[unit] = hits
        return found[unit]

    by_unit: dict[tuple[tuple[str, ...], int], list[int]] = {}
    if step and occurrences(step):
        by_unit[(step, 1)] = [0]
    for g in sg.graphs if not step else ():  # per graph: its whole sequence, else its repeated body
        if not g.kernels:
            continue
        for unit in dict.fromkeys((g.kernels, g.unit)):
            if unit and occurrences(unit):
                by_unit.setdefault((unit, len(g.kernels) // len(unit)), []).append(g.graph_id)
                break
    captures = {c.graph_id: c.start_ns for c in sg.lifecycle if c.event in ("capture", "build")}
    out: list[Occurrences] = []
    for (unit, units), graphs in by_unit.items():  # per unit
        m = len(unit)
        for st, pos in occurrences(unit):  # per stream
            members = pos[:, None] + np.arange(m)[None, :]
            if st == -1:  # positions in the merged order
                members = merged[members]
                pos = members[:, 0]
            gpu_end = end[members].max(axis=1)
            busy = (end[members] - start[members]).sum(axis=1)  # kernels of one stream run one after another
            occ_start = start[members].min(axis=1)
            owner = _owners(occ_start, graphs, captures)
            for g in np.unique(owner):  # per graph sharing the unit
                sel = owner == g
                out.append(Occurrences("eager", int(g), st, source, e["launch_ns"][pos][sel].astype(np.int64),
                                       e["thread_id"][pos][sel].astype(np.int64), occ_start[sel], gpu_end[sel], busy[sel],
                                       e["call_ns"][pos][sel].astype(np.int64), units))
    return out


_SYNC_SQL = "SELECT thread_id, end_ns FROM api_calls WHERE pass_id = ? AND category = 'sync' ORDER BY end_ns"


def sync_iterations(trace: Trace, sg: ScriptGraphs) -> list[Occurrences]:
    """A script that built no graph: its eager iterations are the stretches of kernels between two synchronizations
    (of the thread that synchronized most) whose kernels recur most, at least MIN_SYNC_ITERATIONS times (module doc).
    A kernel belongs to the stretch its launch falls in, or, where launches were not recorded (the measuring run),
    its GPU start: work launched before a synchronization starts before that synchronization returns, work launched
    after it starts after. Stretches are compared by their kernels in launch order, or as a set where only GPU
    order is known (parallel streams start in either order). The step is the recurring stretch that covers the
    most kernels. One Occurrences of graph 0 (stream -1 where the step ran on several streams); [] where no
    stretch recurs enough."""
    e = trace.sql(_EAGER_SQL, [sg.timing_pass])
    syncs = trace.sql(_SYNC_SQL, [sg.timing_pass])
    if e["name"].size == 0 or syncs["end_ns"].size < MIN_SYNC_ITERATIONS:
        return []
    threads, counts = np.unique(syncs["thread_id"].astype(np.int64), return_counts=True)
    ends = syncs["end_ns"][syncs["thread_id"] == threads[np.argmax(counts)]].astype(np.int64)
    launch = e["launch_ns"].astype(np.int64)
    start, end = e["start_ns"].astype(np.int64), e["end_ns"].astype(np.int64)
    by_launch = bool((launch >= 0).all())
    at = launch if by_launch else start
    idx = np.argsort(at, kind="stable")
    seg = np.searchsorted(ends, at[idx], side="left")
    vocab, codes = factorize(e["name"][idx])
    cuts = np.flatnonzero(np.diff(seg)) + 1
    first = np.concatenate(([0], cuts)).astype(np.int64)
    last = np.concatenate((cuts, [idx.size])).astype(np.int64)
    signature = [tuple(codes[a:b].tolist() if by_launch else sorted(codes[a:b].tolist())) for a, b in zip(first, last)]
    tally: dict[tuple[int, ...], int] = {}
    for sig in signature:  # per stretch between synchronizations
        tally[sig] = tally.get(sig, 0) + 1
    recurring = [(n * len(sig), len(sig), sig) for sig, n in tally.items() if n >= MIN_SYNC_ITERATIONS]
    if not recurring:
        return []
    step = max(recurring)[2]
    keep = np.array([sig == step for sig in signature], dtype=bool)
    members = [idx[a:b] for a, b in zip(first[keep], last[keep])]
    head = np.array([m[np.argmin(at[m])] for m in members], dtype=np.int64)
    streams = {int(x) for m in members for x in e["stream_id"][m]}
    return [Occurrences("eager", 0, streams.pop() if len(streams) == 1 else -1, "inferred", launch[head],
                        e["thread_id"][head].astype(np.int64), np.array([start[m].min() for m in members], dtype=np.int64),
                        np.array([end[m].max() for m in members], dtype=np.int64),
                        np.array([(end[m] - start[m]).sum() for m in members], dtype=np.int64), e["call_ns"][head].astype(np.int64))]


LINE_SOURCE = "line "  # Occurrences.source of a step found between executions of a line: 'line FILE:N'
LOOP_STEP_MIN = 20  # a loop's step recurs this often; an outer loop over identical steps (epochs) less (loop_step)

_C = TypeVar("_C")


def step_pool(cands: list[_C], covered: Callable[[_C], int], recurrences: Callable[[_C], int]) -> tuple[list[_C], list[_C]]:
    """The rule that picks a loop's step among repeated stretches (loop_step, analyzers.repetition): of the candidates
    covering at least half as many kernels as the most (`top`), those recurring at least LOOP_STEP_MIN times, else all
    of `top` (`pool`, from which the caller takes the longest). `cands` is not empty."""
    best = max(covered(c) for c in cands)
    top = [c for c in cands if 2 * covered(c) >= best]
    return top, [c for c in top if recurrences(c) >= LOOP_STEP_MIN] or top


def loop_step(trace: Trace, pass_id: int) -> tuple[tuple[str, ...], str] | None:
    """A script that built no graph and whose loop does not synchronize: its step, from a pass that stamped every user
    line and recorded every launch (the detail run on Python 3.12+). For each line of the stamping thread, that
    thread's kernel launches are cut at the line's executions; a line whose most common stretch of kernels (names in
    launch order) recurs at least MIN_SYNC_ITERATIONS times is a candidate, covering that many times its length in
    kernels. Of the candidates covering at least half as many kernels as the most, those whose stretch recurs at
    least LOOP_STEP_MIN times (else all of them): the longest stretch is the step, so the step's call line wins over
    a loop over its kernels or layers inside it, and over an outer loop over identical steps (epochs) that recurs
    less often. Lines with the same stretch name it alike; the one named is a line of the script's top level where
    one is (the loop, not the step function's last line), else the one that recurs most. Returns (the step's kernel
    names, 'file:line'), or None."""
    e = trace.sql(_EAGER_SQL, [pass_id])
    st = line_stamps(trace, pass_id)
    if e["name"].size == 0 or st["ts_ns"].size == 0:
        return None
    threads, counts = np.unique(st["thread_id"], return_counts=True)
    thread = threads[np.argmax(counts)]
    mine = (e["thread_id"].astype(np.int64) == thread) & (e["launch_ns"] >= 0)
    launch = e["launch_ns"][mine].astype(np.int64)
    order = np.argsort(launch, kind="stable")
    launch = launch[order]
    names = e["name"][mine][order]
    if launch.size < MIN_SYNC_ITERATIONS:
        return None
    vocab, codes = factorize(names)
    codes = codes.astype(np.int32)
    on = st["thread_id"] == thread
    locs, ts = st["loc"][on], st["ts_ns"][on]
    top_level = set(locs[st["top"][on]].tolist())
    line_ids, per_line = np.unique(locs, return_counts=True)
    stretch = _StretchHash(codes)
    # (kernels covered, stretch length, recurrences, its first kernel, line)
    cands: list[tuple[int, int, int, int, str]] = []
    # per line run often enough
    for k in np.flatnonzero((per_line >= MIN_SYNC_ITERATIONS) & (per_line <= launch.size + 1)):
        seg = np.searchsorted(ts[locs == line_ids[k]], launch, side="right")  # 0: before the line's first execution
        if seg[-1] == 0:
            continue  # no launch after its first execution
        first = int(np.argmax(seg > 0))
        cuts = np.flatnonzero(np.diff(seg[first:])) + 1 + first
        a = np.concatenate(([first], cuts)).astype(np.int64)
        b = np.concatenate((cuts, [launch.size])).astype(np.int64)
        m, n, at = stretch.most_covering(a, b)
        if n >= MIN_SYNC_ITERATIONS:
            cands.append((n * m, m, n, at, str(line_ids[k])))
    if not cands:
        return None
    top, pool = step_pool(cands, lambda c: c[0], lambda c: c[2])
    _, m, _, at, line = max(pool, key=lambda c: (c[1], c[4] in top_level, c[2]))
    return tuple(str(vocab[i]) for i in codes[at:at + m]), line


class _StretchHash:
    """Stretches [a, b) of a code sequence compared by a polynomial hash mod 2**64 and their length, all stretches of
    one cut at once (numpy, no loop over the stretches: a line run once per kernel of a long run cuts as many)."""

    BASE = 1_000_003  # odd: invertible mod 2**64

    def __init__(self, codes: np.ndarray) -> None:
        n = codes.size
        pw = np.full(n + 1, self.BASE, dtype=np.uint64)
        pw[0] = 1
        self.pw = np.cumprod(pw)  # BASE**i mod 2**64 (unsigned overflow wraps)
        ipw = np.full(n + 1, pow(self.BASE, -1, 1 << 64), dtype=np.uint64)
        ipw[0] = 1
        self.ipw = np.cumprod(ipw)
        self.prefix = np.zeros(n + 1, dtype=np.uint64)
        self.prefix[1:] = np.cumsum((codes.astype(np.uint64) + np.uint64(1)) * self.pw[:-1])

    def most_covering(self, a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
        """Of the stretches [a[i], b[i]), the one whose copies cover the most codes (then the longest): (its length,
        how many times it occurs, where one copy starts)."""
        h = (self.prefix[b] - self.prefix[a]) * self.ipw[a]
        keys = np.stack([h, (b - a).astype(np.uint64)], axis=1)
        _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
        length = (b - a)[first]
        i = int(np.lexsort((length, counts * length))[-1])
        return int(length[i]), int(counts[i]), int(a[first[i]])


def line_iterations(trace: Trace, sg: ScriptGraphs) -> list[Occurrences]:
    """A script that built no graph and whose loop does not synchronize: the occurrences of its step (`loop_step`, read
    in the pass that stamped every line: the structure pass) among the eager kernels of the pass, as graph 0's eager
    iterations, source 'line FILE:N'. [] where no pass stamped lines or no step recurs."""
    stamped = next((p for p in (sg.structure_pass, sg.timing_pass) if has_stamps(trace, p)), None)
    found = loop_step(trace, stamped) if stamped is not None else None
    if found is None:
        return []
    return eager_occurrences(trace, sg, step=found[0], source=LINE_SOURCE + found[1])


def _owners(starts: np.ndarray, graphs: list[int], captures: dict[int, int]) -> np.ndarray:
    """For occurrences shared by graphs of one unit: the graph captured next after each (else the last
    one captured before it). One graph: all of them."""
    if len(graphs) == 1:
        return np.full(starts.size, graphs[0], dtype=np.int64)
    caps = sorted((captures.get(g, 0), g) for g in graphs)
    at = np.array([c for c, _ in caps], dtype=np.int64)
    ids = np.array([g for _, g in caps], dtype=np.int64)
    j = np.searchsorted(at, starts, side="left")
    return np.asarray(ids[np.minimum(j, ids.size - 1)])


def nvtx_ranges(trace: Trace, pass_id: int) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """mode -> (start, end, thread) of the ranges named graphmode:<mode>… (longest mode name first)."""
    r = trace.sql(_NVTX_SQL, [pass_id])
    names = r["name"].astype(str) if r["name"].size else np.zeros(0, dtype=str)
    out: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    if not names.size:
        return out
    rest = np.char.lstrip(np.char.replace(names, NVTX_PREFIX, "", count=1))
    taken = np.zeros(names.size, dtype=bool)
    for mode in NVTX_MODES:
        sel = np.char.startswith(rest, mode) & ~taken
        taken |= sel
        if sel.any():
            out[mode] = (r["start_ns"][sel].astype(np.int64), r["end_ns"][sel].astype(np.int64), r["thread_id"][sel].astype(np.int64))
    return out
