"""NCCL collectives across the ranks of a job: what a kernel name says, clock alignment, waits, hang risks.

Pure functions over two small DuckDB tables that analyzers.ranks fills one rank at a time:

- `coll(rank, host, kernel, graph_key, seq, start_ns, end_ns, grid_x, block_x)`: every NCCL kernel span,
  `seq` numbering the spans of one (kernel, graph_key) on one rank in start order. The k-th span of
  the same kernel, eager or inside the same graph, is the same collective on every rank (ranks of
  one communicator call collectives in the same order: NCCL requires it).
- `calls(rank, pos, kernel, captured, graph_key)`: each rank's collective calls in program order,
  eager launches and captured graph nodes (docs/ranks.md).

Everything is SQL aggregates, so the memory used does not grow with the ranks beyond these tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from graphmode.analyzers.rank_results import (
    ClockAlignment,
    CollectiveSummary,
    HangRisk,
    RankOffset,
    RankWait,
    Spread,
    Straggler,
)
from graphmode.analyzers.notes import Note, note
from graphmode.analyzers.results import Stat, stat_sql

# NCCL's device kernels: ncclDevKernel_<Func>[_<RedOp>_<type>]_<ALGO>_<PROTO> (NCCL >= 2.19, plus
# ncclDevKernel_Generic*), ncclKernel_<Func>_<ALGO>_<PROTO>_<RedOp>_<type> before. CUPTI records them
# mangled (`_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorage...`) or demangled.
NCCL_SQL = "regexp_matches(name, 'nccl(Dev)?Kernel_')"
# not recorded: CUPTI kernel records carry no kernel arguments, and NCCL's NVTX payload (count, datatype) is not read
SIZE_NOTE = note("message_size_unrecorded")
OPS = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv", "AllToAll", "Generic")
ALGOS = ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "RING", "TREE", "PAT")
PROTOS = ("LL128", "LL", "SIMPLE")
REDOPS = ("Sum", "Prod", "MinMax", "Min", "Max", "PreMulSum", "SumPostDiv", "Avg")
MAX_HANG_RISKS = 8


@dataclass(frozen=True)
class NcclKernel:
    """What an NCCL kernel's name says (its arguments, and so the message size, are not in the trace)."""

    kernel: str  # the name without arguments or mangling: ncclDevKernel_AllReduce_Sum_f32_RING_LL
    op: str
    reduction: str
    dtype: str
    algorithm: str
    protocol: str

    @property
    def title(self) -> str:
        if self.op == "Generic":
            return "NCCL generic kernel (operation not in its name)"
        parts = [self.op, self.reduction, self.dtype, "/".join(p for p in (self.algorithm, self.protocol) if p)]
        return " ".join(p for p in parts if p)


_MANGLED = re.compile(r"_Z(\d+)")
_PLAIN = re.compile(r"(nccl(?:Dev)?Kernel_[A-Za-z0-9_]+)")


def kernel_base(name: str) -> str:
    """The kernel's identifier: mangling and argument list removed."""
    m = _MANGLED.match(name)
    if m:
        n, at = int(m.group(1)), m.end()
        return name[at: at + n]
    m = _PLAIN.search(name.split("(", 1)[0])
    return m.group(1) if m else name.split("(", 1)[0]


def parse_nccl_kernel(name: str) -> NcclKernel:
    base = kernel_base(name)
    tokens = re.sub(r"^nccl(Dev)?Kernel_", "", base).split("_")
    op = tokens[0] if tokens and tokens[0] in OPS else (tokens[0] if tokens else "")
    rest = tokens[1:]
    if op == "Generic":
        return NcclKernel(base, "Generic", "", "", "", "")
    algo = proto = red = ""
    dtype: list[str] = []
    i = 0
    while i < len(rest):
        two = "_".join(rest[i: i + 2])
        if two in ALGOS:
            algo, i = two, i + 2
            continue
        tok = rest[i]
        if tok in ALGOS:
            algo = tok
        elif tok in PROTOS:
            proto = tok
        elif tok in REDOPS:
            red = tok
        elif tok and not tok.isdigit():
            dtype.append(tok)
        i += 1
    return NcclKernel(base, op, red, "_".join(dtype), algo, proto)


