"""Every command's --help: one to three lines an option, `graphmode run --help` within 60 lines (issue 32).

`graphmode run --help` was 97 lines at 80 columns, its --runs entry 40: the explanation is in docs/design.md
("graphmode run: the runs it makes"), and the help keeps a line and the pointer. Checked at 80 and 100 columns,
in-process (typer's CliRunner) and as a subprocess, as a person's terminal shows it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmode.cli import app

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ["info", "bench", "demo", "report", "view", "export", "run", "calibrate"]
MAX_ENTRY_LINES = 3
MAX_RUN_HELP_LINES = 60


def entries(help_text: str) -> dict[str, list[str]]:
    """The lines of each argument's and option's entry, by its first line's name: an entry starts two spaces in
    (under 'Arguments:' or 'Options:'), its help goes on further in; a name too long for its column takes a line
    of its own, which counts."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    section = ""
    for line in help_text.splitlines():
        if re.fullmatch(r"[A-Z][a-z]+:", line.strip()) and not line.startswith(" "):
            section, current = line.strip(), None
        elif section in ("Arguments:", "Options:") and re.match(r"  \S", line):
            current = out.setdefault(line.split()[0], [line])
        elif current is not None and line.startswith("   ") and line.strip():
            current.append(line)
        else:
            current = None
    return out


def _in_process(command: str, width: int) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": str(width)}, terminal_width=width)
    assert result.exit_code == 0, result.output
    return result.output


def _subprocess(command: str, width: int) -> str:
    proc = subprocess.run([sys.executable, "-m", "graphmode", *([command] if command else []), "--help"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": str(width)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_every_command_has_one_to_three_lines_of_help(command: str, width: int) -> None:
    text = _in_process(command, width)
    found = entries(text)
    assert "--help" in found and len(found) >= 2, text  # the parser found the entries
    long = {name: lines for name, lines in found.items() if len(lines) > MAX_ENTRY_LINES}
    assert long == {}, "\n".join(line for lines in long.values() for line in lines)
    assert max(len(line) for line in text.splitlines()) <= width


@pytest.mark.parametrize("width", [80, 100])
def test_run_help_is_at_most_60_lines_and_points_to_the_explanation(width: int) -> None:
    for text in (_in_process("run", width), _subprocess("run", width)):
        lines = text.splitlines()
        assert len(lines) <= MAX_RUN_HELP_LINES, f"{len(lines)} lines:\n{text}"
        assert all(len(lines) <= MAX_ENTRY_LINES for lines in entries(text).values())
        flat = " ".join(text.split())
        assert "docs/design.md" in " ".join(entries(text)["--runs"])
        assert '"graphmode run: the runs it makes"' in flat
    design = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    assert "\n### graphmode run: the runs it makes\n" in design  # the section the help points to exists
    for choice in ("| `2` |", "| `auto` (default) |", "| `1` |"):
        assert choice in design


def test_the_top_level_help_lists_every_command() -> None:
    text = _subprocess("", 80)
    assert all(re.search(rf"^  {name}\s", text, re.M) for name in COMMANDS), text
