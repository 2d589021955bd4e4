"""Issue 16 (item 23): ``incremental-between`` carries deletes and row kinds; ``$audit_log``
honours it. Connector objects driven as Spark drives them (through pickle)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import LongType, StructField, StructType  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.errors import InvalidArgumentError  # noqa: E402
from minipaimon_core.system_tables import audit_log_between  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def changes(path: Path, producer: str) -> tuple[mp.Table, int]:
    """First ids 1..3, then (2,+U), (3,-D), (4,+I); the table and the last snapshot of the
    first write (lookup adds a COMPACT snapshot with the changelog after each write)."""
    options = {} if producer == "none" else {"changelog-producer": producer}
    t = mp.create_table(str(path), KV, primary_key=["id"], options=options)
    t.write(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}, schema=KV))
    first = t.latest_snapshot().id
    t.write(pa.table({"id": [2, 3, 4], "v": [21, 30, 40], "_row_kind": ["+U", "-D", "+I"]}))
    return t, first


def read(path: Path, **options: str) -> list[dict[str, Any]]:
    ds = pickle.loads(pickle.dumps(MiniPaimonDataSource({"path": str(path), **options})))
    schema = ds.schema()
    reader = ds.reader(schema)
    out: list[dict[str, Any]] = []
    for p in reader.partitions():
        task = pickle.loads(pickle.dumps(reader))
        for b in task.read(pickle.loads(pickle.dumps(p))):
            out += b.to_pylist()
    return sorted(out, key=lambda r: (r["id"], r.get("_row_kind", "")))


@pytest.mark.parametrize("producer", ["none", "input", "lookup"])
def test_incremental_read_carries_deletes_and_kinds(tmp_path: Path, producer: str) -> None:
    t, first = changes(tmp_path / "t", producer)
    end = t.latest_snapshot().id
    got = read(tmp_path / "t", **{"incremental-between": f"{first},{end}", "read.changelog": "true"})
    kinds = {(r["id"], r["_row_kind"]) for r in got}
    assert (3, "-D") in kinds and (4, "+I") in kinds
    # The upsert of 2: +U from a changelog producer; without one, the file's kind (+I).
    assert (2, "+I" if producer == "none" else "+U") in kinds
    assert all(i != 1 for i, _ in kinds)  # 1 did not change


def test_incremental_read_without_changelog_keeps_upserts_only(tmp_path: Path) -> None:
    changes(tmp_path / "t", "none")
    got = read(tmp_path / "t", **{"incremental-between": "1,2"})
    assert got == [{"id": 2, "v": 21}, {"id": 4, "v": 40}]


def test_audit_log_honours_incremental_between(tmp_path: Path) -> None:
    t, _ = changes(tmp_path / "t", "none")
    log = audit_log_between(t, 1, 2).sort_by("id").to_pylist()
    assert [(r["rowkind"], r["id"]) for r in log] == [("+I", 2), ("-D", 3), ("+I", 4)]
    got = read(Path(str(tmp_path / "t") + "$audit_log"), **{"incremental-between": "1,2"})
    assert [(r["rowkind"], r["id"]) for r in got] == [("+I", 2), ("-D", 3), ("+I", 4)]


def test_incremental_between_needs_start_before_end(tmp_path: Path) -> None:
    changes(tmp_path / "t", "none")
    ds = MiniPaimonDataSource({"path": str(tmp_path / "t"), "incremental-between": "2,1"})
    with pytest.raises(InvalidArgumentError, match="start < end"):
        ds.reader(StructType([StructField("id", LongType(), False),
                              StructField("v", LongType())])).partitions()
