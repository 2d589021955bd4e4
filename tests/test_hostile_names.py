"""No name read from a table's metadata makes minipaimon touch a path outside the table.

A table is data from elsewhere (Paimon's engines, another team's copy, a damaged store), so
its manifests, manifest lists, index manifests, snapshots and tags may hold names that climb
out of it (``../../victim/a.parquet``). For every way such a name gets in, each operation
that would follow it (read, expire, orphan cleanup, rollback to a snapshot and to a tag,
drop, migrate) is run on local disk and on the S3 test server: a victim file outside the
table is never deleted or read, and the operation fails with CorruptMetadataError leaving the
table unchanged, or skips the unreadable metadata (rollback: the snapshots it removes).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import msgspec
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError, InvalidArgumentError
from minipaimon_core.format import snapshot as snapshot_codec
from minipaimon_core.format.layout import TableLayout
from minipaimon_core.migrate import copy_table, migrate
from tests import hostile
from tests.conftest import Storage
from tests.helpers import SCHEMA, rows, sorted_ids

OUT = "../../victim/a.parquet"  # from <table>/bucket-0/ or <table>/manifest/: beside the table
FIXTURES = Path(__file__).parent / "fixtures" / "legacy_tables"


def victim_path(storage: Storage) -> str:
    return storage.path("victim/a.parquet")


def plant(t: mp.Table, storage: Storage, data: bytes) -> str:
    """A file outside the table (a copy of ``data``: the same size as what it stands for)."""
    path = victim_path(storage)
    t.io.write_bytes(path, data)
    return path


def assert_victim(t: mp.Table, path: str, data: bytes) -> None:
    assert t.io.read_bytes(path) == data, "the file outside the table was changed"


def first_data_file(t: mp.Table, snapshot_id: int) -> tuple[str, bytes]:
    e = next(e for e in t.manifests.delta_entries(t.snapshot(snapshot_id)) if e.kind == 0)
    path = t.layout.data_file_path("", e.bucket, e.file.fileName)
    return e.file.fileName, t.io.read_bytes(path)


def three_snapshots(storage: Storage, name: str = "t") -> mp.Table:
    t = mp.create_table(storage.path(name), SCHEMA)
    t.write(rows(0, 3))
    t.write(rows(10, 3))
    t.write(rows(20, 3))
    return t


# -- the committer refuses such names -----------------------------------------------------

@pytest.mark.parametrize("name", [OUT, "/abs/data.parquet", "s3://other/data.parquet", "a\x00.parquet",
                                  "..", "bucket-0/data.parquet", ".hidden.parquet", ""])
def test_the_committer_refuses_a_message_naming_a_file_outside_the_table(storage: Storage, name: str) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA)
    t.write(rows(0, 3))
    w = t.new_write("u")
    w.write(rows(10, 3))
    m = w.prepare_commit()[0]
    bad = msgspec.structs.replace(m, newFiles=[msgspec.structs.replace(m.newFiles[0], fileName=name)])
    before = storage.list_all(t.path)
    with pytest.raises(InvalidArgumentError, match="not a plain data file name"):
        t.new_commit("u").commit([bad], 1)
    with pytest.raises(InvalidArgumentError, match="not a plain data file name"):
        t.new_commit("u").abort([bad])  # abort deletes what messages name: not this
    assert storage.list_all(t.path) == before
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [0, 1, 2]


def test_the_committer_refuses_a_partition_path_outside_the_table(storage: Storage) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA, partition_by=["dt"])
    w = t.new_write("u")
    w.write(rows(0, 3))
    m = w.prepare_commit()[0]
    bad = msgspec.structs.replace(m, partitionPath="../../victim")
    before = storage.list_all(t.path)
    with pytest.raises(InvalidArgumentError, match="partitionPath"):
        t.new_commit("u").abort([bad])
    with pytest.raises(InvalidArgumentError, match="partitionPath"):
        t.new_commit("u").commit([bad], 1)
    assert storage.list_all(t.path) == before


# -- a data file name in a manifest ---------------------------------------------------------

@pytest.mark.parametrize("records", [False, True], ids=["payload", "avro-records"])
def test_a_read_never_opens_a_data_file_outside_the_table(storage: Storage, records: bool) -> None:
    t = three_snapshots(storage)
    _, data = first_data_file(t, 2)
    victim = plant(t, storage, data)
    hostile.rename_files(t, 2, lambda _: OUT, records)
    t = mp.open_table(t.path)
    with pytest.raises(CorruptMetadataError, match="not a plain data file name"):
        t.scan(snapshot_id=2).to_arrow()
    assert sorted_ids(t.scan(snapshot_id=1).to_arrow()) == [0, 1, 2]
    assert_victim(t, victim, data)


def test_expire_after_an_overwrite_never_deletes_outside_the_table(storage: Storage) -> None:
    t = three_snapshots(storage)
    t.write(rows(100, 1), mode="overwrite")  # snapshot 4 deletes every file, snapshot 2's too
    name, data = first_data_file(t, 2)
    victim = plant(t, storage, data)
    for sid in (2, 4):  # the ADD and the DELETE of the file, both renamed
        hostile.rename_files(t, sid, lambda n: OUT if n == name else n)
    t = mp.open_table(t.path)
    before = storage.list_all(t.path)
    with pytest.raises(CorruptMetadataError, match="not a plain data file name"):
        t.expire_snapshots(retain_max=1)
    assert storage.list_all(t.path) == before
    assert_victim(t, victim, data)



@pytest.mark.parametrize("dry_run", [True, False])
def test_changelog_expiration_never_deletes_outside_the_table(storage: Storage, dry_run: bool) -> None:
    """A long-lived changelog (``changelog/changelog-<id>``, a snapshot's file kept) naming
    a manifest list outside the table: expiration, and its dry run, refuse it."""
    from minipaimon_core.metadata.changelog_manager import ChangelogManager

    t = mp.create_table(storage.path("t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
                                 "snapshot.num-retained.max": "2", "changelog.num-retained.max": "5"})
    for i in range(6):
        t.write(rows(i * 10, 3))
    first = ChangelogManager(t.io, t.layout).ids()[0]
    victim = plant(t, storage, b"outside")
    hostile.rewrite_json(t, t.layout.changelog_path(first), checksum=False, changelogManifestList=OUT)
    t.set_options({"changelog.num-retained.max": "2"})
    t = mp.open_table(t.path)
    before = storage.list_all(t.path)
    with pytest.raises(CorruptMetadataError, match="victim"):
        t.expire_snapshots(dry_run=dry_run)
    assert storage.list_all(t.path) == before
    assert_victim(t, victim, b"outside")

def test_orphan_cleanup_never_deletes_outside_the_table(storage: Storage) -> None:
    t = three_snapshots(storage)
    _, data = first_data_file(t, 2)
    victim = plant(t, storage, data)
    hostile.rename_files(t, 2, lambda _: OUT)
    t = mp.open_table(t.path)
    before = storage.list_all(t.path)
    with pytest.raises(CorruptMetadataError, match="not a plain data file name"):
        t.remove_orphan_files(older_than_ms=int(time.time() * 1000))
    assert storage.list_all(t.path) == before
    assert_victim(t, victim, data)


def test_rollback_past_a_hostile_snapshot_leaves_the_outside_alone(storage: Storage) -> None:
    """Rolling back is how a user gets rid of a damaged snapshot: the snapshots removed are
    removed, files only their unreadable metadata names are left to orphan cleanup."""
    t = three_snapshots(storage)
    t.create_tag("first", 1)
    _, data = first_data_file(t, 3)
    victim = plant(t, storage, data)
    hostile.rename_files(t, 3, lambda _: OUT)
    t = mp.open_table(t.path)
    t.create_tag("hostile", 3)
    assert mp.open_table(t.path).rollback_to(snapshot_id=2).snapshot_id == 2
    assert_victim(t, victim, data)
    t = mp.open_table(t.path)
    assert sorted_ids(t.to_arrow()) == [0, 1, 2, 10, 11, 12] and t.tags() == {"first": 1}
    t.write(rows(30, 1))
    hostile.rename_files(t, 3, lambda _: OUT)
    assert mp.open_table(t.path).rollback_to(tag="first").snapshot_id == 1
    assert_victim(t, victim, data)
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [0, 1, 2]


def test_drop_table_never_deletes_outside_the_table(storage: Storage) -> None:
    cat = mp.catalog(storage.path("wh"))
    t = cat.create_table("db.t", SCHEMA)
    t.write(rows(0, 3))
    t.write(rows(10, 3))
    _, data = first_data_file(t, 2)
    victim = storage.path("wh/victim/a.parquet")  # <wh>/db.db/t/bucket-0/../../../victim
    t.io.write_bytes(victim, data)
    hostile.rename_files(t, 2, lambda _: "../" + OUT)
    cat.drop_table("db.t", purge=True)
    assert not cat.table_exists("db.t")
    assert_victim(t, victim, data)


# -- names in manifest lists, snapshots, index manifests, tags --------------------------------

def _every_operation_refuses(t: mp.Table, storage: Storage, match: str) -> None:
    before = storage.list_all(t.path)
    for op in (lambda: t.to_arrow(), lambda: t.expire_snapshots(retain_max=1),
               lambda: t.remove_orphan_files(older_than_ms=int(time.time() * 1000))):
        with pytest.raises(CorruptMetadataError, match=match):
            op()
        assert storage.list_all(t.path) == before


@pytest.mark.parametrize("where", ["manifest list", "snapshot"])
def test_a_metadata_name_outside_the_table_is_refused_where_it_is_decoded(storage: Storage, where: str) -> None:
    t = three_snapshots(storage)
    data = t.io.read_bytes(t.layout.manifest_path(t.snapshot(3).deltaManifestList))
    victim = plant(t, storage, data)
    if where == "manifest list":
        hostile.rename_manifest(t, 3, OUT)
    else:
        hostile.replace_snapshot(t, 3, deltaManifestList=OUT)
    t = mp.open_table(t.path)
    _every_operation_refuses(t, storage, f"not a plain {'manifest' if where == 'manifest list' else 'manifest-list'}")
    assert t.rollback_to(snapshot_id=2).snapshot_id == 2  # the hostile snapshot's files skipped
    assert_victim(t, victim, data)


def test_a_hostile_tag_is_refused_and_never_followed(storage: Storage) -> None:
    t = three_snapshots(storage)
    data = t.io.read_bytes(t.layout.manifest_path(t.snapshot(1).deltaManifestList))
    victim = plant(t, storage, data)
    hostile_tag = msgspec.structs.replace(t.snapshot(1), baseManifestList=OUT)
    t.io.write_bytes(t.layout.tag_path("bad"), snapshot_codec.encode(hostile_tag))
    t = mp.open_table(t.path)
    before = storage.list_all(t.path)
    for op in (lambda: t.rollback_to(tag="bad"), lambda: t.scan(tag="bad").to_arrow(),
               lambda: t.expire_snapshots(retain_max=1),
               lambda: t.remove_orphan_files(older_than_ms=int(time.time() * 1000))):
        with pytest.raises(CorruptMetadataError, match="not a plain manifest-list"):
            op()
        assert storage.list_all(t.path) == before
    assert_victim(t, victim, data)
    t.delete_tag("bad")  # the way out: deleting a tag reads nothing
    assert t.rollback_to(snapshot_id=1).snapshot_id == 1


def test_an_index_file_name_outside_the_table_is_refused(storage: Storage) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA, primary_key=["id"],
                        options={"deletion-vectors.enabled": "true"})
    t.write(rows(0, 3))
    t.write(rows(0, 1))  # snapshot 2 marks a row of snapshot 1's file: an index file
    t.write(rows(1, 1))  # snapshot 3 replaces it
    entry = t.vectors.entries(t.snapshot(2))[0]
    data = t.io.read_bytes(t.layout.index_path(entry.fileName))
    victim = plant(t, storage, data)
    hostile.rename_index_file(t, 2, OUT)
    t = mp.open_table(t.path)
    before = storage.list_all(t.path)
    for op in (lambda: t.scan(snapshot_id=2).to_arrow(), lambda: t.expire_snapshots(retain_max=1),
               lambda: t.remove_orphan_files(older_than_ms=int(time.time() * 1000))):
        with pytest.raises(CorruptMetadataError, match="not a plain index file name"):
            op()
        assert storage.list_all(t.path) == before
    assert t.rollback_to(snapshot_id=1).snapshot_id == 1
    assert_victim(t, victim, data)


# -- migrate (the earlier format) ------------------------------------------------------------

def test_migrate_never_links_or_reads_a_file_outside_the_table(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "append_text"
    shutil.copytree(FIXTURES / "append_text", path)
    t = mp.open_table(str(path))
    e = t.scan().plan()[0]
    name = e.files[0].fileName
    data = (path / e.partition_path / f"bucket-{e.bucket}" / name).read_bytes()
    victim = tmp_path / "wh" / "victim" / "a.parquet"  # <t>/dt=.../bucket-0/../../../victim
    victim.parent.mkdir()
    victim.write_bytes(data)
    hostile.legacy_rename_files(t, lambda n: "../" + OUT if n == name else n)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    with pytest.raises(CorruptMetadataError, match="not a plain data file name"):
        migrate(str(path))
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before
    assert victim.read_bytes() == data and victim.stat().st_nlink == 1  # never hard-linked


def test_copy_table_never_reads_outside_the_table(storage: Storage) -> None:
    t = three_snapshots(storage, "src")
    _, data = first_data_file(t, 3)
    hostile.rename_files(t, 3, lambda _: "../../victim/a.parquet")
    plant(t, storage, data)
    with pytest.raises(CorruptMetadataError, match="not a plain data file name"):
        copy_table(t.path, storage.path("dst"), storage.options)
    assert sorted_ids(mp.open_table(t.path).scan(snapshot_id=2).to_arrow()) == [0, 1, 2, 10, 11, 12]


def test_layout_refuses_to_build_a_path_from_a_hostile_name() -> None:
    layout = TableLayout("/w/t")
    for name in [OUT, "a/b", "..", ".", "", "a\x00", "s3://x", "x\\y"]:
        with pytest.raises(CorruptMetadataError):
            layout.data_file_path("", 0, name)
        with pytest.raises(CorruptMetadataError):
            layout.manifest_path(name)
        with pytest.raises(CorruptMetadataError):
            layout.index_path(name)
    for partition in ["..", "../x=1", "a=1/..", "x=1/../../y=2", "x=a\\b"]:
        with pytest.raises(CorruptMetadataError):
            layout.bucket_dir(partition, 0)
    assert layout.data_file_path("dt=2024-01-01/h=3", 2, "data-x-0.zstd.parquet").endswith(
        "/w/t/dt=2024-01-01/h=3/bucket-2/data-x-0.zstd.parquet")

