"""File indexes between Paimon's Java engine 0.9 and minipaimon (issue 27, item 4).

Java writes bloom-filter indexes into its append files (a ``.index`` file, or embedded in
the manifest under ``file-index.in-manifest-threshold``) and its readers trust them: a
filtered read skips a file whose index rules the value out. minipaimon reads Java's
indexed tables as Java does, and the files it writes into them carry the same index bytes
as Java's for the same rows; a Java read filtered on a value minipaimon wrote finds it
(the index is valid), and one filtered on a value of one file only skips the others (the
index is used). Tables minipaimon creates with indexes are read the same way by Java.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
import minipaimon_spark
from minipaimon_core.format import file_index as codec
from tests.interop import harness
from tests.interop.compare import differences
from tests.interop.data import KV, kv

pytestmark = pytest.mark.interop

JAVA = harness.JAVA
TABLES = {  # name -> options (Java 0.9 writes indexes of append tables only)
    "bloom_file": {"file-index.bloom-filter.columns": "id,name"},
    "bloom_embedded": {"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "200",
                       "file-index.in-manifest-threshold": "1 kb"},
    "bloom_pk": {"file-index.bloom-filter.columns": "name", "bucket": "1"},
}


def path_of(wh: Path, name: str) -> str:
    return str(wh / "db.db" / name)


def evens(tag: str) -> pa.Table:  # two files whose name ranges overlap: stats cannot skip
    return kv(list(range(0, 40, 2)), tag)


def odds(tag: str) -> pa.Table:
    return kv(list(range(1, 40, 2)), tag)


def indexes(path: str) -> list[tuple[str, bytes | None, tuple[str, ...]]]:
    """(data file, its index bytes, extra files) of the table's live files."""
    t = mp.open_table(path)
    ctx = t.context()
    snap = t.latest_snapshot()
    assert snap is not None
    out = []
    for e in ctx.manifests.entries_of(ctx.manifests.data_manifests(snap)):
        f = e.file
        data = f.embeddedIndex
        if f.extraFiles:
            data = Path(ctx.layout.data_file_path("", e.bucket, f.extraFiles[0])).read_bytes()
        out.append((f.fileName, data, f.extraFiles))
    return out


@pytest.fixture(scope="module")
def java_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    java = harness.judge(JAVA)
    work = tmp_path_factory.mktemp("index")
    wh, java_wh = work / "wh", work / "java-updated"
    b = java.batch(work)
    for name, options in TABLES.items():
        b.create(wh, f"db.{name}", KV, primary_keys=["id", "dt"] if "bucket" in options else None,
                 options=options)
        b.commit(wh, f"db.{name}", evens("java"))
    reads = {name: b.read(wh, f"db.{name}") for name in TABLES}
    outcomes = b.run()
    shutil.copytree(wh, java_wh)
    b = java.batch(work)
    for name in TABLES:
        b.commit(java_wh, f"db.{name}", odds("new"))
    b.run()
    return {"wh": wh, "java_wh": java_wh, "reads": {n: outcomes[i].table() for n, i in reads.items()}}


@pytest.mark.parametrize("name", list(TABLES))
def test_minipaimon_reads_java_indexed_tables_as_java_does(
        spark: Any, java_tables: dict[str, Any], name: str) -> None:
    path = path_of(java_tables["wh"], name)
    want = java_tables["reads"][name]
    assert want.num_rows == 20
    assert differences(mp.open_table(path).to_arrow(), want) is None
    for df in (spark.read.format("minipaimon").load(path), minipaimon_spark.table(spark, path)):
        assert differences(df.toArrow().cast(want.schema), want) is None


