"""ORC and Avro data files between Paimon's Java engine 0.9 and minipaimon (issue 27, item 2).

Java writes each kind (ORC primary key, Avro append, ORC then Parquet after a
``file.format`` change, ...): minipaimon reads exactly Java's rows (Python, Spark's
``format("minipaimon")`` and ``minipaimon_spark.table``); minipaimon then writes a batch of
updates and new keys into a copy, Java the same batch into another copy, and Java reads
both alike. The reverse: tables minipaimon creates in ORC and Avro are read by Java and
pypaimon 2.1 as minipaimon reads them.

Time zones: ORC stores a TIMESTAMP as a wall-clock time and readers convert by the writer's
zone, so wall-clock values survive a JVM outside UTC (tested). Paimon 0.9 stores a
TIMESTAMP WITH LOCAL TIME ZONE in ORC as the instant shifted by the writing JVM's offset
(``Timestamp.toSQLTimestamp()``, its "legacy" LTZ encoding) and shifts it back on reading
in the same zone: minipaimon reads and writes the instant itself, as a Paimon JVM in UTC
does, so those tables are judged by a JVM in UTC (docs/format.md, "Data files").
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

import minipaimon_core as mp
import minipaimon_spark
from tests.interop import harness
from tests.interop.compare import JAVA_NULL_ROW, differences
from tests.interop.data import types_rows, types_schema

pytestmark = pytest.mark.interop

JAVA = harness.JAVA
ZONE = "-Xmx1g -Duser.timezone=America/New_York"


def safe_types(ids: list[int], variant: int = 0) -> pa.Table:
    """The type table with the timestamps minipaimon writes to ORC (the others are refused,
    tests/test_file_formats.py)."""
    return orc_safe(types_rows(ids, variant))


def orc_safe(t: pa.Table) -> pa.Table:
    """``t`` with its timestamps within 1677..2262 (pyarrow reads ORC timestamps as
    nanoseconds) and none before 1970 with a fraction of a second (Apache ORC's C++ writer
    stores them with negative nanoseconds, which paimon-rust and Java 0.9 fail on)."""
    for name in ("c_ts_ms", "c_ts_us", "c_ltz_ms", "c_ltz_us"):
        i = t.schema.get_field_index(name)
        values = []
        for v in t.column(i).to_pylist():
            if v is not None and v.year >= 2262:
                v = v.replace(year=2200)
            elif v is not None and v.year < 1970:
                v = v.replace(microsecond=0)
            values.append(v)
        t = t.set_column(i, name, pa.array(values, t.schema.field(i).type))
    return t


# name -> (primary key?, options, [(file.format to set first or None, batch)])
TABLES: dict[str, tuple[bool, dict[str, str], list[tuple[str | None, pa.Table]]]] = {
    "orc_pk": (True, {"bucket": "2", "file.format": "orc"},
               [(None, safe_types([0, 1, 2, 3, 4])), (None, safe_types([1, 2, 6], variant=2))]),
    "avro_append": (False, {"file.format": "avro"},
                    [(None, safe_types([0, 1, 2, 3])), (None, safe_types([4, 5], variant=1))]),
    "avro_pk": (True, {"bucket": "1", "file.format": "avro"},
                [(None, safe_types([0, 1, 2, 3])), (None, safe_types([2, 5], variant=1))]),
    "orc_append_buckets": (False, {"bucket": "2", "bucket-key": "id", "file.format": "orc"},
                           [(None, safe_types([0, 1, 2, 3, 4, 5]))]),
    "orc_pk_dv": (True, {"bucket": "2", "file.format": "orc", "deletion-vectors.enabled": "true"},
                  [(None, safe_types(list(range(20)))), (None, safe_types(list(range(10, 30)), variant=2)),
                   (None, safe_types(list(range(5, 15)), variant=1))]),
    "avro_pk_lookup": (True, {"bucket": "1", "file.format": "avro", "changelog-producer": "lookup"},
                       [(None, safe_types([0, 1, 2, 3])), (None, safe_types([1, 4], variant=1))]),
    "orc_then_parquet": (True, {"bucket": "1", "file.format": "orc"},
                         [(None, safe_types([0, 1, 2, 3])), ("parquet", safe_types([1, 4], variant=1)),
                          ("avro", safe_types([2, 5], variant=2))]),
}
UPDATES = safe_types([1, 3, 7, 8], variant=3)


def path_of(wh: Path, name: str) -> str:
    return str(wh / "db.db" / name)


@pytest.fixture(scope="module")
def java_written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Java's tables, a copy of each that Java updated with UPDATES, and Java's reads of both."""
    if True:
        java = harness.judge(JAVA)
        work = tmp_path_factory.mktemp("formats")
        wh, java_wh = work / "wh", work / "java-updated"
        b = java.batch(work)
        for name, (pk, options, batches) in TABLES.items():
            b.create(wh, f"db.{name}", types_schema(), primary_keys=["id"] if pk else None, options=options)
            for fmt, data in batches:
                if fmt is not None:
                    b.alter(wh, f"db.{name}", ["set", "file.format", fmt])
                b.commit(wh, f"db.{name}", data)
        reads = {name: b.read(wh, f"db.{name}") for name in TABLES}
        outcomes = b.run()
        shutil.copytree(wh, java_wh)
        b = java.batch(work)
        for name in TABLES:
            b.commit(java_wh, f"db.{name}", UPDATES)
        updated = {name: b.read(java_wh, f"db.{name}") for name in TABLES}
        after = b.run()
    return {"wh": wh, "work": work, "reads": {n: outcomes[i].table() for n, i in reads.items()},
            "updated": {n: after[i].table() for n, i in updated.items()}}


