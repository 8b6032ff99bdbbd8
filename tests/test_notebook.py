"""Jupyter: `TraceHandle` / `Comparison` render the report and the interactive page inline."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from browser import Chromium, find_chromium

from graphmode.api import TraceHandle
from tests.conftest import DATA


def test_trace_handle_renders_report_and_timeline_inline() -> None:
    page = TraceHandle(DATA / "chain-node.gmtrace")._repr_html_()
    assert "pays back after" in page  # the report's headline, as HTML
    frame = re.search(r'<iframe srcdoc="(.*?)"', page, re.S)
    assert frame, "the interactive page is embedded"
    inner = html.unescape(frame.group(1))
    assert "id='gm-spans'" in inner and "id='gm-plotly'" in inner and "GMTimeline" in inner
    assert "timeline unavailable" not in page
    assert 'sandbox="allow-scripts"' in page


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium (Debian: apt-get install chromium)")
def test_inline_page_draws_in_its_sandboxed_frame(tmp_path: Path) -> None:
    """The notebook's sandboxed frame has an opaque origin: the page must still inflate and draw there."""
    out = tmp_path / "cell.html"
    out.write_text("<!DOCTYPE html><html><body>" + TraceHandle(DATA / "chain-node.gmtrace")._repr_html_() + "</body></html>")
    with Chromium() as browser:
        browser.send("Page.navigate", url=out.resolve().as_uri())
        browser.pump(1.0)
        # below the report, as in a notebook: Chromium gives an offscreen frame no animation frames until it is seen
        browser.evaluate("document.querySelector('iframe').scrollIntoView()")
        browser.pump(2.0)
        assert browser.frames, "the page's frame was not attached"
        state = None
        for _ in range(100):
            state = browser.evaluate("window.graphmode ? [window.graphmode.timelines, window.graphmode.kernelSpansDrawn] : null",
                                     browser.frames[0])
            if state:
                break
            browser.pump(0.2)
        assert state is not None and state[0] >= 3 and state[1] > 0, state
        assert browser.errors == []


def test_a_loaded_trace_renders_inline_as_the_handle_does() -> None:
    """`graphmode.load(...)` in a notebook cell showed `Trace(...)`; it now shows what the handle shows."""
    import graphmode

    with graphmode.load(DATA / "chain-node.gmtrace") as trace:
        page = trace._repr_html_()
        text = repr(trace)
    assert page == TraceHandle(DATA / "chain-node.gmtrace")._repr_html_()  # one renderer: reports.notebook
    assert "pays back after" in page and 'sandbox="allow-scripts"' in page and "timeline unavailable" not in page
    assert "\n" not in text and len(text) < 200
    assert text.startswith(f"Trace({str(DATA / 'chain-node.gmtrace')!r}, workload='chain', status='complete', passes=")
    after = trace._repr_html_()  # closed: says so instead of raising inside the notebook
    assert "closed" in repr(trace) and "reopen it with graphmode.load" in after and "<iframe" not in after
