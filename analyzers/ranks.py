"""The traces of one multi-process job analysed as one run: per rank, per graph, and across ranks.

`analyze_ranks(paths)` opens one rank trace at a time, runs the single-trace analysis's metrics on it
(`analyzers.analyze_metrics`: what `analyze` measures and its notes, without the diagnostics, coverage,
prediction, critical paths and source lines that the job's report does not show), keeps a few numbers
per graph and the rank's NCCL kernels, and closes it; what crosses ranks (clock alignment, waits in
collectives, stragglers, hang risks) is SQL over two small DuckDB tables of collectives
(analyzers.collectives). Ranks are read by up to RANK_WORKERS processes at once, each one rank at a
time, and added to the tables in the order given, so the result does not depend on which process read
which rank. Memory is RANK_WORKERS ranks' analyses plus those tables, whatever the number of ranks.
Pure: no printing, no plotting; docs/ranks.md defines every figure.

Which run of a rank's trace gives what (a `graphmode run` trace holds a measuring run and a detail
run, analyzers.script_graphs): the per-graph figures are the rank's own per-graph results
(`TraceAnalysis.graphs`: timed by the measuring run, graphs named by the detail run); the
collectives, the clock alignment, the program order of collective calls and the timeline come from
the detail run (`TraceAnalysis.traced_pass_id`), the one run whose kernels can be tied to their
launch calls (correlation), whose graph ids are those of the graphs the program built (the measuring
run's GPU records carry executable ids) and which recorded the graphs' topology and, with
`--detail node`, the kernels inside replays. The measuring run records kernels with names and
streams but no kernel launch calls and no topology, and its collectives are other calls than the
detail run's (the program ran twice): the two runs are never mixed.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers import analyze_metrics
from graphmode.analyzers.collectives import (
    NCCL_SQL,
    align_clocks,
    collective_summaries,
    find_straggler,
    hang_risks,
    kernel_base,
    parse_nccl_kernel,
    rank_waits,
    spread,
)
from graphmode.analyzers.costmodel import CostModel, choose_model, installed_models
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.rank_results import (
    GraphAcrossRanks,
    RankGraph,
    RankIdentity,
    RankSetAnalysis,
    RankSummary,
)
from graphmode.analyzers.results import TraceAnalysis
from graphmode.analyzers.run import build_run
from graphmode.tracer.rankset import RankSetError, check_one_job
from graphmode.tracer.store import PassInfo, Trace, TraceError, load, trace_database

_R = TypeVar("_R")
UNNUMBERED = 1 << 30  # provisional ranks of traces without rank metadata
MAX_CALLS_PER_RANK = 200_000  # collective calls per rank compared for hang risks
# Processes reading ranks at once. Reading a rank is CPU-bound (DuckDB queries and numpy over one trace) and ranks
# are independent, so two processes halve the time on two cores; each holds one rank's analysis, so memory grows
# with their number: two, not one per core.
RANK_WORKERS = 2
POOL_FROM_RANKS = 6  # below this, starting the processes (each imports numpy, DuckDB and the analyzers) costs more
_SITE = re.compile(r"\((?:captured|built) at (.+)\)\s*$")


MEASURING_RUN = "measure"  # the pass name of `graphmode run`'s measuring run (analyzers.script_graphs.choose_passes)


@dataclass
class _Rank:
    identity: RankIdentity
    summary: RankSummary
    graphs: list[RankGraph]
    lost_records: bool = False  # CUPTI dropped records, or the reader left rows out: some collectives may be missing


def rank_identity(trace: Trace, fallback_rank: int) -> RankIdentity:
    """Who the trace's process was (meta.rank, written by graphmode run under a launcher)."""
    meta = trace.meta
    rm = meta.get("rank") if isinstance(meta.get("rank"), dict) else None
    gpu = rm.get("gpu", {}) if rm and isinstance(rm.get("gpu"), dict) else {}
    clock = rm.get("clock", {}) if rm and isinstance(rm.get("clock"), dict) else {}

    def opt_int(v: Any) -> int | None:
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    return RankIdentity(
        rank=int(rm["rank"]) if rm and opt_int(rm.get("rank")) is not None else fallback_rank,
        world_size=opt_int(rm.get("world_size")) if rm else None,
        local_rank=opt_int(rm.get("local_rank")) if rm else None,
        host=str((rm or {}).get("hostname") or meta.get("hostname", "")),
        launcher=str((rm or {}).get("launcher", "")),
        pid=opt_int((rm or {}).get("pid", meta.get("pid"))),
        gpu_index=opt_int(gpu.get("index")),
        gpu_uuid=str(gpu.get("uuid") or (meta.get("gpu_uuid", "") if not rm else "")),
        gpu_name=str(gpu.get("name") or meta.get("gpu_name", "")),
        path=str(trace.path), status=str(meta.get("status", "unknown")), numbered_by_order=rm is None,
        cupti_minus_realtime_ns=opt_int(clock.get("cupti_minus_realtime_ns")),
    )


