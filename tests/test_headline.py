"""One verdict everywhere: on every committed recording, the JSON's headline sentence is what the terminal prints and
what the page shows; its verdict and graph ids agree with the analysis; no cost is below zero; the terminal's summary
fits 80 columns without cutting a number."""

from __future__ import annotations

import html
import lzma
from pathlib import Path

import pytest
from rich.console import Console

from graphmode.analyzers import analyze
from graphmode.analyzers.headline import VERDICTS
from graphmode.reports.headline import sentence
from graphmode.reports.json_report import report_dict
from graphmode.reports.terminal import print_report
from graphmode.tracer.store import load

DATA = Path(__file__).resolve().parent / "data"
RECORDINGS = sorted(p for p in DATA.rglob("*.gmtrace") if "legacy" not in p.parts and "ranks" not in p.parts)
PACKED = sorted(DATA.rglob("*.gmtrace.xz"))


def _open(path: Path, tmp_path: Path) -> Path:
    if path.suffix == ".xz":
        out = tmp_path / path.name[:-3]
        out.write_bytes(lzma.decompress(path.read_bytes()))
        return out
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("path", RECORDINGS + PACKED, ids=lambda p: str(p.relative_to(DATA)))
def test_the_headline_is_one_verdict_in_terminal_json_and_page(path: Path, tmp_path: Path) -> None:
    from graphmode.views import html_page

    with load(_open(path, tmp_path)) as t:
        a = analyze(t)
        page, _ = html_page(t, a)
    h = a.headline
    assert h is not None and h.verdict in VERDICTS
    d = report_dict(a)["headline"]
    assert d["verdict"] == h.verdict and d["sentence"] == sentence(a) and d["sentence"]
    # the graph ids it names are graphs of the run, and a step's are the step's
    ids = {g.graph_id for g in a.graphs}
    assert set(h.graph_ids) <= ids
    if h.subject == "step":
        step = next(s for s in a.steps if s.step_id == h.step_id)
        assert step.graphs == h.graph_ids and h.saved_ns == step.saved_ns
    # no cost below zero, anywhere the headline or a step states one
    assert h.one_time_ns is None or h.one_time_ns >= 0
    assert all(s.one_time_ns is None or s.one_time_ns >= 0 for s in a.steps)
    if a.prediction is not None:
        for r in a.prediction.regions:
            for e in (r.capture, r.instantiate, r.upload, r.first_launch_excess, r.one_time):
                assert e is None or min(e.ns, e.low_ns, e.high_ns) >= 0
    # the terminal prints the sentence, and so does the page
    console = Console(width=80, record=True)
    print_report(a, console, detail=False)
    text = console.export_text()
    assert _flat(d["sentence"]) in _flat(text)
    assert html.escape(d["sentence"]) in page or _flat(html.escape(d["sentence"])) in _flat(page)
    # at 80 columns, the summary table cuts no cell (rich marks a cut cell with an ellipsis)
    table = text.split("Steps and graphs (trimmed means)")[1].split("replays: graphed steps")[0] if a.graphs else ""
    assert "…" not in table
