"""How the reports write a duration: one formatter for every view."""

from __future__ import annotations


def human_ns(ns: float | None) -> str:
    """A duration in the unit a person reads best: ns, us, ms or s."""
    if ns is None:
        return "—"
    a = abs(ns)
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.2f} us" if a < 1e4 else f"{ns / 1e3:.1f} us"
    if a < 1e9:
        return f"{ns / 1e6:.2f} ms" if a < 1e7 else f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e9:.2f} s"


def short_ns(ns: float) -> str:
    """A duration inside a sentence: '3.2 ms' or '850 us' (three significant digits)."""
    return f"{ns / 1e6:.3g} ms" if ns >= 1e6 else f"{ns / 1e3:.3g} us"


def diagnostic_us(ns: float | None) -> str:
    """A duration in a diagnostic's evidence: '12.3 us' below 10 ms, else '12.3 ms'; '?' when unknown."""
    if ns is None:
        return "?"
    return f"{ns / 1e3:,.1f} us" if abs(ns) < 1e7 else f"{ns / 1e6:,.1f} ms"
