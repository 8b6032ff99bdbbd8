#!/usr/bin/env bash
# Records the issue-10 fixtures (graph coverage, PyTorch's cudagraph decisions, graph memory) on a GPU
# machine with `graphmode run`, then runs the tests that check them (tests/test_coverage_fixtures.py on
# the recordings, tests/test_gpu_coverage.py on the GPU). From the repository root:
#
#   OUT=/tmp/cov bash tests/data/record_coverage.sh
#
# Writes tests/data/coverage/*.gmtrace (a few hundred KB each); each program's output, the timings and
# the pytest log go to $OUT (default /tmp/graphmode-coverage), with crosscheck.md: coverage and memory
# against the programs' own counts and torch.cuda.memory_stats, for docs/benchmarks.md; a copy of the
# recordings goes to $OUT/fixtures/ (copy them to tests/data/coverage/ and commit them).
set -u
d=tests/data/coverage
out=${OUT:-/tmp/graphmode-coverage}
mkdir -p "$d" "$out"
: > "$out/summary.txt"
run() {  # run NAME EXPECTED_EXIT [graphmode run options] SCRIPT
  local name=$1 expected=$2; shift 2
  local t0=$SECONDS
  python3 -m graphmode run --no-report --out "$d/$name.gmtrace" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc (expected $expected), $((SECONDS - t0)) s, $(du -k "$d/$name.gmtrace" 2>/dev/null | cut -f1) KB" | tee -a "$out/summary.txt"
  rm -f "$d/$name.html"
  if [ "$rc" != "$expected" ]; then  # the program did not do what it was written to do: not a fixture
    mkdir -p "$out/rejected" && mv -f "$d/$name.gmtrace" "$out/rejected/" 2>/dev/null
    echo "  $name: not kept as a fixture (see $out/$name.log); its recording is in $out/rejected/" | tee -a "$out/summary.txt"
  fi
}
run torch_compile_skips 0 --launch-sources examples/torch_compile_skips.py   # eager lines need launch sources
run torch_compile_shapes 0 examples/torch_compile_shapes.py
run torch_overwritten 1 examples/torch_overwritten.py                        # exits 1 on purpose
run graph_per_batch_size 0 examples/graph_per_batch_size.py
run jax_jit 0 examples/jax_jit.py
mkdir -p "$out/fixtures" && cp "$d"/*.gmtrace "$out/fixtures/"   # the recordings come back through $OUT
t0=$SECONDS
GRAPHMODE_COVERAGE_LOGS="$out" python3 -m pytest -q -rs tests/test_coverage_fixtures.py tests/test_gpu_coverage.py \
  > "$out/pytest.log" 2>&1
echo "pytest: exit $?, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
tail -5 "$out/pytest.log"
