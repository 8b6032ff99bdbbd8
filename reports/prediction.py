"""Terminal rendering of the graph prediction (analyzers.predict) and of a cost model. Computes nothing."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from graphmode.analyzers.costmodel import (NODE_TYPES, TRACER_CAPTURE_GRAPH, TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE,
                                           TRACER_CAPTURE_NODE_COPIED, CostModel)
from graphmode.analyzers.results import Estimate, Prediction, RegionPrediction, ShapeGroup
from graphmode.reports.names import cell, printable
from graphmode.reports.notes import API_WORDS, word
from graphmode.reports.pitfall_words import BREAKER_ADVICE
from graphmode.reports.units import human_bytes, human_ns


def _est(e: Estimate | None) -> str:
    if e is None:
        return "—"
    return f"{human_ns(e.ns)} [{human_ns(e.low_ns)}–{human_ns(e.high_ns)}]"


def _replays(r: RegionPrediction) -> str:
    if r.never:
        return "never"
    if r.break_even is None:
        return "—"
    low = str(r.break_even_low) if r.break_even_low is not None else "never"
    high = "never" if r.break_even_high_never else str(r.break_even_high)
    return f"{r.break_even:,} [{low}, {high}]"


def graph_line(r: RegionPrediction) -> str:
    g = r.graph
    if g is None:
        return ""
    parts = [f"{g.kernels} kernel", f"{g.memcpys} memcpy", f"{g.memsets} memset"] + ([f"{g.host_nodes} host"] if g.host_nodes else [])
    streams = f", {g.streams} streams ({g.cross_stream_edges} cross-stream edges{', inferred' if g.event_pairing == 'inferred' else ''})" \
        if g.streams > 1 else ""
    return (f"{g.nodes} nodes ({', '.join(parts)}), {g.edges} edges{streams}; GPU work {human_ns(g.serial_ns)} serial, "
            f"critical path {human_ns(g.critical_path_ns)} over {g.critical_path_nodes} nodes")


def advice_text(r: RegionPrediction) -> str:
    """What to capture for a region and how, in one sentence ('' without advice): its lines, the API, the reasons."""
    a = r.advice
    if a is None:
        return ""
    source = {"line_stamps": "line stamps", "launch_sources": "launch sources"}.get(a.lines_from, a.lines_from)
    lines = f"lines {a.lines} (from {source})" if a.lines else f"lines unknown ({word(a.lines_unknown)})" if a.lines_unknown else ""
    api = f"use {API_WORDS[a.api]}" if a.api else ""
    reasons = "; ".join(word(n) for n in a.reasons)
    return "; ".join(x for x in (lines, api) if x) + (f": {reasons}" if reasons else "")


def shape_group_text(g: ShapeGroup) -> str:
    """A step that changes input shape: one graph per shape, their one-time cost together, their memory."""
    cost = f"one-time cost of all {g.shapes} graphs {_est(g.one_time)}" if g.one_time is not None else "no one-time cost (no cost model)"
    memory = (f"they would hold {human_bytes(g.memory_bytes)}, each in its own pool (torch.cuda.graph's default; "
              f"about {human_bytes(g.memory_largest_bytes)}, the largest shape's, where they share one pool: captured "
              "largest first with pool=)") if g.memory_bytes is not None and g.memory_largest_bytes is not None else \
        (word(g.memory_unknown) if g.memory_unknown is not None else "")
    return (f"the step changes input shape ({len(g.labels)} regions, '{g.labels[0]}' to '{g.labels[-1]}'): one graph per shape; "
            f"{cost}" + (f"; {memory}" if memory else ""))


def _regions_table(title: str, regions: list[RegionPrediction], rows: list[tuple[str, list[str]]]) -> Table:
    """A row name, then one right-aligned column per region."""
    t = Table(title=title, title_justify="left")
    t.add_column("", style="bold")
    for r in regions:
        t.add_column(Text(cell(r.label)), justify="right")
    for name, cells in rows:
        t.add_row(name, *cells)
    return t


def _memory(r: RegionPrediction) -> str:
    """The pool its graph would reserve [its least and most recurrence], and the step's own live peak; '—' where
    unknown."""
    m = r.memory
    if m is None:
        return "—"
    spread = f" [{human_bytes(m.low_bytes)}–{human_bytes(m.high_bytes)}]" if m.low_bytes != m.high_bytes else ""
    workspaces = f", cuBLAS workspaces {human_bytes(m.workspace_bytes)}" if m.workspace_bytes else ""
    return f"{human_bytes(m.bytes)}{spread} (live peak {human_bytes(m.live_bytes)}{workspaces})"


def memory_unknown_text(regions: list[RegionPrediction]) -> str:
    """Why the memory of the to-graph regions is not given, once ('' where it is, or for a program that is not
    PyTorch's: other allocators are not read)."""
    reasons = {r.memory_unknown.get("reason"): r.memory_unknown for r in regions if r.memory is None and r.memory_unknown is not None}
    shown = [n for reason, n in reasons.items() if reason != "not_torch"]
    return "; ".join(word(n) for n in shown)


def to_graph_rows(to_graph: list[RegionPrediction]) -> list[tuple[str, list[str]]]:
    """The rows of the to-graph table (terminal and page): a name, then one cell per region; rows with no
    number in any cell (every predicted row, without a cost model) are left out."""
    rows: list[tuple[str, list[str]]] = [
        ("iterations", [f"{r.iterations:,}" + ("" if r.synchronized else " (not synchronized)") for r in to_graph]),
        ("graph nodes / edges", [f"{r.graph.nodes} / {r.graph.edges}" if r.graph else "—" for r in to_graph]),
        ("capture (or node-API build)", [_est(r.capture) + (" (node-API build)" if r.build == "node_api" and r.capture else "") for r in to_graph]),
        ("instantiate", [_est(r.instantiate) for r in to_graph]),
        ("upload", [_est(r.upload) for r in to_graph]),
        ("first launch excess", [_est(r.first_launch_excess) for r in to_graph]),
        ("first/second graph of the process", [_est(r.first_graph_extra) + (" (measured in this process)" if r.first_graph_from == "this_process" else "")
                                               if r.first_graph_extra else "—" for r in to_graph]),
        ("PyTorch's own capture work", [_est(r.framework) if r.framework else "—" for r in to_graph]),
        ("one-time cost", [_est(r.one_time) for r in to_graph]),
        ("eager iteration (measured)", [_est(r.eager_period) for r in to_graph]),
        ("eager GPU work (measured)", [human_ns(r.gpu_work_ns) for r in to_graph]),
        ("graph replay", [_est(r.replay_period) for r in to_graph]),
        ("saved per iteration", [_est(r.saved_per_iteration) for r in to_graph]),
        ("break-even replays", [_replays(r) for r in to_graph]),
        ("memory the graph would hold", [_memory(r) for r in to_graph]),
        ("measured: one-time cost", [human_ns(r.measured_one_time_ns) for r in to_graph]),
        ("measured: graph replay", [human_ns(r.measured_replay_ns) for r in to_graph]),
        ("measured: break-even", [f"{r.measured_break_even:,}" if r.measured_break_even is not None else "—" for r in to_graph]),
    ]
    return [(name, cells) for name, cells in rows if any(c != "—" for c in cells)]


def to_eager_rows(to_eager: list[RegionPrediction]) -> list[tuple[str, list[str]]]:
    """The rows of the table for graphs run without an eager twin."""
    return [
        ("replays (measured)", [f"{r.iterations:,}" for r in to_eager]),
        ("graph replay (measured)", [_est(r.replay_period) for r in to_eager]),
        ("GPU work of a replay", [human_ns(r.gpu_work_ns) for r in to_eager]),
        ("eager iteration (predicted)", [_est(r.eager_period) for r in to_eager]),
        ("saved per replay", [_est(r.saved_per_iteration) for r in to_eager]),
        ("one-time cost (measured)", [human_ns(r.measured_one_time_ns) for r in to_eager]),
        ("break-even replays", [_replays(r) for r in to_eager]),
    ]


def print_prediction(console: Console, p: Prediction | None) -> None:
    """One table per direction: predicted one-time cost, replay period, saving, break-even, beside what
    the trace measured for the same work where it built the graph; then capture breakers and notes."""
    if p is None or not (p.regions or p.notes):
        return
    if not p.regions:  # nothing predicted: say why
        console.print("[bold]Prediction: no region to predict[/bold]")
        for n in p.notes:
            console.print(f"  note: {escape(printable(word(n)))}")
        return
    title = "Prediction: what a CUDA graph would cost and save"
    if p.model_gpu:
        title += f" (cost model: {p.model_gpu}, driver {p.model_driver})"
    console.print(f"[bold]{escape(printable(title))}[/bold]")
    if p.model_note is not None:
        colour = "yellow" if p.model_match in ("other_gpu", "none") else "default"
        console.print(f"  [{colour}]{escape(printable(word(p.model_note)))}[/{colour}]")
    to_graph = [r for r in p.regions if r.direction == "to_graph"]
    if to_graph:
        console.print(_regions_table("Predicted from the eager work (95% intervals)", to_graph, to_graph_rows(to_graph)))
        for r in to_graph:
            console.print(f"  {escape(cell(r.label))}: {escape(graph_line(r))} ({escape(printable(word(r.basis)))})")
        for r in to_graph:
            if text := advice_text(r):
                console.print(f"[bold]what to capture:[/bold] {escape(cell(r.label))}: {escape(printable(text))}")
        for g in p.shape_groups:
            console.print(f"[bold]per shape:[/bold] {escape(printable(shape_group_text(g)))}")
        if text := memory_unknown_text(to_graph):
            console.print(f"  memory: {escape(printable(text))}")
    to_eager = [r for r in p.regions if r.direction == "to_eager"]
    if to_eager:
        console.print(_regions_table("Graphs run without an eager twin: what the same work would cost launched eagerly", to_eager,
                                     to_eager_rows(to_eager)))
    for r in p.regions:
        for b in r.breakers:
            where = f" at {b.where}" if b.where else ""
            what = f"{b.api} " if b.api else ""
            console.print(f"[bold yellow]would break the capture:[/bold yellow] {escape(cell(r.label))}: {escape(printable(what))}"
                          f"({b.kind}, {b.calls:,} over {r.iterations:,} iterations){escape(printable(where))}")
            console.print(f"  what to do: {escape(printable(BREAKER_ADVICE[b.kind]))}")
        for n in r.notes:
            console.print(f"  note ({escape(cell(r.label))}): {escape(printable(word(n)))}")
    for n in p.notes:
        console.print(f"  note: {escape(printable(word(n)))}")


def print_cost_model(console: Console, m: CostModel) -> None:
    """What `graphmode calibrate` measured: per-node and per-edge costs with their spread, and the fit's residuals."""
    console.print(f"[bold]Cost model for {escape(m.gpu_name)}[/bold] (driver {escape(m.driver_version)}, CUDA "
                  f"{m.cuda_driver_version}), {m.calibration.get('graphs', len(m.table))} graphs in "
                  f"{m.calibration.get('seconds', '?')} s" + (f", written to {escape(m.path)}" if m.path else ""))
    t = Table(title="Fitted costs: intercept and per node / edge (± 1 sd of the coefficient)", title_justify="left")
    t.add_column("quantity", style="bold")
    cols = ["1", "kernel", "kernel_spin", *NODE_TYPES[1:], "edges", "record_calls", "wait_calls"]
    heads = {"1": "fixed", "kernel_spin": "kernel ~5 us", "record_calls": "record call", "wait_calls": "wait call"}
    for col in cols:
        t.add_column(heads.get(col, col), justify="right")
    t.add_column("residual sd", justify="right")
    t.add_column("worst residual", justify="right")
    for q, c in m.costs.items():
        cells = []
        for f in cols:
            name = next((n for n in (f, f"path_{f}", f"path_{f}_tiny") if n in c.features), "")
            if not name:
                cells.append("")
                continue
            j = c.features.index(name)
            cells.append(f"{human_ns(c.coef[j])} ±{human_ns(c.cov[j][j] ** 0.5)}")
        # relative_to: % of the replay's span
        unit = (lambda x: f"{100 * x:.1f}%") if (c.relative or c.relative_to) else human_ns
        t.add_row(q, *cells, unit(c.resid_sd), unit(c.max_abs_residual()))
    console.print(t)
    if m.node_gpu_ns:
        console.print("Own GPU duration of the calibration nodes (CUPTI): "
                      + ", ".join(f"{k} {human_ns(v)}" for k, v in m.node_gpu_ns.items()))
    extra = m.first_graph_extra()
    if extra is not None:
        console.print(f"The first graph of a process costs {human_ns(extra.median)} more [{human_ns(extra.p10)}–{human_ns(extra.p90)}, "
                      f"{extra.n} processes]: kept out of the fit, added to a prediction when no graph was built before.")
    second = m.first_graph_extra(nth=2)
    if second is not None:
        console.print(f"Its second graph still costs {human_ns(second.median)} more [{human_ns(second.p10)}–{human_ns(second.p90)}]: added when one "
                      "graph was built before.")
    api = m.first_graph_extra(api=True)
    if api is not None:
        console.print(f"Built with the node API, the first graph of a process costs {human_ns(api.median)} more [{human_ns(api.p10)}–{human_ns(api.p90)}, "
                      f"{api.n} processes]: added to a node-API build's prediction instead.")
    # PyTorch's terms, one line each: (table, key, what it is, what its samples are, what uses it)
    for table, key, what, samples, use in (
        (m.torch_capture, "first", "torch.cuda.graph's own work around a process's first PyTorch capture", "captures", "a PyTorch program's capture"),
        (m.torch_capture, "later", "torch.cuda.graph's own work around a later PyTorch capture", "captures", "a PyTorch program's capture"),
        (m.torch_capture, "first_graph_extra", "A PyTorch process's first graph: instantiate + first replay over later graphs", "processes",
         "a PyTorch program's first graph (instead of the driver probe's)"),
        (m.torch_capture, "replay_host", "PyTorch's CUDAGraph.replay() host time around a synchronized replay", "replays", "a PyTorch program's replays"),
        (m.torch_capture, "replay_call", "PyTorch's CUDAGraph.replay() host time in the replay call alone", "replays", "a PyTorch program's replays"),
        (m.tree_capture, "first", "A process's first cudagraph-tree recording", "samples", "a program that records cudagraph trees"),
        (m.tree_capture, "later", "A later cudagraph-tree recording", "samples", "a program that records cudagraph trees"),
        (m.tree_capture, "call_host", "A steady cudagraph-tree call (host time)", "samples", "the replays of a program that records cudagraph trees"),
    ):
        if (sp := table.get(key)) is not None:
            console.print(f"{what}: {human_ns(sp.median)} [{human_ns(sp.p10)}–{human_ns(sp.p90)}, {sp.n} {samples}]: priced into {use}.")
    if (sp := m.torch_capture.get("capture_ratio")) is not None:
        console.print(f"PyTorch issues a step in capture mode {sp.median:.2f}x as slowly as eagerly [{sp.p10:.2f}–{sp.p90:.2f}, "
                      f"{sp.n} captures]: a PyTorch program's predicted capture scales its eager issue time by it.")
    if m.launch:
        lt = Table(title="Eager launch cost per framework (a graph with no eager twin is priced with these)", title_justify="left")
        for col in ("launcher", "per kernel", "per call", "processes"):
            lt.add_column(col, justify="left" if col == "launcher" else "right")
        for key, lc in sorted(m.launch.items()):
            lt.add_row(key, f"{human_ns(lc.per_kernel.median)} [{human_ns(lc.per_kernel.p10)}–{human_ns(lc.per_kernel.p90)}]",
                       f"{human_ns(lc.per_call.median)} [{human_ns(lc.per_call.p10)}–{human_ns(lc.per_call.p90)}]",
                       str(lc.per_kernel.n))
        console.print(lt)
    if m.tracer:
        tt = Table(title="What `graphmode run`'s one traced run adds (taken off its figures): per launch, per capture",
                   title_justify="left")
        for col in ("what", "added", "traced processes"):
            tt.add_column(col, justify="left" if col == "what" else "right")
        names = {TRACER_CAPTURE_GRAPH: "a torch.cuda.graph capture, per graph (before session 26)",
                 TRACER_CAPTURE_NODE: "a torch.cuda.graph capture, per captured kernel (before session 26)",
                 TRACER_CAPTURE_GRAPH_COPIED: "a torch.cuda.graph capture, per graph",
                 TRACER_CAPTURE_NODE_COPIED: "a torch.cuda.graph capture, per captured kernel"}
        for key, sp in sorted(m.tracer.items()):
            tt.add_row(names.get(key, f"a {key} launch"), f"{human_ns(sp.median)} [{human_ns(sp.p10)}–{human_ns(sp.p90)}]",
                       str(sp.n))
        console.print(tt)
    for e in m.calibration.get("errors", []):
        console.print(f"[yellow]not measured:[/yellow] {escape(str(e))}")
    for e in m.calibration.get("launch_left_out", []):
        console.print(f"[yellow]launch cost left out:[/yellow] {escape(launch_left_out_text(e))}")


def launch_left_out_text(e: Any) -> str:
    """Why one launch probe was left out of the fit (analyzers.costmodel.fit_launch_costs), in words."""
    if not isinstance(e, dict):  # a model written before these were kinds
        return str(e)
    if e.get("kind") == "fused":
        lo, hi = e.get("kernels", ["?", "?"])
        return f"{e.get('launcher')}: {lo} and {hi} kernels a call (the framework fused the probe's ops)"
    if e.get("kind") == "gpu_bound":
        return (f"{e.get('launcher')}: the probe was bound by the GPU ({e.get('gpu_ns', 0):.0f} of {e.get('wall_ns', 0):.0f} ns), "
                "not by launches")
    return str(e)
