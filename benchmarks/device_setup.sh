# Sourced by the device calls' scripts (benchmarks/notes/s25 on), from the repository root on the GPU machine: installs
# the carried .whl/ wheels and tarballs into /tmp/site and graphmode editable, and exports PYTHONPATH for them.
#   . benchmarks/device_setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
