"""How long does reporting a job of many ranks take, and how much memory? (issue 14, 'Merging')

    python benchmarks/ranks_merge.py [--ranks 64] [--hosts 8] [--repeat 10] [--seed TRACE] [--keep DIR]

Generates SYNTHETIC rank traces (meta workload 'synthetic-ranks-benchmark'; file names start with
'synthetic') from a real recording's tables (default tests/data/legacy/cuda_python_capture_v1.gmtrace,
node detail, H200): each rank is the recording's pass repeated --repeat times, with
- its host's clock offset (hosts of --ranks/--hosts ranks each; offsets up to +-50 ms: clocks of
  different hosts as NTP leaves them),
- the middle node of the recording's graph turned into an NCCL all-reduce
  (ncclDevKernel_AllReduce_Sum_f32_RING_LL) that starts late on each rank by a rank-specific
  jitter (and 8 us later on one straggler rank) and ends at the recorded end +- 100 ns,
- every other timestamp moved by up to +-300 ns of rank-specific jitter,
and no span ending before it starts (the trace reader leaves such rows out, which would shift every
later collective's occurrence number on that rank); every rank file is read back whole before timing.
Then, in a fresh process each (so that peak RSS is theirs alone), times `graphmode report --json` on
all ranks, on a quarter of them, and `analyze()` of one rank; reads peak RSS (VmHWM; and the largest worker
process's, where the ranks are read by several: analyzers.ranks.rank_workers); and checks
the clock offsets recovered from the collectives against the injected ones.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_SEED = REPO / "tests" / "data" / "legacy" / "cuda_python_capture_v1.gmtrace"  # one node-detail pass
AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
STRAGGLER_NS = 8_000
TIMED = ("api_calls", "gpu_spans", "synchronizations", "markers", "graph_events")


def _jitter(rank: int, salt: str, amplitude: int) -> str:
    """SQL: a rank-specific, row-specific integer in [-amplitude, amplitude] (hash of the row's columns)."""
    return f"(CAST(hash({rank}, '{salt}', start_ns, correlation_id) % {2 * amplitude + 1} AS BIGINT) - {amplitude})"


def _seed_columns(con: Any, table: str) -> set[str]:
    """The columns the seed's table has (a seed of an older schema lacks newer ones: they get the schema's defaults)."""
    return {r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'seed' AND table_name = ?", [table]).fetchall()}


def host_offsets(hosts: int) -> dict[int, int]:
    """Each host's clock minus host 0's (ns): fixed by a seeded generator, so a reused folder keeps them."""
    rng = np.random.default_rng(14)
    return {h: (0 if h == 0 else int(rng.integers(-50_000_000, 50_000_000))) for h in range(hosts)}


def generate(seed: Path, out: Path, ranks: int, hosts: int, repeat: int) -> dict[str, object]:
    import duckdb

    from graphmode.tracer.schema import DEFAULTS, SCHEMA_VERSION, TABLES
    from graphmode.tracer.store import load

    out.mkdir(parents=True, exist_ok=True)
    with load(seed) as t:
        p = t.pass_by_detail("node", "graph")
        assert p is not None, f"{seed}: no traced pass"
        meta = {k: v for k, v in t.meta.items() if k != "cpu_profile"}
        graph = t.rows("SELECT graph_id, count(*) FROM graph_nodes WHERE pass_id = ? AND node_type = 'kernel' GROUP BY 1 ORDER BY 2 DESC LIMIT 1",
                       [p.pass_id])
        assert graph, f"{seed}: the recording has no graph to put a collective in"
        gid = int(graph[0][0])
        node = int(t.rows("SELECT node_id FROM graph_nodes WHERE pass_id = ? AND graph_id = ? AND node_type = 'kernel' "
                          "ORDER BY node_index LIMIT 1 OFFSET (SELECT count(*) // 2 FROM graph_nodes WHERE pass_id = ? AND graph_id = ? "
                          "AND node_type = 'kernel')", [p.pass_id, gid, p.pass_id, gid])[0][0])
        corr_max = int(t.rows("SELECT coalesce(max(correlation_id), 0) + 1 FROM api_calls WHERE pass_id = ?", [p.pass_id])[0][0])
        iters = int(t.rows("SELECT coalesce(max(iteration), 0) + 1 FROM markers WHERE pass_id = ?", [p.pass_id])[0][0])
        duration = p.end_ns - p.start_ns
        pass_row = (p.pass_id, p.name, p.detail, p.start_ns, p.end_ns)
    host_offset = host_offsets(hosts)
    straggler = ranks // 2 + 1
    width = len(str(ranks - 1))
    started = time.perf_counter()
    files = []
    for r in range(ranks):
        h = r * hosts // ranks
        off = host_offset[h]
        path = out / f"synthetic.rank{r:0{width}d}.gmtrace"
        files.append(path)
        if path.exists():
            path.unlink()
        con = duckdb.connect()
        con.execute(f"ATTACH '{seed}' AS seed (READ_ONLY)")
        con.execute(f"ATTACH '{path}' AS rank (BLOCK_SIZE 16384)")
        from graphmode.tracer.schema import create_statements

        con.execute("USE rank")
        for stmt in create_statements():
            con.execute(stmt)
        rank_meta = {**meta, "schema_version": SCHEMA_VERSION,  # the tables are this version's (create_statements)
                     "workload": "synthetic-ranks-benchmark", "hostname": f"synthetic-host-{h}",
                     "params": {"note": f"SYNTHETIC: {seed.name}'s tables x{repeat}, rank {r} of {ranks}, host {h} clock "
                                        f"{off:+d} ns" + (", straggler" if r == straggler else "")},
                     "rank": {"rank": r, "world_size": ranks, "local_rank": r % (ranks // hosts), "launcher": "synthetic",
                              "hostname": f"synthetic-host-{h}", "pid": 10_000 + r,
                              "gpu": {"index": r % (ranks // hosts), "uuid": f"GPU-synthetic-{h}-{r % (ranks // hosts)}",
                                      "name": "synthetic (shape of an H200 recording)"},
                              "clock": {"cupti_minus_realtime_ns": 0}}}
        con.executemany("INSERT INTO meta VALUES (?, ?)", [[k, json.dumps(v, default=str)] for k, v in rank_meta.items()])
        for table in ("graphs", "graph_nodes", "graph_edges"):
            present = _seed_columns(con, table)
            sel = [c if c in present else f"CAST({DEFAULTS[t]!r} AS {t}) AS {c}" for c, t in TABLES[table]]
            con.execute(f"INSERT INTO {table} SELECT {', '.join(sel)} FROM seed.{table} WHERE pass_id = {pass_row[0]}")
        con.execute(f"UPDATE graph_nodes SET name = '{AR}' WHERE node_id = {node}")
        for k in range(repeat):
            shift = off + k * (duration + 1_000_000)
            for table in TIMED:
                present = _seed_columns(con, table)
                cols = [c for c, _ in TABLES[table]]
                sel = []
                moved = {c: f"{c} + {_jitter(r, table + c, 300) if 'correlation_id' in present else 0}" for c in ("start_ns", "end_ns")}
                for c, sql_type in TABLES[table]:
                    if c not in present:  # a seed of an older schema lacks newer columns: their defaults, as the reader gives them
                        sel.append(f"CAST({DEFAULTS[sql_type]!r} AS {sql_type}) AS {c}")
                    elif c == "start_ns":
                        sel.append(f"{moved[c]} + {shift} AS {c}")
                    elif c == "end_ns":  # jittered ends never before the jittered start: a span shorter than the jitter keeps length >= 0
                        sel.append(f"greatest({moved[c]}, {moved['start_ns']}) + {shift} AS {c}")
                    elif c == "correlation_id":
                        sel.append(f"CASE WHEN correlation_id = 0 THEN 0 ELSE correlation_id + {k * corr_max} END AS correlation_id")
                    elif c == "iteration" and table == "markers":
                        sel.append(f"CASE WHEN iteration < 0 THEN iteration ELSE iteration + {k * iters} END AS iteration")
                    else:
                        sel.append(c)
                where = f"pass_id = {pass_row[0]}" + (" AND event = 'launch'" if table == "graph_events" and k else "")
                con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(sel)} FROM seed.{table} WHERE {where}")
        # the collective: late start (rank jitter, the straggler later still), end at the recorded end +- 100 ns
        # (SET expressions read the row's old values: the start is clamped 50 ns before the NEW end)
        late = f"(abs(hash({r}, 'late', start_ns)) % 3000 + {STRAGGLER_NS if r == straggler else 0})"
        end = f"(end_ns + {_jitter(r, 'end', 100)})"
        con.execute(f"""UPDATE gpu_spans SET name = '{AR}', start_ns = least(start_ns + {late}, {end} - 50),
                        end_ns = {end} WHERE graph_node_id = {node}""")
        con.execute("INSERT INTO passes SELECT pass_id, name, detail, ?, ?, 0, 'complete' FROM seed.passes WHERE pass_id = ?",
                    [pass_row[3] + off - 1000, pass_row[3] + off + repeat * (duration + 1_000_000), pass_row[0]])
        con.execute("INSERT INTO meta VALUES ('status', '\"complete\"')")
        con.execute("DELETE FROM meta WHERE key = 'status' AND rowid NOT IN (SELECT max(rowid) FROM meta WHERE key = 'status')")
        con.execute("CHECKPOINT")
        con.close()
    for path in files:
        _check_whole(path)
    with load(files[0]) as t:
        events = sum(t.count(x) for x in TIMED)
    return {"ranks": ranks, "hosts": hosts, "repeat": repeat, "seed": str(seed.relative_to(REPO)) if seed.is_relative_to(REPO) else str(seed),
            "events_per_rank": events, "events": events * ranks, "bytes_per_rank": files[0].stat().st_size,
            "bytes": sum(f.stat().st_size for f in files), "generate_s": round(time.perf_counter() - started, 1),
            "host_offsets_ns": host_offset, "straggler": straggler}


def _check_whole(path: Path) -> None:
    """The reader sees every row written: a row it leaves out (a span ending before it starts, a NULL time) would
    shift the occurrence numbers that match collectives across ranks, and the benchmark would measure a broken job."""
    import duckdb

    from graphmode.tracer.store import load

    con = duckdb.connect(str(path), read_only=True)
    written = {x: int(con.execute(f"SELECT count(*) FROM {x}").fetchone()[0]) for x in TIMED}
    con.close()
    with load(path) as t:
        read = {x: t.count(x) for x in TIMED}
        if t.notes or read != written:
            raise SystemExit(f"{path}: generated rows the reader leaves out ({'; '.join(t.notes) or read}): fix the generator")


def _peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(paths: list[Path], one_rank: bool, view: Path | None = None) -> None:
    """Runs in a fresh process: prints {'seconds', 'peak_rss_mib', ...} as JSON."""
    started = time.perf_counter()
    from graphmode.analyzers.ranks import rank_workers

    if view is not None:
        from graphmode.analyzers.ranks import analyze_ranks
        from graphmode.views import write_ranks_page

        summary = write_ranks_page(analyze_ranks(paths, workers=rank_workers(len(paths))), view, workers=rank_workers(len(paths)))
        text = ""
        extra = {"html_bytes": summary.bytes, "ranks_drawn": summary.ranks_drawn, "note": summary.note}
    elif one_rank:
        from graphmode.analyzers import analyze
        from graphmode.reports.json_report import render_json
        from graphmode.tracer.store import load

        with load(paths[0]) as t:
            text = render_json(analyze(t))
        extra: dict[str, object] = {}
    else:
        from graphmode.analyzers.ranks import analyze_ranks
        from graphmode.reports.ranks import render_ranks_json

        a = analyze_ranks(paths, workers=rank_workers(len(paths)))  # as `graphmode report` reads them
        text = render_ranks_json(a)
        extra = {"offsets": {o.rank: o.offset_ns for o in a.alignment.offsets},
                 "residual_median_ns": a.alignment.residual.median if a.alignment.residual else None,
                 "residual_max_ns": a.alignment.residual.max if a.alignment.residual else None,
                 "anchors": a.alignment.anchors, "straggler": a.straggler.rank if a.straggler else None}
    # the rank traces are read by worker processes (analyzers.ranks.rank_workers): the largest one's peak RSS, which
    # with this process's bounds what the command held at once (this process plus that many times the largest worker)
    workers = 1 if one_rank else rank_workers(len(paths))
    worker_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if workers > 1 else 0.0
    print(json.dumps({"seconds": time.perf_counter() - started, "peak_rss_mib": _peak_rss_mib(), "json_bytes": len(text),
                      "workers": workers, "worker_peak_rss_mib": worker_peak,
                      "peak_rss_bound_mib": _peak_rss_mib() + (workers * worker_peak if workers > 1 else 0.0), **extra}))


def _fresh(paths: list[Path], one_rank: bool = False, view: Path | None = None) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--measure", *map(str, paths)] + (["--one-rank"] if one_rank else [])
    cmd += ["--view", str(view)] if view is not None else []
    load_before = os.getloadavg()[0]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    # the machine's 1-minute load average around the measurement: on a shared 2-core machine it says how noisy the time is
    result["load_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=10, help="copies of the recording's pass per rank")
    ap.add_argument("--seed", type=Path, default=DEFAULT_SEED)
    ap.add_argument("--keep", type=Path, help="generate into (or reuse) this folder instead of a temporary one")
    ap.add_argument("--measure", nargs="+", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--one-rank", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--view", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--reuse", action="store_true", help="measure the traces already in --keep (generated by an earlier run "
                    "with the same --ranks/--hosts), and time `view` as well")
    args = ap.parse_args()
    if args.measure:
        measure(args.measure, args.one_rank, args.view)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="gm-ranks-bench-"))
    try:
        if args.reuse and args.keep is not None:  # measure the traces an earlier run generated into --keep
            paths = sorted(folder.glob("synthetic.rank*.gmtrace"))
            info: dict[str, object] = {"host_offsets_ns": host_offsets(args.hosts)}
        else:
            info = generate(args.seed, folder, args.ranks, args.hosts, args.repeat)
            print(json.dumps({k: v for k, v in info.items() if k != "host_offsets_ns"}))
            paths = sorted(folder.glob("synthetic.rank*.gmtrace"))
        one = _fresh(paths, one_rank=True)
        quarter = _fresh(paths[: max(2, len(paths) // 4)])
        full = _fresh(paths)
        view = _fresh(paths, view=folder / "synthetic.ranks.html") if args.reuse else None
        injected = info["host_offsets_ns"]
        assert isinstance(injected, dict)
        per_rank_host = {r: r * args.hosts // args.ranks for r in range(args.ranks)}
        recovered = full.pop("offsets")
        assert isinstance(recovered, dict)
        # the job's timeline is host 0's: a rank of host h needs -offset(h) to get there
        errors = [abs(float(recovered[str(r)]) + injected[h]) for r, h in per_rank_host.items()]
        print(json.dumps({"one_rank_analyze": one, f"{len(paths[: max(2, len(paths) // 4)])}_ranks": quarter,
                          f"{len(paths)}_ranks": full, "offset_error_max_ns": max(errors), **({"view": view} if view else {})},
                         indent=1))
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
