"""What `graphmode.compare` returns: the analyzers' Comparison, rendering itself inline in Jupyter (reports.notebook).
The analyzer returns data only; this front-door subclass wires the notebook renderer onto it."""

from __future__ import annotations

import dataclasses

from graphmode.analyzers import comparison as _comparison
from graphmode.views import notebook_html


class Comparison(_comparison.Comparison):
    """analyzers.comparison.Comparison, rendered inline in Jupyter."""

    def _repr_html_(self) -> str:
        return notebook_html(self.analysis)


def renderable(c: _comparison.Comparison) -> Comparison:
    """The analyzers' Comparison, as the object that renders itself inline."""
    return Comparison(**{f.name: getattr(c, f.name) for f in dataclasses.fields(c)})
