"""Raw cuda-python: NVRTC kernel, an eager launch loop, then stream capture and replays,
and the same step handed to graphmode.compare.

    graphmode run examples/cuda_python_capture.py
    python examples/cuda_python_capture.py --compare     # uses the Python API instead
"""

import ctypes
import sys

import numpy as np
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

SRC = b'extern "C" __global__ void axpb(float *y, const float *x, float a, int n) {' \
      b' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + 1.0f; }'
N, KERNELS = 1 << 18, 16


def ok(res):
    err, *rest = res if isinstance(res, tuple) else (res,)
    assert int(err) == 0, err
    return rest[0] if len(rest) == 1 else rest


ok(cu.cuInit(0))
dev = ok(cu.cuDeviceGet(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
ok(cu.cuCtxSetCurrent(ctx))
major = ok(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
minor = ok(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
prog = ok(nvrtc.nvrtcCreateProgram(SRC, b"axpb.cu", 0, [], []))
opts = [f"--gpu-architecture=sm_{major}{minor}".encode()]
ok(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
cubin = b" " * ok(nvrtc.nvrtcGetCUBINSize(prog))
ok(nvrtc.nvrtcGetCUBIN(prog, cubin))
fn = ok(cu.cuModuleGetFunction(ok(cu.cuModuleLoadData(cubin)), b"axpb"))

host = np.arange(N, dtype=np.float32)
d_x, d_y = ok(cu.cuMemAlloc(N * 4)), ok(cu.cuMemAlloc(N * 4))
ok(cu.cuMemcpyHtoD(d_x, host.ctypes.data, N * 4))
vals = [ctypes.c_uint64(int(d_y)), ctypes.c_uint64(int(d_x)), ctypes.c_float(2.0), ctypes.c_int(N)]
params = np.array([ctypes.addressof(v) for v in vals], dtype=np.uint64)
stream = ok(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))


def step(s):
    for _ in range(KERNELS):
        ok(cu.cuLaunchKernel(fn, (N + 255) // 256, 1, 1, 256, 1, 1, 0, s, params.ctypes.data, 0))  # LINE: launch


def result():
    out = np.empty(N, dtype=np.float32)
    ok(cu.cuMemcpyDtoH(out.ctypes.data, d_y, N * 4))
    return [out]


if "--compare" in sys.argv:
    import graphmode

    c = graphmode.compare(step, iters=200, outputs=result, out="cuda_python_compare.gmtrace")
    print(f"saved {c.saved_per_iteration_ns / 1e3:.1f} us/iteration, one-time {c.one_time_ns / 1e3:.1f} us, "
          f"break-even {c.break_even.replays} replays, outputs match: {c.outputs_match}")
    sys.exit(0)

for _ in range(200):
    step(stream)
    ok(cu.cuStreamSynchronize(stream))
if "--eager-only" in sys.argv:  # the eager loop alone: would a graph pay off? (graphmode's prediction)
    sys.exit(0)
ok(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
step(stream)
graph = ok(cu.cuStreamEndCapture(stream))
gexec = ok(cu.cuGraphInstantiate(graph, 0))
ok(cu.cuGraphUpload(gexec, stream))
for _ in range(200):
    ok(cu.cuGraphLaunch(gexec, stream))
    ok(cu.cuStreamSynchronize(stream))
assert np.allclose(result()[0], 2.0 * host + 1.0)
print("ok")
