#!/usr/bin/env bash
# Records the two-rank fixtures on a machine with two GPUs, then runs every rank test (GPU and fixtures):
#   bash tests/data/ranks/record.sh            # from the repository root; about 3 minutes on 2 H200
# Writes tests/data/ranks/allreduce_graph/ar.rank{0,1}.gmtrace and tests/data/ranks/ddp_graph/ddp.rank{0,1}.gmtrace.
set -eu
export NCCL_NVLS_ENABLE=0   # NVLink multicast off, as this machine's rules and NCCL's docs on it ask
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
d=tests/data/ranks
record() {  # record NAME STEM SCRIPT ARGS...: one trace per rank, profile off (keeps the files small)
  local name=$1 stem=$2; shift 2
  rm -rf "$d/$name"; mkdir -p "$d/$name"
  python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m graphmode run --no-profile --detail node \
      --out "$d/$name/$stem.gmtrace" "$@"
}
t0=$(date +%s)
record allreduce_graph ar examples/ranks_allreduce_graph.py --replays 20
record ddp_graph ddp examples/ranks_ddp_graph.py --replays 10
ls -l $d/*/
python3 -m graphmode report $d/allreduce_graph
python3 -m graphmode report $d/ddp_graph
echo "recorded in $(( $(date +%s) - t0 )) s"
python3 -m pytest -q -rs tests/test_ranks_fixtures.py tests/test_gpu_ranks.py
echo "all done in $(( $(date +%s) - t0 )) s"
