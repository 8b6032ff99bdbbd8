"""One-time cost of each graph: build, instantiate, upload, and the first launch's excess.

The runner writes one `op` marker per cost (docs/trace-format.md, markers); a trace without them
(a user script) falls back to the `graph_events` lifecycle rows, which carry no first launch.
"""

from __future__ import annotations

import numpy as np

from graphmode.analyzers.results import GraphCost
from graphmode.tracer.store import Trace

_OP_SQL = """
SELECT graph_id, name, sum(end_ns - start_ns)::BIGINT AS dur
FROM markers WHERE pass_id = ? AND kind = 'op' AND name IN ('capture', 'build', 'instantiate', 'upload', 'first_launch')
GROUP BY graph_id, name ORDER BY graph_id, name
"""

_EVENT_SQL = """
SELECT graph_id, event AS name, sum(end_ns - start_ns)::BIGINT AS dur
FROM graph_events WHERE pass_id = ? AND event IN ('capture', 'build', 'instantiate', 'upload') AND graph_id <> 0
GROUP BY graph_id, event ORDER BY graph_id, event
"""


def has_cost_records(trace: Trace, pass_id: int) -> bool:
    n = trace.rows(
        "SELECT (SELECT count(*) FROM markers WHERE pass_id = ? AND kind = 'op')"
        " + (SELECT count(*) FROM graph_events WHERE pass_id = ? AND event IN ('capture', 'build', 'instantiate', 'upload'))",
        [pass_id, pass_id],
    )[0][0]
    return int(n) > 0


def graph_costs(trace: Trace, pass_id: int, steady_replay_ns: float | None) -> list[GraphCost]:
    """Costs of every graph with `op` markers (or lifecycle events) in the pass.

    `steady_replay_ns` is the median graph-mode iteration of the same pass: the first launch's
    excess is what it took beyond a steady replay (its launch + synchronize did one replay's work).
    """
    rows = trace.rows(_OP_SQL, [pass_id])
    source = "markers"
    if not rows:
        rows = trace.rows(_EVENT_SQL, [pass_id])
        source = "graph_events"
    labels = dict(trace.rows("SELECT graph_id, label FROM graphs WHERE pass_id = ?", [pass_id]))
    by_graph: dict[int, dict[str, float]] = {}
    for graph_id, name, dur in rows:  # one row per (graph, cost kind): a handful, not per event
        by_graph.setdefault(int(graph_id), {})[str(name)] = float(dur)
    out: list[GraphCost] = []
    for graph_id, parts in sorted(by_graph.items()):
        build = _sum_present(parts.get("capture"), parts.get("build"))
        first = parts.get("first_launch")
        excess = first - steady_replay_ns if first is not None and steady_replay_ns is not None else None
        total = float(np.nansum([x if x is not None else np.nan for x in (build, parts.get("instantiate"), parts.get("upload"), excess)]))
        out.append(
            GraphCost(
                pass_id=pass_id,
                graph_id=graph_id,
                label=str(labels.get(graph_id, "")),
                source=source,
                build_ns=build,
                instantiate_ns=parts.get("instantiate"),
                upload_ns=parts.get("upload"),
                first_launch_ns=first,
                steady_replay_ns=steady_replay_ns if first is not None else None,
                first_launch_excess_ns=excess,
                total_ns=total,
            )
        )
    return out


def _sum_present(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return float(sum(present)) if present else None
