#!/usr/bin/env bash
# session 14, call 3: an eager loop that does not synchronize (CuPy) found from its call line: GPU tests, a fixture,
# and CuPy against its own clocks without --sync-each
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
t0=$(date +%s)
timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py -k "unsynchronized or eager_run or cupy" > $OUT/gputest.txt 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gputest.txt
R=$PWD
cd benchmarks/third_party && timeout -k 5 90 python3 -m graphmode run --out /tmp/cupy_unsynchronized.gmtrace --no-html cupy_chain.py --eager-only --iters 60 > $OUT/unsync-report.txt 2>&1; echo "record rc=$? $(( $(date +%s) - t0 )) s"; cd $R
cp /tmp/cupy_unsynchronized.gmtrace $OUT/ 2>/dev/null
timeout -k 5 200 python3 benchmarks/notes/2026-12-01-s14/cupy_eager_timing.py /tmp/cupy 4 --no-sync > $OUT/cupy.log 2>&1
echo "cupy rc=$? $(( $(date +%s) - t0 )) s"; cp /tmp/cupy/cupy-eager-timing-nosync.jsonl $OUT/ 2>/dev/null; tail -3 $OUT/cupy.log
