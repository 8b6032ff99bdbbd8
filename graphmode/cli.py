"""The `graphmode` command line. Thin: parses options, calls tracer/analyzers/reports.

Heavy modules (duckdb, cuda, cupti, plotly, numpy) are imported inside the commands so `--help` is
instant. Every command handles graphmode's errors the same way (`handles_errors`): a
`GraphmodeError` prints its one-line message and exits with its code; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional, TypeVar

import typer

from graphmode.tracer.errors import GraphmodeError, StdoutError, no_gpu_message

app = typer.Typer(
    name="graphmode",
    help="Shows what CUDA Graphs buy you: launch overhead saved, build cost, break-even replays.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help: at 80 columns an option's help gets 46 of them (rich's panels left it 24, beside the
    # option's names, its --no- form and its metavar, so a one-sentence help took four lines); and --help
    # imports no rich
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 2) -> NoReturn:
    """The one line of an error: what it names (paths, kernel names) shown printable (reports.names)."""
    from graphmode.reports.names import printable

    typer.secho(f"graphmode: {printable(message)}", err=True, fg="red")
    raise typer.Exit(code)


def _say(message: str, err: bool = False, fg: Optional[str] = None) -> None:
    """Lines for a person (what was written where, a note): the names in them shown printable (reports.names)."""
    from graphmode.reports.names import printable

    typer.secho("\n".join(printable(line) for line in message.split("\n")), err=err, fg=fg)


def handles_errors(command: F) -> F:
    """A command's GraphmodeError becomes its message on stderr and the error's exit code. Its stdout is
    guarded (graphmode.stdout): a failure to write it is one such error, a closed pipe a quiet end."""
    from graphmode.stdout import GuardedStdout, discard

    has_out_option = "out" in inspect.signature(command).parameters

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stdout = sys.stdout
        sys.stdout = GuardedStdout(stdout, has_out_option)
        try:
            try:
                return command(*args, **kwargs)
            finally:
                sys.stdout.flush()  # what is still buffered fails here, not in the interpreter's exit
        except StdoutError as e:
            discard(stdout)
            _fail(str(e), e.exit_code)
        except BrokenPipeError:
            discard(stdout)
            raise typer.Exit(1) from None
        except GraphmodeError as e:
            _fail(str(e), e.exit_code)
        finally:
            sys.stdout = stdout

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        from graphmode import __version__

        typer.echo(f"graphmode {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print graphmode's version and exit.")] = False,
) -> None:
    """Shows what CUDA Graphs buy you: launch overhead saved, build cost, break-even replays."""


def _load(path: Path):  # type: ignore[no-untyped-def]
    """The trace, read-only; what the loader had to leave out is said on stderr (info lists it itself)."""
    from graphmode.tracer.store import load

    trace = load(path)
    for note in trace.notes:
        _say(f"graphmode: note: {note}", err=True, fg="yellow")
    return trace


def _check_output(out: Path, inputs: list[Path], folder: bool = False) -> None:
    from graphmode.tracer.store import check_output_path

    check_output_path(out, inputs, folder=folder)


def _rank_set(paths: list[Path]) -> tuple[Path, list[Path] | None]:
    """(the trace, None) where the arguments name one trace: a file, or a folder or glob that holds just one,
    whose report is then that file's; else (the first, the rank traces) for graphmode.ranks_cli."""
    from graphmode.tracer.rankset import RankSetError, rank_set_paths

    try:
        found = rank_set_paths(paths)
    except RankSetError as e:
        _fail(str(e))
    if found is None:
        return paths[0], None
    return (found[0], None) if len(found) == 1 else (found[0], found)


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
        _say(message)


RANKS_HELP = "A graphmode trace file, or the traces of a multi-process run: a folder, a glob, or several files."


@app.command()
@handles_errors
def info(trace_file: Annotated[Path, typer.Argument(help="A graphmode trace file.")]) -> None:
    """Metadata and table counts of a trace."""
    from graphmode.reports.info import print_info
    from graphmode.tracer.store import load

    with load(trace_file) as trace:
        print_info(trace)


DEFAULT_OUT = Path("graphmode-{workload}.gmtrace")


