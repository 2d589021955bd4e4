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
    # The upsert of 2: +U from a changelog producer; without one, the kind its data file
    # keeps, +U as written (Paimon's PrimaryKeySimpleTableTest.testAuditLog; issue 38 item 7)
    assert (2, "+U") in kinds
    assert all(i != 1 for i, _ in kinds)  # 1 did not change


def test_incremental_read_without_changelog_keeps_upserts_only(tmp_path: Path) -> None:
    changes(tmp_path / "t", "none")
    got = read(tmp_path / "t", **{"incremental-between": "1,2"})
    assert got == [{"id": 2, "v": 21}, {"id": 4, "v": 40}]


def test_audit_log_honours_incremental_between(tmp_path: Path) -> None:
    t, _ = changes(tmp_path / "t", "none")
    log = audit_log_between(t, 1, 2).sort_by("id").to_pylist()
    assert [(r["rowkind"], r["id"]) for r in log] == [("+U", 2), ("-D", 3), ("+I", 4)]
    got = read(Path(str(tmp_path / "t") + "$audit_log"), **{"incremental-between": "1,2"})
    assert [(r["rowkind"], r["id"]) for r in got] == [("+U", 2), ("-D", 3), ("+I", 4)]


def test_incremental_between_needs_start_before_end(tmp_path: Path) -> None:
    changes(tmp_path / "t", "none")
    ds = MiniPaimonDataSource({"path": str(tmp_path / "t"), "incremental-between": "2,1"})
    with pytest.raises(InvalidArgumentError, match="start < end"):
        ds.reader(StructType([StructField("id", LongType(), False),
                              StructField("v", LongType())])).partitions()


def kinds_of(rows: list[dict[str, Any]]) -> list[tuple[int, str, int]]:
    return sorted((r["id"], r["_row_kind"], r["v"]) for r in rows)


def test_scan_mode_delta_reads_the_new_files_whatever_the_producer(tmp_path: Path) -> None:
    t, first = changes(tmp_path / "t", "lookup")
    end = t.latest_snapshot().id
    options = {"incremental-between": f"{first},{end}", "read.changelog": "true"}
    delta = read(tmp_path / "t", **options, **{"incremental-between-scan-mode": "delta"})
    changes(tmp_path / "plain", "none")
    plain = read(tmp_path / "plain", **{"incremental-between": "1,2", "read.changelog": "true"})
    assert kinds_of(delta) == kinds_of(plain)  # the written rows with their kinds, no changelog
    changelog = read(tmp_path / "t", **options, **{"incremental-between-scan-mode": "changelog"})
    assert kinds_of(changelog) == kinds_of(read(tmp_path / "t", **options))  # auto: changelog
    assert (2, "-U", 20) in kinds_of(changelog)


def test_scan_mode_changelog_needs_a_producer(tmp_path: Path) -> None:
    changes(tmp_path / "t", "none")
    with pytest.raises(InvalidArgumentError, match="changelog-producer"):
        read(tmp_path / "t", **{"incremental-between": "1,2", "incremental-between-scan-mode": "changelog"})


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation"])
def test_scan_mode_diff_compares_the_two_snapshots(tmp_path: Path, engine: str) -> None:
    options = {} if engine == "deduplicate" else {"merge-engine": "aggregation",
                                                    "fields.v.aggregate-function": "sum"}
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options=options)
    t.write(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}, schema=KV))
    t.create_tag("before", 1)
    t.write(pa.table({"id": [2, 4], "v": [1, 40]}, schema=KV))
    t.write(pa.table({"id": [3], "v": [0], "_row_kind": ["-D"]}))
    t.compact(full=True)
    t.create_tag("after", t.latest_snapshot().id)
    old = {r["id"]: r["v"] for r in t.scan(snapshot_id=1).to_arrow().to_pylist()}
    new = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}  # from two full reads:
    expected = sorted([(k, "-D", v) for k, v in old.items() if k not in new]
                      + [(k, "+I", v) for k, v in new.items() if k not in old]
                      + [x for k in old.keys() & new.keys() if old[k] != new[k]
                         for x in ((k, "-U", old[k]), (k, "+U", new[k]))])
    assert len(expected) >= 3
    for between in ("1," + str(t.latest_snapshot().id), "before,after"):
        got = read(tmp_path / "t", **{"incremental-between": between, "read.changelog": "true",
                                      "incremental-between-scan-mode": "diff"})
        assert kinds_of(got) == expected, between
    plain = read(tmp_path / "t", **{"incremental-between": "before,after", "incremental-between-scan-mode": "diff"})
    assert plain == [{"id": k, "v": v} for k, kind, v in expected if kind in ("+I", "+U")]  # new values


def test_incremental_between_timestamp_picks_the_snapshots_at_those_times(tmp_path: Path) -> None:
    t, first = changes(tmp_path / "t", "none")
    times = [s.timeMillis for s in t.snapshots()]
    got = read(tmp_path / "t", **{"incremental-between-timestamp": f"{times[0]},{times[-1]}",
                                  "read.changelog": "true"})
    assert kinds_of(got) == kinds_of(read(tmp_path / "t", **{"incremental-between": "1,2",
                                                             "read.changelog": "true"}))


def test_incremental_options_are_checked(tmp_path: Path) -> None:
    changes(tmp_path / "t", "none")
    with pytest.raises(InvalidArgumentError, match="incremental-between-scan-mode"):
        read(tmp_path / "t", **{"incremental-between": "1,2", "incremental-between-scan-mode": "diffs"})
    with pytest.raises(InvalidArgumentError, match="incremental-between-timestamp"):
        read(tmp_path / "t", **{"incremental-between-timestamp": "yesterday,today"})
    with pytest.raises(mp.SnapshotNotFoundError, match="nope"):
        read(tmp_path / "t", **{"incremental-between": "nope,2"})
