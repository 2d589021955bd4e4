"""Values out of their range in otherwise valid metadata are refused where they are decoded,
never read silently wrong (issue 32 items 17 and 28): levels, buckets, kinds, counts,
sequence numbers, snapshot versions and commit kinds, index types, consumer progress."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError, UnsupportedFeatureError
from minipaimon_core.format import index_manifest
from minipaimon_core.format.data_file_meta import MAX_SEQUENCE
from minipaimon_core.metadata.consumer import ConsumerManager
from tests import hostile
from tests.helpers import SCHEMA, rows, sorted_ids


def _foreign(t: mp.Table, snapshot_id: int, **changes: object) -> None:
    """Rewrite a snapshot as another writer's file: its JSON with ``changes``, no checksum."""
    hostile.rewrite_json(t, t.layout.snapshot_path(snapshot_id), checksum=False, **changes)


def _pk_table(tmp_path: Path) -> mp.Table:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"])
    t.write(rows(0, 3))
    t.write(rows(1, 1).set_column(1, "k", [["second"]]))
    return t


@pytest.mark.parametrize("value", [0, -5])
def test_another_writers_next_sequence_number_is_not_trusted(tmp_path: Path, value: int) -> None:
    """A snapshot without minipaimon's checksum (as another writer's) saying the next write
    starts at 0 (or below): the next upsert must still win."""
    t = _pk_table(tmp_path)
    _foreign(t, 2, nextSequenceNumber=value)
    t = mp.open_table(t.path)
    t.write(rows(1, 1).set_column(1, "k", [["third"]]))
    assert {r["id"]: r["k"] for r in t.to_arrow().to_pylist()} == {0: "k0", 1: "third", 2: "k2"}


def test_an_out_of_range_next_sequence_number_of_our_own_is_refused(tmp_path: Path) -> None:
    t = _pk_table(tmp_path)
    path = t.layout.snapshot_path(2)
    for value in (-1, MAX_SEQUENCE + 1, 2**63 - 1):  # checksummed: ours
        hostile.rewrite_json(t, path, nextSequenceNumber=value)
        with pytest.raises(CorruptMetadataError, match="nextSequenceNumber"):
            mp.open_table(t.path).write(rows(1, 1))  # not an OverflowError at 2**63 - 1
    hostile.rewrite_json(t, path, nextSequenceNumber=MAX_SEQUENCE - 1)  # far from an overflow
    t = mp.open_table(t.path)
    t.write(rows(1, 1).set_column(1, "k", [["third"]]))  # the last number there is
    assert {r["id"]: r["k"] for r in t.to_arrow().to_pylist()} == {0: "k0", 1: "third", 2: "k2"}
    before = {s.id for s in t.snapshots()}
    with pytest.raises(mp.InvalidArgumentError, match="SequenceNumber"):
        t.write(rows(1, 1))  # past it: typed, nothing committed
    assert {s.id for s in mp.open_table(t.path).snapshots()} == before


@pytest.mark.parametrize("records", [False, True], ids=["payload", "avro-records"])
@pytest.mark.parametrize("field,value", [("level", -1), ("rowCount", -3), ("fileSize", -1),
                                         ("minSequenceNumber", -1), ("maxSequenceNumber", 2**63 - 1),
                                         ("fileSource", 7), ("extraFiles", ("../x",))])
def test_a_manifest_entry_out_of_range_is_refused(tmp_path: Path, records: bool, field: str, value: object) -> None:
    t = _pk_table(tmp_path)
    snap = t.snapshot(2)
    metas = []
    for m in t.manifests.snapshot_list(snap, "delta"):
        entries = [msgspec.structs.replace(e, file=msgspec.structs.replace(e.file, **{field: value}))
                   for e in t.manifests.entries_of([m])]
        name = hostile.write_manifest(t, entries, records)
        metas.append(msgspec.structs.replace(m, fileName=name, fileDigest=None,
                                             fileSize=t.io.file_size(t.layout.manifest_path(name))))
    hostile.replace_snapshot(t, 2, deltaManifestList=hostile.write_list(t, metas))
    t = mp.open_table(t.path)
    with pytest.raises(CorruptMetadataError):
        t.to_arrow()
    with pytest.raises(CorruptMetadataError):
        t.compact(full=True)
    assert sorted_ids(t.scan(snapshot_id=1).to_arrow()) == [0, 1, 2]


