"""Durability of a commit on a local disk: every file a new snapshot references that is new
with it (data, changelog and index files, manifests, manifest lists) is fsynced, with its
directory, before the snapshot file is created (FileIO.sync), so a power failure cannot
leave a committed snapshot naming a file the OS had not written yet. Object stores need no
sync (an object is durable once its PUT answered)."""

from __future__ import annotations

import os

import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio import UNSAFE_NO_FSYNC_ENV, LocalFileIO
from minipaimon_core.maintenance import TableFiles
from tests.helpers import SCHEMA, rows


class SyncRecordingIO(LocalFileIO):
    """A local FileIO that records the paths synced so far at each snapshot create."""

    def __init__(self) -> None:
        super().__init__(fsync=True)
        self.synced: set[str] = set()
        self.synced_at_create: dict[str, set[str]] = {}

    def sync(self, paths):
        super().sync(paths)
        self.synced |= set(paths)

    def write_if_absent(self, path, data):
        if os.path.basename(path).startswith("snapshot-"):
            self.synced_at_create[path] = set(self.synced)
        return super().write_if_absent(path, data)


@pytest.mark.parametrize("options", [
    {"bucket": "2", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
    {"bucket": "-1", "dynamic-bucket.target-row-num": "5"},
    {"bucket": "1", "file-index.bloom-filter.columns": "k", "file-index.in-manifest-threshold": "1"},
], ids=["dv-lookup", "dynamic", "file-index"])
def test_every_new_file_of_a_snapshot_is_synced_before_its_create(tmp_path, options) -> None:
    io = SyncRecordingIO()
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"], options=options, io=io)
    t.write(rows(0, 20))
    t.write(rows(10, 20, dt="d2"))
    t.write(rows(5, 10))
    t.compact(full=True)
    t.delete([("id", "<", 3)])
    t.rewrite_manifests()
    t.restore(2)
    files = TableFiles.of(t)
    seen: set[str] = set()
    snapshots = t.snapshots()
    assert len(snapshots) >= 7  # and the compactions the options run after writes
    for snap in snapshots:
        used = files.used_paths(snap)
        new = used - seen
        assert new, snap.id
        synced = io.synced_at_create[t.layout.snapshot_path(snap.id)]
        assert new <= synced, (snap.id, snap.commit_kind, sorted(new - synced))
        seen |= used


def test_local_sync_fsyncs_each_file_and_directory_once(tmp_path, monkeypatch) -> None:
    """What LocalFileIO.sync does: an fsync of every file, then of every directory holding
    one (a new file's entry), each once; a missing file is FileNotFoundError."""
    fsynced: list[str] = []
    real = os.fsync

    def recording_fsync(fd: int) -> None:
        fsynced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    paths = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        for n in range(3):
            p = tmp_path / d / f"f{n}"
            p.write_bytes(b"x" * n)
            paths.append(str(p))
    monkeypatch.setattr(os, "fsync", recording_fsync)
    LocalFileIO(fsync=True).sync(paths)
    assert sorted(fsynced) == sorted([*paths, str(tmp_path / "a"), str(tmp_path / "b")])
    fsynced.clear()
    LocalFileIO(fsync=False).sync(paths)
    assert fsynced == []
    with pytest.raises(FileNotFoundError):
        LocalFileIO(fsync=True).sync([str(tmp_path / "a" / "gone"), *paths])


def test_a_commit_whose_data_file_is_gone_raises_and_commits_nothing(tmp_path) -> None:
    """A data file deleted between its write and the commit (another process, an orphan
    cleanup run with a short older_than): the commit raises CorruptDataFileError naming it
    and leaves the table as it was, no metadata file of the attempt behind (before: the
    snapshot landed naming a missing file, and every read of the table failed)."""
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"], options={"bucket": "1"},
                        io=LocalFileIO(fsync=True))
    t.write(rows(0, 5))
    manifests = sorted(os.listdir(tmp_path / "t" / "manifest"))
    writer = t.new_write("job")
    writer.write(rows(10, 5))
    messages = writer.prepare_commit()
    gone = tmp_path / "t" / "dt=d1" / "bucket-0" / messages[0].newFiles[0].fileName
    gone.unlink()
    with pytest.raises(mp.CorruptDataFileError, match=f"{gone}: a file of this commit is gone"):
        t.new_commit("job").commit(messages, 1)
    t = mp.open_table(path, io=LocalFileIO(fsync=True))
    assert [s.id for s in t.snapshots()] == [1]
    assert sorted(os.listdir(tmp_path / "t" / "manifest")) == manifests
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]


def _fsyncs_of_a_write(tmp_path, monkeypatch, name: str) -> int:
    count = [0]
    real = os.fsync

    def counting_fsync(fd: int) -> None:
        count[0] += 1
        real(fd)

    t = mp.create_table(str(tmp_path / name), SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    monkeypatch.setattr(os, "fsync", counting_fsync)
    t.write(rows(0, 5))
    monkeypatch.setattr(os, "fsync", real)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    return count[0]


def test_fsync_is_on_unless_the_environment_says_unsafe(tmp_path, monkeypatch) -> None:
    """MINIPAIMON_UNSAFE_NO_FSYNC=1 turns every fsync of a local table off (scratch tables,
    test suites); unset or 0 it is on, and any other value is refused before anything is
    written."""
    monkeypatch.delenv(UNSAFE_NO_FSYNC_ENV, raising=False)
    assert _fsyncs_of_a_write(tmp_path, monkeypatch, "default") >= 4  # data, manifests, snapshot, dirs
    monkeypatch.setenv(UNSAFE_NO_FSYNC_ENV, "0")
    assert _fsyncs_of_a_write(tmp_path, monkeypatch, "zero") >= 4
    monkeypatch.setenv(UNSAFE_NO_FSYNC_ENV, "1")
    assert _fsyncs_of_a_write(tmp_path, monkeypatch, "unsafe") == 0
    monkeypatch.setenv(UNSAFE_NO_FSYNC_ENV, "yes please")
    with pytest.raises(mp.InvalidArgumentError, match="MINIPAIMON_UNSAFE_NO_FSYNC='yes please' is not valid"):
        mp.create_table(str(tmp_path / "refused"), SCHEMA, primary_key=["id"])
    assert not (tmp_path / "refused").exists()
