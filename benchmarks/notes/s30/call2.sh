#!/usr/bin/env bash
# Session 30, device call 2 (H200): window_parts_probe.py in PROCS fresh processes, then call.sh's record of ResNet-18
# and MobileNetV3-in-a-function, graphed and eager-only, untraced and under `graphmode run`, PROCS + PROCS.
# Usage: bash benchmarks/notes/s30/call2.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
. benchmarks/device_setup.sh
for i in $(seq 1 "$procs"); do timeout 60 python3 benchmarks/notes/s30/window_parts_probe.py 2>"$out/probe.err.$i" | tail -1 >> "$out/probe.jsonl"; done
cat "$out/probe.jsonl"; tail -3 "$out/probe.err.1"
bash benchmarks/notes/s30/call.sh "$out" resnet,resnet_eager,mobilenet_fn_graph,mobilenet_fn "$procs"
