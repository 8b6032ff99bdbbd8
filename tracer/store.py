"""Write and read graphmode trace files (one DuckDB file per trace).

The writer commits after every table append, so a run that is interrupted or raises still leaves a
readable file holding everything recorded so far; `close(status=...)` records how the run ended.
The loader never needs a GPU.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer.schema import DEFAULTS, FORMAT_NAME, SCHEMA_VERSION, TABLES, create_statements


class TraceError(ValueError):
    """A trace file that cannot be used; the message is one line a person can act on."""


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
    return {"INTEGER": np.int32, "BIGINT": np.int64}.get(sql_type, object)


def _as_columns(table: str, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> dict[str, np.ndarray]:
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


class TraceWriter:
    """Appends columns to a new trace file. Use as a context manager or call close()."""

    def __init__(self, path: str | os.PathLike[str], meta: Mapping[str, Any] | None = None, append: bool = False):
        """`append=True` opens an existing trace to add a pass (a script's detail run after its
        measuring run); otherwise the file is created anew."""
        import duckdb

        self.path = Path(path)
        if append:
            self._con = duckdb.connect()
            quoted = str(self.path).replace("'", "''")
            self._con.execute(f"ATTACH '{quoted}' AS trace")
            self._con.execute("USE trace")
            if meta:
                self.set_meta(meta)
            return
        if self.path.exists():
            self.path.unlink()
        wal = Path(str(self.path) + ".wal")
        if wal.exists():
            wal.unlink()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Small blocks: a trace has a dozen tables, and DuckDB's default 256 KiB block per table
        # would make even a tiny recording ~3 MB.
        self._con = duckdb.connect()
        quoted = str(self.path).replace("'", "''")
        self._con.execute(f"ATTACH '{quoted}' AS trace (BLOCK_SIZE 16384)")
        self._con.execute("USE trace")
        for stmt in create_statements():
            self._con.execute(stmt)
        self.set_meta(
            {
                "format": FORMAT_NAME,
                "schema_version": SCHEMA_VERSION,
                "status": "recording",
            }
        )
        if meta:
            self.set_meta(meta)

    def set_meta(self, items: Mapping[str, Any]) -> None:
        for key, value in items.items():
            self._con.execute("DELETE FROM meta WHERE key = ?", [key])
            self._con.execute("INSERT INTO meta VALUES (?, ?)", [key, json.dumps(value, default=str)])

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
            self._con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _gm_src")
        finally:
            self._con.unregister("_gm_src")
        return n

    def add_pass(self, info: PassInfo) -> None:
        self._con.execute("DELETE FROM passes WHERE pass_id = ?", [info.pass_id])
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
        meta = {k: json.loads(v) for k, v in self._con.execute("SELECT key, value FROM meta").fetchall()}
        return Trace(self.path, self._con, meta)

    def close(self, status: str = "complete", reason: str = "", keep_status: bool = False) -> None:
        """Records how the run ended (`keep_status`: leave the trace's status as it is) and closes."""
        if self._con is None:
            return
        if not keep_status:
            self.set_meta({"status": status, "status_reason": reason})
        self._con.execute("CHECKPOINT")
        self._con.close()
        self._con = None  # type: ignore[assignment]

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close("complete")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.close("interrupted", "interrupted by the user (Ctrl-C)")
        else:
            self.close("failed", f"{exc_type.__name__}: {exc}")


class Trace:
    """A loaded trace: metadata, passes, and SQL over its tables. Needs no GPU."""

    def __init__(self, path: Path, con: Any, meta: dict[str, Any]):
        self.path = path
        self._con = con
        self.meta = meta
        rows = con.execute(
            "SELECT pass_id, name, detail, start_ns, end_ns, dropped_records, status FROM passes ORDER BY pass_id"
        ).fetchall()
        self.passes = [PassInfo(*r) for r in rows]

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
        if pass_id is None or name == "meta":
            return self.sql(f"SELECT * FROM {name}")
        return self.sql(f"SELECT * FROM {name} WHERE pass_id = ?", [pass_id])

    def count(self, name: str) -> int:
        return int(self._con.execute(f"SELECT count(*) FROM {name}").fetchone()[0])

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
        self._con.close()

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Trace({str(self.path)!r}, workload={self.meta.get('workload')!r}, passes={len(self.passes)})"


def load(path: str | os.PathLike[str]) -> Trace:
    """Opens a trace file read-only. Raises TraceError with a one-line reason for bad files."""
    import duckdb

    p = Path(path)
    if not p.exists():
        raise TraceError(f"{p}: no such file; record one with `graphmode bench chain --out {p}`")
    if p.is_dir():
        raise TraceError(f"{p}: is a directory, not a graphmode trace file")
    with open(p, "rb") as f:
        head = f.read(16)
    # A DuckDB file carries the magic 'DUCK' at offset 8 of its first block.
    if len(head) < 12 or head[8:12] != b"DUCK":
        raise TraceError(f"{p}: not a graphmode trace (not a DuckDB file); traces are written by `graphmode bench` or `graphmode run`")
    try:
        con = duckdb.connect(str(p), read_only=True)
    except Exception as e:  # duckdb raises several types for damaged files
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TraceError(f"{p}: cannot be opened, the file is damaged or truncated ({msg}); record it again") from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "meta" not in tables:
            raise TraceError(f"{p}: a DuckDB file but not a graphmode trace (no 'meta' table)")
        meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta").fetchall()}
        if meta.get("format") != FORMAT_NAME:
            raise TraceError(f"{p}: a DuckDB file but not a graphmode trace (format is {meta.get('format')!r})")
        version = meta.get("schema_version")
        if not isinstance(version, int):
            raise TraceError(f"{p}: graphmode trace without a schema version; the file is damaged")
        if version > SCHEMA_VERSION:
            raise TraceError(
                f"{p}: trace schema version {version} is newer than this graphmode reads ({SCHEMA_VERSION}); "
                "upgrade graphmode (pip install -U graphmode)"
            )
        missing = set(TABLES) - tables
        if missing:
            raise TraceError(f"{p}: graphmode trace is missing table(s) {sorted(missing)}; the file is damaged")
        return Trace(p, con, meta)
    except TraceError:
        con.close()
        raise
    except Exception as e:
        con.close()
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TraceError(f"{p}: cannot be read, the file is damaged or truncated ({msg}); record it again") from None
