"""Long-lived changelog between Paimon's Java engine 0.9 and minipaimon (issue 27, item 5).

Java writes a primary-key table whose changelog outlives its snapshots (its commits expire
snapshots into ``changelog/changelog-<id>``); minipaimon reads its latest state as Java
does, and the changes of snapshots that exist only as changelogs as Java reads them from a
copy of the same history that expired nothing (Java 0.9's batch ``incremental-between``
reads snapshots only). The reverse: Java commits into a table minipaimon expired into
changelogs, expiring minipaimon's changelog files by its own rules, and both read alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
import minipaimon_spark
from minipaimon_core.metadata.changelog_manager import ChangelogManager
from minipaimon_core.stream.stream import changes_between
from tests.interop import harness
from tests.interop.compare import differences
from tests.interop.data import KV, KeyModel, kv

pytestmark = pytest.mark.interop

JAVA = harness.JAVA
BASE = {"bucket": "1", "changelog-producer": "input"}
EXPIRING = {**BASE, "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
            "changelog.num-retained.max": "6"}
KEEPING = {**BASE, "snapshot.num-retained.min": "100", "snapshot.num-retained.max": "100"}


def batch(i: int) -> pa.Table:
    return kv([i, i + 1, 50], f"w{i}")


def path_of(wh: Path, name: str) -> str:
    return str(wh / "db.db" / name)


def changes(path: str, start: int, end: int) -> pa.Table:
    """The changes of snapshots (start, end] as a stream reads them, in commit order."""
    return changes_between(mp.open_table(path), start, end, read_changelog=False).select(KV.names).cast(KV)


def merged(changes: pa.Table) -> pa.Table:
    """``changes`` merged by key, the later row winning: what Java 0.9's batch
    ``incremental-between`` of a primary-key table returns (it merges each bucket's files)."""
    model = KeyModel(key=("id",))
    model.apply(changes)
    return model.table(KV)


def test_minipaimon_reads_the_changelogs_java_expired_snapshots_into(spark: Any, tmp_path: Path) -> None:
    java = harness.judge(JAVA)
    wh = tmp_path / "wh"
    b = java.batch(tmp_path)
    b.create(wh, "db.expiring", KV, primary_keys=["id"], options=EXPIRING)
    b.create(wh, "db.keeping", KV, primary_keys=["id"], options=KEEPING)
    for i in range(8):
        b.commit(wh, "db.expiring", batch(i))
        b.commit(wh, "db.keeping", batch(i))
    latest = b.read(wh, "db.expiring")
    out = b.run()
    path = path_of(wh, "expiring")
    t = mp.open_table(path)
    assert retained_by_the_rule(t)  # Java's expiration
    assert differences(t.to_arrow(), out[latest].table()) is None
    for df in (spark.read.format("minipaimon").load(path), minipaimon_spark.table(spark, path)):
        assert differences(df.toArrow().select(KV.names).cast(KV), out[latest].table()) is None
    ids, last = ChangelogManager(t.io, t.layout).ids(), t.latest_snapshot().id  # type: ignore[union-attr]
    assert mp.open_table(path_of(wh, "keeping")).latest_snapshot().id == last  # type: ignore[union-attr]
    # changes of changelogs only, of changelogs and snapshots, from the first changelog on
    ranges = [(ids[0], ids[-1]), (ids[1], last), (ids[0] - 1, last)]
    b = java.batch(tmp_path)
    between = {r: b.read(wh, "db.keeping", options={"incremental-between": f"{r[0]},{r[1]}"}) for r in ranges}
    out = b.run()
    for (start, end), job in between.items():
        want = out[job].table()
        assert want.num_rows > 0
        got = changes(path, start, end)
        assert differences(got, changes(path_of(wh, "keeping"), start, end)) is None, (start, end)
        assert differences(merged(got), want) is None, (start, end)
        df = spark.read.format("minipaimon").option("incremental-between", f"{start},{end}").load(path)
        assert differences(df.toArrow().select(KV.names).cast(KV), got) is None, (start, end)


def test_minipaimon_writes_into_javas_table_as_java_does(tmp_path: Path) -> None:
    """minipaimon's batch into Java's expiring table (its commit expires Java's snapshots
    into changelogs, and Java's changelogs) is read by Java as Java's own batch into a copy."""
    java = harness.judge(JAVA)
    wh, copy = tmp_path / "wh", tmp_path / "copy"
    b = java.batch(tmp_path)
    b.create(wh, "db.t", KV, primary_keys=["id"], options=EXPIRING)
    for i in range(8):
        b.commit(wh, "db.t", batch(i))
    b.run()
    shutil.copytree(wh, copy)
    mp.open_table(path_of(wh, "t")).write(kv([3, 60], "minipaimon"))
    b = java.batch(tmp_path)
    b.commit(copy, "db.t", kv([3, 60], "minipaimon"))
    ours, theirs = b.read(wh, "db.t"), b.read(copy, "db.t")
    out = b.run()
    assert differences(out[ours].table(), out[theirs].table()) is None
    t, j = mp.open_table(path_of(wh, "t")), mp.open_table(path_of(copy, "t"))
    assert retained_by_the_rule(t) and retained_by_the_rule(j)
    assert ChangelogManager(t.io, t.layout).ids() == ChangelogManager(j.io, j.layout).ids()


def test_java_expires_the_changelogs_minipaimon_wrote_and_both_read_alike(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = mp.create_table(path_of(wh, "expiring"), KV, primary_key=["id"], options=EXPIRING)
    ref = mp.create_table(path_of(wh, "keeping"), KV, primary_key=["id"], options=KEEPING)
    for i in range(8):
        t.write(batch(i))
        ref.write(batch(i))
    ours = ChangelogManager(t.io, t.layout)
    assert retained_by_the_rule(t)
    before = ours.ids()
    mine_before = mp.open_table(t.path).to_arrow()
    b = harness.judge(JAVA).batch(tmp_path)
    first = b.read(wh, "db.expiring")
    for i in range(8, 10):  # Java's commits expire snapshots and changelogs (ours too)
        b.commit(wh, "db.expiring", batch(i))
        b.commit(wh, "db.keeping", batch(i))
    second = b.read(wh, "db.expiring")
    out = b.run()
    start = ours.ids()[0]
    b = harness.judge(JAVA).batch(tmp_path)
    between = b.read(wh, "db.keeping", options={"incremental-between": f"{start},{start + 3}"})
    want = b.run()[between].table()
    assert differences(out[first].table(), mine_before) is None
    assert retained_by_the_rule(mp.open_table(t.path))  # Java expired ours, and made its own
    assert ours.ids()[0] > before[0] and ours.ids()[-1] > before[-1]
    assert differences(mp.open_table(t.path).to_arrow(), out[second].table()) is None
    assert differences(out[second].table(), mp.open_table(ref.path).to_arrow()) is None
    got = changes(t.path, start, start + 3)
    assert want.num_rows > 0 and differences(merged(got), want) is None
    assert differences(got, changes(ref.path, start, start + 3)) is None
    # nothing Java's expiration left is an orphan to minipaimon, nor missing
    assert mp.open_table(t.path).remove_orphan_files(older_than="0s").files == []
    # paimon-rust reads its latest state too (pypaimon 2.1 cannot read manifests Java 0.9
    # wrote, a pypaimon bug; it reads minipaimon's own long-lived tables: below)
    b = harness.judge(harness.RUST).batch(tmp_path)
    job = b.read(wh, "db.expiring")
    assert differences(b.run()[job].table(), out[second].table()) is None


def retained_by_the_rule(t: mp.Table) -> bool:
    """Two snapshots, and the changelogs of the snapshots before them that
    ``changelog.num-retained.max`` = 6 keeps (of ids latest-5 .. the earliest snapshot)."""
    snaps = [s.id for s in t.snapshots()]
    ids = ChangelogManager(t.io, t.layout).ids()
    return len(snaps) == 2 and ids == list(range(snaps[-1] - 5, snaps[0]))


def test_pypaimon_and_rust_read_a_long_lived_table_minipaimon_wrote(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = mp.create_table(path_of(wh, "t"), KV, primary_key=["id"], options=EXPIRING)
    for i in range(8):
        t.write(batch(i))
    assert retained_by_the_rule(mp.open_table(t.path))
    for reader in (harness.PYPAIMON, harness.RUST):
        b = harness.judge(reader).batch(tmp_path)
        job = b.read(wh, "db.t")
        assert differences(b.run()[job].table(), mp.open_table(t.path).to_arrow()) is None, reader
