#!/usr/bin/env bash
# Session 27, device call 1 (H200): the capture's API records switched off as a whole (CuptiSession api_off_in_captures).
#  1. capture_api_off.py S and D, 2 processes each: the ViT capture's parts, the lifecycle records, the filter after;
#  2. tracer.launch_probes torch untraced, --traced, --traced --capture-api-off, 3 processes each, interleaved;
#  3. the gpu tests of the one run's captures with GRAPHMODE_CAPTURE_API_OFF=1;
#  4. the graphed decode step and the ViT with a graph per batch size: untraced, `graphmode run`, and `graphmode run`
#     with GRAPHMODE_CAPTURE_API_OFF=1, PROCS processes each, interleaved (script_fidelity.py).
# Everything into OUT/c1.tar.xz (the device returns a few files only).
# Ran at commit 13e59fe (the next commit dropped the option it measures).
# Usage: bash benchmarks/notes/s27/call1.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c1; mkdir -p $d
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $d/gpu.txt 2>&1
for i in 0 1; do
  for v in S D; do
    timeout 90 python3 benchmarks/notes/s27/capture_api_off.py $v > "$d/$v.$i.txt" 2>&1
    grep '^{' "$d/$v.$i.txt" >> $d/capture_api_off.jsonl || tail -5 "$d/$v.$i.txt"
  done
done
echo "capture_api_off done at $(( $(date +%s) - t0 )) s"
python3 - $d/capture_api_off.jsonl <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); rows[r["variant"]].append(r)
for v, rs in rows.items():
    print(v, " ".join(f"vit {r['vit_ratio']:.2f}x ({r['U_vit_us']:.0f}->{r[v+'_vit_us']:.0f}) chain {r['chain_ratio']:.2f}x" for r in rs))
    for r in rs:
        print("   parts", r["parts_us"], "eager", round(r.get(v + "_eager_vit_us", 0)), "on_us", r.get("api_on_us"),
              "spans", r.get("api_off_spans"), r.get("api_off_span_us"))
    print("   lifecycle", rs[-1].get("lifecycle_records"), "unfiltered", rs[-1].get("unfiltered_records"))
    print("   records", rs[-1].get("records"), rs[-1].get("topologies"), rs[-1].get("callback_errors"))
PY
for i in 0 1 2; do
  for mode in "" "--traced" "--traced --capture-api-off"; do
    timeout 120 python3 -m graphmode.tracer.launch_probes torch $mode 2>/dev/null | grep '^{' | sed "s/^{/{\"process\": $i, /" >> $d/launch_probes.jsonl
  done
done
echo "launch probes done at $(( $(date +%s) - t0 )) s: $(wc -l < $d/launch_probes.jsonl) processes"
GRAPHMODE_CAPTURE_API_OFF=1 timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py \
  -k "broken_capture or cupy_capture or cuda_python_capture or torch_graph_found" > $d/gpu_tests.txt 2>&1
tail -15 $d/gpu_tests.txt
echo "gpu tests done at $(( $(date +%s) - t0 )) s"
timeout $(( 560 - ($(date +%s) - t0) )) python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" \
  --workloads hf_graph,vit_batches --configs untraced,graphmode,graphmode_apioff --keep-traces all --timeout 150 > $d/record.log 2>&1
tail -14 $d/record.log
cp /tmp/fid/results.jsonl $d/ 2>/dev/null
(cd /tmp && tar -cf - c1 | xz -2 -T8 > "$out/c1.tar.xz")
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/c1-traces.tar.xz")
ls -la "$out"
echo "elapsed $(( $(date +%s) - t0 )) s"
