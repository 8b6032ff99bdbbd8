"""The verdict box is coloured by the sign of what the headline says (html_sections.verdict_kind): on real
recordings in a real browser, on the real two-rank jobs, and on break-even results varied by hand (SYNTHETIC:
each variation below is built in the test from a real analysis; none was measured)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from browser import Chromium, find_chromium

from graphmode.analyzers import TraceAnalysis, analyze
from graphmode.analyzers.headline import headline_of
from graphmode.analyzers.ranks import analyze_ranks
from graphmode.views import write_page
from graphmode.reports.html_sections import VERDICT_KINDS, verdict_kind
from graphmode.views import ranks_page
from graphmode.tracer.store import load

DATA = Path(__file__).resolve().parent / "data"


def _analysis(fixture: str):  # type: ignore[no-untyped-def]
    with load(DATA / fixture) as trace:
        return analyze(trace)


def _verdict_class(page: str) -> list[str]:
    m = re.search(r"<p class='([^']*)' id='gm-verdict'>", page)
    assert m, "no verdict box"
    return m.group(1).split()


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium (Debian: apt-get install chromium)")
def test_paying_back_and_failed_capture_verdicts_look_different(tmp_path: Path) -> None:
    shown = {}
    with Chromium() as browser:
        for fixture, kind in (("dag-node.gmtrace", "paid-back"), ("scripts/broken_capture.gmtrace", "no-graph")):
            with load(DATA / fixture) as trace:
                page = write_page(trace, tmp_path / f"{kind}.html").path
            browser.open(page)
            shown[kind] = browser.evaluate("(() => { const v = document.getElementById('gm-verdict'), s = getComputedStyle(v);"
                                           " return [Array.from(v.classList), s.backgroundColor, s.borderLeftColor]; })()")
            assert kind in shown[kind][0], (fixture, shown[kind])
        assert browser.errors == []
    # dag-node pays back after 9 of its 41 replays; broken_capture's capture failed: no graph was made
    assert shown["paid-back"][1:] != shown["no-graph"][1:], shown
    assert shown["paid-back"][2] == "rgb(46, 125, 50)"  # green only where the run paid back


def test_verdict_kind_of_real_recordings() -> None:
    assert verdict_kind(_analysis("dag-node.gmtrace")) == "paid-back"  # break-even 9, 41 replays
    assert verdict_kind(_analysis("scripts/broken_capture.gmtrace")) == "no-graph"
    assert verdict_kind(_analysis("scripts/cuda_python_eager_only.gmtrace")) == "no-graph"
    # no eager run of its graphs' work: the verdict is the predicted break-even's (analyzers.counterfactual)
    a = _analysis("scripts/torch_compile.gmtrace")
    b = a.graphs[0].break_even
    assert a.headline is not None and a.headline.basis == "predicted" and b is not None and b.basis == "predicted"
    expected = "never" if b.never else "paid-back" if a.headline.run_replays >= (b.replays or 0) else "not-yet"
    assert verdict_kind(a) == expected


def test_verdict_kind_follows_the_break_even_varied_by_hand() -> None:
    a = _analysis("dag-node.gmtrace")
    b = a.primary_break_even()
    assert b is not None and (b.replays, b.run_replays) == (9, 41)

    def with_headline(x: TraceAnalysis) -> TraceAnalysis:
        # the page colours the analysis's one verdict (analyzers.headline): varied by hand, it is computed again
        return dataclasses.replace(x, headline=headline_of(x))

    def kind(**change: object) -> str:
        return verdict_kind(with_headline(dataclasses.replace(a, break_even=(dataclasses.replace(b, **change),))))

    assert kind() == "paid-back"
    assert kind(run_replays=8) == "not-yet"  # SYNTHETIC: 8 replays, one short of the break-even
    assert kind(run_replays=9) == "paid-back"
    assert kind(replays=None, never=True, reason="") == "never"  # SYNTHETIC: a replay not faster
    assert kind(replays=None, never=False, reason="no eager baseline") == "unknown"
    assert verdict_kind(with_headline(dataclasses.replace(a, break_even=()))) == "unknown"  # graph mode ran, nothing to compare
    eager_only = dataclasses.replace(a, break_even=(), modes=tuple(m for m in a.modes if m.mode != "graph"))
    assert verdict_kind(with_headline(eager_only)) == "no-graph"


def test_verdict_kind_of_a_script_trace_reads_its_headline_graph() -> None:
    a = _analysis("scripts/torch_cudagraph.gmtrace")
    g = a.graphs[0]
    assert g.break_even is not None and g.break_even.replays == 7 and g.replays == 20
    assert verdict_kind(a) == "paid-back"

    def kind(**change: object) -> str:
        changed = dataclasses.replace(a, graphs=(dataclasses.replace(g, **change), *a.graphs[1:]))
        return verdict_kind(dataclasses.replace(changed, headline=headline_of(changed)))  # the one verdict, again

    assert kind(status="never_replayed") == "never"  # SYNTHETIC statuses of the same graph
    assert kind(status="capture_failed") == "no-graph"
    assert kind(break_even=dataclasses.replace(g.break_even, run_replays=3)) == "not-yet"
    assert kind(break_even=None) == "unknown"


def test_multi_rank_verdict_marks_a_job_that_lost_time_net() -> None:
    kinds = {}
    for job in ("allreduce_graph", "ddp_graph"):
        a = analyze_ranks(sorted((DATA / "ranks" / job).glob("*.gmtrace")))
        page, _, _ = ranks_page(a)
        kinds[job] = _verdict_class(page)
        nets = [s.net_ns for s in a.ranks]
        assert all(n is not None for n in nets)
        expected = "not-yet" if any(n < 0 for n in nets) else "paid-back"  # type: ignore[operator]
        assert expected in kinds[job], (job, nets, kinds[job])
    # the DDP job's graph costs 42.7-44.0 ms once and saves 2.4 ms a replay: 10 replays lost time on both ranks
    assert "not-yet" in kinds["ddp_graph"] and "paid-back" in kinds["allreduce_graph"]
    assert all(sum(k in VERDICT_KINDS for k in c) == 1 for c in kinds.values())
