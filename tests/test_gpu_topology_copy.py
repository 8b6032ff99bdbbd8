"""A graph destroyed while the one run traces is read from a copy at the end, as it was (marker `gpu`).

    python3 -m pytest -m gpu -q tests/test_gpu_topology_copy.py

PyTorch destroys the graph it captured inside `capture_end`, within the program's capture block; the one run's session
keeps a copy there (cuGraphClone) and reads the copy's nodes and edges when it stops (CuptiSession.deferred_topology).
The script captures a fork/join graph under the one run's session twice, the copy read and the graph read as it is
destroyed, and prints what each read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.gpu

SCRIPT = textwrap.dedent('''
    import json
    import torch
    from graphmode.tracer.cupti_session import CuptiSession
    from graphmode.tracer.run_configs import session_kwargs, single_config

    x = torch.randn(1 << 12, device="cuda")
    side = torch.cuda.Stream()

    def step():
        y = x * 2
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            z = x.sin()
        w = y.cos()
        torch.cuda.current_stream().wait_stream(side)
        return (z + w).sum()

    step(); torch.cuda.synchronize()
    out = {}
    for deferred in (True, False):
        session = CuptiSession(**session_kwargs(single_config(), nvtx=False))
        session.deferred_topology = deferred
        session.start()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        g.replay()
        torch.cuda.synchronize()
        del g
        raw = session.stop()
        shapes = []
        for gid, topo in sorted(raw.topologies.items()):
            index = {n[0]: n[1] for n in topo.nodes}
            shapes.append({"graph_id": gid, "nodes": [[n[1], n[2], n[3]] for n in topo.nodes],
                           "edges": sorted([index[a], index[b]] for a, b in topo.edges)})
        out[str(deferred)] = {"copies": raw.topology_copies, "topologies": shapes, "errors": raw.callback_errors}
    print(json.dumps(out))
''')


def test_a_graph_destroyed_in_its_capture_block_is_read_from_its_copy_as_it_was(tmp_path) -> None:
    path = tmp_path / "fork_join.py"
    path.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    copied, direct = out["True"], out["False"]
    assert copied["errors"] == [] and direct["errors"] == []
    assert copied["copies"] == {"copied": 1, "read_at_destroy": 0}
    assert direct["copies"] == {"copied": 0, "read_at_destroy": 1}
    assert len(copied["topologies"]) == len(direct["topologies"]) == 1
    a, b = copied["topologies"][0], direct["topologies"][0]
    kernels = [n for n in a["nodes"] if n[1] == "kernel"]
    assert len(kernels) >= 4  # mul, sin, cos, add, sum
    assert a["nodes"] == b["nodes"]
    assert a["edges"] == b["edges"]
    # fork/join: some node has two successors and some node two predecessors
    assert max(sum(1 for e in a["edges"] if e[0] == i) for i in range(len(a["nodes"]))) >= 2
    assert max(sum(1 for e in a["edges"] if e[1] == i) for i in range(len(a["nodes"]))) >= 2
