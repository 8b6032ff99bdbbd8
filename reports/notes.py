"""The words of the analyzers' notes: one template per note kind (analyzers.notes.Note), and `word(note)`.

Every report (terminal, page, JSON, notebook, rank reports) words a note here, so they say the same
sentence and a sentence is changed in one place. A template is a format string over the note's values,
with conversions of our own: `!h` a duration in ns as a table reads it (reports.units.human_ns), `!t` as a
sentence reads it (reports.units.short_ns), `!j` a tuple joined with ', ', `!s` a count's plural 's' ('' for 1); or a function of the note for a
sentence whose parts depend on its values. tests/test_notes.py checks that every kind an analyzer
emits has a template here.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from typing import Any

from graphmode.analyzers.notes import Note
from graphmode.reports.names import short_name
from graphmode.reports.pitfall_words import EVIDENCE
from graphmode.reports.units import human_ns, short_ns


class _Formatter(string.Formatter):
    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "h":
            return human_ns(value)
        if conversion == "t":
            return short_ns(value)
        if conversion == "j":
            return ", ".join(map(str, value))
        if conversion == "s":
            return "" if value == 1 else "s"
        return super().convert_field(value, conversion)


_FORMAT = _Formatter()


def fill(template: str, values: Mapping[str, Any]) -> str:
    """A template's sentence for these values (the conversions above)."""
    return _FORMAT.vformat(template, (), dict(values))


def _num(n: Note, key: str) -> float:
    value = n[key]
    assert isinstance(value, (int, float)), (n.kind, key, value)
    return float(value)


def _shape(n: Note) -> str:
    """A loop step's input shape, where its iterations change shape (analyzers.repetition.split_by_shape)."""
    if not n.get("shapes"):
        return ""
    return (f"; input shape {n['shape']} of {n['shapes']}: the step's kernels changed launch dimensions or GPU time there "
            "(or, with other dimensions, were others, as a library picks kernels by size), and each shape would be its own "
            "graph")


def _kernel(name: object) -> str:
    """A kernel's name as a sentence reads it (reports.names.short_name)."""
    return short_name(str(name), 80)


def _items(values: object) -> tuple[object, ...]:
    return values if isinstance(values, tuple) else ()


def _joined(values: object) -> str:
    return ", ".join(map(str, values)) if isinstance(values, tuple) else str(values)


def _run_incomplete(n: Note) -> str:
    reason = f": {n['reason']}" if n["reason"] else ""
    return f"the run did not complete (status '{n['status']}'{reason}): figures cover only what was recorded"


def _tracer_errors(n: Note) -> str:
    errors = n["errors"]
    assert isinstance(errors, tuple)
    more = int(_num(n, "count")) - len(errors)
    shown = "; ".join(map(str, errors)) + (f"; and {more} more" if more > 0 else "")
    return f"the tracer hit {n['count']} error(s) while recording, so some data is missing: {shown}"


def _tracer_slowed(n: Note) -> str:
    ratio, traced, untraced = _num(n, "ratio"), _num(n, "traced_ns"), _num(n, "untraced_ns")
    return (f"the tracer slowed {n['mode']} iterations by {100 * (ratio - 1):.0f}% (median {traced / 1e3:.1f} us traced "
            f"vs {untraced / 1e3:.1f} us untraced): CPU and GPU figures come from the slowed pass")


def _step_memory_unknown(n: Note) -> str:
    why = {"not_torch": "graphmode reads PyTorch's allocator only, and this program's steps did not allocate through it",
           "not_recorded": ("the traced run did not record PyTorch's allocator history (a trace of an earlier graphmode, or "
                            "a run other than the one traced run): run `graphmode run` again to have it"),
           "outside_history": ("the step's recurrences fell outside the allocator history the run kept (it keeps the "
                               "latest actions)")}.get(str(n["reason"]), str(n["reason"]))
    return f"the memory a graph of this step would hold is not known: {why}"


def _break_even_unknown(n: Note) -> str:
    return f"break-even against {n['baseline']}: {word(Note(str(n['reason']), n.values))}"


def break_even_reason(reason: Note | None) -> str:
    """Why a break-even is not a number (BreakEven.reason), or '' when it is."""
    return "" if reason is None else word(reason)


def _replay_not_faster(n: Note) -> str:
    replay, eager = _num(n, "replay_ns"), _num(n, "eager_ns")
    return (f"a graph replay (median {replay / 1e3:.1f} us) is not faster than a {n['baseline']} iteration "
            f"(median {eager / 1e3:.1f} us), so the one-time cost is never paid back")


def _graph_replay_not_faster(n: Note) -> str:
    replay, eager = _num(n, "replay_ns"), _num(n, "eager_ns")
    return (f"a replay ({replay / 1e3:,.1f} us) is not faster than the eager work it replaces "
            f"({eager / 1e3:,.1f} us), so the one-time cost is never paid back")


def _build_mismatch(n: Note) -> str:
    mine = int(_num(n, "measured_calls"))
    tail = "the extra ones are not attributed" if mine else "their one-time costs come from the detail run"
    return (f"the measuring run made {mine} {n['event']} call{'s' if mine != 1 else ''} and the detail run "
            f"{n['detail_calls']}: the runs did not build the same graphs, so {tail}")


def _unknown_executables(n: Note) -> str:
    ids = n["graph_ids"]
    assert isinstance(ids, tuple)
    return (f"graph executable id{'s' if n['count'] != 1 else ''} {', '.join(map(str, ids))} of the measuring "
            "run match no graph of the detail run: reported as graphs of unknown origin")


def _unstamped(n: Note) -> str:
    graphs, what = n["graph_ids"], n["what"]
    assert isinstance(graphs, tuple) and isinstance(what, tuple)
    which = "; ".join(f"graph {g} ({w})" for g, w in zip(graphs, what))
    return ("CPU-bound iterations launched from another thread than the main one, or from code outside the script, "
            f"keep the measuring run's period (the timing run stamps the script's lines on the main thread only): {which}")


def _eager_kernel_sequence(n: Note) -> str:
    units = _num(n, "units_per_replay")
    return (fill("its sequence of {kernels} kernel{kernels!s} run eagerly", n.values)
            + (f" (a replay runs it {units:.0f} times)" if units > 1 else ""))


def _first_warmup_left_out(n: Note) -> str:
    return (f"the first warm-up iteration ({_num(n, 'first_call_ns') / 1e6:.3g} ms) is left out: a first call pays "
            "one-time set-up (libraries' handles, communicators, autotuning) that later calls do not")


def _timed_untraced(n: Note) -> str:
    work, traced, bound = _num(n, "work_ns"), _num(n, "traced_work_ns"), _num(n, "slowdown_bound")
    name = "eager iterations" if n["mode"] == "eager" else "replays"
    stamps = n.get("stamps_ns")
    return (f"its {name} are CPU-bound and timed by the timing run, without CUPTI: {short_ns(work)} each "
            f"(median), where the traced measuring run read {short_ns(traced)} ({traced / work:.2f}x)"
            + (f"; the timing run's own line stamps took about {short_ns(float(stamps))} of each "
               f"({100 * float(stamps) / work:.1f}%, included)" if isinstance(stamps, (int, float)) else "")
            + f"; the timing run itself has read such loops up to {1 + bound:.1f}x slower than "
              "the program untraced (docs/benchmarks.md), which the break-even interval allows for")


