"""How the reports print a quantity: one definition each, used by the terminal, the page and the rank reports."""

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


def human_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    a = abs(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if a >= size:
            return f"{n / size:.1f} {unit}" if a < 100 * size else f"{n / size:.0f} {unit}"
    return f"{n} B"


def window_ms(ns: int) -> str:
    """ns as the ms `--window` takes: to the µs, without trailing zeros."""
    return f"{ns / 1e6:.3f}".rstrip("0").rstrip(".")


def short_ns(ns: float) -> str:
    """A duration inside a sentence: '3.2 ms' or '850 us' (three significant digits)."""
    return f"{ns / 1e6:.3g} ms" if ns >= 1e6 else f"{ns / 1e3:.3g} us"


def diagnostic_us(ns: float | None) -> str:
    """A duration in a diagnostic's evidence: '12.3 us' below 10 ms, else '12.3 ms'; '?' when unknown."""
    if ns is None:
        return "?"
    return f"{ns / 1e3:,.1f} us" if abs(ns) < 1e7 else f"{ns / 1e6:,.1f} ms"
