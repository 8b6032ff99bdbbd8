#!/usr/bin/env bash
# Session 29, device call 5 (H200): eager_parts_probe.py, PROCS fresh processes. Usage: bash call5.sh PROCS
set -u
. benchmarks/device_setup.sh
for i in $(seq 1 "${1:-3}"); do timeout 90 python3 benchmarks/notes/s29/eager_parts_probe.py 2>&1 | tail -1; done
