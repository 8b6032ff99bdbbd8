"""Quiet captures (tracer.cupti_session, CuptiSession quiet_captures): which API records a capture leaves out, and
when they are switched off and on again, driven through the session's API callback with a stand-in for CUPTI (no
GPU here; tests/test_gpu_topology_copy.py and benchmarks/notes/s26 ran the real one on the H200)."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from graphmode.tracer import cupti_session as cs
from graphmode.tracer.cupti_session import CuptiSession, api_needed, api_sparse, quiet_api
from graphmode.tracer.run_configs import session_kwargs, single_config


def test_a_quiet_capture_leaves_out_launches_memsets_and_events_not_what_breaks_a_capture() -> None:
    for name in ("cudaLaunchKernel_v7000", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemsetAsync_v3020",
                 "cudaEventRecord_v3020", "cudaStreamWaitEvent_v3020"):
        assert quiet_api(name, api_needed), name
    for name in ("cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020", "cudaMemcpyAsync_v3020",
                 "cudaStreamBeginCapture_v10000", "cudaStreamEndCapture_v10000", "cudaGraphInstantiate_v10000",
                 "cudaMalloc_v3020", "cudaGraphLaunch_v10000"):
        assert not quiet_api(name, api_needed), name
    # only what the session records at all: the sparse filter records no launch, so it has nothing to quiet
    assert not quiet_api("cudaLaunchKernel_v7000", api_sparse)
    assert quiet_api("cudaLaunchKernel_v7000", None)


def test_the_one_run_keeps_its_captures_quiet() -> None:
    assert single_config().quiet_captures
    assert session_kwargs(single_config())["quiet_captures"] is True


class _Cupti:
    """What _capture_call and _api_callback use of cupti-python: the per-id switches, logged."""

    def __init__(self) -> None:
        self.switched: list[tuple[str, int, int]] = []
        self.now = 0
        self.ApiCallbackSite = SimpleNamespace(API_ENTER=0, API_EXIT=1)

    def activity_enable_driver_api(self, cbid: int, on: int) -> None:
        self.switched.append(("driver", cbid, on))

    def activity_enable_runtime_api(self, cbid: int, on: int) -> None:
        self.switched.append(("runtime", cbid, on))

    def get_timestamp(self) -> int:
        return self.now


RT_BEGIN, RT_END, DRV_BEGIN, DRV_END = 101, 102, 201, 202
QUIET = [("runtime", 7), ("driver", 8)]


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> tuple[CuptiSession, _Cupti, list[int]]:
    fake = _Cupti()
    monkeypatch.setattr(cs, "cupti_module", lambda: fake)
    thread = [1]
    monkeypatch.setattr(cs.threading, "get_native_id", lambda: thread[0])
    s = CuptiSession(api_filter="needed", quiet_captures=True)
    s._capture_cbids = {("runtime", RT_BEGIN): "begin", ("runtime", RT_END): "end",
                        ("driver", DRV_BEGIN): "begin", ("driver", DRV_END): "end"}
    s._quiet_cbids = list(QUIET)
    return s, fake, thread


_returns: list[ctypes.c_int] = []  # kept alive: the callback data points at them


def _call(s: CuptiSession, api: str, cbid: int, enter: bool, returned: int = 0) -> None:
    value = ctypes.c_int(returned)
    _returns.append(value)
    cd = SimpleNamespace(callback_site=0 if enter else 1, correlation_id=1,
                         function_return_value=0 if enter else ctypes.addressof(value))
    s._api_callback(api, cbid, cd)


def _capture(s: CuptiSession, fake: _Cupti, begin_at: int, end_at: int, returned: int = 0) -> None:
    """cudaStreamBeginCapture around cuStreamBeginCapture, then cudaStreamEndCapture around cuStreamEndCapture."""
    fake.now = begin_at
    _call(s, "runtime", RT_BEGIN, True)
    _call(s, "driver", DRV_BEGIN, True)
    _call(s, "driver", DRV_BEGIN, False, returned)
    _call(s, "runtime", RT_BEGIN, False, returned)
    fake.now = end_at
    _call(s, "runtime", RT_END, True)
    _call(s, "driver", DRV_END, True)
    _call(s, "driver", DRV_END, False)
    _call(s, "runtime", RT_END, False)


def test_a_capture_is_quiet_from_its_outermost_begin_returning_to_its_outermost_end_entered(session) -> None:
    s, fake, _ = session
    fake.now = 1000
    _call(s, "runtime", RT_BEGIN, True)
    _call(s, "driver", DRV_BEGIN, True)
    _call(s, "driver", DRV_BEGIN, False)
    assert fake.switched == []  # the runtime's call around the driver's has not returned yet
    _call(s, "runtime", RT_BEGIN, False)
    assert fake.switched == [("runtime", 7, 0), ("driver", 8, 0)]
    fake.now = 4000
    _call(s, "runtime", RT_END, True)  # on again before the EndCapture runs: its records are kept
    assert fake.switched[2:] == [("runtime", 7, 1), ("driver", 8, 1)]
    _call(s, "driver", DRV_END, True)
    _call(s, "driver", DRV_END, False)
    _call(s, "runtime", RT_END, False)
    assert len(fake.switched) == 4
    assert s.quiet == {"captures": 1, "ns": 3000, "errors": 0}


def test_a_capture_that_failed_to_begin_is_not_quiet(session) -> None:
    s, fake, _ = session
    _capture(s, fake, 10, 20, returned=900)  # cudaErrorStreamCaptureUnsupported
    assert fake.switched == []
    assert s.quiet["captures"] == 0 and s._captures_open == 0


def test_overlapping_captures_on_two_threads_are_quiet_until_the_last_ends(session) -> None:
    s, fake, thread = session
    fake.now = 100
    _call(s, "driver", DRV_BEGIN, True)
    _call(s, "driver", DRV_BEGIN, False)  # thread 1 begins (a driver-only program)
    thread[0] = 2
    fake.now = 200
    _call(s, "driver", DRV_BEGIN, True)
    _call(s, "driver", DRV_BEGIN, False)  # thread 2 begins: already quiet
    assert fake.switched == [("runtime", 7, 0), ("driver", 8, 0)]
    fake.now = 300
    _call(s, "driver", DRV_END, True)  # thread 2 ends: thread 1 still captures
    _call(s, "driver", DRV_END, False)
    assert len(fake.switched) == 2
    thread[0] = 1
    fake.now = 500
    _call(s, "driver", DRV_END, True)
    assert fake.switched[2:] == [("runtime", 7, 1), ("driver", 8, 1)]
    assert s.quiet == {"captures": 1, "ns": 400, "errors": 0}


def test_an_end_with_no_capture_begun_switches_nothing(session) -> None:
    s, fake, _ = session
    _call(s, "runtime", RT_END, True)
    _call(s, "runtime", RT_END, False)
    assert fake.switched == [] and s._captures_open == 0
