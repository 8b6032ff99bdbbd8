"""One analysis, every view: the wiring the commands and the API share (no logic of their own).

A command builds the run once (analyzers.run.build_run), analyzes it once (analyzers.analyze), and hands the
analysis to each view it shows: the terminal report, the JSON and, with the page's data read from the same run
(analyzers.page.page_data), the interactive page. The renderers take only what they are given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from graphmode.analyzers.rank_results import RankSetAnalysis
    from graphmode.analyzers.results import TraceAnalysis
    from graphmode.analyzers.run import Run
    from graphmode.analyzers.timeline import Selection
    from graphmode.reports.html import HtmlSummary
    from graphmode.reports.ranks_html import RanksHtmlSummary
    from graphmode.tracer.store import Trace


def _run_of(source: Trace | Run) -> Run:
    from graphmode.analyzers.run import Run, build_run

    return source if isinstance(source, Run) else build_run(source)


def html_page(source: Trace | Run, analysis: TraceAnalysis | None = None, *, iterations: tuple[int, int] | None = None,
         window_ms: tuple[float, float] | None = None, max_spans: int | None = None) -> tuple[str, Selection | None]:
    """The interactive page of a trace (or of the command's Run) and what part of it the whole-run timeline draws;
    `analysis`: the one the command already made (else the run is analyzed here, once)."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.page import page_data
    from graphmode.analyzers.timeline import MAX_DRAWN_SPANS
    from graphmode.reports.html import render_html

    run = _run_of(source)
    a = analysis if analysis is not None else analyze(run)
    data = page_data(run, a, iterations=iterations, window_ms=window_ms,
                     max_spans=max_spans if max_spans is not None else MAX_DRAWN_SPANS)
    return render_html(a, data, chosen=iterations is not None or window_ms is not None)


def write_page(source: Trace | Run, out: Path, analysis: TraceAnalysis | None = None, **options: Any) -> HtmlSummary:
    """html_page() written to `out` (options: iterations, window_ms, max_spans)."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.page import page_data
    from graphmode.reports.html import write_html

    run = _run_of(source)
    a = analysis if analysis is not None else analyze(run)
    chosen = options.get("iterations") is not None or options.get("window_ms") is not None
    return write_html(a, page_data(run, a, **options), out, chosen=chosen)


def ranks_page(a: RankSetAnalysis) -> tuple[str, int, str]:
    """The rank page of a rank set's analysis (reports.ranks_html), with what it draws read from the rank traces."""
    from graphmode.analyzers.rank_page import rank_page_data
    from graphmode.reports.ranks_html import render_ranks_html

    return render_ranks_html(a, rank_page_data(a))


def write_ranks_page(a: RankSetAnalysis, out: Path, workers: int = 1) -> RanksHtmlSummary:
    """ranks_page() written to `out`; the rank traces read again by `workers` processes (analyzers.rank_page)."""
    from graphmode.analyzers.rank_page import rank_page_data
    from graphmode.reports.ranks_html import write_ranks_html

    return write_ranks_html(a, rank_page_data(a, workers), out)


def report_and_page(trace: Trace, report: bool, page: Path | None, console: Console | None = None) -> TraceAnalysis:
    """What `graphmode run` shows of its trace: the short terminal report (`report`) and the page written to `page`
    (None: none), from one run model and one analysis of it; returns the analysis."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.run import build_run

    run = build_run(trace)
    analysis = analyze(run)  # once: the terminal and the page render the same analysis of the same run
    if report:
        from graphmode.reports.terminal import print_report

        print_report(analysis, console, detail=False)
    if page is not None:
        write_page(run, page, analysis)
    return analysis


def notebook_html(analysis: TraceAnalysis | None = None, trace: Trace | None = None) -> str:
    """The report and page for a notebook cell (reports.notebook) of `analysis`, or of `trace` analyzed here: the
    page's data from `trace`, the trace of the analysis already open, else from the file at `analysis.path`."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.page import page_data
    from graphmode.reports.notebook import analysis_html
    from graphmode.tracer.store import load

    if analysis is None:
        if trace is None:
            raise ValueError("notebook_html needs an analysis or a trace")
        run = _run_of(trace)
        analysis = analyze(run)
        trace_run: Run | None = run
    else:
        trace_run = _run_of(trace) if trace is not None else None
    try:
        if trace_run is not None:
            data = page_data(trace_run, analysis)
        else:
            with load(analysis.path) as opened:
                data = page_data(_run_of(opened), analysis)
    except Exception as e:  # the report alone is still worth showing
        return analysis_html(analysis, None, unavailable=str(e))
    return analysis_html(analysis, data)