# ---- helpers over the tables ---------------------------------------------------------------------

def spread(values: dict[int, float]) -> Spread | None:
    """min / median / max of one figure over ranks (rank -> value), with the ranks at the extremes."""
    if not values:
        return None
    import numpy as np

    ranks = sorted(values)
    v = np.array([values[r] for r in ranks], dtype=np.float64)
    return Spread(len(ranks), float(np.min(v)), float(np.median(v)), float(np.max(v)), ranks[int(np.argmin(v))], ranks[int(np.argmax(v))])


# ---- clocks ------------------------------------------------------------------------------------------

def align_clocks(con: Any, ranks: dict[int, str], clock_checks: dict[int, int]) -> ClockAlignment:
    """Offsets putting every rank on the reference host's clock (the host of the lowest rank).

    One host: no offset. CUPTI timestamps on Linux are the host's CLOCK_REALTIME (cupti_activity.h),
    so the ranks of a host share one clock. Several hosts: each host's offset is the median, over the
    collectives its ranks and the reference host's ranks both ran, of (reference host's median end -
    this host's median end): a collective ends at nearly the same moment on every rank, because no
    rank can finish before the last rank's data has arrived. The residual is what is left: per
    collective matched on every rank, the latest aligned end minus the earliest.
    """
    hosts = sorted(set(ranks.values()), key=lambda h: min(r for r, x in ranks.items() if x == h))
    ref = hosts[0] if hosts else ""
    check = max((abs(v) for v in clock_checks.values()), default=None)
    n_ranks = len(ranks)
    offsets = {h: 0 for h in hosts}
    anchors = int(con.execute("SELECT count(*) FROM (SELECT 1 FROM coll GROUP BY kernel, graph_key, seq "
                              "HAVING count(DISTINCT rank) = ?)", [n_ranks]).fetchone()[0])
    if len(hosts) <= 1:
        method, said = "one host", note("clock_one_host")
    else:
        rows = con.execute("""
            WITH g AS (SELECT kernel, graph_key, seq, host, quantile_disc(end_ns, 0.5) AS e FROM coll GROUP BY ALL),
                 r AS (SELECT kernel, graph_key, seq, e AS e0 FROM g WHERE host = ?)
            SELECT g.host, quantile_disc(r.e0 - g.e, 0.5), count(*) FROM g JOIN r USING (kernel, graph_key, seq)
            WHERE g.host <> ? GROUP BY g.host""", [ref, ref]).fetchall()
        found = {h: (int(off), int(n)) for h, off, n in rows}
        missing = [h for h in hosts[1:] if h not in found]
        for h, (off, _) in found.items():
            offsets[h] = off
        if missing:
            method = "collective ends" if found else "unaligned"
            said = note("clock_hosts_unaligned", hosts=tuple(missing), reference=ref)
        else:
            method = "collective ends"
            said = note("clock_hosts_aligned", hosts=len(hosts), reference=ref, anchors=min(n for _, n in found.values()))
    con.execute("CREATE OR REPLACE TEMP TABLE offs (host VARCHAR, off BIGINT)")
    con.executemany("INSERT INTO offs VALUES (?, ?)", [[h, o] for h, o in offsets.items()])
    con.execute("""CREATE OR REPLACE TEMP TABLE al AS
                   SELECT c.*, c.start_ns + o.off AS s, c.end_ns + o.off AS e FROM coll c JOIN offs o USING (host)""")
    # One row per collective matched on two or more ranks; last_rank is -1 where several ranks share the latest start.
    con.execute("""CREATE OR REPLACE TEMP TABLE grp AS
                   WITH g AS (SELECT kernel, graph_key, seq, count(*) AS n, max(s) AS last_start, quantile_disc(s, 0.5) AS med_start,
                                     min(e) AS first_end, max(e) AS last_end, arg_max(rank, s) AS last_rank
                              FROM al GROUP BY ALL HAVING count(DISTINCT rank) >= 2),
                        t AS (SELECT kernel, graph_key, seq, count(*) AS at_max FROM al JOIN g USING (kernel, graph_key, seq)
                              WHERE al.s = g.last_start GROUP BY ALL)
                   SELECT g.* REPLACE (CASE WHEN t.at_max = 1 THEN g.last_rank ELSE -1 END AS last_rank)
                   FROM g JOIN t USING (kernel, graph_key, seq)""")
    residual = Stat.from_row(con.execute(f"SELECT {stat_sql('last_end - first_end')} FROM grp WHERE n = ?", [n_ranks]).fetchone())
    # after alignment: how far apart the same collective ends on all ranks (median), or that none ran on every rank
    said = Note(said.kind, {**said.values, "residual_ns": residual.median if residual is not None else None, "anchored": anchors > 0})
    return ClockAlignment(method, tuple(hosts), ref, tuple(RankOffset(r, h, float(offsets[h])) for r, h in sorted(ranks.items())),
                          anchors, residual, float(check) if check is not None else None, said)


