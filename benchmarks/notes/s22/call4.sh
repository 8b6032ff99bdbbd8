#!/usr/bin/env bash
# Session 22, device call 4 (H200): graphmode.trace() around replays of graphs instantiated before it (the crash of
# call 3, fixed by folding replays from their nodes' records): the tracer's gpu tests; two recordings for the CPU tests;
# region_replay_probe.py (what recording every node does to a replay), 2 processes per mode.
# Usage: bash benchmarks/notes/s22/call4.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
mkdir -p /tmp/rec
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py 2>&1 | tail -15 > "$out/gpu-tests.log"
cat "$out/gpu-tests.log"
python3 - <<'PY'
import re, subprocess, sys
src = open("tests/test_gpu_script.py").read()
script = re.search(r'_REGION_AFTER_GRAPH = """(.*?)"""', src, re.S).group(1)
p = subprocess.run([sys.executable, "-c", script, "/tmp/rec/region_after_graph_chain.gmtrace"], capture_output=True, text=True)
print("chain region", p.returncode, p.stdout[-200:], p.stderr[-500:])
PY
for i in 1 2; do
  timeout 90 python3 benchmarks/notes/s22/region_replay_probe.py region /tmp/rec/region_vit_$i.gmtrace 2>>"$out/replay.err" | tee -a "$out/replay.jsonl"
  timeout 90 python3 benchmarks/notes/s22/region_replay_probe.py graph_trace 2>>"$out/replay.err" | tee -a "$out/replay.jsonl"
done
python3 -m graphmode report /tmp/rec/region_vit_1.gmtrace 2>&1 | head -40 > "$out/region_vit_report.txt"
ls -la /tmp/rec
tar -C /tmp/rec -cJf "$out/recordings.tar.xz" region_after_graph_chain.gmtrace region_vit_1.gmtrace
tail -5 "$out/replay.err"
