"""The house's layers, read from the source (ast, nothing imported): tracer < analyzers < reports < the front door
(graphmode/: the CLI and the Python API). An import may point down or sideways within a layer, never up; no two of
our modules import each other, directly or round a loop; and our own modules are imported at the top of a module,
except where ALLOWED_LOCAL says why not (docs/design.md, "Layers").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

# The checkout's folders and the names they install as (pyproject.toml's package-dir).
PACKAGES = {"graphmode": "graphmode", "tracer": "graphmode.tracer", "analyzers": "graphmode.analyzers",
            "reports": "graphmode.reports"}
LAYER = {"graphmode.tracer": 0, "graphmode.analyzers": 1, "graphmode.reports": 2}  # anything else in graphmode: 3
LAYER_NAMES = ("tracer", "analyzers", "reports", "front door")

# Function-local imports of our own modules that stay, by importing module (and, where only some do, the module
# imported), each with its reason.
ALLOWED_LOCAL: dict[tuple[str, str], str] = {
    ("graphmode.cli", "*"): "each command imports what it needs, so that `graphmode --help` and `graphmode info` start "
                            "without numpy, DuckDB, plotly or the analyzers (tests/test_store_cli.py times them)",
    ("graphmode.ranks_cli", "*"): "the rank commands of the CLI, lazy for the same reason as graphmode.cli",
    ("graphmode.api", "*"): "reaching `graphmode.trace` loads this module alone: the API loads the GPU stack, the "
                            "analyzers and the reports when one of its functions is called",
    ("graphmode.views", "*"): "the views a command or a notebook object renders: `graphmode.load` and `graphmode.compare`'s "
                              "objects reach them only when Jupyter asks them to render, and load nothing until then",
    ("graphmode.notebook", "*"): "`graphmode.load` costs what the trace store costs: a loaded trace imports the "
                                 "analyzers and the notebook renderer only when Jupyter asks it to render itself",
    # `python -m graphmode.tracer.calibrate --probe` runs this module in fresh processes: a bare probe process loads
    # none of the recording stack, a '--probe-program' one imports it on purpose (to be set up like a recorded one)
    ("graphmode.tracer.calibrate", "graphmode.tracer.runner"): "the probe processes: the recording stack stays out of a "
                                                               "bare one, and a '--probe-program' one imports it",
    ("graphmode.tracer.calibrate", "graphmode.tracer.cupti_session"): "the probe processes: CUPTI's session is the "
                                                                      "calibration's last step, never a probe's",
    ("graphmode.tracer.calibrate", "graphmode.tracer.decode"): "the probe processes, as for cupti_session",
    ("graphmode.tracer.calibrate", "graphmode.tracer.launch_probes"): "the probe processes, as for cupti_session (the "
                                                                      "launch probes load CUPTI's session)",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    local: bool  # inside a function (or a class body), not at module level


def modules() -> dict[str, Path]:
    """Our modules by installed name, from the checkout's four folders."""
    out: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            out[".".join((package, *parts))] = path
    return out


def _module_level(tree: ast.Module) -> set[int]:
    """ids of the import nodes that run when the module is imported: at top level, or under a top-level if/try
    (`if TYPE_CHECKING:`, an optional dependency)."""
    found: set[int] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.If, ast.Try)):
            found.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return found


def imports(mods: dict[str, Path]) -> Iterator[Import]:
    """Every import of one of our modules by another, resolved to the module it loads (a name imported from a
    package is the package's submodule where one exists by that name)."""
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        top = _module_level(tree)
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            for target in targets:
                while target not in mods and "." in target:
                    target = target.rpartition(".")[0]
                if target in mods and target != name:
                    yield Import(name, target, node.lineno, id(node) not in top)


def layer(module: str) -> int:
    return next((n for prefix, n in LAYER.items() if module == prefix or module.startswith(prefix + ".")), 3)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth: the longest import chain, tens
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


MODS = modules()
IMPORTS = list(imports(MODS))


def test_the_source_is_read_whole() -> None:
    """Not a vacuous pass: every layer has its modules, and imports between them are found."""
    per_layer = {n: sum(1 for m in MODS if layer(m) == n) for n in range(4)}
    assert all(count >= 3 for count in per_layer.values()), per_layer
    assert len(IMPORTS) > 200
    assert "graphmode.reports.units" in {i.imported for i in IMPORTS if i.importer == "graphmode.reports.terminal"}
    assert any(i.local for i in IMPORTS if i.importer == "graphmode.cli")  # lazy imports are seen as such


def test_no_import_points_up_the_layers() -> None:
    """tracer records, analyzers compute from the trace, reports present an analysis, the front door wires them:
    a lower layer never imports a higher one (not even inside a function)."""
    upward = sorted(f"{i.importer}:{i.line} ({LAYER_NAMES[layer(i.importer)]}) imports {i.imported} "
                    f"({LAYER_NAMES[layer(i.imported)]})" for i in IMPORTS if layer(i.imported) > layer(i.importer))
    assert upward == []


def test_no_import_cycle_among_our_modules() -> None:
    """Every import counts, function-local ones too: a cycle hidden inside a function is still a cycle."""
    edges: dict[str, set[str]] = {}
    for i in IMPORTS:
        edges.setdefault(i.importer, set()).add(i.imported)
    assert cycles(edges) == []


def test_cycle_finder_finds_a_known_cycle() -> None:
    """SYNTHETIC graph: a -> b -> c -> a and c -> d."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_our_modules_are_imported_at_the_top_unless_allowed() -> None:
    """A function-local import of our own module hides a cycle or a layer breach; the few that stay say why."""
    stray = sorted(f"{i.importer}:{i.line} imports {i.imported} inside a function" for i in IMPORTS
                   if i.local and (i.importer, "*") not in ALLOWED_LOCAL and (i.importer, i.imported) not in ALLOWED_LOCAL)
    assert stray == []
    used = {(i.importer, "*") for i in IMPORTS if i.local} | {(i.importer, i.imported) for i in IMPORTS if i.local}
    assert set(ALLOWED_LOCAL) <= used, f"allowed but no longer there: {sorted(set(ALLOWED_LOCAL) - used)}"
