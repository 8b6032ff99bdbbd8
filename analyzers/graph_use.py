"""How much of the run used graphs, what PyTorch decided about them, what they cost: the issue-10 fields of
TraceAnalysis.

`graph_use_fields(trace, analysis)` fills `coverage` (analyzers.coverage), `torch_graphs`
(analyzers.torch_graphs) and `graph_budget` (analyzers.graph_budget) from the traced pass; analyze()
calls it once, before the diagnostics, which read these fields.
"""

from __future__ import annotations

from typing import Any

from graphmode.analyzers.coverage import graph_coverage
from graphmode.analyzers.graph_budget import graph_budget
from graphmode.analyzers.results import TraceAnalysis
from graphmode.analyzers.torch_graphs import torch_graphs
from graphmode.tracer.store import Trace


def graph_use_fields(trace: Trace, analysis: TraceAnalysis) -> dict[str, Any]:
    pid = analysis.traced_pass_id
    coverage = graph_coverage(trace, pid, analysis.source_lines) if pid is not None else None
    torch = torch_graphs(trace, pid)
    return {"coverage": coverage, "torch_graphs": torch, "graph_budget": graph_budget(trace, pid, torch, analysis)}
