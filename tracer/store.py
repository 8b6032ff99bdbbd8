"""Write and read graphmode trace files (one DuckDB file per trace).

The writer commits after every table append, so a run that is interrupted or raises still leaves a
readable file holding everything recorded so far; `close(status=...)` records how the run ended.
The loader never needs a GPU.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from graphmode.tracer.errors import OutputPathError, StorageError, TraceError, TraceInUseError
from graphmode.tracer.schema import (
    ADDED_IN,
    DEFAULTS,
    FORMAT_NAME,
    OLDEST_READABLE_VERSION,
    SCHEMA_VERSION,
    SPAN_TABLES,
    TABLES,
    create_statements,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PassInfo", "Trace", "TraceError", "TraceInUseError", "TraceWriter", "load"]

# A recording refuses to start with less free space than this where the trace goes (a script's trace
# is a few MB; a 10M-event trace 250 MB). GRAPHMODE_MIN_FREE_MB overrides it.
MIN_FREE_MB = 16


@dataclass(frozen=True)
class PassInfo:
    pass_id: int
    name: str
    detail: str
    start_ns: int
    end_ns: int
    dropped_records: int
    status: str


def _numpy_dtype(sql_type: str) -> Any:
    import numpy as np

    return {"INTEGER": np.int32, "BIGINT": np.int64, "DOUBLE": np.float64}.get(sql_type, object)


def _as_columns(table: str, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> dict[str, np.ndarray]:
    import numpy as np

    spec = TABLES[table]
    known = {c for c, _ in spec}
    unknown = set(columns) - known
    if unknown:
        raise ValueError(f"table {table!r} has no column(s) {sorted(unknown)}; columns are {sorted(known)}")
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns for table {table!r} have different lengths: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    out: dict[str, np.ndarray] = {}
    for col, sql_type in spec:
        dtype = _numpy_dtype(sql_type)
        if col in columns:
            values = columns[col]
            arr = np.asarray(values, dtype=dtype) if dtype is not object else np.asarray(
                [str(v) if v is not None else "" for v in values], dtype=object
            )
        else:
            arr = np.full(n, DEFAULTS[sql_type], dtype=dtype)
        out[col] = arr
    return out


def check_output_path(out: Path, inputs: Sequence[Path] = (), folder: bool = False, what: str = "trace") -> None:
    """Refuses an output that would overwrite an input (a `what`: the trace read, the script run), or whose
    folder does not exist (never created silently: a typo would scatter files). `folder`: `out` is a folder
    of files (created if missing)."""

    def same(a: Path, b: Path) -> bool:
        try:
            return a.exists() and b.exists() and os.path.samefile(a, b)
        except OSError:
            return a.resolve() == b.resolve()

    for src in inputs:
        if same(out, src) or out.resolve() == src.resolve():
            raise OutputPathError(f"{out} is the input {what} {src}: writing there would destroy the "
                                  f"{'recording' if what == 'trace' else what}; choose another -o path")
        if folder and src.resolve().parent == out.resolve() and src.name in {f"{t}.parquet" for t in TABLES}:
            raise OutputPathError(f"{out} holds the input {src}, which the export would overwrite; choose another -o folder")
    if folder:
        if out.exists() and not out.is_dir():
            raise OutputPathError(f"{out} exists and is not a folder; choose another -o folder")
        parent = out.resolve().parent
    else:
        if out.is_dir():
            raise OutputPathError(f"{out} is a folder; give a file name (-o {out / 'name'})")
        parent = out.resolve().parent
    if not parent.is_dir():
        raise OutputPathError(f"cannot write {out}: folder {parent} does not exist; create it first or choose another -o path")


def check_free_space(path: Path) -> None:
    """Refuses to start a recording where the disk is (nearly) full: say so before the program runs."""
    try:
        min_mb = float(os.environ.get("GRAPHMODE_MIN_FREE_MB", MIN_FREE_MB))
    except ValueError:
        min_mb = MIN_FREE_MB
    free = shutil.disk_usage(path.parent).free
    if free < min_mb * 2**20:
        raise StorageError(
            f"only {free / 2**20:.1f} MB free on the disk holding {path.parent}; a trace needs at least {min_mb:g} MB "
            "(GRAPHMODE_MIN_FREE_MB): free some space or write the trace elsewhere (--out)"
        )


def _is_disk_failure(e: BaseException) -> bool:
    text = str(e)
    return isinstance(e, OSError) or "No space left" in text or "Could not write" in text or "Disk quota" in text


class TraceWriter:
    """Appends columns to a new trace file. Use as a context manager or call close().

    Every append is committed at once, so a process that dies leaves a readable file with status
    'recording'. If the disk fills up, the trace moves to the system's temporary folder (what was
    already written is copied there) and the writer says so on stderr; `path` is then the new file.
    """

    def __init__(self, path: str | os.PathLike[str], meta: Mapping[str, Any] | None = None, append: bool = False):
        """`append=True` opens an existing trace to add a pass (a script's detail run after its
        measuring run); otherwise the file is created anew."""
        import duckdb

        self.path = Path(path)
        self.relocated_from: Path | None = None
        self.failure = ""  # why writing stopped, when it did
        self._failure_message = ""
        self.notes: list[str] = []  # meta.notes: what went wrong while recording, for info and the report
        if append:
            if not self.path.is_file():  # ATTACH would create an empty database and call it a trace
                raise StorageError(f"{self.path}: no trace to add a run to (the first run wrote none; its message says why)")
            self._con = duckdb.connect()
            self._con.execute(f"ATTACH '{_quoted(self.path)}' AS trace")
            self._con.execute("USE trace")
            notes = self.get_meta().get("notes")
            self.notes = list(notes) if isinstance(notes, list) else []  # a later run's notes add to the earlier ones'
            if meta:
                self.set_meta(meta)
            return
        check_output_path(self.path)
        if not _is_utf8(self.path):
            raise StorageError(f"cannot create the trace {self.path}: its name is not UTF-8, which DuckDB cannot "
                               "open; choose a UTF-8 name (--out)")
        check_free_space(self.path)
        try:
            if self.path.exists():
                self.path.unlink()
            wal = _wal(self.path)
            if wal.exists():
                wal.unlink()
        except OSError as e:
            raise StorageError(f"cannot replace {self.path}: {e.strerror or e}; choose another --out path") from None
        # Small blocks: a trace has a dozen tables, and DuckDB's default 256 KiB block per table
        # would make even a tiny recording ~3 MB.
        self._con = duckdb.connect()
        try:
            self._con.execute(f"ATTACH '{_quoted(self.path)}' AS trace (BLOCK_SIZE 16384)")
            self._con.execute("USE trace")
            for stmt in create_statements():
                self._con.execute(stmt)
        except duckdb.Error as e:
            self._con.close()
            raise StorageError(f"cannot create the trace {self.path}: {_first_line(e)}; choose another --out path") from None
        self.set_meta(
            {
                "format": FORMAT_NAME,
                "schema_version": SCHEMA_VERSION,
                "status": "recording",
            }
        )
        if meta:
            self.set_meta(meta)

    def _write(self, what: str, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Runs statements in one transaction; on a full disk moves the trace and tries again once."""
        import duckdb

        if self._failure_message:  # the disk did not take the last write: do not pretend later ones work
            raise StorageError(self._failure_message)
        for attempt in (0, 1):
            try:
                self._con.execute("BEGIN TRANSACTION")
                for sql, params in statements:
                    self._con.execute(sql, list(params))
                self._con.execute("COMMIT")
                return
            except duckdb.Error as e:
                try:
                    self._con.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                if attempt or not _is_disk_failure(e) or not self._relocate(e):
                    self.failure = f"writing {what} to {self.path} failed: {_first_line(e)}"
                    self._failure_message = (
                        f"{self.failure}. {self.path} keeps what was written before (its status says how the run "
                        "ended); the rest of this recording was lost. Free space or choose another --out path")
                    raise StorageError(self._failure_message) from None

    def _relocate(self, cause: BaseException) -> bool:
        """The disk is full: copy what is written so far to the temporary folder and go on there."""
        import duckdb

        tmp = Path(tempfile.gettempdir())
        try:
            if os.stat(tmp).st_dev == os.stat(self.path.parent).st_dev or shutil.disk_usage(tmp).free < 256 * 2**20:
                return False
            target = Path(tempfile.mkstemp(prefix=self.path.stem + "-", suffix=self.path.suffix or ".gmtrace", dir=tmp)[1])
            target.unlink()
            self._con.execute(f"ATTACH '{_quoted(target)}' AS moved (BLOCK_SIZE 16384)")
            self._con.execute("COPY FROM DATABASE trace TO moved")
            self._con.execute("USE moved")
        except (OSError, duckdb.Error):
            return False
        try:  # detaching checkpoints the old file, which fails on the full disk after detaching it: the copy is whole
            self._con.execute("DETACH trace")
        except duckdb.Error:
            pass
        self.relocated_from, self.path = self.path, target
        print(f"graphmode: no space left to write {self.relocated_from} ({_first_line(cause)}); "
              f"the trace continues in {target}", file=sys.stderr)
        self._write("meta", [("DELETE FROM meta WHERE key = 'relocated_from'", []),
                             ("INSERT INTO meta VALUES ('relocated_from', ?)", [json.dumps(str(self.relocated_from))])])
        return True

    def add_note(self, text: str) -> None:
        """Records something that went wrong while recording (meta.notes): shown by info and the report. A note
        an earlier run of the same trace already made (a script's runs each meet the same program) is kept once."""
        if text in self.notes:
            return
        self.notes.append(text)
        self.set_meta({"notes": self.notes})

    def set_meta(self, items: Mapping[str, Any]) -> None:
        statements: list[tuple[str, Sequence[Any]]] = []
        for key, value in items.items():
            statements.append(("DELETE FROM meta WHERE key = ?", [key]))
            statements.append(("INSERT INTO meta VALUES (?, ?)", [key, json.dumps(value, default=str)]))
        self._write("meta " + ", ".join(items), statements)

    def get_meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._con.execute("SELECT key, value FROM meta").fetchall()}

    def append(self, table: str, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> int:
        """Appends rows given as named columns; returns the number of rows written."""
        if table not in TABLES or table == "meta":
            raise ValueError(f"unknown table {table!r}")
        cols = _as_columns(table, columns)
        n = len(next(iter(cols.values()))) if cols else 0
        if n == 0:
            return 0
        self._con.register("_gm_src", cols)
        try:
            names = ", ".join(c for c, _ in TABLES[table])
            self._write(f"{n:,} {table} rows", [(f"INSERT INTO {table} ({names}) SELECT {names} FROM _gm_src", [])])
        finally:
            self._con.unregister("_gm_src")
        return n

    def add_pass(self, info: PassInfo) -> None:
        self._write(f"pass {info.pass_id}", [("DELETE FROM passes WHERE pass_id = ?", [info.pass_id])])
        self.append(
            "passes",
            {
                "pass_id": [info.pass_id],
                "name": [info.name],
                "detail": [info.detail],
                "start_ns": [info.start_ns],
                "end_ns": [info.end_ns],
                "dropped_records": [info.dropped_records],
                "status": [info.status],
            },
        )

    def as_trace(self) -> Trace:
        """A read view of what has been written so far (same connection; do not close it)."""
        meta = {k: json.loads(v) for k, v in self._con.execute("SELECT key, value FROM meta WHERE key <> 'cpu_profile'").fetchall()}
        return Trace(self.path, self._con, meta)

    def close(self, status: str = "complete", reason: str = "", keep_status: bool = False) -> None:
        """Records how the run ended (`keep_status`: leave the trace's status as it is, for a pass appended
        to a trace) and closes the file. After a write failure the status is 'failed' with that failure
        as the reason (if the disk still takes that much), and nothing is raised."""
        if self._con is None:
            return
        if self.failure:
            status, reason, keep_status = "failed", self.failure + (f"; {reason}" if reason else ""), False
            self._failure_message = ""  # one last try: the status may still fit
        try:
            if not keep_status:
                self.set_meta({"status": status, "status_reason": reason})
            self._checkpoint()
        except StorageError:
            if not self.failure:
                raise
        finally:
            self._con.close()
            self._con = None  # type: ignore[assignment]

    def _checkpoint(self) -> None:
        """Moves what the write-ahead log holds into the file. A checkpoint that fails for want of space
        invalidates the open database, so where the disk cannot take about twice the log, the trace moves
        to the temporary folder first (as a full disk during the run does); where it cannot, the log stays
        beside the file and says so."""
        import duckdb

        wal = _wal(self.path)
        try:
            short = shutil.disk_usage(self.path.parent).free < 2 * wal.stat().st_size + 2**20
        except OSError:
            short = False
        if short:
            self._relocate(OSError("too little space left to checkpoint the trace"))
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.Error as e:
            if not _is_disk_failure(e):
                raise
            # Every write was committed to the log: the file and its log together hold the whole trace.
            print(f"graphmode: the last checkpoint of {self.path} failed ({_first_line(e)}); nothing is lost: "
                  f"{self.path} keeps what was written before, its last part in {_wal(self.path).name} beside it (keep the two "
                  "files together: readers replay the log). Free some space before adding to it", file=sys.stderr)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close("complete")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.close("interrupted", "interrupted by the user (Ctrl-C)")
        else:
            self.close("failed", f"{exc_type.__name__}: {exc}")


def _wal(path: Path) -> Path:
    """DuckDB's write-ahead log of a database file: committed rows not yet checkpointed into it."""
    return Path(str(path) + ".wal")


def _is_utf8(path: Path) -> bool:
    """Whether the path's bytes decode as UTF-8: Python keeps other bytes of a file name as lone surrogates
    (os.fsdecode), which DuckDB, taking paths as UTF-8 strings, refuses."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@contextmanager
def duckdb_path(path: Path) -> Iterator[Path]:
    """A name DuckDB can take for `path` (a trace to attach, a folder to COPY into): the path itself, or where
    the name is not UTF-8 (byte 0xff, a Latin-1 name) a symbolic link with a UTF-8 name to it, for the length
    of the block. DuckDB follows the link (a trace's write-ahead log is found beside the file itself) and
    keeps an attached file open after the link is gone."""
    if _is_utf8(path):
        yield path
        return
    folder = tempfile.mkdtemp(prefix="graphmode-link-")
    link = Path(folder) / ("link" + (path.suffix if _is_utf8(Path(path.suffix)) else ""))
    try:
        os.symlink(os.fsencode(path.absolute()), link)
        yield link
    finally:
        with suppress(FileNotFoundError):
            link.unlink()
        os.rmdir(folder)


def _quoted(path: Path) -> str:
    """A path inside a SQL string literal (ATTACH and COPY take literals, not parameters)."""
    return str(path).replace("'", "''")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class Trace:
    """A loaded trace: metadata, passes, and SQL over its tables. Needs no GPU.

    `notes` lists what the loader had to leave out or assume to read the file (rows without times,
    spans that end before they start, NULLs): the report prints them as warnings, the validator as
    problems. `meta` holds every key except a version-1 file's `cpu_profile` (a multi-MB JSON string,
    read by tracer.profile_store only when the profile is wanted).
    """

    def __init__(self, path: Path, con: Any, meta: dict[str, Any], notes: Sequence[str] = ()):
        self.path = path
        self._con = con
        self.meta = meta
        self.notes: list[str] = list(notes)
        self.legacy_profile = False  # a version-1 meta.cpu_profile string is present
        self.closed = False
        self._detach: str | None = None  # opened in a shared database (load's `database`): the alias to detach on close
        rows = con.execute(
            "SELECT pass_id, name, detail, start_ns, end_ns, dropped_records, status FROM passes ORDER BY pass_id"
        ).fetchall()
        self.passes = [PassInfo(*r) for r in rows]

    @property
    def schema_version(self) -> int:
        v = self.meta.get("schema_version")
        return v if isinstance(v, int) else SCHEMA_VERSION

    def sql(self, query: str, params: Sequence[Any] | None = None) -> dict[str, np.ndarray]:
        """Runs SQL over the trace's tables; returns named numpy columns."""
        result: dict[str, np.ndarray] = self._con.execute(query, params or []).fetchnumpy()
        return result

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._con.execute(query, params or []).fetchall()
        return rows

    def table(self, name: str, pass_id: int | None = None) -> dict[str, np.ndarray]:
        if name not in TABLES:
            raise KeyError(f"no table {name!r}; tables are {sorted(TABLES)}")
        if pass_id is None or "pass_id" not in dict(TABLES[name]):
            return self.sql(f"SELECT * FROM {name}")
        return self.sql(f"SELECT * FROM {name} WHERE pass_id = ?", [pass_id])

    def count(self, name: str) -> int:
        return self.counts([name])[0]

    def counts(self, names: Sequence[str]) -> list[int]:
        """Rows of each of these tables, in one statement."""
        for name in names:
            if name not in TABLES:
                raise KeyError(f"no table {name!r}; tables are {sorted(TABLES)}")
        row = self._con.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {name})" for name in names)).fetchone()
        return [int(n) for n in row]

    def pass_by_detail(self, *details: str) -> PassInfo | None:
        """The first pass with one of these detail levels, in the order asked."""
        for d in details:
            for p in self.passes:
                if p.detail == d:
                    return p
        return None

    @property
    def connection(self) -> Any:
        return self._con

    def close(self) -> None:
        if self._detach is not None and not self.closed:
            self._con.execute(f"DETACH {self._detach}")  # an attached file stays open in the database until detached
        self._con.close()
        self.closed = True

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Trace({str(self.path)!r}, workload={self.meta.get('workload')!r}, status={self.meta.get('status')!r}, "
                f"passes={len(self.passes)}{', closed' if self.closed else ''})")


