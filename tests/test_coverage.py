"""Graph coverage, PyTorch's cudagraph decisions, graph budget and their renderers on SYNTHETIC traces.

Every trace here is built by hand (meta workload='synthetic-script'); each expected number is worked out
next to its assertion. The PyTorch hooks are exercised with stand-in loggers and a stand-in module:
this suite needs no torch and no GPU (tests/test_gpu_coverage.py runs them against the real thing).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from graphmode.analyzers.notes import note
from graphmode.reports.notes import word, words
from graphmode.reports.pitfall_words import advice, evidence

from graphmode.analyzers import analyze
from graphmode.analyzers.coverage_results import CudagraphSkip
from graphmode.analyzers.torch_graphs import skip_reason, stack_frame
from graphmode.reports.coverage import print_graph_use
from graphmode.reports.coverage_html import graph_use_html
from graphmode.reports.json_report import load_schema, report_dict
from graphmode.tracer.store import load
from graphmode.tracer.torch_hooks import TorchHooks, _PostImport
from tests.synthetic_script import ScriptTrace


def coverage_trace(path: Path, detail: str = "graph") -> Path:
    """SYNTHETIC. Thread 1, times in ns:
    - 3 eager kernels 'E' before any graph: cudaLaunchKernel at 100, 200, 300 (10 ns each, from train.py:10..12), each
      with its own nested driver cuLaunchKernel (not counted again); each kernel runs 100 ns;
    - capture of graph 1 (kernel nodes K1, K2) over [1000, 2000] with 2 launch calls inside it (captured), instantiate
      [2000, 2500];
    - 4 replays launched at 3000, 4000, 5000, 6000 (20 ns calls), each 150 ns of GPU work (graph detail: one 'graph'
      span; node detail: K1 for 70 ns then K2 for 80 ns);
    - 1 eager kernel launched at 7000 that runs 50 ns;
    - NVTX range 'decode' twice: [2900, 3500] and [5900, 6500] (holding the replays at 3000 and 6000).
    """
    t = ScriptTrace(detail)
    for i, s in enumerate((100, 200, 300)):
        corr = t.call("cudaLaunchKernel", "kernel_launch", s, s + 10, source=f"train.py:{10 + i} eager_step")
        t.call("cuLaunchKernel", "kernel_launch", s + 2, s + 8, api="driver")
        t.span(0, "E", s + 20, s + 120, corr)
    t.captured_graph(1, ["K1", "K2"], capture=(1000, 2000), instantiate=(2000, 2500), source="train.py:20 make_graph")
    t.call("cudaLaunchKernel", "kernel_launch", 1100, 1110)
    t.call("cudaLaunchKernel", "kernel_launch", 1200, 1210)
    for launch in (3000, 4000, 5000, 6000):
        if detail == "graph":
            t.replay(1, launch, (launch + 30, launch + 180))
        else:
            corr = t.call("cudaGraphLaunch", "graph_launch", launch, launch + 20, "train.py:29 step")
            t.event(1, "launch", launch, launch + 20, corr)
            t.span(0, "K1", launch + 30, launch + 100, corr, graph_id=1, node_id=100)
            t.span(0, "K2", launch + 100, launch + 180, corr, graph_id=1, node_id=101)
    corr = t.call("cudaLaunchKernel", "kernel_launch", 7000, 7010, source="train.py:40 tail")
    t.span(0, "E", 7020, 7070, corr)
    t.nvtx("decode", 2900, 3500)
    t.nvtx("decode", 5900, 6500)
    return t.write_script(path)


@pytest.mark.parametrize("detail", ["graph", "node"])
def test_coverage_shares_by_hand(tmp_path: Path, detail: str) -> None:
    a = analyze(load(coverage_trace(tmp_path / f"cov-{detail}.gmtrace", detail)))
    c = a.coverage
    assert c is not None and c.detail == detail and c.kernels_from_topology == (detail == "graph")
    r = c.run
    # kernels: 4 replays x 2 kernel nodes = 8 in graphs; 3 + 1 eager -> 8 / 12
    assert (r.graph_kernels, r.eager_kernels, r.kernel_share) == (8, 4, pytest.approx(8 / 12))
    # GPU time: 4 x 150 = 600 in graphs; 3 x 100 + 50 = 350 eager -> 600 / 950
    assert (r.graph_gpu_ns, r.eager_gpu_ns, r.gpu_time_share) == (600, 350, pytest.approx(600 / 950))
    # launch calls: 4 graph launches; 4 eager launches (the 3 nested driver calls are not counted again, the 2 calls
    # made while capturing are counted apart); CPU time 4 x 20 and 4 x 10
    assert (r.graph_launch_calls, r.eager_launch_calls, r.captured_launch_calls, r.launch_call_share) == (4, 4, 2, 0.5)
    assert (r.graph_launch_api_ns, r.eager_launch_api_ns) == (80, 40)
    assert r.graphs_launched == 1
    # phases: the first build starts at 1000 (capture), the last ends at 2500 (instantiate)
    before, building, steady = c.phases
    assert (before.start_ns, before.duration_ns) == (100, 900)
    assert (before.eager_kernels, before.graph_kernels, before.eager_gpu_ns, before.eager_launch_calls) == (3, 0, 300, 3)
    assert (building.start_ns, building.duration_ns, building.captured_launch_calls) == (1000, 1500, 2)
    assert (building.graph_kernels, building.eager_kernels, building.kernel_share) == (0, 0, None)
    assert (steady.graph_kernels, steady.eager_kernels, steady.graph_launch_calls, steady.eager_launch_calls) == (8, 1, 4, 1)
    assert steady.kernel_share == pytest.approx(8 / 9)
    # the NVTX range: two occurrences of 600 ns holding 2 replays
    (decode,) = c.ranges
    assert (decode.name, decode.occurrences, decode.duration_ns, decode.start_ns) == ("decode", 2, 1200, 2900)
    assert (decode.graph_launch_calls, decode.graph_kernels, decode.eager_kernels, decode.graph_gpu_ns) == (2, 4, 0, 300)
    # eager remainder by line (api_calls.source of each launch): 100 ns each of 350 from train.py:10..12, 50 from :40
    lines = {e.source: e for e in c.eager_lines}
    assert set(lines) == {"train.py:10 eager_step", "train.py:11 eager_step", "train.py:12 eager_step", "train.py:40 tail"}
    assert lines["train.py:10 eager_step"].share_of_eager_gpu == pytest.approx(100 / 350)
    assert (lines["train.py:40 tail"].launches, lines["train.py:40 tail"].gpu_ns) == (1, 50)


def test_coverage_without_graphs_or_launch_sources(tmp_path: Path) -> None:
    t = ScriptTrace()
    corr = t.call("cudaLaunchKernel", "kernel_launch", 100, 110)
    t.span(0, "E", 120, 220, corr)
    a = analyze(load(t.write_script(tmp_path / "eager.gmtrace")))
    c = a.coverage
    assert c is not None and c.phases == () and c.ranges == ()
    assert (c.run.kernel_share, c.run.graph_kernels, c.run.eager_kernels, c.run.launch_call_share) == (0.0, 0, 1, 0.0)
    assert c.eager_lines == () and c.eager_lines_note is not None and "--launch-sources" in word(c.eager_lines_note)
    assert a.graph_budget is None and a.torch_graphs is None


STACK = '\n   File "/home/u/train.py", line 12, in update\n    cache[pos] = k\n'


def torch_trace(path: Path, exception: dict[str, Any] | None = None) -> Path:
    """SYNTHETIC run of a torch.compile program (thread 1): Dynamo compiles `step` (frame 0); cudagraph trees warm
    it up, record it for inputs [(8, 16)] as graph 1 (capture [1000, 2000], instantiate [2000, 2500]) into a new
    pool '(0, 1)', replay it twice, then Dynamo recompiles it ('0/1') and records [(16, 16)] as graph 2 (capture
    [5100, 5600], instantiate [5600, 5900]) into the same pool, never replayed; `update` is skipped for a mutated input.
    Memory samples (bytes): free 1,000,000 before graph 1's capture, 900,000 after its instantiation; the pool
    reserves 65,536 after graph 1 and 98,304 after graph 2; graph memory (alloc nodes) 0 throughout.
    """
    t = ScriptTrace()
    t.captured_graph(1, ["K1"], capture=(1000, 2000), instantiate=(2000, 2500), source="/home/u/train.py:20 <module>")
    t.captured_graph(2, ["K1"], capture=(5100, 5600), instantiate=(5600, 5900), source="/home/u/train.py:20 <module>")
    t.replay(1, 3000, (3030, 3100))
    t.replay(1, 3500, (3530, 3600))
    events: dict[str, list[Any]] = {k: [] for k in ("ts_ns", "thread_id", "kind", "logger", "level", "template", "message",
                                                    "args", "compile_id", "pool", "source")}

    def ev(ts: int, kind: str, message: str = "", level: int = 0, compile_id: str = "", pool: str = "",
           source: str = "/home/u/train.py:20 <module>") -> None:
        for k, v in (("ts_ns", ts), ("thread_id", 1), ("kind", kind), ("logger", "cudagraph_trees.__cudagraphs" if kind == "log" else ""),
                     ("level", level), ("template", ""), ("message", message), ("args", "[]"), ("compile_id", compile_id),
                     ("pool", pool), ("source", source)):
            events[k].append(v)

    ev(500, "start_dynamo", "step /home/u/train.py:5", compile_id="0/0")
    ev(600, "log", "[0/0] Running warmup function=call", 10)
    ev(900, "log", "[0/0] Recording function=call, cuda_graph_id=0, inputs: [(8, 16)]", 10)
    ev(950, "capture_begin")
    ev(2600, "capture_end", pool="(0, 1)")
    ev(2700, "log", "skipping cudagraphs due to mutated inputs (1 instances). Found from : " + STACK, 30,
       source="/home/u/train.py:30 <module>")
    ev(4000, "start_dynamo", "step /home/u/train.py:5", compile_id="0/1")
    ev(5000, "log", "[0/1] Recording function=call, cuda_graph_id=1, inputs: [(16, 16)]", 10)
    ev(5050, "capture_begin", pool="(0, 1)")
    ev(6000, "capture_end", pool="(0, 1)")
    samples: dict[str, list[Any]] = {k: [] for k in ("ts_ns", "end_ns", "thread_id", "event", "correlation_id", "free_bytes",
                                                     "total_bytes", "graph_used_bytes", "graph_reserved_bytes", "pool",
                                                     "pool_reserved_bytes", "pool_allocated_bytes", "torch_reserved_bytes",
                                                     "torch_allocated_bytes")}

    def sample(ts: int, end: int, event: str, free: int, pool: str = "", reserved: int = -1, allocated: int = -1) -> None:
        for k, v in (("ts_ns", ts), ("end_ns", end), ("thread_id", 1), ("event", event), ("correlation_id", 0),
                     ("free_bytes", free), ("total_bytes", 2_000_000), ("graph_used_bytes", 0), ("graph_reserved_bytes", 0),
                     ("pool", pool), ("pool_reserved_bytes", reserved), ("pool_allocated_bytes", allocated),
                     ("torch_reserved_bytes", -1), ("torch_allocated_bytes", -1)):
            samples[k].append(v)

    sample(950, 960, "torch_capture_begin", 1_000_000)
    sample(1005, 1505, "capture_begin", 1_000_000)  # 500 ns inside the recorded capture
    sample(2100, 2300, "instantiate_end", 900_000)  # 200 ns inside the recorded instantiation
    sample(2600, 2610, "torch_capture_end", 900_000, "(0, 1)", 65_536, 32_768)
    sample(5050, 5060, "torch_capture_begin", 900_000, "(0, 1)", 65_536, 32_768)
    sample(5100, 5110, "capture_begin", 900_000)
    sample(5950, 5960, "instantiate_end", 860_000)
    sample(6000, 6010, "torch_capture_end", 860_000, "(0, 1)", 98_304, 65_536)
    script = {"path": "train.py", "argv": ["train.py"], "exit_code": 1 if exception else 0, "exception": exception}
    return t.write_script(path, torch={"version": "2.11.0", "events": events, "dropped_events": 0, "captures": 2,
                                       "counters": {"cudagraph_skips": 1}, "pools_end": {"(0, 1)": [131_072, 65_536]}},
                          graph_memory={**samples, "dropped": 0}, script=script)


def test_torch_decisions_by_hand(tmp_path: Path) -> None:
    a = analyze(load(torch_trace(tmp_path / "torch.gmtrace")))
    tg = a.torch_graphs
    assert tg is not None
    assert (tg.torch_version, tg.recordings, tg.warmups, tg.captures, tg.counters) == ("2.11.0", 2, 1, 2, (("cudagraph_skips", 1),))
    (f,) = tg.functions  # both compile ids belong to Dynamo frame 0: one Python function
    assert (f.name, f.defined_at, f.compile_ids) == ("step", "/home/u/train.py:5", ("0/0", "0/1"))
    assert (f.warmups, f.recordings, f.graph_ids, f.shapes) == (1, 2, (1, 2), ("[(8, 16)]", "[(16, 16)]"))
    (skip,) = tg.skips
    assert (skip.reason, skip.where, skip.code, skip.called_from, skip.count) == (
        "mutated_inputs", "/home/u/train.py:12 update", "cache[pos] = k", "/home/u/train.py:30 <module>", 1)
    (pool,) = tg.pools
    assert (pool.pool, pool.graph_ids, pool.reserved_bytes, pool.allocated_bytes, pool.end_reserved_bytes) == (
        "(0, 1)", (1, 2), 98_304, 65_536, 131_072)
    kinds = {p.kind: p for p in a.pitfalls}
    assert kinds["cudagraph_skipped"].where == "/home/u/train.py:12 update"
    assert "mark_static_address" in advice(kinds["cudagraph_skipped"])
    # two shapes recorded: the cost is both graphs' capture + instantiation: (1000 + 500) + (500 + 300)
    assert kinds["rerecorded_per_shape"].cost_ns == 2300 and kinds["rerecorded_per_shape"].where == "/home/u/train.py:20 <module>"


def test_graph_budget_by_hand(tmp_path: Path) -> None:
    b = analyze(load(torch_trace(tmp_path / "torch.gmtrace"))).graph_budget
    assert b is not None and (b.graphs, b.never_replayed, b.shared_pools, b.memory_source) == (2, 1, 1, "pytorch pools")
    g1, g2 = sorted(b.rows, key=lambda r: r.graph_id)
    # graph 1: start-up 1000 + 500; free memory 1,000,000 -> 900,000; a new pool that reserved 65,536
    assert (g1.capture_ns, g1.instantiate_ns, g1.startup_ns, g1.replays) == (1000, 500, 1500, 2)
    assert (g1.device_bytes, g1.pool_bytes, g1.graph_mem_bytes, g1.bytes, g1.pool) == (100_000, 65_536, 0, 65_536, "(0, 1)")
    # graph 2 shares the pool: it grew 65,536 -> 98,304 over its capture; free memory 900,000 -> 860,000
    assert (g2.startup_ns, g2.replays, g2.pool_bytes, g2.device_bytes, g2.verdict) == (800, 0, 32_768, 40_000, "never replayed")
    assert g1.verdict == "replayed 2 times" and g1.site == "/home/u/train.py:20 <module>"
    assert b.total_bytes == 65_536 + 32_768 and b.total_startup_ns == 2300
    assert [r.graph_id for r in b.rows] == [1, 2]  # most memory first
    # sampling inside recorded calls: 500 ns in graph 1's capture + 200 ns in its instantiation
    (inside,) = [n for n in b.notes if n.kind == "memory_sampling_inside"]
    assert inside["sampling_ns"] == pytest.approx(700, abs=50)  # to the 0.1 us the report prints
    assert "0.7 us inside recorded capture and instantiate calls" in word(inside)


def test_overwritten_output_names_the_reading_and_the_producing_line(tmp_path: Path) -> None:
    exception = {"type": "RuntimeError", "message": "Error: accessing tensor output of CUDAGraphs that has been overwritten "
                 'by a subsequent run. Stack trace: File "/home/u/train.py", line 7, in step',
                 "frames": [["/home/u/train.py", 40, "<module>"], ["/x/site-packages/torch/_tensor.py", 100, "__repr__"]],
                 "chain": []}
    a = analyze(load(torch_trace(tmp_path / "overwritten.gmtrace", exception)))
    p = a.pitfalls[0]
    assert (p.kind, p.severity, p.where) == ("output_overwritten", "error", "/home/u/train.py:40 <module>")
    assert "produced at /home/u/train.py:7 step" in evidence(p) and "cudagraph_mark_step_begin" in advice(p)


@pytest.mark.parametrize(("message", "reason"), [
    ("skipping cudagraphs due to mutated inputs (2 instances). Found from : ...", "mutated_inputs"),
    ("skipping cudagraphs due to cpu device (arg1_1). Found from : ...", "cpu_device"),
    ("skipping cudagraphs due to multiple devices: device(type='cuda', index=0), device(type='cuda', index=1)", "multiple_devices"),
    ("disabling cudagraphs due to incompatible op aten._local_scalar_dense.default Found from ...", "incompatible_ops"),
    ("skipping cudagraph due to function 0 exceeding max re-recording limit (=50) on cudagraph node 3 due to x.", "rerecord_limit"),
    ("skipping cudagraphs due to graph with symbolic shapes inputs and config.triton.cudagraph_skip_dynamic_graphs=True.", "dynamic_shapes"),
    ("skipping cudagraphs due to control flow operator: torch.cond.", "control_flow"),
    ("skipping cudagraphs due to something new", "other"),
])
def test_skip_reasons_follow_pytorchs_messages(message: str, reason: str) -> None:
    # the messages as torch/_inductor/cudagraph_utils.py, compile_fx.py and lowering.py (2.11) format them
    assert skip_reason(message) == reason


def test_a_synchronising_op_gets_the_host_sync_advice() -> None:
    from graphmode.analyzers.torch_diagnostics import synchronising_op
    from graphmode.reports.pitfall_words import skip_advice

    s = CudagraphSkip("incompatible_ops", "disabling cudagraphs due to incompatible op aten._local_scalar_dense.default",
                      "", "", "", 1, 0)
    assert synchronising_op(s) and ".item()" in skip_advice(s.reason, synchronising_op(s))


def test_stack_frame_takes_the_innermost_user_frame() -> None:
    text = ('  File "/home/u/model.py", line 30, in forward\n    h = self.attn(x)\n'
            '  File "/home/u/attn.py", line 12, in forward\n    cache[pos] = k\n'
            '  File "/venv/lib/python3.12/site-packages/torch/nn/functional.py", line 5, in pad\n    return x\n')
    assert stack_frame(text) == ("/home/u/attn.py:12 forward", "cache[pos] = k")
    assert stack_frame("no stack here") == ("", "")


def test_renderers_and_json_schema(tmp_path: Path) -> None:
    for path in (coverage_trace(tmp_path / "c.gmtrace"), torch_trace(tmp_path / "t.gmtrace")):
        a = analyze(load(path))
        doc = json.loads(json.dumps(report_dict(a)))
        jsonschema.Draft202012Validator(load_schema()).validate(doc)
        console = Console(record=True, width=160)
        print_graph_use(console, a)
        text = console.export_text()
        assert "Graph coverage" in text and "whole run" in text
        page = graph_use_html(a)
        assert "gm-coverage" in page and "<script" not in page
    # the torch trace: its pool, function and budget verdicts are on the page and in the text
    assert "(0, 1)" in page and "never replayed" in page and "step" in page
    assert "Compiled functions under cudagraph trees" in text and "never replayed" in text


def test_html_escapes_strings_from_the_trace(tmp_path: Path) -> None:
    t = ScriptTrace()
    corr = t.call("cudaLaunchKernel", "kernel_launch", 100, 110, source="<script>alert(1)</script>:3 f")
    t.span(0, "<b>kernel</b>", 120, 220, corr)
    t.nvtx("<img src=x>", 50, 300)
    page = graph_use_html(analyze(load(t.write_script(tmp_path / "x.gmtrace"))))
    assert "<script>" not in page and "<img" not in page and "&lt;img src=x&gt;" in page


# -- the PyTorch hooks without torch -------------------------------------------------------------------

@pytest.fixture
def torch_like_loggers() -> Any:
    """Stand-ins for PyTorch's logger set-up: 'torch' at WARNING with a DEBUG handler, as torch._logging leaves it."""
    parent = logging.getLogger("torch")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep(logging.DEBUG)
    saved = parent.level
    parent.addHandler(handler)
    parent.setLevel(logging.WARNING)
    yield seen
    parent.removeHandler(handler)
    parent.setLevel(saved)


