"""Per kernel: the same kernel's GPU duration launched eagerly vs as a node of a replayed graph.

Kernels are matched by (mangled) name. Only node-detail passes record graph kernels one by one;
graph-detail passes record a graph launch as one `graph` span (CUPTI GRAPH_TRACE excludes
node-level kernel records), so they have no graph side to compare.
"""

from __future__ import annotations

from analyzers.results import KernelComparison, Stat
from tracer.store import Trace

MAX_KERNELS = 500  # names kept, by total GPU time: a page of comparisons, not a dump

_KERNEL_SQL = """
WITH iters AS (
  SELECT mode, start_ns AS it_start, end_ns AS it_end FROM markers
  WHERE pass_id = $1 AND kind = 'iteration' AND mode IN ('eager', 'eager_sync_each', 'graph')
),
placed AS (
  SELECT i.mode, s.name, s.graph_id <> 0 AS in_graph, (s.end_ns - s.start_ns)::DOUBLE AS dur
  FROM gpu_spans s ASOF JOIN iters i ON s.start_ns >= i.it_start
  WHERE s.pass_id = $1 AND s.kind = 'kernel' AND s.start_ns < i.it_end
)
SELECT mode, name, in_graph, count(*) AS n, quantile_cont(dur, [0.1, 0.5, 0.9]) AS q,
       avg(dur) AS mean, min(dur) AS lo, max(dur) AS hi, sum(dur) AS total
FROM placed GROUP BY mode, name, in_graph
"""


def kernel_comparisons(trace: Trace, traced_pass_id: int, eager_mode: str) -> tuple[list[KernelComparison], bool]:
    """Comparisons for every kernel name seen in `eager_mode` or in graph replays; (list, truncated)."""
    stats: dict[tuple[str, bool], Stat] = {}
    totals: dict[str, float] = {}
    for mode, name, in_graph, n, q, mean, lo, hi, total in trace.rows(_KERNEL_SQL, [traced_pass_id]):
        # one row per (mode, kernel name): aggregated in SQL
        if (mode == eager_mode and not in_graph) or (mode == "graph" and in_graph):
            stats[(name, bool(in_graph))] = Stat(int(n), float(q[1]), float(q[0]), float(q[2]), float(mean), float(lo), float(hi))
            totals[name] = totals.get(name, 0.0) + float(total)
    names = sorted(totals, key=lambda k: (-totals[k], k))
    truncated = len(names) > MAX_KERNELS
    out: list[KernelComparison] = []
    for name in names[:MAX_KERNELS]:
        eager, graph = stats.get((name, False)), stats.get((name, True))
        out.append(
            KernelComparison(
                name=name, eager_mode=eager_mode,
                eager_count=eager.n if eager else 0, eager=eager,
                graph_count=graph.n if graph else 0, graph=graph,
                difference_ns=graph.median - eager.median if eager and graph else None,
            )
        )
    return out, truncated
