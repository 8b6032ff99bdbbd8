"""Other CUPTI users in the traced program: warn before the run, note in the trace when one ran.

CUPTI takes one subscriber per process. While graphmode traces, a profiler inside the program that
also needs CUPTI (torch.profiler's Kineto for CUDA activity, jax.profiler) cannot subscribe: Kineto
logs CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and its profile silently has no GPU events.
Two things are done about it:

- before the run, the script's source is scanned for imports of such profilers (`scan_source`),
  and the user is warned on stderr;
- while the run lasts, torch's profiler is watched (`ProfilerWatch`): its `_start_trace` (what both
  `torch.profiler.profile` and `torch.autograd.profiler.profile` call to start) is wrapped, so that
  a start is recorded as a note in the trace (meta.notes), which `graphmode info` and the report
  show. Merely importing torch is not enough: `import torch` imports torch.profiler itself.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

# module -> what it is, for the messages
CUPTI_PROFILERS = {
    "torch.profiler": "torch.profiler (Kineto)",
    "torch.autograd.profiler": "torch.autograd.profiler (Kineto)",
    "jax.profiler": "jax.profiler",
}
_TORCH_PROFILER = "torch.autograd.profiler"
WHY = ("CUPTI takes one subscriber per process and graphmode holds it while tracing, so that profiler records "
       "no GPU activity (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)")


def scan_source(path: Path) -> list[tuple[str, int]]:
    """(module, line) of each import of a CUPTI-using profiler in a script; [] if it cannot be parsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            hit = next((m for m in CUPTI_PROFILERS if name == m or name.startswith(m + ".")), None)
            if hit and (hit, line) not in found:
                found.append((hit, line))
    return sorted(found, key=lambda f: f[1])


def warning_before_run(path: Path) -> str:
    """The warning for a script that imports a CUPTI-using profiler ('' if it does not)."""
    found = scan_source(path)
    if not found:
        return ""
    where = ", ".join(f"{CUPTI_PROFILERS[m]} (line {line})" for m, line in found)
    return (f"graphmode: warning: {path.name} imports {where}. {WHY}. Profile with one tool at a time: "
            "run the script without graphmode for that profiler's trace.")


class ProfilerWatch:
    """Records starts of torch's profiler while installed; `notes()` says what they mean."""

    def __init__(self) -> None:
        self.starts: list[str] = []
        self._patched: tuple[Any, Any] | None = None
        self._finder: _PatchOnImport | None = None

    def install(self) -> None:
        module = sys.modules.get(_TORCH_PROFILER)
        if module is not None:
            self._patch(module)
        else:
            self._finder = _PatchOnImport(self._patch)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        if self._patched is not None:
            cls, original = self._patched
            cls._start_trace = original
            self._patched = None

    def _patch(self, module: ModuleType) -> None:
        cls = getattr(module, "profile", None)
        original = getattr(cls, "_start_trace", None)
        if cls is None or original is None or self._patched is not None:
            return
        watch = self

        def _start_trace(prof: Any, *args: Any, **kwargs: Any) -> Any:
            activities = getattr(prof, "kineto_activities", None) or ()
            device = getattr(prof, "use_device", None)
            if device == "cuda" or any("CUDA" in str(a) for a in activities):
                watch.starts.append("CUDA")
            else:
                watch.starts.append("CPU")
            return original(prof, *args, **kwargs)

        cls._start_trace = _start_trace
        self._patched = (cls, original)

    def notes(self) -> list[str]:
        cuda = self.starts.count("CUDA")
        if not cuda:
            return []
        return [f"the program started torch's profiler with CUDA activity {cuda} time(s) while graphmode traced it: "
                f"{WHY}; its CPU events are unaffected"]


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Calls `patch(module)` right after torch.autograd.profiler is first imported."""

    def __init__(self, patch: Any) -> None:
        self.patch = patch

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if name != _TORCH_PROFILER:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module
        patch = self.patch

        def exec_module(module: ModuleType) -> None:
            original(module)
            patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
