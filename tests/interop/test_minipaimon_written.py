"""Tables minipaimon wrote, read by Apache Paimon's clients, equal minipaimon's own read.

One warehouse of tables (append and primary-key, partitioned, one and several buckets,
upserts, deletes, full and minor compaction, expiration, deletion vectors, first-row,
changelog producers, every kind of schema change, the type table) is built once; every
retained snapshot, every tag and the latest state of every table is then read by each
judge in one batch (one process, one JVM) and compared, sorted, with minipaimon's read of
the same snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.interop import harness
from tests.interop.compare import JAVA_NULL_ROW, differences, read_at
from tests.interop.data import KV, KeyModel, kv, random_ops, types_rows, types_schema

pytestmark = pytest.mark.interop

Build = Callable[[mp.Catalog, str], None]
TABLES: dict[str, Build] = {}


def table(build: Build) -> Build:
    TABLES[build.__name__] = build
    return build


# -- the tables ------------------------------------------------------------------------------


@table
def append_unaware(cat: mp.Catalog, name: str) -> None:
    """Append, bucket -1, unpartitioned; a tag, then a full compaction into one file."""
    t = cat.create_table(name, KV)
    t.write(kv(list(range(0, 10)), "a"))
    t.write(kv(list(range(10, 15)), "b"))
    t.create_tag("two_commits")
    t.write(kv(list(range(15, 18)), "c"))
    assert t.compact() is not None
    t.write(kv([1, 2], "dup"))  # an append table keeps duplicates


@table
def append_fixed_commit_user(cat: mp.Catalog, name: str) -> None:
    """Two-phase commits of one fixed commit user (snapshots with minipaimon's
    ``minipaimonReplayable``) and expiration (its records in snapshot/.committed/)."""
    t = cat.create_table(name, KV, options={"snapshot.num-retained.min": "1",
                                            "snapshot.num-retained.max": "2"})
    for i in range(4):
        w = t.new_write("job")
        w.write(kv(list(range(i * 5, i * 5 + 5)), f"j{i}"))
        t.new_commit("job").commit(w.prepare_commit(), commit_identifier=i)
        t.after_commit()


@table
def append_fixed_partitioned(cat: mp.Catalog, name: str) -> None:
    """Append, 3 buckets by bucket-key id, partitioned by dt; minor compaction, overwrite."""
    t = cat.create_table(name, KV, partition_by=["dt"], options={"bucket": "3", "bucket-key": "id"})
    for i in range(4):
        t.write(kv(list(range(i * 7, i * 7 + 7)), f"w{i}"))
    assert t.compact(strategy="minor") is not None
    t.create_tag("minor")
    t.write(kv([3, 6, 9], "over"), mode="overwrite")


@table
def pk_one_bucket(cat: mp.Catalog, name: str) -> None:
    """Primary key id, one bucket: upserts, deletes, a full compaction, more upserts."""
    t = cat.create_table(name, KV, primary_key=["id"], options={"bucket": "1"})
    t.write(kv(list(range(10)), "a"))
    t.write(kv([1, 3, 5, 11], "b"))
    t.write(kv([2, 4, 11], "d", ["-D", "-D", "-D"]))
    assert t.compact() is not None
    t.write(kv([2, 7], "c"))


@table
def pk_sorted_loads(cat: mp.Catalog, name: str) -> None:
    """Primary key id, one bucket, small files: a load of several files into the empty
    bucket and one into a key range nothing holds go straight to the bottom level
    (commit/placement.py); an upsert meeting both stays at level 0; a tag; a full
    compaction, then a minor one after more upserts."""
    t = cat.create_table(name, KV, primary_key=["id"], options={"bucket": "1", "target-file-size": "4 kb"})
    t.write(kv(list(range(0, 600)), "load"))
    t.write(kv(list(range(1000, 1600)), "next"))
    assert {f["level"] for f in t.system_table("files").to_pylist()} == {5}
    t.create_tag("loads")
    t.write(kv([1, 599, 1000, 1599, 700], "up"))
    t.write(kv([2, 1001], "d", ["-D", "-D"]))
    assert t.compact() is not None
    t.write(kv([3, 1002, 2000], "later"))
    t.write(kv([4, 1003], "later2"))
    assert t.compact(strategy="minor") is not None


@table
def append_fixed_auto_compacted(cat: mp.Catalog, name: str) -> None:
    """Append, 2 buckets by bucket-key id: small commits compacted after the commits that
    bring a bucket to compaction.min.file-num small files (as Paimon's bucketed writers)."""
    t = cat.create_table(name, KV, options={"bucket": "2", "bucket-key": "id", "compaction.min.file-num": "3"})
    for i in range(7):
        t.write(kv(list(range(i * 4, i * 4 + 4)), f"s{i}"))
    assert any(s.commit_kind == "COMPACT" for s in t.snapshots())


@table
def pk_partitioned(cat: mp.Catalog, name: str) -> None:
    """Primary key (id, dt), partitioned, 4 buckets; seeded upserts and deletes checked
    against a model; minor then full compaction; a tag; expiration keeps 4 snapshots."""
    t = cat.create_table(name, KV, primary_key=["id", "dt"], partition_by=["dt"],
                         options={"bucket": "4"})
    model = KeyModel()
    for i, (ids, kinds) in enumerate(random_ops(seed=22, n_keys=60, batches=8, size=20)):
        batch = kv(ids, f"r{i}", kinds)
        t.write(batch)
        model.apply(batch)
        if i == 2:
            t.create_tag("early")
        if i == 4:
            assert t.compact(strategy="minor") is not None
        if i == 6:
            assert t.compact() is not None
    assert differences(t.to_arrow(), model.table(KV)) is None
    t.expire_snapshots(retain_max=4, retain_min=1)
    assert len(t.snapshots()) == 4


REGIONS = pa.schema([pa.field("id", pa.int64(), nullable=False),
                     pa.field("region", pa.int32(), nullable=False),
                     pa.field("day", pa.date32(), nullable=False), ("v", pa.string())])


def regions(ids: list[int], tag: str, kinds: list[str] | None = None) -> pa.Table:
    cols: dict[str, object] = {
        "id": ids, "region": [i % 3 - 1 for i in ids],
        "day": [date(2024, 2, 28) + timedelta(days=i % 2) for i in ids], "v": [f"{tag}{i}" for i in ids]}
    t = pa.table(cols, schema=REGIONS)
    return t if kinds is None else t.append_column("_row_kind", pa.array(kinds))


@table
def pk_int_and_date_partitions(cat: mp.Catalog, name: str) -> None:
    """Partitioned by an int (negative too) and a date: BinaryRow partitions and paths."""
    t = cat.create_table(name, REGIONS, primary_key=["id", "region", "day"],
                         partition_by=["region", "day"], options={"bucket": "2"})
    t.write(regions(list(range(12)), "a"))
    t.write(regions([0, 5, 7, 13], "b", ["+I", "-D", "+I", "+I"]))


@table
def append_many_partitions(cat: mp.Catalog, name: str) -> None:
    """Append, bucket -1, partitioned by an int and a date: one write into 62 partitions
    (split by one sort of the input, every file's stats computed at once, nulls among the
    values), then a write into a few of them again."""
    t = cat.create_table(name, REGIONS, partition_by=["region", "day"])
    ids = list(range(124))
    t.write(pa.table({"id": ids, "region": [i % 31 - 10 for i in ids],
                      "day": [date(2024, 2, 28) + timedelta(days=i % 2) for i in ids],
                      "v": [None if i % 7 == 0 else f"a{i}" for i in ids]}, schema=REGIONS))
    t.write(regions(list(range(200, 206)), "b"))


@table
def pk_deletion_vectors(cat: mp.Catalog, name: str) -> None:
    """Deletion vectors, 2 buckets: overlapping upserts and deletes, then a full compaction."""
    t = cat.create_table(name, KV, primary_key=["id"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(kv(list(range(20)), "a"))
    t.write(kv(list(range(10, 30)), "b"))
    t.write(kv([1, 12, 25], "d", ["-D"] * 3))
    t.create_tag("with_vectors")
    t.write(kv(list(range(5, 15)), "c"))
    assert t.compact() is not None
    t.write(kv([0, 40], "e"))


@table
def pk_first_row(cat: mp.Catalog, name: str) -> None:
    """first-row merge engine, one bucket: a second write repeats keys 3..5 (ignored)."""
    t = cat.create_table(name, KV, primary_key=["id"],
                         options={"bucket": "1", "merge-engine": "first-row"})
    t.write(kv(list(range(6)), "first"))
    t.write(kv(list(range(3, 9)), "second"))


@table
def pk_first_row_partitioned(cat: mp.Catalog, name: str) -> None:
    """first-row, partitioned, 2 buckets: repeated keys across writes, a full compaction
    between, then a minor one. (Paimon refuses deletion vectors with first-row, and so
    does minipaimon.)"""
    t = cat.create_table(name, KV, primary_key=["id", "dt"], partition_by=["dt"],
                         options={"bucket": "2", "merge-engine": "first-row"})
    t.write(kv(list(range(12)), "first"))
    t.write(kv(list(range(6, 18)), "second"))
    assert t.compact() is not None
    t.write(kv(list(range(15, 20)), "third"))
    t.write(kv(list(range(0, 22, 3)), "fourth"))
    t.compact(strategy="minor")


@table
def pk_changelog_input(cat: mp.Catalog, name: str) -> None:
    """changelog-producer=input: changelog files beside the data files."""
    t = cat.create_table(name, KV, primary_key=["id"],
                         options={"bucket": "2", "changelog-producer": "input"})
    t.write(kv(list(range(10)), "a"))
    t.write(kv([2, 3, 12], "b"))
    t.write(kv([4], "d", ["-D"]))


@table
def pk_changelog_lookup(cat: mp.Catalog, name: str) -> None:
    """changelog-producer=lookup: every commit's files compacted with a changelog."""
    t = cat.create_table(name, KV, primary_key=["id", "dt"], partition_by=["dt"],
                         options={"bucket": "2", "changelog-producer": "lookup"})
    t.write(kv(list(range(12)), "a"))
    t.write(kv([1, 2, 3, 20], "b"))
    t.write(kv([5, 6], "d", ["-D", "-D"]))


@table
def pk_add_column(cat: mp.Catalog, name: str) -> None:
    t = cat.create_table(name, KV, primary_key=["id"], options={"bucket": "2"})
    t.write(kv(list(range(8)), "a"))
    t.add_column("extra", pa.string())
    t.write(kv([1, 9], "b").append_column("extra", pa.array(["x1", "x9"])))


@table
def pk_rename_column(cat: mp.Catalog, name: str) -> None:
    t = cat.create_table(name, KV, primary_key=["id"], options={"bucket": "2"})
    t.write(kv(list(range(8)), "a"))
    t.rename_column("name", "label")
    t.write(kv([2, 9], "b").rename_columns(["id", "label", "score", "dt"]))


@table
def pk_drop_column(cat: mp.Catalog, name: str) -> None:
    t = cat.create_table(name, KV, primary_key=["id"], options={"bucket": "2"})
    t.write(kv(list(range(8)), "a"))
    t.drop_column("score")
    t.write(kv([3, 9], "b").drop_columns(["score"]))


WIDE = pa.schema([pa.field("id", pa.int32(), nullable=False), ("small", pa.int16()),
                  ("f", pa.float32()), ("d", pa.decimal128(10, 2))])


@table
def pk_widen_types(cat: mp.Catalog, name: str) -> None:
    """int16 -> int64, float -> double, decimal(10,2) -> decimal(20,2) (INT64 -> FLBA)."""
    t = cat.create_table(name, WIDE, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2, 3], "small": [-32768, 0, 32767], "f": [1.5, -0.25, None],
                      "d": [Decimal("12345678.91"), None, Decimal("-0.01")]}, schema=WIDE))
    t.alter_column_type("small", pa.int64())
    t.alter_column_type("f", pa.float64())
    t.alter_column_type("d", pa.decimal128(20, 2))
    t.write(pa.table({"id": [3, 4], "small": [2**40, -(2**40)], "f": [0.1, 1e300],
                      "d": [Decimal("123456789012345678.12"), Decimal("1.00")]},
                     schema=t.schema()))


