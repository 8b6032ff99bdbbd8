#!/usr/bin/env bash
# The GPU tests on the lent H200, from the repository root, with ".whl" carried. Fill .whl/ once with the
# recipe's wheels plus those graphmode and its tests need that the image lacks (found missing there):
#   bash ../shared/device/prepare-wheels.sh cxxfilt perfetto protobuf jsonschema jsonschema-specifications \
#        referencing rpds-py attrs
# Then: bash tests/gpu.sh [pytest arguments, e.g. tests/test_gpu_script.py]
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
# The checkout and .whl together must stay under the device's 64 MiB: duckdb's and plotly's wheels travel unpacked and
# xz-packed (cd into an unzipped wheel; tar -cJf .whl/NAME.tar.xz .), about 8 and 5 MB less each.
for f in .whl/*.tar.xz; do [ -e "$f" ] && tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed (see /tmp/graphmode-install.log): using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
python3 -m pytest -m gpu -q -rs --durations=15 "$@"
