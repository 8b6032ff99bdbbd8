"""Typed notes: what an analyzer says about a trace, as a kind and its numbers (no English).

An analyzer that has something to tell the user (a figure it cannot compute, data that was lost, how a
value was measured) returns a `Note`: a stable snake_case `kind` and the values the sentence needs (ids,
counts, durations in ns, ratios, file:line strings, names). The reports word it (reports.notes.word), so
the terminal, the page and the JSON say the same thing and a sentence is changed in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Union

# A note's value: a plain JSON-ready scalar, a tuple of them (ids, lines, names), or a tuple of such tuples
# (the ranks of each group).
NoteScalar = Union[int, float, str, bool, None]
NoteValue = Union[NoteScalar, tuple[Union[NoteScalar, tuple[NoteScalar, ...]], ...]]


@dataclass(frozen=True)
class Note:
    """One thing an analyzer tells the user: `kind` (a stable snake_case id, a key of the reports' wording
    table) and `values` (read-only): `note["graph_id"]`. Not a Mapping on purpose: `"text" in note` would
    quietly test a key, where a reader looking for a sentence should be told to word the note."""

    kind: str
    values: Mapping[str, NoteValue] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        frozen: dict[str, NoteValue] = {}
        for k, v in self.values.items():
            frozen[k] = tuple(tuple(x) if isinstance(x, (list, tuple)) else x for x in v) if isinstance(v, (list, tuple)) else v
        object.__setattr__(self, "values", MappingProxyType(frozen))

    def __reduce__(self) -> tuple[type[Note], tuple[str, dict[str, NoteValue]]]:
        # a mappingproxy does not pickle: rebuilt from a dict (analyzers.ranks reads ranks in worker processes)
        return (Note, (self.kind, dict(self.values)))

    def __getitem__(self, key: str) -> NoteValue:
        return self.values[key]

    def get(self, key: str, default: NoteValue = None) -> NoteValue:
        return self.values.get(key, default)

    def __hash__(self) -> int:
        return hash((self.kind, tuple(sorted(self.values.items(), key=lambda kv: kv[0]))))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Note) and self.kind == other.kind and dict(self.values) == dict(other.values)


def note(kind: str, **values: NoteValue) -> Note:
    """`note("no_timing_pass", pass_id=3)`: a Note built from keyword values."""
    return Note(kind, values)