def _gpu_unavailable() -> str | None:
    """None when cupti-python loads and a GPU is usable, else why not (one line). Makes no CUDA context: `graphmode run`
    holds none while the script's runs use the GPU (what needs one makes it: tracer.cuda_util.init_device)."""
    from graphmode.tracer.cuda_util import NoGpuError, check_device
    from graphmode.tracer.ranks import device_ordinal

    try:
        import cupti  # noqa: F401
    except ImportError as e:
        return f"cupti-python is not importable ({e})"
    try:
        check_device(device_ordinal())  # a rank of a job checks its own GPU
    except NoGpuError as e:
        return str(e).splitlines()[0]
    return None


def _check_detail(detail: str) -> None:
    if detail not in ("graph", "node"):
        _fail(f"--detail must be 'graph' or 'node', not {detail!r}")


def _no_gpu_message(reason: str) -> str:
    return no_gpu_message(reason, "`graphmode bench` and `graphmode run`")


@app.command()
@handles_errors
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
    from graphmode.tracer.errors import CudaError
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
        except KeyboardInterrupt as e:
            from graphmode.tracer.signals import Terminated

            what = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
            _say(f"{what}: what was recorded is in {path} (status 'interrupted')", err=True, fg="yellow")
            raise typer.Exit(143 if isinstance(e, Terminated) else 130)
        except CudaError as e:
            _fail(f"{e}; the trace of what ran is in {path}", 1)
    _say(f"trace written to {path}")
    trace = _load(path)
    if trace.meta.get("status") != "complete":
        _fail(f"run did not complete: {trace.meta.get('status_reason')}; trace in {path}", 1)
    if report:
        from graphmode.analyzers import analyze
        from graphmode.reports.terminal import print_report

        print_report(analyze(trace), detail=False)


def bundled_recording() -> Path:
    return Path(__file__).parent / "data" / "chain-h200.gmtrace"


@app.command()
@handles_errors
def demo(
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Where to write the trace when a GPU is present.")] = None,
) -> None:
    """With a GPU: `bench chain`. Without one: the report of a bundled real H200 recording."""
    reason = _gpu_unavailable()
    if reason is not None:
        rec = bundled_recording()
        trace = _load(rec)
        _say(
            f"No usable GPU here ({reason}).\nShowing a bundled real recording instead: {rec.name}, "
            f"workload '{trace.meta.get('workload')}' recorded on an {trace.meta.get('gpu_name')} "
            f"(driver {trace.meta.get('driver_version')}) at {trace.meta.get('started_at')}.",
            fg="yellow",
        )
        from graphmode.analyzers import analyze
        from graphmode.reports.terminal import print_report

        print_report(analyze(trace), detail=False)
        return
    bench("chain", out=out)


def _report_format(out: Optional[Path], json_output: bool) -> str:
    """'json', 'html' or 'text': what `report` writes, picked from -o's extension as pyinstrument's command line
    picks a renderer (each renderer module's output_file_extension); --json asks for JSON whatever the name."""
    if out is None:
        return "json" if json_output else "text"
    from graphmode.reports import html, json_report

    by_extension = {f".{json_report.output_file_extension}": "json", f".{html.output_file_extension}": "html", ".htm": "html"}
    named = by_extension.get(out.suffix.lower(), "text")
    if json_output and named == "html":
        _fail(f"--json writes JSON, but -o {out} names an HTML page: drop --json for the page, or name a .json file")
    return "json" if json_output else named