# ---- waits, stragglers, per-kernel summaries -------------------------------------------------------

def rank_waits(con: Any) -> tuple[RankWait, ...]:
    """Per rank, over the collectives matched on two or more ranks (needs `grp`, from align_clocks)."""
    rows = con.execute(f"""
        SELECT a.rank, {stat_sql('g.last_start - a.s')}, sum(g.last_start - a.s), sum(a.end_ns - a.start_ns),
               count_if(a.rank = g.last_rank)
        FROM al a JOIN grp g USING (kernel, graph_key, seq) GROUP BY a.rank ORDER BY a.rank""").fetchall()
    return tuple(RankWait(int(r[0]), int(r[1]), Stat.from_row(r[1:8]), float(r[8] or 0), float(r[9] or 0), int(r[10] or 0)) for r in rows)


def find_straggler(con: Any, waits: tuple[RankWait, ...]) -> Straggler | None:
    total = int(con.execute("SELECT count(*) FROM grp").fetchone()[0])
    if total == 0 or not waits:
        return None
    worst = max(waits, key=lambda w: (w.last_arrivals, -w.rank))
    if worst.last_arrivals == 0:
        return None
    late = con.execute("SELECT quantile_cont(last_start - med_start, 0.5) FROM grp WHERE last_rank = ?", [worst.rank]).fetchone()[0]
    return Straggler(worst.rank, worst.last_arrivals, total, float(late) if late is not None else None)


def collective_summaries(con: Any, topology: dict[tuple[str, str], int]) -> tuple[CollectiveSummary, ...]:
    """One row per (kernel, graph key) seen in spans or in a graph's topology (kernel -> nodes)."""
    keys = {(str(k), str(g)) for k, g in con.execute("SELECT DISTINCT kernel, graph_key FROM coll").fetchall()}
    keys |= set(topology)
    out = []
    for kernel, graph_key in sorted(keys, key=lambda kg: (kg[1] == "", kg[1], kg[0])):
        per_rank = dict(con.execute("SELECT rank, count(*) FROM coll WHERE kernel = ? AND graph_key = ? GROUP BY rank",
                                    [kernel, graph_key]).fetchall())
        dur = Stat.from_row(con.execute(f"SELECT {stat_sql('end_ns - start_ns')} FROM coll WHERE kernel = ? AND graph_key = ?",
                                [kernel, graph_key]).fetchone())
        wait = Stat.from_row(con.execute(f"""SELECT {stat_sql('g.last_start - a.s')} FROM al a JOIN grp g USING (kernel, graph_key, seq)
                                     WHERE a.kernel = ? AND a.graph_key = ?""", [kernel, graph_key]).fetchone())
        skew = Stat.from_row(con.execute(f"SELECT {stat_sql('last_end - first_end')} FROM grp WHERE kernel = ? AND graph_key = ?",
                                 [kernel, graph_key]).fetchone())
        shape = con.execute("""SELECT mode(grid_x), mode(block_x) FROM coll WHERE kernel = ? AND graph_key = ?""",
                            [kernel, graph_key]).fetchone()
        k = parse_nccl_kernel(kernel)
        ranks_with = len(per_rank) or int(con.execute("SELECT count(DISTINCT rank) FROM topo WHERE kernel = ? AND graph_key = ?",
                                                      [kernel, graph_key]).fetchone()[0])
        out.append(CollectiveSummary(
            k.kernel, k.op, k.reduction, k.dtype, k.algorithm, k.protocol, "graph" if graph_key else "eager", graph_key,
            ranks_with, spread({int(r): float(c) for r, c in per_rank.items()}), topology.get((kernel, graph_key), 0),
            int(shape[0]) if shape and shape[0] is not None else None, int(shape[1]) if shape and shape[1] is not None else None,
            dur, wait, skew, None, SIZE_NOTE))
    return tuple(out)


