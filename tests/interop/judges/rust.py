"""Judge: paimon-rust 0.4 (PyPI ``pypaimon-rust``) reading through DataFusion SQL.

Run with ``.judges/rust/bin/python rust.py JOBS.json RESULTS.json`` (protocol in _jobs.py);
only ``read`` jobs. A read is ``SELECT * FROM p."db"."t"`` with ``VERSION AS OF <id>`` (a
snapshot) or ``VERSION AS OF '<tag>'`` (measured: an ``/*+ OPTIONS(...) */`` hint is
silently ignored, so dynamic ``options`` go through the native read builder instead).
paimon-rust yields no batch for an empty result; its schema then comes from the native
read builder's table schema (atomic types only).
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import _jobs
import pyarrow as pa
from pypaimon_rust.datafusion import PaimonCatalog, SQLContext

_ATOMIC = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "INTEGER": pa.int32(),
           "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
           "BOOLEAN": pa.bool_(), "STRING": pa.string(), "BYTES": pa.binary(), "DATE": pa.date32()}


def paimon_to_arrow(type_string: str) -> pa.DataType:
    """A Paimon type string as Arrow, only to label an empty result (nested types: null)."""
    s = type_string.upper().replace(" NOT NULL", "").strip()
    if s in _ATOMIC:
        return _ATOMIC[s]
    if s.startswith(("VARCHAR", "CHAR")):
        return pa.string()
    if s.startswith(("VARBINARY", "BINARY")):
        return pa.binary()
    m = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", s)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    m = re.fullmatch(r"TIMESTAMP(_LTZ)?\((\d)\)( WITH LOCAL TIME ZONE)?", s)
    if m:
        p = int(m.group(2))
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if (m.group(1) or m.group(3)) else None)
    return pa.null()


def read(job: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()  # open, plan and read, as a user times it
    cpu = time.process_time()  # the process's CPU time, every thread's (bench_interop_read)
    warehouse = os.path.abspath(job["warehouse"])
    db, name = job["table"].split(".", 1)
    result = None
    if not job.get("options"):
        ctx = SQLContext()
        # default_database="": otherwise register_catalog creates <warehouse>/default.db
        ctx.register_catalog("p", {"warehouse": warehouse}, default_database="")
        query = f'SELECT * FROM p."{db}"."{name}"'
        if job.get("snapshot") is not None:
            query += f" VERSION AS OF {int(job['snapshot'])}"
        elif job.get("tag"):
            query += " VERSION AS OF '{}'".format(job["tag"].replace("'", "''"))
        batches = ctx.sql(query)
        if batches:
            result = pa.Table.from_batches(batches)
    if result is None:
        table = PaimonCatalog({"warehouse": warehouse}).get_table((db, name))
        options = dict(job.get("options") or {})
        if job.get("snapshot") is not None:
            options["scan.snapshot-id"] = str(job["snapshot"])
        if job.get("tag"):
            options["scan.tag-name"] = job["tag"]
        rb = table.new_read_builder(options) if options else table.new_read_builder()
        batches = rb.new_read().read(rb.new_scan().plan().splits())
        if batches:
            result = pa.Table.from_batches(batches)
        else:
            result = pa.schema([pa.field(f.name(), paimon_to_arrow(f.field_type()), f.is_nullable())
                                for f in table.schema().fields()]).empty_table()
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu
    _jobs.write_ipc(result, job["out"])
    return {"rows": result.num_rows, "seconds": seconds, "cpu_seconds": cpu_seconds}


if __name__ == "__main__":
    _jobs.main({"read": read}, _jobs.first_line)
