"""``Table.restore``: a new commit with an older snapshot's data that keeps the history
(issue 30). A model test per table kind (append, append with deletion vectors, primary
key, primary key with deletion vectors): random writes, deletes, compactions and restores,
each snapshot's rows recorded when it is made; after every restore the table reads exactly
as the target did, every older snapshot and tag still reads as it did, and writes after it
win over the restored rows.
"""

from __future__ import annotations

import io
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import minipaimon_core as mp
from minipaimon_core import file_format
from minipaimon_core.io import fileio_object
from minipaimon_core.io.fileio import FileIO, LocalFileIO
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_s3 import S3Settings
from minipaimon_core.maintenance import TableFiles
from minipaimon_core.maintenance.restore import RESTORED_FROM
from tests.fault_proxy import FaultProxy
from tests.helpers import check_hash_index, key_places
from tests.test_crash import FAULTS, FaultAt, InjectedFault, _clean_orphans

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64()),
                    pa.field("dt", pa.string(), nullable=False)])

KINDS = {
    "append": ({}, None),
    "append-dv": ({"deletion-vectors.enabled": "true"}, None),
    "pk": ({"bucket": "2"}, ["id", "dt"]),
    "pk-dv": ({"bucket": "2", "deletion-vectors.enabled": "true"}, ["id", "dt"]),
}


def make(path: Path, kind: str) -> mp.Table:
    options, keys = KINDS[kind]
    return mp.create_table(str(path), SCHEMA, primary_key=keys, partition_by=["dt"],
                           options={**options, "snapshot.num-retained.min": "1000",
                                    "snapshot.num-retained.max": "1000"})


def rows_of(t: mp.Table, snapshot_id: int | None = None) -> list[tuple]:
    data = t.scan(snapshot_id=snapshot_id).to_arrow() if snapshot_id else t.to_arrow()
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))


def batch(rng: random.Random, ids: list[int], value: int) -> pa.Table:
    dts = [f"d{rng.randrange(2)}" for _ in ids]
    return pa.table({"id": ids, "v": [value] * len(ids), "dt": dts}, schema=SCHEMA)


