"""Listens to what PyTorch says about its CUDA graphs while a traced program runs (stored in `meta.torch`).

Nothing is parsed from stderr. Where PyTorch says it (torch 2.11 source, torch/_inductor/):

- `cudagraph_trees.py` logs through `torch._logging.getArtifactLogger(__name__, "cudagraphs")`, the
  logger `torch._inductor.cudagraph_trees.__cudagraphs`: 'Recording cudagraph tree for symint key %s'
  (info, a new tree per integer-input key), '[%s] Recording function=%s, cuda_graph_id=%d, inputs: %s',
  '[%s] Running warmup function=%s', '[%s] Running eager function=%s', '[%s] Re-recording
  function=%s, reason=%s' (debug);
- `cudagraph_utils.py` `log_cudagraph_skip_and_bump_counter` warns through
  `torch._inductor.cudagraph_utils.__cudagraphs` ('skipping cudagraphs due to mutated inputs (N
  instances). Found from : <stack trace>', 'cpu device', 'multiple devices', incompatible ops, the
  re-recording limit) and bumps `torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]`; the
  same logger warns after many distinct input sizes ('We have observed N distinct sizes');
- `torch._dynamo.callback_handler` calls registered start/end callbacks around each Dynamo
  compilation and each cudagraph recording, with Dynamo's compile id ('frame/recompile');
- `torch.cuda.CUDAGraph.capture_begin/capture_end` (a Python class): the graph's memory pool id
  (`CUDAGraph.pool()`), shared when a capture passes another graph's pool.

The measuring and timing runs install the hooks with `recordings_only`: Dynamo's start/end callbacks alone
(two Python calls per recording, and per compilation), and `torch.cuda.graph`'s `__enter__`/`__exit__` (two
per capture), so that PyTorch's work around each capture (synchronizations, emptying its cache, the memory
pool's bookkeeping) is timed in the runs that time the program, and a compilation inside the statement that
records a graph is known as such (analyzers.timing_run.recording_calls).

How: a handler on those loggers at DEBUG. PyTorch leaves them at its default level (WARNING) and
prints what reaches that level with its own handler; to hear the debug records without printing them,
the handler stops propagation and passes on to PyTorch's handlers exactly the records that would
have reached them (same level threshold, same handlers), so the program's output does not change.
`CUDAGraph.capture_begin/capture_end` are wrapped to sample the pool's memory after each capture
(tracer.graph_memory). Everything is installed when the program imports torch (an import hook:
importing torch ourselves would change the program), and removed when tracing stops.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import sys
import threading
import time
import types
from collections.abc import Callable
from types import ModuleType
from typing import Any

from graphmode.tracer import allocator_history
from graphmode.tracer.cupti_session import timestamp
from graphmode.tracer.graph_memory import GraphMemorySampler
from graphmode.tracer.sources import user_source

LOGGERS = (
    "torch._inductor.cudagraph_trees.__cudagraphs",
    "torch._inductor.cudagraph_utils.__cudagraphs",
    # older releases warned about skips through the perf_hints artifact
    "torch._inductor.cudagraph_trees.__perf_hints",
    "torch._inductor.cudagraph_utils.__perf_hints",
)
COLUMNS = ("ts_ns", "thread_id", "kind", "logger", "level", "template", "message", "args", "compile_id", "pool", "source")
MAX_EVENTS = 20_000
MAX_MESSAGE = 4_000
MEMORY_STATS = ("reserved_bytes.all.current", "reserved_bytes.all.peak", "allocated_bytes.all.current",
                "allocated_bytes.all.peak", "num_alloc_retries", "num_ooms")


def _pool_str(pool: Any) -> str:
    try:
        return str(tuple(int(x) for x in pool))
    except Exception:
        return str(pool) if pool is not None else ""


class _Listener(logging.Handler):
    """Keeps every record of one logger; passes on to PyTorch's handlers what they would have printed."""

    def __init__(self, hooks: TorchHooks, logger: logging.Logger):
        super().__init__(logging.DEBUG)
        self.hooks = hooks
        self.logger = logger
        self.saved = (logger.level, logger.propagate)

    def emit(self, record: logging.LogRecord) -> None:
        self.hooks.on_log(record)
        lg = self.logger
        if lg.propagate or lg.parent is None:  # PyTorch turned propagation back on (TORCH_LOGS): it prints itself
            return
        if _off_by_default(lg):  # an artifact PyTorch never prints unless asked
            return
        threshold = self.saved[0] if self.saved[0] != logging.NOTSET else lg.parent.getEffectiveLevel()
        if record.levelno >= threshold:
            lg.parent.callHandlers(record)

    def restore(self) -> None:
        self.logger.removeHandler(self)
        level, propagate = self.saved
        if self.logger.level == logging.DEBUG:
            self.logger.setLevel(level)
        if not self.logger.propagate:
            self.logger.propagate = propagate


