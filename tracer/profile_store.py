"""The CPU profile of a run (pyinstrument) in the trace: written as tables, read back as pyinstrument's own objects.

A pyinstrument Session is a list of samples, each a call stack (a list of pyinstrument's frame
strings: function, file, line and attributes such as the current line) and the time it stands for.
Stored as (schema version 2, docs/trace-format.md):

- `profile_frames(frame_id, frame_info)`: every distinct frame string once, with an integer id;
- `profile_stacks(stack_id, parent_id, frame_id)`: the stacks as a prefix tree (a stack is its
  parent stack plus one innermost frame), so a stack is one integer and shared outer frames are
  stored once;
- `profile_samples(sample_index, stack_id, seconds)`;
- `meta.cpu_profile_session`: the Session's scalars (duration, interval, sys_prefixes, ...) and, when
  the run had more than MAX_SAMPLES samples, the interval they were resampled to. pyinstrument's HTML
  renderer resamples such sessions the same way (Session.resample) before embedding them.

Version-1 traces kept `Session.to_json()` as one JSON string in `meta.cpu_profile`; `read_profile`
reads both. Frame strings are never parsed here: readers get pyinstrument `Session` and `Frame`
objects (`Frame.function`, `Frame.file_path`, `Frame.is_application_code`, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphmode.tracer.errors import StorageError

if TYPE_CHECKING:
    import numpy as np
    from pyinstrument.session import Session

    from graphmode.tracer.store import Trace, TraceWriter

# pyinstrument's HTMLRenderer resamples sessions with more frame records than this (renderers/html.py).
MAX_SAMPLES = 100_000
SESSION_KEY = "cpu_profile_session"
LEGACY_KEY = "cpu_profile"


@dataclass(frozen=True)
class StoredProfile:
    """A CPU profile as stored: frames, the stack tree and the samples, as numpy columns.

    Index i of `stack_parent` / `stack_frame` is stack id i (index 0 is the empty stack); index j of
    `frame_info` is frame id j (index 0 unused)."""

    scalars: dict[str, Any]  # Session.to_json() without its frame records
    frame_info: list[str]
    stack_parent: np.ndarray
    stack_frame: np.ndarray
    sample_stack: np.ndarray
    sample_seconds: np.ndarray
    recorded_samples: int  # samples the profiler took (before any resampling)
    resample_interval: float | None  # seconds, when the samples were resampled to fit MAX_SAMPLES

    def context(self) -> Session:
        """An empty pyinstrument Session with this profile's scalars: the context Frames need."""
        from pyinstrument.session import Session

        session: Session = Session.from_json({**self.scalars, "frame_records": []})
        return session

    def session(self) -> Session:
        """The profile as a pyinstrument Session (render it with any pyinstrument renderer)."""
        from pyinstrument.session import Session

        stacks: list[list[str] | None] = [None] * len(self.stack_parent)
        stacks[0] = []
        for sid in range(1, len(self.stack_parent)):  # parents have smaller ids
            parent = stacks[int(self.stack_parent[sid])]
            assert parent is not None
            stacks[sid] = [*parent, self.frame_info[int(self.stack_frame[sid])]]
        records = [(stacks[int(s)] or [], float(t)) for s, t in zip(self.sample_stack, self.sample_seconds)]
        session: Session = Session.from_json({**self.scalars, "frame_records": records, "sample_count": len(records)})
        return session


def resampled(session: Session) -> tuple[Session, float | None]:
    """The session as pyinstrument's HTML renderer would embed it: over MAX_SAMPLES frame records,
    resampled to duration / 10000, the interval doubled until it fits."""
    if len(session.frame_records) <= MAX_SAMPLES:
        return session, None
    interval = session.duration / 10000 or session.min_interval
    out = session.resample(interval=interval)
    while len(out.frame_records) > MAX_SAMPLES:
        interval *= 2
        out = session.resample(interval=interval)
    return out, interval


