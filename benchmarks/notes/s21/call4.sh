#!/usr/bin/env bash
# Session 21, device call 4 (H200): benchmarks/notes/s21/vit_ab_probe.py in 3 fresh processes: what CUPTI (our buffers
# and cupti-python's) and PyTorch's allocator history each add to a timm ViT's eager call, A/B inside each process.
# Usage: bash benchmarks/notes/s21/call4.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2 3; do timeout 70 python3 benchmarks/notes/s21/vit_ab_probe.py 2>>"$out/probe.err" | tee -a "$out/vit_ab.jsonl"; done
tail -3 "$out/probe.err"