def _one_time_timed_untraced(n: Note) -> str:
    windowed, measured, bound = _num(n, "windowed_ns"), _num(n, "measured_ns"), _num(n, "slowdown_bound")
    ratio = f" ({measured / windowed:.2f}x)" if windowed > 0 else ""
    statement = ""
    starts, ends, lines = n["statement_starts"], n["statement_ends"], n["capture_lines"]
    assert isinstance(starts, tuple) and isinstance(ends, tuple) and isinstance(lines, tuple)
    call = n.get("statement_ns")
    if isinstance(call, (int, float)):
        many = _num(n, "statement_count") > 1
        where = ", ".join(f"{a} to {b}" for a, b in zip(starts, ends))
        statement = (f"; the statement{'s' if many else ''} around {'them' if many else 'it'} "
                     f"(lines {where}), timed by the same run, add {short_ns(float(call))} outside the "
                     "window (Dynamo's guards, PyTorch's dispatch and bookkeeping around a recording, less what the "
                     "statement takes when it replays)")
    what = ("PyTorch's capture windows (recording or torch.cuda.graph block) as the timing run, without CUPTI, "
            "timed them" if not lines else
            f"its capture through its instantiation (lines {lines[0]} to {lines[1]}) as the timing run, without CUPTI, timed it")
    return (f"its one-time cost takes {what}: {short_ns(windowed)}, where the measuring run read {short_ns(measured)}"
            f"{ratio}{statement}; the parts listed are the measuring run's; the timing run itself has read loops up to "
            f"{1 + bound:.1f}x slow, which the break-even interval's lower end allows for")


def _tracer_cost_taken_off(n: Note) -> str:
    work, traced, bound = _num(n, "work_ns"), _num(n, "traced_work_ns"), _num(n, "slowdown_bound")
    name = "eager iterations" if n["mode"] == "eager" else "replays"
    return (f"its {name} are CPU-bound; the traced run read {short_ns(traced)} each (median), and the calibrated cost "
            f"of tracing each kernel they launch comes off: {short_ns(work)} ({short_ns(traced - work)} taken off; "
            "graphmode calibrate --launch-only measured it untraced and traced); on the third-party programs the "
            f"corrected figure was still up to {100 * bound:.0f}% off their own untraced clocks, either way "
            "(docs/benchmarks.md), which the break-even interval allows for")


def _one_time_tracer_cost_taken_off(n: Note) -> str:
    measured, off, bound = _num(n, "measured_ns"), _num(n, "taken_off_ns"), _num(n, "slowdown_bound")
    return (f"its one-time cost comes from the one traced run, which read {short_ns(measured)}; the calibrated cost of "
            f"tracing a capture (per graph and per captured kernel) comes off: {short_ns(off)} taken off; the corrected "
            f"figure may still be up to {1 + bound:.1f}x too high (docs/benchmarks.md), which the break-even "
            "interval's lower end allows for" + (
                f", or {1 + _num(n, 'low_bound'):.1f}x too low (another process of the program), which its upper end "
                "allows for" if n.get("low_bound") else ""))


def _one_time_capture_untraced(n: Note) -> str:
    measured, bound = _num(n, "measured_ns"), _num(n, "slowdown_bound")
    build = _num(n, "build_ns") if n.get("build_ns") is not None else None
    inst = _num(n, "instantiate_ns") if n.get("instantiate_ns") is not None else None
    parts = ", ".join(x for x in (f"the capture {short_ns(build)}" if build is not None else "",
                                  f"its instantiation {short_ns(inst)}" if inst is not None else "") if x)
    when = ("CUPTI stayed detached from the end of the loop before it, through the program's warm-up (the linger, "
            "GRAPHMODE_WINDOW_LINGER_MS=0 turns it off), so no detach came just before it" if n.get("adopted") else
            "on the H200 a capture made just after graphmode's detach read about 1.35x one made after a few more "
            "steps of the program: benchmarks/notes/s31-s34")
    what = "sample memory, attach CUPTI" if n.get("adopted") else "sample memory, detach and attach CUPTI"
    return (f"the one traced run made this capture with CUPTI detached: its one-time cost "
            f"of {short_ns(measured)}{f' ({parts})' if parts else ''} is the program's capture, end of capture and "
            f"instantiation untraced, and its first replay traced ({when}); the "
            f"time graphmode took inside the capture block to {what} and run an empty "
            "graph of its own is left out" + (
                f" ({short_ns(_num(n, 'tracer_ns'))}, which a clock of your own around the capture includes)"
                if n.get("tracer_ns") else "") + ". The graph's nodes are its "
            "first replay's kernels (its edges were not recorded). Other processes of the program may read up to "
            f"{1 + bound:.1f}x lower (docs/benchmarks.md), which the break-even interval's lower end allows for" + (
                f", or {1 + _num(n, 'low_bound'):.1f}x higher, which its upper end allows for" if n.get("low_bound") else ""))


def _one_time_before_trace(n: Note) -> str:
    return ("it was built before tracing started (a region traced after the program built its graphs): its one-time "
            "cost is not in this trace, and its first replay here is not its first (what that replay took beyond a "
            "steady one was the tracer attaching, not the graph); trace from before the capture to see it "
            "(graphmode run, or graphmode.trace() around the capture)")


def _replays_from_node_records(n: Note) -> str:
    return ("the graph replays were recorded node by node (a region's trace, or the one run after an untraced window: "
            "graph-level records crashed the replays of graphs built before them), which made replays up to "
            f"{100 * _num(n, 'slowdown_bound'):.0f}% slower than untraced on the benchmark set (about 0.2-0.5 us a "
            "node where kernels are short); the replay figures may be that much high")


def _eager_window_bound(n: Note) -> str:
    return ("its eager time was read in an untraced window of this process; other processes of the same program may run "
            f"the same loop up to {1 + _num(n, 'slowdown_bound'):.2f}x slower or faster (measured, docs/benchmarks.md), "
            "which the break-even interval allows for either way")


def _one_time_traced(n: Note) -> str:
    return ("its one-time cost comes from a traced run, where CUPTI slows a capture (the programs' own timers read capture "
            "blocks up to 1.4x slower in the measuring run than untraced; the one traced run's one-time costs read up to "
            "4.4x the untraced processes': docs/benchmarks.md), which the break-even interval's lower end allows for (a "
            f"one-time cost up to {1 + _num(n, 'slowdown_bound'):.2g}x too high)")


def _framework_share(n: Note) -> str:
    framework, measured = _num(n, "framework_ns"), _num(n, "measured_ns")
    return (f"{100 * framework / measured:.0f}% of its one-time cost ({short_ns(framework)} of "
            f"{short_ns(measured)}, as the measuring run read it) is PyTorch's own work around the CUDA calls (its "
            "cudagraph-tree recording or torch.cuda.graph block): every further capture (a new input shape, a "
            "re-recording) adds its own")


