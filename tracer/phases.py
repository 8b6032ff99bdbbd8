"""Where `graphmode run`'s own time goes (issue 29: at most 2x the script's wall time): with GRAPHMODE_PHASES=FILE set,
the parent and each run's process append one JSON line per phase boundary to FILE ({"t": Unix seconds, "pid", "phase"}),
which benchmarks/run_phases.py turns into a breakdown. Unset (the default), `mark` does nothing. Standard library only:
the run's process marks its start before it imports anything of graphmode's."""

from __future__ import annotations

import json
import os
import time

ENV = "GRAPHMODE_PHASES"


def mark(phase: str) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        with open(path, "a") as f:
            f.write(json.dumps({"t": time.time(), "pid": os.getpid(), "phase": phase}) + "\n")
    except OSError:
        pass
