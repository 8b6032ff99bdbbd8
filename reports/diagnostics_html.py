"""HTML of the diagnostics (pitfalls) and the CPU profile for `graphmode view`. Computes nothing.

Every string from the trace is escaped. pyinstrument's own interactive page is embedded in a
sandboxed iframe (`srcdoc`, attribute-escaped), so its script and styles cannot touch ours. The
page goes in gzipped (a profile's session is mostly JSON: several MB that compress about tenfold);
a few lines of script in the frame inflate it with the browser's DecompressionStream. A sandboxed
frame has an opaque origin, where touching localStorage throws, and pyinstrument's app reads its
settings from localStorage: the frame gets an in-memory stand-in first. pyinstrument's app also
adds a stylesheet link to Google Fonts; the page opens offline and asks nothing of the network, so
the frame drops links to other sites (the profile falls back to system fonts).
"""

from __future__ import annotations

import base64
import gzip
import html
from typing import Any

from graphmode.analyzers.results import CpuProfile, Pitfall
from graphmode.reports.diagnostics_text import CATEGORY_LABELS
from graphmode.reports import pitfall_words
from graphmode.reports.units import human_ns


def diagnostics_html(pitfalls: tuple[Pitfall, ...]) -> str:
    """The body of the 'Diagnostics' section ('' when nothing was found)."""
    if not pitfalls:
        return ""
    items = []
    for p in pitfalls:
        where = f"<p class='where'>where: <code>{html.escape(p.where)}</code></p>" if p.where else ""
        items.append(
            f"<div class='pitfall {html.escape(p.severity)}'><h3>{html.escape(p.severity)}: {html.escape(pitfall_words.title(p))}</h3>"
            f"<p>{html.escape(pitfall_words.evidence(p))}</p>{where}<p class='advice'>What to do: {html.escape(pitfall_words.advice(p))}</p></div>")
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
    rows = "".join(f"<tr><th>{html.escape(CATEGORY_LABELS.get(c.name, c.name))}</th><td class='num'>{human_ns(c.ns)}</td>"
                   f"<td class='num'>{100 * c.fraction:.0f}%</td></tr>" for c in prof.categories if c.ns > 0)
    if prof.cuda_api_ns is not None:
        rows += ("<tr><th>in CUDA driver/runtime calls (CUPTI, included above)</th>"
                 f"<td class='num'>{human_ns(prof.cuda_api_ns)}</td><td></td></tr>")
    lines = "".join(f"<tr><td><code>{html.escape(f.location)}</code> {html.escape(f.function)}</td><td class='num'>{human_ns(f.ns)}</td></tr>"
                    for f in prof.top_user_lines[:10])
    body = (f"<p class='hint'>pyinstrument, {prof.samples:,} samples over {human_ns(prof.duration_ns)}; time in a C extension "
            "counts for the Python line that called it.</p>"
            f"<table class='headline cells'><tr><th>kind of code</th><th>CPU time</th><th>share</th></tr>{rows}</table>")
    if lines:
        body += ("<h3>Your lines with the most CPU time</h3>"
                 f"<table class='headline cells'><tr><th>line</th><th>CPU time, callees included</th></tr>{lines}</table>")
    page = pyinstrument_page(session) if session is not None else None
    if page is not None:
        body += ("<h3>pyinstrument's call tree</h3><iframe class='pyinstrument' title='pyinstrument profile' "
                 f"sandbox='allow-scripts' srcdoc=\"{html.escape(profile_frame(page), quote=True)}\"></iframe>")
    return body


# Storage in memory for a frame whose opaque origin forbids localStorage and sessionStorage; no requests to other sites.
_STORAGE_SHIM = """<script>(function () {
  function memory() {
    var items = {};
    return { getItem: function (k) { return Object.prototype.hasOwnProperty.call(items, k) ? items[k] : null; },
             setItem: function (k, v) { items[k] = String(v); }, removeItem: function (k) { delete items[k]; },
             clear: function () { items = {}; }, key: function (i) { return Object.keys(items)[i] || null; },
             get length() { return Object.keys(items).length; } };
  }
  ["localStorage", "sessionStorage"].forEach(function (name) {
    try { window[name].getItem("x"); }
    catch (e) { Object.defineProperty(window, name, { value: memory(), configurable: true }); }
  });
  var append = Node.prototype.appendChild;
  Node.prototype.appendChild = function (node) {
    if (node && node.tagName === "LINK" && /^https?:/i.test(node.href || "")) return node;  // offline: no web fonts
    return append.call(this, node);
  };
})();</script>"""

_INFLATE = """<script>
(async function () {
  var b64 = document.getElementById("gm-profile").textContent;
  var res = await fetch("data:application/octet-stream;base64," + b64);
  var page = await new Response(res.body.pipeThrough(new DecompressionStream("gzip"))).text();
  document.open(); document.write(page); document.close();
})().catch(function (e) { document.getElementById("gm-msg").textContent = "The profile could not be shown: " + e; });
</script>"""


def profile_frame(page: str) -> str:
    """A small document that inflates pyinstrument's page (gzip, base64) and writes it in its place."""
    shimmed = page.replace("<head>", "<head>" + _STORAGE_SHIM, 1) if "<head>" in page else _STORAGE_SHIM + page
    payload = base64.b64encode(gzip.compress(shimmed.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>" + _STORAGE_SHIM + "</head><body>"
            "<p id='gm-msg' style='font:13px system-ui'>Loading the profile…</p>"
            f"<script type='application/octet-stream' id='gm-profile'>{payload}</script>{_INFLATE}</body></html>")
