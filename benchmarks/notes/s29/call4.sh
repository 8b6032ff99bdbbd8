#!/usr/bin/env bash
# Session 29, device call 4 (H200): every PyTorch capture of the one run untraced (up to 32; each adopted by the
# executable PyTorch names).
#  1. gpu tests: the default run on torch_cudagraph.py, two captures replayed out of order, a broken capture, trees,
#     the windows;
#  2. programs of several captures: the ViT with a graph per batch size, make_graphed_callables' MobileNetV3, a ViT with
#     a graph per layer; untraced and `graphmode run`, PROCS each, interleaved.
# Carried with tests/data/{scripts,ranks,legacy,coverage} left out (the device's 64 MiB) and plotly back in .whl.
# Usage: bash benchmarks/notes/s29/call4.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c4; mkdir -p $d
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $d/gpu.txt 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/test_gpu_script.py \
  -k "one_traced_run_by_default or each_capture_untraced or leaves_torch_compiles_trees or breaks_in_the_one_runs or untraced_window" \
  > $d/gpu_tests.txt 2>&1
tail -25 $d/gpu_tests.txt
echo "gpu tests done at $(( $(date +%s) - t0 )) s"
timeout $(( 560 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads vit_batches,mgc_mobilenet,vit_layers --configs untraced,graphmode --keep-traces all --timeout 120 > $d/record.log 2>&1
cut -c1-220 $d/record.log | tail -20
cp /tmp/fid/results.jsonl $d/ 2>/dev/null
(cd /tmp && tar -cf - c4 | xz -2 -T8 > "$out/c4.tar.xz")
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/c4-traces.tar.xz")
ls -la "$out"
echo "elapsed $(( $(date +%s) - t0 )) s"
