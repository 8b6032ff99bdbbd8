"""What PyTorch's hooks heard in a run: its capture windows (torch.cuda.graph blocks, cudagraph-tree recordings) and
its compilations, and the run's entry in meta.runs. Read by the graph mapping (analyzers.script_graphs), the timing
run's one-time costs (analyzers.untraced) and the prediction; below all of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphmode.tracer.store import Trace


def run_entry(trace: Trace, pass_id: int) -> dict[str, Any]:
    """The pass's entry in meta.runs (what `graphmode run` recorded of that run); {} when it has none."""
    for run in trace.meta.get("runs", []) or []:
        if isinstance(run, dict) and run.get("pass_id") == pass_id:
            return run
    return {}


def untraced_capture_graphs(trace: Trace, pass_id: int, adopted: bool = False) -> frozenset[int]:
    """The graphs the pass captured with CUPTI detached (meta.runs[].untraced_captures, tracer.untraced_windows): known
    from their replays, their edges not recorded. `adopted`: only those whose capture took over a window's lingering
    detached state (the windows' linger): no detach just before them; the program's warm-up ran detached."""
    entry = run_entry(trace, pass_id).get("untraced_captures") or {}
    return frozenset(int(c["graph_id"]) for c in entry.get("captures") or []
                     if int(c.get("graph_id") or 0) and (c.get("adopted") or not adopted))


_WINDOW_KINDS = {"start_cudagraph_recording": "end_cudagraph_recording", "start_cuda_graph_block": "end_cuda_graph_block"}
_WINDOW_KINDS_SHORT = {"start_cudagraph_recording": "recording", "start_cuda_graph_block": "block"}


@dataclass(frozen=True)
class TorchWindow:
    """A cudagraph-tree recording ('recording') or a `with torch.cuda.graph(...)` block ('block') as heard."""

    start_ns: int
    end_ns: int
    kind: str
    thread_id: int


def _heard(trace: Trace, pass_id: int, callbacks_pass: bool) -> tuple[list[str], list[int], list[int]]:
    """(kind, ts_ns, thread_id) of what PyTorch's hooks heard in the pass: its own entry in meta.runs, else
    meta.torch when the pass is the run that wrote it (`callbacks_pass`)."""
    entry = run_entry(trace, pass_id)
    torch = entry.get("torch") if isinstance(entry.get("torch"), dict) else None
    if torch is None and callbacks_pass and isinstance(trace.meta.get("torch"), dict):
        torch = trace.meta["torch"]
    events = (torch or {}).get("events") or {}
    kinds = [str(k) for k in events.get("kind") or []]
    return kinds, [int(x) for x in events.get("ts_ns") or []], [int(x) for x in events.get("thread_id") or [0] * len(kinds)]


def compile_windows(trace: Trace, pass_id: int, callbacks_pass: bool) -> tuple[tuple[int, int, int], ...] | None:
    """(start, end, thread) of each window Dynamo's callback handler opened in the pass for other work than a
    cudagraph-tree recording: a compilation ('dynamo'), a lazy backward compilation, Triton autotuning. None when
    the pass heard none of Dynamo's callbacks at all (a timing run recorded before it listened for compilations;
    a program without torch.compile)."""
    kinds, ts, threads = _heard(trace, pass_id, callbacks_pass)
    opened: dict[tuple[int, str], list[int]] = {}
    out: list[tuple[int, int, int]] = []
    heard_dynamo = False
    for k, t, th in zip(kinds, ts, threads):
        if k.startswith(("start_", "end_")) and k not in _WINDOW_KINDS and k not in _WINDOW_KINDS.values():
            what = k.partition("_")[2]
            heard_dynamo = True
            if k.startswith("start_"):
                opened.setdefault((th, what), []).append(t)
            elif opened.get((th, what)):
                out.append((opened[(th, what)].pop(), t, th))
    return tuple(sorted(out)) if heard_dynamo else None


def torch_windows(trace: Trace, pass_id: int, callbacks_pass: bool) -> tuple[TorchWindow, ...]:
    """Each cudagraph-tree recording and each `with torch.cuda.graph(...)` block PyTorch ran in the pass
    (tracer.torch_hooks), by start: from the pass's own entry in meta.runs (the measuring and timing runs hear
    these only), else from meta.torch when the pass is the run that wrote it (the one with callbacks). Starts
    and ends pair up in order on each thread, per kind; a window inside another (the block a recording captures
    through) is left out: the outermost one holds all of PyTorch's work around that capture."""
    kinds, ts, threads = _heard(trace, pass_id, callbacks_pass)
    open_at: dict[tuple[int, str], list[int]] = {}
    found: list[TorchWindow] = []
    ends = {v: k for k, v in _WINDOW_KINDS.items()}
    for k, t, th in zip(kinds, ts, threads):
        if k in _WINDOW_KINDS:
            open_at.setdefault((int(th), k), []).append(int(t))
        elif k in ends and open_at.get((int(th), ends[k])):
            found.append(TorchWindow(open_at[(int(th), ends[k])].pop(), int(t), _WINDOW_KINDS_SHORT[ends[k]], int(th)))
    out: list[TorchWindow] = []
    for w in sorted(found, key=lambda w: (w.start_ns, -w.end_ns)):  # outer windows first
        if not out or w.start_ns > out[-1].end_ns:
            out.append(w)
        elif w.end_ns > out[-1].end_ns:  # overlapping, not nested (threads): keep both
            out.append(w)
    return tuple(out)
