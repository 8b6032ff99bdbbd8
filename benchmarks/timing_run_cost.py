"""What graphmode's timing run costs a CPU-bound Python loop, by the loop's own clock (no GPU needed; Python 3.12+).

The timing run (tracer/line_stamps.py) stamps a few of the script's lines with `sys.monitoring` and nothing
else. This benchmark runs one pure-Python workload (a step that builds 50 small objects, called from a loop)
in fresh processes, interleaved in a shuffled order:

- **untraced**: `python loop.py`;
- **call line**: graphmode's timing run (`python -m graphmode.tracer.script_child`) stamping the step's call
  line, once a step (what `analyzers.untraced.anchor_line` chooses);
- **inner line**: the timing run stamping the line inside the step that runs 50 times a step (what the
  launching line can be when a step launches from inside a loop).

`--workload library`: the step calls the standard library's `copy.deepcopy` (pure Python outside the script,
which the timing run never instruments), and "inner line" stamps the line in the script that makes that call
(once a step): does the timing run's process slow the code it does not stamp?

    python3 benchmarks/timing_run_cost.py [--procs 7] [--workload python|library]

Prints each configuration's median time per step and its excess over untraced, per stamp.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_PYTHON_STEP = """import time


class Node:
    def __init__(self, a):
        self.a = a


def inner(x):
    d = {}
    for i in range(50):
        d[i] = Node(x + i)  # INNER: 50 times a step
    return sum(n.a for n in d.values())
"""

# The step spends its time in library code (the standard library's copy.deepcopy: pure Python outside the
# script, which the timing run never instruments): does the timing run's process slow code it does not stamp?
_LIBRARY_STEP = """import copy
import dataclasses
import time


@dataclasses.dataclass
class P:
    a: int
    b: list


data = {"x": [P(i, [i, i + 1]) for i in range(5)], "y": {"k": (1, 2, 3)}}


def inner(x):
    return copy.deepcopy(data)  # INNER: the library call
"""


def _program(step_code: str, warm: int, steps: int) -> str:
    """A benchmark program: its step's code, then the loop that times the step."""
    return step_code + f"""

def step(x):
    return inner(x)


ns = time.perf_counter_ns
for _ in range({warm}):
    step(1)
t0 = ns()
for _ in range({steps}):
    step(1)  # CALL: once a step
print("per_step_us", (ns() - t0) / {steps} / 1e3)
"""


LOOP = _program(_PYTHON_STEP, 500, 5000)
LIBRARY_LOOP = _program(_LIBRARY_STEP, 2000, 20000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=7)
    ap.add_argument("--workload", choices=("python", "library"), default="python",
                    help="python: the step builds objects in the script's own code; library: it calls copy.deepcopy")
    args = ap.parse_args()
    if sys.version_info < (3, 12):
        raise SystemExit("the timing run needs Python 3.12 or newer (sys.monitoring)")
    from script_fidelity import timing_run_command  # this folder is on sys.path when the benchmark runs

    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "loop.py"
        loop = LOOP if args.workload == "python" else LIBRARY_LOOP
        script.write_text(loop)
        lines = loop.splitlines()
        at = {tag: next(i + 1 for i, line in enumerate(lines) if f"# {tag}" in line) for tag in ("CALL", "INNER")}
        stamps_per_step = {"untraced": 0, "call line": 1, "inner line": 50 if args.workload == "python" else 1}
        stamped = {"call line": f"{script}:{at['CALL']}", "inner line": f"{script}:{at['INNER']}"}
        results: dict[str, list[float]] = {k: [] for k in stamps_per_step}
        order = [k for k in results for _ in range(args.procs)]
        random.Random(20261130).shuffle(order)
        for k in order:
            if k == "untraced":
                cmd = [sys.executable, str(script)]
            else:
                cmd = timing_run_command(script, Path(d) / "t.gmtrace", [stamped[k]])
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=d, timeout=300)
            found = [float(x.split()[1]) for x in out.stdout.splitlines() if x.startswith("per_step_us")]
            if not found:
                raise SystemExit(f"{k}: no timing printed; stderr: {out.stderr[-1000:]}")
            results[k].append(found[0])
    base = statistics.median(results["untraced"])
    print(f"Python {sys.version.split()[0]}, {args.procs} processes each")
    print("| configuration | stamps a step | per step (median) [range] | excess over untraced | per stamp |")
    print("|---|---|---|---|---|")
    for k, v in results.items():
        med = statistics.median(v)
        n = stamps_per_step[k]
        per = f"{(med - base) / n:.2f} us" if n else "—"
        print(f"| {k} | {n} | {med:.2f} us [{min(v):.2f}, {max(v):.2f}] | {med / base:.2f}x | {per} |")


if __name__ == "__main__":
    main()
