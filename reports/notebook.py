"""Inline results in Jupyter: the report and the interactive page, in one cell's output."""

from __future__ import annotations

import html
import io

from graphmode.analyzers.page import PageData
from graphmode.analyzers.results import TraceAnalysis
from graphmode.reports.html import render_html
from graphmode.reports.terminal import print_report


def analysis_html(analysis: TraceAnalysis, page_data: PageData | None, height: int = 900, unavailable: str = "") -> str:
    """The terminal report as HTML, then the full interactive page (of the analysis and its run's page data,
    analyzers.page) in a sandboxed iframe; `unavailable`: why there is no page data."""
    from rich.console import Console

    console = Console(record=True, width=110, file=io.StringIO())
    print_report(analysis, console=console)
    report = console.export_html(inline_styles=True, code_format="<pre style='font-size:12px'>{code}</pre>")
    page = f"<p>timeline unavailable: {html.escape(unavailable)}</p>"
    if page_data is not None:
        try:
            page, _ = render_html(analysis, page_data)  # (page, the window it shows)
        except Exception as e:  # the report alone is still worth showing
            page = f"<p>timeline unavailable: {html.escape(str(e))}</p>"
    frame = f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:{height}px;border:0" sandbox="allow-scripts"></iframe>'
    return report + frame
