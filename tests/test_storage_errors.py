"""Errors of the right kind (issue 32 items 27 and 28): a store that fails while a data file
is read or written is a retryable StorageError (never "the file is damaged"), a local disk
error is a StorageError naming the path (never a raw OSError), a file missing from a
retained snapshot is corrupt (naming it) while one whose snapshot expired meanwhile is
SnapshotExpiredError, and paths the OS or the object store cannot take are
InvalidArgumentError."""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import minipaimon_core as mp
from minipaimon_core.format.layout import TableLayout
from minipaimon_core.io import fileio_object
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_s3 import S3Settings
from minipaimon_core.maintenance import TableFiles, expire
from minipaimon_core.maintenance.orphans import remove_orphan_files
from tests.conftest import Storage
from tests.fault_proxy import FaultProxy
from tests.helpers import SCHEMA, rows, sorted_ids


@pytest.fixture
def faulty(moto_server) -> Iterator[tuple[FaultProxy, mp.Table]]:
    """A table on the moto server reached through a FaultProxy."""
    proxy = FaultProxy(moto_server.endpoint)
    bucket = moto_server.create_bucket()
    io = ObjectStoreFileIO(S3Settings.resolve({**moto_server.options(), "s3.endpoint": proxy.endpoint}, {}))
    t = mp.create_table(f"s3://{bucket}/t", SCHEMA, io=io)
    t.write(rows(0, 3))
    yield proxy, t
    proxy.stop()
    fileio_object._probed.clear()


# -- item 27: a store outage is not a damaged file ----------------------------------------

@pytest.mark.parametrize("answer", [503, 500, "reset"])
def test_a_store_outage_while_reading_a_data_file_is_a_storage_error(faulty, answer) -> None:
    proxy, t = faulty
    proxy.fail("GET", ".parquet", answer)
    with pytest.raises(mp.StorageError, match=r"bucket-0/data-.*\.parquet"):
        t.to_arrow()
    proxy.heal()
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]  # the retry the error invites works


def test_a_short_outage_while_reading_a_data_file_is_ridden_out(faulty) -> None:
    proxy, t = faulty
    proxy.fail("GET", ".parquet", 503, times=4)  # more than the streamed read's own retries
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]
    assert proxy.failed >= 4
    proxy.fail("HEAD", ".parquet", 503)  # the streamed read cannot even learn the size
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]


@pytest.mark.parametrize("method", ["PUT", "POST"])
def test_a_slow_down_while_writing_a_data_file_is_a_storage_error(faulty, method) -> None:
    """pyarrow's multipart upload (POST to initiate it, PUT of the parts or a small file)."""
    proxy, t = faulty
    before = t.io.list_names(t.layout.bucket_dir("", 0))
    proxy.fail(method, ".parquet", 503)
    with pytest.raises(mp.StorageError, match=r"bucket-0/data-.*\.parquet.*nothing was committed"):
        t.write(rows(10, 3))
    proxy.heal()
    assert t.io.list_names(t.layout.bucket_dir("", 0)) == before  # no partial file left
    assert [s.id for s in mp.open_table(t.path, io=t.io).snapshots()] == [1]


# -- item 27: missing files ---------------------------------------------------------------

def test_a_data_file_missing_from_a_retained_snapshot_is_corrupt(storage: Storage) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA)
    t.write(rows(0, 3))
    split = t.scan().plan()[0]
    path = t.layout.data_file_path(split.partition_path, split.bucket, split.files[0].fileName)
    t.io.delete(path)
    with pytest.raises(mp.CorruptDataFileError, match=f"{split.files[0].fileName} is missing"):
        t.to_arrow()


def test_a_data_file_of_a_snapshot_expired_meanwhile_is_snapshot_expired(storage: Storage) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA)
    t.write(rows(0, 3))
    split = t.scan().plan()[0]  # planned on snapshot 1
    t.write(rows(0, 3), mode="overwrite")
    t.expire_snapshots(retain_max=1)  # snapshot 1 and its file are gone
    with pytest.raises(mp.SnapshotExpiredError, match="re-plan the read"):
        list(t.read_split(split))


def _dv_table(path: str) -> mp.Table:
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"deletion-vectors.enabled": "true"})
    t.write(rows(0, 3))
    t.write(rows(0, 1))  # snapshot 2 has an index manifest and an index file
    return t


@pytest.mark.parametrize("which", ["index manifest", "index file"])
def test_an_index_file_missing_from_a_retained_snapshot_is_corrupt(storage: Storage, which: str) -> None:
    t = _dv_table(storage.path("t"))
    snap = t.latest_snapshot()
    assert snap is not None and snap.indexManifest is not None
    name = snap.indexManifest if which == "index manifest" else t.vectors.entries(snap)[0].fileName
    t.io.delete(t.layout.metadata_path(name))
    with pytest.raises(mp.CorruptMetadataError, match=f"{name} is missing"):
        mp.open_table(t.path).to_arrow()


