"""What the HTML timeline draws: lanes, spans as columns, and which part of a run fits in a page.

Reads the trace with SQL and returns numpy columns; draws nothing. A page holds at most
`max_spans` spans (a million WebGL segments with their hover data would not fit the 25 MB and
5 s budget), so `select_spans` picks whole iterations, or a time window, and says what it left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphmode.tracer.store import PassInfo, Trace

MAX_DRAWN_SPANS = 120_000
ITERATION_MODES = ("eager", "eager_sync_each", "graph")

# Lane keys are built in SQL so that every view (window, one iteration, overview) agrees on lanes.
_API_LANE = "'api|' || CAST(thread_id AS VARCHAR)"
_MARKER_LANE = ("CASE kind WHEN 'nvtx' THEN 'nvtx|' WHEN 'phase' THEN 'phase|' ELSE 'markers|' END "
                "|| CAST(thread_id AS VARCHAR)")
_GPU_LANE = ("CASE WHEN kind = 'graph' THEN 'graph|' ELSE 'gpu|' END || CAST(device_id AS VARCHAR) "
             "|| '|' || CAST(stream_id AS VARCHAR)")
_LANE_ORDER = {"phase": 0, "markers": 1, "api": 2, "nvtx": 3, "gpu": 4, "graph": 5}


@dataclass(frozen=True)
class Lane:
    key: str
    label: str
    side: str  # cpu | gpu


@dataclass
class SpanGroup:
    """Spans drawn in one colour: an API category, a GPU span kind, or a marker kind."""

    label: str
    source: str  # api | gpu | marker
    lane: np.ndarray  # int32 index into TimelineView.lanes
    start_ns: np.ndarray  # int64, relative to TimelineView.origin_ns
    end_ns: np.ndarray
    name_id: np.ndarray  # int32 index into TimelineView.names
    correlation_id: np.ndarray  # int64, 0 where none
    fields: dict[str, np.ndarray] = field(default_factory=dict)  # more hover columns (ints)

    def __len__(self) -> int:
        return len(self.start_ns)


@dataclass
class TimelineView:
    title: str
    lanes: list[Lane]
    groups: list[SpanGroup]
    names: list[str]
    origin_ns: int
    extent_ns: tuple[int, int]  # relative to origin

    def count(self, source: str, label: str | None = None) -> int:
        return sum(len(g) for g in self.groups if g.source == source and (label is None or g.label == label))


@dataclass(frozen=True)
class Selection:
    intervals: list[tuple[int, int]]  # absolute ns, spans overlapping any of them are drawn
    drawn: int
    total: int
    note: str  # '' when the whole pass is drawn


def traced_pass(trace: Trace) -> PassInfo | None:
    """The pass with CUDA activity (node detail first: it has per-node spans), else any pass. In a script
    trace, the detail run's pass: it recorded every call and the graphs' topology (the measuring run's
    figures are in the analysis)."""
    detail = next((p for p in trace.passes if p.name in ("detail", "single")), None)
    return detail or trace.pass_by_detail("node", "graph", "timing")


def lanes_of(trace: Trace, pass_id: int) -> list[Lane]:
    keys = trace.sql(
        f"""SELECT DISTINCT {_API_LANE} AS k FROM api_calls WHERE pass_id = $p
            UNION SELECT DISTINCT {_MARKER_LANE} FROM markers WHERE pass_id = $p
            UNION SELECT DISTINCT {_GPU_LANE} FROM gpu_spans WHERE pass_id = $p""".replace("$p", "?"),
        [pass_id, pass_id, pass_id],
    )["k"]
    parsed = [str(k).split("|") for k in keys]
    cpu = sorted((p for p in parsed if p[0] in ("api", "markers", "nvtx", "phase")), key=lambda p: (int(p[1]), _LANE_ORDER[p[0]]))
    gpu = sorted((p for p in parsed if p[0] in ("gpu", "graph")),
                 key=lambda p: (int(p[1]), int(p[2]), _LANE_ORDER[p[0]]))
    what = {"api": "CUDA API", "markers": "iterations & graph ops", "nvtx": "NVTX", "phase": "phases"}
    lanes = [Lane("|".join(p), f"thread {p[1]} · {what[p[0]]}", "cpu") for p in cpu]
    lanes += [Lane("|".join(p), f"GPU {p[1]} · stream {p[2]}" + (" · graph launches" if p[0] == "graph" else ""), "gpu")
              for p in gpu]
    return lanes


def _overlap(intervals: list[tuple[int, int]]) -> tuple[str, list[int]]:
    clauses = " OR ".join("(end_ns >= ? AND start_ns <= ?)" for _ in intervals)
    params = [v for iv in intervals for v in iv]
    return f"({clauses})", params


def count_spans(trace: Trace, pass_id: int, intervals: list[tuple[int, int]] | None = None) -> int:
    where, params = _overlap(intervals) if intervals else ("TRUE", [])
    return sum(
        int(trace.rows(f"SELECT count(*) FROM {t} WHERE pass_id = ? AND {where}", [pass_id, *params])[0][0])
        for t in ("api_calls", "gpu_spans", "markers")
    )


def iteration_markers(trace: Trace, pass_id: int) -> dict[str, dict[str, np.ndarray]]:
    """mode -> columns iteration, start_ns, end_ns of the pass's iteration markers, by iteration."""
    cols = trace.sql(
        "SELECT mode, iteration, start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration' "
        "ORDER BY mode, iteration", [pass_id])
    out: dict[str, dict[str, np.ndarray]] = {}
    for mode in ITERATION_MODES:
        sel = cols["mode"] == mode
        if sel.any():
            out[mode] = {k: cols[k][sel] for k in ("iteration", "start_ns", "end_ns")}
    return out


