#!/usr/bin/env bash
# session 14, call 1: eager-only recording with a timing run (fixture), GPU script tests at HEAD, SIGTERM bench test,
# CuPy (sync each step, eager-only) against its own clocks with the timing run timing the loop
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
t0=$(date +%s)
cd /tmp && timeout -k 5 90 python3 -m graphmode run --out /tmp/cuda_python_eager_only.gmtrace --no-html $OLDPWD/examples/cuda_python_capture.py --eager-only > $OUT/eager-only-report.txt 2>&1; echo "record rc=$? $(( $(date +%s) - t0 )) s"; cd $OLDPWD
cp /tmp/cuda_python_eager_only.gmtrace $OUT/ 2>/dev/null
timeout -k 5 150 python3 benchmarks/notes/2026-12-01-s14/cupy_eager_timing.py /tmp/cupy 4 > $OUT/cupy.log 2>&1
echo "cupy rc=$? $(( $(date +%s) - t0 )) s"; cp /tmp/cupy/cupy-eager-timing.jsonl $OUT/ 2>/dev/null; tail -3 $OUT/cupy.log
timeout -k 5 60 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_store.py -k sigterm > $OUT/sigterm.txt 2>&1
echo "sigterm rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $OUT/sigterm.txt
timeout -k 5 240 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py > $OUT/gpu-script.txt 2>&1
echo "gpu script tests rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $OUT/gpu-script.txt
