"""Two-rank jobs under `torchrun ... -m graphmode run` on two real GPUs (marker `gpu`; needs PyTorch with NCCL).

Each test runs an example of examples/ranks_*.py on 2 GPUs of this host, then checks the job's
analysis with tests/ranks_checks.py (the same checks as the committed recordings).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmode.analyzers.ranks import analyze_ranks
from graphmode.tracer.rankset import rank_set_paths
from ranks_checks import check_allreduce_job, check_ddp_job
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu


def _two_gpus() -> str | None:
    try:
        import torch
    except Exception:
        return "PyTorch is not installed"
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        return "PyTorch has no NCCL backend"
    if torch.cuda.device_count() < 2:
        return f"needs 2 GPUs, this machine has {torch.cuda.device_count()}"
    return None


needs_two_gpus = pytest.mark.skipif(_two_gpus() is not None, reason=str(_two_gpus()))


def _torchrun(tmp: Path, stem: str, example: str, *args: str) -> list[Path]:
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "graphmode", "run", "--no-profile", "--detail", "node", "--out", str(tmp / f"{stem}.gmtrace"),
                           str(ROOT / "examples" / example), *args],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    assert proc.stdout.count(": ok:") == 2  # both ranks' own checks passed (one run per rank: --runs auto for a job)
    assert "when every rank has finished, report the job with" in proc.stderr
    paths = rank_set_paths([tmp / f"{stem}.gmtrace"])  # the --out name finds the ranks' files
    assert paths is not None and [p.name for p in paths] == [f"{stem}.rank0.gmtrace", f"{stem}.rank1.gmtrace"]
    return paths


@needs_two_gpus
def test_allreduce_inside_a_graph_on_two_ranks(tmp_path: Path) -> None:
    paths = _torchrun(tmp_path, "ar", "ranks_allreduce_graph.py", "--replays", "12")
    check_allreduce_job(analyze_ranks(paths), replays=12)
    proc = subprocess.run([sys.executable, "-m", "graphmode", "view", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "ar.ranks.html").exists(), proc.stderr


@needs_two_gpus
def test_ddp_step_captured_on_two_ranks(tmp_path: Path) -> None:
    paths = _torchrun(tmp_path, "ddp", "ranks_ddp_graph.py", "--replays", "5")
    check_ddp_job(analyze_ranks(paths), replays=5)