def _graph_order(trace: Trace, pass_id: int) -> list[tuple[int, str, str, int | None, int]]:
    """(graph_id, label, origin, built_ns, launches) in the order the rank built its graphs."""
    built = dict(trace.rows("""SELECT graph_id, min(start_ns) FROM graph_events WHERE pass_id = ?
                               AND event IN ('capture', 'build', 'instantiate') GROUP BY 1""", [pass_id]))
    launches = dict(trace.rows("SELECT graph_id, count(*) FROM graph_events WHERE pass_id = ? AND event = 'launch' GROUP BY 1",
                               [pass_id]))
    rows = trace.rows("SELECT graph_id, label, origin FROM graphs WHERE pass_id = ?", [pass_id])
    out = [(int(g), str(label), str(origin), int(built[g]) if built.get(g) is not None else None, int(launches.get(g, 0)))
           for g, label, origin in rows]
    return sorted(out, key=lambda x: (x[3] is None, x[3] or 0, x[0]))


def _rank_graphs(trace: Trace, analysis: TraceAnalysis, pass_id: int, rank: int,
                 nccl_nodes: dict[int, int]) -> tuple[list[RankGraph], dict[int, str]]:
    """Per graph of one rank: one-time cost, saving, break-even. From the rank's per-graph results
    (`analysis.graphs`, script traces: their graph ids are the detail run's, as are `pass_id`'s), else
    (runner traces) from the trace-level results."""
    order = _graph_order(trace, pass_id)
    keys = {gid: f"graph #{k + 1}" for k, (gid, *_rest) in enumerate(order)}
    per_graph = {g.graph_id: g for g in analysis.graphs}
    costs = {c.graph_id: c for c in analysis.graph_costs}
    replayed = [gid for gid, _, _, _, n in order if n > 0]
    primary = analysis.primary_break_even()
    graph_mode = analysis.mode("graph")
    out = []
    for k, (gid, label, origin, _built, launches) in enumerate(order):
        g = per_graph.get(gid)
        m = _SITE.search(label)
        if g is not None:
            cost, be, period = g.cost, g.break_even, g.graph.period if g.graph is not None else None
            out.append(RankGraph(
                rank, keys[gid], k + 1, gid, g.label, g.site or (m.group(1) if m else ""), g.replays,
                float(cost.total_ns) if cost is not None else None,
                be.saved_per_replay_ns if be is not None else None, be.replays if be is not None else None,
                bool(be.never) if be is not None else False, float(period.median) if period is not None else None,
                nccl_nodes.get(gid, 0), "per-graph results"))
            continue
        cost_of = costs.get(gid)
        single = replayed == [gid]  # trace-level savings belong to this graph only when it is the one replayed
        out.append(RankGraph(
            rank, keys[gid], k + 1, gid, label, m.group(1) if m else "", launches,
            float(cost_of.total_ns) if cost_of is not None else None,
            primary.saved_per_replay_ns if single and primary is not None else None,
            primary.replays if single and primary is not None else None,
            bool(primary.never) if single and primary is not None else False,
            graph_mode.wall.median if single and graph_mode is not None and graph_mode.wall is not None else None,
            nccl_nodes.get(gid, 0), "trace-level results"))
    return out, keys


