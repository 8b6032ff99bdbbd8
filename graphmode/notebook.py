"""What the Python API hands to a notebook: the store's Trace and the analyzers' Comparison, rendering themselves
inline (reports.notebook). The lower layers return data only; this front-door module wires analyze and the
notebook renderer onto them, so that tracer/ and analyzers/ never import reports/."""

from __future__ import annotations

import dataclasses
import html
import os

from graphmode.analyzers import analyze
from graphmode.analyzers import comparison as _comparison
from graphmode.reports.notebook import analysis_html
from graphmode.tracer import store


class Trace(store.Trace):
    """A loaded trace (tracer.store.Trace) that Jupyter shows as `graphmode.trace()`'s handle does."""

    def _repr_html_(self) -> str:
        if self.closed:
            return f"<pre>{html.escape(repr(self))}: reopen it with graphmode.load to see its report</pre>"
        return analysis_html(analyze(self), trace=self)


class Comparison(_comparison.Comparison):
    """What `graphmode.compare` returns (analyzers.comparison.Comparison), rendered inline in Jupyter."""

    def _repr_html_(self) -> str:
        return analysis_html(self.analysis)


def load(path: str | os.PathLike[str]) -> Trace:
    """Opens a trace file read-only (the file is never changed). Raises TraceError with a one-line reason."""
    return store.load_as(path, Trace)


def renderable(c: _comparison.Comparison) -> Comparison:
    """The analyzers' Comparison, as the object that renders itself inline."""
    return Comparison(**{f.name: getattr(c, f.name) for f in dataclasses.fields(c)})