# ---- hang risks ------------------------------------------------------------------------------------------

def hang_risks(con: Any, replays: dict[str, dict[int, int]], statuses: dict[int, str]) -> tuple[HangRisk, ...]:
    """Ranks that disagree about what NCCL needs them to agree on (NCCL's 'Using NCCL with CUDA Graphs').

    - capture_mismatch: at the same call position, some ranks captured the collective into a graph
      and others launched it eagerly;
    - collective_mismatch: at the same position the ranks called different collectives;
    - replay_count_mismatch: a graph holding collectives was replayed a different number of times;
    - call_count_mismatch: the ranks made different numbers of collective calls.
    """
    risks: list[HangRisk] = []
    cut = tuple(sorted(r for r, s in statuses.items() if s != "complete"))  # their traces may stop early
    for pos, kernels, captured, eager in con.execute("""
            SELECT pos, list(DISTINCT kernel ORDER BY kernel), list(rank ORDER BY rank) FILTER (WHERE captured),
                   list(rank ORDER BY rank) FILTER (WHERE NOT captured)
            FROM calls GROUP BY pos HAVING count(DISTINCT captured) > 1 ORDER BY pos LIMIT ?""", [MAX_HANG_RISKS]).fetchall():
        op = " / ".join(parse_nccl_kernel(k).title for k in kernels)
        risks.append(HangRisk("capture_mismatch", int(pos), op, tuple(captured or ()), tuple(eager or ()),
                              note("capture_mismatch", call=int(pos) + 1, op=op, captured=tuple(int(r) for r in captured or ()),
                                   eager=tuple(int(r) for r in eager or ()), incomplete=cut)))
    first = con.execute("""SELECT pos, list(DISTINCT kernel ORDER BY kernel) FROM calls GROUP BY pos
                           HAVING count(DISTINCT kernel) > 1 ORDER BY pos LIMIT 1""").fetchone()
    if first is not None:
        by_kernel = con.execute("SELECT kernel, list(rank ORDER BY rank) FROM calls WHERE pos = ? GROUP BY kernel ORDER BY kernel",
                                [first[0]]).fetchall()
        risks.append(HangRisk("collective_mismatch", int(first[0]), " / ".join(parse_nccl_kernel(k).title for k in first[1]), (), (),
                              note("collective_mismatch", call=int(first[0]) + 1,
                                   ops=tuple(parse_nccl_kernel(k).title for k, _ in by_kernel),
                                   ranks=tuple(tuple(int(r) for r in rs) for _, rs in by_kernel), incomplete=cut)))
    counts = dict(con.execute("SELECT rank, count(*) FROM calls GROUP BY rank").fetchall())
    if counts and len(set(counts.values())) > 1:
        risks.append(HangRisk("call_count_mismatch", -1, "", (), (),
                              note("call_count_mismatch", ranks=tuple(int(r) for r in sorted(counts)),
                                   calls=tuple(int(counts[r]) for r in sorted(counts)), incomplete=cut)))
    for key, per_rank in sorted(replays.items()):
        if len(set(per_rank.values())) > 1:
            risks.append(HangRisk("replay_count_mismatch", -1, key, (), (),
                                  note("replay_count_mismatch", graph=key, ranks=tuple(int(r) for r in sorted(per_rank)),
                                       replays=tuple(int(per_rank[r]) for r in sorted(per_rank)), incomplete=cut)))
    return tuple(risks)
