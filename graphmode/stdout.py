"""Standard output that cannot be written, said in one line: `graphmode report trace > /dev/full`.

While a command runs, `sys.stdout` is a `GuardedStdout`: a write or flush that fails raises
StdoutError, whose message names stdout and the error (an OSError from deep inside rich or click
would otherwise read as a bug, with a traceback, or be blamed on an --out path). A closed pipe
(`graphmode report trace | head`) is not an error of graphmode's: the reader has what it wanted, so
BrokenPipeError passes through unchanged and the command ends quietly. Either way the descriptor is
then pointed at /dev/null, so that the interpreter's last flush at exit neither fails again nor prints.
"""

from __future__ import annotations

import errno
import os
from typing import Any, TextIO

from graphmode.tracer.errors import StdoutError


def stdout_error(e: OSError, has_out_option: bool) -> StdoutError:
    code = e.errno or 0
    name = errno.errorcode.get(code, str(code))
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        fix = "free space where stdout goes, or send it elsewhere"
    else:
        fix = "send stdout somewhere writable"
    if has_out_option:
        fix += " (or write to a file with -o FILE)"
    return StdoutError(f"cannot write to stdout: {e.strerror or e} ({name}); {fix}")


class GuardedStdout:
    """Stands in for sys.stdout: the same stream, whose failures raise StdoutError (BrokenPipeError as it is)."""

    def __init__(self, stream: TextIO | None, has_out_option: bool) -> None:
        self._stream = stream  # None: the process was started with stdout closed (`>&-`)
        self._has_out_option = has_out_option

    def write(self, text: str) -> int:
        if self._stream is None:
            raise stdout_error(OSError(errno.EBADF, "it is closed"), self._has_out_option)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise stdout_error(e, self._has_out_option) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise stdout_error(e, self._has_out_option) from None

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer: the stream's own
        return getattr(self._stream, name)


def discard(stream: TextIO | None) -> None:
    """Points the stream's descriptor at /dev/null (nothing more can reach the reader; the exit's flush must
    not fail). A stream without a descriptor (a test's captured output) is left as it is."""
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError, AttributeError):
        return
    if fd < 0:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