def collective_pass(trace: Trace, analysis: TraceAnalysis) -> PassInfo | None:
    """The pass a rank's collectives, clock alignment and timeline come from: the one the analysis
    breaks CUDA activity down from (`traced_pass_id`), which in a `graphmode run` trace is the detail
    run (analyzers.script_graphs: the structure pass) and in a `graphmode bench` trace the traced pass.
    A trace holding only a measuring run falls back to it (`RankSummary.run` says 'measure')."""
    if analysis.traced_pass_id is not None:
        return next((p for p in trace.passes if p.pass_id == analysis.traced_pass_id), None)
    return trace.passes[0] if trace.passes else None


def _collectives(trace: Trace, pass_id: int) -> dict[str, np.ndarray]:
    """The rank's NCCL kernel spans with, for eager ones, the start of the call that launched them."""
    return trace.sql(f"""
        SELECT s.name, s.start_ns, s.end_ns, s.graph_id, s.graph_node_id, s.grid_x, s.block_x,
               coalesce(a.t, s.start_ns) AS t
        FROM (SELECT * FROM gpu_spans WHERE pass_id = ? AND kind = 'kernel' AND {NCCL_SQL}) s
        LEFT JOIN (SELECT correlation_id, min(start_ns) AS t FROM api_calls WHERE pass_id = ? GROUP BY 1) a
          ON a.correlation_id = s.correlation_id AND s.graph_id = 0
        ORDER BY s.start_ns, s.end_ns""", [pass_id, pass_id])


def _captured_nodes(trace: Trace, pass_id: int, spans: dict[str, np.ndarray]) -> dict[int, list[str]]:
    """NCCL kernels inside each graph, in graph order: from the recorded topology, or where a graph has
    none, from the node spans of its replays (node-detail traces)."""
    nodes: dict[int, list[str]] = {}
    for gid, name in trace.rows(f"""SELECT graph_id, name FROM graph_nodes WHERE pass_id = ? AND node_type = 'kernel'
                                    AND {NCCL_SQL} ORDER BY graph_id, node_index""", [pass_id]):
        nodes.setdefault(int(gid), []).append(kernel_base(str(name)))
    in_graph = spans["graph_id"] != 0
    if in_graph.any():
        gids, nids = spans["graph_id"][in_graph], spans["graph_node_id"][in_graph]
        names, starts = spans["name"][in_graph], spans["start_ns"][in_graph]
        order = np.lexsort((starts, nids, gids))
        g_o, n_o = gids[order], nids[order]
        first = order[np.r_[True, (g_o[1:] != g_o[:-1]) | (n_o[1:] != n_o[:-1])]]  # earliest span of each (graph, node)
        for gid in {int(g) for g in gids[first]} - set(nodes):
            sel = first[gids[first] == gid]
            nodes[gid] = [kernel_base(str(n)) for n in names[sel[np.argsort(starts[sel], kind="stable")]]]
    return nodes