@pytest.mark.parametrize("name", list(TABLES))
def test_minipaimon_writes_the_index_java_writes_and_java_finds_its_rows(
        java_tables: dict[str, Any], name: str, tmp_path: Path) -> None:
    ours = tmp_path / "wh"
    shutil.copytree(java_tables["wh"], ours)
    mp.open_table(path_of(ours, name)).write(odds("new"))
    java_files = {f: (data, extra) for f, data, extra in indexes(path_of(java_tables["java_wh"], name))}
    our_files = {f: (data, extra) for f, data, extra in indexes(path_of(ours, name))}
    before = {f for f, _, _ in indexes(path_of(java_tables["wh"], name))}
    java_new = [v for f, v in java_files.items() if f not in before]
    our_new = [v for f, v in our_files.items() if f not in before]
    assert len(java_new) == len(our_new) == 1
    (java_index, java_extra), (our_index, our_extra) = java_new[0], our_new[0]
    assert (java_index is None) == (our_index is None) == (name == "bloom_pk")  # PK: none, as Java
    assert bool(java_extra) == bool(our_extra)
    if java_index is not None:
        assert codec.decode(our_index, "ours") == codec.decode(java_index, "java")
        assert our_index == java_index  # byte for byte
    b = harness.judge(JAVA).batch(tmp_path)
    whole = b.read(ours, f"db.{name}")
    java_whole = b.read(java_tables["java_wh"], f"db.{name}")
    new_only = b.read(ours, f"db.{name}", filter=[["name", "=", "new-7"]])
    old_only = b.read(ours, f"db.{name}", filter=[["name", "in", ["java-4", "java-6"]]])
    out = b.run()
    assert differences(out[whole].table(), mp.open_table(path_of(ours, name)).to_arrow()) is None
    assert differences(out[java_whole].table(), out[whole].table()) is None  # as Java's own write
    got_new = out[new_only].table()
    got_old = out[old_only].table()
    assert pc.equal(got_new.column("name"), "new-7").to_pylist().count(True) == 1  # found
    assert sorted(pc.filter(got_old.column("name"), pc.is_in(got_old.column("name"),
                  pa.array(["java-4", "java-6"]))).to_pylist()) == ["java-4", "java-6"]
    if name != "bloom_pk":  # the index is used: the other file was skipped
        assert set(got_new.column("name").to_pylist()) <= set(odds("new").column("name").to_pylist())
        assert set(got_old.column("name").to_pylist()) <= set(evens("java").column("name").to_pylist())


def test_java_skips_by_the_indexes_of_a_table_minipaimon_created(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = mp.create_table(path_of(wh, "t"), KV, options={"file-index.bloom-filter.columns": "id,name"})
    t.write(evens("a"))
    t.write(odds("b"))
    e = mp.create_table(path_of(wh, "e"), KV, options={
        "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "100",
        "file-index.in-manifest-threshold": "1 kb"})
    e.write(evens("a"))
    e.write(odds("b"))
    assert all(extra for _, _, extra in indexes(t.path)) and not any(extra for _, _, extra in indexes(e.path))
    b = harness.judge(JAVA).batch(tmp_path)
    jobs = {(n, v): b.read(wh, f"db.{n}", filter=[["name", "=", v]])
            for n in ("t", "e") for v in ("a-10", "b-11", "absent")}
    by_id = b.read(wh, "db.t", filter=[["id", "=", 13]])
    out = b.run()
    for (n, v), job in jobs.items():
        names = out[job].table().column("name").to_pylist()
        if v == "absent":
            assert names == [], n  # both files skipped by their indexes
        else:
            assert v in names and {x.split("-")[0] for x in names} == {v.split("-")[0]}, (n, v)
    assert 13 in out[by_id].table().column("id").to_pylist()
    assert set(out[by_id].table().column("name").to_pylist()) <= set(odds("b").column("name").to_pylist())
    for reader in (harness.PYPAIMON, harness.RUST):  # the other clients read such tables too
        b = harness.judge(reader).batch(tmp_path)
        reads = [b.read(wh, "db.t"), b.read(wh, "db.e")]
        out = b.run()
        for job, table in zip(reads, (t, e)):
            assert differences(out[job].table(), mp.open_table(table.path).to_arrow()) is None, reader
