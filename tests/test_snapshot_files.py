"""Snapshot files are held to their names (issue 15, item 9)."""

from __future__ import annotations

import os
import shutil

import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids


def test_a_snapshot_copied_under_another_id_is_corrupt(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    t.write(rows(2, 2))
    snap_dir = os.path.join(t.path, "snapshot")
    shutil.copyfile(os.path.join(snap_dir, "snapshot-2"), os.path.join(snap_dir, "snapshot-1"))
    with pytest.raises(mp.CorruptMetadataError, match="snapshot-1: holds snapshot 2, not 1"):
        t.scan(snapshot_id=1).to_arrow()
    with pytest.raises(mp.CorruptMetadataError):
        t.snapshots()
    assert sorted_ids(t.to_arrow()) == [0, 1, 2, 3]  # the latest is intact


def test_a_tag_is_a_copy_of_its_snapshot_and_reads(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    t.create_tag("first", 1)
    t.write(rows(2, 2))
    assert t.tags() == {"first": 1}
    assert sorted_ids(t.scan(tag="first").to_arrow()) == [0, 1]
