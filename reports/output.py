"""Where a command's output file goes: written whole or not at all, never in place of what is not a file.

Every output file a command writes (`export -o`, `report -o`, the exports of a run's ranks) goes
through `open_output`. A new path or an existing regular file is written beside itself as
`<name>.partial` and renamed over the target once complete (`os.replace`, atomic on POSIX): an
export that fails or is interrupted never leaves a truncated file that looks whole. A path that
exists and is not a regular file (a FIFO, a character device such as /dev/null or a terminal, a
socket) is written into directly, as a stream: a rename onto it would replace the FIFO or the device
node with a regular file (and, run as root, /dev/null itself). A symbolic link is followed: its
target is written and the link kept.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def is_stream(path: Path) -> bool:
    """The path exists and is not a regular file or a folder (FIFO, device, socket): written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def open_output(path: Path, binary: bool = False) -> Iterator[IO[Any]]:
    """A file open for writing whose content replaces `path` when the block ends without an exception."""
    mode = "wb" if binary else "w"
    encoding = None if binary else "utf-8"
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if is_stream(target):
        with open(target, mode, encoding=encoding) as f:
            yield f
        return
    partial = target.with_name(target.name + ".partial")
    try:
        with open(partial, mode, encoding=encoding) as f:
            yield f
        with contextlib.suppress(OSError):  # an existing file keeps its permissions
            os.chmod(partial, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def write_output(path: Path, text: str) -> int:
    """Writes `text` (UTF-8) as `open_output` does; returns the bytes written."""
    data = text.encode("utf-8")
    with open_output(path, binary=True) as f:
        f.write(data)
    return len(data)
