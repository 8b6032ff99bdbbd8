"""plotly.js for a page: only the trace types its figures use, started in steps of one main-thread task each.

Run as shipped (plotly.py's `get_plotlyjs()`, plotly.js 4.x built by esbuild), plotly.js takes one main-thread
task of ~0.9 s on a 2-core VM before it can draw anything: its UMD wrapper passes the whole bundle as a
parenthesised function, which V8 compiles eagerly on the main thread, and its entry registers all 47 trace
types at once (the `image` trace alone ~0.4 s). A page freezes for that long wherever the reader is.

So the bundle is rewritten here, once per process:
- without the UMD wrapper, and loaded from a blob: URL (Chromium compiles such a script off the main thread);
- its entry, `core(); core.register([every trace type])`, becomes a list of steps, plotly's core (which holds
  the scatter trace) and then one per trace type the page's figures use, which assets/charts.js runs one per
  idle callback. Trace types the page does not use are never run.

Where the bundle does not have that shape (another plotly.js version), the page gets it unchanged and starts
it in one task, as before; tests/test_html_tasks.py checks that the installed plotly.py's bundle is stepped.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from graphmode.reports.output import write_output

# The esbuild IIFE's entry: var E=W((a,b)=>{var C=core();C.register([t1(),t2(),...]);b.exports=C});return E();})();
# (W: esbuild's CommonJS wrapper, whatever the minifier named it).
_ENTRY = re.compile(r"var ([\w$]+)=([\w$]+)\(\(([\w$]+),([\w$]+)\)=>\{var ([\w$]+)=([\w$]+)\(\);\5\.register\(\[([^\]]*)\]\);"
                    r"\4\.exports=\5\}\);return \1\(\);\}\)\(\);")
_IIFE = '"use strict";var Plotly=(()=>{'
_UMD_TAIL = "window.Plotly = Plotly;\nreturn Plotly;\n}));"
CORE_TRACES = frozenset({"scatter"})  # registered by plotly's core itself


@dataclass(frozen=True)
class PlotlyBundle:
    gzip_b64: str  # the script, gzipped and base64-encoded for an application/octet-stream block
    stepped: bool  # True: it defines window.GMPlotlyBoot {steps, done}; False: plotly.js as shipped


def trace_types(figures: Iterable[dict[str, Any] | None]) -> frozenset[str]:
    """Every plotly trace type the figures draw (a trace without a type is a scatter)."""
    return frozenset(str(t.get("type", "scatter")) for f in figures if f for t in f.get("data", ()))


def _module_texts(js: str, helper: str) -> tuple[dict[str, int], list[int]]:
    """Where each CommonJS module of the bundle starts: its variable name -> offset, and the sorted offsets."""
    starts = {m.group(1): m.start(1) for m in re.finditer(r"[ ,;]([\w$]+)=" + re.escape(helper) + r"\(", js)}
    return starts, sorted(starts.values())


def _registered_names(js: str, helper: str, thunks: list[str]) -> dict[str, str]:
    """trace or component name -> the entry's thunk that registers it, read from each thunk's module text (a
    `lib/<name>.js` wrapper requiring the trace's index, whose exports hold moduleType and name)."""
    starts, offsets = _module_texts(js, helper)

    def text(name: str) -> str:
        s = starts[name]
        k = bisect.bisect_right(offsets, s)
        return js[s: offsets[k] if k < len(offsets) else len(js)]

    def name_of(mod: str, depth: int = 0) -> str | None:
        t = text(mod)
        if re.search(r'moduleType:"(?:trace|component)"', t):
            m = re.search(r'name:"(\w+)"', t)
            return m.group(1) if m else None
        inner = re.search(r"=([\w$]+)\(\)", t)  # a wrapper: follow what it requires
        if depth >= 3 or inner is None or inner.group(1) not in starts:
            return None
        return name_of(inner.group(1), depth + 1)

    out: dict[str, str] = {}
    for thunk in thunks:
        if thunk not in starts:
            return {}
        name = name_of(thunk)
        if name is None or name in out:
            return {}
        out[name] = thunk
    return out


def stepped_bundle(js: str, types: frozenset[str]) -> str | None:
    """The bundle rewritten to start in steps (module docstring), or None where it does not have the shape."""
    header_end = js.find("*/")
    start, tail = js.find(_IIFE), js.rfind(_UMD_TAIL)
    entry = _ENTRY.search(js)
    if header_end < 0 or start < 0 or tail < start or entry is None or entry.start() < start:
        return None
    thunks = [a.strip()[:-2] for a in entry.group(7).split(",") if a.strip().endswith("()")]
    names = _registered_names(js, entry.group(2), thunks)
    wanted = sorted(types - CORE_TRACES)
    if not names or any(t not in names for t in wanted):
        return None
    core = entry.group(6)
    steps = ",".join([f"()=>{{gmCore={core}()}}"] + [f"()=>gmCore.register([{names[t]}()])" for t in wanted])
    boot = f"var gmCore;return {{steps:[{steps}],done:()=>gmCore}};}})();"  # no minified name starts with gm
    body = js[start:entry.start()] + boot + js[entry.end():tail]
    return js[:header_end + 2] + "\n" + body.replace(_IIFE, '"use strict";window.GMPlotlyBoot=(()=>{', 1)


# Bump where what plotly_bundle makes of a given plotly.js changes: a cached bundle of another format is not read.
BUNDLE_FORMAT = 1


def cache_dir() -> Path | None:
    """Where packed bundles are kept between runs: $GRAPHMODE_CACHE_DIR, else $XDG_CACHE_HOME/graphmode
    (~/.cache/graphmode); None where GRAPHMODE_CACHE_DIR is '0' or 'off' (no cache)."""
    given = os.environ.get("GRAPHMODE_CACHE_DIR")
    if given is not None and given.strip().lower() in ("0", "off"):
        return None
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "graphmode"


@lru_cache(maxsize=8)
def plotly_bundle(types: frozenset[str]) -> PlotlyBundle:
    """plotly.js for a page whose figures use `types`, gzipped (4.8 MB of script becomes about 1.9 MB). Rewriting and
    compressing it took 0.31 s of a CuPy script's page (session 36), every run: the result is kept in cache_dir(),
    named by a hash of plotly.js itself, `types` and BUNDLE_FORMAT, and made again where it cannot be read (a cache
    that cannot be written costs nothing but the time)."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    key = hashlib.sha256(f"{BUNDLE_FORMAT}\n{sorted(types)}\n".encode() + js.encode("utf-8")).hexdigest()[:32]
    where = cache_dir()
    path = where / f"plotly-{key}.txt" if where is not None else None
    if path is not None:
        try:
            head, packed = path.read_text(encoding="ascii").split("\n", 1)
            flag, digest = head.split(" ")
            if flag in ("stepped", "shipped") and hashlib.sha256(packed.encode("ascii")).hexdigest() == digest:
                return PlotlyBundle(packed, flag == "stepped")
        except (OSError, ValueError, UnicodeError, IndexError):
            pass  # absent, unreadable or not whole: made again below
    stepped = stepped_bundle(js, types)
    code = stepped if stepped is not None else js
    packed = base64.b64encode(gzip.compress(code.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")
    if path is not None:
        flag = "stepped" if stepped is not None else "shipped"
        try:  # whole or not at all (reports.output); two runs writing it at once leave at worst a file whose digest fails
            path.parent.mkdir(parents=True, exist_ok=True)
            write_output(path, f"{flag} {hashlib.sha256(packed.encode('ascii')).hexdigest()}\n{packed}")
        except OSError:
            pass
    return PlotlyBundle(packed, stepped is not None)
