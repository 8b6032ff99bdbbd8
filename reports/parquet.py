"""`graphmode export --format parquet`: one Parquet file per trace table, written by DuckDB's COPY."""

from __future__ import annotations

from pathlib import Path

from graphmode.tracer.schema import TABLES
from graphmode.tracer.store import Trace, duckdb_path

output_file_extension = "parquet"


def export_parquet(trace: Trace, out_dir: Path) -> list[Path]:
    """Writes `<table>.parquet` for every table of the schema into out_dir (created; its parent must
    exist, nothing else is created); returns the files."""
    out_dir.mkdir(exist_ok=True)
    written = []
    with duckdb_path(out_dir) as folder:  # a folder whose name is not UTF-8 is written through a link
        for table in TABLES:
            quoted = str(folder / f"{table}.parquet").replace("'", "''")  # COPY takes a string literal, not a parameter
            trace.connection.execute(f"COPY (SELECT * FROM {table}) TO '{quoted}' (FORMAT parquet)")
            written.append(out_dir / f"{table}.parquet")
    return written