_DAMAGED = "the file is damaged or truncated"


def load(path: str | os.PathLike[str], database: Any = None) -> Trace:
    """Opens a trace file read-only (the file is never changed). Raises TraceError with a one-line reason.

    `database`: a trace_database() to open it in, in a connection of its own (closed with the trace), instead of a
    database of its own: for a process that reads many traces one after another (analyzers.ranks' workers)."""
    return load_as(path, Trace, database)


def trace_database() -> Any:
    """An in-memory DuckDB database to open traces in (load's `database`). Starting and closing a database costs
    about 25 ms of CPU, a connection to an existing one and attaching a file to it about 2.5 (DuckDB 2.0): a
    tenth of the time of reading a rank of benchmarks/ranks_merge.py. DuckDB's spill files go to the temporary
    folder, never next to a trace."""
    import duckdb

    return duckdb.connect(config={"temp_directory": os.path.join(tempfile.gettempdir(), "graphmode-duckdb")})


_ALIASES = itertools.count()  # traces open in a shared database are attached under names of their own


_T = TypeVar("_T", bound=Trace)


def load_as(path: str | os.PathLike[str], trace_class: type[_T], database: Any = None) -> _T:
    """load(), into a subclass of Trace: the front door's, which renders itself in a notebook (graphmode.notebook)."""
    p = Path(path)
    if database is None:
        alias, con = "trace", _attach(p)
    else:  # a connection of its own (its views are TEMP: the connection's), the file under a name of its own
        alias, con = f"trace_{next(_ALIASES)}", database.cursor()
        try:
            _attach(p, con, alias)
        except TraceError:
            con.close()
            raise
    try:
        trace = _open_attached(p, con, trace_class, alias, temp=database is not None)
    except Exception as e:
        if database is not None:
            con.execute(f"DETACH {alias}")
        con.close()
        if isinstance(e, TraceError):
            raise
        raise TraceError(f"{p}: cannot be read, {_DAMAGED} ({_first_line(e)}); if it is a copy, copy it again") from None
    if database is not None:
        trace._detach = alias
    return trace


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A trace's metadata alone, without load()'s views and checks of every table (about half its time): what
    tells which traces go together (tracer.rankset). Values that are not JSON are given as stored. Raises
    TraceError as load() does."""
    return _read_meta(Path(path), None)


def read_metas(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any] | TraceError]:
    """read_meta of each trace, or the TraceError it raises, through one in-memory database: a database costs
    about 17 ms of CPU to start, attaching a file to it about 2 (DuckDB 1.x), which matters for a job of many ranks."""
    import duckdb

    con = trace_database()
    out: list[dict[str, Any] | TraceError] = []
    try:
        for path in paths:
            try:
                out.append(_read_meta(Path(path), con))
            except TraceError as e:
                out.append(e)
    finally:
        con.close()
    return out


def _read_meta(p: Path, shared: Any) -> dict[str, Any]:
    """read_meta, in its own database or attached to `shared` (and detached again)."""
    import duckdb

    con = _attach(p, shared)
    try:
        rows = con.execute("SELECT key, value FROM trace.main.meta WHERE key <> 'cpu_profile'").fetchall()
    except duckdb.Error as e:
        raise TraceError(f"{p}: cannot be read, {_DAMAGED} ({_first_line(e)}); if it is a copy, copy it again") from None
    finally:
        if shared is None:
            con.close()
        else:
            con.execute("DETACH trace")
    meta: dict[str, Any] = {}
    for key, value in rows:
        try:
            meta[str(key)] = json.loads(value) if value is not None else None
        except (TypeError, ValueError):
            meta[str(key)] = value
    if meta.get("format") != FORMAT_NAME:
        raise TraceError(f"{p}: a DuckDB file but not a graphmode trace (format is {meta.get('format')!r})")
    return meta


def _attach(p: Path, shared: Any = None, alias: str = "trace") -> Any:
    """A connection with the trace file attached read-only as `alias` (a new one, or `shared` where given);
    TraceError with the reason if it cannot be."""
    import duckdb

    if not p.exists():
        raise TraceError(f"{p}: no such file; record one with `graphmode bench chain --out {p}`")
    if p.is_dir():
        raise TraceError(f"{p}: is a directory, not a graphmode trace file")
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise TraceError(f"{p}: cannot be read ({e.strerror or e})") from None
    # A DuckDB file carries the magic 'DUCK' at offset 8 of its first block.
    if len(head) < 12 or head[8:12] != b"DUCK":
        raise TraceError(f"{p}: not a graphmode trace (not a DuckDB file); traces are written by `graphmode bench` or `graphmode run`")
    # An in-memory database holds views over the attached file: the file is attached read-only, and
    # DuckDB's spill files go to the temporary folder, never next to the trace.
    con = shared if shared is not None else trace_database()
    try:
        with duckdb_path(p) as name:
            con.execute(f"ATTACH '{_quoted(name)}' AS {alias} (READ_ONLY)")
    except duckdb.Error as e:
        if shared is None:
            con.close()
        raise _attach_error(p, e) from None
    return con


def _attach_error(p: Path, e: BaseException) -> TraceError:
    text = str(e)
    if "lock" in text.lower():
        pid = re.search(r"PID (\d+)", text)
        who = f" (process {pid.group(1)})" if pid else ""
        return TraceInUseError(
            f"{p}: in use by another process{who}, which has it open for writing (a recording still running?). "
            f"Wait for it to finish, or read a copy: cp {p} /tmp/copy.gmtrace (with its .wal file, if any)"
        )
    if "already attached" in text or "Unique file handle conflict" in text:
        return TraceInUseError(
            f"{p}: open for writing in this process (a TraceWriter or `graphmode.trace()` block that has not "
            "ended): read it after the writer closes"
        )
    return TraceError(f"{p}: cannot be opened, {_DAMAGED} ({_first_line(e)}); if it is a copy, copy it again")


def _open_attached(p: Path, con: Any, trace_class: type[_T], alias: str = "trace", temp: bool = False) -> _T:
    """The Trace of the file attached to `con` as `alias`: views over its tables (TEMP ones, `temp`: the connection's
    own, where other connections to its database open other traces)."""
    columns: dict[str, dict[str, str]] = {}
    for table, column, dtype in con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_schema = 'main' ORDER BY table_name, ordinal_position", [alias]
    ).fetchall():
        columns.setdefault(table, {})[column] = dtype
    if "meta" not in columns:
        raise TraceError(f"{p}: a DuckDB file but not a graphmode trace (no 'meta' table)")
    meta: dict[str, Any] = {}
    bad_keys = []
    for key, value in con.execute(f"SELECT key, value FROM {alias}.main.meta WHERE key <> 'cpu_profile'").fetchall():
        try:
            meta[str(key)] = json.loads(value) if value is not None else None
        except (TypeError, ValueError):
            bad_keys.append(str(key))
            meta[str(key)] = value
    if meta.get("format") != FORMAT_NAME:
        raise TraceError(f"{p}: a DuckDB file but not a graphmode trace (format is {meta.get('format')!r})")
    version = meta.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise TraceError(f"{p}: graphmode trace without a valid schema version ({version!r}); {_DAMAGED}")
    if version > SCHEMA_VERSION:
        raise TraceError(
            f"{p}: trace schema version {version} is newer than this graphmode reads ({SCHEMA_VERSION}); "
            "upgrade graphmode (pip install -U graphmode)"
        )
    if version < OLDEST_READABLE_VERSION:
        raise TraceError(f"{p}: trace schema version {version} was never written by graphmode "
                         f"(versions {OLDEST_READABLE_VERSION} to {SCHEMA_VERSION}); {_DAMAGED}")
    notes: list[str] = []
    if bad_keys:
        notes.append(f"meta value(s) {', '.join(sorted(bad_keys))} are not JSON: shown as stored")
    for key in ("dropped_records",):
        if key in meta and not (isinstance(meta[key], int) and not isinstance(meta[key], bool) and meta[key] >= 0):
            notes.append(f"meta.{key} is {meta[key]!r}, not a count: read as unknown (0)")
            meta[key] = 0
    missing = [t for t in TABLES if t not in columns and ADDED_IN.get(t, 1) <= version]
    if missing:
        raise TraceError(f"{p}: graphmode trace is missing table(s) {sorted(missing)}; {_DAMAGED}")
    for table, spec in TABLES.items():
        _create_view(con, p, table, spec, columns.get(table), version, notes, alias, temp)
    trace = trace_class(p, con, meta, notes)
    trace.legacy_profile = bool(con.execute(f"SELECT count(*) FROM {alias}.main.meta WHERE key = 'cpu_profile'").fetchone()[0])
    return trace


def _create_view(con: Any, p: Path, table: str, spec: list[tuple[str, str]], present: dict[str, str] | None,
                 version: int, notes: list[str], alias: str = "trace", temp: bool = False) -> None:
    """A view named like the table over the file's table: absent columns/tables read as their defaults,
    NULLs as defaults, and span rows without start/end or ending before they start are left out (noted)."""
    if present is None:  # a table newer than the file's schema version: empty
        con.execute(f"CREATE {'TEMP ' if temp else ''}TABLE {table} ({', '.join(f'{c} {t}' for c, t in spec)})")
        return
    for col, sql_type in spec:
        if col not in present and ADDED_IN.get(f"{table}.{col}", 1) <= version:
            raise TraceError(f"{p}: table {table} has no column {col}; {_DAMAGED}")
        if col in present and present[col] != sql_type:
            raise TraceError(f"{p}: column {table}.{col} is {present[col]}, not {sql_type}: not a trace graphmode wrote")
    cols = [c for c, _ in spec if c in present]
    checks = [f"count(*) - count({c})" for c in cols]
    is_span = table in SPAN_TABLES
    if is_span:
        checks += ["count(*) FILTER (WHERE start_ns IS NULL OR end_ns IS NULL)", "count(*) FILTER (WHERE end_ns < start_ns)"]
    counts = con.execute(f"SELECT {', '.join(checks)} FROM {alias}.main.{table}").fetchone()
    nulls = {c: int(n) for c, n in zip(cols, counts[: len(cols)]) if n}
    exprs = []
    for col, sql_type in spec:
        default = f"CAST({DEFAULTS[sql_type]!r} AS {sql_type})"
        if col not in present:
            exprs.append(f"{default} AS {col}")
        elif col in nulls:
            exprs.append(f"coalesce({col}, {default}) AS {col}")
        else:
            exprs.append(col)
    where = ""
    if is_span:
        no_time, negative = int(counts[-2]), int(counts[-1])
        if no_time or negative:
            where = " WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL AND end_ns >= start_ns"
        if no_time:
            notes.append(f"{no_time:,} {table} row(s) have no start_ns or end_ns (NULL): left out")
        if negative:
            notes.append(f"{negative:,} {table} row(s) end before they start (negative duration): left out")
        for c in ("start_ns", "end_ns"):
            nulls.pop(c, None)
    if nulls:
        listed = ", ".join(f"{c} ({n:,})" for c, n in nulls.items())
        notes.append(f"{table}: NULL values in {listed} read as {'0 or empty' if len(nulls) > 1 else 'the default'}")
    con.execute(f"CREATE {'TEMP ' if temp else ''}VIEW {table} AS SELECT {', '.join(exprs)} FROM {alias}.main.{table}{where}")