def test_hooks_hear_debug_records_and_pass_on_only_what_pytorch_would_print(torch_like_loggers: list[logging.LogRecord]) -> None:
    clock = iter(range(1000, 10**6, 10))
    hooks = TorchHooks(None, clock=lambda: next(clock))
    hooks._attach_loggers()  # what install() does once torch is imported
    hooks.torch_version = "test"
    lg = logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs")
    lg.debug("[%s] Recording function=%s, cuda_graph_id=%d, inputs: %s", "0/0", "call", 0, "[(8, 16)]")
    lg.warning("skipping cudagraphs due to %s", "mutated inputs (1 instances)")
    printed = [r.getMessage() for r in torch_like_loggers]
    assert printed == ["skipping cudagraphs due to mutated inputs (1 instances)"]  # the debug record is not passed on
    out = hooks.uninstall()
    ev = out["events"]
    assert ev["message"] == ["[0/0] Recording function=call, cuda_graph_id=0, inputs: [(8, 16)]",
                             "skipping cudagraphs due to mutated inputs (1 instances)"]
    assert ev["level"] == [logging.DEBUG, logging.WARNING] and ev["logger"] == ["cudagraph_utils.__cudagraphs"] * 2
    assert json.loads(ev["args"][0]) == ["0/0", "call", "0", "[(8, 16)]"]
    assert ev["source"][0].endswith("test_hooks_hear_debug_records_and_pass_on_only_what_pytorch_would_print")
    # removed: the logger is back to PyTorch's settings and prints through its parent again
    assert (lg.level, lg.propagate, [h for h in lg.handlers if h.__class__.__name__ == "_Listener"]) == (logging.NOTSET, True, [])


