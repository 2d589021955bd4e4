"""Tables Apache Paimon's writers made (pypaimon 2.1 and the Java engine 0.9), read by
minipaimon (Python, Spark batch, one Spark stream), equal to what their writer reads.

The writers work in batches (one process each): pypaimon writes its tables; Java writes its
own and compacts pypaimon's deletion-vector and first-row tables (whatever pypaimon writes
into those is invisible to every batch reader until a compaction moves it out of level 0,
and pypaimon 2.1 cannot compact); then each reads back every view (latest, every snapshot,
every tag) that minipaimon reads. The reference of a table is its writer's read, except for
pypaimon's tables that Java compacted: pypaimon 2.1 cannot read manifests Java 0.9 wrote
(``KeyError: '_VALUE_STATS_COLS'``, a pypaimon bug), so their reference is Java's read.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.interop import harness
from tests.interop.compare import JAVA_NULL_ROW, differences, read_at
from tests.interop.data import KV, KeyModel, kv, types_rows, types_schema

pytestmark = pytest.mark.interop

PY, JAVA = harness.PYPAIMON, harness.JAVA
BUCKET2 = {"bucket": "2"}
WIDE = pa.schema([pa.field("id", pa.int32(), nullable=False), ("small", pa.int16()),
                  ("f", pa.float32()), ("d", pa.decimal128(10, 2))])


def write_common(b: harness.Batch, wh: Path) -> None:
    """The tables both writers make (ids ``db.<name>``)."""
    b.create(wh, "db.append_unaware", KV)
    b.commit(wh, "db.append_unaware", kv(list(range(10)), "a"))
    b.commit(wh, "db.append_unaware", kv(list(range(10, 15)), "b"))

    b.create(wh, "db.append_fixed", KV, partition_keys=["dt"],
             options={"bucket": "2", "bucket-key": "id"})
    b.commit(wh, "db.append_fixed", kv(list(range(10)), "a"))
    b.commit(wh, "db.append_fixed", kv(list(range(5, 15)), "b"))

    b.create(wh, "db.pk_partitioned", KV, primary_keys=["id", "dt"], partition_keys=["dt"],
             options=BUCKET2)
    b.commit(wh, "db.pk_partitioned", kv(list(range(20)), "a"))
    b.tag(wh, "db.pk_partitioned", "v1")
    b.commit(wh, "db.pk_partitioned", kv(list(range(10, 25)), "b"))

    b.create(wh, "db.pk_dv", KV, primary_keys=["id"],
             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    for i, ids in enumerate([range(20), range(10, 30), range(5, 15)]):
        b.commit(wh, "db.pk_dv", kv(list(ids), f"w{i}"))

    b.create(wh, "db.pk_first_row", KV, primary_keys=["id"],
             options={"bucket": "1", "merge-engine": "first-row"})
    b.commit(wh, "db.pk_first_row", kv(list(range(10)), "first"))
    b.commit(wh, "db.pk_first_row", kv(list(range(5, 15)), "second"))

    b.create(wh, "db.pk_add_column", KV, primary_keys=["id"], options={"bucket": "1"})
    b.commit(wh, "db.pk_add_column", kv(list(range(8)), "a"))
    b.alter(wh, "db.pk_add_column", ["add", "extra", "STRING"])
    b.commit(wh, "db.pk_add_column", kv([1, 9], "b").append_column("extra", pa.array(["x", "y"])))

    b.create(wh, "db.types_append", types_schema())
    b.commit(wh, "db.types_append", types_rows([0, 1, 2, 3]))
    b.commit(wh, "db.types_append", types_rows([4, 5, 6, 7], variant=1))
    b.create(wh, "db.types_pk", types_schema(), primary_keys=["id"], options={"bucket": "1"})
    b.commit(wh, "db.types_pk", types_rows([0, 1, 2, 3, 4, 5]))
    b.commit(wh, "db.types_pk", types_rows([1, 2, 6], variant=2))


def write_java_only(b: harness.Batch, wh: Path) -> None:
    """Java's schema changes of every kind, full compactions, changelog lookup."""
    t = "db.pk_schema_changes"
    b.create(wh, t, WIDE, primary_keys=["id"], options={"bucket": "1"})
    b.commit(wh, t, pa.table({"id": [1, 2, 3], "small": [1, 2, 3], "f": [0.5, 1.5, 2.5],
                              "d": [Decimal("1.10"), None, Decimal("-3.30")]}, schema=WIDE))
    b.tag(wh, t, "before_changes")
    b.alter(wh, t, ["add", "note", "STRING"])
    b.commit(wh, t, pa.table({"id": [2, 4], "note": ["n2", "n4"], "small": [20, 40]}))
    b.alter(wh, t, ["rename", "note", "comment"])
    b.commit(wh, t, pa.table({"id": [5], "comment": ["c5"], "small": [50]}))
    b.alter(wh, t, ["widen", "small", "BIGINT"], ["widen", "d", "DECIMAL(20, 2)"])
    b.commit(wh, t, pa.table({"id": [6], "small": [2**40], "d": [Decimal("123456789012345678.12")]}))
    b.alter(wh, t, ["drop", "f"])
    b.commit(wh, t, pa.table({"id": [1, 7], "small": [-1, 7], "comment": ["again", None]}))

    b.create(wh, "db.pk_full_compaction", KV, primary_keys=["id", "dt"], partition_keys=["dt"],
             options=BUCKET2)
    for i, ids in enumerate([range(15), range(10, 25), range(0, 30, 3)]):
        b.commit(wh, "db.pk_full_compaction", kv(list(ids), f"w{i}"))
    b.compact(wh, "db.pk_full_compaction")

    b.create(wh, "db.append_compaction", KV)
    for i in range(5):
        b.commit(wh, "db.append_compaction", kv(list(range(i * 3, i * 3 + 3)), f"w{i}"))
    b.compact(wh, "db.append_compaction")

    b.create(wh, "db.pk_changelog_lookup", KV, primary_keys=["id"],
             options={"bucket": "2", "changelog-producer": "lookup"})
    b.commit(wh, "db.pk_changelog_lookup", kv(list(range(12)), "a"))
    b.commit(wh, "db.pk_changelog_lookup", kv(list(range(6, 18)), "b"))


