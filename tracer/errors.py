"""The errors graphmode raises on purpose: one hierarchy, each message one line a person can act on.

Every command of the CLI catches `GraphmodeError`, prints its message and exits with its
`exit_code`; anything else is a bug and keeps its traceback. The classes also derive from the
builtin they used to be (ValueError, RuntimeError, OSError) so that code catching those still works.
This module imports nothing heavy: the CLI loads it for `--help`.
"""

from __future__ import annotations


class GraphmodeError(Exception):
    """Base of every error graphmode raises on purpose; str(e) is the whole message."""

    exit_code = 2


class TraceError(GraphmodeError, ValueError):
    """A trace file that cannot be used (missing, foreign, damaged, newer schema)."""


class TraceInUseError(TraceError):
    """The trace file is locked by a process that is writing it."""


class OutputPathError(GraphmodeError, ValueError):
    """An output path that would overwrite an input, or whose folder does not exist."""


class NoGpuError(GraphmodeError, RuntimeError):
    """No usable NVIDIA GPU / driver / CUPTI on this machine."""

    exit_code = 3


class CudaError(GraphmodeError, RuntimeError):
    """A CUDA driver or NVRTC call failed; the message names the call and the error."""

    exit_code = 1


class StorageError(GraphmodeError, OSError):
    """Writing the trace failed (disk full, read-only folder); the message says where the data is."""

    exit_code = 1


class CostModelError(GraphmodeError, ValueError):
    """A cost model file or calibration table that cannot be used (analyzers.costmodel); the message says what to do."""


class StdoutError(GraphmodeError):
    """Writing to standard output failed (a full disk it was redirected to, a closed descriptor)."""

    exit_code = 1


def no_gpu_message(reason: str, what: str = "recording") -> str:
    """The one line every entry point gives when there is no GPU to record on."""
    return (
        f"no usable GPU: {reason}. {what} needs an NVIDIA GPU with CUDA and CUPTI; reading, reporting "
        "and exporting traces do not (`graphmode demo` shows the report of a bundled H200 recording)"
    )
