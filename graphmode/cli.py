"""The `graphmode` command line. Thin: parses options, calls tracer/analyzers/reports.

Heavy modules (duckdb, cuda, cupti, plotly) are imported inside the commands so `--help` is instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(
    name="graphmode",
    help="Shows what CUDA Graphs buy you: launch overhead saved, build cost, break-even replays.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(message: str, code: int = 2) -> None:
    typer.secho(f"graphmode: {message}", err=True, fg="red")
    raise typer.Exit(code)


def _load(path: Path):  # type: ignore[no-untyped-def]
    from tracer.store import TraceError, load

    try:
        return load(path)
    except TraceError as e:
        _fail(str(e))


@app.command()
def info(trace_file: Annotated[Path, typer.Argument(help="A graphmode trace file.")]) -> None:
    """Metadata and table counts of a trace."""
    from reports.info import print_info

    trace = _load(trace_file)
    print_info(trace)


@app.command()
def report(
    trace_file: Annotated[Path, typer.Argument(help="A graphmode trace file.")],
    json_output: Annotated[
        bool, typer.Option("--json", help="Write the versioned JSON report (reports/report.schema.json) instead of tables.")
    ] = False,
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Write the report to this file; a .json name implies --json.")
    ] = None,
) -> None:
    """Launch overhead saved, graph one-time cost and break-even replays of a trace."""
    from analyzers import analyze

    trace = _load(trace_file)
    analysis = analyze(trace)
    as_json = json_output or (out is not None and out.suffix.lower() == ".json")
    try:
        if as_json:
            from reports.json_report import render_json

            text = render_json(analysis)
            if out is None:
                typer.echo(text, nl=False)
            else:
                out.write_text(text)
        else:
            from rich.console import Console

            from reports.terminal import print_report

            if out is None:
                print_report(analysis)
            else:
                with open(out, "w") as f:
                    print_report(analysis, Console(file=f, width=160, no_color=True, highlight=False))
    except OSError as e:
        _fail(f"cannot write the report to {out}: {e.strerror or e}; choose another --out path")
    if out is not None:
        typer.echo(f"report written to {out}")
