"""Multi-process jobs (issue 14) on SYNTHETIC rank traces (tests/synthetic_ranks.py), expected figures by hand.

The synthetic job (true times, ns; tests/synthetic_ranks.py): each rank launches two eager
all-reduces whose kernels end at 5_000 and 9_000 and start at 1_100 / 6_100 plus the rank's
`eager_late`; then graph 1 = [K1, all-reduce, K2] is captured (10_000-11_000), instantiated
(11_000-12_000) and uploaded (12_000-12_500); replay k starts at 20_000 + 10_000 k and its
all-reduce node runs from +700 (+ `graph_late`) to +3_000 (+ `end_shift[k]`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import jsonschema
import pytest
from rich.console import Console

from graphmode.analyzers.collectives import kernel_base, parse_nccl_kernel
from graphmode.analyzers.notes import note
from graphmode.analyzers.ranks import analyze_ranks
from graphmode.reports.notes import word, words
from graphmode.reports.ranks import load_ranks_schema, print_ranks_report, ranks_report_dict, rank_run_note
from graphmode.reports.ranks_export import export_ranks_parquet, export_ranks_perfetto
from graphmode.tracer.ranks import RankInfo, detect_rank, rank_meta_at_stop, rank_tag, rank_trace_path
from graphmode.tracer.rankset import RankSetError, rank_set_paths
from graphmode.tracer.store import load
from synthetic_ranks import AR, AR_BASE, RankPlan, job
from tests.conftest import ROOT


def _two_ranks(folder: Path, **rank1: object) -> list[Path]:
    """Rank 1 starts each eager all-reduce 500 ns late and the in-graph one 2_000 ns late."""
    plan1 = RankPlan(1, 2, eager_late=500, graph_late=2_000)
    for k, v in rank1.items():
        setattr(plan1, k, v)
    return job(folder, [RankPlan(0, 2), plan1])


# ---- launching -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("env, expected", [
    ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1", "TORCHELASTIC_RUN_ID": "x"},
     (3, 8, 1, 2, 1, "torchrun")),
    ({"RANK": "0", "WORLD_SIZE": "2"}, (0, 2, None, None, None, "RANK/WORLD_SIZE environment")),
    ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}, (5, 16, 1, None, None, "Open MPI")),
    ({"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "2"}, (2, 4, 2, None, None, "MPICH/Intel MPI (PMI)")),
    ({"SLURM_PROCID": "7", "SLURM_NTASKS": "8", "SLURM_LOCALID": "3", "SLURM_NODEID": "1"}, (7, 8, 3, None, 1, "Slurm")),
    # torchrun inside a Slurm allocation: the process is torchrun's rank, not Slurm's task
    ({"RANK": "1", "WORLD_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, (1, 4, None, None, None, "RANK/WORLD_SIZE environment")),
])
def test_rank_detected_from_the_launchers_variables(env: dict[str, str], expected: tuple[object, ...]) -> None:
    info = detect_rank(env)
    assert info is not None
    assert (info.rank, info.world_size, info.local_rank, info.local_world_size, info.node_rank, info.launcher) == expected


@pytest.mark.parametrize("env", [{}, {"RANK": "0", "WORLD_SIZE": "1"}, {"SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
                                 {"RANK": "4", "WORLD_SIZE": "2"}, {"RANK": "x", "WORLD_SIZE": "2"}])
def test_no_rank_outside_a_job_of_two_or_more(env: dict[str, str]) -> None:
    assert detect_rank(env) is None


def test_rank_trace_names_sort_and_are_stable() -> None:
    info = RankInfo(7, 64, 7, 8, 0, "torchrun", "h")
    assert rank_tag(7, 64) == "rank07" and rank_tag(7, 8) == "rank7" and rank_tag(120, 512) == "rank120"
    assert rank_trace_path(Path("out/train.gmtrace"), info) == Path("out/train.rank07.gmtrace")
    assert rank_trace_path(Path("out/train.rank07.gmtrace"), info) == Path("out/train.rank07.gmtrace")  # idempotent
    assert rank_trace_path(Path("run"), info) == Path("run.rank07.gmtrace")
    assert rank_trace_path(Path("train.gmtrace"), None) == Path("train.gmtrace") or detect_rank() is not None


def test_script_tracer_writes_the_rank_file_under_a_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmode.tracer.script import ScriptTracer

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert ScriptTracer("x/train.gmtrace").out == Path("x/train.rank1.gmtrace")  # no GPU needed to choose the name


def test_rank_gpu_is_the_device_with_the_most_spans(tmp_path: Path) -> None:
    (path,) = job(tmp_path, [RankPlan(0, 1)])  # synthetic: every span on device 0
    with load(path) as t:
        meta = rank_meta_at_stop(t)
    assert meta["rank"]["gpu"]["index"] == 0 and meta["rank"]["gpu"]["spans"] == 11  # 2 eager + 3 replays x 3 nodes
    assert meta["rank"]["gpu"]["uuid"] == "GPU-synthetic-hostA-0"


def test_run_tells_each_rank_where_its_trace_went_and_rank_0_how_to_report() -> None:
    note0 = rank_run_note(Path("out/train.rank0.gmtrace"), 0, 2)
    assert "rank 0 of 2" in note0 and "graphmode report 'out/train.rank*.gmtrace'" in note0
    assert "graphmode report" not in rank_run_note(Path("out/train.rank1.gmtrace"), 1, 2)


# ---- naming a rank set ----------------------------------------------------------------------------------

def test_rank_sets_are_named_by_folder_glob_files_or_the_out_name(tmp_path: Path) -> None:
    paths = _two_ranks(tmp_path / "run")
    assert rank_set_paths([paths[0]]) is None  # one existing file: an ordinary trace
    assert rank_set_paths([tmp_path / "run"]) == paths
    assert rank_set_paths([tmp_path / "run" / "train.rank*.gmtrace"]) == paths
    assert rank_set_paths(paths) == paths  # what the shell passes for an unquoted glob
    assert rank_set_paths([tmp_path / "run" / "train.gmtrace"]) == paths  # the --out the job was run with
    assert rank_set_paths([*paths, tmp_path / "run" / "train.rank*.gmtrace"]) == paths  # named twice, counted once
    (tmp_path / "empty").mkdir()
    with pytest.raises(RankSetError, match="without \\*.gmtrace"):
        rank_set_paths([tmp_path / "empty"])
    with pytest.raises(RankSetError, match="matches no file"):
        rank_set_paths([tmp_path / "run" / "nothing*.gmtrace"])
    with pytest.raises(RankSetError, match="no such file"):
        rank_set_paths([tmp_path / "absent.gmtrace"])


# ---- what NCCL kernel names say -------------------------------------------------------------------------

def test_nccl_kernel_names_parsed_mangled_plain_old_and_generic() -> None:
    assert kernel_base(AR) == AR_BASE
    k = parse_nccl_kernel(AR)
    assert (k.op, k.reduction, k.dtype, k.algorithm, k.protocol) == ("AllReduce", "Sum", "f32", "RING", "LL")
    k = parse_nccl_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_NVLS_TREE_SIMPLE(ncclDevKernelArgsStorage<4096ul>)")
    assert (k.op, k.reduction, k.dtype, k.algorithm, k.protocol) == ("ReduceScatter", "Sum", "bf16", "NVLS_TREE", "SIMPLE")
    k = parse_nccl_kernel("ncclDevKernel_AllGather_RING_LL128")
    assert (k.op, k.reduction, k.dtype, k.algorithm, k.protocol) == ("AllGather", "", "", "RING", "LL128")
    k = parse_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)")  # NCCL before 2.19
    assert (k.op, k.reduction, k.dtype, k.algorithm, k.protocol) == ("AllReduce", "Sum", "float", "RING", "LL")
    assert parse_nccl_kernel("ncclDevKernel_Generic_4").title == "NCCL generic kernel (operation not in its name)"


# ---- the analysis across ranks --------------------------------------------------------------------------

def test_waits_straggler_and_alignment_on_one_host(tmp_path: Path) -> None:
    a = analyze_ranks(_two_ranks(tmp_path, end_shift={1: 300}))
    assert [s.identity.rank for s in a.ranks] == [0, 1] and a.world_size == 2 and a.missing_ranks == ()
    al = a.alignment
    assert al.method == "one host" and [o.offset_ns for o in al.offsets] == [0.0, 0.0]
    # 5 collectives on both ranks: 2 eager + 1 per replay. Ends agree except replay 1's (+300 on rank 1).
    assert al.anchors == 5
    assert al.residual is not None and (al.residual.median, al.residual.max) == (0.0, 300.0)
    assert al.clock_check_ns == 151.0  # largest |CUPTI - CLOCK_REALTIME| in the metas: 150 and 151
    waits = {w.rank: w for w in a.waits}
    # rank 0 waits for rank 1: 500 in each eager all-reduce, 2_000 in each replay's: 2*500 + 3*2_000 = 7_000
    assert waits[0].wait_total_ns == 7_000.0 and waits[0].wait is not None and waits[0].wait.median == 2_000.0
    assert waits[1].wait_total_ns == 0.0 and waits[1].last_arrivals == 5 and waits[0].last_arrivals == 0
    # GPU time of rank 0's collective kernels: eager (5_000-1_100) + (9_000-6_100) = 6_800, replays 3 * 2_300
    # + 300 (replay 1 ends 300 later on rank 1 only: not rank 0's) = 6_900 -> 13_700
    assert waits[0].gpu_total_ns == 13_700.0
    assert a.straggler is not None and a.straggler.rank == 1 and a.straggler.last_arrivals == 5
    # lateness = its start minus the median start (the lower of two, quantile_disc): 500, 500, 2_000 x 3 -> 2_000
    assert a.straggler.median_lateness_ns == 2_000.0
    graph, eager = a.collectives
    assert (graph.where, graph.graph_key, graph.op, graph.in_topology) == ("graph", "graph #1", "AllReduce", 1)
    assert graph.calls is not None and graph.calls.median == 3.0 and eager.calls is not None and eager.calls.median == 2.0
    assert graph.end_skew is not None and graph.end_skew.max == 300.0 and graph.size_bytes is None
    assert a.hang_risks == ()


def test_one_graph_per_rank_with_its_one_time_cost(tmp_path: Path) -> None:
    a = analyze_ranks(_two_ranks(tmp_path))
    assert [(g.rank, g.key, g.site, g.replays, g.collectives) for g in a.graphs] == [
        (0, "graph #1", "train.py:42 <module>", 3, 1), (1, "graph #1", "train.py:42 <module>", 3, 1)]
    # one-time = capture 1_000 + instantiate 1_000 + upload 500 (no first-launch marker in a script trace)
    assert [g.one_time_ns for g in a.graphs] == [2_500.0, 2_500.0]
    (across,) = a.graphs_across
    assert across.ranks == 2 and across.one_time is not None and across.one_time.median == 2_500.0 and across.collectives == 1


def test_hosts_aligned_on_collective_ends(tmp_path: Path) -> None:
    # rank 2 on hostB, whose clock runs 1 ms ahead: its timestamps are the true times + 1_000_000
    paths = job(tmp_path, [RankPlan(0, 3), RankPlan(1, 3, eager_late=500, graph_late=2_000),
                           RankPlan(2, 3, host="hostB", clock_offset=1_000_000)])
    a = analyze_ranks(paths)
    al = a.alignment
    assert al.method == "collective ends" and al.hosts == ("hostA", "hostB") and al.reference_host == "hostA"
    assert {o.rank: o.offset_ns for o in al.offsets} == {0: 0.0, 1: 0.0, 2: -1_000_000.0}
    assert al.anchors == 5 and al.residual is not None and al.residual.max == 0.0
    waits = {w.rank: w for w in a.waits}
    assert waits[2].wait_total_ns == 7_000.0  # after alignment rank 2 waits for rank 1 exactly as rank 0 does


def test_capture_on_one_rank_and_eager_on_another_is_a_hang_risk(tmp_path: Path) -> None:
    a = analyze_ranks(_two_ranks(tmp_path, captures=False))
    kinds = {h.kind: h for h in a.hang_risks}
    # program order: rank 0 = eager, eager, captured (graph #1); rank 1 = eager x 2 then eager x 3 (its replays)
    risk = kinds["capture_mismatch"]
    assert (risk.position, risk.captured_ranks, risk.eager_ranks) == (2, (0,), (1,))
    assert "AllReduce Sum f32 RING/LL" in risk.op and (risk.facts["captured"], risk.facts["eager"]) == ((0,), (1,))
    assert "captured it into a graph" in word(risk.facts)
    calls = kinds["call_count_mismatch"].facts
    assert (calls["ranks"], calls["calls"]) == ((0, 1), (3, 5)) and "rank 0: 3, rank 1: 5" in word(calls)
    assert not [w for w in a.warnings if w.kind == "collective_counts_differ"]  # different calls: a hang risk, not lost records


def test_replays_of_a_graph_with_collectives_must_agree(tmp_path: Path) -> None:
    a = analyze_ranks(_two_ranks(tmp_path, replays=2))
    (risk,) = [h for h in a.hang_risks if h.kind == "replay_count_mismatch"]
    assert risk.op == "graph #1" and (risk.facts["ranks"], risk.facts["replays"]) == ((0, 1), (3, 2))
    assert "rank 0: 3, rank 1: 2" in word(risk.facts)


def test_one_job_only(tmp_path: Path) -> None:
    a = job(tmp_path / "a", [RankPlan(0, 2), RankPlan(1, 2)])
    b = job(tmp_path / "b", [RankPlan(0, 4)])
    with pytest.raises(RankSetError, match="rank 0 has two traces"):
        analyze_ranks([*a, *b])
    c = job(tmp_path / "c", [RankPlan(2, 4)])
    with pytest.raises(RankSetError, match="different jobs: world size 2"):
        analyze_ranks([*a, *c])


def test_traces_that_are_not_one_jobs_ranks_are_refused_saying_what_differs(tmp_path: Path) -> None:
    import duckdb

    mixed = job(tmp_path / "mixed", [RankPlan(0, 2), RankPlan(1, 2, with_rank_meta=False)])
    with pytest.raises(RankSetError, match=r"train.rank1.gmtrace carries no rank \(recorded outside a launcher\) but "
                                           r"train.rank0.gmtrace is rank 0 of a 2-process job: they are not the ranks of one job"):
        analyze_ranks(mixed)
    launched = job(tmp_path / "launched", [RankPlan(0, 2), RankPlan(1, 2)])
    with duckdb.connect(str(launched[1])) as con:  # rank 1 says Slurm started it
        (rank,) = con.execute("SELECT value FROM meta WHERE key = 'rank'").fetchone()
        con.execute("UPDATE meta SET value = ? WHERE key = 'rank'", [json.dumps({**json.loads(rank), "launcher": "Slurm"})])
    with pytest.raises(RankSetError, match=r"traces of different jobs: launcher torchrun \(.*train.rank0.gmtrace\) and Slurm"):
        analyze_ranks(launched)
    other = job(tmp_path / "other", [RankPlan(1, 2)], stem="eval")
    with duckdb.connect(str(other[0])) as con:  # rank 1 of a job of another script
        con.execute("UPDATE meta SET value = ? WHERE key = 'script'", [json.dumps({"path": "eval.py", "argv": ["eval.py"]})])
    with pytest.raises(RankSetError, match=r"these 2 traces are not the ranks of one job: they ran 2 different programs, "
                                           r"train.py \(train.rank0.gmtrace\), eval.py \(eval.rank1.gmtrace\); "
                                           r"pass the traces of one job, or one trace file at a time"):
        analyze_ranks([mixed[0], other[0]])


def test_missing_ranks_and_traces_without_rank_metadata(tmp_path: Path) -> None:
    a = analyze_ranks(job(tmp_path / "a", [RankPlan(0, 4), RankPlan(2, 4)]))
    assert a.missing_ranks == (1, 3) and note("ranks_missing", ranks=(1, 3), missing=2, world_size=4) in a.warnings
    assert "ranks 1, 3 of 4 have no trace" in words(a.warnings)[0]
    b = analyze_ranks(job(tmp_path / "b", [RankPlan(0, 2, with_rank_meta=False), RankPlan(1, 2, with_rank_meta=False, graph_late=2_000)]))
    assert [s.identity.rank for s in b.ranks] == [0, 1] and all(s.identity.numbered_by_order for s in b.ranks)
    assert b.straggler is not None and b.straggler.rank == 1  # the renumbered ranks keep their collectives
    assert any(w.kind == "ranks_numbered" and w["ranks"] == (0, 1) for w in b.warnings)


def test_two_ranks_on_one_gpu_are_flagged(tmp_path: Path) -> None:
    a = analyze_ranks(job(tmp_path, [RankPlan(0, 2, gpu_uuid="GPU-same"), RankPlan(1, 2, gpu_uuid="GPU-same")]))
    assert any(w.kind == "ranks_share_gpu" and (w["ranks"], w["gpu_uuid"]) == ((0, 1), "GPU-same") for w in a.warnings)
    assert any("ranks 0, 1 ran on the same GPU (GPU-same" in w for w in words(a.warnings))


# ---- reports ---------------------------------------------------------------------------------------------

def test_terminal_and_json_reports(tmp_path: Path) -> None:
    a = analyze_ranks(job(tmp_path, [RankPlan(0, 2, host="[/x] host"), RankPlan(1, 2, host="[/x] host", graph_late=2_000)]))
    console = Console(width=200, record=True, no_color=True)
    print_ranks_report(a, console)
    text = console.export_text()
    assert "[/x] host" in text  # trace strings are not read as rich markup
    # rank 1 is late only in the replays' all-reduce: the eager ones start together (a tie is nobody's lateness)
    assert "Straggler: rank 1 started last in 3 of 5 collectives" in text
    assert "AllReduce Sum f32 RING/LL" in text and "in graph #1" in text
    doc = ranks_report_dict(a)
    jsonschema.validate(doc, load_ranks_schema())
    assert doc["kind"] == "graphmode-ranks" and doc["straggler"]["rank"] == 1
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc


def test_exports_put_every_rank_on_the_jobs_timeline(tmp_path: Path) -> None:
    paths = job(tmp_path / "job", [RankPlan(0, 2), RankPlan(1, 2, host="hostB", clock_offset=1_000_000)])
    a = analyze_ranks(paths)
    n = export_ranks_perfetto(a, tmp_path / "p.json")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert n == len(doc["traceEvents"])
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[1].startswith("rank 0 · hostA") and names[2].startswith("rank 1 · hostB")
    ar_end = {e["pid"]: round(e["ts"] + e["dur"], 3) for e in doc["traceEvents"]
              if e["ph"] == "X" and e["name"] == AR and e["cat"] == "kernel" and e["args"]["graph_id"] == 1}
    assert ar_end[1] == ar_end[2]  # the last replay's all-reduce ends at the same aligned moment (dict keeps the last)
    files = export_ranks_parquet(a, tmp_path / "pq")
    assert (tmp_path / "pq" / "gpu_spans" / "rank=1" / "data.parquet") in files
    con = duckdb.connect()
    rows = con.execute(f"""SELECT rank, max(end_ns) FROM read_parquet('{tmp_path}/pq/gpu_spans/*/*.parquet', hive_partitioning = true)
                           WHERE graph_id = 1 GROUP BY rank ORDER BY rank""").fetchall()
    assert rows[0][1] == rows[1][1] == 43_600  # K2 of replay 2 ends at 40_000 + 3_600 on both, aligned
    offsets = con.execute(f"SELECT rank, offset_ns FROM '{tmp_path}/pq/ranks.parquet' ORDER BY rank").fetchall()
    assert offsets == [(0, 0), (1, -1_000_000)]


def test_cli_report_view_export_on_a_rank_set(tmp_path: Path) -> None:
    paths = _two_ranks(tmp_path)
    env_cmd = [sys.executable, "-m", "graphmode"]
    p = subprocess.run([*env_cmd, "report", *map(str, paths)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "2 ranks of 2 on 1 host" in p.stdout.replace("\n", " ")
    p = subprocess.run([*env_cmd, "report", str(tmp_path / "train.gmtrace"), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and json.loads(p.stdout)["world_size"] == 2
    p = subprocess.run([*env_cmd, "view", str(tmp_path), "-o", str(paths[0])], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and "is one of the rank traces" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([*env_cmd, "view", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and (tmp_path / "train.ranks.html").exists()
    p = subprocess.run([*env_cmd, "export", str(tmp_path), "-f", "perfetto"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and (tmp_path / "train.ranks.perfetto.json").exists()
    p = subprocess.run([*env_cmd, "report", str(tmp_path / "nothing*.gmtrace")], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and "matches no file" in p.stderr


@pytest.mark.skipif(__import__("browser").find_chromium() is None, reason="no Chromium (Debian: apt-get install chromium)")
def test_ranks_page_draws_in_a_real_browser_and_escapes_trace_strings(tmp_path: Path) -> None:
    from browser import Chromium
    from graphmode.views import write_ranks_page

    hostile = "<img src=x onerror=alert(1)>"
    paths = job(tmp_path, [RankPlan(0, 2, host=hostile), RankPlan(1, 2, host="hostB", clock_offset=1_000_000, graph_late=2_000)])
    summary = write_ranks_page(analyze_ranks(paths), tmp_path / "job.html")
    assert summary.ranks_drawn == 2 and summary.note == ""
    with Chromium() as b:
        state = b.open(tmp_path / "job.html")
        assert b.errors == [] and b.dialogs == []
        assert state["plots"] == ["gm-heat", "gm-timeline", "gm-replay"]
        # one replay of each rank: the all-reduce bars of both ranks end at the same x (aligned clocks)
        ends = b.evaluate("""(() => { const tl = document.getElementById('gm-replay').gmTimeline, s = tl.spec;
            const g = s.hover.groups.findIndex((x) => x.label === 'NCCL collective'), out = {};
            for (let L = 0; L < s.lanes.length; L++)
              for (let i = s.lane_bounds[L]; i < s.lane_bounds[L + 1]; i++) if (tl.d.group[i] === g) out[L] = tl.d.end[i];
            return out; })()""")
        assert len(ends) == 2 and len(set(ends.values())) == 1
        assert b.evaluate("document.querySelectorAll('img').length") == 0  # the host name stayed text


def test_rank_meta_never_stops_a_run_without_a_gpu() -> None:
    from graphmode.tracer.ranks import rank_meta

    meta = rank_meta(RankInfo(1, 2, 1, 2, 0, "torchrun", "h"))["rank"]
    assert (meta["rank"], meta["world_size"], meta["local_rank"], meta["hostname"]) == (1, 2, 1, "h")
    assert isinstance(meta["devices"], list) and "clock" in meta  # a reading or the reason there is none
    assert rank_meta(None) == {} or detect_rank() is not None


def _two_run_job(folder: Path) -> list[Path]:
    """`graphmode run` traces (measuring run, then detail run): rank 1 is late in the detail run as in `_two_ranks`;
    in the measuring run rank 0 starts its eager all-reduces 2_000 ns late instead (another run, another straggler)."""
    return job(folder, [RankPlan(0, 2, two_runs=True, measure_late=2_000),
                        RankPlan(1, 2, eager_late=500, graph_late=2_000, two_runs=True)])


def test_two_run_traces_collectives_from_the_detail_run_graph_figures_from_per_graph_results(tmp_path: Path) -> None:
    from graphmode.analyzers import analyze
    from synthetic_ranks import DETAIL_AT

    paths = _two_run_job(tmp_path)
    a = analyze_ranks(paths)
    # collectives, waits, straggler and alignment: the detail run's (pass 1), the same figures as the one-run job of
    # test_waits_straggler_and_alignment_on_one_host. Were the measuring run read, rank 0 would be last in its 2 eager
    # all-reduces and the in-graph all-reduce (one 'graph' span per replay there) would not be seen.
    assert [(s.pass_id, s.run, s.collective_calls) for s in a.ranks] == [(1, "detail", 5), (1, "detail", 5)]
    # the detail run's extent: its first record is the eager launch at 1_000, its last the sync ending at 40_000 + 3_700
    assert (a.ranks[0].start_ns, a.ranks[0].end_ns) == (DETAIL_AT + 1_000, DETAIL_AT + 43_700)
    assert a.straggler is not None and (a.straggler.rank, a.straggler.last_arrivals) == (1, 5)
    assert a.alignment.anchors == 5 and {w.rank: w.wait_total_ns for w in a.waits} == {0: 7_000.0, 1: 0.0}
    assert a.hang_risks == () and a.warnings == ()
    # per graph: the rank's per-graph results, keyed by the detail run's graph id (1, not the executable id 1001 the
    # measuring run's records carry), timed by the measuring run: one-time cost = its capture 800 + instantiate 600 +
    # upload 300 = 1_700 (the detail run's calls add up to 2_500), replays 10_000 apart; the all-reduce node from the
    # detail run's topology
    assert [(g.rank, g.key, g.graph_id, g.replays, g.one_time_ns, g.replay_ns, g.collectives, g.source) for g in a.graphs] == [
        (r, "graph #1", 1, 3, 1_700.0, 10_000.0, 1, "per-graph results") for r in (0, 1)]
    with load(paths[0]) as t:
        (result,) = analyze(t).graphs
    assert result.cost is not None and result.cost.total_ns == a.graphs[0].one_time_ns and result.graph is not None
    assert result.graph.run == "measure"
    jsonschema.validate(ranks_report_dict(a), load_ranks_schema())
    console = Console(width=200, record=True, no_color=True)
    print_ranks_report(a, console)
    assert "Collectives, waits, clocks and timelines: each rank's detail run" in console.export_text().replace("\n", " ")
    # the Perfetto export draws the detail run: 2 + 3 all-reduces per rank
    export_ranks_perfetto(a, tmp_path / "p.json")
    events = json.loads((tmp_path / "p.json").read_text())["traceEvents"]
    assert sum(1 for e in events if e["ph"] == "X" and e["name"] == AR) == 10


def test_a_rank_with_only_its_measuring_run_is_said(tmp_path: Path) -> None:
    paths = _two_run_job(tmp_path)
    with duckdb.connect(str(paths[1])) as con:  # rank 1's detail run is gone (as if it had failed to start)
        for table in ("api_calls", "gpu_spans", "graph_events", "graphs", "graph_nodes", "graph_edges", "passes"):
            con.execute(f"DELETE FROM {table} WHERE pass_id = 1")
    a = analyze_ranks(paths)
    assert [(s.pass_id, s.run) for s in a.ranks] == [(1, "detail"), (0, "measure")]
    # rank 1's measuring run shows its 2 eager all-reduces (kernels without launch calls), not the in-graph ones
    assert [s.collective_calls for s in a.ranks] == [5, 2]
    assert note("ranks_measuring_run_only", ranks=(1,)) in a.cannot_compute
    assert any(c.startswith("rank(s) 1 hold only the measuring run") for c in words(a.cannot_compute))


def test_collectives_missing_on_one_rank_are_said(tmp_path: Path) -> None:
    # rank 1's all-reduce of replay 1 ends before it starts (as the merge benchmark once generated): the reader leaves
    # the row out, so rank 1 has 2 in-graph all-reduces to rank 0's 3 and its third is matched with rank 0's second
    paths = _two_ranks(tmp_path)
    with duckdb.connect(str(paths[1])) as con:
        con.execute(f"UPDATE gpu_spans SET end_ns = start_ns - 1 WHERE name = '{AR}' AND graph_id = 1 AND start_ns = 30_000 + 2_700")
    a = analyze_ranks(paths)
    (n,) = [w for w in a.warnings if w.kind == "collective_counts_differ"]
    assert (n["graph"], n["most"], n["short_ranks"], n["short_counts"], n["lossy_ranks"]) == ("graph #1", 3, (1,), (2,), (1,))
    w = word(n)
    assert w.startswith("AllReduce Sum f32 RING/LL (in graph #1): recorded 3 times on some ranks but fewer on others (rank 1: 2)")
    assert "rank(s) 1 lost records" in w
    assert any(x.kind == "reading_note" and "left out" in str(x["text"]) for x in a.rank(1).warnings)  # type: ignore[union-attr]


def test_a_damaged_rank_file_is_left_out_and_said(tmp_path: Path) -> None:
    paths = job(tmp_path, [RankPlan(0, 3), RankPlan(1, 3), RankPlan(2, 3)])
    paths[1].write_bytes(paths[1].read_bytes()[:5000])  # truncated, as by a full disk
    a = analyze_ranks(paths)
    assert [s.identity.rank for s in a.ranks] == [0, 2] and a.missing_ranks == (1,)
    assert any(w.kind == "trace_left_out" and "train.rank1.gmtrace" in str(w["error"]) for w in a.warnings)
    assert any(w.startswith("left out: ") and "train.rank1.gmtrace" in w for w in words(a.warnings))


def test_the_merge_benchmark_recovers_the_injected_clock_offsets(tmp_path: Path) -> None:
    # benchmarks/ranks_merge.py on 4 small SYNTHETIC ranks (2 hosts): the numbers in docs/benchmarks.md come from it
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ranks_merge.py"), "--ranks", "4", "--hosts", "2",
                           "--repeat", "1", "--keep", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout[proc.stdout.index("{\n"):])
    assert result["offset_error_max_ns"] <= 50  # the injected +-300 ns jitter averages out in the median over 200 collectives
    assert result["4_ranks"]["anchors"] == 200 and result["4_ranks"]["peak_rss_mib"] > 0
    assert all(p.name.startswith("synthetic.") for p in tmp_path.glob("*.gmtrace"))


def test_the_schema_names_every_field_of_the_results() -> None:
    # reports/ranks.schema.json follows analyzers/rank_results.py field by field: a field added to one must be added
    # to the other (additionalProperties is false, so a report with an unknown field fails validation)
    import dataclasses

    from graphmode.analyzers import rank_results

    schema = load_ranks_schema()
    for name, cls in vars(rank_results).items():
        if dataclasses.is_dataclass(cls) and cls.__module__ == rank_results.__name__ and name != "RankSetAnalysis":
            assert schema["$defs"][name]["required"] == [f.name for f in dataclasses.fields(cls)], name
    top = [f.name for f in dataclasses.fields(rank_results.RankSetAnalysis)]
    assert schema["required"] == ["schema_version", "kind", "tool_version", "units", *top]
