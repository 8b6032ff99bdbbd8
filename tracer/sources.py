"""Which line of the user's Python code made a CUDA call.

Called from CUPTI callbacks, which run on the thread that made the call: the Python frames above the
callback are the caller's. We skip frames of graphmode itself, of installed libraries (PyTorch,
CuPy, cuda-python) and of the standard library, and report the innermost remaining frame: the line
in the user's script. When every frame is library code (a library's own warm-up, say), the
innermost non-graphmode frame is reported instead.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType

def own_dirs() -> tuple[str, ...]:
    """Folders of graphmode's own code (with a trailing separator), in a source checkout or installed.

    The packages install as graphmode.tracer, graphmode.analyzers and graphmode.reports; in a source
    checkout (editable install) they are the top-level folders tracer/, analyzers/, reports/ beside
    graphmode/. Both layouts: the three folders are siblings, and graphmode/ is the parent package.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    siblings = os.path.dirname(here)
    package = os.path.dirname(os.path.abspath(sys.modules["graphmode"].__file__ or here))
    dirs = {os.path.join(siblings, pkg) for pkg in ("tracer", "analyzers", "reports")} | {package}
    return tuple(sorted(d + os.sep for d in dirs))


_OWN = own_dirs()
# "Is this library code" has one definition (is_library_file), for the tracer's call sites and line stamps and for the
# analyzers reading recorded frames (pitfalls, torch_graphs, cpu_profile). Paths are matched by their parts with '/',
# as recorded on Linux, whichever machine reads the trace.
_INSTALLED_PARTS = ("/site-packages/", "/dist-packages/")  # pip's and Debian's installed packages
# torch.compile runs code that Inductor generated under /tmp/torchinductor_<user>: not the user's. The standard
# library as recorded on any machine (<prefix>/lib/pythonX.Y/), beside this interpreter's own folders (_STDLIB).
_LIB_PARTS = (*_INSTALLED_PARTS, "/torchinductor_", "/lib/python")
_STDLIB = tuple(
    p + os.sep for p in {sysconfig.get_paths().get("stdlib", ""), sysconfig.get_paths().get("platstdlib", "")} if p
)


def _is_own(filename: str) -> bool:
    return filename.startswith(_OWN)


def _slashed(filename: str) -> str:
    return filename.replace("\\", "/") if "\\" in filename else filename


def in_installed_package(filename: str) -> bool:
    """A file of an installed package (site-packages, dist-packages)."""
    f = _slashed(filename)
    return any(m in f for m in _INSTALLED_PARTS)


def is_library_file(filename: str) -> bool:
    """Code the user did not write: an installed package's, the standard library's, code torch.compile generated, or
    a pseudo-file ('<frozen ...>', '<string>', '<stdin>': no file of theirs to point at). graphmode's own code is
    told apart by is_user_file."""
    f = _slashed(filename)
    return f.startswith("<") or any(m in f for m in _LIB_PARTS) or filename.startswith(_STDLIB)


def is_user_file(filename: str) -> bool:
    """The user's own code: not graphmode's, not an installed library's, not the standard library's."""
    return not _is_own(filename) and not is_library_file(filename)


def user_source(start: FrameType | None = None) -> str:
    """'file:line function' of the innermost user frame above `start` (default: the caller)."""
    return location_text(user_location(start if start is not None else sys._getframe(1)))


def split_source(source: str) -> tuple[str, int, str]:
    """'file:line function' -> (file, line, function); ('', 0, '') for ''."""
    if not source:
        return "", 0, ""
    loc, _, func = source.partition(" ")
    file, _, line = loc.rpartition(":")
    return file, int(line) if line.isdigit() else 0, func


# Cheap call sites for callbacks that fire often (one per graph node during capture): classify each
# code object once, walk the frames with one dict lookup each, and keep (code, line); the text is made
# after the run. 0: graphmode's own code, 1: a library, 2: the user's.
_CODE_KIND: dict[CodeType, int] = {}


def _code_kind(code: CodeType) -> int:
    kind = _CODE_KIND.get(code)
    if kind is None:
        filename = code.co_filename
        kind = 0 if _is_own(filename) else 1 if is_library_file(filename) else 2
        _CODE_KIND[code] = kind
    return kind


def user_location(start: FrameType | None = None) -> tuple[CodeType, int] | None:
    """(code, line) of the innermost user frame above `start` (default: the caller), falling back to
    the innermost library frame; None outside Python code. The same frame user_source() reports."""
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    fallback: tuple[CodeType, int] | None = None
    kinds = _CODE_KIND
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(code)
        if kind is None:
            kind = _code_kind(code)
        if kind == 2:
            # A function frame that sits on its first line (the decorator's) runs code that torch.compile put
            # in its place: its line says nothing, its caller's line is the call. (A one-line def gives its
            # caller's line too.)
            if frame.f_lineno != code.co_firstlineno or code.co_name in ("<module>", "<lambda>"):
                return code, frame.f_lineno
            if fallback is None or kinds.get(fallback[0]) != 2:
                fallback = code, frame.f_lineno
        elif kind == 1 and fallback is None:
            fallback = code, frame.f_lineno
        frame = frame.f_back
    return fallback


def location_text(location: object) -> str:
    """'file:line function' of a user_location() result; strings pass through, None gives ''."""
    if isinstance(location, tuple) and len(location) == 2 and isinstance(location[0], CodeType):
        code, line = location
        return f"{code.co_filename}:{line} {code.co_name}"
    return location if isinstance(location, str) else ""
