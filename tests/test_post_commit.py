"""The post-commit path (after_commit) and the writer's file ownership (abort)."""

from __future__ import annotations

import glob
import logging
import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def kv(ids, vs) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.int64())})


def _data_files(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, "bucket-*", "*.parquet")))


def test_write_returns_its_snapshot_when_the_compaction_after_it_fails(tmp_path, caplog):
    """A landed commit is never turned into an exception: a retry would write twice."""
    path = str(tmp_path / "t")
    t = mp.create_table(path, KV, primary_key=["id"], options={
        "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "changelog-producer": "lookup", "bucket": "1"})
    t.write(kv([1], [10]))
    # damage: the compacted file of snapshot 1..2 vanishes, so the next compaction must fail
    for f in _data_files(path):
        os.remove(f)
    before = t.latest_snapshot().id
    with caplog.at_level(logging.WARNING, logger="minipaimon_core"):
        snap = t.write(kv([1], [1]))
    assert snap == before + 1 == t.latest_snapshot().id  # APPEND landed, compaction did not
    result = t.last_after_commit
    assert result is not None and not result.ok and result.compact_snapshot is None
    assert isinstance(result.errors[0], mp.CorruptDataFileError)  # missing from a retained snapshot
    assert "the commit stands" in caplog.text


def test_write_returns_its_snapshot_when_the_expiration_after_it_fails(tmp_path):
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA)
    t.write(rows(0, 1))
    t.write(rows(1, 1))
    # damage only what expiration reads: the manifest of snapshot 2's delta
    delta = t.manifests.read_list(t.latest_snapshot().deltaManifestList)[0]
    os.remove(os.path.join(path, "manifest", delta.fileName))
    t = mp.open_table(path)  # a handle that has not decoded that manifest (the writer's has it cached)
    t.set_options({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    assert t.write(rows(2, 1)) == 3
    result = t.last_after_commit
    assert result is not None and result.expired is None
    assert [type(e) for e in result.errors] == [mp.CorruptMetadataError]
    assert t.latest_snapshot().id == 3


def test_abort_after_a_commit_keeps_the_committed_files(tmp_path):
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA)
    w = t.new_write("job")
    w.write(rows(0, 3))
    t.new_commit("job").commit(w.prepare_commit(), 1)
    with pytest.raises(mp.SchemaMismatchError):
        w.write(pa.table({"nope": [1]}))
    w.abort()
    assert sorted_ids(mp.open_table(path).to_arrow()) == [0, 1, 2]


def test_abort_deletes_files_flushed_but_not_handed_out(tmp_path):
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, options={"write-buffer-size": "1 b", "target-file-size": "1 kb"})
    w = t.new_write("job")
    w.write(rows(0, 3))
    handed = w.prepare_commit()
    kept = set(_data_files(path))
    w.write(rows(10, 50))  # flushed at once: the buffer holds 1 byte
    assert set(_data_files(path)) > kept
    w.abort()
    assert set(_data_files(path)) == kept
    t.new_commit("job").commit(handed, 1)
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]
