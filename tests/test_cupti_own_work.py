"""CuptiSession.own_work: graphmode's own CUDA work inside the program's run (a copy of a graph being destroyed,
graphmode's own empty graph after an untraced capture) fires resource callbacks that are not the program's. SYNTHETIC:
the resource callback is driven with a stand-in for cupti-python's module (the ids and clock it reads), no GPU."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from graphmode.tracer import cupti_session
from graphmode.tracer.cupti_session import CuptiSession


class _FakeCupti:
    """What CuptiSession._resource_callback and own_work read of cupti-python: a clock, the callback data's graph
    descriptor, and the ids of graphs, nodes and executables (here the handles themselves)."""

    def __init__(self) -> None:
        self.now = 1000
        self.descriptors: dict[int, Any] = {}  # a resource descriptor (a pointer to CUpti_GraphData) -> its fields
        self.GraphData = SimpleNamespace(from_ptr=lambda desc: self.descriptors[desc])

    def get_timestamp(self) -> int:
        self.now += 10
        return self.now

    @staticmethod
    def get_graph_id(handle: int) -> int:
        return handle

    @staticmethod
    def get_graph_node_id(handle: int) -> int:
        return handle

    @staticmethod
    def get_graph_exec_id(handle: int) -> int:
        return handle


def _graph_data(graph: int, exec_handle: int = 0) -> Any:
    return SimpleNamespace(graph=graph, node=0, original_graph=0, original_node=0, dependency=0, graph_exec=exec_handle,
                           node_type=0)


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> tuple[CuptiSession, _FakeCupti]:
    fake = _FakeCupti()
    monkeypatch.setattr(cupti_session, "cupti_module", lambda: fake)
    s = CuptiSession()
    s._cb_names = {1: "GRAPH_CREATED", 2: "GRAPHEXEC_CREATED"}
    return s, fake


def _fire(s: CuptiSession, cbid: int, data: Any) -> None:
    fake = cupti_session.cupti_module()
    desc = len(fake.descriptors) + 1
    fake.descriptors[desc] = data
    s._resource_callback(cbid, SimpleNamespace(resource_descriptor=desc))


def test_graphmodes_own_work_fires_no_callback_the_session_records_and_its_span_is_kept(session) -> None:
    s, fake = session
    _fire(s, 1, _graph_data(3))  # the program's graph, before
    with s.own_work():
        _fire(s, 1, _graph_data(4))  # graphmode's own graph and its executable
        _fire(s, 2, _graph_data(4, exec_handle=5))
        with s.own_work():  # nested (a copy that fails and is read instead)
            _fire(s, 1, _graph_data(6))
        _fire(s, 1, _graph_data(7))  # still inside the outer own work
        # another thread meanwhile (the program's, while graphmode works on this one): recorded
        other = threading.Thread(target=_fire, args=(s, 1, _graph_data(8)))
        other.start()
        other.join()

        # and graphmode's own work on another thread at the same time (two of the program's threads destroying graphs,
        # each copied): skipped there, and this thread's still skipped after it ends
        entered, release = threading.Event(), threading.Event()

        def other_own() -> None:
            with s.own_work():
                entered.set()
                release.wait(5)
                _fire(s, 1, _graph_data(10))
        other = threading.Thread(target=other_own)
        other.start()
        assert entered.wait(5)
        _fire(s, 1, _graph_data(11))  # while the other thread is inside its own work too
        release.set()
        other.join()
        _fire(s, 1, _graph_data(12))  # and after it left
    _fire(s, 2, _graph_data(3, exec_handle=9))  # the program's, after
    assert [(e.cbid, e.graph_id, e.exec_id) for e in s.raw.resource_events] == [
        ("GRAPH_CREATED", 3, 0), ("GRAPH_CREATED", 8, 0), ("GRAPHEXEC_CREATED", 3, 9)]
    tid = threading.get_native_id()
    # the spans on CUPTI's clock, each on its thread: the API records inside them are dropped at decode (tracer.decode)
    mine = [(a, b) for t, a, b in s.raw.own_spans if t == tid]
    assert len(s.raw.own_spans) == 3 and len(mine) == 2
    (i0, i1), (o0, o1) = mine
    assert o0 < i0 < i1 < o1 <= fake.now
    assert s._own_depth == {}


def test_own_work_ends_when_graphmodes_own_call_raises(session) -> None:
    s, _ = session
    with pytest.raises(RuntimeError):
        with s.own_work():
            raise RuntimeError("cuGraphInstantiate failed")
    _fire(s, 1, _graph_data(3))
    assert [e.graph_id for e in s.raw.resource_events] == [3] and len(s.raw.own_spans) == 1


def test_the_api_filter_decides_once_a_process_and_switches_each_attach() -> None:
    """CuptiSession._filter_api (SYNTHETIC: cupti-python's two callback-id enums and its per-id switches stood in for):
    every id but the enum's sentinels is switched, on where the filter keeps its name, off elsewhere; the counts say
    how many; a second session's filter (an attach after an untraced capture) switches the same ids again without
    asking the filter about any name."""
    import enum

    Driver = enum.IntEnum("Driver", {"CUPTI_DRIVER_TRACE_CBID_INVALID": 0, "cuLaunchKernel": 1, "cuCtxGetDevice": 2,
                                     "cuGraphLaunch": 3, "CUPTI_DRIVER_TRACE_CBID_SIZE": 4})
    Runtime = enum.IntEnum("Runtime", {"cudaLaunchKernel_v7000": 1, "cudaGetDevice_v3020": 2,
                                       "CUPTI_RUNTIME_TRACE_CBID_FORCE_INT": 0x7FFFFFFF})
    switched: list[tuple[str, int, int]] = []
    cupti = SimpleNamespace(driver_api_trace_cbid=Driver, runtime_api_trace_cbid=Runtime,
                            activity_enable_driver_api=lambda cbid, on: switched.append(("driver", cbid, on)),
                            activity_enable_runtime_api=lambda cbid, on: switched.append(("runtime", cbid, on)))
    asked: list[str] = []

    def keep(name: str) -> bool:
        asked.append(name)
        return "Launch" in name

    counts = CuptiSession._filter_api(cupti, keep)
    assert switched == [("driver", 1, 1), ("driver", 2, 0), ("driver", 3, 1), ("runtime", 1, 1), ("runtime", 2, 0)]
    assert counts == {"driver_recorded": 2, "driver_off": 1, "runtime_recorded": 1, "runtime_off": 1}
    assert sorted(asked) == sorted(["cuLaunchKernel", "cuCtxGetDevice", "cuGraphLaunch", "cudaLaunchKernel_v7000",
                                    "cudaGetDevice_v3020"])
    first, asked[:] = list(switched), []
    switched.clear()
    assert CuptiSession._filter_api(cupti, keep) == counts and switched == first and asked == []


def test_the_loaded_cupti_library_is_found_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """loaded_cupti_library (SYNTHETIC: a stand-in /proc/self/maps and cupti-python): the path of the libcupti mapped
    into the process, read from the maps once; later calls (each attach) do not read them again."""
    import io

    opened: list[str] = []
    maps = ("7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n\n"
            "7f20-7f30 r-xp 00000000 08:01 2 /opt/nvidia/cu13/lib/libcupti.so.13\n")

    def fake_open(path: str, *args: Any) -> io.StringIO:
        opened.append(path)
        return io.StringIO(maps)

    monkeypatch.setattr(cupti_session, "_LOADED_CUPTI", [])
    monkeypatch.setattr(cupti_session, "open", fake_open, raising=False)
    monkeypatch.setattr(cupti_session, "cupti_module", lambda: SimpleNamespace(get_timestamp=lambda: 1))
    assert cupti_session.loaded_cupti_library() == "/opt/nvidia/cu13/lib/libcupti.so.13"
    assert cupti_session.loaded_cupti_library() == "/opt/nvidia/cu13/lib/libcupti.so.13"
    assert opened == ["/proc/self/maps"]
