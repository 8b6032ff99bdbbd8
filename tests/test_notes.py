"""Notes: the analyzers say what they found as a kind and its values (analyzers.notes); the reports word
each kind from one table (reports.notes). Every kind an analyzer can emit must have its words."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from graphmode.analyzers.notes import Note, note
from graphmode.reports.notes import TEMPLATES, note_dict, word

REPO = Path(__file__).resolve().parents[1]


def emitted_kinds() -> dict[str, str]:
    """Every kind written as a literal in an analyzer: note("kind", ...) or Note("kind", ...), with where."""
    out: dict[str, str] = {}
    for path in sorted((REPO / "analyzers").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("note", "Note")
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out[node.args[0].value] = f"{path.name}:{node.lineno}"
    return out


def test_every_kind_an_analyzer_emits_has_a_template() -> None:
    kinds = emitted_kinds()
    assert len(kinds) > 30  # the scan finds the analyzers' notes (a broken scan would pass on nothing)
    missing = {k: where for k, where in kinds.items() if k not in TEMPLATES}
    assert not missing, f"note kinds without words in reports/notes.py TEMPLATES: {missing}"


def test_kinds_are_snake_case_and_no_template_is_dead() -> None:
    kinds = emitted_kinds()
    assert all(k.isidentifier() and k == k.lower() for k in TEMPLATES)
    assert set(TEMPLATES) <= set(kinds), f"templates no analyzer emits: {set(TEMPLATES) - set(kinds)}"


def test_a_note_is_frozen_hashable_and_compares_by_value() -> None:
    n = note("records_dropped", count=12)
    assert n == Note("records_dropped", {"count": 12}) and hash(n) == hash(Note("records_dropped", {"count": 12}))
    assert n != note("records_dropped", count=13) and n["count"] == 12 and n.get("missing") is None
    with pytest.raises(TypeError):
        n.values["count"] = 13  # type: ignore[index]
    with pytest.raises(AttributeError):
        n.kind = "other"  # type: ignore[misc]
    listed = note("stamp_count_mismatch", count=2, lines=["a.py:3", "a.py:9"])
    assert listed["lines"] == ("a.py:3", "a.py:9")  # lists are kept as tuples: the note stays frozen


def test_word_fills_values_and_formats_in_the_report() -> None:
    # hand-written sentences: what the terminal, the page and the JSON print for these values
    assert word(note("records_dropped", count=1234)) == ("1,234 CUPTI activity records were dropped for lack of buffer "
                                                          "space: API and GPU figures undercount")
    assert word(note("run_incomplete", status="interrupted", reason="")) == (
        "the run did not complete (status 'interrupted'): figures cover only what was recorded")
    assert word(note("run_incomplete", status="killed", reason="SIGKILL")) == (
        "the run did not complete (status 'killed': SIGKILL): figures cover only what was recorded")
    assert word(note("stamp_count_mismatch", count=1, lines=("train.py:12",))).startswith("line train.py:12 ran a different")
    assert word(note("stamp_count_mismatch", count=2, lines=("a.py:1", "a.py:2"))).startswith("lines a.py:1, a.py:2 ran")
    assert word(note("tracer_errors", count=5, errors=("e1", "e2", "e3"))) == (
        "the tracer hit 5 error(s) while recording, so some data is missing: e1; e2; e3; and 2 more")
    unknown = note("break_even_unknown", baseline="eager", reason="no_one_time_cost")
    assert word(unknown) == ("break-even against eager: no one-time graph cost was recorded (no op markers or graph "
                             "lifecycle events)")
    with pytest.raises(KeyError, match="no wording for note kind 'nonsense'"):
        word(note("nonsense"))


def test_a_note_in_json_has_kind_values_and_text() -> None:
    d = note_dict(note("stamp_count_mismatch", count=2, lines=("a.py:1", "a.py:2")))
    assert json.loads(json.dumps(d)) == {"kind": "stamp_count_mismatch", "values": {"count": 2, "lines": ["a.py:1", "a.py:2"]},
                                         "text": word(note("stamp_count_mismatch", count=2, lines=("a.py:1", "a.py:2")))}


def test_every_pitfall_has_a_title_evidence_and_advice() -> None:
    from graphmode.reports.pitfall_words import ADVICE, EVIDENCE, TITLES

    assert set(EVIDENCE) == set(TITLES) == set(ADVICE)
    pitfall_kinds = {k for k, where in emitted_kinds().items() if where.startswith(("pitfalls.py", "torch_diagnostics.py"))}
    assert pitfall_kinds and pitfall_kinds <= set(EVIDENCE), pitfall_kinds - set(EVIDENCE)


def test_the_pages_timeline_notes_are_worded_as_the_page_prints_them() -> None:
    # hand-written sentences for hand-picked values: what the page's whole-run note, its views' titles and the rank
    # page's note read (analyzers.timeline, page, rank_page)
    how = ("Pick other spans with `graphmode view t.gmtrace --iterations A:B` (iteration numbers of each mode) or "
           "`--window START_MS:END_MS` (ms from the start of the pass, which lasts 2,000.5 ms).")
    common = dict(drawn=1234, total=56789, max_spans=3000, trace="t.gmtrace", pass_ns=2_000_500_000)
    assert word(note("timeline_selection", what="window", start_ms=0.5, end_ms=12.0, cut_ns=None, **common)) == (
        "The whole-run timeline draws the window 0.5–12 ms: 1,234 of the pass's 56,789 spans (a page holds at most 3,000). "
        + how)
    assert word(note("timeline_selection", what="iterations", first=0, last=20, cut_ns=1_234_567, **common)) == (
        "The whole-run timeline draws iterations 0:20 of each mode, cut at 1.235 ms to stay within 3,000 spans: 1,234 of "
        "the pass's 56,789 spans (a page holds at most 3,000). " + how)
    assert word(note("timeline_selection", what="start", first_ns=2_500_000, cut_ns=None, **common)).startswith(
        "The whole-run timeline draws the first 2.500 ms: 1,234 of")
    assert word(note("iteration_view", mode="graph", iteration=7, duration_ns=1_234_560)) == "graph iteration 7: 1,234.6 µs"
    assert word(note("pass_view", pass_id=2, detail="node", drawn=1234, total=5678)) == (
        "Pass 2 (node detail): 1,234 of 5,678 spans")
    assert word(note("rank_page_ranks_drawn", drawn=(0, 1, 2, 5, 7, 8), ranks=32)) == (
        "spans drawn for 6 of 32 ranks: 0-2, 5, 7-8 (the first, the straggler, the last)")
    assert word(note("rank_page_not_drawn", rank=3, error="not a trace")) == "rank 3 not drawn: not a trace"
    assert word(note("rank_page_windowed", windowed=2, drawn=16, budget=3750, most=12000)) == (
        "2 of the 16 ranks drawn span by span have more than 3,750 spans (up to 12,000): each is drawn from the middle "
        "of its run, 3,750 spans; the heatmap above covers every span of every rank")
