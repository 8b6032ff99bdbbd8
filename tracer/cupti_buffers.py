"""CUPTI's activity buffers, handed to the tracer as bytes with no per-record Python work.

cupti-python's `activity_register_callbacks` gives the buffer-completed callback a list of record objects: before
the callback runs, it walks the buffer and wraps every record in a Python object. That work holds the GIL on CUPTI's
thread while the program runs, and the tracer only ever read the first and the last record of the list (it decodes
the bytes itself after the run, tracer.cupti_records). On the H200 the wrapping took 1.7-3.1 s per session, at the
end in `cuptiActivityFlushAll` and in the middle of the program each time a buffer filled
(benchmarks/notes/s21/README.md).

So the two buffer callbacks are registered here with the library's own C signatures, through ctypes, on the very
libcupti that cupti-python loaded (the same handle: one CUPTI state). The request callback hands CUPTI a buffer of
ours; the completed callback copies its valid bytes in one memmove and lets the buffer go. Nothing else changes:
the records are the same bytes, decoded after the run.

`GRAPHMODE_CUPTI_BUFFERS=cupti-python` keeps cupti-python's callbacks (the tracer's path before session 21).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Callable

ENV = "GRAPHMODE_CUPTI_BUFFERS"
RAW = "raw"
CUPTI_PYTHON = "cupti-python"

# CUpti_BuffersCallbackRequestFunc(uint8_t **buffer, size_t *size, size_t *maxNumRecords)
_REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                            ctypes.POINTER(ctypes.c_size_t))
# CUpti_BuffersCallbackCompleteFunc(CUcontext context, uint32_t streamId, uint8_t *buffer, size_t size, size_t validSize)
_COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


_registered: RawBuffers | None = None
# address -> the ctypes array CUPTI is filling: one registry for the process, so that a buffer handed out under one
# session's callbacks stays alive until CUPTI hands it back, whichever callbacks are registered by then
_LIVE: dict[int, Any] = {}


def wanted() -> str:
    """The buffer path asked for: RAW unless GRAPHMODE_CUPTI_BUFFERS says cupti-python."""
    return CUPTI_PYTHON if os.environ.get(ENV, "").strip().lower() == CUPTI_PYTHON else RAW


class RawBuffers:
    """The buffer callbacks of one CUPTI session: buffers of `size` bytes, each completed buffer's valid bytes
    appended to `sink`; `errors` gets what went wrong inside a callback (it must not raise into CUPTI)."""

    def __init__(self, size: int, sink: list[bytes], errors: list[str]) -> None:
        self.size = size
        self.sink = sink
        self.errors = errors
        self._live = _LIVE
        # the C function pointers must outlive the registration: CUPTI keeps calling them until it is finalized
        self._request = _REQUEST(self._requested)
        self._complete = _COMPLETE(self._completed)

    def _requested(self, buffer: Any, size: Any, max_records: Any) -> None:
        try:
            block = (ctypes.c_uint8 * self.size)()  # malloc'd: aligned for CUPTI's 8 bytes
            address = ctypes.addressof(block)
            self._live[address] = block
            buffer[0] = address
            size[0] = self.size
            max_records[0] = 0
        except Exception as e:  # pragma: no cover - defensive: CUPTI then records nothing more
            buffer[0] = None
            size[0] = 0
            self._error(f"buffer request: {type(e).__name__}: {e}")

    def _completed(self, context: Any, stream_id: int, buffer: Any, size: int, valid: int) -> None:
        try:
            if buffer and valid:
                self.sink.append(ctypes.string_at(buffer, valid))
        except Exception as e:  # pragma: no cover - defensive
            self._error(f"buffer completed: {type(e).__name__}: {e}")
        finally:
            if buffer:
                self._live.pop(int(buffer), None)

    def _error(self, text: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(text)

    def register(self, library: str) -> None:
        """Registers both callbacks with the libcupti at `library` (the path cupti-python loaded); raises OSError or
        RuntimeError where that library cannot take them."""
        if not library:
            raise OSError("the libcupti that cupti-python loaded was not found in /proc/self/maps")
        lib = ctypes.CDLL(library)
        fn = lib.cuptiActivityRegisterCallbacks
        fn.argtypes = [_REQUEST, _COMPLETE]
        fn.restype = ctypes.c_int
        status = int(fn(self._request, self._complete))
        if status != 0:
            raise RuntimeError(f"cuptiActivityRegisterCallbacks returned CUptiResult {status}")
        global _registered
        _registered = self  # CUPTI holds these pointers until the next registration, whatever becomes of the session


def register_buffers(size: int, sink: list[bytes], errors: list[str], library: Callable[[], str],
                     fallback: Callable[[], None]) -> tuple[str, str, RawBuffers | None]:
    """Registers the session's buffer callbacks: ours (RawBuffers) unless GRAPHMODE_CUPTI_BUFFERS says cupti-python or
    ours cannot be registered, then `fallback` (cupti-python's). Returns the path taken, why ours was not ('' where it
    was, or was not asked for) and our callbacks (to keep)."""
    why = ""
    if wanted() == RAW:
        raw = RawBuffers(size, sink, errors)
        try:
            raw.register(library())
            return RAW, "", raw
        except (OSError, RuntimeError, AttributeError) as e:
            why = f"{type(e).__name__}: {e}"
    fallback()
    return CUPTI_PYTHON, why, None
