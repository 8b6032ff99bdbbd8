"""An independent checker of a Perfetto protobuf trace as trace processor reads it (test code, not the exporter).

Parses the file with the perfetto package's message classes and checks: one sequence whose first
packet clears incremental state and whose later packets declare they need it; every interned id
(event name, category, annotation name) defined on the sequence before it is used; every track an
event names described by a TrackDescriptor before it, with a parent that is described; on each
track, SLICE_BEGIN/SLICE_END pairs balance, nest, and never go back in time; every flow that a
GPU span terminates was started by an earlier slice, and no flow id starts twice.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ParsedTrace:
    slices: list[dict[str, Any]] = field(default_factory=list)  # name, category, track, start, end, args, flows
    tracks: dict[int, dict[str, Any]] = field(default_factory=dict)  # uuid -> name, parent, pid
    problems: list[str] = field(default_factory=list)


def read_perfetto(path: Path) -> ParsedTrace:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    out = ParsedTrace()
    names: dict[str, dict[int, str]] = {"event_names": {}, "event_categories": {}, "debug_annotation_names": {}}
    open_: dict[int, list[dict[str, Any]]] = defaultdict(list)
    last_ts: dict[int, int] = {}
    flow_starts: dict[int, int] = {}
    for i, p in enumerate(trace.packet):
        if p.trusted_packet_sequence_id != 1:
            out.problems.append(f"packet {i} on sequence {p.trusted_packet_sequence_id}")
        want = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED if i == 0 else pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        if p.sequence_flags != want:
            out.problems.append(f"packet {i} has sequence flags {p.sequence_flags}, not {want}")
        for kind, table in names.items():
            for entry in getattr(p.interned_data, kind):
                if entry.iid in table:
                    out.problems.append(f"{kind} iid {entry.iid} interned twice")
                table[entry.iid] = entry.name
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("parent_uuid") and d.parent_uuid not in out.tracks:
                out.problems.append(f"track {d.uuid} has an undescribed parent {d.parent_uuid}")
            out.tracks[d.uuid] = {"name": d.name or d.process.process_name, "parent": d.parent_uuid,
                                  "pid": d.process.pid if d.HasField("process") else None}
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        if e.track_uuid not in out.tracks:
            out.problems.append(f"event on undescribed track {e.track_uuid}")
        if p.timestamp < last_ts.get(e.track_uuid, 0):
            out.problems.append(f"track {e.track_uuid} goes back in time at packet {i}")
        last_ts[e.track_uuid] = p.timestamp
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            try:
                s = {"name": names["event_names"][e.name_iid], "category": names["event_categories"][e.category_iids[0]],
                     "track": e.track_uuid, "start": p.timestamp, "end": None,
                     "args": {names["debug_annotation_names"][a.name_iid]: a.int_value for a in e.debug_annotations},
                     "flow_ids": list(e.flow_ids), "terminating": list(e.terminating_flow_ids)}
            except (KeyError, IndexError) as err:
                out.problems.append(f"packet {i} uses an interned id never defined ({err})")
                continue
            for f in e.flow_ids:
                if f in flow_starts:
                    out.problems.append(f"flow {f} starts twice")
                flow_starts[f] = p.timestamp
            for f in e.terminating_flow_ids:
                if f not in flow_starts:
                    out.problems.append(f"flow {f} ends at packet {i} without a start before it")
                elif flow_starts[f] > p.timestamp:
                    out.problems.append(f"flow {f} ends before it starts")
            open_[e.track_uuid].append(s)
            out.slices.append(s)
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            stack = open_[e.track_uuid]
            if not stack:
                out.problems.append(f"SLICE_END without a begin on track {e.track_uuid}")
                continue
            s = stack.pop()
            s["end"] = p.timestamp
            if stack and stack[-1]["start"] > s["start"]:
                out.problems.append(f"slices on track {e.track_uuid} do not nest")
    for uuid, stack in open_.items():
        if stack:
            out.problems.append(f"{len(stack)} slice(s) never closed on track {uuid}")
    return out


def check_nesting(parsed: ParsedTrace) -> list[str]:
    """Slices of one track either nest or do not overlap (a parent holds its children entirely)."""
    problems = []
    by_track: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for s in parsed.slices:
        by_track[s["track"]].append(s)
    for track, slices in by_track.items():
        ends: list[int] = []
        for s in sorted(slices, key=lambda s: (s["start"], -(s["end"] or 0))):
            while ends and ends[-1] <= s["start"]:
                ends.pop()
            if ends and ends[-1] < s["end"]:
                problems.append(f"track {track}: {s['name']} overlaps its parent without nesting")
            ends.append(s["end"])
    return problems