def test_post_import_hook_runs_once_after_the_module_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gm_fake_torch").mkdir()
    (tmp_path / "gm_fake_torch" / "__init__.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[int] = []
    finder = _PostImport({"gm_fake_torch": lambda m: seen.append(m.VALUE)})
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module("gm_fake_torch")
        assert seen == [42] and finder not in sys.meta_path
        assert "exec_module" not in vars(module.__spec__.loader)  # the loader has its own method back
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        sys.modules.pop("gm_fake_torch", None)


def test_hooks_without_torch_leave_no_trace() -> None:
    hooks = TorchHooks(None, clock=lambda: 0).install()
    if "torch" in sys.modules:
        pytest.skip("torch is imported in this process")
    assert hooks.uninstall() == {} and hooks._finder not in sys.meta_path


def test_recordings_only_hooks_hear_recordings_and_compilations_and_nothing_else() -> None:
    """The measuring and timing runs' hooks (SYNTHETIC stand-ins for torch and torch._dynamo): Dynamo's start/end
    callbacks (recordings and compilations, a compilation without the compiled code's name: no frame walk); no
    logger and no CUDAGraph method touched."""
    import types

    class Handler:
        def __init__(self) -> None:
            self.start: list[Any] = []
            self.end: list[Any] = []

        def register_start_callback(self, f: Any) -> None:
            self.start.append(f)

        def register_end_callback(self, f: Any) -> None:
            self.end.append(f)

        def remove_start_callback(self, f: Any) -> None:
            self.start.remove(f)

        def remove_end_callback(self, f: Any) -> None:
            self.end.remove(f)

    def args(trigger: str) -> Any:
        return types.SimpleNamespace(callback_trigger=types.SimpleNamespace(name=trigger.upper()), compile_id="0/0")

    handler = Handler()
    clock = iter(range(100, 10**6, 100))
    hooks = TorchHooks(None, clock=lambda: next(clock), recordings_only=True)
    lg = logging.getLogger("torch._inductor.cudagraph_trees.__cudagraphs")
    hooks._on_torch(types.SimpleNamespace(__version__="test"))
    hooks._on_dynamo(types.SimpleNamespace(callback_handler=handler))
    assert hooks._listeners == [] and hooks._wrapped is None and not any(h.__class__.__name__ == "_Listener" for h in lg.handlers)
    (start,), (end,) = handler.start, handler.end
    start(args("dynamo"))  # a compilation: heard, so that a statement that compiles is not taken for recording work
    end(args("dynamo"))
    start(args("cudagraph_recording"))
    end(args("cudagraph_recording"))
    out = hooks.uninstall()
    assert handler.start == [] and handler.end == []  # removed
    assert out["events"]["kind"] == ["start_dynamo", "end_dynamo", "start_cudagraph_recording", "end_cudagraph_recording"]
    assert out["events"]["ts_ns"] == [100, 200, 300, 400] and out["events"]["message"] == ["", "", "", ""]
    assert "counters" not in out and "memory_stats" not in out  # no end-of-run state read


def test_torch_cuda_graph_blocks_are_heard_entering_and_leaving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for torch.cuda.graphs.graph: the hooks (also the measuring run's, recordings_only) hear each
    `with` block begin and end, around what the block itself does, even when the block raises; uninstall puts
    the methods back."""
    import types

    said: list[str] = []

    class graph:  # noqa: N801 (torch's name)
        def __enter__(self) -> "graph":
            said.append("enter")
            return self

        def __exit__(self, *exc: Any) -> None:
            said.append("exit")

    enter, leave = graph.__enter__, graph.__exit__
    fake = types.ModuleType("torch.cuda.graphs")
    fake.graph = graph  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.cuda.graphs", fake)
    clock = iter(range(100, 10**6, 100))
    hooks = TorchHooks(None, clock=lambda: next(clock), recordings_only=True)
    hooks._on_torch(types.SimpleNamespace(__version__="test"))
    with graph():
        said.append("body")
    with pytest.raises(ValueError):
        with graph():
            raise ValueError("capture failed")
    out = hooks.uninstall()
    assert said == ["enter", "body", "exit", "enter", "exit"]
    assert out["events"]["kind"] == ["start_cuda_graph_block", "end_cuda_graph_block"] * 2
    assert out["events"]["ts_ns"] == [100, 200, 300, 400]
    assert graph.__enter__ is enter and graph.__exit__ is leave and hooks.errors == []
