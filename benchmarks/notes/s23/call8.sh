#!/usr/bin/env bash
# Session 23, device call 8 (H200): the gpu tests of `graphmode run` (tests/test_gpu_script.py) on the final tracer code
# (line stamps with the CPU's speed samples), as many as 330 s allow. Usage: bash benchmarks/notes/s23/call8.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 330 python3 -m pytest -m gpu -v -p no:cacheprovider tests/test_gpu_script.py 2>&1 | tee "$out/gpu-tests.log" | grep -E "PASSED|FAILED|ERROR|passed|failed" | cut -c1-160
