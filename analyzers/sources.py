"""Where the GPU work comes from: GPU work grouped by the user's Python line that launched it.

Two attributions, both recorded by the tracer's CUPTI API callback (docs/trace-format.md):

- a graph node carries `graph_nodes.source`, the line that created it during stream capture (or the
  explicit node call); its GPU time is that of the node-detail spans with its `graph_node_id`
  (graph-detail passes record a whole graph launch as one span, so their nodes have counts but no time);
- an eager kernel, copy or memset joins its launch call by (pass_id, correlation_id): CUPTI gives the
  activity record the correlation id of the API call that caused it, and `api_calls.source` holds the
  line when the run was recorded with `--launch-sources`.

Everything is aggregated in SQL; Python sees one row per (line, graph) and per (kernel name, line).
"""

from __future__ import annotations

from graphmode.analyzers.results import SourceLine
from graphmode.tracer.store import Trace

MAX_SOURCE_LINES = 500  # rows kept, by GPU time: a page of lines, not a dump
MAX_KERNELS_PER_LINE = 20  # one line (`model(x)`) can launch hundreds of kernels; the report lists the top ones
_GPU_NODE_TYPES = "('kernel', 'memcpy', 'memset')"

# One row per attributed unit of GPU work: (kind, graph_id, source, name, unit, dur); unit is the node id
# (graph nodes) or the launch's correlation id (eager), dur is NULL for a node with no measured span.
_ATTRIBUTED = f"""
WITH node_spans AS (
    SELECT graph_node_id, end_ns - start_ns AS dur FROM gpu_spans WHERE pass_id = $1 AND graph_node_id <> 0
), launch_sources AS (
    -- one source per call: a call appears once per correlation id, max() only guards against duplicates
    SELECT correlation_id, max(source) AS source FROM api_calls
    WHERE pass_id = $1 AND source <> '' GROUP BY correlation_id
), attributed AS (
    SELECT 'graph node' AS kind, n.graph_id, n.source, coalesce(nullif(n.name, ''), n.node_type) AS name,
           n.node_id AS unit, s.dur
    FROM graph_nodes n LEFT JOIN node_spans s ON s.graph_node_id = n.node_id
    WHERE n.pass_id = $1 AND n.source <> '' AND n.node_type IN {_GPU_NODE_TYPES}
    UNION ALL
    SELECT 'eager launch', 0, c.source, g.name, g.correlation_id, g.end_ns - g.start_ns
    FROM gpu_spans g JOIN launch_sources c USING (correlation_id)
    WHERE g.pass_id = $1 AND g.graph_node_id = 0 AND g.graph_id = 0 AND g.kind IN {_GPU_NODE_TYPES}
)
"""


def source_lines(trace: Trace, pass_id: int) -> tuple[tuple[SourceLine, ...], bool]:
    """The pass's GPU work per (source line, graph), most GPU time first; (lines, truncated)."""
    rows = trace.rows(
        _ATTRIBUTED + f"""
        , per_name AS (
            SELECT kind, graph_id, source, name, sum(dur) AS total FROM attributed GROUP BY ALL
        ), names AS (
            SELECT kind, graph_id, source, list(name ORDER BY total DESC NULLS LAST, name)[1:{MAX_KERNELS_PER_LINE}] AS kernels,
                   count(*) AS distinct_kernels
            FROM per_name GROUP BY ALL
        ), per_line AS (
            SELECT kind, graph_id, source, count(DISTINCT unit) AS count, count(dur) AS spans,
                   quantile_cont(dur, 0.5) AS median_ns, sum(dur) AS total_ns
            FROM attributed GROUP BY ALL
        )
        SELECT l.source, l.kind, l.graph_id, n.kernels, n.distinct_kernels, l.count, l.spans, l.median_ns, l.total_ns
        FROM per_line l JOIN names n USING (kind, graph_id, source)
        ORDER BY l.total_ns DESC NULLS LAST, l.count DESC, l.kind, l.graph_id, l.source
        """,
        [pass_id],
    )
    lines = tuple(
        SourceLine(source=str(src), kind=str(kind), graph_id=int(gid), kernels=tuple(str(k) for k in kernels),
                   distinct_kernels=int(nk), count=int(count), gpu_spans=int(spans),
                   gpu_median_ns=float(med) if med is not None else None,
                   gpu_total_ns=float(total) if total is not None else None)
        for src, kind, gid, kernels, nk, count, spans, med, total in rows[:MAX_SOURCE_LINES]
    )
    return lines, len(rows) > MAX_SOURCE_LINES


def source_lines_truncated(trace: Trace, pass_id: int) -> bool:
    """Whether source_lines leaves rows out (more (line, graph) rows than MAX_SOURCE_LINES), without building them:
    for an analysis that shows no source lines (analyzers.ranks)."""
    rows = trace.rows(_ATTRIBUTED + "SELECT count(*) FROM (SELECT DISTINCT kind, graph_id, source FROM attributed)", [pass_id])
    return int(rows[0][0]) > MAX_SOURCE_LINES


def kernel_sources(trace: Trace, pass_id: int) -> dict[str, tuple[str, ...]]:
    """Kernel (or copy) name -> the source lines that launched it (graph nodes and eager launches), sorted."""
    rows = trace.rows(_ATTRIBUTED + "SELECT name, list(DISTINCT source ORDER BY source) FROM attributed GROUP BY name",
                      [pass_id])
    return {str(name): tuple(str(s) for s in srcs) for name, srcs in rows}
