#!/usr/bin/env bash
# Session 17, device call 5 (H200): the calibration of what `graphmode run`'s one traced run adds to a launch and a
# capture: tracer.launch_probes for torch and xla, each in fresh processes untraced and --traced (the run's own CUPTI
# session attached for the whole process), interleaved; then the GPU test of the default one run. (The in-process
# probe at the end of a run, calls 3-4, crashed: CUDA_ERROR_ILLEGAL_ADDRESS with the run's session attached, a
# segfault with a fresh session after cuptiFinalize.) Usage: bash benchmarks/notes/s17/call5.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
for i in 1 2 3; do
  for mode in "" --traced; do
    timeout 60 python3 -m graphmode.tracer.launch_probes torch $mode 2>>"$out/probes.err" | grep '^{' >> "$out/probes.jsonl"
    echo "torch $i $mode $?"
  done
done
for i in 1 2; do
  for mode in "" --traced; do
    XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 60 python3 -m graphmode.tracer.launch_probes xla $mode \
      2>>"$out/probes.err" | grep '^{' >> "$out/probes.jsonl"
    echo "xla $i $mode $?"
  done
done
tail -3 "$out/probes.err"
timeout 90 python3 -m pytest -m gpu -q -rs -p no:cacheprovider "tests/test_gpu_script.py::test_one_traced_run_by_default" \
  > "$out/gpu-tests.log" 2>&1
tail -4 "$out/gpu-tests.log"