@table
def append_schema_changes(cat: mp.Catalog, name: str) -> None:
    """An append table through all four changes, a commit after each."""
    t = cat.create_table(name, WIDE)
    t.write(pa.table({"id": [1, 2], "small": [1, 2], "f": [0.5, 1.5],
                      "d": [Decimal("1.10"), Decimal("2.20")]}, schema=WIDE))
    t.add_column("note", pa.string())
    t.write(pa.table({"id": [3], "small": [3], "f": [2.5], "d": [None], "note": ["n3"]},
                     schema=t.schema()))
    t.rename_column("note", "comment")
    t.write(pa.table({"id": [4], "small": [4], "f": [3.5], "d": [Decimal("4.40")],
                      "comment": ["c4"]}, schema=t.schema()))
    t.alter_column_type("small", pa.int32())
    t.write(pa.table({"id": [5], "small": [100000], "f": [4.5], "d": [None], "comment": [None]},
                     schema=t.schema()))
    t.drop_column("f")
    t.write(pa.table({"id": [6], "small": [6], "d": [Decimal("6.60")], "comment": ["c6"]},
                     schema=t.schema()))


@table
def types_append(cat: mp.Catalog, name: str) -> None:
    t = cat.create_table(name, types_schema())
    t.write(types_rows([0, 1, 2, 3]))
    t.write(types_rows([4, 5, 6, 7], variant=1))


