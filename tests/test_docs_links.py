"""The README and the docs point at files that exist: every relative Markdown link and image, and no path into the
dated result folders that moved to benchmarks/notes/ (issue 32)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "results" / "README.md",
         REPO / "benchmarks" / "notes" / "history.md"]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_no_path_into_the_moved_result_folders() -> None:
    moved = "benchmarks/results/" + "2026-"  # the dated folders now under benchmarks/notes/
    folders = ("docs", "benchmarks", "tests", "tracer", "analyzers", "reports", "graphmode", "examples")
    files = [REPO / "README.md", *(p for d in folders for p in (REPO / d).rglob("*")
                                   if p.suffix in (".md", ".py", ".sh") and p.is_file())]
    offenders = [str(p.relative_to(REPO)) for p in files if moved in p.read_text(encoding="utf-8", errors="replace")]
    assert offenders == []
    assert not any((REPO / "benchmarks" / "results").glob("2026-*"))
