#!/usr/bin/env bash
# Re-records the CI fixtures on a GPU machine (they were recorded on an H200 with exactly this).
#   bash tests/data/record.sh            # from the repository root; `bash tests/data/record.sh scripts` for the scripts only,
#   bash tests/data/record.sh timed      # the three-run traces alone (needs Python 3.12+: the timing run stamps lines)
set -eu
d=tests/data; s=$d/scripts; mkdir -p $s
if [ "${1:-all}" = all ]; then
  for w in chain dag; do for detail in graph node; do
    python3 -m graphmode bench $w -n 40 --warmup 5 --detail $detail --out $d/$w-$detail.gmtrace --no-report
  done; done
  python3 -m graphmode bench chain -n 300 --warmup 20 --detail node --out graphmode/data/chain-h200.gmtrace --no-report
fi
# `graphmode run` makes two runs of each script: the measuring run (pass 0) and the detail run (pass 1);
# on Python 3.12+ a third, the timing run (pass 2), where the two find CPU-bound iterations.
run() { python3 -m graphmode run --no-report --no-html "$@" || true; }
if [ "${1:-all}" = timed ]; then
  t=$s/timed; mkdir -p $t
  for ex in cupy_graph jax_jit two_threads torch_compile; do run --out $t/$ex.gmtrace examples/$ex.py; done
  exit 0
fi
run --out $s/torch_cudagraph.gmtrace examples/torch_cudagraph.py --steps 20
run --out $s/broken_capture.gmtrace examples/broken_capture.py          # exits 1 on purpose
run --out $s/cupy_graph.gmtrace examples/cupy_graph.py
run --out $s/torch_compile.gmtrace examples/torch_compile.py
run --detail node --out $s/cuda_python_capture.gmtrace examples/cuda_python_capture.py
run --launch-sources --detail node --out $s/cuda_python_launch_sources.gmtrace examples/cuda_python_capture.py
run --out $s/gpu_bound_replays.gmtrace examples/gpu_bound_replays.py --steps 30
run --out $s/two_shapes.gmtrace examples/two_shapes.py
run --out $s/two_threads.gmtrace examples/two_threads.py
