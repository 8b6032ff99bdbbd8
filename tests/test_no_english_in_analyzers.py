"""Numbers in the analysis, words in the report (STYLE.md): no analyzer returns an English sentence.

Parses analyzers/*.py and fails on any string constant or f-string that reads like a sentence (three or
more words of letters separated by spaces), outside docstrings, SQL, regular expressions that read another
program's text, exception messages (`raise X("...")`: an error is not a result) and the allow-lists below,
each with its reason. An analyzer says what it found with a Note (analyzers/notes.py); reports/notes.py
words it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SENTENCE = re.compile(r"[A-Za-z]+ [A-Za-z]+ [A-Za-z]+")
# SQL: a statement, a query, a select list's column, or an expression casting a column (analyzers.timeline's lane keys)
SQL = re.compile(r"^\s*(SELECT|WITH|INSERT|CREATE|UPDATE|DELETE|DROP|PRAGMA)\b|\bSELECT\b[\s\S]*\bFROM\b|^\s*(--|,\s*\w+ AS \()"
                 r"|\bCAST\(\w+ AS [A-Z]+\)")

# Strings that look like sentences but are not words for a person: (module, the string's start) -> why.
ALLOWED: dict[tuple[str, str], str] = {
    ("torch_graphs.py", "control flow operator"): "words searched for in PyTorch's own skip message (data, not output)",
    ("torch_diagnostics.py", "overwritten by a subsequent run"): "words searched for in PyTorch's exception message",
    # A label is a name every view shows as is (and a key across ranks), like a recorded graph's own label; these are
    # the names given when the trace recorded none. Words to convert if labels ever become notes.
    ("per_graph.py", "graph {} (executable id"): "a graph's label (its name) when its structure was not recorded",
    ("per_graph.py", "graph {} (built before"): "a graph's label (its name) when it was built before tracing",
    ("steps.py", "step of graph"): "a step's label (its name)",
    ("regions.py", "{} iterations doing graph"): "a region's label (its name)",
    ("coverage.py", "before the first graph"): "a phase's name (its label in every view)",
    ("collectives.py", "NCCL generic kernel"): "a collective's title (its name, as the kernel name gives it)",
    ("graph_budget.py", "device free memory"): "a code naming where the memory figure comes from (memory_source)",
    ("graph_budget.py", "did not pay back its start-up time"): "a budget row's verdict label, compared by value (to become a code)",
}

# Assignments whose strings are documentation written with a file, not notes of an analysis: (module, name) -> why.
ALLOWED_ASSIGNMENTS: dict[tuple[str, str], str] = {
    ("costmodel.py", "QUANTITIES"): "what each fitted quantity measures, written into the cost-model file as its `what`",
}

# Modules that still return English: each must still have some, so the list only shrinks. Empty since the page's
# timelines (analyzers.timeline: the selection note, the views' titles) and the rank page (analyzers.rank_page) return
# notes too; a module added here must say why and when it will be converted.
NOT_YET_CONVERTED: dict[str, str] = {}


def _skipped(tree: ast.AST, module: str) -> set[int]:
    """ids of nodes whose strings are not results: docstrings, bare string statements, exception messages,
    regular expressions, ALLOWED_ASSIGNMENTS."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and (module, t.id) in ALLOWED_ASSIGNMENTS for t in targets):
                skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            skip.update(id(n) for n in ast.walk(node.value))  # docstrings and bare strings
        elif isinstance(node, ast.Raise) and node.exc is not None:
            skip.update(id(n) for n in ast.walk(node.exc))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
              and node.func.value.id == "re"):
            skip.update(id(n) for a in node.args[:1] for n in ast.walk(a))  # a pattern over another program's text
    return skip


def sentences(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each sentence-like string of one module, f-strings with their fields as {}."""
    tree = ast.parse(path.read_text())
    skip = _skipped(tree, path.name)
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(n) for n in ast.walk(node))
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if SQL.search(text) or not SENTENCE.search(text):
            continue
        if any(path.name == m and text.startswith(start) for m, start in ALLOWED):
            continue
        out.append((node.lineno, text))
    return out


def test_the_detector_finds_a_sentence_and_spares_what_is_not_one(tmp_path: Path) -> None:
    src = tmp_path / "sample.py"
    src.write_text('"""A docstring with many words."""\n'
                   'import re\n'
                   'def f(x):\n'
                   '    """Another docstring here."""\n'
                   '    q = "SELECT a FROM b WHERE c = 1"\n'
                   '    p = re.compile(r"^Recording cudagraph tree for (.*)$")\n'
                   '    if x:\n'
                   '        raise ValueError("this is an error message")\n'
                   '    k = "snake_case_kind"\n'
                   '    lane = "\'api|\' || CAST(thread_id AS VARCHAR)"\n'
                   '    return f"graph {x} was never replayed"\n')
    assert sentences(src) == [(11, "graph {} was never replayed")]


def test_analyzers_return_no_english() -> None:
    found = {}
    for path in sorted((REPO / "analyzers").glob("*.py")):
        if path.name in NOT_YET_CONVERTED:
            continue
        for line, text in sentences(path):
            found[f"{path.name}:{line}"] = text[:90]
    assert not found, ("analyzers return sentences; return a Note (analyzers/notes.py) and word it in reports/notes.py:\n"
                       + "\n".join(f"  {k}: {v!r}" for k, v in found.items()))


def test_the_not_yet_converted_list_only_shrinks() -> None:
    done = [m for m in NOT_YET_CONVERTED if not sentences(REPO / "analyzers" / m)]
    assert not done, f"these modules no longer return English: remove them from NOT_YET_CONVERTED: {done}"