def _rank_tables(con: Any, rank: int, host: str, spans: dict[str, np.ndarray], keys: dict[int, str],
                 captured: dict[int, list[str]], built: dict[int, int | None]) -> None:
    """Appends the rank's rows to `coll`, `calls` and `topo`."""
    n = len(spans["name"])
    # kernel names and graph keys once per distinct value, not per span
    uniq, inv = factorize(spans["name"])
    kernel = np.array([kernel_base(u) for u in uniq], dtype=object)[inv] if n else np.array([], dtype=object)
    gids, ginv = np.unique(spans["graph_id"], return_inverse=True)
    gkey = (np.array([keys.get(int(g), f"graph {int(g)}") if g else "" for g in gids], dtype=object)[ginv]
            if n else np.array([], dtype=object))
    if n:
        group = np.char.add(np.char.add(kernel.astype(str), "|"), gkey.astype(str))
        order = np.lexsort((spans["start_ns"], group))
        seq = np.empty(n, np.int64)
        g_sorted = group[order]
        starts = np.r_[0, np.flatnonzero(g_sorted[1:] != g_sorted[:-1]) + 1]
        run = np.repeat(starts, np.diff(np.r_[starts, n]))
        seq[order] = np.arange(n) - run
        con.register("_rank_coll", {"rank": np.full(n, rank, np.int32), "host": np.full(n, host, dtype=object), "kernel": kernel,
                                    "graph_key": gkey, "seq": seq, "start_ns": spans["start_ns"], "end_ns": spans["end_ns"],
                                    "grid_x": spans["grid_x"], "block_x": spans["block_x"]})
        con.execute("INSERT INTO coll SELECT * FROM _rank_coll")
        con.unregister("_rank_coll")
    # Program order of the rank's collective calls: eager launches at their launch call, a graph's
    # collectives at its capture (or build), in the graph's node order.
    eager = spans["graph_id"] == 0
    t = [spans["t"][eager].astype(np.int64)]
    sub = [np.zeros(int(eager.sum()), np.int64)]
    kern = [kernel[eager].astype(object)]
    captured_flag = [np.zeros(int(eager.sum()), bool)]
    key = [np.full(int(eager.sum()), "", dtype=object)]
    for gid, kernels in captured.items():
        at = built.get(gid)
        if at is None:
            continue  # a graph built before tracing started: its place among the calls is unknown
        k = len(kernels)
        t.append(np.full(k, at, np.int64))
        sub.append(np.arange(1, k + 1, dtype=np.int64))
        kern.append(np.array(kernels, dtype=object))
        captured_flag.append(np.ones(k, bool))
        key.append(np.full(k, keys.get(gid, ""), dtype=object))
        for name in set(kernels):
            con.execute("INSERT INTO topo VALUES (?, ?, ?, ?)", [rank, keys.get(gid, ""), name, kernels.count(name)])
    order = np.lexsort((np.concatenate(sub), np.concatenate(t)))[:MAX_CALLS_PER_RANK]
    if order.size:
        con.register("_rank_calls", {"rank": np.full(order.size, rank, np.int32), "pos": np.arange(order.size),
                                     "kernel": np.concatenate(kern)[order], "captured": np.concatenate(captured_flag)[order],
                                     "graph_key": np.concatenate(key)[order]})
        con.execute("INSERT INTO calls SELECT * FROM _rank_calls")
        con.unregister("_rank_calls")


@dataclass
class _RankRead:
    """What one rank's trace gives: its summary and graphs, and its collectives for the job's tables (_rank_tables)."""
    rank: _Rank
    spans: dict[str, np.ndarray]
    keys: dict[int, str]
    captured: dict[int, list[str]]
    built: dict[int, int | None]


def _read_path(path: Path, fallback_rank: int, models: list[CostModel], database: Any = None) -> _RankRead | str:
    """One rank's trace read and closed (in `database`: tracer.store.load); the loader's one-line error where it cannot
    be read."""
    try:
        trace = load(path, database)
    except TraceError as e:
        return str(e)
    with trace:
        return _read_rank(trace, fallback_rank, models)


_WORKER: dict[str, Any] = {}  # in a worker process (start_worker): what it keeps from one rank trace to the next


def start_worker() -> None:
    """map_in_workers' initializer for rank traces: the installed cost models, read once, and one DuckDB database that
    opens each trace in turn (tracer.store.trace_database), in each worker process."""
    _WORKER["models"] = installed_models()
    _WORKER["database"] = trace_database()


def worker_database() -> Any:
    """The worker's database (start_worker), None outside a worker."""
    return _WORKER.get("database")


def _read_in_worker(path: Path, fallback_rank: int) -> _RankRead | str:
    return _read_path(path, fallback_rank, _WORKER["models"], _WORKER["database"])


def _read_all(paths: Sequence[Path], workers: int) -> Iterator[_RankRead | str]:
    """Each rank's reading, in the order of `paths`, from `workers` processes (one: this process)."""
    fallback = [UNNUMBERED + i for i in range(len(paths))]  # a trace without rank metadata: renumbered later
    if workers <= 1:
        models = installed_models()
        yield from (_read_path(Path(p), f, models) for p, f in zip(paths, fallback))
        return
    yield from map_in_workers(_read_in_worker, [Path(p) for p in paths], workers, fallback, initializer=start_worker)