def files_on_disk(root: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


@pytest.mark.parametrize("kind", list(KINDS))
def test_restore_reads_as_the_target_keeps_history_and_later_writes_win(tmp_path: Path, kind: str) -> None:
    rng = random.Random(30 + len(kind))
    t = make(tmp_path / "t", kind)
    model: dict[int, list[tuple]] = {}  # snapshot id -> rows read when it was made
    tags: dict[str, int] = {}
    for step in range(40):
        value = step + 1
        op = rng.random()
        if op < 0.45 or not model:
            t.write(batch(rng, rng.sample(range(30), rng.randrange(1, 8)), value))
        elif op < 0.6:
            t.delete([("id", "in", rng.sample(range(30), 4))])
        elif op < 0.7:
            t.compact(strategy=rng.choice(["full", "minor"]))
        elif op < 0.75:
            name = f"tag{step}"
            t.create_tag(name)
            tags[name] = t.latest_snapshot().id  # type: ignore[union-attr]
        else:
            target = rng.choice(sorted(model))
            before = [s.id for s in t.snapshots()]
            result = t.restore(rng.choice([name for name, sid in tags.items() if sid == target] or [target]))
            assert result.restored_from == target
            if result.snapshot_id is not None:
                new = t.latest_snapshot()
                assert new is not None and new.id == result.snapshot_id and new.commitKind == "OVERWRITE"
                assert (new.properties or {})[RESTORED_FROM] == str(target)
                assert [s.id for s in t.snapshots()] == [*before, new.id]  # history kept
            assert rows_of(t) == model[target]
            assert t.count() == len(model[target])
        latest = t.latest_snapshot()
        if latest is not None:
            model.setdefault(latest.id, rows_of(t))
    for sid, expected in model.items():  # every older snapshot still reads as it did
        assert rows_of(t, sid) == expected, sid
    assert t.tags() == tags


@pytest.mark.parametrize("kind", ["pk", "pk-dv"])
def test_writes_after_a_restore_win_over_restored_rows(tmp_path: Path, kind: str) -> None:
    t = make(tmp_path / "t", kind)
    t.write(pa.table({"id": [1, 2], "v": [10, 20], "dt": ["d0", "d0"]}, schema=SCHEMA))  # 1
    t.write(pa.table({"id": [1, 2], "v": [11, 21], "dt": ["d0", "d0"]}, schema=SCHEMA))  # 2
    t.compact()                                                                       # 3
    writer = t.new_write("slow")  # starts before the restore, commits after it
    writer.write(pa.table({"id": [2], "v": [22], "dt": ["d0"]}, schema=SCHEMA))
    assert t.restore(1).snapshot_id == 4
    assert rows_of(t) == [(1, 10, "d0"), (2, 20, "d0")]
    t.write(pa.table({"id": [1], "v": [12], "dt": ["d0"]}, schema=SCHEMA))
    t.new_commit("slow").commit(writer.prepare_commit(), commit_identifier=1)
    assert rows_of(t) == [(1, 12, "d0"), (2, 22, "d0")]
    t.compact()
    assert rows_of(t) == [(1, 12, "d0"), (2, 22, "d0")]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_restore_is_undone_by_another_and_survives_expiring_the_older_snapshots(
        tmp_path: Path, kind: str) -> None:
    t = make(tmp_path / "t", kind)
    t.write(pa.table({"id": [1, 2, 3], "v": [1, 2, 3], "dt": ["d0", "d1", "d0"]}, schema=SCHEMA))
    t.create_tag("v1")
    t.delete([("id", "=", 2)])
    t.write(pa.table({"id": [4], "v": [4], "dt": ["d1"]}, schema=SCHEMA))
    t.compact()  # the files of snapshot 1 are no longer live
    latest = t.latest_snapshot()
    assert latest is not None
    before, v1 = rows_of(t), rows_of(t, 1)
    assert t.restore("v1").snapshot_id == latest.id + 1
    assert rows_of(t) == v1
    assert t.restore(latest.id).snapshot_id == latest.id + 2  # undone
    assert rows_of(t) == before
    assert t.restore(latest.id + 1).snapshot_id == latest.id + 3
    # expire everything but the latest: the restored files were copied, so nothing the
    # latest snapshot reads goes with the snapshots (and the tag) that had the originals
    t.delete_tag("v1")
    t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")
    assert [s.id for s in t.snapshots()] == [latest.id + 3]
    assert rows_of(mp.open_table(t.path)) == v1


def test_restore_of_the_latest_changes_nothing(tmp_path: Path) -> None:
    t = make(tmp_path / "t", "pk")
    t.write(pa.table({"id": [1], "v": [1], "dt": ["d0"]}, schema=SCHEMA))
    listing = files_on_disk(t.path)
    result = t.restore(1)
    assert result.snapshot_id is None and result.files_kept == 1
    assert files_on_disk(t.path) == listing


def test_bad_targets_are_refused_and_change_nothing(tmp_path: Path) -> None:
    import datetime

    t = make(tmp_path / "t", "append")
    t.write(pa.table({"id": [1], "v": [1], "dt": ["d0"]}, schema=SCHEMA))
    listing = files_on_disk(t.path)
    with pytest.raises(mp.SnapshotNotFoundError):
        t.restore(7)
    with pytest.raises(mp.SnapshotNotFoundError, match="tag 'nope'"):
        t.restore("nope")
    with pytest.raises(mp.InvalidArgumentError, match="time zone"):
        t.restore(datetime.datetime(2030, 1, 1))
    with pytest.raises(mp.InvalidArgumentError):
        t.restore(True)  # type: ignore[arg-type]
    assert files_on_disk(t.path) == listing
    at = datetime.datetime.now(datetime.timezone.utc)
    t.write(pa.table({"id": [2], "v": [2], "dt": ["d0"]}, schema=SCHEMA))
    assert t.restore(at).restored_from == 1 and rows_of(t) == [(1, 1, "d0")]


# -- issue 38: dynamic buckets, a restore that landed and then failed, other file formats --

def test_a_restore_of_a_dynamic_bucket_table_keeps_its_key_index(tmp_path: Path) -> None:
    """Issue 38 item 3: the restored snapshot dropped the HASH index, so the next upsert of
    a key put it in another bucket and the key was read twice."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "5"})
    t.write(pa.table({"id": list(range(20)), "v": [0] * 20, "dt": ["d0"] * 20}, schema=SCHEMA))
    t.write(pa.table({"id": [1, 20, 21, 22], "v": [1] * 4, "dt": ["d0"] * 4}, schema=SCHEMA))  # index grows
    t.write(pa.table({"id": [23], "v": [1], "dt": ["d0"]}, schema=SCHEMA))
    t.restore(1)
    check_hash_index(t)
    t.write(pa.table({"id": [15, 21], "v": [2, 2], "dt": ["d0", "d0"]}, schema=SCHEMA))
    key_places(t)  # each key in one bucket
    assert rows_of(t) == sorted([(i, 0, "d0") for i in range(20) if i != 15] + [(15, 2, "d0"), (21, 2, "d0")])
    check_hash_index(t)
    t.restore(3)  # back to where the index had more keys
    check_hash_index(t)
    t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")  # the index files were copied
    t = mp.open_table(t.path)
    t.write(pa.table({"id": [1, 23], "v": [3, 3], "dt": ["d0", "d0"]}, schema=SCHEMA))
    key_places(t)
    check_hash_index(t)
    assert len(rows_of(t)) == 24


def _restore_template(path: str, io: FileIO | None = None) -> tuple[mp.Table, list[tuple], list[tuple]]:
    """A primary-key table with deletion vectors whose snapshot 2's files are all gone from
    the latest (a restore to 2 copies data and index files); its rows at 2 and now."""
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"], io=io,
                        options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": list(range(8)), "v": [1] * 8, "dt": ["d0", "d1"] * 4}, schema=SCHEMA))
    t.write(pa.table({"id": [0, 1, 2], "v": [2] * 3, "dt": ["d0", "d1", "d0"]}, schema=SCHEMA))
    target = rows_of(t, 2)
    t.write(pa.table({"id": [9], "v": [3], "dt": ["d0"]}, schema=SCHEMA), mode="overwrite")
    return t, target, rows_of(t)


def _every_snapshot_reads(t: mp.Table) -> None:
    for snap in t.snapshots():
        t.scan(snapshot_id=snap.id).to_arrow()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_at_any_io_call_of_a_restore_leaves_the_table_whole(tmp_path: Path, fault: str) -> None:
    """Issue 38 item 4: an error or an interrupt at each IO call of a restore in turn,
    before the call or after it (the answer lost). Before the fix a restore whose snapshot
    had landed deleted the copies it committed (interrupted while writing the LATEST hint,
    or a store error while settling the create): the table no longer read. Now the table
    reads as before or as restored (an error raised means not restored), every snapshot
    reads, orphan cleanup removes nothing a snapshot uses, and the restore runs again."""
    error, after = FAULTS[fault]
    template = str(tmp_path / "template")
    _, target, before = _restore_template(template)
    counting = FaultAt(LocalFileIO())
    shutil.copytree(template, tmp_path / "count")
    mp.open_table(str(tmp_path / "count"), io=counting).restore(2)
    n = len(counting.calls)
    assert any(c[0] == "write_if_absent" for c in counting.calls) and n > 20
    for k in range(1, n + 1):
        path = str(tmp_path / f"t{k}")
        shutil.copytree(template, path)
        faulty = FaultAt(LocalFileIO(), k, error, after)
        where = (k, counting.calls[k - 1])
        try:
            mp.open_table(path, io=faulty).restore(2)
            raised: BaseException | None = None
        except (InjectedFault, mp.StorageError, KeyboardInterrupt) as e:
            raised = e
        t = mp.open_table(path)
        state = rows_of(t)
        if raised is None:
            assert state == target, where
        elif isinstance(raised, KeyboardInterrupt):
            assert state in (before, target), where
        else:  # an error the caller sees: not restored, so the retry restores once
            assert state == before, where
        _every_snapshot_reads(t)
        live: set[str] = set()
        files = TableFiles.of(t)
        for snap in t.snapshots():
            live |= files.used_paths(snap)
        assert not set(_clean_orphans(t)) & live, where
        _every_snapshot_reads(mp.open_table(path))
        mp.open_table(path).restore(2)
        assert rows_of(mp.open_table(path)) == target, where


@pytest.fixture
def proxied(moto_server) -> Iterator[tuple[FaultProxy, FileIO, str]]:
    """An S3 FileIO on the moto server reached through a FaultProxy, and a table path."""
    proxy = FaultProxy(moto_server.endpoint)
    bucket = moto_server.create_bucket()
    io = ObjectStoreFileIO(S3Settings.resolve({**moto_server.options(), "s3.endpoint": proxy.endpoint}, {}))
    yield proxy, io, f"s3://{bucket}/t"
    proxy.stop()
    fileio_object._probed.clear()


def test_a_restore_whose_expiry_marker_read_fails_after_the_create_lands_on_s3(proxied) -> None:
    """Issue 38 item 4 on S3: the GET of ``.snapshot-N.expired`` that settles the create
    failed (503, more often than the client retries by itself): the restore deleted the
    copies its landed snapshot uses. Now it looks again until the store answers."""
    proxy, io, path = proxied
    t, target, _ = _restore_template(path, io)
    proxy.fail("GET", ".expired", 503, times=12)  # the client gives up after 11
    result = mp.open_table(path, io=io).restore(2)
    assert proxy.failed == 12 and result.files_copied
    assert rows_of(mp.open_table(path, io=io)) == target


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_a_failed_copy_on_s3_is_a_storage_error_and_changes_nothing(proxied, method: str) -> None:
    """Issue 38 item 5: a data file's copy failing on the store raised pyarrow's raw OSError."""
    proxy, io, path = proxied
    t, target, before = _restore_template(path, io)
    listing = sorted(io.list_names(f"{path}/dt=d0/bucket-0")) + sorted(io.list_names(f"{path}/dt=d1/bucket-0"))
    latest = t.latest_snapshot()
    proxy.fail(method, ".parquet", 503)
    with pytest.raises(mp.StorageError, match=r"copying data file .*\.parquet.*nothing was restored"):
        mp.open_table(path, io=io).restore(2)
    proxy.heal()
    assert mp.open_table(path, io=io).latest_snapshot() == latest and rows_of(t) == before
    assert sorted(io.list_names(f"{path}/dt=d0/bucket-0")) + sorted(io.list_names(f"{path}/dt=d1/bucket-0")) == listing
    mp.open_table(path, io=io).restore(2)
    assert rows_of(mp.open_table(path, io=io)) == target


@pytest.mark.parametrize("file_format", ["orc", "avro", "parquet"])
@pytest.mark.parametrize("kind", ["append", "pk-dv"])
def test_restore_copies_files_of_every_format(tmp_path: Path, file_format: str, kind: str) -> None:
    """Issue 38 item 5: a restore that copied an ORC or Avro file read it as Parquet
    (``ArrowInvalid: Parquet magic bytes not found``). A table whose format changed holds
    files of two formats; each copy keeps its format (and an Avro file minipaimon wrote
    names its copy)."""
    options, keys = KINDS[kind]
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=keys, partition_by=["dt"],
                        options={**options, "file.format": file_format})
    t.write(pa.table({"id": [1, 2, 3], "v": [1, 2, 3], "dt": ["d0", "d1", "d0"]}, schema=SCHEMA))
    t.set_options({"file.format": "avro" if file_format != "avro" else "orc"})
    t.write(pa.table({"id": [2, 4], "v": [5, 5], "dt": ["d1", "d1"]}, schema=SCHEMA))
    t.delete([("id", "=", 1)])
    target = rows_of(t)
    target_id = t.latest_snapshot().id  # type: ignore[union-attr]
    t.write(pa.table({"id": [7], "v": [7], "dt": ["d0"]}, schema=SCHEMA), mode="overwrite")
    result = t.restore(target_id)
    assert result.files_copied >= 2
    assert rows_of(mp.open_table(t.path)) == target
    formats = {p.rsplit(".", 1)[-1] for p in mp.open_table(t.path).system_table("files").column("file_path").to_pylist()}
    assert formats == {file_format, "avro" if file_format != "avro" else "orc"}


@pytest.mark.parametrize("name", ["parquet", "orc", "avro"])
def test_a_format_copies_a_file_byte_for_byte_but_for_the_name_it_embeds(tmp_path: Path, name: str) -> None:
    fmt = file_format.by_name(name)
    data = pa.table({"id": pa.array([3, 1, 2], pa.int64()), "s": ["c", None, "b"]})
    named = io.BytesIO()
    writer = fmt.open_writer(named, data.schema, data, compression="zstd", file_name="data-a-0." + name)
    writer.write(data)
    writer.close()
    foreign = io.BytesIO()  # a file of another writer: no name in it
    if name == "parquet":
        pq.write_table(data, foreign)
    elif name == "avro":
        fastavro.writer(foreign, fastavro.parse_schema(
            {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"},
                                                        {"name": "s", "type": ["null", "string"]}]}),
            data.to_pylist())
    else:
        orc.write_table(data, foreign)
    for source in (named, foreign):
        source.seek(0)
        copied = io.BytesIO()
        fmt.copy(source, copied, "data-b-0." + name)
        rows, embedded = fmt.read(pa.BufferReader(copied.getvalue()), None, data.schema)
        assert rows.equals(data)
        if source is foreign or name == "orc":
            assert copied.getvalue() == source.getvalue() and embedded is None
        else:
            assert embedded == b"data-b-0." + name.encode()
            assert len(copied.getvalue()) == len(source.getvalue()) or name == "parquet"