def _probe_cost(n: Note) -> str:
    if n["measured"] == "torch_capture_work":
        what = (f"torch.cuda.graph's own work around the process's {'first' if n['first'] else 'later'} capture "
                f"({short_ns(_num(n, 'torch_work_ns'))}) was")
    else:
        what = "the first graph's extra was"
    took = n.get("probe_ns")
    cost = f" and took {short_ns(float(took))}" if isinstance(took, (int, float)) else ""
    where = {"probe": "the probe run (the script once more, untraced)", "timing": "the timing run",
             "single": "the one traced run, its tracing stopped"}.get(str(n["run"]), "an untraced run")
    cold = ""
    if isinstance(n.get("waited_ns"), (int, float)):
        faults = int(_num(n, "major_faults"))
        cold = (f"; its first capture waited {short_ns(_num(n, 'waited_ns'))} without working, after {faults} "
                f"read{'s' if faults != 1 else ''} from disk (major page faults), as a process does whose libraries are "
                f"not yet in memory (a machine's first process), so the figure is the work alone, and the interval "
                f"reaches the {short_ns(_num(n, 'as_measured_ns'))} as measured")
    return (f"{what} measured in this program's process: graphmode's probe ran after the script ended, "
            f"in {where}{cost}, outside every timing{cold}")


def _eager_period_scaled(n: Note) -> str:
    scale = _num(n, "scale")
    if n["run"] == "two_runs":
        return (f"the traced run's iterations give the eager period's spread, scaled by {scale:.2f} to the two runs' mean "
                "(above)")
    if n["run"] == "window":
        return (f"the eager period is the level of the one traced run's untraced windows: the traced iterations scaled by "
                f"{scale:.2f} to it")
    run = {"measure": "measuring", "single": "one traced", "corrected": "one traced"}.get(str(n["run"]), str(n["run"]))
    whose = "per-graph answer's" if n["per_graph"] else "loop's, as its per-iteration table reads it"
    return (f"the eager period is the {whose} (from the {run} run): the traced run's iterations "
            f"scaled by {scale:.2f} to its median")


def _eager_period_corrected(n: Note) -> str:
    return (f"the eager period is the one traced run's reading ({human_ns(_num(n, 'traced_ns'))} an iteration, median) less what "
            f"tracing added to its {n['kernels']} launches ({human_ns(_num(n, 'taken_off_ns'))}, each at its launcher's cost as "
            "`graphmode calibrate` measured it)")


def _breakers_first_iteration_only(n: Note) -> str:
    calls = f"{n['calls']} call{'s' if n['calls'] != 1 else ''}"
    return (f"{_joined(n['apis'])} ran only in the region's first iteration ({calls}; {n['iterations']} iterations): a "
            "first call's one-off (a library's first-call setup: a workspace, autotuning, initialization), which a capture "
            "made after warm-up iterations (as PyTorch's documentation for torch.cuda.graph says) never sees: not a capture "
            "breaker")


def _prediction_eager_timed(n: Note) -> str:
    bound = _num(n, "slowdown_bound")
    whose = ("two processes' mean (above)" if n.get("two_runs") else
             "the untraced windows' of the one traced run, one stretch of the loop" if n.get("window") else
             "the timing run's, one process of the program untraced")
    return (f"the eager period is {whose}; another process may run the loop up to {bound:.0%} faster or slower "
            "(measured): the break-even interval allows an eager period that much shorter or longer")


def _node_api_build(n: Note) -> str:
    return ("priced as built with the explicit node API (one cuGraphAdd*Node per node from Python, as `graphmode calibrate` "
            "timed it)" + (", as the graph this trace built for the same work was" if n["as_traced"] else "")
            + f": {short_ns(_num(n, 'build_ns'))} to build, where a stream capture of the same work would take "
              f"{short_ns(_num(n, 'capture_ns'))}")


def _torch_capture_ratio(n: Note) -> str:
    issue, ratio = _num(n, "issue_ns"), _num(n, "ratio")
    dispatch = _num(n, "dispatch_ns") if "dispatch_ns" in n.values else None
    why = ("what issuing a step in capture mode costs PyTorch over issuing it eagerly, as `graphmode calibrate`'s torch "
           "probe measured")
    if dispatch is None or dispatch >= issue:
        return f"the capture is the eager issue time ({short_ns(issue)}) times {ratio:.2f}: {why}"
    return (f"the capture is the eager issue time ({short_ns(issue)}) plus {ratio - 1:.2f} times its kernels' dispatch "
            f"({short_ns(dispatch)}, priced by their launchers; the rest is the step's own Python): {why}")


def _torch_capture_segments(n: Note) -> str:
    issue, segments, malloc = _num(n, "issue_ns"), int(_num(n, "segments")), _num(n, "malloc_ns")
    return (f"the capture is the eager issue time ({short_ns(issue)}) plus the cudaMalloc of the {segments} "
            f"segment{'s' if segments != 1 else ''} its graph's new private pool would allocate for the step "
            f"({short_ns(malloc)} each, the median of this run's {int(_num(n, 'mallocs'))} cudaMalloc calls): a "
            "capture allocates its pool inside it, and issues the step's calls at their eager cost")


def _prediction_eager_one_run(n: Note) -> str:
    bound = _num(n, "slowdown_bound")
    if n.values.get("either_way") and n.values.get("timing_left_out"):
        return (f"the eager period is the one traced run's, with the tracer's calibrated cost taken off (the timing run's "
                f"reading was left out, above): it may still be up to {bound:.0%} from the program's untraced either way "
                "(measured): the break-even interval allows that")
    if n.values.get("either_way"):
        return (f"the eager period is the one traced run's, with the tracer's calibrated cost taken off: it may still be "
                f"up to {bound:.0%} from the program's untraced either way (measured): the break-even interval allows "
                "that; a timing run times the loop untraced (Python 3.12+: `graphmode run` makes one after a first run of at "
                "most 60 s, `--runs full` always)")
    return (f"the eager period is the one traced run's as traced (its launcher not calibrated): up to {bound:.0%} too "
            "long (measured): the break-even interval's upper end allows an eager period that much shorter")


def _first_graph_share(n: Note) -> str:
    extra, one = _num(n, "extra_ns"), _num(n, "one_time_ns")
    share = f"{short_ns(extra)} of the predicted one-time cost ({100 * extra / one:.0f}%)"
    if n["in_this_process"]:
        return (f"{share} is what the process's first graph costs over later ones, as measured so; a program that creates "
                "a stream just before its first graph pays less (H200: ~250 us less, docs/metrics.md)")
    return (f"{share} is what the process's {'first' if n['first'] else 'second'} graph costs over later ones, which depends "
            "on what the process set up before it and on the graph, not only on the GPU (H200: 150-880 us for a first "
            "graph, docs/metrics.md); the interval carries only the calibration probes' spread of it")


def _spread_texts(n: Note, prefix: str, what: str) -> str:
    """'median [p10, p90] for a process's first <what>, ... for a later one' of a model's 'first' and 'later' spreads."""
    out = []
    for key, label in (("first", f"a process's first {what}"), ("later", "a later one")):
        s = n[f"{prefix}_{key}"]
        assert isinstance(s, tuple)
        if s:
            out.append(f"{short_ns(float(s[0]))} [{short_ns(float(s[1]))}, {short_ns(float(s[2]))}] for {label}")  # type: ignore[arg-type]
    return ", ".join(out)