def map_in_workers(fn: Callable[..., _R], items: Sequence[Any], workers: int, *more: Sequence[Any],
                   initializer: Callable[[], None] | None = None) -> Iterator[_R]:
    """fn over the items (and `more`, zipped), in their order, in `workers` spawned processes (one: in this process).
    `fn` must be a module-level function; its arguments and result cross processes pickled. `initializer` runs once
    in each worker process (not in this one)."""
    if workers <= 1:
        yield from map(fn, items, *more)
        return
    import multiprocessing

    # 'spawn': a fork would copy this process's DuckDB threads and locks mid-state
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=initializer) as pool:
        yield from pool.map(fn, items, *more)


def _read_rank(trace: Trace, fallback_rank: int, models: list[CostModel]) -> _RankRead:
    identity = rank_identity(trace, fallback_rank)
    analysis = analyze_metrics(build_run(trace), choose_model(trace.meta, models), details=False)
    chosen = collective_pass(trace, analysis)
    pass_id = chosen.pass_id if chosen is not None else 0
    spans = _collectives(trace, pass_id)
    captured = _captured_nodes(trace, pass_id, spans)
    graphs, keys = _rank_graphs(trace, analysis, pass_id, identity.rank, {g: len(v) for g, v in captured.items()})
    built = {gid: b for gid, _, _, b, _ in _graph_order(trace, pass_id)}
    totals = analysis.totals
    one_time = sum(g.one_time_ns for g in graphs if g.one_time_ns is not None) if any(g.one_time_ns is not None for g in graphs) else None
    if totals is not None and totals.saved_ns is not None:
        saved: float | None = float(totals.saved_ns)
    else:
        known = [g.saved_per_replay_ns * g.replays for g in graphs if g.saved_per_replay_ns is not None]
        saved = float(sum(known)) if known else None
    summary = RankSummary(
        identity, len(graphs), sum(1 for g in graphs if g.replays > 0), sum(g.replays for g in graphs), one_time, saved,
        saved - one_time if saved is not None and one_time is not None else None, len(spans["name"]),
        float(np.sum(spans["end_ns"] - spans["start_ns"])) if len(spans["name"]) else 0.0,
        analysis.warnings, analysis.cannot_compute, pass_id,
        int(chosen.start_ns) if chosen is not None else 0, int(chosen.end_ns) if chosen is not None else 0,
        chosen.name if chosen is not None else "")
    lost = (chosen is not None and chosen.dropped_records > 0) or bool(trace.notes)
    return _RankRead(_Rank(identity, summary, graphs, lost), spans, keys, captured, built)


def _create_tables(con: Any) -> None:
    con.execute("""CREATE TABLE coll (rank INTEGER, host VARCHAR, kernel VARCHAR, graph_key VARCHAR, seq BIGINT,
                   start_ns BIGINT, end_ns BIGINT, grid_x INTEGER, block_x INTEGER)""")
    con.execute("CREATE TABLE calls (rank INTEGER, pos BIGINT, kernel VARCHAR, captured BOOLEAN, graph_key VARCHAR)")
    con.execute("CREATE TABLE topo (rank INTEGER, graph_key VARCHAR, kernel VARCHAR, nodes INTEGER)")


def _across(graphs: list[RankGraph]) -> tuple[GraphAcrossRanks, ...]:
    out = []
    for key in sorted({g.key for g in graphs}, key=lambda k: int(k.rsplit("#", 1)[-1]) if k.rsplit("#", 1)[-1].isdigit() else 0):
        gs = [g for g in graphs if g.key == key]

        def of(f: Callable[[RankGraph], float | int | None]) -> dict[int, float]:
            return {g.rank: float(v) for g in gs if (v := f(g)) is not None}

        replay = of(lambda g: g.replay_ns)
        sites = [g.site for g in gs if g.site]
        out.append(GraphAcrossRanks(
            key, gs[0].label, max(set(sites), key=sites.count) if sites else "", len(gs), spread(of(lambda g: g.replays)),
            spread(of(lambda g: g.one_time_ns)), spread(of(lambda g: g.saved_per_replay_ns)),
            spread(of(lambda g: g.break_even_replays)), spread(replay),
            tuple(sorted(g.rank for g in gs if g.never_pays_back)),
            max(replay, key=lambda r: replay[r]) if len(replay) > 1 else None, max(g.collectives for g in gs)))
    return tuple(out)


