#!/usr/bin/env bash
# Session 29, device call 3 (H200): the one run's untraced capture (tracer.untraced_windows.CaptureController).
#  the decode step, the ViT with a graph per batch size, ResNet-18 and make_graphed_callables' MobileNetV3: untraced and
#  `graphmode run` (the process's first capture untraced through capture_end), PROCS each, interleaved.
# Everything into OUT/c3.tar.xz and the traces into OUT/c3-traces.tar.xz.
# Usage: bash benchmarks/notes/s29/call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c3; mkdir -p $d
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $d/gpu.txt 2>&1
timeout $(( 565 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads hf_graph,vit_batches,resnet,mgc_mobilenet --configs untraced,graphmode --keep-traces all --timeout 150 > $d/record.log 2>&1
cut -c1-220 $d/record.log | tail -16
cp /tmp/fid/results.jsonl $d/ 2>/dev/null
(cd /tmp && tar -cf - c3 | xz -2 -T8 > "$out/c3.tar.xz")
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/c3-traces.tar.xz")
ls -la "$out"
echo "elapsed $(( $(date +%s) - t0 )) s"
