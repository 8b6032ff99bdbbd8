"""The `graphmode` command line. Thin: parses options, calls tracer/analyzers/reports.

Heavy modules (duckdb, cuda, cupti, plotly) are imported inside the commands so `--help` is instant.
"""

from __future__ import annotations

from collections.abc import Callable
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
    from graphmode.tracer.store import TraceError, load

    try:
        return load(path)
    except TraceError as e:
        _fail(str(e))


def _rank_set(paths: list[Path]) -> list[Path] | None:
    """The rank traces named by a folder, a glob or several files (graphmode.ranks_cli); None for one trace file."""
    from graphmode.tracer.rankset import RankSetError, rank_set_paths

    try:
        return rank_set_paths(paths)
    except RankSetError as e:
        _fail(str(e))
    return None


def _on_ranks(call: Callable[[], Optional[str]]) -> None:
    """Runs a rank-set command; a RankSetError (or any TraceError) becomes one line and exit code 2."""
    from graphmode.tracer.store import TraceError

    message: Optional[str] = None
    try:
        message = call()
    except TraceError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"cannot write the output: {e.strerror or e}; choose another --out path")
    if message:
        typer.echo(message)


RANKS_HELP = "A graphmode trace file, or the traces of a multi-process run: a folder, a glob, or several files."


@app.command()
def info(trace_file: Annotated[Path, typer.Argument(help="A graphmode trace file.")]) -> None:
    """Metadata and table counts of a trace."""
    from graphmode.reports.info import print_info

    trace = _load(trace_file)
    print_info(trace)


DEFAULT_OUT = Path("graphmode-{workload}.gmtrace")


def _gpu_unavailable() -> str | None:
    """None when cupti-python loads and a GPU is usable, else why not (one line)."""
    from graphmode.tracer.cuda_util import NoGpuError, init_device
    from graphmode.tracer.ranks import device_ordinal

    try:
        import cupti  # noqa: F401
    except ImportError as e:
        return f"cupti-python is not importable ({e})"
    try:
        init_device(device_ordinal())  # a rank of a job checks its own GPU, and opens no context on GPU 0
    except NoGpuError as e:
        return str(e).splitlines()[0]
    return None


def _check_detail(detail: str) -> None:
    if detail not in ("graph", "node"):
        _fail(f"--detail must be 'graph' or 'node', not {detail!r}")


def _no_gpu_message(reason: str) -> str:
    return (
        f"no usable GPU: {reason}. `graphmode bench` needs an NVIDIA GPU with CUDA and CUPTI; "
        "`graphmode demo` shows the report of a bundled H200 recording instead"
    )


@app.command()
def bench(
    workload: Annotated[str, typer.Argument(help="Built-in workload: 'chain' (stream capture) or 'dag' (explicit node API).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Trace file to write.")] = None,
    iterations: Annotated[int, typer.Option("--iterations", "-n", min=1, help="Eager iterations and graph replays per pass.")] = 1000,
    warmup: Annotated[int, typer.Option(min=0, help="Warm-up iterations before measuring.")] = 10,
    detail: Annotated[str, typer.Option(help="Traced pass detail: 'graph' (one span per graph launch) or 'node' (every node).")] = "graph",
    kernels: Annotated[Optional[int], typer.Option(help="chain: kernels per step (default 20).")] = None,
    n: Annotated[Optional[int], typer.Option("--elements", help="Elements per buffer (chain 500000, dag 262144).")] = None,
    width: Annotated[Optional[int], typer.Option(help="dag: parallel branches (default 4).")] = None,
    depth: Annotated[Optional[int], typer.Option(help="dag: kernels per branch (default 3).")] = None,
    report: Annotated[bool, typer.Option(help="Print the report when done.")] = True,
) -> None:
    """Run a built-in workload eagerly and as a CUDA graph on the GPU, trace it, and report."""
    from graphmode.tracer.cuda_util import CudaError
    from graphmode.tracer.workloads import make_workload

    _check_detail(detail)
    params = {k: v for k, v in {"kernels": kernels, "n": n, "width": width, "depth": depth}.items() if v is not None}
    try:
        wl = make_workload(workload, **params)
    except (ValueError, TypeError) as e:
        _fail(str(e))
    reason = _gpu_unavailable()
    if reason is not None:
        _fail(_no_gpu_message(reason), 3)
    path = out or Path(str(DEFAULT_OUT).format(workload=workload))
    from graphmode.tracer.runner import record

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    # Redrawn between phases only, with no refresh thread: nothing wakes up inside the timed loops.
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("starting", total=None)

        def progress(phase: str, done: int, total: int) -> None:
            bar.update(task, description=phase, completed=done, total=total)
            bar.refresh()

        try:
            record(wl, path, iterations=iterations, warmup=warmup, detail=detail, progress=progress)
        except KeyboardInterrupt:
            typer.secho(f"interrupted: what was recorded is in {path} (status 'interrupted')", err=True, fg="yellow")
            raise typer.Exit(130)
        except CudaError as e:
            _fail(f"{e}; the trace of what ran is in {path}", 1)
    typer.echo(f"trace written to {path}")
    trace = _load(path)
    if trace.meta.get("status") != "complete":
        _fail(f"run did not complete: {trace.meta.get('status_reason')}; trace in {path}", 1)
    if report:
        from graphmode.reports.terminal import print_report

        print_report(trace)


