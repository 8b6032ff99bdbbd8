"""What the HTML timelines draw: lanes, and the spans of a part of a run as sorted columns.

Reads the trace with SQL and returns numpy columns; draws nothing and computes no metric (analyzers.page gathers
it for the page's renderer, reports.html, which does not read the trace). The page's
renderer (assets/timeline.js) draws at the level of detail the zoom needs, so a page can carry every
span of a run of a million kernels; `select_spans` still bounds what goes into one page (`max_spans`)
and says what it left out and how to see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from graphmode.analyzers.notes import Note, NoteValue, note
from graphmode.analyzers.run import Run
from graphmode.analyzers.script_analysis import find_iterations
from graphmode.tracer.store import PassInfo, Trace

MAX_DRAWN_SPANS = 3_000_000
ITERATION_MODES = ("eager", "eager_sync_each", "graph")
# API categories and GPU work that are CUDA activity: the whole-run view opens cropped to them.
ACTIVITY_CATEGORIES = ("kernel_launch", "graph_launch", "capture", "instantiate", "upload", "update", "graph_build",
                       "memcpy", "memset")

# Lane keys are built in SQL so that every view (window, one iteration) agrees on lanes.
_API_LANE = "'api|' || CAST(thread_id AS VARCHAR)"
_MARKER_LANE = ("CASE kind WHEN 'nvtx' THEN 'nvtx|' WHEN 'phase' THEN 'phase|' ELSE 'markers|' END "
                "|| CAST(thread_id AS VARCHAR)")
_GPU_LANE = ("CASE WHEN kind = 'graph' THEN 'graph|' ELSE 'gpu|' END || CAST(device_id AS VARCHAR) "
             "|| '|' || CAST(stream_id AS VARCHAR)")
_LANE_ORDER = {"phase": 0, "markers": 1, "api": 2, "nvtx": 3, "gpu": 4, "graph": 5}
# Integer columns the details box shows (0: not applicable to the span).
FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "bytes", "graph_id", "node", "return_code")
TEXT_FIELDS = ("source", "api")


@dataclass(frozen=True)
class Lane:
    key: str
    label: str
    side: str  # cpu | gpu


@dataclass(frozen=True)
class SpanGroup:
    """Spans drawn in one colour: an API category, a GPU span kind, or a marker kind."""

    source: str  # api | gpu | marker
    label: str


@dataclass
class TimelineView:
    """Spans sorted by (lane, start); times in ns relative to origin_ns."""

    lanes: list[Lane]
    groups: list[SpanGroup]
    names: list[str]
    origin_ns: int
    extent_ns: tuple[int, int]  # relative to origin: what the view opens on
    lane: np.ndarray  # int32 index into lanes
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray
    group: np.ndarray  # int32 index into groups
    name_id: np.ndarray  # int32 index into names
    correlation_id: np.ndarray  # int64, 0 where none
    outside: np.ndarray  # bool: context drawn faded (before or after the iteration the view shows)
    fields: dict[str, np.ndarray] = field(default_factory=dict)  # FIELDS, int64
    text_codes: dict[str, np.ndarray] = field(default_factory=dict)  # TEXT_FIELDS: int32 code in the group's table
    text_tables: dict[str, list[list[str]]] = field(default_factory=dict)  # TEXT_FIELDS: per group, code -> string
    # what the view shows, worded by the report (reports.notes: iteration_view, pass_view); None where the report
    # titles a view it built itself
    title: Note | None = None

    def __len__(self) -> int:
        return len(self.start_ns)

    def count(self, source: str, label: str | None = None) -> int:
        ids = [k for k, g in enumerate(self.groups) if g.source == source and (label is None or g.label == label)]
        return int(np.isin(self.group, ids).sum())


@dataclass(frozen=True)
class LeftOut:
    """A stretch of the pass between the drawn intervals, and the spans in it that the page does not hold."""

    start_ns: int  # absolute
    end_ns: int
    spans: int


@dataclass(frozen=True)
class Selection:
    intervals: list[tuple[int, int]]  # absolute ns, spans overlapping any of them are drawn
    drawn: int
    total: int
    note: Note | None  # timeline_selection: what was drawn and how to pick other spans; None when the whole pass is drawn
    left_out: tuple[LeftOut, ...] = ()  # where the spans not drawn lie (spans overlapping no interval), in time order


def traced_pass(trace: Trace) -> PassInfo | None:
    """The pass with CUDA activity (node detail first: it has per-node spans), else any pass. In a script
    trace, the detail run's pass: it recorded every call and the graphs' topology (the measuring run's
    figures are in the analysis)."""
    detail = next((p for p in trace.passes if p.name == "detail"), None) or next((p for p in trace.passes if p.name == "single"), None)
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


def activity_extent(trace: Trace, pass_info: PassInfo) -> tuple[int, int] | None:
    """First to last CUDA activity of the pass (GPU work, launches, graph building; absolute ns), or None."""
    cats = ", ".join(f"'{c}'" for c in ACTIVITY_CATEGORIES)
    lo, hi = trace.rows(
        f"""SELECT min(s), max(e) FROM (
              SELECT min(start_ns) AS s, max(end_ns) AS e FROM gpu_spans WHERE pass_id = ?
              UNION ALL SELECT min(start_ns), max(end_ns) FROM api_calls WHERE pass_id = ? AND category IN ({cats}))""",
        [pass_info.pass_id, pass_info.pass_id])[0]
    return None if lo is None else (int(lo), int(hi))


def iteration_markers(run: Run, pass_id: int) -> dict[str, dict[str, np.ndarray]]:
    """mode -> columns iteration, start_ns, end_ns of the pass's iterations, by iteration: the runner's
    markers, or in a script trace the steady iterations of the headline's graph (analyzers.iterations, from the
    iterations the Run already derived)."""
    trace = run.trace
    cols = trace.sql(
        "SELECT mode, iteration, start_ns, end_ns FROM markers WHERE pass_id = ? AND kind = 'iteration' AND name <> 'inferred' "
        "ORDER BY mode, iteration", [pass_id])
    out: dict[str, dict[str, np.ndarray]] = {}
    if not cols["mode"].size:
        it = find_iterations(run, pass_id)
        steady = it.select(np.isin(it.role, ("steady", "warmup")))
        if steady.size:
            # the graph with the most replays, and its eager iterations
            replays = steady.graph_id[steady.mode == "graph"]
            graph = int(np.argmax(np.bincount(replays))) if replays.size else int(steady.graph_id[0])
            mine = steady.select(steady.graph_id == graph)
            for mode in ITERATION_MODES:
                sel = mine.mode == mode
                if sel.any():
                    # an iteration's view holds its own GPU work, which a GPU-bound loop runs after later launches
                    gpu = mine.gpu_start_ns[sel] >= 0
                    start = np.where(gpu, np.minimum(mine.start_ns[sel], mine.gpu_start_ns[sel]), mine.start_ns[sel])
                    end = np.where(gpu, np.maximum(mine.end_ns[sel], mine.gpu_end_ns[sel]), mine.end_ns[sel])
                    out[mode] = {"iteration": np.arange(int(sel.sum())), "start_ns": start, "end_ns": end}
        return out
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
    its: dict[str, dict[str, np.ndarray]],
    *,
    iterations: tuple[int, int] | None = None,
    window_ms: tuple[float, float] | None = None,
    max_spans: int = MAX_DRAWN_SPANS,
) -> Selection:
    """Which part of the pass the full timeline draws; a note says what was left out and how to see it."""
    pid = pass_info.pass_id
    total = count_spans(trace, pid)
    what: dict[str, NoteValue]  # what the whole-run view draws: the note's `what` and the values it needs
    if window_ms is not None:
        a = pass_info.start_ns + int(window_ms[0] * 1e6)
        b = pass_info.start_ns + int(window_ms[1] * 1e6)
        what = {"what": "window", "start_ms": float(window_ms[0]), "end_ms": float(window_ms[1])}
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
        what = {"what": "iterations", "first": lo, "last": hi}
    else:
        if total <= max_spans:
            return Selection([(pass_info.start_ns, pass_info.end_ns)], total, total, None)
        intervals, what = _auto_intervals(trace, pass_info, its, max_spans)
    drawn = count_spans(trace, pid, intervals)
    cut_ns: int | None = None  # where a too dense selection was cut, ns from the start of the pass
    if drawn > max_spans:  # a window the user asked for is too dense: keep its first max_spans span starts
        starts = _sorted_starts(trace, pid)
        lo_i = int(np.searchsorted(starts, intervals[0][0]))
        cut = int(starts[min(lo_i + max_spans, len(starts) - 1)])
        intervals = [(a, min(b, cut)) for a, b in intervals if a < cut]
        drawn = count_spans(trace, pid, intervals)
        cut_ns = cut - pass_info.start_ns
    if drawn >= total:
        return Selection(intervals, drawn, total, None)
    said = note("timeline_selection", **what, cut_ns=cut_ns, drawn=drawn, total=total, max_spans=max_spans,
                trace=trace.path.name, pass_ns=pass_info.end_ns - pass_info.start_ns)
    return Selection(intervals, drawn, total, said, left_out(trace, pass_info, intervals))


def left_out(trace: Trace, pass_info: PassInfo, intervals: list[tuple[int, int]]) -> tuple[LeftOut, ...]:
    """The stretches of the pass before, between and after the intervals that hold spans overlapping none of
    them (the spans a page drawing `intervals` leaves out), with how many spans each holds."""
    merged: list[list[int]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    # a span is drawn when it overlaps an interval (end >= a and start <= b): one in a gap lies strictly inside it
    bounds = [(None, merged[0][0])] + [(merged[k][1], merged[k + 1][0]) for k in range(len(merged) - 1)] + [(merged[-1][1], None)]
    out = []
    for lo, hi in bounds:
        where = " AND ".join((["start_ns > ?"] if lo is not None else []) + (["end_ns < ?"] if hi is not None else []))
        params = [v for v in (lo, hi) if v is not None]
        n = sum(int(trace.rows(f"SELECT count(*) FROM {t} WHERE pass_id = ? AND {where}", [pass_info.pass_id, *params])[0][0])
                for t in ("api_calls", "gpu_spans", "markers"))
        if n:
            out.append(LeftOut(pass_info.start_ns if lo is None else lo, pass_info.end_ns if hi is None else hi, n))
    return tuple(out)


def _auto_intervals(trace: Trace, pass_info: PassInfo, its: dict[str, dict[str, np.ndarray]],
                    max_spans: int) -> tuple[list[tuple[int, int]], dict[str, NoteValue]]:
    """The intervals the whole-run view draws when the pass holds more than max_spans, and what they are (the
    first iterations of each mode that fit, else the start of the pass)."""
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
        return intervals, {"what": "iterations", "first": 0, "last": n}
    cut = int(starts[min(max_spans, len(starts) - 1)])
    return [(pass_info.start_ns, cut)], {"what": "start", "first_ns": cut - pass_info.start_ns}


def _spans_sql(where: str) -> str:
    """The three span tables as one relation with the same columns (parameters: pass_id, overlap, pass_id x2
    for the GPU joins, pass_id, overlap, focus mode, focus iteration for the markers)."""
    zero = "0 AS grid_x, 0 AS grid_y, 0 AS grid_z, 0 AS block_x, 0 AS block_y, 0 AS block_z, 0 AS bytes"
    return f"""
        SELECT {_API_LANE} AS lane, 'api' AS src, category AS label, name, start_ns, end_ns, correlation_id,
               {zero}, 0 AS graph_id, 0 AS node, coalesce(return_code, 0) AS return_code,
               coalesce(source, '') AS source, coalesce(api, '') AS api
        FROM api_calls WHERE pass_id = ? AND {where}
        UNION ALL
        -- A span's source line: a graph node's is the line that created it during capture; eager work's is
        -- its launch call's (same correlation id), recorded with --launch-sources. '' where neither is known.
        SELECT {_GPU_LANE}, 'gpu', g.kind, g.name, g.start_ns, g.end_ns, g.correlation_id,
               g.grid_x, g.grid_y, g.grid_z, g.block_x, g.block_y, g.block_z, coalesce(g.bytes, 0),
               g.graph_id, coalesce(n.node_index + 1, 0), 0, coalesce(nullif(n.source, ''), c.source, ''), ''
        FROM (SELECT * FROM gpu_spans WHERE pass_id = ? AND {where}) g
        LEFT JOIN (SELECT node_id, max(source) AS source, min(node_index) AS node_index FROM graph_nodes
                   WHERE pass_id = ? GROUP BY node_id) n
               ON g.graph_node_id <> 0 AND n.node_id = g.graph_node_id
        LEFT JOIN (SELECT correlation_id, max(source) AS source FROM api_calls
                   WHERE pass_id = ? AND source <> '' GROUP BY correlation_id) c
               ON g.graph_node_id = 0 AND c.correlation_id = g.correlation_id
        UNION ALL
        SELECT {_MARKER_LANE}, 'marker', kind,
               CASE WHEN kind = 'iteration' THEN mode || ' iteration ' || CAST(iteration AS VARCHAR)
                    WHEN kind = 'op' THEN name || ' (graph ' || CAST(graph_id AS VARCHAR) || ')' ELSE name END,
               start_ns, end_ns, 0, {zero}, graph_id, 0, 0, '', ''
        FROM markers WHERE pass_id = ? AND {where}
          AND (kind <> 'iteration' OR ? IS NULL OR (mode = ? AND iteration = ?))"""


def load_view(trace: Trace, pass_id: int, lanes: list[Lane], intervals: list[tuple[int, int]], origin_ns: int,
              title: Note, focus: tuple[int, int, str, int] | None = None) -> TimelineView:
    """The spans of the pass overlapping `intervals`, sorted by (lane, start), times relative to origin_ns.

    `focus` (start, end, mode, iteration): the view shows that one iteration; other iterations'
    markers are left out, and spans that start before or after it are marked `outside` (faded).
    Names, groups and text fields are coded in SQL: a string crosses into Python once per distinct value.
    """
    where, params = _overlap(intervals) if intervals else ("FALSE", [])
    mode, iteration = (focus[2], focus[3]) if focus else (None, None)
    args = [pass_id, *params, pass_id, *params, pass_id, pass_id, pass_id, *params, mode, mode, iteration]
    # Dictionaries: every distinct name, group and (group, text) value, numbered in sorted order.
    dictionaries = f"""s AS ({_spans_sql(where)}),
        nm AS (SELECT name, CAST(row_number() OVER (ORDER BY name) - 1 AS INTEGER) AS code FROM (SELECT DISTINCT name FROM s)),
        gp AS (SELECT src, label, CAST(row_number() OVER (ORDER BY src, label) - 1 AS INTEGER) AS code
               FROM (SELECT DISTINCT src, label FROM s)),
        sc AS (SELECT src, label, source, CAST(row_number() OVER (PARTITION BY src, label ORDER BY source) - 1 AS INTEGER)
                      AS code FROM (SELECT DISTINCT src, label, source FROM s)),
        ap AS (SELECT src, label, api, CAST(row_number() OVER (PARTITION BY src, label ORDER BY api) - 1 AS INTEGER)
                      AS code FROM (SELECT DISTINCT src, label, api FROM s))"""
    ints = ", ".join(f"CAST(s.{f} AS BIGINT) AS {f}" for f in FIELDS)
    cols = trace.sql(
        f"""WITH {dictionaries}
            SELECT CAST(list_position(?, s.lane) - 1 AS INTEGER) AS lane, s.start_ns - ? AS start_ns,
                   greatest(s.end_ns, s.start_ns) - ? AS end_ns, gp.code AS group_id, nm.code AS name_id,
                   coalesce(s.correlation_id, 0) AS correlation_id, {ints}, sc.code AS source_code, ap.code AS api_code
            FROM s JOIN nm USING (name) JOIN gp USING (src, label) JOIN sc USING (src, label, source)
                   JOIN ap USING (src, label, api)
            ORDER BY lane, s.start_ns, s.end_ns DESC""",
        [*args, [ln.key for ln in lanes], origin_ns, origin_ns])
    words = trace.rows(
        f"""WITH {dictionaries}
            SELECT 'name', 0, code, name FROM nm
            UNION ALL SELECT 'group', 0, code, src || '|' || label FROM gp
            UNION ALL SELECT 'source', gp.code, sc.code, source FROM sc JOIN gp USING (src, label)
            UNION ALL SELECT 'api', gp.code, ap.code, api FROM ap JOIN gp USING (src, label)""", args)
    n = len(cols["start_ns"])
    table: dict[str, dict[tuple[int, int], str]] = {"name": {}, "group": {}, "source": {}, "api": {}}
    for what, g, code, value in words:
        table[what][(int(g), int(code))] = str(value)
    names = [table["name"][(0, k)] for k in range(len(table["name"]))]
    groups = [SpanGroup(*table["group"][(0, k)].split("|", 1)) for k in range(len(table["group"]))]
    tables: dict[str, list[list[str]]] = {f: [[] for _ in groups] for f in TEXT_FIELDS}
    for f in TEXT_FIELDS:
        for (g, code), value in sorted(table[f].items()):
            tables[f][g].append(value)  # codes run 0, 1, ... within each group
    codes = {f: cols[f"{f}_code"].astype(np.int32) for f in TEXT_FIELDS}
    name_id, group = cols["name_id"].astype(np.int32), cols["group_id"].astype(np.int32)
    start = cols["start_ns"].astype(np.int64)
    if focus is not None:
        outside = (start < focus[0] - origin_ns) | (start > focus[1] - origin_ns)
        lo, hi = focus[0] - origin_ns, focus[1] - origin_ns
    else:
        outside = np.zeros(n, bool)
        lo = min(a for a, _ in intervals) - origin_ns if intervals else 0
        hi = max(b for _, b in intervals) - origin_ns if intervals else 1
    return TimelineView(
        title=title, lanes=lanes, groups=groups, names=names, origin_ns=origin_ns, extent_ns=(lo, hi),
        lane=cols["lane"].astype(np.int32), start_ns=start, end_ns=cols["end_ns"].astype(np.int64), group=group,
        name_id=name_id, correlation_id=cols["correlation_id"].astype(np.int64), outside=outside,
        fields={f: np.asarray(cols[f]).astype(np.int64) for f in FIELDS}, text_codes=codes, text_tables=tables)


def iteration_views(trace: Trace, pass_id: int, lanes: list[Lane], its: dict[str, dict[str, np.ndarray]],
                    iteration: int | None = None) -> list[TimelineView]:
    """One view per mode of the same iteration number (the middle one by default), each starting at 0; `its`: the
    pass's iteration_markers."""
    views = []
    for mode, cols in its.items():
        i = len(cols["iteration"]) // 2 if iteration is None else min(iteration, len(cols["iteration"]) - 1)
        s, e = int(cols["start_ns"][i]), int(cols["end_ns"][i])
        it = int(cols["iteration"][i])
        views.append(load_view(trace, pass_id, lanes, [(s, e)], s, note("iteration_view", mode=mode, iteration=it,
                                                                         duration_ns=e - s), focus=(s, e, mode, it)))
    return views


def drop_empty_lanes(views: list[TimelineView]) -> list[TimelineView]:
    """The views (sharing one list of lanes) without the lanes that hold no span in any of them: a stream or
    thread idle in every mode's iteration only pushes the lanes that tell apart."""
    if not views:
        return views
    used = np.zeros(len(views[0].lanes), bool)
    for v in views:
        used[np.unique(v.lane)] = True
    if used.all():
        return views
    renumber = np.cumsum(used) - 1
    lanes = [ln for ln, u in zip(views[0].lanes, used) if u]
    return [replace(v, lanes=lanes, lane=renumber[v.lane].astype(np.int32)) for v in views]
