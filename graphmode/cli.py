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
