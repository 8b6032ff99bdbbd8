"""An independent checker of Chrome trace-event JSON as Perfetto imports it (test code, not the exporter).

Rules: complete ('X') slices have a non-negative duration; 'B'/'E' pairs close; slices on one
(pid, tid) track nest; every flow id has one start ('s') and one finish ('f'), each bound to a slice
of its own track that encloses its timestamp, the finish not before the start; every pid and tid
used has a name.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

EPS_US = 1e-6


def check_trace_events(doc: dict[str, Any] | list[dict[str, Any]]) -> list[str]:
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    problems: list[str] = []
    slices: dict[tuple[int, int], list[tuple[float, float, str]]] = defaultdict(list)
    open_b: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    flows: dict[Any, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {"s": [], "f": []})
    process_names: set[int] = set()
    thread_names: set[tuple[int, int]] = set()
    for e in events:
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "process_name":
                process_names.add(e["pid"])
            elif e.get("name") == "thread_name":
                thread_names.add((e["pid"], e["tid"]))
            continue
        track = (e["pid"], e["tid"])
        if ph == "X":
            if e["dur"] < 0:
                problems.append(f"slice {e['name']!r} at {e['ts']} has negative duration")
            slices[track].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), str(e["name"])))
        elif ph == "B":
            open_b[track].append(e)
        elif ph == "E":
            if not open_b[track]:
                problems.append(f"'E' at {e['ts']} on {track} closes nothing")
            else:
                b = open_b[track].pop()
                slices[track].append((float(b["ts"]), float(e["ts"]), str(b.get("name"))))
        elif ph in ("s", "f"):
            flows[(e.get("cat"), e["id"])][ph].append(e)
        else:
            problems.append(f"unexpected phase {ph!r}")
    for track, stack in open_b.items():
        if stack:
            problems.append(f"{len(stack)} 'B' slice(s) on {track} never closed")
    for track, items in slices.items():
        items.sort(key=lambda s: (s[0], -s[1]))
        stack: list[tuple[float, float, str]] = []
        for s in items:
            while stack and stack[-1][1] <= s[0] + EPS_US:
                stack.pop()
            if stack and s[1] > stack[-1][1] + EPS_US:
                problems.append(f"on track {track}, {s[2]!r} [{s[0]}, {s[1]}] overlaps {stack[-1][2]!r} "
                                f"[{stack[-1][0]}, {stack[-1][1]}] without nesting")
                break
            stack.append(s)
        if track[0] not in process_names:
            problems.append(f"pid {track[0]} has no process_name")
        if track not in thread_names:
            problems.append(f"track {track} has no thread_name")

    def bound(e: dict[str, Any]) -> bool:
        ts = float(e["ts"])
        return any(a - EPS_US <= ts <= b + EPS_US for a, b, _ in slices.get((e["pid"], e["tid"]), []))

    for key, ends in flows.items():
        if len(ends["s"]) != 1 or len(ends["f"]) != 1:
            problems.append(f"flow {key} has {len(ends['s'])} start(s) and {len(ends['f'])} finish(es)")
            continue
        s, f = ends["s"][0], ends["f"][0]
        if not bound(s):
            problems.append(f"flow {key} start at {s['ts']} is inside no slice of its track")
        if not bound(f):
            problems.append(f"flow {key} finish at {f['ts']} is inside no slice of its track")
        if float(f["ts"]) < float(s["ts"]):
            problems.append(f"flow {key} finishes before it starts")
    return problems