def _sorted_starts(trace: Trace, pass_id: int) -> np.ndarray:
    parts = [trace.sql(f"SELECT start_ns FROM {t} WHERE pass_id = ?", [pass_id])["start_ns"]
             for t in ("api_calls", "gpu_spans", "markers")]
    return np.sort(np.concatenate(parts).astype(np.int64))


def select_spans(
    trace: Trace,
    pass_info: PassInfo,
    *,
    iterations: tuple[int, int] | None = None,
    window_ms: tuple[float, float] | None = None,
    max_spans: int = MAX_DRAWN_SPANS,
) -> Selection:
    """Which part of the pass the full timeline draws; a note says what was left out and how to see it."""
    pid = pass_info.pass_id
    total = count_spans(trace, pid)
    pass_ms = (pass_info.end_ns - pass_info.start_ns) / 1e6
    how = (f"Pick other spans with `graphmode view {trace.path.name} --iterations A:B` (iteration numbers of each mode) "
           f"or `--window START_MS:END_MS` (ms from the start of the pass, which lasts {pass_ms:,.1f} ms).")
    its = iteration_markers(trace, pid)
    if window_ms is not None:
        a = pass_info.start_ns + int(window_ms[0] * 1e6)
        b = pass_info.start_ns + int(window_ms[1] * 1e6)
        what = f"the window {window_ms[0]:g}–{window_ms[1]:g} ms"
        intervals = [(a, b)]
    elif iterations is not None:
        lo, hi = iterations
        intervals = []
        for cols in its.values():
            sel = (cols["iteration"] >= lo) & (cols["iteration"] < hi)
            if sel.any():
                intervals.append((int(cols["start_ns"][sel].min()), int(cols["end_ns"][sel].max())))
        if not intervals:
            raise ValueError(f"no iteration in {lo}:{hi}; the pass has iterations "
                             + ", ".join(f"{m} 0:{len(c['iteration'])}" for m, c in its.items()))
        what = f"iterations {lo}:{hi} of each mode"
    else:
        if total <= max_spans:
            return Selection([(pass_info.start_ns, pass_info.end_ns)], total, total, "")
        intervals, what = _auto_intervals(trace, pass_info, its, max_spans)
    drawn = count_spans(trace, pid, intervals)
    if drawn > max_spans:  # a window the user asked for is too dense: keep its first max_spans span starts
        starts = _sorted_starts(trace, pid)
        lo_i = int(np.searchsorted(starts, intervals[0][0]))
        cut = int(starts[min(lo_i + max_spans, len(starts) - 1)])
        intervals = [(a, min(b, cut)) for a, b in intervals if a < cut]
        drawn = count_spans(trace, pid, intervals)
        what += f", cut at {(cut - pass_info.start_ns) / 1e6:,.3f} ms to stay within {max_spans:,} spans"
    if drawn >= total:
        return Selection(intervals, drawn, total, "")
    note = (f"The full-run timeline draws {what}: {drawn:,} of the pass's {total:,} spans "
            f"(a page holds at most {max_spans:,}); the overview above it aggregates the whole run. {how}")
    return Selection(intervals, drawn, total, note)


