"""Running Apache Paimon's own clients (the judges) from the interop tests.

Each judge is a venv of its own made by ``scripts/setup_judges.sh`` (``.judges/<name>``, or
``$MINIPAIMON_JUDGES_DIR``) and a script of ``tests/interop/judges/`` run there as a child
process; nothing of the judges is imported here, nor by the product.

A JVM starts in about 2 s, so work goes to a judge in batches: a test (or a module fixture)
collects jobs in a :class:`Batch` (reads, and for the writers creates, commits, tags,
alters, compactions), runs it as one child process (one JVM) with a timeout, then looks at
every job's outcome. The job protocol is in ``judges/_jobs.py``.

A judge that is not set up skips the test, or fails it when ``MINIPAIMON_REQUIRE_JUDGES=1``
(``scripts/test.sh`` sets it: in CI a missing judge is an error).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "judges"
PYPAIMON, RUST, JAVA = "pypaimon21", "rust", "java09"
READERS = (PYPAIMON, RUST, JAVA)
#: a batch that runs longer is killed: a Java 0.9 commit that finds a snapshot-N whose JSON
#: holds another id retries forever, with no backoff
BATCH_TIMEOUT_S = 240.0


def judges_dir() -> Path:
    return Path(os.environ.get("MINIPAIMON_JUDGES_DIR") or REPO / ".judges")


def required() -> bool:
    return os.environ.get("MINIPAIMON_REQUIRE_JUDGES", "") not in ("", "0")


def pyspark_jars() -> str | None:
    """PySpark's jars/ of this (the project's) venv: the Java judge's Hadoop/netty classes."""
    if os.environ.get("JUDGE_PYSPARK_JARS"):
        return os.environ["JUDGE_PYSPARK_JARS"]
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = os.path.join(list(spec.submodule_search_locations)[0], "jars")
    return jars if os.path.isdir(jars) else None


def missing(name: str) -> str | None:
    """Why judge ``name`` cannot run here, or None."""
    venv = judges_dir() / name
    if not (venv / "bin" / "python").exists() or not (venv / ".installed").exists():
        return f"judge {name} is not set up in {venv}: run scripts/setup_judges.sh"
    if name == JAVA:
        if shutil.which("java") is None:
            return "judge java09 needs `java` (JDK/JRE 17) on PATH"
        if pyspark_jars() is None:
            return "judge java09 needs PySpark's jars (pyspark in this venv, or JUDGE_PYSPARK_JARS)"
    return None


def judge(name: str) -> Judge:
    """The judge ``name``; skips the test if it is not set up (fails under
    ``MINIPAIMON_REQUIRE_JUDGES=1``)."""
    why = missing(name)
    if why is not None:
        if required():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return Judge(name)


class JudgeFailed(AssertionError):
    """A judge process crashed, timed out or a job of it failed."""


@dataclass(frozen=True)
class Outcome:
    """One job's result: ``ok`` and the judge's values, or its ``error`` (first line)."""

    ok: bool
    error: str = ""
    detail: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    out: str | None = None

    def table(self) -> pa.Table:
        """The rows a read job returned. Raises JudgeFailed with the judge's error."""
        if not self.ok or self.out is None:
            raise JudgeFailed(f"the read failed: {self.error}\n{self.detail}")
        return pa.ipc.open_file(self.out).read_all()


_counter = itertools.count()


@dataclass(frozen=True)
class Judge:
    name: str

    @property
    def python(self) -> Path:
        return judges_dir() / self.name / "bin" / "python"

    def batch(self, work: Path) -> Batch:
        """An empty batch whose files (inputs, read results) go under ``work``."""
        return Batch(self, work / f"{self.name}-batch-{next(_counter)}")


