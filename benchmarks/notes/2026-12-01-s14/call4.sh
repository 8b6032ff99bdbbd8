#!/usr/bin/env bash
# session 14, call 4: the torch probe in a PyTorch program's process, and the unsynchronized loop's line (GPU tests)
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
t0=$(date +%s)
timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py -k "pytorch_program_measures or unsynchronized" > $OUT/gputest.txt 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gputest.txt
cd /tmp && timeout -k 5 90 python3 -m graphmode run --no-html --out /tmp/torch-mlp-eager.gmtrace $OLDPWD/benchmarks/bench_eager.py torch --step mlp -n 200 --warmup 10 > $OUT/torch-eager-report.txt 2>&1; echo "torch twin rc=$? $(( $(date +%s) - t0 )) s"