def _off_by_default(lg: logging.Logger) -> bool:
    try:
        from torch._logging._internal import log_registry

        return bool(log_registry.is_off_by_default(getattr(lg, "artifact_name", "")))
    except Exception:
        return False


class _PostImport(importlib.abc.MetaPathFinder):
    """Calls `on_import(module)` right after one of `names` finished importing (then forgets that name)."""

    def __init__(self, names: dict[str, Callable[[ModuleType], None]]):
        self.names = dict(names)
        self._busy = threading.local()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = importlib.util.find_spec(fullname)  # the other finders: ours answers None while busy
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        callback = self.names.pop(fullname)
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                original(module)
            finally:
                loader.__dict__.pop("exec_module", None)  # back to the loader's own method
                if not self.names and self in sys.meta_path:
                    sys.meta_path.remove(self)
            callback(module)

        # an instance attribute on this spec's loader only: other modules' loaders are untouched
        try:
            loader.exec_module = exec_module  # type: ignore[method-assign]
        except Exception:
            self.names[fullname] = callback
            return None
        return spec


class TorchHooks:
    """Install with `install()` before the program runs; `uninstall()` returns what goes into meta.torch."""

    def __init__(self, memory: GraphMemorySampler | None = None, clock: Callable[[], int] | None = None,
                 recordings_only: bool = False, allocator_history: bool = False):
        """`recordings_only`: hear only when each cudagraph-tree recording, torch.cuda.graph block and Dynamo
        compilation starts and ends (Dynamo's callback handler and the block's enter and exit: nothing else is
        hooked), for the measuring and timing runs' one-time costs. `allocator_history`: turn PyTorch's allocator
        history on as the program imports torch (tracer.allocator_history; `history` says what was turned on, the
        tracer collects it)."""
        self.recordings_only = recordings_only
        self.allocator_history = allocator_history
        self.history: dict[str, Any] | None = None  # tracer.allocator_history.enable's answer, once on
        self.torch: ModuleType | None = None
        if clock is None:
            clock = timestamp
        self._clock = clock
        self._memory = memory
        self._cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self._lock = threading.Lock()
        self._listeners: list[_Listener] = []
        self._finder: _PostImport | None = None
        self._callbacks: tuple[Any, Callable[..., None], Callable[..., None]] | None = None
        self._wrapped: tuple[type, Any, Any] | None = None
        self._block: tuple[type, Any, Any] | None = None  # torch.cuda.graph's __enter__ / __exit__
        self._pools: dict[str, Any] = {}
        self.torch_version = ""
        self.dropped = 0
        self.errors: list[str] = []
        self.captures = 0
        # the one traced run's untraced captures (tracer.untraced_windows.CaptureController, via tracer.script): called
        # before the program's capture_begin (with the perf_counter_ns at which the hooks' own memory sample before it
        # began), before its capture_end, and after it (reason, error, the CUDAGraph where it returned, and the hooks'
        # memory sample after it, to run attached and timed as graphmode's); None: nothing
        self.around_capture: tuple[Callable[[int], None], Callable[[], None],
                                   Callable[[str, str, Any, Callable[[], None] | None], None]] | None = None

    # -- installing --------------------------------------------------------------------------------
    def install(self) -> TorchHooks:
        """Hooks torch now if the program already imported it, else as soon as it does."""
        pending: dict[str, Callable[[ModuleType], None]] = {}
        if "torch" in sys.modules:
            self._on_torch(sys.modules["torch"])
        else:
            pending["torch"] = self._on_torch
        if "torch._dynamo" in sys.modules:
            self._on_dynamo(sys.modules["torch._dynamo"])
        else:
            pending["torch._dynamo"] = self._on_dynamo
        if pending:
            self._finder = _PostImport(pending)
            sys.meta_path.insert(0, self._finder)
        return self

    def _guard(self, what: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # a hook must never break the program
            if len(self.errors) < 20:
                self.errors.append(f"{what}: {type(e).__name__}: {e}")

    def _on_torch(self, torch: ModuleType) -> None:
        self.torch_version = str(getattr(torch, "__version__", ""))
        self.torch = torch
        if self.allocator_history:
            def on() -> None:
                self.history = allocator_history.enable(torch)

            self._guard("allocator history", on)
        self._guard("torch.cuda.graph", self._wrap_graph_block)
        if self.recordings_only:
            return
        self._guard("loggers", self._attach_loggers)
        self._guard("CUDAGraph", self._wrap_cuda_graph)

    def _attach_loggers(self) -> None:
        for name in LOGGERS:
            lg = logging.getLogger(name)
            h = _Listener(self, lg)
            lg.addHandler(h)
            lg.setLevel(logging.DEBUG)
            lg.propagate = False
            self._listeners.append(h)

    def _on_dynamo(self, dynamo: ModuleType) -> None:
        def attach() -> None:
            handler = dynamo.callback_handler

            only = self.recordings_only

            def start(args: Any) -> None:
                trigger = _trigger(args)
                self.add("start_" + trigger, compile_id=str(getattr(args, "compile_id", "")),
                         message=_compiled_code() if trigger == "dynamo" and not only else "")

            def end(args: Any) -> None:
                self.add("end_" + _trigger(args), compile_id=str(getattr(args, "compile_id", "")))

            handler.register_start_callback(start)
            handler.register_end_callback(end)
            self._callbacks = (handler, start, end)

        self._guard("callback_handler", attach)

    def _wrap_cuda_graph(self) -> None:
        from torch.cuda.graphs import CUDAGraph

        begin, end = CUDAGraph.__dict__.get("capture_begin"), CUDAGraph.__dict__.get("capture_end")
        if begin is None or end is None:
            return
        hooks = self

        def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
            pool = args[0] if args else kwargs.get("pool")
            since = time.perf_counter_ns()  # the memory sample is graphmode's, not the program's (around_capture)
            hooks._guard("capture_begin", lambda: hooks._before_capture(pool))
            around = hooks.around_capture
            if around is None:
                return begin(graph, *args, **kwargs)
            hooks._guard("untraced capture", lambda: around[0](since))
            try:
                return begin(graph, *args, **kwargs)
            except BaseException as e:
                error = f"{type(e).__name__}: {e}"
                hooks._guard("untraced capture", lambda: around[2]("capture_begin_failed", error, None, None))
                raise

        def capture_end(graph: Any, *args: Any, **kwargs: Any) -> Any:
            around = hooks.around_capture
            if around is not None:
                hooks._guard("untraced capture", around[1])
                try:
                    result = end(graph, *args, **kwargs)
                except BaseException as e:
                    error = f"{type(e).__name__}: {e}"
                    hooks._guard("untraced capture", lambda: around[2]("capture_end_failed", error, None, None))
                    raise
                # attached again (where it was detached) before the hooks sample memory: CUPTI's clock is read there;
                # the controller runs the sample and times it into the gap after the capture
                sampled: list[bool] = []

                def after() -> None:
                    sampled.append(True)
                    hooks._guard("capture_end", lambda: hooks._after_capture(graph))

                hooks._guard("untraced capture", lambda: around[2]("capture_end", "", graph, after))
                if not sampled:
                    after()
                return result
            result = end(graph, *args, **kwargs)
            hooks._guard("capture_end", lambda: hooks._after_capture(graph))
            return result

        capture_begin.__doc__, capture_end.__doc__ = begin.__doc__, end.__doc__
        setattr(CUDAGraph, "capture_begin", capture_begin)
        setattr(CUDAGraph, "capture_end", capture_end)
        self._wrapped = (CUDAGraph, begin, end)

    def _wrap_graph_block(self) -> None:
        """`with torch.cuda.graph(g):` is heard entering and leaving (two Python calls per capture): what PyTorch
        does around the capture (synchronize, empty_cache, its memory pool) is timed like a cudagraph-tree
        recording. cudagraph trees capture through it inside their recordings: the outermost window counts
        (analyzers.script_graphs.torch_windows)."""
        from torch.cuda.graphs import graph as block

        enter, leave = block.__dict__.get("__enter__"), block.__dict__.get("__exit__")
        if enter is None or leave is None:
            return
        hooks = self

        def __enter__(ctx: Any) -> Any:
            hooks.add("start_cuda_graph_block")
            return enter(ctx)

        def __exit__(ctx: Any, *exc: Any) -> Any:
            try:
                return leave(ctx, *exc)
            finally:
                hooks.add("end_cuda_graph_block")

        setattr(block, "__enter__", __enter__)
        setattr(block, "__exit__", __exit__)
        self._block = (block, enter, leave)

    # -- what the hooks record ---------------------------------------------------------------------
    def add(self, kind: str, *, logger: str = "", level: int = 0, template: str = "", message: str = "",
            args: str = "[]", compile_id: str = "", pool: str = "") -> None:
        if len(self._cols["kind"]) >= MAX_EVENTS:
            self.dropped += 1
            return
        row = (self._clock(), threading.get_native_id(), kind, logger, level, template[:MAX_MESSAGE],
               message[:MAX_MESSAGE], args, compile_id, pool, user_source(sys._getframe(1)))
        with self._lock:
            for k, v in zip(COLUMNS, row):
                self._cols[k].append(v)

    def on_log(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        try:
            args = json.dumps([str(a)[:MAX_MESSAGE] for a in record.args] if isinstance(record.args, tuple) else [])
        except Exception:
            args = "[]"
        name = record.name.removeprefix("torch._inductor.")
        self.add("log", logger=name, level=record.levelno, template=str(record.msg), message=message, args=args)

    def _pool_memory(self, pool: Any) -> tuple[int, int]:
        """Reserved and allocated bytes of one PyTorch memory pool (its segments)."""
        import torch

        try:
            segments = torch.cuda.memory_snapshot(mempool_id=pool, include_traces=False)
        except TypeError:  # releases before 2.10: one snapshot of every pool
            segments = [s for s in torch.cuda.memory_snapshot() if tuple(s.get("segment_pool_id", ())) == tuple(pool)]
        return sum(int(s["total_size"]) for s in segments), sum(int(s["allocated_size"]) for s in segments)

    def _torch_memory(self, pool: Any) -> dict[str, Any]:
        import torch

        t0 = self._clock()
        fields: dict[str, Any] = {"torch_reserved_bytes": torch.cuda.memory_reserved(),
                                  "torch_allocated_bytes": torch.cuda.memory_allocated()}
        if pool is not None:
            fields["pool"] = _pool_str(pool)
            fields["pool_reserved_bytes"], fields["pool_allocated_bytes"] = self._pool_memory(pool)
        if self._memory is not None:
            self._memory.own_span(t0, self._clock())  # PyTorch's CUDA calls made for us are not the program's
        return fields

    def _before_capture(self, pool: Any) -> None:
        fields = self._torch_memory(pool)
        self.add("capture_begin", pool=fields.get("pool", ""))
        if self._memory is not None:
            self._memory.sample("torch_capture_begin", **fields)

    def _after_capture(self, graph: Any) -> None:
        self.captures += 1
        pool = graph.pool()
        fields = self._torch_memory(pool)
        self._pools[fields["pool"]] = pool
        self.add("capture_end", pool=fields["pool"])
        if self._memory is not None:
            self._memory.sample("torch_capture_end", **fields)

    # -- removing ----------------------------------------------------------------------------------
    def uninstall(self) -> dict[str, Any]:
        """Removes every hook; returns meta.torch ({} when the program never imported torch)."""
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        end = self._final_state() if self.torch_version and not self.recordings_only else {}
        for h in self._listeners:
            h.restore()
        self._listeners.clear()
        if self._callbacks is not None:
            handler, start, stop = self._callbacks

            def remove() -> None:
                handler.remove_start_callback(start)
                handler.remove_end_callback(stop)

            self._guard("remove callbacks", remove)
            self._callbacks = None
        if self._block is not None:
            cls, enter, leave = self._block
            setattr(cls, "__enter__", enter)
            setattr(cls, "__exit__", leave)
            self._block = None
        if self._wrapped is not None:
            cls, begin, end_fn = self._wrapped
            setattr(cls, "capture_begin", begin)
            setattr(cls, "capture_end", end_fn)
            self._wrapped = None
        if not self.torch_version:
            return {}
        with self._lock:
            events = {k: list(v) for k, v in self._cols.items()}
        out: dict[str, Any] = {"version": self.torch_version, "events": events, "dropped_events": self.dropped,
                               "captures": self.captures, **end}
        if self.errors:
            out["errors"] = list(self.errors)
        return out

    def _final_state(self) -> dict[str, Any]:
        """Counters and memory at the end of the run (the program has finished: nothing is timed now)."""
        out: dict[str, Any] = {}

        def counters() -> None:
            dynamo_utils = sys.modules.get("torch._dynamo.utils")
            if dynamo_utils is not None:
                inductor = dynamo_utils.counters.get("inductor", {})
                out["counters"] = {str(k): int(v) for k, v in inductor.items() if "cudagraph" in str(k)}

        def memory() -> None:
            import torch

            if not torch.cuda.is_initialized():
                return
            t0 = self._clock()
            stats = torch.cuda.memory_stats()
            out["memory_stats"] = {k: int(stats[k]) for k in MEMORY_STATS if k in stats}
            out["pools_end"] = {name: list(self._pool_memory(pool)) for name, pool in self._pools.items()}
            if self._memory is not None:
                self._memory.own_span(t0, self._clock())

        self._guard("counters", counters)
        self._guard("memory at the end", memory)
        return out


def _compiled_code() -> str:
    """'name file:line' of the function Dynamo is compiling, from its compile_inner(code, ...) frame ('' if not
    found)."""
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(40):  # a start callback runs a few frames below compile_inner
        if frame is None:
            break
        if frame.f_code.co_name == "compile_inner":
            code = frame.f_locals.get("code")
            if isinstance(code, types.CodeType):
                return f"{code.co_name} {code.co_filename}:{code.co_firstlineno}"
        frame = frame.f_back
    return ""


def _trigger(args: Any) -> str:
    """'dynamo' | 'cudagraph_recording' | ... from a CallbackArgs."""
    trigger = getattr(args, "callback_trigger", None)
    return str(getattr(trigger, "name", trigger)).lower()