COMMON = ["append_unaware", "append_fixed", "pk_partitioned", "pk_dv", "pk_first_row",
          "pk_add_column", "types_append", "types_pk"]
JAVA_ONLY = ["pk_schema_changes", "pk_full_compaction", "append_compaction", "pk_changelog_lookup"]
#: pypaimon's tables whose rows only a compaction makes visible: Java compacts them
COMPACTED_BY_JAVA = ["pk_dv", "pk_first_row"]
TABLES = [(PY, n) for n in COMMON] + [(JAVA, n) for n in COMMON + JAVA_ONLY]
CASES = [pytest.param(w, n, id=f"{w}-{n}") for w, n in TABLES]


def reference(writer: str, name: str) -> str:
    return JAVA if writer == PY and name in COMPACTED_BY_JAVA else writer


@dataclass(frozen=True)
class View:
    writer: str
    table: str
    snapshot: int | None = None
    tag: str | None = None

    def __str__(self) -> str:
        at = f"snapshot {self.snapshot}" if self.snapshot else f"tag {self.tag}" if self.tag else "latest"
        return f"{self.writer}:{self.table}@{at}"


@dataclass
class Written:
    warehouses: dict[str, Path]
    views: list[View] = field(default_factory=list)
    reads: dict[View, harness.Outcome] = field(default_factory=dict)

    def path(self, writer: str, table: str) -> str:
        return str(self.warehouses[writer] / "db.db" / table)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """Both writers' warehouses, and each reference reader's read of every view."""
    py, java = harness.judge(PY), harness.judge(JAVA)
    work = tmp_path_factory.mktemp("paimon-written")
    w = Written({PY: work / "pypaimon-wh", JAVA: work / "java-wh"})
    b = py.batch(work)
    write_common(b, w.warehouses[PY])
    b.run()
    b = java.batch(work)
    for name in COMPACTED_BY_JAVA:
        b.compact(w.warehouses[PY], f"db.{name}")
    write_common(b, w.warehouses[JAVA])
    write_java_only(b, w.warehouses[JAVA])
    b.run()
    for writer, name in TABLES:  # the views minipaimon sees on disk
        t = mp.open_table(w.path(writer, name))
        w.views.append(View(writer, name))
        w.views += [View(writer, name, snapshot=s.id) for s in t.snapshots()]
        w.views += [View(writer, name, tag=tag) for tag in sorted(t.tags())]
    for reader in (PY, JAVA):
        b = harness.judge(reader).batch(work)
        mine = [v for v in w.views if reference(v.writer, v.table) == reader]
        for v in mine:
            b.read(w.warehouses[v.writer], f"db.{v.table}", snapshot=v.snapshot, tag=v.tag)
        w.reads.update(zip(mine, b.run()))
    return w


def quirks(view: View) -> list[str]:
    return [JAVA_NULL_ROW] if reference(view.writer, view.table) == JAVA else []


@pytest.mark.parametrize(("writer", "name"), CASES)
def test_minipaimon_reads_every_view_as_the_writer_does(written: Written, writer: str, name: str) -> None:
    problems = []
    views = [v for v in written.views if (v.writer, v.table) == (writer, name)]
    for view in views:
        want = written.reads[view]
        if not want.ok:
            problems.append(f"{view}: the reference read failed: {want.error}")
            continue
        path = written.path(writer, name)
        got = mp.open_table(path).to_arrow() if view.snapshot is None and view.tag is None \
            else read_at(path, snapshot_id=view.snapshot, tag=view.tag)
        diff = differences(got, want.table(), quirks(view))
        if diff:
            problems.append(f"{view}: {diff}")
    assert len(views) >= 2 and written.reads[views[0]].table().num_rows > 0
    assert not problems, "\n".join(problems)