def _pytorch_spent(n: Note) -> str:
    first, last = n.get("spent_first_ns"), n.get("spent_last_ns")
    if not isinstance(first, (int, float)) or not isinstance(last, (int, float)):
        return ""
    span = short_ns(first) if first == last else f"{short_ns(first)} to {short_ns(last)}"
    return (f"; this run's PyTorch captures (cudagraph-tree recordings, torch.cuda.graph blocks) spent {span} each on it "
            "besides their CUDA calls (in the measured one-time costs)")


def _pytorch_work_priced(n: Note) -> str:
    trees = n["tree_first"]
    tree_text = ("cudagraph trees (torch.compile) were timed too and price a program that records them: "
                 + _spread_texts(n, "tree", "recording")) if trees else "cudagraph trees (torch.compile) do more around each recording"
    return ("PyTorch's own work around a capture (synchronize, emptying its cache, its memory pool's bookkeeping, Python) is in "
            f"the predicted one-time costs as `graphmode calibrate` timed torch.cuda.graph on {n['gpu'] or 'this GPU'}: "
            f"{_spread_texts(n, 'capture', 'PyTorch capture')} (median [p10, p90]); " + tree_text + _pytorch_spent(n))


def _pytorch_work_unpriced(n: Note) -> str:
    return ("a PyTorch program: capturing through torch.cuda.graph or torch.compile adds PyTorch's own work around the capture "
            "(synchronizations, emptying the cache, memory-pool bookkeeping), which the predicted one-time costs leave out: the cost "
            "model has no PyTorch measurement (run `graphmode calibrate` where PyTorch is installed); on the H200, 2.3 to 17.7 ms a "
            "cudagraph-tree recording (docs/benchmarks.md)" + _pytorch_spent(n))


def _cost_model_other_driver(n: Note) -> str:
    return (f"the cost model was calibrated on this GPU ({n['gpu']}) with driver {n['model_driver']}, "
            f"CUDA {n['model_cuda']}; this trace has driver {n['driver'] or '?'}, CUDA {n['cuda'] or '?'}")


def _cost_model_other_gpu(n: Note) -> str:
    return (f"no cost model for {n['gpu'] or 'this GPU'}: using the one calibrated on {n['model_gpu']} "
            f"(driver {n['model_driver']}); run `graphmode calibrate` on this GPU for its own")


def _rank_list(ranks: tuple[object, ...]) -> str:
    values = sorted(int(str(r)) for r in ranks)
    if len(values) > 8:
        return ", ".join(map(str, values[:8])) + f" … ({len(values)} ranks)"
    return ", ".join(map(str, values))


def _tuple(n: Note, key: str) -> tuple[object, ...]:
    v = n[key]
    assert isinstance(v, tuple), (n.kind, key, v)
    return v


def _incomplete(n: Note) -> str:
    cut = _tuple(n, "incomplete")
    return f" (rank(s) {', '.join(map(str, cut))} did not complete: their traces may stop early)" if cut else ""


def _per_rank(ranks: tuple[object, ...], counts: tuple[object, ...]) -> str:
    return ", ".join(f"rank {r}: {int(str(c)):,}" for r, c in zip(ranks, counts))


def _capture_mismatch(n: Note) -> str:
    return (f"collective call {n['call']} ({n['op']}): rank(s) {_rank_list(_tuple(n, 'captured'))} captured it into a graph, "
            f"rank(s) {_rank_list(_tuple(n, 'eager'))} launched it eagerly{_incomplete(n)}")


def _collective_mismatch(n: Note) -> str:
    text = "; ".join(f"rank(s) {_rank_list(rs)}: {op}" for op, rs in zip(_tuple(n, "ops"), _tuple(n, "ranks")))  # type: ignore[arg-type]
    return f"from collective call {n['call']} on, the ranks call different collectives ({text}){_incomplete(n)}"


def _clock(n: Note) -> str:
    if n.kind == "clock_one_host":
        text = ("all ranks ran on one host: CUPTI timestamps are that host's CLOCK_REALTIME, shared by its "
                "processes, so no offset is applied")
    elif n.kind == "clock_hosts_unaligned":
        text = (f"host(s) {', '.join(map(str, _tuple(n, 'hosts')))} share no collective with {n['reference']}: their ranks keep "
                "their own clock (CLOCK_REALTIME, as far apart as the hosts' clock synchronisation leaves them)")
    else:
        text = (f"{n['hosts']} hosts: each host's clock moved onto {n['reference']}'s by the median difference of the ends "
                f"of the collectives both ran ({int(_num(n, 'anchors')):,} or more each)")
    residual = n.get("residual_ns")
    if isinstance(residual, (int, float)):
        text += f"; after alignment the same collective ends within {residual:,.0f} ns (median) on all ranks"
    elif not n["anchored"]:
        text += "; no collective ran on every rank, so the agreement of the ranks' clocks cannot be measured"
    return text


def _collective_counts_differ(n: Note) -> str:
    short = _tuple(n, "short_ranks")
    text = (_per_rank(short[:8], _tuple(n, "short_counts")[:8]) + (f" … ({len(short)} ranks)" if len(short) > 8 else ""))
    lossy = _tuple(n, "lossy_ranks")
    return (f"{n['op']} ({'in ' + str(n['graph']) if n['graph'] else 'eager'}): recorded "
            f"{int(_num(n, 'most')):,} times on some ranks but fewer on others ({text}); collectives are matched across ranks by "
            "occurrence, so after the first one missing on a rank its waits, end skew and the clock alignment on it "
            "pair different calls"
            + (f" (rank(s) {', '.join(map(str, lossy))} lost records: CUPTI dropped some, or rows were left out "
               "when the trace was read; see their warnings)" if lossy else ""))


def _ranks_numbered(n: Note) -> str:
    names = ", ".join(f"{f} as rank {r}" for f, r in zip(_tuple(n, "files"), _tuple(n, "ranks")))
    return (f"{len(_tuple(n, 'files'))} trace(s) carry no rank (not recorded under a multi-process launcher): numbered in the "
            f"order given ({names})")


def _ranks_missing(n: Note) -> str:
    return (f"ranks {', '.join(map(str, _tuple(n, 'ranks')))}{' …' if _num(n, 'missing') > 16 else ''} of {n['world_size']} "
            "have no trace: figures across ranks cover the ranks present")


def _timeline_selection(n: Note) -> str:
    """The page's note on the part of the pass its whole-run timeline draws (analyzers.timeline.select_spans)."""
    if n["what"] == "window":
        what = f"the window {_num(n, 'start_ms'):g}–{_num(n, 'end_ms'):g} ms"
    elif n["what"] == "iterations":
        what = f"iterations {n['first']}:{n['last']} of each mode"
    else:
        what = f"the first {_num(n, 'first_ns') / 1e6:,.3f} ms"
    if n.get("cut_ns") is not None:
        what += f", cut at {_num(n, 'cut_ns') / 1e6:,.3f} ms to stay within {int(_num(n, 'max_spans')):,} spans"
    return (f"The whole-run timeline draws {what}: {int(_num(n, 'drawn')):,} of the pass's {int(_num(n, 'total')):,} spans "
            f"(a page holds at most {int(_num(n, 'max_spans')):,}). "
            f"Pick other spans with `graphmode view {n['trace']} --iterations A:B` (iteration numbers of each mode) "
            f"or `--window START_MS:END_MS` (ms from the start of the pass, which lasts {_num(n, 'pass_ns') / 1e6:,.1f} ms).")


