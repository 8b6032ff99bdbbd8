#!/usr/bin/env bash
# Session 17, device call 6 (H200), the session's last device time: the GPU test of the default one traced run (now
# with line stamps), then issue 30's eager-only programs under plain `graphmode run` (traces kept) and the same
# programs graphed, untraced, for what a graph of their step measured. Usage: bash benchmarks/notes/s17/call6.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 45 python3 -m pytest -m gpu -q -rs -p no:cacheprovider "tests/test_gpu_script.py::test_one_traced_run_by_default" \
  > "$out/gpu-tests.log" 2>&1
tail -2 "$out/gpu-tests.log"
cd benchmarks/third_party || exit 1
mkdir -p /tmp/eo
for prog in "hf_static_decode.py --eager-only" "mobilenet_train_fn.py" "vit_batch_graphs.py --eager-only"; do
  name=$(echo $prog | cut -d. -f1)
  /usr/bin/time -f "$name graphmode %e s" timeout 60 graphmode run --no-html --no-report --out /tmp/eo/$name.gmtrace $prog \
    > /tmp/eo/$name.log 2>&1; tail -2 /tmp/eo/$name.log
  grep GRAPHMODE_TRUTH /tmp/eo/$name.log | sed "s/^/$name traced /" >> "$out/truth.txt"
done
for prog in "hf_static_decode.py" "mobilenet_train_fn.py --graph" "vit_batch_graphs.py"; do
  name=$(echo $prog | cut -d. -f1)
  /usr/bin/time -f "$name untraced %e s" timeout 40 python3 $prog 2>&1 | grep -v "^$" | sed "s/^/$name untraced /" >> "$out/truth.txt"
done
cat "$out/truth.txt" | cut -c1-200
cd /tmp/eo && tar -cJf "$out/eager-only.tar.xz" *.gmtrace *.log && ls -la "$out"