def rank_workers(traces: int) -> int:
    """How many processes read `traces` rank traces: RANK_WORKERS from POOL_FROM_RANKS traces up, as the cores allow."""
    return min(RANK_WORKERS, os.cpu_count() or 1) if traces >= POOL_FROM_RANKS else 1


def analyze_ranks(paths: Sequence[Path], source: str = "", progress: Callable[[int, int], None] | None = None,
                  workers: int = 1) -> RankSetAnalysis:
    """Analyses the rank traces of one job, one file at a time in each of `workers` processes (the result is the same
    whatever their number; the CLI takes rank_workers). Workers are spawned: each imports the caller's `__main__`
    module, so a script that asks for more than one must keep its top level under `if __name__ == "__main__":`.
    Raises RankSetError for files that cannot be one job (tracer.rankset.check_one_job: different programs, the same
    rank twice, different world sizes)."""
    import duckdb

    check_one_job(paths)
    con = duckdb.connect()
    con.execute("SET threads = 1")  # the tables are small; one thread keeps the memory flat
    _create_tables(con)
    ranks: dict[int, _Rank] = {}
    warnings: list[Note] = []
    cannot: list[Note] = []
    seen_world: dict[int, str] = {}
    if progress is not None:
        progress(0, len(paths))
    for i, read in enumerate(_read_all(paths, workers)):
        if progress is not None and 0 < i < len(paths):
            progress(i, len(paths))  # i ranks read
        if isinstance(read, str):
            warnings.append(note("trace_left_out", error=read))
            continue
        r = read.rank
        _rank_tables(con, r.identity.rank, r.identity.host, read.spans, read.keys, read.captured, read.built)
        ident = r.identity  # that the traces can be one job was checked above (tracer.rankset.check_one_job)
        if ident.world_size is not None:
            seen_world.setdefault(ident.world_size, str(paths[i]))
        ranks[ident.rank] = r
    if progress is not None:
        progress(len(paths), len(paths))
    if not ranks:
        raise RankSetError(f"none of the {len(paths)} file(s) could be read: " + "; ".join(str(w["error"]) for w in warnings))
    ranks = _renumber(ranks, con, warnings)
    world = next(iter(seen_world), None)
    missing = tuple(r for r in range(world) if r not in ranks) if world else ()
    if missing:
        warnings.append(note("ranks_missing", ranks=missing[:16], missing=len(missing), world_size=world))
    for r in ranks.values():
        if r.identity.status != "complete":
            warnings.append(note("rank_incomplete", rank=r.identity.rank, status=r.identity.status))
    by_gpu: dict[tuple[str, str], list[int]] = {}
    for r in ranks.values():
        if r.identity.gpu_uuid:
            by_gpu.setdefault((r.identity.host, r.identity.gpu_uuid), []).append(r.identity.rank)
    for (host, uuid), rs in sorted(by_gpu.items()):
        if len(rs) > 1:
            warnings.append(note("ranks_share_gpu", ranks=tuple(sorted(rs)), gpu_uuid=uuid, host=host))

    hosts = {r.identity.rank: r.identity.host for r in ranks.values()}
    clock_checks = {r.identity.rank: r.identity.cupti_minus_realtime_ns for r in ranks.values()
                    if r.identity.cupti_minus_realtime_ns is not None}
    alignment = align_clocks(con, hosts, {k: int(v) for k, v in clock_checks.items() if v is not None})
    waits = rank_waits(con)
    straggler = find_straggler(con, waits)
    topology = {(str(k), str(g)): int(n) for k, g, n in con.execute(
        "SELECT kernel, graph_key, max(nodes) FROM topo GROUP BY ALL").fetchall()}
    collectives = collective_summaries(con, topology)
    graphs = [g for r in sorted(ranks) for g in ranks[r].graphs]
    replays = {}
    for key in {g.key for g in graphs if g.collectives}:
        replays[key] = {g.rank: g.replays for g in graphs if g.key == key}
    risks = hang_risks(con, replays, {r: x.identity.status for r, x in ranks.items()})
    warnings.extend(_unequal_collectives(con, ranks, replays))
    measuring_only = sorted(r for r, x in ranks.items() if x.summary.run == MEASURING_RUN)
    if measuring_only:
        cannot.append(note("ranks_measuring_run_only", ranks=tuple(measuring_only[:16])))
    if not collectives:
        cannot.append(note("no_collectives"))
    elif any(c.where == "graph" and c.calls is None for c in collectives):
        cannot.append(note("graph_collectives_untimed"))
    if collectives:
        cannot.append(note("collective_message_size"))
    if len(ranks) > 1 and not any(g.source == "per-graph results" for g in graphs) and graphs:
        cannot.append(note("rank_graph_savings_single_graph"))
    con.close()
    return RankSetAnalysis(
        source=source or (str(Path(paths[0]).parent) if paths else ""), world_size=world,
        ranks=tuple(ranks[r].summary for r in sorted(ranks)), missing_ranks=missing, graphs=tuple(graphs),
        graphs_across=_across(graphs), collectives=collectives, waits=waits, alignment=alignment,
        straggler=straggler, hang_risks=risks, warnings=tuple(warnings), cannot_compute=tuple(cannot))


