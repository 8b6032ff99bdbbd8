#!/usr/bin/env bash
# Session 22, device call 6 (H200): the region gpu tests again, after call 5's wrong assertion was fixed.
# Usage: bash benchmarks/notes/s22/call6.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py -k "region" 2>&1 | tail -5 | tee "$out/gpu-tests.log"