@app.command()
@handles_errors
def report(
    trace_files: Annotated[list[Path], typer.Argument(help=RANKS_HELP, metavar="TRACE")],
    json_output: Annotated[
        bool, typer.Option("--json", help="Write the versioned JSON report (reports/report.schema.json) instead of tables.")
    ] = False,
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Write the report to this file: a .html name gets the page "
                                                         "`view` writes, .json the JSON, any other the text.")
    ] = None,
    cost_model: Annotated[
        Optional[Path], typer.Option(help="Cost model for the graph prediction (default: the installed one for the trace's GPU).")
    ] = None,
    predict_lines: Annotated[
        Optional[list[str]], typer.Option(help="Also predict a graph for the work launched from these lines, FILE:FIRST-LAST (needs --launch-sources).")
    ] = None,
    predict_build: Annotated[
        str, typer.Option(help="How predicted graphs are built: 'capture', 'node-api' (cuGraphAdd*Node), or 'auto' "
                               "(as this trace built the same work).")
    ] = "auto",
    full_names: Annotated[
        bool, typer.Option("--full-names", help="Print kernel, graph, file and range names whole (tables shorten them to "
                                                "60 characters, keeping their start and end).")
    ] = False,
    detail: Annotated[
        bool, typer.Option("--detail", help="Every section: per-graph notes, one-time cost parts, per iteration, kernels, "
                                            "source lines, coverage, CPU profile, prediction (default: the summary).")
    ] = False,
) -> None:
    """Launch overhead saved, graph one-time cost and break-even replays of a trace (or of every rank of a run)."""
    fmt = _report_format(out, json_output)
    trace_file, ranks = _rank_set(trace_files)
    if ranks is not None:
        from graphmode.ranks_cli import report_ranks

        _on_ranks(lambda: report_ranks(ranks, trace_files, fmt, out, full_names))
        return
    if out is not None:
        _check_output(out, [trace_file])
    trace = _load(trace_file)
    from graphmode.analyzers import analyze
    from graphmode.analyzers.costmodel import find_model
    from graphmode.analyzers.run import build_run
    from graphmode.tracer.errors import CostModelError

    run = build_run(trace)  # once: the analysis and the page's data read the same run
    try:
        choice = find_model(trace.meta, cost_model) if cost_model is not None else None
        analysis = analyze(run, choice, predict_lines or (), predict_build.replace("-", "_"))
    except (CostModelError, ValueError) as e:
        _fail(str(e))
    if out is None:
        if fmt == "json":
            from graphmode.reports.json_report import render_json

            typer.echo(render_json(analysis), nl=False)
        else:
            from graphmode.reports.terminal import print_report

            print_report(analysis, whole_names=full_names, detail=detail)
        return
    try:
        size = ""
        if fmt == "html":
            from graphmode.views import write_page

            size = f" ({write_page(run, out, analysis).bytes / 1e6:.1f} MB)"
        elif fmt == "json":
            from graphmode.reports.json_report import render_json
            from graphmode.reports.output import write_output

            write_output(out, render_json(analysis))
        else:
            from rich.console import Console

            from graphmode.reports.output import open_output
            from graphmode.reports.terminal import print_report

            with open_output(out) as f:
                print_report(analysis, Console(file=f, width=160, no_color=True, highlight=False), whole_names=full_names,
                             detail=detail)
    except OSError as e:
        _fail(f"cannot write the report to {out}: {e.strerror or e}; choose another --out path")
    _say(f"report written to {out}{size}")


def _range(text: Optional[str], option: str, integer: bool) -> Optional[tuple[Any, Any]]:
    """START:END of --iterations (whole numbers from 0) or --window (finite milliseconds)."""
    if text is None:
        return None
    example = "10:20" if integer else "1.5:20"
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = (int(p) if integer else float(p) for p in parts)
    except ValueError:
        _fail(f"{option} wants START:END ({'whole numbers' if integer else 'milliseconds'}, like {example}), not {text!r}")
    if not integer and not (math.isfinite(lo) and math.isfinite(hi)):
        _fail(f"{option} {text}: START and END must be finite numbers of milliseconds, like {example}")
    counted = "iterations count from 0" if integer else "times are milliseconds from the start of the traced pass"
    if lo < 0 or hi < 0:
        fix = f"{option} 0:{hi:g}" if hi > 0 else f"{option} {example}"
        _fail(f"{option} {text}: {counted}, so START and END cannot be negative; write {fix}")
    if hi <= lo:
        fix = f"{option} {hi:g}:{lo:g}" if hi < lo else f"{option} {lo:g}:{lo + 1:g}"
        _fail(f"{option} {text}: END must be greater than START; write {fix}")
    return (lo, hi)


