"""HTML of the diagnostics (pitfalls) and the CPU profile for `graphmode view`. Computes nothing.

Every string from the trace is escaped. pyinstrument's own interactive page is embedded in a
sandboxed iframe through `srcdoc` (attribute-escaped), so its script and styles cannot touch ours.
"""

from __future__ import annotations

import html
from typing import Any

from graphmode.analyzers.results import CpuProfile, Pitfall
from graphmode.reports.diagnostics_text import CATEGORY_LABELS


def _us(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e3:,.1f} µs" if abs(ns) < 1e7 else f"{ns / 1e6:,.1f} ms"


def diagnostics_html(pitfalls: tuple[Pitfall, ...]) -> str:
    """The body of the 'Diagnostics' section ('' when nothing was found)."""
    if not pitfalls:
        return ""
    items = []
    for p in pitfalls:
        where = f"<p class='where'>where: <code>{html.escape(p.where)}</code></p>" if p.where else ""
        items.append(
            f"<div class='pitfall {html.escape(p.severity)}'><h3>{html.escape(p.severity)}: {html.escape(p.title)}</h3>"
            f"<p>{html.escape(p.evidence)}</p>{where}<p class='advice'>What to do: {html.escape(p.advice)}</p></div>")
    return "".join(items)


def pyinstrument_page(session: Any) -> str | None:
    """pyinstrument's own HTML for a pyinstrument Session, or None if it cannot render it."""
    try:
        from pyinstrument.renderers import HTMLRenderer

        return str(HTMLRenderer().render(session))
    except Exception:  # an old or damaged session: the summary above still stands
        return None


def cpu_profile_html(prof: CpuProfile | None, session: Any) -> str:
    """The body of the 'CPU profile' section ('' without a profile)."""
    if prof is None:
        return ""
    rows = "".join(f"<tr><th>{html.escape(CATEGORY_LABELS.get(c.name, c.name))}</th><td>{_us(c.ns)}</td>"
                   f"<td>{100 * c.fraction:.0f}%</td></tr>" for c in prof.categories if c.ns > 0)
    if prof.cuda_api_ns is not None:
        rows += f"<tr><th>in CUDA driver/runtime calls (CUPTI, included above)</th><td>{_us(prof.cuda_api_ns)}</td><td></td></tr>"
    lines = "".join(f"<tr><td><code>{html.escape(f.location)}</code> {html.escape(f.function)}</td><td>{_us(f.ns)}</td></tr>"
                    for f in prof.top_user_lines[:10])
    body = (f"<p class='hint'>pyinstrument, {prof.samples:,} samples over {_us(prof.duration_ns)}; time in a C extension "
            "counts for the Python line that called it.</p>"
            f"<table class='headline'>{rows}</table>")
    if lines:
        body += f"<h3>Your lines with the most CPU time</h3><table class='headline'>{lines}</table>"
    page = pyinstrument_page(session) if session is not None else None
    if page is not None:
        body += ("<iframe class='pyinstrument' title='pyinstrument profile' sandbox='allow-scripts' "
                 f"style='width:100%;height:600px;border:0' srcdoc=\"{html.escape(page, quote=True)}\"></iframe>")
    return body
