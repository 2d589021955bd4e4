"""The batch protocol of the judge scripts (imported by each of them, in its judge's venv).

A judge script runs as ``<judge venv>/bin/python <script> JOBS.json RESULTS.json``: it runs
the jobs of JOBS.json (a JSON list) in order, in one process (one JVM for the Java judge),
and after every job rewrites RESULTS.json with one result per job so far:
``{"ok": true, ...}`` or ``{"ok": false, "error": "<first line>", "detail": "<traceback>"}``.

A failed read is recorded and the batch goes on; a failed write (any other op) ends it: the
jobs after it depend on it, they get ``{"ok": false, "error": "not run: ..."}``.

Jobs (every job has ``op``, ``warehouse`` and ``table`` = ``"db.name"``):

* ``read``: ``out`` (an Arrow IPC file to write), optional ``snapshot`` (id), ``tag``,
  ``options`` (dynamic table options), ``filter`` (Java: ``[[field, "=" | "in", value]]``
  AND-ed, which Paimon uses to skip files, not to drop rows); result ``rows``.
* ``create``: ``schema`` (an Arrow IPC file whose schema is the table's), ``spec``
  (``{"primary_keys": [..], "partition_keys": [..], "options": {..}}``).
* ``commit``: ``data`` (an Arrow IPC file; for the Java judge it may hold ``_row_kind``,
  each row's kind: +I, -U, +U or -D, in fixed-bucket and ``HASH_DYNAMIC`` tables), optional ``options`` (dynamic options),
  ``overwrite`` (a partition dict, ``{}`` = everything), ``before_commit`` (a command run
  after the writer prepared its commit and before it commits: a deterministic race),
  (Java) ``identifier`` and ``watermark`` (epoch ms or null): a streaming commit of that
  identifier and watermark instead of a batch one, (pypaimon) ``fixed_bucket``: a
  postponed-bucket table written into real buckets (``new_postpone_fixed_bucket_write_builder``);
  result ``snapshot`` (the latest snapshot after the commit).
* ``tag``: ``name``, optional ``snapshot``, (Java) ``time_retained_ms``.  ``tags`` (Java, not
  a write): result ``tags``, name -> [snapshot id, create time text or null, retention ms
  or null], as Java reads each tag file.  ``alter``: ``changes``, a list of
  ``["add", name, "PAIMON TYPE"]``, ``["drop", name]``, ``["rename", old, new]``,
  ``["set", key, value]``.  ``compact`` (Java): optional ``full`` (bool).
* ``read``, ``commit``, ``tag``, ``alter``, ``compact`` take an optional ``branch``: the job
  runs on that branch of the table (Paimon's ``branch``; none or ``main``: the main branch).
* branches: ``create_branch`` (``name``, optional ``tag``: from that tag, else empty),
  ``delete_branch`` (``name``), ``fast_forward`` (``name``: main becomes that branch),
  ``branches`` (result ``names``, sorted); ``orphans`` (Java: Paimon's
  ``OrphanFilesClean`` of files older than ``older_than_ms``; result ``deleted``, the paths).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from typing import Any

import pyarrow as pa

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def read_ipc(path: str) -> pa.Table:
    return pa.ipc.open_file(path).read_all()


def write_ipc(table: pa.Table, path: str) -> None:
    tmp = path + ".tmp"
    with pa.OSFile(tmp, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)
    os.replace(tmp, path)


def write_and_commit(write: Any, commit: Any, data: Any, job: dict[str, Any]) -> None:
    """One batch write of ``data`` through a client's writer and committer (pypaimon 2.1
    and the Java bridge share these names), ``before_commit`` run in between."""
    try:
        write.write_arrow(data)
        messages = write.prepare_commit()
        run_hook(job)
        commit.commit(messages)
    finally:
        write.close()
        commit.close()


def run_hook(job: dict[str, Any]) -> None:
    """Run the job's ``before_commit`` command, if any (it must succeed)."""
    if job.get("before_commit"):
        subprocess.run(job["before_commit"], check=True, timeout=120)


def conform(data: pa.Table, target: pa.Schema) -> pa.Table:
    """``data`` in the table's own Arrow schema: its columns, order and types; a column the
    data lacks (added later) is null. The Paimon bridges reject any other schema."""
    for f in target:
        if f.name not in data.column_names:
            data = data.append_column(f.name, pa.nulls(data.num_rows, f.type))
    return data.select(target.names).cast(target)


def main(handlers: dict[str, Handler], describe_error: Callable[[BaseException], str]) -> None:
    jobs_path, results_path = sys.argv[1], sys.argv[2]
    with open(jobs_path) as f:
        jobs = json.load(f)
    results: list[dict[str, Any]] = []
    failed_write = None
    for i, job in enumerate(jobs):
        if failed_write is not None:
            results.append({"ok": False, "error": f"not run: write job {failed_write} failed"})
        else:
            try:
                handler = handlers[job["op"]]
                results.append({"ok": True, **handler(job)})
            except Exception as e:  # recorded for the test, which decides
                results.append({"ok": False, "error": describe_error(e),
                                "detail": traceback.format_exc()[-4000:]})
                if job["op"] != "read":
                    failed_write = i
        tmp = results_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f)
        os.replace(tmp, results_path)


def first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text.strip().splitlines()[0][:500]