def profile_tables(frame_records: list[tuple[list[str], float]]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(frame strings, stack parent, stack frame, sample stack, sample seconds) of a list of frame records."""
    import numpy as np

    frames: dict[str, int] = {}
    stacks: dict[tuple[int, int], int] = {}
    parents, frame_of = [0], [0]
    sample_stack = np.zeros(len(frame_records), dtype=np.int32)
    seconds = np.zeros(len(frame_records), dtype=np.float64)
    for i, (stack, time) in enumerate(frame_records):
        sid = 0
        for info in stack:
            fid = frames.setdefault(info, len(frames) + 1)
            nxt = stacks.get((sid, fid))
            if nxt is None:
                nxt = stacks[(sid, fid)] = len(parents)
                parents.append(sid)
                frame_of.append(fid)
            sid = nxt
        sample_stack[i] = sid
        seconds[i] = time
    texts = [""] * (len(frames) + 1)
    for text, fid in frames.items():
        texts[fid] = text
    return texts, np.asarray(parents, dtype=np.int32), np.asarray(frame_of, dtype=np.int32), sample_stack, seconds


def stop_profiler(profiler: Any) -> tuple[Session | None, str]:
    """Stops a running pyinstrument Profiler: (its session, '') or (None, why there is none)."""
    if profiler is None:
        return None, ""
    try:
        return profiler.stop(), ""
    except Exception as e:  # the run's data must still be written: keep a note instead
        return None, f"the CPU profile was lost: pyinstrument could not stop ({type(e).__name__}: {e})"


def write_profile(writer: TraceWriter, profile: tuple[Session | None, str]) -> None:
    """Writes a session into the profile tables; a profile that cannot be written leaves a note in
    meta.notes (shown by `graphmode info` and the report) instead of vanishing."""
    import numpy as np

    session, note = profile
    if session is None:
        if note:
            writer.add_note(note)
        return
    try:
        stored, interval = resampled(session)
        info, parents, frame_of, sample_stack, seconds = profile_tables(stored.frame_records)
        scalars = session.to_json(include_frame_records=False)
        scalars.update({"recorded_samples": len(session.frame_records), "resample_interval": interval})
        writer.append("profile_frames", {"frame_id": np.arange(1, len(info), dtype=np.int32), "frame_info": info[1:]})
        writer.append("profile_stacks", {"stack_id": np.arange(1, len(parents), dtype=np.int32),
                                         "parent_id": parents[1:], "frame_id": frame_of[1:]})
        writer.append("profile_samples", {"sample_index": np.arange(len(sample_stack), dtype=np.int32),
                                          "stack_id": sample_stack, "seconds": seconds})
        writer.set_meta({SESSION_KEY: scalars})
    except Exception as e:
        if isinstance(e, StorageError):
            raise
        writer.add_note(f"the CPU profile could not be stored ({type(e).__name__}: {e})")


def read_profile(trace: Trace) -> StoredProfile | None:
    """The trace's CPU profile, from the tables (version 2) or meta.cpu_profile (version 1); None without one.

    Raises ValueError (with a sentence) for a profile that is present but unreadable."""
    import numpy as np

    scalars = trace.meta.get(SESSION_KEY)
    if isinstance(scalars, dict):
        frames = trace.sql("SELECT frame_id, frame_info FROM profile_frames ORDER BY frame_id")
        stacks = trace.sql("SELECT stack_id, parent_id, frame_id FROM profile_stacks ORDER BY stack_id")
        samples = trace.sql("SELECT stack_id, seconds FROM profile_samples ORDER BY sample_index")
        n_frames, n_stacks = len(frames["frame_id"]), len(stacks["stack_id"])
        if not len(samples["stack_id"]):
            return None
        if (not np.array_equal(frames["frame_id"], np.arange(1, n_frames + 1))
                or not np.array_equal(stacks["stack_id"], np.arange(1, n_stacks + 1))
                or np.any(stacks["parent_id"] >= stacks["stack_id"]) or np.any(stacks["parent_id"] < 0)
                or np.any((stacks["frame_id"] < 1) | (stacks["frame_id"] > n_frames))
                or np.any((samples["stack_id"] < 0) | (samples["stack_id"] > n_stacks))):
            raise ValueError("the CPU profile tables do not fit together (ids out of range): the file is damaged")
        info = ["", *[str(x) for x in frames["frame_info"]]]
        parents = np.concatenate([[0], stacks["parent_id"]]).astype(np.int32)
        frame_of = np.concatenate([[0], stacks["frame_id"]]).astype(np.int32)
        interval = scalars.get("resample_interval")
        return StoredProfile(scalars, info, parents, frame_of, samples["stack_id"].astype(np.int32),
                             samples["seconds"].astype(np.float64), int(scalars.get("recorded_samples") or len(samples["stack_id"])),
                             float(interval) if isinstance(interval, (int, float)) else None)
    if not trace.legacy_profile:
        return None
    (text,), = trace.rows(f"SELECT value FROM meta WHERE key = '{LEGACY_KEY}'")
    try:
        return from_session_json(json.loads(text))
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise ValueError(f"meta.cpu_profile is not a pyinstrument session ({type(e).__name__}): the file is damaged") from None


def from_session_json(data: dict[str, Any]) -> StoredProfile | None:
    """A profile from `Session.to_json()` (as version-1 traces stored it); None without samples."""
    import numpy as np

    records = [(list(stack), float(t)) for stack, t in data.get("frame_records") or []]
    if not records:
        return None
    info, parents, frame_of, sample_stack, seconds = profile_tables(records)
    scalars = {k: v for k, v in data.items() if k != "frame_records"}
    for key, default in (("start_time", 0.0), ("duration", 0.0), ("sample_count", len(records)),
                         ("start_call_stack", []), ("target_description", ""), ("cpu_time", 0.0)):
        scalars.setdefault(key, default)
    return StoredProfile(scalars, info, parents, frame_of, sample_stack, seconds, int(scalars["sample_count"]), None)


def profile_summary_line(trace: Trace) -> str:
    """One line for `graphmode info`: what profile the trace holds, without reading its samples."""
    scalars = trace.meta.get(SESSION_KEY)
    if isinstance(scalars, dict):
        n = trace.count("profile_samples")
        recorded = scalars.get("recorded_samples", n)
        resample = scalars.get("resample_interval")
        text = f"pyinstrument, {recorded:,} samples over {float(scalars.get('duration') or 0):.2f} s"
        if resample:
            text += f" (stored resampled to {n:,} at {float(resample) * 1e3:.2f} ms)"
        return text + f"; {trace.count('profile_frames'):,} frames, {trace.count('profile_stacks'):,} stacks"
    if trace.legacy_profile:
        (chars,), = trace.rows(f"SELECT length(value) FROM meta WHERE key = '{LEGACY_KEY}'")
        return (f"pyinstrument session stored as one {int(chars or 0) / 1e6:.1f} MB JSON string "
                "(schema version 1); summarised by `graphmode report`")
    return ""
