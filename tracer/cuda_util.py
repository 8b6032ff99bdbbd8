"""Small wrappers over cuda.bindings (driver + NVRTC): error checks, context, kernel compile, launches.

Imported lazily (only by code that runs on a GPU), so that the CLI works on machines without CUDA.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np


from graphmode.tracer.errors import CudaError as CudaError  # defined with the other errors, importable here too
from graphmode.tracer.errors import NoGpuError as NoGpuError


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def check(result: Any, what: str = "CUDA call") -> Any:
    """Unpacks a cuda.bindings result tuple (err, *values), raising CudaError on failure."""
    if not isinstance(result, tuple):
        result = (result,)
    err, *values = result
    if int(err) != 0:
        cu = _driver()
        name = ""
        try:
            if isinstance(err, cu.CUresult):
                _, s = cu.cuGetErrorName(err)
                name = s.decode() if s else ""
        except Exception:
            name = ""
        raise CudaError(f"{what} failed: {name or err} ({int(err)})")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@dataclass
class Device:
    ordinal: int
    handle: Any
    context: Any
    name: str
    compute_capability: tuple[int, int]
    uuid: str
    driver_version: int


_DEVICE: Device | None = None


def check_device(ordinal: int = 0) -> None:
    """Raises NoGpuError where init_device would (no cuda-python, no driver, no such device), without making a
    context: `graphmode run`'s own process checks the GPU before it starts the script's runs, and a context there would
    hold GPU memory (and about 0.3 s) for the whole of the user's runs."""
    if _DEVICE is not None and _DEVICE.ordinal == ordinal:
        return
    try:
        cu = _driver()
    except ImportError as e:  # pragma: no cover - depends on the install
        raise NoGpuError(f"cuda-python is not importable ({e}); install graphmode's dependencies") from None
    try:
        err = cu.cuInit(0)[0]
    except Exception as e:  # libcuda missing entirely
        raise NoGpuError(f"the CUDA driver library could not be loaded ({e})") from None
    if int(err) != 0:
        raise NoGpuError(f"cuInit failed ({err}): no NVIDIA GPU or driver on this machine")
    count = check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
    if count <= ordinal:
        raise NoGpuError(f"no CUDA device {ordinal} (this machine has {count})")


def init_device(ordinal: int = 0) -> Device:
    """Initialises the driver and makes the device's primary context current (shared with PyTorch/CuPy)."""
    global _DEVICE
    if _DEVICE is not None and _DEVICE.ordinal == ordinal:
        check(_driver().cuCtxSetCurrent(_DEVICE.context), "cuCtxSetCurrent")
        return _DEVICE
    check_device(ordinal)
    cu = _driver()
    dev = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    name = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    attr = cu.CUdevice_attribute
    major = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr")
    minor = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr")
    try:
        raw = check(cu.cuDeviceGetUuid(dev), "cuDeviceGetUuid")
        b = bytes(raw.bytes) if hasattr(raw, "bytes") else b""
        uuid = "GPU-" + b.hex() if b else ""
    except Exception:
        uuid = ""
    drv = check(cu.cuDriverGetVersion(), "cuDriverGetVersion")
    _DEVICE = Device(ordinal, dev, ctx, name, (int(major), int(minor)), uuid, int(drv))
    return _DEVICE


def compile_module(source: str, name: str, device: Device) -> Any:
    """Compiles CUDA C++ with NVRTC for the device's architecture and loads it as a module."""
    from cuda.bindings import nvrtc

    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram")
    major, minor = device.compute_capability
    opts = [f"--gpu-architecture=sm_{major}{minor}".encode(), b"-default-device", b"--std=c++17"]
    err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
    if int(err) != 0:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise CudaError(f"NVRTC could not compile {name}: {log.decode(errors='replace').strip()}")
    size = check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
    cubin = b" " * size
    check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    check(nvrtc.nvrtcDestroyProgram(prog), "nvrtcDestroyProgram")
    return check(_driver().cuModuleLoadData(cubin), "cuModuleLoadData")


def get_function(module: Any, name: str) -> Any:
    return check(_driver().cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")


class KernelArgs:
    """A kernel argument block built once and reused for every launch (no per-launch Python packing).

    cuLaunchKernel takes `void **kernelParams`: an array of pointers, each to one argument's value.
    """

    def __init__(self, *values: tuple[Any, type]):
        self._holders = [ctype(v) for v, ctype in values]
        self._ptrs = np.array([ctypes.addressof(h) for h in self._holders], dtype=np.uint64)

    @property
    def address(self) -> int:
        return int(self._ptrs.ctypes.data)


def alloc(nbytes: int) -> int:
    return int(check(_driver().cuMemAlloc(nbytes), "cuMemAlloc"))


def free(ptr: int) -> None:
    check(_driver().cuMemFree(ptr), "cuMemFree")


def htod(dst: int, host: np.ndarray, stream: Any = 0) -> None:
    check(_driver().cuMemcpyHtoD(dst, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")


def dtoh(host: np.ndarray, src: int) -> np.ndarray:
    check(_driver().cuMemcpyDtoH(host.ctypes.data, src, host.nbytes), "cuMemcpyDtoH")
    return host


def new_stream() -> Any:
    cu = _driver()
    return check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate")


def new_event() -> Any:
    cu = _driver()
    return check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
