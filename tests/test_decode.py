"""The CUPTI buffer decoder on synthetic buffers (built here from cupti-python's record dtypes).

No GPU needed: the records are laid out as CUPTI lays them out (back to back, each starting with its
kind), with values chosen in the test; the decoder must return exactly those values.
"""

from __future__ import annotations

import numpy as np
import pytest

cupti_mod = pytest.importorskip("cupti.cupti", reason="cupti-python is a dependency: pip install -e '.[test]'")

from graphmode.tracer.cupti_session import RawActivity  # noqa: E402
from graphmode.tracer.decode import api_category, decode, lookup, records_by_kind  # noqa: E402

K = cupti_mod.ActivityKind
F = cupti_mod.ActivityFlag


def _record(dtype: np.dtype, kind: int, **fields: object) -> bytes:
    rec = np.zeros(1, dtype=dtype)
    rec["kind"] = kind
    for name, value in fields.items():
        rec[name] = value
    return rec.tobytes()


def _kernel(start: int, end: int, corr: int, name_ptr: int, graph_id: int = 0, node_id: int = 0, stream: int = 7) -> bytes:
    return _record(cupti_mod.activity_kernel10_dtype, int(K.CONCURRENT_KERNEL), start=start, end=end, correlation_id=corr,
                   name=name_ptr, graph_id=graph_id, graph_node_id=node_id, stream_id=stream, grid_x=4, block_x=256,
                   registers_per_thread=16)


def _marker(flag: int, mid: int, ts: int, name_ptr: int = 0, tid: int = 42) -> bytes:
    rec = np.zeros(1, dtype=cupti_mod.activity_marker2_dtype)
    rec["kind"] = int(K.MARKER)
    rec["flags_"] = flag
    rec["id"] = mid
    rec["timestamp"] = ts
    rec["name"] = name_ptr
    rec["object_id"]["pt"]["thread_id"] = tid
    return rec.tobytes()


@pytest.fixture
def raw() -> RawActivity:
    """Synthetic: two buffers of mixed records."""
    api = cupti_mod.activity_api_dtype
    first = b"".join([
        _record(api, int(K.DRIVER), cbid=1, start=100, end=120, correlation_id=1, thread_id=42),
        _kernel(130, 150, 1, 0x1000),
        _record(cupti_mod.activity_memcpy6_dtype, int(K.MEMCPY), copy_kind=1, bytes=4096, start=160, end=170,
                correlation_id=2, stream_id=7),
        _record(cupti_mod.activity_memcpy6_dtype, int(K.MEMCPY), copy_kind=8, bytes=64, start=171, end=172,
                correlation_id=3, stream_id=7),
        _marker(int(F.MARKER_START), 1, 90, 0x2000),
    ])
    second = b"".join([
        _kernel(200, 260, 4, 0x1000, graph_id=5, node_id=77),
        _record(cupti_mod.activity_graph_trace2_dtype, int(K.GRAPH_TRACE), start=300, end=380, graph_id=5, correlation_id=5,
                stream_id=7),
        _record(cupti_mod.activity_synchronization2_dtype, int(K.SYNCHRONIZATION), type=3, start=390, end=400,
                correlation_id=6, stream_id=7),
        _marker(int(F.MARKER_INSTANTANEOUS), 2, 250, 0x3000),
        _marker(0, 1, 500),  # the end of range 1
        _marker(int(F.MARKER_START), 3, 600, 0x2000),  # never closed
    ])
    return RawActivity(chunks=[first, second], names={0x1000: "scale<float>", 0x2000: "step", 0x3000: "mark"})


def test_records_are_walked_back_to_back(raw: RawActivity) -> None:
    recs = records_by_kind(raw.chunks)
    assert {k: len(v) for k, v in recs.items()} == {
        int(K.DRIVER): 1, int(K.CONCURRENT_KERNEL): 2, int(K.MEMCPY): 2, int(K.MARKER): 4,
        int(K.GRAPH_TRACE): 1, int(K.SYNCHRONIZATION): 1,
    }
    assert list(recs[int(K.CONCURRENT_KERNEL)]["start"]) == [130, 200]


def test_unknown_record_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown CUPTI record kind 9999"):
        records_by_kind([np.array([9999, 0], dtype=np.int32).tobytes()])


