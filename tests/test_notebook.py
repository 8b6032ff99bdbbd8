"""Jupyter: `TraceHandle` / `Comparison` render the report and the interactive page inline."""

from __future__ import annotations

import html
import re

from graphmode.api import TraceHandle
from tests.conftest import DATA


def test_trace_handle_renders_report_and_timeline_inline() -> None:
    page = TraceHandle(DATA / "chain-node.gmtrace")._repr_html_()
    assert "pays back after" in page  # the report's headline, as HTML
    frame = re.search(r'<iframe srcdoc="(.*?)"', page, re.S)
    assert frame, "the interactive page is embedded"
    inner = html.unescape(frame.group(1))
    assert "Plotly.newPlot" in inner or "plotly" in inner.lower()
    assert "timeline unavailable" not in page
    assert 'sandbox="allow-scripts"' in page
