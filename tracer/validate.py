"""Invariant checks for a loaded trace (docs/trace-format.md, 'Invariants')."""

from __future__ import annotations

from graphmode.tracer.schema import SPAN_TABLES
from graphmode.tracer.store import Trace


def validate_trace(trace: Trace) -> list[str]:
    """Returns the list of broken invariants, each a sentence; an empty list means the trace is sound.

    What the loader had to leave out to read the file (rows without start/end times, spans ending
    before they start, NULLs: `Trace.notes`) comes first; the checks below run on what it kept."""
    problems: list[str] = list(trace.notes)
    checks: list[tuple[str, str]] = []  # (a count query, its message): run together in one statement below

    def check(query: str, message: str) -> None:
        checks.append((query, message))

    for table in SPAN_TABLES:
        check(f"SELECT count(*) FROM {table} WHERE end_ns < start_ns", f"{{n}} {table} row(s) end before they start")
    check("SELECT count(*) FROM passes WHERE end_ns < start_ns", "{n} pass(es) end before they start")
    check(
        "SELECT count(*) FROM gpu_spans s JOIN passes p USING (pass_id) WHERE p.detail = 'timing'",
        "{n} GPU span(s) in a timing pass, which records markers only",
    )
    # Correlation: every GPU span of a traced pass was caused by an API call that started before it.
    # A script's measuring run records the calls of graph launches only (api_filter 'sparse'): there the
    # rule holds for whole-graph spans.
    sparse = sorted({int(r.get("pass_id", -1)) for r in (trace.meta.get("runs") or [])
                     if isinstance(r, dict) and (r.get("config") or {}).get("api_filter") in ("sparse", "none")})
    excluded = f"AND NOT (s.pass_id IN ({', '.join(map(str, sparse))}) AND s.kind <> 'graph')" if sparse else ""
    check(
        f"""SELECT count(*) FROM gpu_spans s JOIN passes p USING (pass_id)
           WHERE p.detail <> 'timing' {excluded} AND NOT EXISTS (
             SELECT 1 FROM api_calls a WHERE a.pass_id = s.pass_id AND a.correlation_id = s.correlation_id)""",
        "{n} GPU span(s) whose correlation id matches no API call",
    )
    check(
        """SELECT count(*) FROM gpu_spans s JOIN api_calls a
             ON a.pass_id = s.pass_id AND a.correlation_id = s.correlation_id
           WHERE a.start_ns > s.start_ns""",
        "{n} GPU span(s) start before the API call that launched them",
    )
    check(
        """SELECT count(*) FROM gpu_spans s WHERE s.graph_id <> 0 AND NOT EXISTS (
             SELECT 1 FROM graphs g WHERE g.pass_id = s.pass_id AND g.graph_id = s.graph_id)""",
        "{n} GPU span(s) carry a graph id that is not in the recorded graphs",
    )
    check(
        """SELECT count(*) FROM gpu_spans s WHERE s.graph_node_id <> 0 AND NOT EXISTS (
             SELECT 1 FROM graph_nodes n WHERE n.pass_id = s.pass_id AND n.graph_id = s.graph_id
               AND n.node_id = s.graph_node_id)""",
        "{n} GPU span(s) carry a graph node id that is not in their graph's recorded topology",
    )
    check(
        """SELECT count(*) FROM graph_edges e WHERE NOT EXISTS (
             SELECT 1 FROM graph_nodes n WHERE n.pass_id = e.pass_id AND n.graph_id = e.graph_id AND n.node_id = e.from_node_id)
           OR NOT EXISTS (
             SELECT 1 FROM graph_nodes n WHERE n.pass_id = e.pass_id AND n.graph_id = e.graph_id AND n.node_id = e.to_node_id)""",
        "{n} graph edge(s) join nodes that are not in their graph",
    )
    check(
        """SELECT count(*) FROM graphs g WHERE g.num_nodes <> (
             SELECT count(*) FROM graph_nodes n WHERE n.pass_id = g.pass_id AND n.graph_id = g.graph_id)
           OR g.num_edges <> (
             SELECT count(*) FROM graph_edges e WHERE e.pass_id = g.pass_id AND e.graph_id = g.graph_id)""",
        "{n} graph(s) whose node or edge count does not match their topology rows",
    )
    check(
        """SELECT count(*) FROM graph_events e WHERE e.graph_id <> 0 AND NOT EXISTS (
             SELECT 1 FROM graphs g WHERE g.pass_id = e.pass_id AND g.graph_id = e.graph_id)""",
        "{n} graph lifecycle event(s) name a graph that is not recorded",
    )
    check(
        """SELECT count(*) FROM profile_samples s WHERE NOT EXISTS (
             SELECT 1 FROM profile_stacks k WHERE k.stack_id = s.stack_id) AND s.stack_id <> 0""",
        "{n} CPU profile sample(s) name a stack that is not recorded",
    )
    check(
        """SELECT count(*) FROM profile_stacks k WHERE k.parent_id >= k.stack_id OR NOT EXISTS (
             SELECT 1 FROM profile_frames f WHERE f.frame_id = k.frame_id)""",
        "{n} CPU profile stack(s) with an unknown frame or a parent that is not an earlier stack",
    )
    counts = trace.rows("SELECT " + ", ".join(f"({q})" for q, _ in checks))[0]
    problems += [message.format(n=int(n)) for (_, message), n in zip(checks, counts) if n]
    for p in trace.passes:
        if p.status not in ("complete", "interrupted", "failed", "recording"):
            problems.append(f"pass {p.pass_id} has status {p.status!r} (not complete, interrupted, failed or recording)")
    dropped_meta = int(trace.meta.get("dropped_records", 0) or 0)
    dropped_passes = sum(p.dropped_records for p in trace.passes)
    if dropped_meta != dropped_passes:
        problems.append(
            f"meta.dropped_records is {dropped_meta} but the passes add up to {dropped_passes}"
        )
    return problems
