"""Kernel names as a person reads them: the one place the reports demangle.

CUPTI records a kernel's name as the compiler mangled it (Itanium C++ ABI: `_ZN2at6native...`).
`demangle` turns it back into C++ with the C++ runtime's own demangler (`abi::__cxa_demangle`,
through `cxxfilt`): it handles every name the compiler can produce, lambdas and anonymous
namespaces included, which PyTorch's kernels are full of. Names that are not mangled (Triton,
CuPy, `memcpy HtoD`) come back unchanged, and so does every name if the C++ runtime cannot be
found: a report never fails over a name.

`short_name` is the demangled name without its return type and parameter list, with namespaces
dropped inside template arguments and deep template arguments elided when it is still long: what
fits in a table cell or a terminal column. Pages show it and give the full name on hover.

Every string from a trace or a file name that a report prints goes through here: `printable` writes
out what a terminal would act on (ESC, NUL, the other control characters, a file name's undecodable
bytes), `shorten` keeps the start and the end of a long name around a '…' (a 10,000-character kernel
name filled 85 lines of the report), and `cell` does both for a table cell. `full_names()` turns
the shortening off for a report (`graphmode report --full-names`): names are then whole, still printable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import PurePath

import cxxfilt

NAME_WIDTH = 60  # characters of a name in a terminal table cell
_FULL_NAMES: ContextVar[bool] = ContextVar("graphmode_full_names", default=False)


# What a terminal acts on instead of showing: C0 and C1 control characters (ESC opens an escape sequence that
# can recolour, move the cursor, retitle the window; NUL, BEL, backspace, CR), the bidirectional overrides and
# isolates that reorder the text after them ("Trojan Source", CVE-2021-42574), and lone surrogates: Python's
# stand-ins for the bytes of a file name that are not UTF-8 (os.fsdecode), which cannot even be encoded.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if 0xDC80 <= code <= 0xDCFF:  # the byte os.fsdecode could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character a terminal would act on written out as an escape (ESC as \\x1b, NUL as
    \\x00, a newline as \\n, U+202E as \\u202e, a file name's undecodable byte 0xff as \\xff): what
    the reports show of any string from a trace or a file name."""
    return _UNPRINTABLE.sub(_escaped, text)


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: its start and its end around a '…' (the start of a name says what
    it is, the end which one: a template's last arguments, a file's line)."""
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 0)
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head):]


@contextmanager
def full_names(on: bool = True) -> Iterator[None]:
    """Within the block, `cell` and `short_name` give names whole (printable still): `report --full-names`."""
    token = _FULL_NAMES.set(on)
    try:
        yield
    finally:
        _FULL_NAMES.reset(token)


def cell(text: str, limit: int = NAME_WIDTH) -> str:
    """A string from a trace (a graph label, an NVTX range, a file, function or host name) as a terminal table
    cell shows it: printable, and at most `limit` characters unless full names were asked for."""
    text = printable(text)
    return text if _FULL_NAMES.get() else shorten(text, limit)


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled C++ name of a mangled kernel name; any other name as it is."""
    if not name.startswith("_Z"):
        return name
    try:
        return str(cxxfilt.demangle(name))
    except cxxfilt.Error:  # not a valid mangled name, or no C++ runtime on this machine
        return name


def _strip_return_and_params(text: str) -> str:
    """'void ns::k<1>(int, float)' -> 'ns::k<1>': drops the trailing parameter list and the return type."""
    depth = 0
    if text.endswith(")"):  # the parameter list: the last top-level '(...)'
        for i in range(len(text) - 1, -1, -1):
            c = text[i]
            depth += c in ")>"
            depth -= c in "(<"
            if depth == 0:
                text = text[:i]
                break
    depth = 0
    for i, c in enumerate(text):  # a return type is the text before the first top-level space
        depth += c in "<("
        depth -= c in ">)"
        if c == " " and depth == 0:
            return text[i + 1:]
    return text


_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)::|[A-Za-z_][A-Za-z0-9_]*::)+(?=[A-Za-z_~(])")


def _unqualify_arguments(text: str) -> str:
    """'ns::k<ns::F<float>, std::array<char*, 1ul> >' -> 'ns::k<F<float>, array<char*, 1ul>>': qualifiers
    dropped inside template arguments (the kernel's own name keeps its namespace), '> >' closed up."""
    cut = text.find("<")
    if cut < 0:
        return text.replace("(anonymous namespace)::", "")
    head = text[:cut].replace("(anonymous namespace)::", "")
    return head + _QUALIFIER.sub("", text[cut:]).replace("> >", ">>").replace("> >", ">>")


def _elide_templates(text: str, keep_depth: int) -> str:
    """Template arguments nested deeper than keep_depth replaced by '…'."""
    out: list[str] = []
    depth = 0
    for c in text:
        if c == "<":
            depth += 1
            if depth == keep_depth + 1:
                out.append("<…")
            if depth > keep_depth:
                continue
        elif c == ">":
            depth -= 1
            if depth >= keep_depth:
                if depth == keep_depth:
                    out.append(">")
                continue
        elif depth > keep_depth:
            continue
        out.append(c)
    return "".join(out)


def short_name(name: str, limit: int = 100) -> str:
    """A readable, printable kernel name of at most `limit` characters (see the module docstring); under
    `full_names()` the whole demangled name."""
    if _FULL_NAMES.get():
        return printable(demangle(name))
    return _short_name(name, limit)


@lru_cache(maxsize=65536)
def _short_name(name: str, limit: int) -> str:
    full = demangle(name)
    if full == name:
        return shorten(printable(name), limit)
    text = _unqualify_arguments(_strip_return_and_params(full))
    for depth in (3, 2):
        if len(text) <= limit:
            break
        text = _elide_templates(text, depth)
    return shorten(printable(text), limit)


def short_source(source: str) -> str:
    """'/long/path/train.py:42 step' -> 'train.py:42 step': the file's name is enough to find the line."""
    m = re.fullmatch(r"(.*):(\d+)( .*)?", source)
    return f"{PurePath(m.group(1)).name}:{m.group(2)}{m.group(3) or ''}" if m else source
