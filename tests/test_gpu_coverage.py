"""Issue-10 tracer pieces on a real GPU (marker `gpu`): PyTorch hooks, graph memory samples, and the
cross-check of the recorded fixtures against the programs' own numbers.

Run by tests/data/record_coverage.sh after it recorded tests/data/coverage/ (GRAPHMODE_COVERAGE_LOGS
names the folder with the programs' output; the cross-check writes crosscheck.md there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from graphmode.reports.notes import word

from tests.conftest import DATA, ROOT, needs_module

pytestmark = pytest.mark.gpu
COVERAGE = DATA / "coverage"


needs_torch = needs_module("torch", "PyTorch")


@needs_torch
def test_capture_hooks_sample_the_shared_pool_and_match_the_allocator() -> None:
    from graphmode.tracer.graph_memory import GraphMemorySampler
    from graphmode.tracer.torch_hooks import TorchHooks

    import torch
    from torch.cuda.graphs import CUDAGraph

    original = CUDAGraph.__dict__["capture_begin"]
    sampler = GraphMemorySampler(time.perf_counter_ns)
    hooks = TorchHooks(sampler, clock=time.perf_counter_ns).install()
    assert CUDAGraph.__dict__["capture_begin"] is not original
    x = torch.ones(1 << 20, device="cuda")  # 4 MiB
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _ = x * 2
    torch.cuda.current_stream().wait_stream(side)
    def outside_pools() -> int:  # bytes of the allocator's default pool
        return sum(int(seg["total_size"]) for seg in torch.cuda.memory_snapshot()
                   if tuple(seg.get("segment_pool_id", (0, 0))) == (0, 0))

    reserved = []
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    for g, pool in ((g1, None), (g2, "shared")):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before, before_outside = torch.cuda.memory_reserved(), outside_pools()
        with torch.cuda.graph(g, pool=g1.pool() if pool else None):
            _y = x * 2 + 1  # noqa: F841  (an output kept alive in the pool)
        # All that was reserved meanwhile, less what went to the default pool: PyTorch 2.11 on the H200 took a
        # 2 MiB small-block segment of the default pool on the capture stream during the first capture.
        reserved.append(torch.cuda.memory_reserved() - before - (outside_pools() - before_outside))
    meta = hooks.uninstall()
    assert CUDAGraph.__dict__["capture_begin"] is original  # removed again
    cols = sampler.columns()
    ends = [i for i, e in enumerate(cols["event"]) if e == "torch_capture_end"]
    begins = [i for i, e in enumerate(cols["event"]) if e == "torch_capture_begin"]
    assert len(ends) == len(begins) == 2 and meta["captures"] == 2
    pool = str(tuple(int(v) for v in g1.pool()))
    assert [cols["pool"][i] for i in ends] == [pool, pool]
    assert cols["pool"][begins[1]] == pool and cols["pool"][begins[0]] == ""  # the second capture was handed the pool
    # the pool's growth over each capture is what the caching allocator reserved meanwhile (an independent count)
    growth = [cols["pool_reserved_bytes"][ends[0]],
              cols["pool_reserved_bytes"][ends[1]] - cols["pool_reserved_bytes"][begins[1]]]
    assert growth == reserved and growth[0] > 0
    assert all(cols["free_bytes"][i] > 0 for i in ends)
    assert meta["pools_end"][pool][0] >= cols["pool_reserved_bytes"][ends[1]]


_PROGRAM = textwrap.dedent('''
    import json, os, sys, time
    hooks = None
    if os.environ.get("WITH_HOOKS") == "1":
        from graphmode.tracer.torch_hooks import TorchHooks
        hooks = TorchHooks(None, clock=time.perf_counter_ns).install()
    import torch

    @torch.compile(mode="reduce-overhead")
    def graphed(x):
        return torch.relu(x) * 2

    @torch.compile(mode="reduce-overhead")
    def mutates(buf, x):
        buf.add_(x)
        return buf * 2

    x, buf = torch.randn(64, device="cuda"), torch.zeros(64, device="cuda")
    for _ in range(4):
        graphed(x)
        mutates(buf, x)
    torch.cuda.synchronize()
    if hooks is not None:
        print("EVENTS " + json.dumps(hooks.uninstall()["events"]))
''')


def _run_program(tmp: Path, with_hooks: bool) -> subprocess.CompletedProcess[str]:
    script = tmp / "program.py"
    script.write_text(_PROGRAM)
    env = {**os.environ, "WITH_HOOKS": "1" if with_hooks else "0",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, str(script)], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


@needs_torch
def test_pytorch_log_is_heard_without_changing_what_it_prints(tmp_path: Path) -> None:
    plain, hooked = _run_program(tmp_path, False), _run_program(tmp_path, True)
    assert plain.returncode == 0 and hooked.returncode == 0, plain.stderr[-2000:] + hooked.stderr[-2000:]

    def cudagraph_lines(err: str) -> list[str]:  # PyTorch's own lines, without the time stamp and pid prefix
        return [line.split("] ", 1)[-1] for line in err.splitlines() if "[__cudagraphs]" in line]

    assert cudagraph_lines(hooked.stderr) == cudagraph_lines(plain.stderr)
    assert sum("skipping cudagraphs due to mutated inputs" in line for line in cudagraph_lines(plain.stderr)) == 1
    events = json.loads(next(line for line in hooked.stdout.splitlines() if line.startswith("EVENTS "))[7:])
    messages = [m for k, m in zip(events["kind"], events["message"]) if k == "log"]
    assert sum(m.startswith("skipping cudagraphs due to mutated inputs") for m in messages) == 1
    assert any("Recording function=" in m for m in messages)  # a debug record: heard, not printed
    assert not any("Recording function=" in line for line in hooked.stderr.splitlines())
    assert "start_dynamo" in events["kind"] and "capture_end" in events["kind"]


# -- cross-check of the recordings against the programs' own numbers ----------------------------------

def _check(logs: Path, name: str) -> dict[str, Any]:
    for line in (logs / f"{name}.log").read_text().splitlines():
        if line.startswith("check: "):
            out: dict[str, Any] = json.loads(line[7:])
            return out
    raise AssertionError(f"{name}.log has no `check:` line")


def test_crosscheck_against_the_programs_own_counts() -> None:
    logs = Path(os.environ.get("GRAPHMODE_COVERAGE_LOGS", ""))
    if not os.environ.get("GRAPHMODE_COVERAGE_LOGS") or not (logs / "graph_per_batch_size.log").exists():
        pytest.skip("run by tests/data/record_coverage.sh, which sets GRAPHMODE_COVERAGE_LOGS")
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    rows = ["| recording | figure | graphmode | the program / PyTorch |", "|---|---|---|---|"]
    if (COVERAGE / "torch_compile_skips.gmtrace").exists():  # record_coverage.sh keeps it only if the program ran
        a = analyze(load(COVERAGE / "torch_compile_skips.gmtrace"))
        calls = _check(logs, "torch_compile_skips")["calls"]
        assert a.coverage is not None and a.torch_graphs is not None
        rows.append(f"| torch_compile_skips | graph launches of mlp and shift | {a.coverage.run.graph_launch_calls} | "
                    f"{calls['mlp']} + {calls['shift']} calls - {a.torch_graphs.warmups} warm-ups |")
        assert a.torch_graphs.warmups == 2  # one warm-up call each of mlp and shift
        assert a.coverage.run.graph_launch_calls == calls["mlp"] + calls["shift"] - a.torch_graphs.warmups
        skips = dict(a.torch_graphs.counters).get("cudagraph_skips")
        rows.append(f"| torch_compile_skips | skips | {sum(s.count for s in a.torch_graphs.skips)} logged | "
                    f"counters['inductor']['cudagraph_skips'] = {skips} |")
    else:
        rows.append("| torch_compile_skips | — | not recorded | the program did not run to its end (see its log) |")

    a = analyze(load(COVERAGE / "torch_compile_shapes.gmtrace"))
    per_size = _check(logs, "torch_compile_shapes")["calls_per_batch_size"]
    assert a.coverage is not None and a.torch_graphs is not None
    expected = sum(per_size.values()) - a.torch_graphs.warmups
    rows.append(f"| torch_compile_shapes | graph launches | {a.coverage.run.graph_launch_calls} | "
                f"{sum(per_size.values())} calls - {a.torch_graphs.warmups} warm-ups = {expected} |")
    assert a.coverage.run.graph_launch_calls == expected

    a = analyze(load(COVERAGE / "graph_per_batch_size.gmtrace"))
    check = _check(logs, "graph_per_batch_size")
    assert a.graph_budget is not None
    by_capture = sorted(a.graph_budget.rows, key=lambda r: r.graph_id)  # captured largest batch first
    sizes = sorted((int(k) for k in check["reserved_around_capture"]), reverse=True)
    for bs, r in zip(sizes, by_capture):
        before, after = check["reserved_around_capture"][str(bs)]
        pool_before, pool_after = check["pool_around_capture"][str(bs)]
        rows.append(f"| graph_per_batch_size | batch {bs}: replays; pool growth; free-memory drop | {r.replays}; "
                    f"{r.pool_bytes}; {r.device_bytes} | {check['replays'][str(bs)]}; the pool's segments grew "
                    f"{pool_after - pool_before}; memory_reserved() grew {after - before} |")
        assert r.replays == check["replays"][str(bs)]
        assert r.pool_bytes == pool_after - pool_before
        # reserved memory also counts what the capture took from the default pool (2 MiB on the H200, PyTorch 2.11)
        assert 0 <= (after - before) - r.pool_bytes <= 4 << 20
    rows.append(f"| graph_per_batch_size | graph memory in all | {a.graph_budget.total_bytes} | "
                f"peak reserved {check['reserved_peak_bytes']} |")
    for note in a.graph_budget.notes:
        rows.append(f"| graph_per_batch_size | note | {word(note)} | |")

    a = analyze(load(COVERAGE / "jax_jit.gmtrace"))
    jax_check = _check(logs, "jax_jit")
    assert a.coverage is not None
    rows.append(f"| jax_jit | graph launches; graphs | {a.coverage.run.graph_launch_calls}; {a.coverage.run.graphs_launched} | "
                f"{jax_check['jitted_calls']} jitted calls (jax {jax_check['jax']}) |")
    (logs / "crosscheck.md").write_text("\n".join(rows) + "\n")
