"""A data file live twice in a snapshot is damaged metadata, never rows read twice; the
committer refuses to write such a snapshot (issue 32 item 7)."""

from __future__ import annotations

import msgspec
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError, InvalidArgumentError
from minipaimon_core.metadata.commit_message import CommitMessage
from tests import hostile
from tests.conftest import Storage
from tests.helpers import SCHEMA, rows, sorted_ids


def _add_again(t: mp.Table, snapshot_id: int, from_snapshot: int) -> None:
    """Rewrite snapshot ``snapshot_id``'s delta to also ADD the files snapshot
    ``from_snapshot`` added (its row counts adjusted: only the duplicate is wrong)."""
    snap = t.snapshot(snapshot_id)
    again = [e for e in t.manifests.delta_entries(t.snapshot(from_snapshot)) if e.kind == 0]
    metas = []
    for m in t.manifests.snapshot_list(snap, "delta"):
        name = hostile.write_manifest(t, t.manifests.entries_of([m]) + again)
        size = t.io.file_size(t.layout.manifest_path(name))
        metas.append(msgspec.structs.replace(m, fileName=name, fileSize=size, fileDigest=None,
                                             numAddedFiles=m.numAddedFiles + len(again)))
    extra = sum(e.file.rowCount for e in again)
    hostile.replace_snapshot(t, snapshot_id, deltaManifestList=hostile.write_list(t, metas),
                             deltaRecordCount=snap.deltaRecordCount + extra,
                             totalRecordCount=snap.totalRecordCount + extra)


@pytest.mark.parametrize("where", ["same delta", "a later snapshot"])
def test_a_file_added_twice_is_corrupt_metadata_not_rows_read_twice(storage: Storage, where: str) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA)
    t.write(rows(0, 3))
    t.write(rows(10, 3))
    _add_again(t, 2, 2 if where == "same delta" else 1)
    t = mp.open_table(t.path)
    with pytest.raises(CorruptMetadataError, match="added twice"):
        t.to_arrow()
    with pytest.raises(CorruptMetadataError, match="added twice"):
        t.scan(filter=[("id", ">", 0)]).to_arrow()
    with pytest.raises(CorruptMetadataError, match="added twice"):
        t.system_table("files")
    if where == "same delta":  # a stream reads the delta itself
        with pytest.raises(CorruptMetadataError, match="added twice"):
            list(t.stream(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "2"}))
    assert sorted_ids(t.scan(snapshot_id=1).to_arrow()) == [0, 1, 2]


def _messages(t: mp.Table, start: int = 0) -> list[CommitMessage]:
    w = t.new_write("u")
    w.write(rows(start, 3))
    return w.prepare_commit()


def test_the_committer_refuses_a_file_named_twice(storage: Storage) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA)
    t.write(rows(100, 1))
    m = _messages(t)[0]
    twice_in_one = msgspec.structs.replace(m, newFiles=[m.newFiles[0], m.newFiles[0]])
    before = storage.list_all(t.path)
    for messages in ([twice_in_one], [m, m]):
        for overwrite in (False, True):
            with pytest.raises(InvalidArgumentError, match="twice"):
                t.new_commit("u").commit(messages, 1, overwrite=overwrite)
    assert storage.list_all(t.path) == before


def test_the_committer_refuses_a_file_already_live(storage: Storage) -> None:
    """Where the committer reads the live files anyway: an overwrite (it would DELETE and ADD
    the file at once, losing it) and a compaction."""
    t = mp.create_table(storage.path("t"), SCHEMA)
    messages = _messages(t)
    t.new_commit("u").commit(messages, 1)
    before = storage.list_all(t.path)
    with pytest.raises(InvalidArgumentError, match="already in the table"):
        t.new_commit("u").commit(messages, 2, overwrite=True)
    other = _messages(t, 10)
    t.new_commit("v").commit(other, 1)
    before = storage.list_all(t.path)
    m, live = other[0], messages[0].newFiles[0]
    compaction = CommitMessage(m.partition, m.partitionPath, m.bucket, m.totalBuckets,
                               compactBefore=list(m.newFiles), compactAfter=[live])
    with pytest.raises(InvalidArgumentError, match="already in the table"):
        t.new_commit("c").commit([compaction], 1)
    assert storage.list_all(t.path) == before
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [0, 1, 2, 10, 11, 12]


def test_an_append_of_a_live_file_is_never_read_twice(storage: Storage) -> None:
    """A plain append reads no live file (a commit costs O(its files)), so the same messages
    committed again under another identifier land; the next read refuses the snapshot
    rather than read the rows twice, and a rollback removes it."""
    t = mp.create_table(storage.path("t"), SCHEMA)
    messages = _messages(t)
    t.new_commit("u").commit(messages, 1)
    t.new_commit("u").commit(messages, 2)
    with pytest.raises(CorruptMetadataError, match="added twice"):
        mp.open_table(t.path).to_arrow()
    t.rollback_to(snapshot_id=1)
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [0, 1, 2]