def bundled_recording() -> Path:
    return Path(__file__).parent / "data" / "chain-h200.gmtrace"


@app.command()
def demo(
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Where to write the trace when a GPU is present.")] = None,
) -> None:
    """With a GPU: `bench chain`. Without one: the report of a bundled real H200 recording."""
    reason = _gpu_unavailable()
    if reason is not None:
        rec = bundled_recording()
        trace = _load(rec)
        typer.secho(
            f"No usable GPU here ({reason}).\nShowing a bundled real recording instead: {rec.name}, "
            f"workload '{trace.meta.get('workload')}' recorded on an {trace.meta.get('gpu_name')} "
            f"(driver {trace.meta.get('driver_version')}) at {trace.meta.get('started_at')}.",
            fg="yellow",
        )
        from graphmode.reports.terminal import print_report

        print_report(trace)
        return
    bench("chain", out=out)


@app.command()
def report(
    trace_files: Annotated[list[Path], typer.Argument(help=RANKS_HELP, metavar="TRACE")],
    json_output: Annotated[
        bool, typer.Option("--json", help="Write the versioned JSON report (reports/report.schema.json) instead of tables.")
    ] = False,
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Write the report to this file; a .json name implies --json.")
    ] = None,
) -> None:
    """Launch overhead saved, graph one-time cost and break-even replays of a trace (or of every rank of a run)."""
    from graphmode.analyzers import analyze

    as_json = json_output or (out is not None and out.suffix.lower() == ".json")
    ranks = _rank_set(trace_files)
    if ranks is not None:
        from graphmode.ranks_cli import report_ranks

        _on_ranks(lambda: report_ranks(ranks, trace_files, as_json, out))
        return
    trace_file = trace_files[0]
    trace = _load(trace_file)
    analysis = analyze(trace)
    try:
        if as_json:
            from graphmode.reports.json_report import render_json

            text = render_json(analysis)
            if out is None:
                typer.echo(text, nl=False)
            else:
                out.write_text(text)
        else:
            from rich.console import Console

            from graphmode.reports.terminal import print_report

            if out is None:
                print_report(analysis)
            else:
                with open(out, "w") as f:
                    print_report(analysis, Console(file=f, width=160, no_color=True, highlight=False))
    except OSError as e:
        _fail(f"cannot write the report to {out}: {e.strerror or e}; choose another --out path")
    if out is not None:
        typer.echo(f"report written to {out}")


def _range(text: Optional[str], option: str, cast: type) -> Optional[tuple]:  # type: ignore[type-arg]
    if text is None:
        return None
    try:
        lo, hi = (cast(p) for p in text.split(":"))
    except ValueError:
        _fail(f"{option} wants START:END (like 10:20), not {text!r}")
    if hi <= lo:
        _fail(f"{option} {text}: END must be greater than START")
    return (lo, hi)