@app.command()
@handles_errors
def view(
    trace_files: Annotated[list[Path], typer.Argument(help=RANKS_HELP, metavar="TRACE")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="HTML file to write (default: next to the trace).")] = None,
    iterations: Annotated[Optional[str], typer.Option(help="Draw iterations A:B of each mode in the full-run timeline.")] = None,
    window: Annotated[Optional[str], typer.Option(help="Draw START_MS:END_MS (ms from the start of the traced pass).")] = None,
) -> None:
    """Write one self-contained HTML page (opens offline): timelines, graph topology, break-even."""
    its = _range(iterations, "--iterations", True)
    win = _range(window, "--window", False)
    if its is not None and win is not None:
        _fail("give --iterations or --window, not both")
    trace_file, ranks = _rank_set(trace_files)
    if ranks is not None:
        from graphmode.ranks_cli import view_ranks

        if its is not None or win is not None:
            _fail("--iterations and --window apply to one trace; the page of a run's ranks draws each rank's whole run")
        _on_ranks(lambda: view_ranks(ranks, trace_files, out))
        return
    path = out or trace_file.with_suffix(".html")
    _check_output(path, [trace_file])
    trace = _load(trace_file)
    from graphmode.views import write_page

    try:
        summary = write_page(trace, path, iterations=its, window_ms=win)
    except ValueError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"cannot write {path}: {e.strerror or e}; choose another --out path")
    _say(f"report written to {summary.path} ({summary.bytes / 1e6:.1f} MB)")
    if summary.note:
        _say(summary.note)


@app.command()
@handles_errors
def export(
    trace_files: Annotated[list[Path], typer.Argument(help=RANKS_HELP, metavar="TRACE")],
    format: Annotated[str, typer.Option("--format", "-f", help="'perfetto' (Perfetto's protobuf trace) or 'parquet' (one file per table).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (perfetto) or folder (parquet).")] = None,
) -> None:
    """Export a trace for other viewers: a Perfetto trace (ui.perfetto.dev), or Parquet tables."""
    if format not in ("perfetto", "parquet"):
        _fail(f"--format must be 'perfetto' or 'parquet', not {format!r}")
    trace_file, ranks = _rank_set(trace_files)
    if ranks is not None:
        from graphmode.ranks_cli import export_ranks

        _on_ranks(lambda: export_ranks(ranks, trace_files, format, out))
        return
    if format == "perfetto":
        path = out or trace_file.with_suffix(".pftrace")
        _check_output(path, [trace_file])
    else:
        path = out or trace_file.with_name(trace_file.stem + "_parquet")
        _check_output(path, [trace_file], folder=True)
    trace = _load(trace_file)
    try:
        if format == "perfetto":
            from graphmode.reports.perfetto import export_perfetto

            result = export_perfetto(trace, path)
            _say(f"{result.events:,} trace events written to {path} ({result.bytes / 1e6:.1f} MB); open it at ui.perfetto.dev")
            if result.note:
                _say(result.note)
        else:
            from graphmode.reports.parquet import export_parquet

            files = export_parquet(trace, path)
            _say(f"{len(files)} Parquet files written to {path}/")
    except OSError as e:
        _fail(f"cannot write {path}: {e.strerror or e}; choose another --out path")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False})
