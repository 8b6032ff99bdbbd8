#!/usr/bin/env bash
# session 14, call 6: the GPU script tests in full at the final code
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
t0=$(date +%s)
timeout -k 5 330 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py > $OUT/gpu-script.txt 2>&1
echo "gpu script tests rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $OUT/gpu-script.txt