def test_decode_gives_the_values_written(raw: RawActivity) -> None:
    out = decode(raw, pass_id=3, graph_labels={5: "step graph"})
    spans = out["gpu_spans"]
    by_kind = {k: np.nonzero(spans["kind"] == k)[0] for k in ("kernel", "memcpy", "graph")}
    kernels = by_kind["kernel"]
    assert list(spans["name"][kernels]) == ["scale<float>", "scale<float>"]
    assert list(spans["graph_id"][kernels]) == [0, 5] and list(spans["graph_node_id"][kernels]) == [0, 77]
    assert list(spans["grid_x"][kernels]) == [4, 4] and list(spans["registers_per_thread"][kernels]) == [16, 16]
    copies = by_kind["memcpy"]
    assert list(spans["name"][copies]) == ["memcpy HtoD", "memcpy DtoD"]
    assert list(spans["copy_kind"][copies]) == ["HtoD", "DtoD"] and list(spans["bytes"][copies]) == [4096, 64]
    (g,) = by_kind["graph"]
    assert spans["name"][g] == "step graph" and spans["end_ns"][g] - spans["start_ns"][g] == 80
    assert set(spans["pass_id"]) == {3}
    assert list(out["synchronizations"]["type"]) == ["stream"]
    nvtx = out["markers"]
    rows = sorted(zip(nvtx["name"], nvtx["start_ns"], nvtx["end_ns"]), key=lambda r: r[1])
    assert rows == [("step", 90, 500), ("mark", 250, 250), ("step", 600, 600)]
    assert list(out["api_calls"]["correlation_id"]) == [1]


def test_graphmode_own_calls_are_dropped(raw: RawActivity) -> None:
    raw.own_spans.append((42, 95, 125))  # brackets the one API record, on its thread
    assert "api_calls" in decode(raw, 0) and len(decode(raw, 0)["api_calls"]["start_ns"]) == 0
    raw.own_spans[:] = [(43, 95, 125)]  # another thread: kept
    assert len(decode(raw, 0)["api_calls"]["start_ns"]) == 1


def test_lookup_maps_each_distinct_value_once() -> None:
    calls: list[int] = []

    def default(v: int) -> str:
        calls.append(v)
        return f"?{v}"

    got = lookup(np.array([3, 1, 3, 3, 2]), {1: "one", 2: "two"}, default)
    assert list(got) == ["?3", "one", "?3", "?3", "two"] and calls == [3]
    assert len(lookup(np.array([], dtype=np.int64), {}, str)) == 0


@pytest.mark.parametrize("name, category", [
    ("cuLaunchKernel", "kernel_launch"), ("cudaLaunchKernel_v7000", "kernel_launch"), ("cuGraphLaunch", "graph_launch"),
    ("cudaGraphInstantiateWithFlags_v11040", "instantiate"), ("cuGraphUpload", "upload"), ("cuGraphExecUpdate_v2", "update"),
    ("cuStreamBeginCapture_v2", "capture"), ("cudaStreamEndCapture_v10000", "capture"), ("cuGraphAddKernelNode_v2", "graph_build"),
    ("cuGraphExecDestroy", "graph_destroy"), ("cuStreamSynchronize", "sync"), ("cuMemcpyDtoHAsync_v2", "memcpy"),
    ("cuMemsetD32Async", "memset"), ("cuMemAlloc_v2", "memory"), ("cuEventRecord", "event"), ("cuModuleLoadData", "module"),
    ("cuCtxGetCurrent", "other"),
])
def test_api_categories(name: str, category: str) -> None:
    assert api_category(name) == category


def test_graph_launches_find_their_graph_by_correlation() -> None:
    """Synthetic: three launch calls; two launched graph work (ids 5 and 9), one launched nothing traced."""
    from graphmode.tracer.passes import launch_events

    api = {"category": np.array(["graph_launch", "kernel_launch", "graph_launch", "graph_launch"], dtype=object),
           "correlation_id": np.array([10, 11, 12, 13]), "start_ns": np.array([1, 2, 3, 4]), "end_ns": np.array([5, 6, 7, 8]),
           "thread_id": np.array([42, 42, 42, 42])}
    spans = {"graph_id": np.array([0, 5, 5, 9]), "correlation_id": np.array([11, 10, 10, 13])}
    ev = launch_events(api, spans)
    assert ev is not None
    assert list(ev["graph_id"]) == [5, 9] and list(ev["correlation_id"]) == [10, 13]
    assert list(ev["start_ns"]) == [1, 4] and list(ev["event"]) == ["launch", "launch"]


def test_api_names_need_no_cupti_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding runs after the session detached CUPTI (cuptiFinalize); a CUPTI call would attach it
    again, so names come from cupti-python's callback-id enums. Synthetic driver + runtime records."""
    def attach(*_: object) -> str:
        raise AssertionError("decode called cuptiGetCallbackName")

    monkeypatch.setattr(cupti_mod, "get_callback_name", attach)
    api = cupti_mod.activity_api_dtype
    launch = int(cupti_mod.driver_api_trace_cbid.cuLaunchKernel)
    rt_launch = int(cupti_mod.runtime_api_trace_cbid.cudaLaunchKernel_v7000)
    chunk = b"".join([
        _record(api, int(K.DRIVER), cbid=launch, start=10, end=20, correlation_id=1, thread_id=42),
        _record(api, int(K.RUNTIME), cbid=rt_launch, start=5, end=25, correlation_id=1, thread_id=42),
        _record(api, int(K.DRIVER), cbid=1, start=30, end=31, correlation_id=2, thread_id=42),
    ])
    calls = decode(RawActivity(chunks=[chunk]), 0)["api_calls"]
    got = sorted(zip(calls["start_ns"], calls["name"], calls["category"]))
    assert got == [(5, "cudaLaunchKernel_v7000", "kernel_launch"), (10, "cuLaunchKernel", "kernel_launch"),
                   (30, "cuInit", "other")]