def test_the_writers_made_what_the_tests_mean(written: Written) -> None:
    """The setup is real: Java compacted pypaimon's level-0 tables (a COMPACT snapshot on
    top), lookup-compacted its own deletion-vector table (index files), and both tables
    with a tag carry it."""
    for name in COMPACTED_BY_JAVA:
        assert mp.open_table(written.path(PY, name)).latest_snapshot().commitKind == "COMPACT"
    java_dv = mp.open_table(written.path(JAVA, "pk_dv"))
    assert java_dv.latest_snapshot().indexManifest is not None
    for writer in (PY, JAVA):
        assert mp.open_table(written.path(writer, "pk_partitioned")).tags() == {"v1": 1}


def test_minipaimon_reads_a_pypaimon_primary_key_table_after_a_java_compaction(tmp_path: Path) -> None:
    """pypaimon writes a primary-key file's value stats as an empty row with
    ``_VALUE_STATS_COLS = []``; Java 0.9's manifest records have no such field, so its
    compaction re-encodes those entries with an empty row meaning every column: read as
    unknown stats (as Java does), not as a corrupt row."""
    py, java = harness.judge(PY), harness.judge(JAVA)
    wh = tmp_path / "wh"
    b = py.batch(tmp_path)
    b.create(wh, "db.t", KV, primary_keys=["id"], options={"bucket": "1"})
    b.commit(wh, "db.t", kv([1, 2, 3], "a"))
    b.run()
    b = java.batch(tmp_path)
    b.compact(wh, "db.t")
    java_read = b.read(wh, "db.t")
    want = b.run()[java_read].table()
    b = harness.judge(harness.RUST).batch(tmp_path)
    rust_read = b.read(wh, "db.t")
    assert want.num_rows == 3 and differences(b.run()[rust_read].table(), want) is None
    assert differences(mp.open_table(str(wh / "db.db" / "t")).to_arrow(), want) is None


def spark_rows(df: Any) -> pa.Table:
    return df.toArrow()


@pytest.mark.parametrize(("writer", "name"), CASES)
def test_spark_reads_the_latest_state_and_tags_as_the_writer_does(
        spark: Any, written: Written, writer: str, name: str) -> None:
    problems = []
    for view in [v for v in written.views if (v.writer, v.table) == (writer, name)
                 and v.snapshot is None]:
        reader = spark.read.format("minipaimon")
        if view.tag:
            reader = reader.option("scan.tag-name", view.tag)
        got = spark_rows(reader.load(written.path(writer, name)))
        want = written.reads[view].table()
        # Spark has its own types (microsecond timestamps, its session time zone):
        # compare the values, cast to the Paimon client's Arrow types
        diff = differences(got.cast(want.schema), want, quirks(view))
        if diff:
            problems.append(f"{view}: {diff}")
    assert not problems, "\n".join(problems)


def test_a_spark_stream_follows_a_java_written_primary_key_table(
        spark: Any, written: Written, tmp_path: Path) -> None:
    """A stream over Java's partitioned PK table: the first micro-batch is the table, the
    next one the rows of a later Java commit; upserted by key they equal Java's read."""
    java = harness.judge(JAVA)
    wh = tmp_path / "wh"  # a copy: the other tests read the module's table as it was written
    path = str(wh / "db.db" / "pk_partitioned")
    shutil.copytree(written.path(JAVA, "pk_partitioned"), path)
    batches: list[pa.Table] = []

    def collect(df: Any, batch_id: int) -> None:
        batches.append(df.toArrow())

    def run_stream() -> None:
        q = (spark.readStream.format("minipaimon").load(path).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        q.awaitTermination()
        assert q.exception() is None

    run_stream()
    assert len(batches) == 1
    initial = written.reads[View(JAVA, "pk_partitioned")].table()
    assert differences(batches[0].select(KV.names).cast(KV), initial) is None
    change = kv(list(range(20, 30)), "java-later")
    b = java.batch(tmp_path)
    b.commit(wh, "db.pk_partitioned", change)
    final = b.read(wh, "db.pk_partitioned")
    outcomes = b.run()
    run_stream()
    assert len(batches) == 2
    model = KeyModel()
    for batch in batches:
        model.apply(batch.select(KV.names).cast(KV))
    assert sorted(batches[1].column("id").to_pylist()) == list(range(20, 30))
    assert differences(model.table(KV), outcomes[final].table()) is None

