"""The answer `graphmode.compare` returns: should this step be a CUDA graph?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graphmode.analyzers.results import BreakEven, TraceAnalysis


@dataclass(frozen=True)
class Comparison:
    path: Path
    outputs_match: bool  # the graph computed what the eager step computed (every pass)
    verification: dict[str, str]
    eager_ns: float | None  # median eager iteration (untraced timing pass)
    graph_ns: float | None  # median graph replay
    saved_per_iteration_ns: float | None
    one_time_ns: float | None  # build + instantiate + upload + first-launch excess
    break_even: BreakEven | None
    analysis: TraceAnalysis

    @property
    def worth_it(self) -> bool:
        """A replay is faster and the graph pays back within the replays the run made."""
        be = self.break_even
        return bool(self.outputs_match and be is not None and be.replays is not None and be.replays <= be.run_replays)

    def _repr_html_(self) -> str:  # Jupyter
        from graphmode.views import notebook_html

        return notebook_html(self.analysis)


def comparison(analysis: TraceAnalysis, meta_verified: dict[str, bool], notes: dict[str, str], path: Path) -> Comparison:
    be = next((b for b in analysis.break_even if b.baseline == "eager"), None)
    return Comparison(
        path=path,
        outputs_match=bool(meta_verified) and all(meta_verified.values()),
        verification=notes,
        eager_ns=be.eager_ns if be else None,
        graph_ns=be.graph_ns if be else None,
        saved_per_iteration_ns=be.saved_per_replay_ns if be else None,
        one_time_ns=be.one_time_ns if be else None,
        break_even=be,
        analysis=analysis,
    )
