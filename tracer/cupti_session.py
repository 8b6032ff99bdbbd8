"""A CUPTI activity + resource-callback session through cupti-python.

Design (docs/design.md, 'Tracer'): while the workload runs, the buffer-completed callback only copies
the buffer's valid bytes (one memmove per buffer, no per-record Python work: the callbacks are registered through
ctypes, tracer.cupti_buffers, because cupti-python's wrap every record in an object first); decoding into columns
happens after the run, vectorised with the numpy record dtypes that cupti-python exposes. Graph and
node ids come from CUPTI *resource* callbacks, subscribed for the graph/node/exec callback ids only:
a Python callback on a per-launch callback id would cost tens of microseconds per launch.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

# record_dtypes and cupti_module are imported from here too (their home is cupti_records)
from graphmode.tracer.cuda_util import check
from graphmode.tracer.cupti_buffers import RawBuffers, register_buffers
from graphmode.tracer.cupti_records import api_category, cupti_module, name_pointers, record_dtypes, record_size
from graphmode.tracer.phases import mark
from graphmode.tracer.sources import location_text, user_source
from graphmode.tracer.topology import read_topology

BUFFER_SIZE = 8 * 1024 * 1024
# copies of destroyed graphs kept for stop() to read (CuptiSession.deferred_topology); past it, a graph is read as it is
# destroyed (a program that captures a new graph each step would otherwise hold a copy of every one)
MAX_COPIES = 1024


def timestamp() -> int:
    """The CUPTI clock, in ns: the clock of every record in a trace."""
    return int(cupti_module().get_timestamp())


@dataclass
class ResourceEvent:
    """One graph/node/exec resource callback, with the ids CUPTI assigned."""

    cbid: str
    ts: int
    thread_id: int
    graph_id: int = 0
    original_graph_id: int = 0
    node_id: int = 0
    original_node_id: int = 0
    dependency_id: int = 0
    node_type: int = -1
    exec_id: int = 0
    graph_handle: int = 0
    node_handle: int = 0
    # 'file:line function' of the user line that created the node; during the run a cheap
    # (code object, line) pair, turned into text after the run (tracer.sources.resolve_location)
    stack: Any = ""


@dataclass
class RawActivity:
    """Bytes of completed CUPTI buffers and everything needed to decode them later."""

    chunks: list[bytes] = field(default_factory=list)
    # how CUPTI's buffers reached the tracer (tracer.cupti_buffers): 'raw' (our ctypes callbacks) or 'cupti-python',
    # and why not 'raw' where it was asked for and could not be registered
    buffers: str = ""
    buffers_fallback: str = ""
    names: dict[int, str] = field(default_factory=dict)  # char* -> string, resolved before CUPTI lets go
    dropped: int = 0
    resource_events: list[ResourceEvent] = field(default_factory=list)
    # (api, correlation id) -> 'file:line function' of the user line that made the call
    api_sources: dict[tuple[str, int], str] = field(default_factory=dict)
    # graph id -> topology read when the graph was instantiated (script runs)
    topologies: dict[int, Any] = field(default_factory=dict)
    # (thread, start, end) of graphmode's own CUDA calls made while tracing (topology reads): the
    # decoder drops the API records inside them, they are not the program's
    own_spans: list[tuple[int, int, int]] = field(default_factory=list)
    callback_errors: list[str] = field(default_factory=list)
    # with api_filter='needed': callback ids recorded and switched off, per API
    api_filter: dict[str, int] = field(default_factory=dict)
    # graph detail without GRAPH_TRACE records (CuptiSession graph_trace=False): the decoder folds the records of each
    # replay's nodes into one whole-graph span
    graph_from_nodes: bool = False
    # how the topologies of graphs destroyed while tracing were read: {'copied': n, 'read_at_destroy': n}
    topology_copies: dict[str, int] = field(default_factory=dict)


# One callback per graph or executable: rare, so a Python callback on them costs nothing that matters.
_GRAPH_CBIDS = (
    "GRAPH_CREATED",
    "GRAPH_CLONED",
    "GRAPH_DESTROY_STARTING",
    "GRAPHEXEC_CREATE_STARTING",
    "GRAPHEXEC_CREATED",
    "GRAPHEXEC_DESTROY_STARTING",
)
# One callback per node (and per edge): a few microseconds each in Python, which adds up during the
# capture of a graph of hundreds of nodes. Needed for node-detail passes (the clone ids that replayed
# nodes carry) and for the line that created each node; the measuring run leaves them off.
_NODE_CBIDS = (
    "GRAPHNODE_CREATED",
    "GRAPHNODE_CLONED",
    "GRAPHNODE_DESTROY_STARTING",
    "GRAPHNODE_DEPENDENCY_CREATED",
)

# API calls whose Python call site is recorded: the graph lifecycle (rare, so a Python callback on
# them costs nothing that matters) and, with launch_sources=True, every launch, copy and
# synchronization (tens of microseconds each: opt-in, and the report says so).
LIFECYCLE_API = r"^(cu|cuda)(Stream(BeginCapture|EndCapture)|Graph(Instantiate|Upload|ExecUpdate|Create|Destroy|ExecDestroy))"
LAUNCH_API = r"^(cu|cuda)(Launch|GraphLaunch|.*Synchronize|Memcpy|Memset)"


# API calls the analysis never reads and that frameworks make thousands of times per step (PyTorch
# calls cudaGetDevice ~2,700 times in a ResNet-18 training step; its allocator asks
# cudaStreamGetCaptureInfo on every allocation; XLA polls cuStreamQuery): getters, queries and
# context switches. Recording them slows exactly the launch-bound code graphmode measures.
_UNNEEDED_API = re.compile(r"Get|Query|IsCapturing|Peek|UpdateCaptureDependencies|ThreadExchangeStreamCaptureMode")


def api_needed(name: str) -> bool:
    """Whether the measuring run records this API (by name): launches, graph lifecycle, capture begin
    and end, synchronizations, copies, memsets, allocations, events, streams and module loads; not
    getters, queries or the categories nothing reads ('other': device/context bookkeeping)."""
    category = api_category(name)
    if category == "other":
        return False
    if category == "capture":
        return "BeginCapture" in name or "EndCapture" in name
    return not _UNNEEDED_API.search(name)


@functools.cache
def _api_switches(api: str, enum: Any, keep_api: Callable[[str], bool]) -> tuple[tuple[int, bool], ...]:
    """(callback id, whether its records are kept) for each of one API's callback ids in cupti-python's enum, by
    `keep_api` on its name; decided once a process for each API and filter."""
    return tuple((int(value), bool(keep_api(name))) for name, value in enum.__members__.items()
                 if int(value) > 0 and not name.endswith(("INVALID", "SIZE", "FORCE_INT")))


# The sparse filter of the measuring run: graph launches, the graph lifecycle (capture begin and end,
# explicit node building, instantiate, upload, whole-graph update, destroy) and synchronizations. Not
# kernel launches, copies, allocations or per-node parameter updates (XLA sets node parameters ~20
# times a step): their GPU records carry the work, and recording the calls measurably slowed
# launch-bound code on the H200 (benchmarks/tracer_costs.py, docs/benchmarks.md).
_SPARSE_CATEGORIES = ("graph_launch", "instantiate", "upload", "graph_destroy", "graph_build", "sync")


def api_sparse(name: str) -> bool:
    """Whether the sparse filter records this API (see _SPARSE_CATEGORIES)."""
    category = api_category(name)
    if category == "capture":
        return "BeginCapture" in name or "EndCapture" in name
    if category == "update":
        return "ExecUpdate" in name
    return category in _SPARSE_CATEGORIES and not _UNNEEDED_API.search(name)


def api_cbids(pattern: str) -> dict[str, list[int]]:
    """'driver'/'runtime' -> CUPTI callback ids whose function name matches `pattern`."""
    import re

    cupti = cupti_module()
    rx = re.compile(pattern)
    out: dict[str, list[int]] = {}
    for api, enum in (("driver", cupti.driver_api_trace_cbid), ("runtime", cupti.runtime_api_trace_cbid)):
        out[api] = sorted({int(v) for name, v in enum.__members__.items() if rx.match(name)})
    return out


class CuptiSession:
    """Collects CUDA API, GPU activity and graph resource events between start() and stop().

    detail='graph': a graph launch is one GRAPH_TRACE record; detail='node': every kernel/copy/memset
    of a replayed graph is its own record with graph and node ids. CUPTI cannot do both at once.
    """

    def __init__(
        self,
        detail: str = "graph",
        buffer_size: int = BUFFER_SIZE,
        on_node_created: Callable[[], Any] | None = None,
        nvtx: bool = False,
        source_api: str | None = None,
        snapshot_topology: bool = False,
        detach: bool = True,
        api_filter: str = "all",
        node_events: bool | None = None,
        callbacks: bool = True,
        gpu_kinds: bool = True,
        graph_trace: bool = True,
        copy_destroyed_graphs: bool = False,
    ):
        """`api_filter`: 'all' records every driver and runtime call; 'needed' only those api_needed()
        names. `node_events`: per-node resource callbacks (default: on, and always on at node detail,
        whose replayed kernels carry clone ids only those callbacks map back)."""
        if detail not in ("graph", "node"):
            raise ValueError(f"detail must be 'graph' or 'node', not {detail!r}")
        if api_filter not in ("all", "needed", "sparse", "none"):
            raise ValueError(f"api_filter must be 'all', 'needed', 'sparse' or 'none', not {api_filter!r}")
        self.detail = detail
        self.buffer_size = buffer_size
        self.raw = RawActivity()
        self._subscriber: int | None = None
        self._kinds: list[Any] = []
        self._on_node_created = on_node_created
        self._nvtx = nvtx
        self._source_api = source_api
        self._snapshot = snapshot_topology
        self._detach = detach
        self.api_filter = api_filter
        self.node_events = True if node_events is None or detail == "node" else node_events
        # callbacks=False: no Python callback at all (no graph ids from resource callbacks, no call
        # sites); the activity records alone, for a run that must not be slowed
        self.callbacks = callbacks
        self.gpu_kinds = gpu_kinds  # kernel, copy, memset, synchronization records (graph launches always)
        # graph detail: a replay's span from CUPTI's GRAPH_TRACE record (True), or folded from its nodes' kernel, copy
        # and memset records (False: a session attached in a process whose graphs may predate it, as
        # `graphmode.trace()` is; under GRAPH_TRACE, CUPTI 13.0 crashed the replay of a graph instantiated before it
        # attached, benchmarks/notes/s22)
        self.graph_trace = graph_trace or detail == "node"
        if not self.graph_trace and not gpu_kinds:
            raise ValueError("graph_trace=False folds each replay from its nodes' records: it needs gpu_kinds=True")
        self._graph_handles: dict[int, int] = {}  # graph id -> handle, for the program's graphs alive now
        # graph id -> a copy (cuGraphClone) of a program's graph destroyed while tracing, read at stop (deferred_topology)
        self._copies: dict[int, Any] = {}
        # thread -> depth of own_work() it is inside: its resource callbacks are graphmode's, not the program's (per
        # thread: two of the program's threads may destroy graphs, and so have them copied, at once)
        self._own_depth: dict[int, int] = {}
        # Where a graph's destruction is read: a copy now and the copy's topology at stop (copy_destroyed_graphs, unless
        # node callbacks are on: their clone ids name the program's nodes), or the graph itself now. PyTorch destroys
        # the captured graph inside its capture_end, within the program's capture block: reading it there (driver calls
        # and Python a node) cost a ViT's capture 0.6-1.0 ms more than the copy (benchmarks/notes/s26)
        self.deferred_topology = copy_destroyed_graphs and not self.node_events
        self.raw.topology_copies = {"copied": 0, "read_at_destroy": 0}
        self._instantiating: dict[int, int] = {}  # thread -> depth of instantiate calls it is inside
        self._instantiate_cbids: set[tuple[str, int]] = set()
        self._source_cbids: set[tuple[str, int]] = set()
        self._cb_names: dict[int, str] = {}
        self._lock = threading.Lock()
        self._raw_buffers: RawBuffers | None = None  # our buffer callbacks, kept alive while CUPTI may call them
        self.started = False
        # (api, cbdata, exiting) -> None, called for both sites of the followed API calls (tracer.graph_memory)
        self.on_api_call: Callable[[str, Any, bool], None] | None = None

    # -- CUPTI callbacks: keep them minimal, they run inside the workload -------------------------
    def _buffer_requested(self) -> tuple[int, int]:
        return self.buffer_size, 0

    def _buffer_completed(self, activities: Any) -> None:
        if not activities:
            return
        # Records are laid out back to back in CUPTI's buffer: copy the span from the first record
        # to the end of the last one in one memmove; decode() walks it after the run.
        first = int(activities[0].ptr)
        last = activities[-1]
        end = int(last.ptr) + record_size(int(last.kind))
        self.raw.chunks.append(ctypes.string_at(first, end - first))

    def _callback(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        # An exception must not escape into CUPTI (it would be printed and lost): keep a note.
        try:
            d = int(domain)
            if d == self._domain_resource:
                self._resource_callback(cbid, cbdata)
            elif d in self._domain_api:
                self._api_callback(self._domain_api[d], int(cbid), cbdata)
        except Exception as e:  # pragma: no cover - defensive
            if len(self.raw.callback_errors) < 20:
                self.raw.callback_errors.append(f"{type(e).__name__}: {e}")

    def _api_callback(self, api: str, cbid: int, cbdata: Any) -> None:
        cupti = cupti_module()
        cd = cbdata if hasattr(cbdata, "callback_site") else cupti.CallbackData.from_ptr(int(cbdata))
        enter = int(cd.callback_site) == int(cupti.ApiCallbackSite.API_ENTER)
        if self.on_api_call is not None:
            self.on_api_call(api, cd, not enter)
        if (api, cbid) in self._instantiate_cbids:
            # Graphs the driver creates inside an instantiation are its own (the executable's copy):
            # not the program's, and cuGraphGetNodes refuses them (CUDA_ERROR_INVALID_VALUE). Resource
            # callbacks fire inside the call, between its enter and exit.
            tid = threading.get_native_id()
            depth = self._instantiating.get(tid, 0) + (1 if enter else -1)
            self._instantiating[tid] = max(depth, 0)
        if not enter or (api, cbid) not in self._source_cbids:
            return

        self.raw.api_sources[(api, int(cd.correlation_id))] = user_source(sys._getframe(1))

    def _resource_callback(self, cbid: Any, cbdata: Any) -> None:
        cupti = cupti_module()
        cb_name = self._cb_names.get(int(cbid))
        if cb_name is None or (self._own_depth and threading.get_native_id() in self._own_depth):
            return
        rd = cbdata if hasattr(cbdata, "resource_descriptor") else cupti.ResourceData.from_ptr(int(cbdata))
        desc = int(rd.resource_descriptor)
        if not desc:
            return
        gd = cupti.GraphData.from_ptr(desc)
        tid = threading.get_native_id()
        ev = ResourceEvent(cbid=cb_name, ts=int(cupti.get_timestamp()), thread_id=tid)
        graph, node = int(gd.graph), int(gd.node)
        ev.graph_handle, ev.node_handle = graph, node
        if graph:
            ev.graph_id = int(cupti.get_graph_id(graph))
        if int(gd.original_graph):
            ev.original_graph_id = int(cupti.get_graph_id(int(gd.original_graph)))
        if node:
            ev.node_id = int(cupti.get_graph_node_id(node))
            ev.node_type = int(gd.node_type)
        if int(gd.original_node):
            ev.original_node_id = int(cupti.get_graph_node_id(int(gd.original_node)))
        if int(gd.dependency):
            ev.dependency_id = int(cupti.get_graph_node_id(int(gd.dependency)))
        if int(gd.graph_exec):
            ev.exec_id = int(cupti.get_graph_exec_id(int(gd.graph_exec)))
        if cb_name == "GRAPHNODE_CREATED" and self._on_node_created is not None:
            ev.stack = self._on_node_created()
        if self._snapshot and graph:
            if cb_name in ("GRAPH_CREATED", "GRAPH_CLONED"):
                # Graphs the driver creates inside an instantiation are its own (the executable's
                # copy): not the program's, and cuGraphGetNodes refuses them (CUDA_ERROR_INVALID_VALUE).
                if not self._instantiating.get(tid):
                    self._graph_handles[ev.graph_id] = graph
            elif cb_name == "GRAPH_DESTROY_STARTING" and self._graph_handles.pop(ev.graph_id, None) is not None:
                # Last chance to read the graph's nodes, edges and kernel names. Not at instantiation:
                # that would run inside the program's cuGraphInstantiate and inflate its measured cost.
                if self.deferred_topology and len(self._copies) < MAX_COPIES:
                    self._copy_graph(ev.graph_id, graph)
                else:
                    self.raw.topology_copies["read_at_destroy"] += 1
                    self._read_topology(ev.graph_id, graph)
        self.raw.resource_events.append(ev)

    @contextmanager
    def own_work(self) -> Iterator[None]:
        """graphmode's own CUDA work on this thread, inside the program's run: the resource callbacks it fires are not
        recorded (a copy of a graph, graphmode's own empty graph: not the program's graphs), and its API records are
        dropped when the session is decoded (RawActivity.own_spans). Nests; per thread."""
        tid = threading.get_native_id()
        t0 = int(cupti_module().get_timestamp())
        self._own_depth[tid] = self._own_depth.get(tid, 0) + 1
        try:
            yield
        finally:
            if (depth := self._own_depth[tid] - 1):
                self._own_depth[tid] = depth
            else:
                del self._own_depth[tid]
            self.raw.own_spans.append((tid, t0, int(cupti_module().get_timestamp())))

    def _copy_graph(self, graph_id: int, graph: int) -> None:
        """Keeps a copy of a graph being destroyed (one cuGraphClone, a driver call), whose topology stop() reads."""
        from cuda.bindings import driver as cu

        if graph_id in self.raw.topologies or graph_id in self._copies:
            return
        with self.own_work():
            try:
                self._copies[graph_id] = check(cu.cuGraphClone(cu.CUgraph(graph)), "cuGraphClone")
                self.raw.topology_copies["copied"] += 1
            except Exception as e:
                self.raw.callback_errors.append(f"copy of graph {graph_id}: {e}")
                self.raw.topology_copies["read_at_destroy"] += 1
                self._read_topology(graph_id, graph)

    def _read_copies(self) -> None:
        """Reads the kept copies' topologies under their graphs' ids, and destroys the copies. Node ids are the copy's
        (CUPTI's ids of its nodes): the edges join them; the order of the nodes is the graph's."""
        from cuda.bindings import driver as cu

        for graph_id, copy in list(self._copies.items()):
            try:
                topo = read_topology(copy)
                topo.graph_id = graph_id
                self.raw.topologies.setdefault(graph_id, topo)
            except Exception as e:
                self.raw.callback_errors.append(f"topology of graph {graph_id} (copy): {e}")
            finally:
                try:
                    cu.cuGraphDestroy(copy)
                except Exception:
                    pass
        self._copies.clear()

    def _read_topology(self, graph_id: int, graph: int) -> None:
        from cuda.bindings import driver as cu

        if graph_id in self.raw.topologies:
            return
        with self.own_work():
            try:
                self.raw.topologies[graph_id] = read_topology(cu.CUgraph(graph))
            except Exception as e:
                self.raw.callback_errors.append(f"topology of graph {graph_id}: {e}")

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        cupti = cupti_module()
        K = cupti.ActivityKind
        # CUPTI's default thread id is pthread_self(); SYSTEM gives the OS thread id (gettid), the
        # id that host markers record with threading.get_native_id().
        cupti.set_thread_id_type(cupti.ActivityThreadIdType.SYSTEM)
        mark("cupti start: attached")
        self.raw.buffers, self.raw.buffers_fallback, self._raw_buffers = register_buffers(
            self.buffer_size, self.raw.chunks, self.raw.callback_errors, loaded_cupti_library,
            lambda: cupti.activity_register_callbacks(self._buffer_requested, self._buffer_completed))
        kinds = [K.DRIVER, K.RUNTIME] if self.api_filter != "none" else []
        kinds += [K.CONCURRENT_KERNEL, K.MEMCPY, K.MEMSET, K.SYNCHRONIZATION] if self.gpu_kinds else []
        if self.detail == "graph" and self.graph_trace:
            kinds.append(K.GRAPH_TRACE)
        self.raw.graph_from_nodes = self.detail == "graph" and not self.graph_trace
        if self._nvtx:
            kinds.append(K.MARKER)
        mark("cupti start: buffers registered")
        for k in kinds:
            cupti.activity_enable(k)
        self._kinds = kinds
        mark("cupti start: kinds enabled")
        if self.api_filter in ("needed", "sparse"):
            self.raw.api_filter = self._filter_api(cupti, api_sparse if self.api_filter == "sparse" else api_needed)
        mark("cupti start: API filtered")
        D = cupti.CallbackDomain
        self._domain_resource = int(D.RESOURCE)
        self._domain_api = {int(D.DRIVER_API): "driver", int(D.RUNTIME_API): "runtime"}
        if not self.callbacks:
            self.started = True
            return
        self._subscriber = cupti.subscribe(self._callback, 0)
        names = _GRAPH_CBIDS + (_NODE_CBIDS if self.node_events else ())
        for name in names:
            cbid = getattr(cupti.CallbackIdResource, name, None)
            if cbid is not None:
                self._cb_names[int(cbid)] = name
                cupti.enable_callback(1, self._subscriber, D.RESOURCE, int(cbid))
        for api, cbids in (api_cbids(self._source_api) if self._source_api else {}).items():
            self._source_cbids.update((api, c) for c in cbids)
        if self._snapshot:
            for api, cbids in api_cbids(r"^(cu|cuda)GraphInstantiate").items():
                self._instantiate_cbids.update((api, c) for c in cbids)
        for api, cbid in self._source_cbids | self._instantiate_cbids:
            domain = D.DRIVER_API if api == "driver" else D.RUNTIME_API
            cupti.enable_callback(1, self._subscriber, domain, cbid)
        mark("cupti start: callbacks on")
        self.started = True

    @staticmethod
    def _filter_api(cupti: Any, keep_api: Callable[[str], bool] | None = None) -> dict[str, int]:
        """Switches off the activity records of every API call the analysis does not read; returns how
        many callback ids stay recorded and how many were switched off, per API. Which ids to keep is decided once
        a process (_api_switches): a session attached again after an untraced window or capture, inside the
        program's time, then only makes the switches (the decisions took 7-8 ms of an 8 ms filter; session 33)."""
        counts = {"driver_recorded": 0, "driver_off": 0, "runtime_recorded": 0, "runtime_off": 0}
        for api, enum, switch in (("driver", cupti.driver_api_trace_cbid, cupti.activity_enable_driver_api),
                                  ("runtime", cupti.runtime_api_trace_cbid, cupti.activity_enable_runtime_api)):
            for cbid, keep in _api_switches(api, enum, keep_api or api_needed):
                try:
                    switch(cbid, 1 if keep else 0)
                except Exception:
                    continue  # an id this driver does not know
                counts[f"{api}_{'recorded' if keep else 'off'}"] += 1
        return counts

    def stop(self) -> RawActivity:
        """Flushes every buffer, disables collection, resolves names; safe to call twice."""
        if not self.started:
            return self.raw
        cupti = cupti_module()
        cupti.activity_flush_all(1)
        mark("cupti: flushed")
        for k in self._kinds:
            try:
                cupti.activity_disable(k)
            except Exception:
                pass
        cupti.activity_flush_all(1)
        mark("cupti: disabled and flushed")
        dropped = ctypes.c_size_t(0)
        try:
            cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(dropped))
            self.raw.dropped += int(dropped.value)
        except Exception as e:  # 0 would claim nothing was lost: say the count is unknown
            self.raw.callback_errors.append(f"the count of dropped CUPTI records is unknown ({type(e).__name__}: {e})")
        if self._subscriber is not None:
            cupti.unsubscribe(self._subscriber)
            self._subscriber = None
        # Graphs still alive: read them now, with API recording already off.
        for graph_id, handle in list(self._graph_handles.items()):
            self._read_topology(graph_id, handle)
        self._graph_handles.clear()
        self._read_copies()
        mark("cupti: unsubscribed, graphs read")
        self._resolve_names()
        mark("cupti: names read")

        for ev in self.raw.resource_events:
            if ev.stack:
                ev.stack = location_text(ev.stack)
        if self._detach:
            # Disabling the activity kinds is not enough: with CUPTI still attached, every later graph
            # replay in the process stayed slower (docs/design.md). cuptiFinalize detaches it; the next
            # session attaches again.
            try:
                cupti.finalize()
            except Exception as e:
                self.raw.callback_errors.append(f"cuptiFinalize: {e}")
            mark("cupti: finalized")
        self.started = False
        return self.raw

    def _resolve_names(self) -> None:
        """Kernel and marker names are char* into CUPTI's memory: read them while it still holds them."""
        record_dtypes()
        mark("cupti: record layouts read")
        pointers = name_pointers(self.raw.chunks)
        mark("cupti: name pointers found")
        for ptr in pointers:
            if ptr and ptr not in self.raw.names:
                self.raw.names[ptr] = ctypes.string_at(ptr).decode(errors="replace")


def loaded_cupti_library() -> str:
    """Path of the libcupti that cupti-python loaded in this process ('' if not found).

    NVTX forwards ranges to the library named by NVTX_INJECTION64_PATH; it has to be this very file:
    a second copy of libcupti loaded from another path has its own state and records nothing here. Found once a
    process: every attach after an untraced window or capture registers the buffers with it, a phase that took 3 ms on
    the H200 (session 33's phase marks), and a PyTorch process maps thousands of files.
    """
    if _LOADED_CUPTI:
        return _LOADED_CUPTI[0]
    cupti_module().get_timestamp()  # make sure the library is loaded
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if line.strip() else ""
                if "libcupti" in os.path.basename(path):
                    _LOADED_CUPTI.append(path)
                    return path
    except OSError:
        pass
    return ""


_LOADED_CUPTI: list[str] = []  # loaded_cupti_library's answer, once found
