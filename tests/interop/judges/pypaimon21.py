"""Judge: Apache Paimon's Python API, pypaimon 2.1 (reads, creates, commits, tags, alters,
branches: created, dropped, listed, fast-forwarded).

Run with ``.judges/pypaimon21/bin/python pypaimon21.py JOBS.json RESULTS.json`` (the job
protocol is in _jobs.py). pypaimon 2.1 has no compaction. Its batch reads skip level-0 files
of deletion-vector and first-row tables (``batch_scan_skip_level0``), as every Paimon reader.
"""

from __future__ import annotations

import os
import time
from typing import Any

import _jobs
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser
from pypaimon.schema.schema_change import SchemaChange


def catalog(job: dict[str, Any]) -> Any:
    return CatalogFactory.create({"warehouse": os.path.abspath(job["warehouse"])})


def table_of(cat: Any, job: dict[str, Any]) -> Any:
    """The job's table, on its ``branch`` (``db.name$branch_<b>``, Paimon's identifier)."""
    branch = job.get("branch")
    name = job["table"] + (f"$branch_{branch}" if branch and branch != "main" else "")
    return cat.get_table(name)


def latest(table: Any) -> int | None:
    snap = table.snapshot_manager().get_latest_snapshot()
    return None if snap is None else int(snap.id)


def read(job: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()  # open, plan and read, as a user times it
    table = table_of(catalog(job), job)
    options = dict(job.get("options") or {})
    if job.get("snapshot") is not None:
        options["scan.snapshot-id"] = str(job["snapshot"])
    if job.get("tag"):
        options["scan.tag-name"] = job["tag"]
    if options:
        table = table.copy(options)
    rb = table.new_read_builder()
    result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    if result is None:  # no split at all
        result = PyarrowFieldParser.from_paimon_schema(table.fields).empty_table()
    seconds = time.perf_counter() - started
    _jobs.write_ipc(result, job["out"])
    return {"rows": result.num_rows, "seconds": seconds}


def create(job: dict[str, Any]) -> dict[str, Any]:
    cat = catalog(job)
    cat.create_database(job["table"].split(".")[0], True)
    spec = job.get("spec") or {}
    schema = pa.ipc.open_file(job["schema"]).schema
    cat.create_table(job["table"], Schema.from_pyarrow_schema(
        schema, partition_keys=spec.get("partition_keys") or None,
        primary_keys=spec.get("primary_keys") or None,
        options={k: str(v) for k, v in (spec.get("options") or {}).items()}), False)
    return {}


def commit(job: dict[str, Any]) -> dict[str, Any]:
    cat = catalog(job)
    table = table_of(cat, job)
    if job.get("options"):
        table = table.copy(job["options"])
    data = _jobs.conform(_jobs.read_ipc(job["data"]),
                         PyarrowFieldParser.from_paimon_schema(table.fields))
    # a postponed-bucket table (bucket = -2): rows into the postpone bucket, or with
    # ``fixed_bucket`` into real buckets (Paimon's postpone.batch-write-fixed-bucket writes)
    wb = table.new_postpone_fixed_bucket_write_builder() if job.get("fixed_bucket") \
        else table.new_batch_write_builder()
    if job.get("overwrite") is not None:
        wb = wb.overwrite(job["overwrite"] or None)
    _jobs.write_and_commit(wb.new_write(), wb.new_commit(), data, job)
    return {"snapshot": latest(table_of(cat, job))}


def tag(job: dict[str, Any]) -> dict[str, Any]:
    table_of(catalog(job), job).create_tag(job["name"], snapshot_id=job.get("snapshot"))
    return {}


def alter(job: dict[str, Any]) -> dict[str, Any]:
    changes = []
    for change in job["changes"]:
        if change[0] == "add":
            changes.append(SchemaChange.add_column(change[1], DataTypeParser.parse_data_type(change[2])))
        elif change[0] == "set":
            changes.append(SchemaChange.set_option(change[1], change[2]))
        else:
            raise ValueError(f"this judge does not alter with {change[0]!r}")
    name = job["table"] + (f"$branch_{job['branch']}" if job.get("branch") else "")
    catalog(job).alter_table(name, changes, False)
    return {}


def create_branch(job: dict[str, Any]) -> dict[str, Any]:
    catalog(job).create_branch(job["table"], job["name"], job.get("tag"))
    return {}


def delete_branch(job: dict[str, Any]) -> dict[str, Any]:
    catalog(job).drop_branch(job["table"], job["name"])
    return {}


def fast_forward(job: dict[str, Any]) -> dict[str, Any]:
    catalog(job).fast_forward(job["table"], job["name"])
    return {}


def branches(job: dict[str, Any]) -> dict[str, Any]:
    return {"names": sorted(catalog(job).list_branches(job["table"]))}


if __name__ == "__main__":
    _jobs.main({"read": read, "create": create, "commit": commit, "tag": tag, "alter": alter,
                "create_branch": create_branch, "delete_branch": delete_branch,
                "fast_forward": fast_forward, "branches": branches}, _jobs.first_line)
