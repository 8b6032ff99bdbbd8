"""The page's plotly.js is rewritten and compressed once per plotly.js, trace types and format, then kept on disk
(reports.html_plotly.plotly_bundle): 0.31 s of every `graphmode run`'s page otherwise (session 36). A cache that is
absent, not whole, unreadable or off costs only that time."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmode.reports import html_plotly
from graphmode.reports.html_plotly import cache_dir, plotly_bundle

TYPES = frozenset({"scatter", "histogram"})


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    plotly_bundle.cache_clear()  # the process's own memo, so that each call here reads or writes the disk
    yield
    plotly_bundle.cache_clear()


def _made_fresh(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the compressions plotly_bundle makes (each one a bundle made, not read)."""
    made: list[int] = []
    real = gzip.compress

    def counting(data: bytes, *a: object, **k: object) -> bytes:
        made.append(len(data))
        return real(data, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(html_plotly.gzip, "compress", counting)
    return made


def test_a_bundle_is_made_once_and_read_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path / "cache"))
    made = _made_fresh(monkeypatch)
    first = plotly_bundle(TYPES)
    (kept,) = (tmp_path / "cache").glob("plotly-*.txt")
    plotly_bundle.cache_clear()
    again = plotly_bundle(TYPES)
    assert again == first and first.stepped and len(made) == 1  # the second read, not made
    assert kept.read_text(encoding="ascii").split("\n", 1)[1] == first.gzip_b64
    plotly_bundle.cache_clear()
    other = plotly_bundle(frozenset({"scatter"}))  # other trace types: another bundle, another file
    assert other.gzip_b64 != first.gzip_b64 and len(made) == 2 and len(list((tmp_path / "cache").glob("plotly-*"))) == 2


@pytest.mark.parametrize("damage", ["truncated", "digest", "empty", "binary"])
def test_a_cached_bundle_that_is_not_whole_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         damage: str) -> None:
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path))
    made = _made_fresh(monkeypatch)
    good = plotly_bundle(TYPES)
    (kept,) = tmp_path.glob("plotly-*.txt")
    text = kept.read_text(encoding="ascii")
    kept.write_bytes({"truncated": text[: len(text) // 2].encode(), "digest": text.replace(text[8:12], "0000", 1).encode(),
                      "empty": b"", "binary": b"\xff\xfe\x00stepped"}[damage])
    plotly_bundle.cache_clear()
    assert plotly_bundle(TYPES) == good and len(made) == 2  # made again, the same bundle
    assert kept.read_text(encoding="ascii") == text  # and kept whole again


def test_no_cache_where_it_is_off_or_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", "off")
    assert cache_dir() is None
    made = _made_fresh(monkeypatch)
    a = plotly_bundle(TYPES)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(blocked))  # mkdir fails: the page is still made
    plotly_bundle.cache_clear()
    assert plotly_bundle(TYPES) == a and len(made) == 2 and blocked.read_text() == "not a folder"
    assert not list(tmp_path.glob(".plotly-*")) and not list(tmp_path.glob("plotly-*"))
    assert not list(tmp_path.rglob("*.partial"))  # nothing half-written left behind


def test_the_cache_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHMODE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "graphmode"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "graphmode"
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", "0")
    assert cache_dir() is None
