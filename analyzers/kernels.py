"""Per kernel: the same kernel's GPU duration launched eagerly vs as a node of a replayed graph.

Kernels are matched by (mangled) name. Only node-detail passes record graph kernels one by one;
graph-detail passes record a graph launch as one `graph` span (CUPTI GRAPH_TRACE excludes
node-level kernel records), so they have no graph side to compare.

The spans come already placed in iterations (`iterations.place_gpu_spans`, shared with the
per-iteration GPU metrics); the statistics are computed per (name, graph/eager) group on one sort of
the durations, interpolated as `Stat.of` (numpy 'linear', the same definition as DuckDB's quantile_cont;
DuckDB's own arithmetic can differ from it in the last bit).
"""

from __future__ import annotations

import numpy as np

from graphmode.analyzers.iterations import PlacedGpuSpans, place_gpu_spans
from graphmode.analyzers.results import KernelComparison, Stat
from graphmode.tracer.store import Trace

MAX_KERNELS = 500  # names kept, by total GPU time: a page of comparisons, not a dump
QUANTILES = (0.1, 0.5, 0.9)
_DUR_BITS = 40  # durations below 2**40 ns (18 minutes) pack with the group key into one int64 sort key


def _sorted_by_group(key: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(key, dur) sorted by key, then duration. Packs both into one int64 in place when they fit (one
    in-place sort, no index array): fresh memory costs page faults, which dominate on some VMs."""
    if key.size and dur.min() >= 0 and dur.max() < 2**_DUR_BITS and key.max() < 2 ** (62 - _DUR_BITS):
        key <<= _DUR_BITS
        key |= dur
        key.sort()
        np.bitwise_and(key, 2**_DUR_BITS - 1, out=dur)
        key >>= _DUR_BITS
        return key, dur
    order = np.lexsort((dur, key))
    return key[order], dur[order]


def _quantile_linear(d: np.ndarray, first: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """Per group (sorted values d[first:first+n]) the q-quantile with linear interpolation at (n - 1) * q,
    with numpy's arithmetic, so that it equals `Stat.of` (np.percentile) on the group's values bit for bit."""
    rn = (n - 1).astype(np.float64) * q
    below = np.floor(rn)
    t = rn - below
    a = d[first + below.astype(np.int64)].astype(np.float64)
    b = d[first + np.minimum(below.astype(np.int64) + 1, n - 1)].astype(np.float64)
    diff = b - a
    value: np.ndarray = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)  # numpy's _lerp: exact at both ends
    return value


def kernel_comparisons(trace: Trace, traced_pass_id: int, eager_mode: str,
                       spans: PlacedGpuSpans | None = None) -> tuple[list[KernelComparison], bool]:
    """Comparisons for every kernel name seen in `eager_mode` or in graph replays; (list, truncated).

    `spans`: the pass's spans from place_gpu_spans, when the caller already has them.
    """
    if spans is None or spans.pass_id != traced_pass_id:
        spans = place_gpu_spans(trace, traced_pass_id)
    it_mode = spans.iterations.mode
    eager_it, graph_it = it_mode == eager_mode, it_mode == "graph"
    in_graph, j = spans.in_graph, spans.iteration
    # eager side: kernels launched outside graphs in eager_mode iterations; graph side: graph nodes in
    # replays (j = -1, outside every iteration, indexes the last one: masked by j >= 0)
    sel = spans.is_kernel & (j >= 0) & np.where(in_graph, graph_it[j], eager_it[j])
    key = spans.name_code[sel].astype(np.int64)  # group: name and side, code * 2 + in_graph
    key <<= 1
    key |= in_graph[sel]
    dur = spans.end[sel]
    dur -= spans.start[sel]
    key, dur = _sorted_by_group(key, dur)
    bounds = np.flatnonzero(np.diff(key)) + 1
    first = np.concatenate([[0], bounds]).astype(np.int64) if key.size else np.zeros(0, dtype=np.int64)
    n = np.diff(np.concatenate([first, [key.size]])).astype(np.int64)
    total = np.add.reduceat(dur, first).astype(np.float64) if key.size else np.zeros(0)
    lo, hi = dur[first].astype(np.float64), dur[first + n - 1].astype(np.float64)
    q10, q50, q90 = (_quantile_linear(dur, first, n, q) for q in QUANTILES)

    stats: dict[tuple[str, bool], Stat] = {}
    totals: dict[str, float] = {}
    for g, k in enumerate(key[first].tolist()):  # one pass per (kernel name, side): a few hundred at most
        name, graph_side = str(spans.names[k >> 1]), bool(k & 1)
        stat = Stat.from_row((n[g], q50[g], q10[g], q90[g], total[g] / n[g], lo[g], hi[g]))
        assert stat is not None  # every group has a span
        stats[(name, graph_side)] = stat
        totals[name] = totals.get(name, 0.0) + float(total[g])
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