@handles_errors
def run(
    ctx: typer.Context,
    script: Annotated[Path, typer.Argument(help="The Python script to run (its own arguments follow it).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Trace file (default: <script>.gmtrace).")] = None,
    detail: Annotated[str, typer.Option(help="Detail run: 'graph' (one span per graph launch) or 'node' (every node of every replay).")] = "graph",
    sources: Annotated[bool, typer.Option(help="Detail run: record the Python line that created each graph node.")] = True,
    launch_sources: Annotated[bool, typer.Option(help="Detail run: record the line of every launch, copy and sync.")] = False,
    profile: Annotated[bool, typer.Option(help="Detail run: sample the CPU side with pyinstrument.")] = False,
    runs: Annotated[str, typer.Option(help="'auto': one traced run, more where needed; '1': "
                                            "that alone; '2', 'full': older plans (docs/design.md).")] = "auto",
    html: Annotated[Optional[Path], typer.Option(help="Write the interactive report here (default: <trace>.html).")] = None,
    no_html: Annotated[bool, typer.Option("--no-html", help="Do not write the interactive report.")] = False,
    report: Annotated[bool, typer.Option(help="Print the report when the script ends.")] = True,
) -> None:
    """Trace an unmodified Python script, like `nsys profile python script.py`, then report.

    The script runs once, traced lightly; what that tracing costs (calibrated by `graphmode calibrate`) is taken
    off the figures and shown beside them. More runs only where asked for or needed: a script that built no graph
    runs once more, untraced, for its loop's periods, where its first run took at most 60 s (--runs; why
    and when: docs/design.md, "graphmode run: the runs it makes"). Its arguments, output and exit code pass through; if it raises
    or you press Ctrl-C, the trace of what ran is still written and the report says so.
    """
    from graphmode.tracer.phases import mark

    mark("parent: run command entered")
    _check_detail(detail)
    if runs not in ("auto", "1", "2", "full"):
        _fail(f"--runs must be 'auto', '1', '2' or 'full', not {runs!r}")
    if not script.is_file():
        _fail(f"no such script: {script}")
    reason = _gpu_unavailable()
    if reason is not None:
        _fail(_no_gpu_message(reason), 3)
    mark("parent: GPU checked")
    from graphmode.analyzers.run_plan import DECISIONS, plan_runs
    from graphmode.tracer.ranks import detect_rank, rank_trace_path
    from graphmode.tracer.script import finish_runs, run_script

    # one rank of a job (torchrun, mpirun, srun) writes <stem>.rank<R>.gmtrace
    path = rank_trace_path(out or Path(script.with_suffix(".gmtrace").name))
    plan = plan_runs(detail=detail, launch_sources=launch_sources, profile=profile, sources=sources, runs=runs,
                     ranked=detect_rank() is not None)
    mark("parent: cli ready")
    done = run_script(script, list(ctx.args), path, plan, DECISIONS)  # analyzers decide between runs, tracer runs them
    path = done.path  # in the temporary folder if the disk filled up
    if not path.exists():
        _fail(f"the script's run wrote no trace at {path} (exit status {done.exit_code})", 1)
    code = done.exit_code if done.exit_code >= 0 else 128 - done.exit_code  # killed by signal N: 128 + N, as a shell says
    rank = detect_rank()
    if rank is not None:  # one rank of a job: no report per rank; the job is reported from all its traces
        from graphmode.reports.ranks import rank_run_note

        _say(rank_run_note(path, rank.rank, rank.world_size), err=True)
        finish_runs()
        raise typer.Exit(code)
    _say(f"graphmode: trace written to {path} ({' + '.join(done.runs)} run{'s' if len(done.runs) > 1 else ''})", err=True)
    from graphmode.reports.run_notes import probe_run_note, timing_run_note

    for note in (done.note, timing_run_note(done.timing_skipped), probe_run_note(done.probe_skipped)):
        if note:
            _say(f"graphmode: {note}", err=True, fg="yellow")
    trace = _load(path)
    from graphmode.views import report_and_page

    page = None if no_html else (html or path.with_suffix(".html"))
    report_and_page(trace, report, page)
    mark("parent: reported")
    if page is not None:
        _say(f"graphmode: interactive report in {page}", err=True)
    finish_runs()  # the last run's process, which ended while the report was made
    raise typer.Exit(code)


def _launch_only(out: Optional[Path], procs: int) -> None:
    """`calibrate --launch-only`: the launch probes, added to an existing model (wiring: tracer measures, analyzers fit)."""
    from rich.console import Console

    from graphmode.analyzers.costmodel import CostModelError, find_model, load_model, model_file_name, save_model, user_dir, with_launch_costs
    from graphmode.reports.prediction import print_cost_model
    from graphmode.tracer.cuda_util import init_device
    from graphmode.tracer.launch_probes import available, run_launch_probes
    from graphmode.tracer.runner import machine_meta

    if not available():
        _fail("--launch-only: neither PyTorch nor JAX is installed in this Python: no framework launch cost to measure")
    try:
        meta = machine_meta(init_device())
        base = load_model(out) if out is not None and out.exists() else find_model(meta).model
    except CostModelError as e:
        _fail(f"--launch-only adds to an existing cost model: {e}")
    if base is None:
        _fail("--launch-only adds to an existing cost model and none was found for this GPU: run `graphmode calibrate` first")
    assert base is not None
    # each framework untraced, then traced by `graphmode run`'s one run: what tracing adds to a launch (analyzers.tracer_cost)
    rows, errors = run_launch_probes(procs, progress=lambda what, done, total: _say(f"{what}"), traced=available())
    for error in errors:
        _say(f"warning: {error}")
    if not rows:
        _fail("no launch probe ran: nothing written")
    model = with_launch_costs(base, rows)
    target = out or user_dir() / model_file_name(str(meta.get("gpu_name", "")))
    save_model(model, target)
    print_cost_model(Console(), model)
    _say(f"cost model written to {target}")