def test_untimed_gpu_records_are_left_out_and_counted() -> None:
    # SYNTHETIC columns: after a device-side assert, CUPTI flushed records with start 0 (seen on the H200: every
    # kernel and graph record of a failed transformers run); one record ends before it starts
    from graphmode.tracer.decode import drop_untimed_spans

    tables = {"gpu_spans": {"kind": np.array(["kernel", "kernel", "graph", "kernel", "memcpy"], dtype=object),
                            "start_ns": np.array([100, 0, 0, 300, 500], dtype=np.int64),
                            "end_ns": np.array([200, 0, 0, 250, 600], dtype=np.int64),
                            "name": np.array(["a", "b", "g", "c", "m"], dtype=object)}}
    note = drop_untimed_spans(tables, 1)
    assert tables["gpu_spans"]["name"].tolist() == ["a", "m"]
    assert note is not None and note.startswith("pass 1: 3 of 5 GPU records had no timestamps (1 graph, 2 kernel)")
    assert drop_untimed_spans(tables, 1) is None  # all timed now: nothing to say


def _notes_of_two_runs(path, first: list[str], later: list[str]) -> list[str]:
    """meta.notes after a first run adds `first` and a run appended to the same trace adds `later`."""
    from graphmode.tracer.store import TraceWriter, load

    w = TraceWriter(path, {"workload": "synthetic"})
    for n in first:
        w.add_note(n)
    w.close()
    w = TraceWriter(path, append=True)
    for n in later:
        w.add_note(n)
    w.close(keep_status=True)
    with load(path) as t:
        return list(t.meta["notes"])


def test_a_later_runs_note_keeps_the_earlier_runs_notes(tmp_path) -> None:
    assert _notes_of_two_runs(tmp_path / "t.gmtrace", ["measuring run: one"], ["detail run: two"]) == \
        ["measuring run: one", "detail run: two"]


def test_a_note_every_run_makes_is_kept_once(tmp_path) -> None:
    """Each run of a script meets the same program (its torch.profiler start, say): the same note from the
    measuring and the detail run is one note, a different one from the later run is added."""
    same = "the program started torch's profiler 1 time(s)"
    assert _notes_of_two_runs(tmp_path / "t.gmtrace", [same], [same, "pass 1: something else"]) == [same, "pass 1: something else"]


def test_a_pass_without_graph_trace_folds_each_replay_from_its_nodes() -> None:
    """Synthetic: a region traced with graph_trace=False (graphmode.trace(): GRAPH_TRACE crashed the replay of a graph
    instantiated before CUPTI attached). One eager kernel; two cuGraphLaunch calls (correlation 10 and 11), whose nodes
    came as kernel and memset records: replay 10 is a memset [90, 95] on stream 3 and two kernels [100, 110] and
    [105, 130] of graph 7; replay 11 one kernel [200, 220] that carries no graph id, found by its launch's correlation.
    Each replay becomes one graph span from its first node's start to its last node's end, on its first node's stream;
    the node records leave the table."""
    api = cupti_mod.activity_api_dtype
    launch = int(getattr(cupti_mod.driver_api_trace_cbid, "cuGraphLaunch"))
    chunk = b"".join([
        _kernel(10, 20, 1, 0x1000),
        _record(api, int(K.DRIVER), cbid=launch, start=80, end=85, correlation_id=10, thread_id=42),
        _record(api, int(K.DRIVER), cbid=launch, start=150, end=152, correlation_id=11, thread_id=42),
        _record(cupti_mod.activity_memset4_dtype, int(K.MEMSET), bytes=64, start=90, end=95, correlation_id=10,
                stream_id=3, graph_id=7, graph_node_id=1),
        _kernel(105, 130, 10, 0x1000, graph_id=7, node_id=3),
        _kernel(100, 110, 10, 0x1000, graph_id=7, node_id=2),
        _kernel(200, 220, 11, 0x1000),
    ])
    raw = RawActivity(chunks=[chunk], names={0x1000: "scale<float>"}, graph_from_nodes=True)
    spans = decode(raw, pass_id=0, graph_labels={7: "step graph"})["gpu_spans"]
    rows = sorted(zip(spans["kind"], spans["start_ns"], spans["end_ns"], spans["graph_id"], spans["correlation_id"],
                      spans["stream_id"], spans["name"]), key=lambda r: r[1])
    assert rows == [("kernel", 10, 20, 0, 1, 7, "scale<float>"),
                    ("graph", 90, 130, 7, 10, 3, "step graph"),
                    ("graph", 200, 220, 0, 11, 7, "graph 0")]
    # recorded with GRAPH_TRACE (the default), the same node records stay what they are
    raw.graph_from_nodes = False
    assert list(decode(raw, pass_id=0)["gpu_spans"]["kind"]).count("graph") == 0
