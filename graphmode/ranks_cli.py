"""`report`, `view` and `export` on the traces of a multi-process job (graphmode.cli calls these when its
argument names a rank set: a folder, a glob or several files). Thin: the work is in analyzers.ranks and
reports.ranks*. Errors a person can act on are raised as RankSetError (one line) for the CLI to print. As in
graphmode.cli, each function imports the analyzers and reports it needs, so that the CLI starts without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graphmode.tracer.rankset import RankSetError

if TYPE_CHECKING:
    from graphmode.analyzers.rank_results import RankSetAnalysis


def _source(args: list[Path]) -> str:
    return " ".join(str(a) for a in args)


def _analysis(paths: list[Path], args: list[Path]) -> RankSetAnalysis:
    import sys

    from graphmode.analyzers.ranks import analyze_ranks, rank_workers

    def progress(done: int, total: int) -> None:
        if total >= 16 and sys.stderr.isatty():
            print(f"\rgraphmode: analysing rank traces {done}/{total}", end="" if done < total else "\n", file=sys.stderr)

    return analyze_ranks(paths, source=_source(args), progress=progress, workers=rank_workers(len(paths)))


def report_ranks(paths: list[Path], args: list[Path], fmt: str, out: Path | None, full_names: bool = False) -> str | None:
    """Prints or writes the job's report ('text', 'json' or 'html', graphmode.cli._report_format); returns what
    to say afterwards (or None)."""
    a = _analysis(paths, args)
    if out is not None:
        _check_out(out, paths)
    if fmt == "html" and out is not None:
        from graphmode.analyzers.ranks import rank_workers
        from graphmode.views import write_ranks_page

        summary = write_ranks_page(a, out, workers=rank_workers(len(paths)))
        return f"report of {len(a.ranks)} ranks written to {summary.path} ({summary.bytes / 1e6:.1f} MB)"
    if fmt == "json":
        from graphmode.reports.ranks import render_ranks_json

        text = render_ranks_json(a)
        if out is None:
            print(text, end="")
            return None
        from graphmode.reports.output import write_output

        write_output(out, text)
        return f"report of {len(a.ranks)} ranks written to {out}"
    from rich.console import Console

    from graphmode.reports.ranks import print_ranks_report

    if out is None:
        print_ranks_report(a, whole_names=full_names)
        return None
    from graphmode.reports.output import open_output

    with open_output(out) as f:
        print_ranks_report(a, Console(file=f, width=160, no_color=True, highlight=False), whole_names=full_names)
    return f"report of {len(a.ranks)} ranks written to {out}"


def view_ranks(paths: list[Path], args: list[Path], out: Path | None) -> str:
    from graphmode.analyzers.ranks import rank_workers
    from graphmode.views import write_ranks_page

    a = _analysis(paths, args)
    path = out or _default_out(paths, ".html")
    _check_out(path, paths)
    summary = write_ranks_page(a, path, workers=rank_workers(len(paths)))
    return f"report of {len(a.ranks)} ranks written to {summary.path} ({summary.bytes / 1e6:.1f} MB)" + (
        f"\n{summary.note}" if summary.note else "")


def export_ranks(paths: list[Path], args: list[Path], format: str, out: Path | None) -> str:
    from graphmode.reports.ranks_export import export_ranks_parquet, export_ranks_perfetto

    a = _analysis(paths, args)
    if format == "perfetto":
        path = out or _default_out(paths, ".perfetto.json")
        _check_out(path, paths)
        n = export_ranks_perfetto(a, path)
        return f"{n:,} trace events of {len(a.ranks)} ranks written to {path} (one process per rank, aligned); open it at ui.perfetto.dev"
    folder = out or _default_out(paths, "_parquet")
    _check_out(folder, paths)
    files = export_ranks_parquet(a, folder)
    return f"{len(files)} Parquet files of {len(a.ranks)} ranks written to {folder}/ (partitioned by rank)"


def _default_out(paths: list[Path], suffix: str) -> Path:
    """`<stem>.ranks<suffix>` beside the first trace (`train.rank0.gmtrace` -> `train.ranks.html`)."""
    first = Path(paths[0])
    stem = first.name.split(".rank", 1)[0] if ".rank" in first.name else first.stem
    return first.with_name(f"{stem}.ranks{suffix}")


def _check_out(out: Path, paths: list[Path]) -> None:
    if any(out.resolve() == Path(p).resolve() for p in paths):
        raise RankSetError(f"{out} is one of the rank traces: choose another output path (-o)")
