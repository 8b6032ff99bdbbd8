"""Which trace files make up one job: the arguments of `report`, `view` and `export` resolved to rank traces.

A rank set is named by a folder (every `*.gmtrace` in it), a glob (quoted, or expanded by the
shell into several files), several files, or the `--out` name the ranks were recorded with when
that file itself does not exist but `<stem>.rank*.gmtrace` beside it do. One existing file is an
ordinary trace. Nothing here opens a trace: the analyzers open one rank at a time.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from graphmode.tracer.store import TraceError

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