@pytest.mark.parametrize("records", [False, True], ids=["payload", "avro-records"])
@pytest.mark.parametrize("field,value", [("bucket", -1), ("kind", 2)])
def test_an_entry_of_a_bad_bucket_or_kind_is_refused(tmp_path: Path, records: bool, field: str, value: int) -> None:
    t = _pk_table(tmp_path)
    snap = t.snapshot(2)
    metas = []
    for m in t.manifests.snapshot_list(snap, "delta"):
        entries = [msgspec.structs.replace(e, **{field: value}) for e in t.manifests.entries_of([m])]
        name = hostile.write_manifest(t, entries, records)
        metas.append(msgspec.structs.replace(m, fileName=name, fileDigest=None,
                                             fileSize=t.io.file_size(t.layout.manifest_path(name))))
    hostile.replace_snapshot(t, 2, deltaManifestList=hostile.write_list(t, metas))
    with pytest.raises(CorruptMetadataError):
        mp.open_table(t.path).to_arrow()


@pytest.mark.parametrize("changes,error", [
    ({"version": 99}, UnsupportedFeatureError), ({"version": 0}, CorruptMetadataError),
    ({"commitKind": "BOGUS"}, CorruptMetadataError), ({"id": -2}, CorruptMetadataError),
    ({"totalRecordCount": -1}, CorruptMetadataError), ({"schemaId": -1}, CorruptMetadataError),
    ({"deltaManifestListSize": -1}, CorruptMetadataError),
])
def test_a_snapshot_out_of_range_is_refused(tmp_path: Path, changes: dict[str, object], error: type) -> None:
    t = _pk_table(tmp_path)
    _foreign(t, 2, **changes)
    with pytest.raises(error):
        mp.open_table(t.path).to_arrow()
    with pytest.raises(error):
        mp.open_table(t.path).snapshots()


def test_paimon_commit_kinds_and_versions_are_read(tmp_path: Path) -> None:
    t = _pk_table(tmp_path)
    _foreign(t, 1, commitKind="ANALYZE", version=1)
    _foreign(t, 2, version=2)
    t = mp.open_table(t.path)
    assert [s.commit_kind for s in t.snapshots()] == ["ANALYZE", "APPEND"]
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]


def test_an_index_manifest_out_of_range_is_refused(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"deletion-vectors.enabled": "true"})
    t.write(rows(0, 3))
    t.write(rows(0, 1))
    good = t.vectors.entries(t.snapshot(2))
    for change in ({"indexType": "BOGUS"}, {"bucket": -1}, {"rowCount": -1},
                   {"ranges": (msgspec.structs.replace(good[0].ranges[0], offset=-4),)},
                   {"ranges": (msgspec.structs.replace(good[0].ranges[0], dataFile="../x.parquet"),)}):
        entries = [msgspec.structs.replace(e, digest=None, **change) for e in good]
        data = index_manifest.encode(entries, t.manifests.row_types().partition)
        name = t.layout.new_index_manifest_name()
        t.io.write_bytes(t.layout.manifest_path(name), data)
        hostile.replace_snapshot(t, 2, indexManifest=name)
        with pytest.raises(CorruptMetadataError):
            mp.open_table(t.path).to_arrow()


def test_a_consumer_before_the_first_snapshot_is_refused(tmp_path: Path) -> None:
    t = _pk_table(tmp_path)
    ConsumerManager(t.io, t.layout).write("c", 2)
    path = t.layout.consumer_path("c")
    t.io.replace(path, b'{"nextSnapshot": 0}')
    with pytest.raises(CorruptMetadataError):
        ConsumerManager(t.io, t.layout).read("c")
