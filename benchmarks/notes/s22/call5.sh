#!/usr/bin/env bash
# Session 22, device call 5 (H200): graphs instantiated inside a traced region, replayed after it (attach_probe2.py,
# one process per variant) and the gpu tests of both region cases. Usage: bash benchmarks/notes/s22/call5.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for v in region_torch measure_torch; do
  timeout 60 python3 benchmarks/notes/s22/attach_probe2.py $v > /tmp/a.out 2> /tmp/a.err; rc=$?
  echo "$v rc=$rc $(tail -1 /tmp/a.out) | $(grep -m1 -E 'Error|error' /tmp/a.err)" | tee -a "$out/attach2.txt"
done
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py -k "region" 2>&1 | tail -5 | tee "$out/gpu-tests.log"