def _auto_intervals(trace: Trace, pass_info: PassInfo, its: dict[str, dict[str, np.ndarray]],
                    max_spans: int) -> tuple[list[tuple[int, int]], str]:
    starts = _sorted_starts(trace, pass_info.pass_id)
    if its:
        # Spans per iteration number, all modes together; keep the first n iterations that fit.
        n_max = min(len(c["iteration"]) for c in its.values())
        per_iter = np.zeros(n_max, np.int64)
        for cols in its.values():
            s, e = cols["start_ns"][:n_max], cols["end_ns"][:n_max]
            per_iter += np.searchsorted(starts, e, side="right") - np.searchsorted(starts, s, side="left")
        n = max(1, int(np.searchsorted(np.cumsum(per_iter), max_spans * 0.9, side="right")))
        intervals = [(int(c["start_ns"][0]), int(c["end_ns"][n - 1])) for c in its.values()]
        return intervals, f"iterations 0:{n} of each mode"
    cut = int(starts[min(max_spans, len(starts) - 1)])
    return [(pass_info.start_ns, cut)], f"the first {(cut - pass_info.start_ns) / 1e6:,.3f} ms"


def load_view(trace: Trace, pass_id: int, lanes: list[Lane], intervals: list[tuple[int, int]], origin_ns: int,
              title: str) -> TimelineView:
    """The spans of the pass overlapping `intervals`, grouped by colour, times relative to origin_ns."""
    lane_index = {ln.key: i for i, ln in enumerate(lanes)}
    where, params = _overlap(intervals)
    raw: list[tuple[str, str, dict[str, np.ndarray]]] = []
    api = trace.sql(
        f"SELECT {_API_LANE} AS lane, category AS label, name, start_ns, end_ns, correlation_id, api, return_code, source "
        f"FROM api_calls WHERE pass_id = ? AND {where} ORDER BY start_ns", [pass_id, *params])
    raw.append(("api", "category", api))
    # A span's source line: a graph node's is the line that created it during capture; eager work's is
    # its launch call's (same correlation id), recorded with --launch-sources. '' where neither is known.
    gpu = trace.sql(
        f"""SELECT {_GPU_LANE} AS lane, g.kind AS label, g.name, g.start_ns, g.end_ns, g.correlation_id, g.stream_id, g.graph_id,
                   g.graph_node_id, g.grid_x, g.grid_y, g.grid_z, g.block_x, g.block_y, g.block_z, g.bytes,
                   coalesce(nullif(n.source, ''), c.source, '') AS source
            FROM (SELECT * FROM gpu_spans WHERE pass_id = ? AND {where}) g
            LEFT JOIN (SELECT node_id, max(source) AS source FROM graph_nodes
                       WHERE pass_id = ? AND source <> '' GROUP BY node_id) n
                   ON g.graph_node_id <> 0 AND n.node_id = g.graph_node_id
            LEFT JOIN (SELECT correlation_id, max(source) AS source FROM api_calls
                       WHERE pass_id = ? AND source <> '' GROUP BY correlation_id) c
                   ON g.graph_node_id = 0 AND c.correlation_id = g.correlation_id
            ORDER BY g.start_ns""", [pass_id, *params, pass_id, pass_id])
    raw.append(("gpu", "kind", gpu))
    markers = trace.sql(
        f"SELECT {_MARKER_LANE} AS lane, kind AS label, "
        f"CASE WHEN kind = 'iteration' THEN mode || ' iteration ' || CAST(iteration AS VARCHAR) "
        f"     WHEN kind = 'op' THEN name || ' (graph ' || CAST(graph_id AS VARCHAR) || ')' ELSE name END AS name, "
        f"start_ns, end_ns, graph_id FROM markers WHERE pass_id = ? AND {where} ORDER BY start_ns",
        [pass_id, *params])
    raw.append(("marker", "kind", markers))

    all_names = np.concatenate([cols["name"] for _, _, cols in raw]).astype(object)
    names, inverse = np.unique(all_names, return_inverse=True) if len(all_names) else (np.array([], object), np.array([], np.int64))
    groups: list[SpanGroup] = []
    offset = 0
    for source, _, cols in raw:
        n = len(cols["start_ns"])
        name_id = inverse[offset:offset + n].astype(np.int32)
        offset += n
        lane = np.array([lane_index[str(k)] for k in np.unique(cols["lane"])], np.int32)
        lane_of = dict(zip(np.unique(cols["lane"]), lane))
        lane_col = np.vectorize(lane_of.__getitem__, otypes=[np.int32])(cols["lane"]) if n else np.zeros(0, np.int32)
        extra = [c for c in cols if c not in ("lane", "label", "name", "start_ns", "end_ns", "correlation_id")]
        for label in np.unique(cols["label"]):
            sel = cols["label"] == label
            groups.append(SpanGroup(
                label=str(label), source=source, lane=lane_col[sel],
                start_ns=cols["start_ns"][sel].astype(np.int64) - origin_ns,
                end_ns=cols["end_ns"][sel].astype(np.int64) - origin_ns,
                name_id=name_id[sel],
                correlation_id=cols.get("correlation_id", np.zeros(n, np.int64))[sel].astype(np.int64),
                fields={c: cols[c][sel] for c in extra},
            ))
    lo = min(a for a, _ in intervals) - origin_ns
    hi = max(b for _, b in intervals) - origin_ns
    return TimelineView(title, lanes, groups, [str(s) for s in names], origin_ns, (lo, hi))