class Batch:
    """Jobs for one run of a judge process. Each ``add`` returns the job's index."""

    def __init__(self, judge: Judge, work: Path) -> None:
        self.judge = judge
        self.work = work
        self.jobs: list[dict[str, Any]] = []
        self.seconds = 0.0
        work.mkdir(parents=True)

    def _add(self, job: dict[str, Any]) -> int:
        self.jobs.append(job)
        return len(self.jobs) - 1

    def _ipc(self, table: pa.Table) -> str:
        path = self.work / f"in-{len(self.jobs)}.arrow"
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        return str(path)

    def read(self, warehouse: str | Path, table: str, snapshot: int | None = None,
             tag: str | None = None, options: dict[str, str] | None = None,
             filter: list[list[Any]] | None = None, branch: str | None = None) -> int:
        out = str(self.work / f"read-{len(self.jobs)}.arrow")
        return self._add({"op": "read", "warehouse": str(warehouse), "table": table, "out": out,
                          "snapshot": snapshot, "tag": tag, "options": options or {},
                          "filter": filter, "branch": branch})

    def create(self, warehouse: str | Path, table: str, schema: pa.Schema,
               primary_keys: list[str] | None = None, partition_keys: list[str] | None = None,
               options: dict[str, str] | None = None) -> int:
        spec = {"primary_keys": primary_keys or [], "partition_keys": partition_keys or [],
                "options": options or {}}
        return self._add({"op": "create", "warehouse": str(warehouse), "table": table,
                          "schema": self._ipc(schema.empty_table()), "spec": spec})

    def commit(self, warehouse: str | Path, table: str, data: pa.Table,
               overwrite: dict[str, str] | None = None,
               before_commit: list[str] | None = None, branch: str | None = None,
               identifier: int | None = None, watermark: int | None = None,
               fixed_bucket: bool = False) -> int:
        return self._add({"op": "commit", "warehouse": str(warehouse), "table": table,
                          "data": self._ipc(data), "overwrite": overwrite,
                          "before_commit": before_commit, "branch": branch, "identifier": identifier,
                          "watermark": watermark, "fixed_bucket": fixed_bucket})

    def tag(self, warehouse: str | Path, table: str, name: str, snapshot: int | None = None,
            branch: str | None = None, time_retained_ms: int | None = None) -> int:
        return self._add({"op": "tag", "warehouse": str(warehouse), "table": table, "name": name,
                          "snapshot": snapshot, "branch": branch, "time_retained_ms": time_retained_ms})

    def tags(self, warehouse: str | Path, table: str) -> int:
        return self._add({"op": "tags", "warehouse": str(warehouse), "table": table})

    def alter(self, warehouse: str | Path, table: str, *changes: list[str],
              branch: str | None = None) -> int:
        return self._add({"op": "alter", "warehouse": str(warehouse), "table": table,
                          "changes": [list(c) for c in changes], "branch": branch})

    def compact(self, warehouse: str | Path, table: str, full: bool = True,
                branch: str | None = None) -> int:
        return self._add({"op": "compact", "warehouse": str(warehouse), "table": table, "full": full,
                          "branch": branch})

    def create_branch(self, warehouse: str | Path, table: str, name: str,
                      tag: str | None = None) -> int:
        return self._add({"op": "create_branch", "warehouse": str(warehouse), "table": table,
                          "name": name, "tag": tag})

    def delete_branch(self, warehouse: str | Path, table: str, name: str) -> int:
        return self._add({"op": "delete_branch", "warehouse": str(warehouse), "table": table,
                          "name": name})

    def fast_forward(self, warehouse: str | Path, table: str, name: str) -> int:
        return self._add({"op": "fast_forward", "warehouse": str(warehouse), "table": table,
                          "name": name})

    def branches(self, warehouse: str | Path, table: str) -> int:
        return self._add({"op": "branches", "warehouse": str(warehouse), "table": table})

    def orphans(self, warehouse: str | Path, table: str, older_than_ms: int) -> int:
        return self._add({"op": "orphans", "warehouse": str(warehouse), "table": table,
                          "older_than_ms": older_than_ms})

    def run(self, timeout: float = BATCH_TIMEOUT_S) -> list[Outcome]:
        """Run the jobs in one judge process. Raises JudgeFailed if the process timed out or
        crashed before finishing, or if a write job (anything but a read) failed; a failed
        read is only recorded in its Outcome."""
        jobs_path, results_path = self.work / "jobs.json", self.work / "results.json"
        jobs_path.write_text(json.dumps(self.jobs))
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        jars = pyspark_jars()
        if jars:
            env["JUDGE_PYSPARK_JARS"] = jars
        cmd = [str(self.judge.python), str(SCRIPTS / f"{self.judge.name}.py"),
               str(jobs_path), str(results_path)]
        started = time.monotonic()
        # its own session: a timeout kills the judge and its JVM (one process group)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise JudgeFailed(f"judge {self.judge.name} timed out after {timeout:.0f} s "
                              f"({self._progress(results_path)})") from None
        finally:
            self.seconds = time.monotonic() - started
        results = json.loads(results_path.read_text()) if results_path.exists() else []
        if proc.returncode != 0 or len(results) != len(self.jobs):
            tail = "\n".join(stderr.strip().splitlines()[-30:])
            raise JudgeFailed(f"judge {self.judge.name} exited with {proc.returncode} "
                              f"({self._progress(results_path)}):\n{tail}")
        outcomes = [Outcome(r["ok"], r.get("error", ""), r.get("detail", ""),
                            {k: v for k, v in r.items() if k not in ("ok", "error", "detail")},
                            job.get("out")) for r, job in zip(results, self.jobs)]
        for job, o in zip(self.jobs, outcomes):
            if job["op"] != "read" and not o.ok:
                raise JudgeFailed(f"judge {self.judge.name}: {job['op']} of {job['table']} "
                                  f"failed: {o.error}\n{o.detail}")
        return outcomes

    def _progress(self, results_path: Path) -> str:
        done = len(json.loads(results_path.read_text())) if results_path.exists() else 0
        return f"{done} of {len(self.jobs)} jobs done"


def minipaimon_command(code: str, *args: str) -> list[str]:
    """A command running ``code`` (Python) with minipaimon in a fresh interpreter of this
    venv: what a judge runs between preparing and making its commit (``before_commit``)."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r})\n{code}", *args]