def _rank_ranges(ranks: tuple[object, ...]) -> str:
    """(0, 1, 2, 5, 7, 8) -> '0-2, 5, 7-8'"""
    out: list[str] = []
    for r in sorted(int(str(x)) for x in ranks):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = out[-1].split("-")[0] + f"-{r}"
        else:
            out.append(str(r))
    return ", ".join(out)


def _rank_page_ranks_drawn(n: Note) -> str:
    drawn = _tuple(n, "drawn")
    return f"spans drawn for {len(drawn)} of {n['ranks']} ranks: {_rank_ranges(drawn)} (the first, the straggler, the last)"


SIZE_NOTE_TEXT = ("not recorded: CUPTI kernel records carry no kernel arguments, and NCCL's NVTX payload "
                  "(count, datatype) is not read; the kernel name gives operation, reduction, type, algorithm and protocol")
HANG_ADVICE = ("NCCL requires every rank of a communicator to capture a collective, or every rank to run it "
               "eagerly, and a graph holding a collective to be launched by all of them: capture the same "
               "code on every rank (same warm-up, same condition) and replay it the same number of times")
# what to do about each kind of hang risk (analyzers.collectives.hang_risks)
HANG_RISK_ADVICE = {
    "capture_mismatch": HANG_ADVICE,
    "collective_mismatch": "every rank of a communicator must call the same collectives in the same order",
    "call_count_mismatch": "a collective one rank calls and another never does waits forever",
    "replay_count_mismatch": HANG_ADVICE,
}


def straggler_evidence(rank: int, last_arrivals: int, collectives: int, median_lateness_ns: float | None) -> str:
    """What the straggler (analyzers.collectives.find_straggler) did, from its numbers."""
    return (f"rank {rank} started last in {last_arrivals:,} of {collectives:,} collectives ({100 * last_arrivals / collectives:.0f}%)"
            + (f", a median {median_lateness_ns / 1e3:,.1f} us after the median rank" if median_lateness_ns is not None else "")
            + "; the other ranks' collective kernels waited for it")


Template = str | Callable[[Note], str]

