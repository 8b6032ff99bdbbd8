"""`graphmode run` on a program with several graphs a step, on a real GPU (marker `gpu`): torchvision MobileNetV3's
training step with the model graphed by make_graphed_callables (benchmarks/third_party/mgc_mobilenet.py). The step
and its figures are checked against the program's own clock in the timing run (its third GRAPHMODE_TRUTH line)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_module
from graphmode.analyzers import analyze
from graphmode.tracer.store import load

pytestmark = [pytest.mark.gpu, needs_module("torchvision", "torchvision")]
SCRIPT = ROOT / "benchmarks" / "third_party" / "mgc_mobilenet.py"


def test_make_graphed_callables_step_found_and_timed(tmp_path: Path) -> None:
    out = tmp_path / "mgc.gmtrace"
    env = {**os.environ, "PYTHONPATH": f"{SCRIPT.parent}{os.pathsep}{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "graphmode", "run", "--runs", "full", "--no-html", "--out", str(out), str(SCRIPT),
                           "--steps", "15"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    truths = [json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines() if ln.startswith("GRAPHMODE_TRUTH ")]
    if sys.version_info < (3, 12):
        pytest.skip("the timing run needs Python 3.12+")
    assert len(truths) == 3, proc.stdout[-2000:]
    own = truths[2]  # the timing run: no CUPTI
    with load(out) as t:
        a = analyze(t)
    steps = [s for s in a.steps if len(s.graphs) > 1]
    assert len(steps) == 1 and len(steps[0].graphs) == 2
    s = steps[0]
    saved = own["eager_ns"] - own["graph_ns"]
    assert s.saved_ns == pytest.approx(saved, rel=0.15)
    one_time = own["make_graphed_ns"] + own["first_step_ns"] - own["graph_ns"]
    assert s.one_time_ns == pytest.approx(one_time, rel=0.25)
    assert s.break_even is not None and abs(s.break_even.replays - math.ceil(one_time / saved)) <= max(1, 0.2 * s.break_even.replays)
    assert a.headline is not None and a.headline.subject == "step" and a.headline.graph_ids == s.graphs
    assert s.invariant_residual_ns is not None and abs(s.invariant_residual_ns) < 0.1 * abs(s.saved_ns)
