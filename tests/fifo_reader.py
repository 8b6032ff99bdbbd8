"""A reader on the other end of a FIFO, for tests of commands that write their output into one."""

from __future__ import annotations

import os
import threading
from pathlib import Path


class FifoReader:
    """Makes a FIFO at `path` and reads everything written into it on a thread (`data` once `wait` returns)."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.data: bytes | None = None
        # daemon: a writer that replaced the FIFO instead of opening it leaves this thread blocked in open()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as f:
            self.data = f.read()

    def wait(self, timeout: float = 20) -> bytes:
        self._thread.join(timeout)
        assert self.data is not None, f"nothing opened the FIFO {self.path} for writing"
        return self.data