TEMPLATES: dict[str, Template] = {
    # TraceAnalysis.warnings: data lost or distorted
    "run_incomplete": _run_incomplete,
    "pass_incomplete": "pass {pass_id} ({detail}) has status '{status}'",
    "tracer_errors": _tracer_errors,
    "recording_note": "while recording: {text}",
    "reading_note": "reading the trace: {text}",
    "records_dropped": "{count:,} CUPTI activity records were dropped for lack of buffer space: API and GPU figures undercount",
    "tracer_slowed": _tracer_slowed,
    "cpu_speed_varied": ("the CPU ran at changing speeds in the {run} run: a fixed Python loop timed on its main thread "
                         "({samples:,} times, at most every {every_ns!t}) took {fast_ns!t} at its fastest tenth and "
                         "{slow_ns!t} at its slowest ({ratio:.2f}x), and {slow_share:.0%} of the samples took {slow_at}x "
                         "the fastest tenth or longer; CPU-bound figures of that run (eager steps, captures) move with "
                         "it, so compare them with another run or process with that in mind"),
    "cpu_speed_slower_run": ("the CPU ran slower in the {run} run than in the {other_run} run: the same Python loop took "
                             "{median_ns!t} there (median) against {other_fast_ns!t} at the {other_run} run's fastest "
                             "tenth ({ratio:.2f}x); CPU-bound figures taken from the {run} run (eager steps, captures) may "
                             "read up to that much high against the {other_run} run's"),
    "eager_untraced_window": ("the loop at {anchor} ran {periods:,} iterations with CUPTI detached (an untraced window of "
                              "the one traced run): {untraced_ns!t} an iteration, against {traced_ns!t} traced just before "
                              "it; its {iterations:,} traced CPU-bound iterations are scaled to that level"),
    "untraced_window_too_short": ("the untraced window at {anchor} timed only {periods:,} iterations ({needed:,} needed): its "
                                  "loop keeps the traced run's figures"),
    "one_run_stamps": ("the one traced run stamped your script's own lines {stamps:,} times ({per_stamp_ns!t} each, measured: "
                       "{total_ns!t} in all, {share:.0%} of the run); what they cost is taken off the periods they fell in"),
    "one_run_allocator_history": ("the one traced run recorded PyTorch's allocator history (what a graph of each step "
                                  "would hold): {actions:,} allocations and frees ({per_action_ns!t} each, measured: "
                                  "{total_ns!t} in all, {share:.0%} of the run); what they cost is taken off the periods "
                                  "they fell in"),
    "cpu_profile_unreadable": "the CPU profile is not shown: {error}",
    # TraceAnalysis.cannot_compute: what the trace does not allow, and why
    "no_graph": "no CUDA graph was built or replayed in this run: nothing to compare (graphmode answers what graphs buy)",
    "no_graph_replayed": "no graph was replayed: savings and break-even need replays",
    "graph_without_eager": ("graph {graph_id}: no eager run of its work was found (its kernel sequence never ran outside a graph), "
                            "so what it saves is unknown"),
    "no_timing_pass": ("no timing pass: wall times come from the traced pass and include the tracer's overhead; "
                       "the tracer distortion cannot be measured"),
    "timing_pass_without_iterations": ("the timing pass has no iteration markers: wall times come from the traced pass and "
                                       "include the tracer's overhead"),
    "no_traced_pass": ("no traced pass (graph or node detail): CPU time in CUDA API calls, GPU busy/idle time, kernel counts, "
                       "per-kernel durations and critical paths need CUDA activity"),
    "no_iteration_markers": ("no iteration markers (markers.kind = 'iteration'): per-iteration metrics, overhead saved and "
                             "break-even need the runner's iterations (record with `graphmode bench`)"),
    "one_iteration": "{mode} has one iteration: its p10/p90 equal the median and give no spread",
    "no_graph_iterations": ("no graph-mode iterations (zero steady replays): launch overhead saved and break-even need "
                            "graph replays"),
    "no_eager_iterations": "no eager iterations: launch overhead saved and break-even need an eager baseline",
    "costs_from_traced_pass": "one-time graph costs come from pass {pass_id} (traced): the wall pass recorded none",
    "first_launch_missing": ("some graphs have no first_launch op marker: their first launch's excess is not included in "
                             "the one-time cost"),
    "no_graph_built": "no graph was built (no op markers or graph lifecycle events): no one-time graph cost",
    "break_even_unknown": _break_even_unknown,
    # BreakEven.reason: why a break-even is not a number (analyzers.break_even)
    "no_eager_wall_times": "no {baseline} iterations with a wall time",
    "no_steady_replays": "no steady graph replays (graph-mode iterations) in the run: the replay time is unknown",
    "no_one_time_cost": "no one-time graph cost was recorded (no op markers or graph lifecycle events)",
    "replay_not_faster": _replay_not_faster,
    "graph_no_eager_iterations": "no {baseline} iterations of this graph's work were found",
    "graph_no_steady_replays": "no steady replays of this graph: the replay time is unknown",
    "graph_no_one_time_cost": "no one-time cost was recorded for this graph",
    "graph_replay_not_faster": _graph_replay_not_faster,
    "kernel_table_truncated": "more than {limit} kernel names: the per-kernel table keeps the {limit} with the most GPU time",
    "graph_detail_no_kernels": ("graph-detail trace: kernels inside a graph launch are recorded as one 'graph' span, so "
                                "per-kernel eager-vs-graph durations and the critical path need a node-detail recording "
                                "(`--detail node`)"),
    "source_table_truncated": ("more than {limit} source lines launched GPU work: the table keeps the {limit} with the most "
                               "GPU time"),
    "prediction_failed": "the graph prediction failed ({error_type}: {error}); please report it",
    "critical_path_no_spans": "graph {graph_id} ({label}) has no measured node spans: no critical path",
    "critical_path_edges_unknown": ("graph {graph_id} ({label}) was captured with the tracer detached: its edges were not "
                                    "recorded, so no critical path"),
    "critical_path_cycle": "graph {graph_id} ({label}) has a cycle in its recorded edges: no critical path",
    # a script trace (analyzers.script_analysis, script_graphs, untraced)
    "step_model_failed": "the step model failed ({error_type}: {error}); each graph is reported alone; please report it",
    "build_mismatch": _build_mismatch,
    "unknown_executables": _unknown_executables,
    "no_detail_run": ("this trace holds no run that recorded the graphs (the detail run is missing): graphs are known by their "
                      "executable ids only, without their capture lines, topology or eager counterparts; record with "
                      "`graphmode run`, which makes both runs"),
    "capture_windows_mismatch": ("the timing run heard {timing_windows} PyTorch capture window(s) and the measuring run "
                                 "{measured_windows}: the one-time costs keep the measuring run's"),
    "unstamped_iterations": _unstamped,
    "stamp_count_mismatch": ("line{count!s} {lines!j} ran a different number of times in the timing run than in the detail "
                             "run: the iterations they start keep the measuring run's period"),
    "iterations_respread": ("graph {graph_id}: its {mode} iterations were found as {measured} in the measuring run and "
                            "{detail} in the detail run, in other stretches: they take the timing run's {periods} periods in "
                            "order (the timing run's distribution, not iteration by iteration)"),
    # GraphResult: how a graph's eager iterations were found (eager_basis), and its notes (analyzers.per_graph)
    "eager_kernel_sequence": _eager_kernel_sequence,
    "step_segment": "its segment of the step (position {position} of {of})",
    "only_eager_run_is_first_call": ("its only eager run is its first call (a warm-up before the capture), which pays one-time "
                                     "set-up (compilation, autotuning, libraries' handles): no eager baseline, so no saving is "
                                     "stated"),
    "eager_from_warmups": ("the only eager runs of its work are {warmups} warm-up iteration{warmups!s} before the capture: "
                           "the eager time comes from them"),
    "first_warmup_left_out": _first_warmup_left_out,
    "tiny_sample": "{mode} median from {iterations} iteration{iterations!s}: tiny sample",
    "timed_untraced": _timed_untraced,
    "tracer_cost_taken_off": _tracer_cost_taken_off,
    "one_time_tracer_cost_taken_off": _one_time_tracer_cost_taken_off,
    "one_time_capture_untraced": _one_time_capture_untraced,
    "eager_window_bound": _eager_window_bound,
    "traced_cpu_bound_eager": ("its eager iterations are CPU-bound, and tracing slows the CPU side: the eager time may be up "
                               "to {slowdown_bound:.0%} too long (measured, docs/benchmarks.md), which the break-even "
                               "interval's upper end allows for"),
    "traced_cpu_bound_replays": ("its replays are CPU-bound: the replay time may be up to {slowdown_bound:.0%} too long, "
                                 "which the break-even interval's lower end allows for"),
    "one_time_timed_untraced": _one_time_timed_untraced,
    "one_time_traced": _one_time_traced,
    "one_time_before_trace": _one_time_before_trace,
    "replays_from_node_records": _replays_from_node_records,
    "framework_share": _framework_share,
    "never_replayed": "instantiated but never replayed: its one-time cost bought nothing in this run",
    # a pitfall's facts (analyzers.pitfalls, torch_diagnostics): worded as its evidence (reports.pitfall_words also
    # gives its title and advice)
    **EVIDENCE,
    # the prediction (analyzers.predict, regions, costmodel): RegionPrediction.notes, Prediction.notes, model_note
    "event_pairing_inferred": ("the trace records no stream or event for cudaEventRecord, so cross-stream edges pair each "
                               "waited event with a record by order and take the record's stream from its thread's last "
                               "launch; enabling CUPTI's CUDA_EVENT activity (CUpti_ActivityCudaEvent2: correlationId, "
                               "streamId, eventId) in the tracer would make them exact"),
    "prediction_needs_launch_records": ("the loop's step was found ({region}, {iterations:,} iterations), but the "
                                        "'{pass_name}' run recorded no launch calls, which the predicted graph is built "
                                        "from: the one traced run alone (`--runs 1`, and each rank of a multi-GPU job) "
                                        "keeps only the graph lifecycle's and synchronizations'. Run `graphmode run` "
                                        "without `--runs 1` (on one GPU, for a job): a script that built no graph then "
                                        "gets the runs the prediction needs"),
    "no_region": ("eager kernels ran, but no repeated region was found to predict a graph for: a script's steps are found "
                  "as eager runs of a graph it built, or, where it built none, as stretches between synchronizations, or "
                  "between runs of one line of the script (`graphmode run`'s detail run on Python 3.12+), or as a block of "
                  "kernels the GPU ran back to back, that recur at least {min_iterations} times with the same kernels; none "
                  "did here. Mark the step with an "
                  "NVTX range named 'graphmode:eager' (nvtx.annotate('graphmode:eager')), or name its lines with "
                  "`graphmode report --predict-lines FILE:FIRST-LAST` on a recording made with --launch-sources"),
    "probe_cost": _probe_cost,
    "eager_period_scaled": _eager_period_scaled,
    "eager_period_corrected": _eager_period_corrected,
    "breakers_first_iteration_only": _breakers_first_iteration_only,
    "iterations_left_out": ("{left_out} of {iterations} iterations launched different work and were left out of the per-node "
                            "durations"),
    "traced_eager_period": ("the eager period and the capture estimate come from a traced pass: they include the tracer's "
                            "overhead, so the saving may be overstated"),
    "eager_period_tiny_sample": "the eager period comes from {iterations} iteration(s): a tiny sample",
    "traced_measured_one_time": ("the measured one-time cost comes from a traced pass: the tracer's callbacks slow capture and "
                                 "instantiation"),
    "node_api_unmeasured": ("the graph would be built with the node API, but the cost model has no node-API measurement (a "
                            "calibration before graphmode timed one): priced as a capture"),
    "node_api_build": _node_api_build,
    "torch_capture_ratio": _torch_capture_ratio,
    "torch_capture_segments": _torch_capture_segments,
    "prediction_eager_timed": _prediction_eager_timed,
    "prediction_eager_one_run": _prediction_eager_one_run,
    "eager_two_runs": ("the eager period is the mean of two processes' readings of the loop: the timing run's, untraced "
                       "({timing_ns!t}), and the one traced run's with the tracer's calibrated cost taken off "
                       "({one_run_ns!t}); one process of a program can run a loop 0.56-1.75x the next (measured)"),
    "eager_slow_cpu_run_left_out": ("the eager period is the {kept_run} run's reading alone: two processes read the loop, "
                                    "the timing run ({timing_ns!t}, untraced) and the one traced run ({one_run_ns!t}, "
                                    "the tracer's calibrated cost taken off), but the {run} run's CPU ran {ratio:.2f}x "
                                    "slower than the {kept_run} run's (a Python loop timed on the main thread in both), "
                                    "so its reading was left out"),
    "shape_later_graph": ("priced as the process's graph number {nth} (one graph per shape, this shape's after the earlier "
                          "shapes'): the first graph's extra and PyTorch's first-capture work are in shape 1's one-time cost"),
    "node_api_first_graph_unmeasured": ("the model has no first-graph measurement for a node-API build: a captured first "
                                        "graph's extra stands in"),
    "first_graph_unmeasured": ("this would be the process's first graph, which costs more, but the model has no first-graph "
                               "measurement"),
    "second_graph_extra": "this would be the process's second graph, which still costs {extra_ns!t} more than later ones (included)",
    "trees_unmeasured": ("the program records cudagraph trees (torch.compile), which do more around a capture and per call than "
                         "torch.cuda.graph; the cost model has no cudagraph-tree measurement: torch.cuda.graph's stands in"),
    "first_graph_share": _first_graph_share,
    "tree_call_host": ("a cudagraph tree's replay is a call into PyTorch: {call_ns!t} of host time per call as "
                       "`graphmode calibrate` timed a small MLP's (more with more inputs and outputs)"),
    "capture_breakers_assumed_fixed": ("the region as recorded would not capture: see the capture breakers; the figures assume "
                                       "they are fixed"),
    "node_types_unpriced": "{nodes} node(s) of other types (empty, child graph, ...) are not priced",
    "graph_detail_eager_span": ("graph-detail trace: the eager GPU time is the replay's GPU span (parallel branches would run one "
                                "after another)"),
    "parallel_branches_unpriced": ("the graph has parallel branches: their eager twin would also need event record/wait calls, "
                                   "not priced"),
    "graph_one_time_unrecorded": "the trace recorded no one-time cost for this graph: no break-even",
    "pytorch_work_priced": _pytorch_work_priced,
    "pytorch_work_unpriced": _pytorch_work_unpriced,
    "prediction_needs_traced_pass": "no traced pass: the eager work's kernels and streams are needed to predict a graph",
    "regions_truncated": "{regions} regions: the first {limit} are predicted",
    "lines_without_sources": "lines {lines}: the trace has no call source lines; record with `graphmode run --launch-sources`",
    "lines_without_calls": "lines {lines}: no CUDA call was made from them",
    "lines_ran_once": "lines {lines}: their work ran once; a prediction needs a repeated region",
    "basis_graph_kernels": "inferred from the graph's kernel sequence",
    "basis_nvtx_markers": "NVTX ranges",
    "basis_synchronized": lambda n: "inferred: the stretch between synchronizations that recurs most" + _shape(n),
    "basis_line": lambda n: (f"inferred: the kernels between two runs of line {n['line']}, the stretch that recurs most (the loop "
                             "does not synchronize each step)" + _shape(n)),
    "basis_kernel_repetition": lambda n: (f"inferred: a block of {n['kernels']} kernels that the main stream ran {n['recurrences']} "
                                          "times back to back, "
                                          + (f"step {n['step']} of the {n['steps']} steps whose repeated blocks cover the most "
                                             "kernels without overlapping" if n.get("steps") else
                                             "the repeated block covering the most kernels")
                                          + " (the loop's step, whether or not it synchronizes; a stretch run once, such as a "
                                          "warm-up, never repeats so)" + _shape(n)),
    "basis_runner_markers": "the runner's iteration markers",
    "basis_iteration_table": "iteration table",
    "basis_nvtx_ranges": "{ranges} NVTX ranges named '{name}'",
    "basis_line_runs": "{runs} runs of calls from {file}:{first}-{last}",
    "basis_graph_replays": "graph replays (no eager twin in the trace)",
    # what to capture and how (analyzers.capture_advice)
    "lines_unrecorded": ("the trace records no lines for it: `graphmode run`'s detail run stamps the script's lines on "
                         "Python 3.12+, and `--launch-sources` records the line of each CUDA call"),
    "lines_not_in_iteration": lambda n: ("none of the script's lines recorded ("
                                         + ("line stamps" if n["recorded"] == "line_stamps" else "launch sources")
                                         + ") falls inside its iteration: its work is launched from library code or "
                                         "another thread"),
    "advice_not_pytorch": ("no PyTorch API advice: the program did not import torch nor run ATen kernels; capture the step "
                           "with the stream-capture calls of its own library (cudaStreamBeginCapture / EndCapture)"),
    "advice_cupy": lambda n: (f"CuPy launched {n['kernels']} of the step's {n['of']} GPU operations (e.g. "
                              f"{_kernel(n['example'])}) and the program did not import torch"),
    "advice_shapes": ("the step changes input shape (this is shape {shape} of {shapes}): a graph replays fixed shapes, so "
                      "one graph per shape (torch.compile's reduce-overhead records one per shape by itself)"),
    "advice_forward_only": ("its {kernels} kernels show no backward pass (no kernel named backward, dgrad or wgrad): a "
                            "forward step such as inference or decoding"),
    "advice_backward": lambda n: (f"it runs a backward pass: {n['kernels']} kernel{'' if n['kernels'] == 1 else 's'} named "
                                  f"like autograd's, e.g. {_kernel(n['example'])}"),
    "advice_optimizer": lambda n: (f"and an optimizer step: {n['kernels']} foreach or fused optimizer kernel"
                                   f"{'' if n['kernels'] == 1 else 's'}, e.g. {_kernel(n['example'])}"),
    "advice_no_optimizer": "but no optimizer kernel (multi_tensor_apply, fused_adam, sgd): the optimizer runs outside it",
    "advice_program_graphs_it": "the program already captures this work as graph {graph_id}",
    "advice_move_out_first": lambda n: ("first move out of it what would break the capture: "
                                        + ", ".join(f"{a} at {w}" if w else str(a) for a, w in zip(_items(n["apis"]), _items(n["wheres"])))
                                        + f" ({_joined(n['kinds'])})"),
    "step_memory_unknown": _step_memory_unknown,
    "torch_pool_grew": ("PyTorch's caching allocator grew its memory pool inside the region ({calls:,} cudaMalloc over "
                        "{iterations:,} iterations): not a capture breaker, since PyTorch allows its own cudaMalloc "
                        "during capture and the graph takes the blocks from its private pool"),
    # graph use (analyzers.coverage, graph_budget)
    "launch_sources_hint": ("the lines that launch eager kernels are recorded with `graphmode run --launch-sources` "
                            "(a CPU callback per launch: it slows the run)"),
    "no_eager_line_attributed": "no eager GPU work was attributed to a user line",
    "phase_rule": ("'before the first graph' ends where the first capture, explicit build or instantiation starts; "
                   "'building graphs' runs from there to the end of the last one; 'steady state' is the rest"),
    "budget_empty_graphs": ("{graphs} empty graph{graphs!s} (no nodes), such as the one PyTorch's cudagraph trees capture to "
                            "keep their memory pool alive"),
    "budget_built_before_trace": ("{graphs} graph{graphs!s} replayed here had been built before tracing started: "
                                  "start-up not in this trace, counted as 0"),
    "budget_no_memory_samples": ("no memory samples in this trace (recorded before graphmode sampled graph memory, or not by "
                                 "`graphmode run`)"),
    "budget_device_memory": ("memory is the drop in free device memory over each graph's capture and instantiation: "
                             "device-wide, so allocations by other threads meanwhile count too, and the driver allocates in "
                             "2 MiB pages"),
    "budget_framework_startup": ("the start-up of {graphs} graph{graphs!s} recorded by PyTorch's cudagraph trees includes "
                                 "PyTorch's own work around the capture (GraphCost.framework_ns), as the one-time cost does"),
    "startup_from_measuring_run": "start-up times are the measuring run's, as in the per-graph results",
    "startup_partly_from_measuring_run": ("start-up times of {timed} of {graphs} graphs are the measuring run's, as in the "
                                          "per-graph results; the others' come from the traced pass, whose callbacks slow "
                                          "capture and instantiation"),
    "startup_from_traced_pass": "start-up times come from the traced pass (tracer overhead included)",
    "memory_sampling_inside": lambda n: (f"memory sampling took {_num(n, 'sampling_ns') / 1e3:,.1f} us inside recorded "
                                         "capture and instantiate calls; their times include it"),
    "no_cost_model": "no cost model is installed: run `graphmode calibrate` on the GPU to predict graph costs",
    "cost_model_other_driver": _cost_model_other_driver,
    "cost_model_other_gpu": _cost_model_other_gpu,
    # a rank set (analyzers.ranks, collectives): warnings, cannot_compute, hang risks, the clock alignment
    "trace_left_out": "left out: {error}",
    "ranks_missing": _ranks_missing,
    "rank_incomplete": "rank {rank} did not complete (status '{status}'): its figures cover what was recorded",
    "ranks_share_gpu": "ranks {ranks!j} ran on the same GPU ({gpu_uuid} on {host}): they share its time",
    "ranks_numbered": _ranks_numbered,
    "collective_counts_differ": _collective_counts_differ,
    "more_collective_counts_differ": ("… and {collectives} more collective(s) recorded a different number of times on "
                                      "different ranks"),
    "ranks_measuring_run_only": ("rank(s) {ranks!j} hold only the measuring run (no detail run): it records no kernel launch "
                                 "calls and no graph topology, and a graph replay is one span, so their collectives inside "
                                 "graphs are not seen and their eager collectives are ordered by kernel start; record with "
                                 "`graphmode run` (both runs)"),
    "no_collectives": ("no NCCL kernel in any rank's trace: no collectives, waits in collectives, straggler or clock check "
                       "from them"),
    "graph_collectives_untimed": ("collectives inside graphs are not timed in graph-detail traces (a graph launch is one "
                                  "span): record with `--detail node` for their durations, waits and the alignment on them"),
    "message_size_unrecorded": SIZE_NOTE_TEXT,
    "collective_message_size": "message size of collectives: " + SIZE_NOTE_TEXT,
    "rank_graph_savings_single_graph": ("per-graph savings and break-even come from the trace-level analysis: they are given "
                                        "for a rank's graph only when it is the rank's one replayed graph"),
    "capture_mismatch": _capture_mismatch,
    "collective_mismatch": _collective_mismatch,
    "call_count_mismatch": lambda n: (f"the ranks made different numbers of collective calls "
                                      f"({_per_rank(_tuple(n, 'ranks'), _tuple(n, 'calls'))}){_incomplete(n)}"),
    "replay_count_mismatch": lambda n: (f"{n['graph']} holds collectives and was replayed a different number of times "
                                        f"({_per_rank(_tuple(n, 'ranks'), _tuple(n, 'replays'))}){_incomplete(n)}"),
    "clock_one_host": _clock,
    "clock_hosts_unaligned": _clock,
    "clock_hosts_aligned": _clock,
    # the page's timelines (analyzers.timeline, page) and the rank page (analyzers.rank_page)
    "timeline_selection": _timeline_selection,
    "iteration_view": lambda n: f"{n['mode']} iteration {n['iteration']}: {_num(n, 'duration_ns') / 1e3:,.1f} µs",
    "pass_view": "Pass {pass_id} ({detail} detail): {drawn:,} of {total:,} spans",
    "rank_page_ranks_drawn": _rank_page_ranks_drawn,
    "rank_page_not_drawn": "rank {rank} not drawn: {error}",
    "rank_page_windowed": ("{windowed} of the {drawn} ranks drawn span by span have more than {budget:,} spans (up to "
                           "{most:,}): each is drawn from the middle of its run, {budget:,} spans; the heatmap above covers "
                           "every span of every rank"),
    "iterations_differ": ("graph {graph_id}: its {mode} iterations differ between the measuring and detail runs ({measured} "
                          "and {detail} iterations): they keep the measuring run's period"),
}

