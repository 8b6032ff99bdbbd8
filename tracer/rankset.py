"""Which trace files make up one job: the arguments of `report`, `view` and `export` resolved to rank traces.

A rank set is named by a folder (every `*.gmtrace` in it), a glob (quoted, or expanded by the
shell into several files), several files, or the `--out` name the ranks were recorded with when
that file itself does not exist but `<stem>.rank*.gmtrace` beside it do. One existing file is an
ordinary trace. `rank_set_paths` opens no trace; `check_one_job` reads each one's metadata only (the
analyzers then open one rank at a time).

Traces given together are merged as the ranks of one job only when their metadata says they can be:
one program (workload and script), and either every trace carries `meta.rank` (written under a
launcher: tracer/ranks.py) with one world size and launcher and no rank twice, or none does (traces
recorded outside a launcher, numbered in the order given). Anything else is refused with what differs:
min/median/max "across ranks" of unrelated programs would be figures of nothing.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from typing import Any

from graphmode.tracer.store import read_metas, TraceError

GLOB_CHARS = set("*?[")


class RankSetError(TraceError):
    """Arguments that name no usable set of rank traces; the message says what to pass instead."""


def _expand(arg: Path) -> list[Path]:
    text = str(arg)
    if arg.is_dir():
        found = sorted(arg.glob("*.gmtrace"))
        if not found:
            raise RankSetError(f"{arg}: a folder without *.gmtrace files; pass the folder the ranks wrote their traces to")
        return found
    if arg.exists():
        return [arg]
    if GLOB_CHARS & set(text):
        found = [Path(p) for p in sorted(glob.glob(os.path.expanduser(text))) if Path(p).is_file()]
        if not found:
            raise RankSetError(f"{text}: the pattern matches no file")
        return found
    siblings = _rank_siblings(arg)
    if siblings:
        return siblings
    raise RankSetError(f"{arg}: no such file; record one with `graphmode run --out {arg} script.py`")


def _rank_siblings(path: Path) -> list[Path]:
    """`<stem>.rank*.gmtrace` beside a path that was the --out of a multi-process run."""
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    suffix = path.suffix or ".gmtrace"
    return sorted(p for p in path.parent.glob(f"{glob.escape(stem)}.rank*{suffix}") if p.is_file())


def rank_set_paths(args: Sequence[Path]) -> list[Path] | None:
    """The trace files of a rank set named by `args`; None when they name one ordinary trace file.

    Raises RankSetError with a line a person can act on when the arguments name nothing usable.
    """
    if not args:
        raise RankSetError("no trace given: pass a trace file, or the traces of a multi-process run (a folder or a glob)")
    if len(args) == 1 and args[0].is_file():
        return None
    files: dict[Path, Path] = {}  # a file named twice (by a glob and by name) counts once
    for a in args:
        for p in _expand(Path(a)):
            files.setdefault(p.resolve(), p)
    return list(files.values())


def _program(meta: dict[str, Any]) -> str:
    """What a trace ran: a script's file name ('train.py'), else its workload ('chain')."""
    script = meta.get("script")
    path = script.get("path") if isinstance(script, dict) else None
    if isinstance(path, str) and path:
        return Path(path).name
    return str(meta.get("workload") or "unknown program")


def _listed(groups: dict[str, list[Path]], shown: int = 3) -> str:
    """'a.py (x.gmtrace, y.gmtrace), b.py (z.gmtrace) and 2 more'."""
    parts = [f"{key} ({', '.join(p.name for p in paths[:2])}{', …' if len(paths) > 2 else ''})"
             for key, paths in list(groups.items())[:shown]]
    return ", ".join(parts) + (f" and {len(groups) - shown} more" if len(groups) > shown else "")


def check_one_job(paths: Sequence[Path]) -> None:
    """Raises RankSetError, naming what differs, unless the traces can be the ranks of one job (module
    docstring). A trace that cannot be read is let through: the analysis leaves it out and says so."""
    metas = [(Path(p), m) for p, m in zip(paths, read_metas(paths)) if not isinstance(m, TraceError)]
    if len(metas) < 2:
        return
    one_at_a_time = "pass the traces of one job, or one trace file at a time"
    programs: dict[str, list[Path]] = {}
    for p, meta in metas:
        programs.setdefault(_program(meta), []).append(p)
    if len(programs) > 1:
        raise RankSetError(f"these {len(metas)} traces are not the ranks of one job: they ran {len(programs)} different "
                           f"programs, {_listed(programs)}; {one_at_a_time}")
    ranked = [(p, m["rank"]) for p, m in metas if isinstance(m.get("rank"), dict)]
    if not ranked:
        return  # recorded outside a launcher: numbered in the order given (analyzers.ranks says so)
    if len(ranked) < len(metas):
        lone = next(p for p, m in metas if not isinstance(m.get("rank"), dict))
        p, r = ranked[0]
        raise RankSetError(f"{lone.name} carries no rank (recorded outside a launcher) but {p.name} is rank {r.get('rank')} "
                           f"of a {r.get('world_size')}-process job: they are not the ranks of one job; {one_at_a_time}")
    seen: dict[Any, Path] = {}
    first: dict[str, tuple[Any, Path]] = {}
    for p, r in ranked:  # in the order given, as the analysis reads them
        rank = r.get("rank")
        if rank in seen:
            raise RankSetError(f"rank {rank} has two traces: {seen[rank]} and {p}; pass the traces of one run (one folder per "
                               "run, or a glob that matches one run)")
        seen[rank] = p
        for key, what in (("world_size", "world size"), ("launcher", "launcher")):
            value, where = first.setdefault(key, (r.get(key), p))
            if r.get(key) != value:
                raise RankSetError(f"traces of different jobs: {what} {value} ({where}) and {r.get(key)} ({p}); "
                                   "pass the traces of one run")
