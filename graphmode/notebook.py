"""What `graphmode.load` returns: the store's Trace, rendering itself inline in Jupyter (reports.notebook). The lower
layers return data only; this front-door module wires analyze and the notebook renderer onto the loaded trace, so
that tracer/ never imports analyzers/ or reports/ (graphmode.comparison does the same for `graphmode.compare`)."""

from __future__ import annotations

import html
import os

from graphmode.tracer import store


class Trace(store.Trace):
    """A loaded trace (tracer.store.Trace) that Jupyter shows as `graphmode.trace()`'s handle does."""

    def _repr_html_(self) -> str:
        if self.closed:
            return f"<pre>{html.escape(repr(self))}: reopen it with graphmode.load to see its report</pre>"
        # lazy: `graphmode.load` costs what the store costs; the analysis and the page load when Jupyter asks
        from graphmode.views import notebook_html

        return notebook_html(trace=self)


def load(path: str | os.PathLike[str]) -> Trace:
    """Opens a trace file read-only (the file is never changed). Raises TraceError with a one-line reason."""
    return store.load_as(path, Trace)