@app.command()
@handles_errors
def calibrate(
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Model file to write (default: ~/.local/share/graphmode/costmodel-<gpu>.json).")] = None,
    repeats: Annotated[int, typer.Option(min=2, help="Graphs built per shape.")] = 5,
    replays: Annotated[int, typer.Option(min=5, help="Steady replays timed per graph.")] = 30,
    probes: Annotated[int, typer.Option(min=0, help="Fresh processes that measure the first graph of a process (as many again "
                                                    "for a node-API program's, and bare ones as a control).")] = 6,
    torch_probes: Annotated[int, typer.Option(min=0, help="Fresh processes that time torch.cuda.graph's own work around a capture "
                                                          "(where PyTorch is installed; 0: none).")] = 5,
    trees: Annotated[bool, typer.Option(help="Also time cudagraph trees (torch.compile's reduce-overhead) in as many fresh "
                                             "processes (each compiles: ~30 s).")] = True,
    quick: Annotated[bool, typer.Option(help="Fewer and smaller shapes (a check that calibration runs, not a model to rely on).")] = False,
    from_measurements: Annotated[Optional[Path], typer.Option(help="Fit again from a calibration's *.measurements.json (no GPU).")] = None,
    launch_probes: Annotated[int, typer.Option(min=0, help="Fresh processes per framework (PyTorch, Inductor, XLA) that "
                                                           "time its eager launch cost.")] = 3,
    launch_only: Annotated[bool, typer.Option("--launch-only", help="Only the launch costs, added to the existing "
                                                                    "model (--out, else this GPU's).")] = False,
) -> None:
    """Measure what CUDA graphs cost on this GPU (capture, instantiate, upload, launch, replay per node and
    edge) and write the cost model that predictions from eager traces use."""
    from rich.console import Console

    from graphmode.analyzers.calibration import fit_measurements
    from graphmode.reports.prediction import print_cost_model
    from graphmode.tracer.errors import CostModelError

    if from_measurements is not None:
        target = out or from_measurements.with_name(from_measurements.name.replace(".measurements.json", ".json"))
        try:
            refit = fit_measurements(from_measurements, target)
        except CostModelError as e:
            _fail(str(e))
        print_cost_model(Console(), refit)
        _say(f"cost model written to {refit.path}")
        return
    reason = _gpu_unavailable()
    if reason is not None:
        _fail(f"no usable GPU: {reason}. `graphmode calibrate` measures the GPU it runs on; "
              "reports use the bundled H200 model where no model of their GPU exists", 3)
    if launch_only:
        _launch_only(out, launch_probes)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from graphmode.analyzers.calibration import CAPTURE_RULES
    from graphmode.analyzers.costmodel import model_file_name, user_dir
    from graphmode.tracer.calibrate import measure_calibration, write_measurements
    from graphmode.tracer.cuda_util import CudaError

    # Redrawn between graphs only, with no refresh thread: nothing wakes up inside the timed loops.
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("starting", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)
            bar.refresh()

        failure: Exception | None = None
        try:
            # tracer measures (with graphmode's capture rules handed in), analyzers fit, the model is written
            raw = measure_calibration(CAPTURE_RULES, repeats=repeats, replays=replays, probes=probes, quick=quick,
                                      progress=progress, torch_probes=torch_probes, trees=trees,
                                      launch_probes=launch_probes)
            path = out if out is not None else user_dir() / model_file_name(str(raw["machine"]["gpu_name"]))
            model = fit_measurements(write_measurements(raw, path), path)
        except KeyboardInterrupt:
            _fail("interrupted: no cost model written", 130)
        except (CudaError, CostModelError, OSError) as e:
            failure = e  # reported once the progress bar is gone
    if isinstance(failure, CudaError):
        _fail(f"calibration failed: {failure}", 1)
    if isinstance(failure, CostModelError):
        _fail(f"calibration ran but the model could not be fitted: {failure}", 1)
    if isinstance(failure, OSError):
        _fail(f"cannot write the cost model to {out}: {failure.strerror or failure}; choose another --out path")
    print_cost_model(Console(), model)
    _say(f"cost model written to {model.path}")
