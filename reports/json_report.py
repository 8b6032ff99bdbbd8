"""`graphmode report --json`: the analysis as stable, versioned JSON (reports/report.schema.json).

Bump REPORT_SCHEMA_VERSION when a field is renamed or removed or its meaning changes; adding a
field is compatible. Durations are nanoseconds; a metric that cannot be computed is null and
`cannot_compute` says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphmode.analyzers import TraceAnalysis, to_dict
from graphmode.reports import pitfall_words
from graphmode.reports.headline import headline_dict
from graphmode.reports.notes import API_WORDS, word
from graphmode.tracer.version import __version__

REPORT_SCHEMA_VERSION = 2  # 2: the analysis's notes are {kind, values, text} (docs/metrics.md, Notes)
SCHEMA_PATH = Path(__file__).with_name("report.schema.json")
output_file_extension = "json"


def report_dict(analysis: TraceAnalysis) -> dict[str, Any]:
    """The JSON report as builtins: schema_version, tool_version, then every field of the analysis."""
    out = {"schema_version": REPORT_SCHEMA_VERSION, "tool_version": __version__, "units": "ns", **to_dict(analysis, word)}
    out["headline"] = headline_dict(analysis)  # with its sentence, as the terminal and the page word it
    for d, p in zip(out["pitfalls"], analysis.pitfalls):  # its words, as the terminal and the page print them
        d.update(title=pitfall_words.title(p), evidence=pitfall_words.evidence(p), advice=pitfall_words.advice(p))
    for region in (out["prediction"] or {}).get("regions", []):  # what to do about each capture breaker
        for b in region["breakers"]:
            b["advice"] = pitfall_words.BREAKER_ADVICE[b["kind"]]
        if region.get("advice"):  # the capture API in words
            region["advice"]["api_text"] = API_WORDS.get(region["advice"]["api"], "")
    return out


def render_json(analysis: TraceAnalysis) -> str:
    return json.dumps(report_dict(analysis), indent=2, allow_nan=False) + "\n"


def load_schema() -> dict[str, Any]:
    schema = json.loads(SCHEMA_PATH.read_text())
    assert isinstance(schema, dict)
    return schema