@pytest.mark.parametrize("name", list(TABLES))
def test_minipaimon_reads_java_orc_and_avro_tables_as_java_does(java_written: dict[str, Any], name: str) -> None:
    path = path_of(java_written["wh"], name)
    formats = set(mp.open_table(path).system_table("files").column("file_format").to_pylist())
    assert formats == ({"orc", "parquet", "avro"} if name == "orc_then_parquet" else {name.split("_")[0]})
    want = java_written["reads"][name]
    assert want.num_rows > 0
    assert differences(mp.open_table(path).to_arrow(), want, [JAVA_NULL_ROW]) is None
    if name == "orc_pk_dv":  # the setup is real: Java's lookup compaction wrote vectors
        assert mp.open_table(path).latest_snapshot().indexManifest is not None  # type: ignore[union-attr]
    if name == "avro_pk_lookup":  # and changelog files, in Avro
        assert any(n.startswith("changelog-") and n.endswith(".avro")
                   for _, _, names in os.walk(path) for n in names)


@pytest.mark.parametrize("name", ["orc_pk", "avro_append", "orc_then_parquet"])
def test_spark_reads_java_orc_and_avro_tables_as_java_does(
        spark: Any, java_written: dict[str, Any], name: str) -> None:
    path = path_of(java_written["wh"], name)
    want = java_written["reads"][name]
    for df in (spark.read.format("minipaimon").load(path), minipaimon_spark.table(spark, path)):
        assert differences(df.toArrow().cast(want.schema), want, [JAVA_NULL_ROW]) is None


@pytest.mark.parametrize("name", list(TABLES))
def test_minipaimon_writes_into_java_tables_as_java_itself_does(
        java_written: dict[str, Any], name: str, tmp_path: Path) -> None:
    ours = tmp_path / "wh"
    shutil.copytree(java_written["wh"], ours)
    mp.open_table(path_of(ours, name)).write(UPDATES)
    b = harness.judge(JAVA).batch(tmp_path)
    read = b.read(ours, f"db.{name}")
    got = b.run()[read].table()
    assert differences(got, java_written["updated"][name], [JAVA_NULL_ROW]) is None
    assert differences(mp.open_table(path_of(ours, name)).to_arrow(), got, [JAVA_NULL_ROW]) is None


MINE = {
    "orc_pk": (["id"], {"bucket": "2", "file.format": "orc"}),
    "orc_append": (None, {"file.format": "orc"}),
    "avro_pk": (["id"], {"bucket": "1", "file.format": "avro"}),
    "avro_append": (None, {"file.format": "avro"}),
    "avro_pk_changelog": (["id"], {"bucket": "1", "file.format": "avro", "changelog-producer": "input"}),
}


