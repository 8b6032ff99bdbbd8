#!/usr/bin/env bash
# Session 29, device call 2 (H200): the one run's untraced capture (tracer.untraced_windows.CaptureController).
#  1. the gpu tests of the one run's captures (the default run on torch_cudagraph.py, a broken capture, torch.compile's
#     trees, the untraced windows) and of the topology copies;
#  2. the graphed decode step and the ViT with a graph per batch size: untraced, `graphmode run` (the first capture
#     untraced through capture_end, attached after it), `graphmode run` with GRAPHMODE_UNTRACED_CAPTURE=0, PROCS each.
# Carried with tests/data/{scripts,ranks,legacy,coverage} left out (the device's 64 MiB) and plotly back in .whl.
# Everything into OUT/c2.tar.xz and the traces into OUT/c2-traces.tar.xz.
# Usage: bash benchmarks/notes/s29/call2.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c2; mkdir -p $d
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $d/gpu.txt 2>&1
timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/test_gpu_topology_copy.py tests/test_gpu_script.py \
  -k "topology or one_traced_run_by_default or leaves_torch_compiles_trees or breaks_in_the_one_runs or untraced_window or eager_only_script_is_run_once" \
  > $d/gpu_tests.txt 2>&1
tail -25 $d/gpu_tests.txt
echo "gpu tests done at $(( $(date +%s) - t0 )) s"
timeout $(( 565 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads hf_graph,vit_batches --configs untraced,graphmode,graphmode_tracedcap --keep-traces all --timeout 150 > $d/record.log 2>&1
cut -c1-220 $d/record.log | tail -16
cp /tmp/fid/results.jsonl $d/ 2>/dev/null
(cd /tmp && tar -cf - c2 | xz -2 -T8 > "$out/c2.tar.xz")
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/c2-traces.tar.xz")
ls -la "$out"
echo "elapsed $(( $(date +%s) - t0 )) s"
