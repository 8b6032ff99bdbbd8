"""tracer.cupti_buffers: CUPTI's buffer callbacks through ctypes, driven here as CUPTI drives them (no GPU: the C
function pointers are called directly, with the C types CUPTI passes)."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from graphmode.tracer import cupti_buffers
from graphmode.tracer.cupti_buffers import CUPTI_PYTHON, ENV, RAW, RawBuffers, register_buffers, wanted


def _request(raw: RawBuffers) -> tuple[int, int]:
    """Asks for a buffer as CUPTI does: (address, size) handed back through the out-pointers."""
    buffer, size, records = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t(7)
    raw._request(ctypes.byref(buffer), ctypes.byref(size), ctypes.byref(records))
    assert records.value == 0  # no limit on records: CUPTI fills the buffer
    assert buffer.value is not None
    return int(buffer.value), int(size.value)


def test_a_completed_buffer_gives_its_valid_bytes_and_is_let_go() -> None:
    sink: list[bytes] = []
    raw = RawBuffers(4096, sink, [])
    address, size = _request(raw)
    assert size == 4096 and address % 8 == 0  # CUPTI wants 8-byte aligned buffers
    record = bytes(range(40))
    ctypes.memmove(address, record, len(record))  # CUPTI writes records ...
    raw._complete(None, 3, address, size, len(record))  # ... and hands the buffer back with its valid size
    assert sink == [record]
    assert raw._live == {}  # the buffer is no longer held


def test_an_empty_buffer_adds_nothing() -> None:
    sink: list[bytes] = []
    raw = RawBuffers(1024, sink, [])
    address, size = _request(raw)
    raw._complete(None, 0, address, size, 0)
    assert sink == [] and raw._live == {}


def test_buffers_are_distinct_while_cupti_holds_them() -> None:
    raw = RawBuffers(1024, [], [])
    a, _ = _request(raw)
    b, _ = _request(raw)
    assert a != b and set(raw._live) == {a, b}
    raw._complete(None, 0, b, 1024, 8)
    raw._complete(None, 0, a, 1024, 16)
    assert [len(c) for c in raw.sink] == [8, 16]


def test_cupti_python_is_asked_for_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert wanted() == RAW
    monkeypatch.setenv(ENV, "cupti-python")
    assert wanted() == CUPTI_PYTHON
    called: list[bool] = []
    path, why, raw = register_buffers(1024, [], [], lambda: "", lambda: called.append(True))
    assert (path, why, raw, called) == (CUPTI_PYTHON, "", None, [True])


def test_a_library_that_cannot_take_the_callbacks_falls_back_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    called: list[bool] = []
    path, why, raw = register_buffers(1024, [], [], lambda: "", lambda: called.append(True))
    assert path == CUPTI_PYTHON and raw is None and called == [True]
    assert "libcupti" in why  # no libcupti loaded in this process
    # a library without cuptiActivityRegisterCallbacks (libc): the symbol is missing
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no libc to stand in for a library without the CUPTI symbol")
    called.clear()
    path, why, raw = register_buffers(1024, [], [], lambda: str(libc), lambda: called.append(True))
    assert path == CUPTI_PYTHON and called == [True] and "cuptiActivityRegisterCallbacks" in why
    assert cupti_buffers._registered is None or cupti_buffers._registered is not raw


def test_a_buffer_outlives_the_callbacks_that_handed_it_out() -> None:
    """A buffer given to CUPTI under one session's callbacks and handed back under the next one's is still alive (one
    registry for the process), its bytes copied by the callbacks registered now, then let go."""
    first = RawBuffers(2048, [], [])
    address, size = _request(first)
    del first  # the session that registered them is gone; CUPTI still holds the buffer
    ctypes.memmove(address, b"\x01" * 24, 24)
    sink: list[bytes] = []
    RawBuffers(2048, sink, [])._complete(None, 0, address, size, 24)
    assert sink == [b"\x01" * 24]
    assert address not in cupti_buffers._LIVE
