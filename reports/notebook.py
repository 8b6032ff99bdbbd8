"""Inline results in Jupyter: the report and the interactive page, in one cell's output."""

from __future__ import annotations

import html
import io

from graphmode.analyzers.results import TraceAnalysis
from graphmode.reports.html import render_html
from graphmode.reports.terminal import print_report
from graphmode.tracer.store import load, Trace


def analysis_html(analysis: TraceAnalysis, height: int = 900, trace: Trace | None = None) -> str:
    """The terminal report as HTML, then the full interactive page in a sandboxed iframe (drawn from `trace`
    when given, the trace of the analysis already open, else from the file at `analysis.path`)."""
    from rich.console import Console

    console = Console(record=True, width=110, file=io.StringIO())
    print_report(analysis, console=console)
    report = console.export_html(inline_styles=True, code_format="<pre style='font-size:12px'>{code}</pre>")
    page = ""
    try:
        if trace is not None:
            page, _ = render_html(trace, analysis=analysis)  # (page, the window it shows)
        else:
            with load(analysis.path) as opened:
                page, _ = render_html(opened, analysis=analysis)
    except Exception as e:  # the report alone is still worth showing
        page = f"<p>timeline unavailable: {html.escape(str(e))}</p>"
    frame = f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:{height}px;border:0" sandbox="allow-scripts"></iframe>'
    return report + frame