def test_orphan_cleanup_racing_an_expiration_of_a_vector_table_skips_what_vanished(tmp_path: Path) -> None:
    """Orphan cleanup reads snapshot 2 (its file present), then an expirer deletes its files
    before its index manifest is read: the cleanup goes on with the snapshots still there."""
    t = _dv_table(str(tmp_path / "t"))
    t.write(rows(1, 1))
    t.write(rows(2, 1))
    files = TableFiles.of(t)
    read = files.snapshots.try_get

    def expire_after_reading(snapshot_id: int):  # the race, at the point it happens
        snap = read(snapshot_id)
        if snapshot_id == 2:
            expire.expire_range(TableFiles.of(mp.open_table(t.path)), 1, 4)
        return snap

    files.snapshots.try_get = expire_after_reading  # type: ignore[method-assign]
    result = remove_orphan_files(files, older_than_ms=int(time.time() * 1000))
    assert [s.id for s in mp.open_table(t.path).snapshots()] == [4]
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [0, 1, 2]
    assert all("snapshot-4" not in p for p in result.files)


# -- item 28: local disk errors, paths the OS or the store cannot take ---------------------

def test_a_local_read_error_is_a_storage_error_naming_the_path(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    snapshot = Path(t.layout.snapshot_path(1))
    snapshot.unlink()
    snapshot.symlink_to("/proc/self/mem")  # reading it fails with EIO
    with pytest.raises(mp.StorageError, match=f"{snapshot}.*errno 5"):
        mp.open_table(t.path).to_arrow()


def test_a_full_local_disk_is_a_storage_error_naming_the_path(tmp_path: Path, monkeypatch) -> None:
    full = tmp_path / "full"
    full.symlink_to("/dev/full")  # every write fails with ENOSPC
    with pytest.raises(mp.StorageError, match=f"{full}.*errno 28"):
        LocalFileIO().write_bytes(str(full), b"x" * 100_000)
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    name = "data-full-0.parquet"
    os.makedirs(t.layout.bucket_dir("", 0))
    os.symlink("/dev/full", t.layout.data_file_path("", 0, name))
    monkeypatch.setattr(TableLayout, "new_data_file_name", staticmethod(lambda prefix="data", extension="parquet": name))
    with pytest.raises(mp.StorageError, match=f"{name}.*nothing was committed"):
        t.write(rows(0, 3))
    assert mp.open_table(t.path).latest_snapshot() is None


def test_paths_the_os_or_the_store_cannot_take_are_invalid_arguments(storage: Storage) -> None:
    with pytest.raises(mp.InvalidArgumentError, match="NUL"):
        mp.create_table(storage.path("t\x00x"), SCHEMA)
    if storage.is_object_store:
        for bad in ("t/../u", "t//u", "./t"):
            with pytest.raises(mp.InvalidArgumentError, match="segment"):
                mp.create_table(storage.path(bad), SCHEMA)
        t = mp.create_table(storage.path("t"), SCHEMA)
        with pytest.raises(mp.InvalidArgumentError, match="not a valid object path"):
            t.io.read_bytes(storage.path("t/../u"))
    with pytest.raises(mp.InvalidArgumentError, match="NUL"):
        LocalFileIO().read_bytes("/tmp/a\x00b")


# -- issue 38 item 11: a store that keeps failing the snapshot create is no lost race -----

class _QuickRetries(S3Settings):
    """The same S3 settings, but a client that retries a failed request once, quickly (the
    default rides out a 503 for ~13 s), so each commit attempt fails fast."""

    def make_store(self, bucket: str) -> Any:
        from obstore.store import S3Store

        store = super().make_store(bucket)
        return S3Store(bucket, config={k: v for k, v in store.config.items() if k != "bucket"},
                       client_options=store.client_options,
                       retry_config={"max_retries": 1, "retry_timeout": datetime.timedelta(seconds=1)})


@pytest.mark.parametrize("answer", [503, "reset"])
def test_a_store_failing_every_snapshot_create_is_a_storage_error_not_a_lost_race(moto_server, answer) -> None:
    proxy = FaultProxy(moto_server.endpoint)
    try:
        plain = S3Settings.resolve({**moto_server.options(), "s3.endpoint": proxy.endpoint}, {})
        io = ObjectStoreFileIO(_QuickRetries(**{f.name: getattr(plain, f.name) for f in dataclasses.fields(plain)}))
        t = mp.create_table(f"s3://{moto_server.create_bucket()}/t", SCHEMA, io=io,
                            options={"commit.max-retries": "2"})
        t.write(rows(0, 3))
        before = {n for d in ("manifest", "bucket-0") for n in io.list_names(f"{t.path}/{d}")}
        proxy.fail("PUT", "/snapshot/snapshot-", answer)  # nobody else writes: only the store fails
        with pytest.raises(mp.StorageError) as err:
            t.write(rows(10, 3))
        message = str(err.value)
        assert "the store failed to create the snapshot file 3 times" in message, message
        assert "nothing was committed" in message and "other writers" not in message
        proxy.heal()
        assert [s.id for s in mp.open_table(t.path, io=io).snapshots()] == [1]
        assert {n for d in ("manifest", "bucket-0") for n in io.list_names(f"{t.path}/{d}")} == before
        assert t.write(rows(10, 3)) == 2  # the retry the error invites works
    finally:
        proxy.stop()
        fileio_object._probed.clear()