@app.command()
def view(
    trace_files: Annotated[list[Path], typer.Argument(help=RANKS_HELP, metavar="TRACE")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="HTML file to write (default: next to the trace).")] = None,
    iterations: Annotated[Optional[str], typer.Option(help="Draw iterations A:B of each mode in the full-run timeline.")] = None,
    window: Annotated[Optional[str], typer.Option(help="Draw START_MS:END_MS (ms from the start of the traced pass).")] = None,
) -> None:
    """Write one self-contained HTML page (opens offline): timelines, graph topology, break-even."""
    from graphmode.reports.html import write_html

    its = _range(iterations, "--iterations", int)
    win = _range(window, "--window", float)
    if its is not None and win is not None:
        _fail("give --iterations or --window, not both")
    ranks = _rank_set(trace_files)
    if ranks is not None:
        from graphmode.ranks_cli import view_ranks

        if its is not None or win is not None:
            _fail("--iterations and --window apply to one trace; the page of a run's ranks draws each rank's whole run")
        _on_ranks(lambda: view_ranks(ranks, trace_files, out))
        return
    trace_file = trace_files[0]
    trace = _load(trace_file)
    path = out or trace_file.with_suffix(".html")
    try:
        summary = write_html(trace, path, iterations=its, window_ms=win)
    except ValueError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"cannot write {path}: {e.strerror or e}; choose another --out path")
    typer.echo(f"report written to {summary.path} ({summary.bytes / 1e6:.1f} MB)")
    if summary.note:
        typer.echo(summary.note)


@app.command()
def export(
    trace_files: Annotated[list[Path], typer.Argument(help=RANKS_HELP, metavar="TRACE")],
    format: Annotated[str, typer.Option("--format", "-f", help="'perfetto' (Chrome trace JSON) or 'parquet' (one file per table).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (perfetto) or folder (parquet).")] = None,
) -> None:
    """Export a trace for other viewers: Perfetto/Chrome trace JSON, or Parquet tables."""
    if format not in ("perfetto", "parquet"):
        _fail(f"--format must be 'perfetto' or 'parquet', not {format!r}")
    ranks = _rank_set(trace_files)
    if ranks is not None:
        from graphmode.ranks_cli import export_ranks

        _on_ranks(lambda: export_ranks(ranks, trace_files, format, out))
        return
    trace_file = trace_files[0]
    trace = _load(trace_file)
    try:
        if format == "perfetto":
            from graphmode.reports.perfetto import export_perfetto

            path = out or trace_file.with_suffix(".perfetto.json")
            n = export_perfetto(trace, path)
            typer.echo(f"{n:,} trace events written to {path}; open it at ui.perfetto.dev")
        else:
            from graphmode.reports.parquet import export_parquet

            path = out or trace_file.with_name(trace_file.stem + "_parquet")
            files = export_parquet(trace, path)
            typer.echo(f"{len(files)} Parquet files written to {path}/")
    except OSError as e:
        _fail(f"cannot write {out or 'the export'}: {e.strerror or e}; choose another --out path")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False})
def run(
    ctx: typer.Context,
    script: Annotated[Path, typer.Argument(help="The Python script to run (its own arguments follow it).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Trace file (default: <script>.gmtrace).")] = None,
    detail: Annotated[str, typer.Option(help="'graph': one span per graph launch; 'node': every node of every replay.")] = "graph",
    launch_sources: Annotated[bool, typer.Option(help="Record the Python line of every launch, copy and sync (costs tens of us per call).")] = False,
    profile: Annotated[bool, typer.Option(help="Sample the CPU side with pyinstrument.")] = True,
    html: Annotated[Optional[Path], typer.Option(help="Write the interactive report here (default: <trace>.html).")] = None,
    report: Annotated[bool, typer.Option(help="Print the report when the script ends.")] = True,
) -> None:
    """Trace an unmodified Python script, like `nsys profile python script.py`, then report.

    The script's arguments, output and exit code pass through. If it raises or you press Ctrl-C,
    the trace of what ran is still written and the report says the run was cut short.
    """
    _check_detail(detail)
    if not script.is_file():
        _fail(f"no such script: {script}")
    reason = _gpu_unavailable()
    if reason is not None:
        _fail(_no_gpu_message(reason), 3)
    from graphmode.tracer.ranks import detect_rank
    from graphmode.tracer.script import run_script

    path = out or Path(script.with_suffix(".gmtrace").name)
    code, path = run_script(script, list(ctx.args), path, detail=detail, launch_sources=launch_sources, profile=profile)
    rank = detect_rank()
    if rank is not None:  # one rank of a job: no report per rank; the job is reported from all its traces
        from graphmode.reports.ranks import rank_run_note

        typer.secho(rank_run_note(path, rank.rank, rank.world_size), err=True)
        raise typer.Exit(code)
    typer.secho(f"graphmode: trace written to {path}", err=True)
    trace = _load(path)
    if report:
        from graphmode.reports.terminal import print_report

        print_report(trace)
    from graphmode.reports.html import write_html

    page = html or path.with_suffix(".html")
    write_html(trace, page)
    typer.secho(f"graphmode: interactive report in {page}", err=True)
    raise typer.Exit(code)