# The capture API a region's advice names (analyzers.capture_advice), as a person reads it.
API_WORDS = {
    "torch_cuda_graph": "torch.cuda.graph around the step (warmed up on a side stream, inputs copied into static tensors)",
    "torch_cuda_graph_per_shape": ("one torch.cuda.graph per input shape, or torch.compile(mode=\"reduce-overhead\"), whose "
                                   "cudagraph trees record a graph per shape"),
    "torch_cuda_graph_whole_step": ("torch.cuda.graph around the whole training step (forward, backward, optimizer.step()), "
                                    "warmed up on a side stream with static inputs; or torch.cuda.make_graphed_callables for the "
                                    "model alone if the optimizer must stay eager"),
    "make_graphed_callables": "torch.cuda.make_graphed_callables for the model (its forward and backward), the optimizer left eager",
    "cupy_stream_capture": ("CuPy's stream capture: on a non-default cupy.cuda.Stream, stream.begin_capture(), the step, "
                            "graph = stream.end_capture(), then graph.launch(stream) each step (the graph reads and writes "
                            "the arrays it was captured with: keep them, copy new inputs into them)"),
}


def word(n: Note) -> str:
    """The sentence a person reads for a note."""
    template = TEMPLATES.get(n.kind)
    if template is None:
        raise KeyError(f"no wording for note kind {n.kind!r}: add it to reports.notes.TEMPLATES")
    return template(n) if callable(template) else fill(template, n.values)


def words(notes: tuple[Note, ...]) -> list[str]:
    return [word(n) for n in notes]


def note_dict(n: Note) -> dict[str, Any]:
    """A note as JSON: its kind and values for a program, its sentence for a person."""
    return {"kind": n.kind, "values": {k: _listed(v) for k, v in n.values.items()}, "text": word(n)}


def _listed(v: Any) -> Any:
    return [_listed(x) for x in v] if isinstance(v, tuple) else v
