#!/usr/bin/env bash
# Session 31, device calls 1-2 (H200): the gpu test of untraced captures (both variants, the one with PyTorch's executable
# name hidden for the first time on a GPU), then after_detach_probe.py in fresh processes: none, sleep, eager, nofinal,
# ROUNDS times (MODES: other modes; call 2: none burn torchops other, without the gpu test: NOTEST=1).
# Usage: bash call1.sh OUT ROUNDS
set -u
out=${1:?OUT}; rounds=${2:-3}
. benchmarks/device_setup.sh
lscpu | head -25; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
[ -z "${NOTEST:-}" ] && timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py -k "makes_each_capture_untraced" 2>&1 | tail -5
for r in $(seq 1 "$rounds"); do for m in ${MODES:-none sleep eager nofinal}; do
  timeout 60 python3 benchmarks/notes/s31/after_detach_probe.py $m 2>>"$out/probe1.err" | tail -1 >> "$out/after_detach.jsonl"; done; done
cat "$out/after_detach.jsonl"; tail -3 "$out/probe1.err"
