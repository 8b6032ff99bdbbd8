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
"""

from __future__ import annotations

import re
from functools import lru_cache

import cxxfilt


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


@lru_cache(maxsize=65536)
def short_name(name: str, limit: int = 100) -> str:
    """A readable kernel name of at most about `limit` characters (see the module docstring)."""
    full = demangle(name)
    if full == name:
        return name if len(name) <= limit else name[: limit - 1] + "…"
    text = _unqualify_arguments(_strip_return_and_params(full))
    for depth in (3, 2):
        if len(text) <= limit:
            break
        text = _elide_templates(text, depth)
    return text if len(text) <= limit else text[: limit - 1] + "…"