@table
def types_pk(cat: mp.Catalog, name: str) -> None:
    t = cat.create_table(name, types_schema(), primary_key=["id"], options={"bucket": "1"})
    t.write(types_rows([0, 1, 2, 3, 4, 5]))
    t.write(types_rows([1, 2, 6], variant=2))
    gone = types_rows([5])
    t.write(gone.append_column("_row_kind", pa.array(["-D"])))


# -- building them, and every read of them ----------------------------------------------------


@dataclass(frozen=True)
class View:
    """One read of a table: the latest state, a snapshot or a tag; minipaimon's rows."""

    table: str
    snapshot: int | None
    tag: str | None
    rows: pa.Table

    def __str__(self) -> str:
        at = f"snapshot {self.snapshot}" if self.snapshot else f"tag {self.tag}" if self.tag else "latest"
        return f"{self.table}@{at}"


@dataclass
class Warehouse:
    path: Path
    views: list[View]
    reads: dict[str, list[harness.Outcome]]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("minipaimon-written")
    cat = mp.catalog(str(path))
    views = []
    for name, build in TABLES.items():
        build(cat, f"db.{name}")
        t = cat.table(f"db.{name}")
        views.append(View(name, None, None, t.to_arrow()))
        views += [View(name, s.id, None, read_at(t.path, snapshot_id=s.id)) for s in t.snapshots()]
        views += [View(name, None, tag, read_at(t.path, tag=tag)) for tag in sorted(t.tags())]
    return Warehouse(path, views, {})


