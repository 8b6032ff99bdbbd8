"""Jupyter: `TraceHandle` / `Comparison` render the report and the interactive page inline."""

from __future__ import annotations

import html
import json
import re

from graphmode.api import TraceHandle
from tests.conftest import DATA


def test_trace_handle_renders_report_and_timeline_inline() -> None:
    page = TraceHandle(DATA / "chain-node.gmtrace")._repr_html_()
    assert "pays back after" in page  # the report's headline, as HTML
    frame = re.search(r'<iframe srcdoc="(.*?)"', page, re.S)
    assert frame, "the interactive page is embedded"
    inner = html.unescape(frame.group(1))
    # The embedded page draws this trace: its data block names the eager iteration, the graph replay,
    # the full-run timeline and the break-even chart (plotly.js alone, inlined, would not).
    payload = json.loads(inner.split("id='gm-data'>")[1].split("</script>")[0])
    assert {p["div"] for p in payload["plots"]} >= {"gm-iter-0", "gm-iter-1", "gm-timeline-full", "gm-break-even"}
    assert all(p["figure"]["data"] for p in payload["plots"])
    assert "timeline unavailable" not in page
    assert 'sandbox="allow-scripts"' in page