@pytest.mark.parametrize("reader", [JAVA, harness.PYPAIMON, harness.RUST])
def test_paimon_reads_minipaimon_orc_and_avro_tables(tmp_path: Path, reader: str) -> None:
    """paimon-rust 0.4 reads the ORC tables; it reads no Avro data file, Java's own neither
    ("Column 'id' is declared as non-nullable but contains null values", measured)."""
    wh = tmp_path / "wh"
    for name, (pk, options) in MINE.items():
        t = mp.create_table(path_of(wh, name), types_schema(), primary_key=pk, options=options)
        t.write(safe_types([0, 1, 2, 3, 4, 5]))
        t.write(safe_types([1, 2, 6], variant=1))
        if name == "orc_pk":
            t.set_options({"file.format": "avro"})  # a file of each format
            t.write(safe_types([5, 7], variant=2))
    b = harness.judge(reader).batch(tmp_path)
    jobs = {name: b.read(wh, f"db.{name}") for name in MINE
            if reader != harness.RUST or (name.startswith("orc") and name != "orc_pk")}
    # Java skips files by their manifest stats: a filtered read still finds the rows
    filtered = {name: b.read(wh, f"db.{name}", filter=[["c_int", "=", 2]])
                for name in MINE} if reader == JAVA else {}
    outcomes = b.run()
    for name, job in filtered.items():
        want = mp.open_table(path_of(wh, name)).scan(filter=[("c_int", "=", 2)]).to_arrow()
        got = outcomes[job].table()
        assert want.num_rows >= 1
        assert differences(got.filter(pa.compute.field("c_int") == 2), want, [JAVA_NULL_ROW]) is None, name
    quirks = [JAVA_NULL_ROW] if reader == JAVA else []
    problems = []
    for name, job in jobs.items():
        ours = mp.open_table(path_of(wh, name)).to_arrow()
        if not outcomes[job].ok:
            problems.append(f"{name}: {outcomes[job].error}")
            continue
        diff = differences(outcomes[job].table(), ours, quirks)
        if diff:
            problems.append(f"{name}: {diff}")
    assert not problems, "\n".join(problems)


WALL = pa.schema([pa.field("id", pa.int32(), nullable=False), ("ts_ms", pa.timestamp("ms")),
                  ("ts_us", pa.timestamp("us")), ("day", pa.date32())])


def wall_clock(ids: list[int]) -> pa.Table:
    import datetime as dt
    return pa.table({"id": ids, "ts_ms": [dt.datetime(2024, 7, 1, 12, 30, 0, 123000 + i * 1000) for i in ids],
                     "ts_us": [dt.datetime(1999, 12, 31, 23, 59, 59, 999999 - i) for i in ids],
                     "day": [dt.date(2024, 1, 1 + i) for i in ids]}, schema=WALL)


def test_wall_clock_timestamps_in_orc_survive_a_jvm_outside_utc(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Java in New York time writes ORC wall-clock times that minipaimon reads unchanged,
    and reads minipaimon's ORC wall-clock times unchanged."""
    monkeypatch.setenv("JUDGE_JVM_ARGS", ZONE)
    wh = tmp_path / "wh"
    mine = mp.create_table(path_of(wh, "mine"), WALL, primary_key=["id"],
                           options={"bucket": "1", "file.format": "orc"})
    mine.write(wall_clock([0, 1, 2]))
    b = harness.judge(JAVA).batch(tmp_path)
    b.create(wh, "db.java", WALL, primary_keys=["id"], options={"bucket": "1", "file.format": "orc"})
    b.commit(wh, "db.java", wall_clock([0, 1, 2]))
    reads = [b.read(wh, "db.java"), b.read(wh, "db.mine")]
    outcomes = b.run()
    assert differences(outcomes[reads[0]].table(), wall_clock([0, 1, 2])) is None  # the setup
    assert differences(mp.open_table(path_of(wh, "java")).to_arrow(), wall_clock([0, 1, 2])) is None
    assert differences(outcomes[reads[1]].table(), wall_clock([0, 1, 2])) is None