def _unequal_collectives(con: Any, ranks: dict[int, _Rank], replays: dict[str, dict[int, int]], shown: int = 3) -> list[Note]:
    """Collectives recorded a different number of times on different ranks although the ranks made the same
    calls: a graph replayed equally often everywhere, or a rank whose trace lost records. The k-th
    occurrence is matched across ranks, so one lost span pairs every later one with another call: waits,
    end skew and the clock alignment on that collective are then wrong, which must be said. (Different
    numbers of eager calls or of replays are hang risks, reported as such.)"""
    rows = con.execute("""SELECT kernel, graph_key, list(rank ORDER BY rank), list(n ORDER BY rank)
                          FROM (SELECT kernel, graph_key, rank, count(*) AS n FROM coll GROUP BY ALL)
                          GROUP BY kernel, graph_key HAVING min(n) <> max(n) ORDER BY graph_key = '', graph_key, kernel""").fetchall()
    found = []
    for kernel, graph_key, rs, ns in rows:
        counts = dict(zip((int(r) for r in rs), (int(n) for n in ns)))
        most = max(counts.values())
        short = sorted(r for r, n in counts.items() if n < most)
        lossy = [r for r in short if r in ranks and ranks[r].lost_records]
        same_calls = bool(graph_key) and len(set(replays.get(str(graph_key), {}).values())) <= 1
        if lossy or same_calls:
            found.append((str(kernel), str(graph_key), counts, most, short, lossy))
    out = []
    for kernel, graph_key, counts, most, short, lossy in found[:shown]:
        out.append(note("collective_counts_differ", op=parse_nccl_kernel(kernel).title, graph=graph_key, most=most,
                        short_ranks=tuple(short), short_counts=tuple(counts[r] for r in short), lossy_ranks=tuple(lossy)))
    if len(found) > shown:
        out.append(note("more_collective_counts_differ", collectives=len(found) - shown))
    return out


def _renumber(ranks: dict[int, _Rank], con: Any, warnings: list[Note]) -> dict[int, _Rank]:
    """Traces without rank metadata take the ranks after the known ones, in the order given."""
    lacking = sorted(r for r in ranks if r >= UNNUMBERED)
    if not lacking:
        return ranks
    start = max([r for r in ranks if r < UNNUMBERED], default=-1) + 1
    mapping = {old: start + k for k, old in enumerate(lacking)}
    for old, new in mapping.items():
        for table in ("coll", "calls", "topo"):
            con.execute(f"UPDATE {table} SET rank = ? WHERE rank = ?", [new, old])
        r = ranks.pop(old)
        ident = dataclasses.replace(r.identity, rank=new)
        ranks[new] = _Rank(ident, dataclasses.replace(r.summary, identity=ident),
                           [dataclasses.replace(g, rank=new) for g in r.graphs], r.lost_records)
    warnings.append(note("ranks_numbered", files=tuple(Path(ranks[n].identity.path).name for n in mapping.values()),
                         ranks=tuple(mapping.values())))
    return dict(sorted(ranks.items()))
