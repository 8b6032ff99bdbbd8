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
