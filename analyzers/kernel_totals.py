"""Per kernel name, GPU time over the whole traced pass: launched eagerly vs run as a graph node.

Where `analyzers.kernels` compares per-launch durations inside the steady iterations, this sums every
kernel span of the pass, so the table answers "where did the GPU time go" for the whole run. A kernel
span is eager when it carries no graph id (`gpu_spans.graph_id = 0`), a graph node otherwise. A
graph-detail pass records a replay as one 'graph' span (CUPTI does not time its kernels one by one),
so its graph side is unknown (`graph_timed` False) rather than zero.

Medians are DuckDB's `quantile_cont` (linear interpolation), the definition `Stat.of` uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmode.tracer.store import Trace

MAX_KERNEL_TOTALS = 1000  # names kept, by total GPU time


@dataclass(frozen=True)
class KernelTotal:
    name: str  # as recorded (mangled)
    eager_count: int
    eager_total_ns: float
    eager_median_ns: float | None
    graph_count: int
    graph_total_ns: float | None  # None: graph-detail pass, graph kernels not timed one by one
    graph_median_ns: float | None


@dataclass(frozen=True)
class KernelTotals:
    pass_id: int
    graph_timed: bool  # node-detail pass: graph nodes have their own spans
    kernels: tuple[KernelTotal, ...]  # most GPU time (eager + graph) first
    distinct: int  # kernel names in the pass; kernels may list fewer (MAX_KERNEL_TOTALS)


def kernel_totals(trace: Trace, pass_id: int, detail: str) -> KernelTotals:
    """Totals for every kernel name of the pass (`detail`: the pass's 'graph' or 'node')."""
    rows = trace.rows(
        """SELECT name,
                  count(*) FILTER (WHERE graph_id = 0), coalesce(sum(end_ns - start_ns) FILTER (WHERE graph_id = 0), 0),
                  quantile_cont(end_ns - start_ns, 0.5) FILTER (WHERE graph_id = 0),
                  count(*) FILTER (WHERE graph_id <> 0), coalesce(sum(end_ns - start_ns) FILTER (WHERE graph_id <> 0), 0),
                  quantile_cont(end_ns - start_ns, 0.5) FILTER (WHERE graph_id <> 0)
           FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' GROUP BY name
           ORDER BY sum(end_ns - start_ns) DESC, name""", [pass_id])
    timed = detail == "node"
    kernels = tuple(
        KernelTotal(name=str(name), eager_count=int(ne), eager_total_ns=float(te),
                    eager_median_ns=float(me) if me is not None else None, graph_count=int(ng),
                    graph_total_ns=float(tg) if timed else None, graph_median_ns=float(mg) if mg is not None else None)
        for name, ne, te, me, ng, tg, mg in rows[:MAX_KERNEL_TOTALS])
    return KernelTotals(pass_id, timed, kernels, len(rows))