def iteration_views(trace: Trace, pass_id: int, lanes: list[Lane], iteration: int | None = None) -> list[TimelineView]:
    """One view per mode of the same iteration number (the middle one by default), each starting at 0."""
    views = []
    for mode, cols in iteration_markers(trace, pass_id).items():
        i = len(cols["iteration"]) // 2 if iteration is None else min(iteration, len(cols["iteration"]) - 1)
        s, e = int(cols["start_ns"][i]), int(cols["end_ns"][i])
        it = int(cols["iteration"][i])
        views.append(load_view(trace, pass_id, lanes, [(s, e)], s,
                               f"{mode} iteration {it}: {(e - s) / 1e3:,.1f} µs"))
    return views


def overview(trace: Trace, pass_info: PassInfo, lanes: list[Lane], bins: int = 1500) -> tuple[np.ndarray, float]:
    """Busy fraction per lane and time bin over the whole pass (each span counted in its start bin)."""
    t0, t1 = pass_info.start_ns, max(pass_info.end_ns, pass_info.start_ns + 1)
    width = (t1 - t0) / bins
    lane_index = {ln.key: i for i, ln in enumerate(lanes)}
    busy = np.zeros((len(lanes), bins), np.float64)
    for table, lane_sql in (("api_calls", _API_LANE), ("gpu_spans", _GPU_LANE), ("markers", _MARKER_LANE)):
        extra = " AND kind NOT IN ('phase')" if table == "markers" else ""
        cols = trace.sql(
            f"SELECT {lane_sql} AS lane, least(greatest(CAST(floor((start_ns - ?) / ?) AS BIGINT), 0), ?) AS bin, "
            f"sum(end_ns - start_ns) AS busy FROM {table} WHERE pass_id = ?{extra} GROUP BY ALL",
            [t0, width, bins - 1, pass_info.pass_id])
        for key in np.unique(cols["lane"]):
            sel = cols["lane"] == key
            np.add.at(busy[lane_index[str(key)]], cols["bin"][sel].astype(np.int64), cols["busy"][sel].astype(np.float64))
    return np.minimum(busy / width, 1.0), width