def reads(wh: Warehouse, name: str, tmp_path_factory: pytest.TempPathFactory) -> list[harness.Outcome]:
    """Judge ``name``'s reads of every view, in one batch run on first use."""
    judge = harness.judge(name)
    if name not in wh.reads:
        batch = judge.batch(tmp_path_factory.mktemp(f"reads-{name}"))
        for v in wh.views:
            batch.read(wh.path, f"db.{v.table}", snapshot=v.snapshot, tag=v.tag)
        wh.reads[name] = batch.run()
    return wh.reads[name]


QUIRKS = {harness.JAVA: [JAVA_NULL_ROW]}

KNOWN: dict[tuple[str, str], pytest.MarkDecorator] = {}
CASES = [pytest.param(judge, name, marks=[KNOWN[judge, name]] if (judge, name) in KNOWN else [],
                      id=f"{judge}-{name}")
         for judge in harness.READERS for name in TABLES]


@pytest.mark.parametrize(("judge_name", "table_name"), CASES)
def test_a_paimon_client_reads_every_snapshot_and_tag_as_minipaimon_does(
        warehouse: Warehouse, judge_name: str, table_name: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    outcomes = reads(warehouse, judge_name, tmp_path_factory)
    problems = []
    checked = 0
    for view, outcome in zip(warehouse.views, outcomes):
        if view.table != table_name:
            continue
        checked += 1
        if not outcome.ok:
            problems.append(f"{view}: {outcome.error}")
            continue
        diff = differences(outcome.table(), view.rows, QUIRKS.get(judge_name, ()))
        if diff:
            problems.append(f"{view}: {diff}")
    assert checked >= 2  # the latest state and at least one snapshot
    assert next(v for v in warehouse.views if v.table == table_name).rows.num_rows > 0
    assert not problems, f"{judge_name} reads differently:\n" + "\n".join(problems)
