"""Tag files (``tag/tag-<name>``, minipaimon_core.metadata.tags): create, read, list, delete, and the
round trip: a tag is byte for byte its snapshot's file, and re-encoding it gives the same
bytes."""

from __future__ import annotations

import pytest

import minipaimon_core as mp
from minipaimon_core.format import snapshot as snapshot_codec
from minipaimon_core.format.layout import TableLayout
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.metadata.tags import TagManager
from tests.helpers import SCHEMA, rows


def test_tag_manager_create_read_list_delete_round_trip(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    t.write(rows(2, 2))
    io, layout = LocalFileIO(), TableLayout(t.path)
    tags = TagManager(io, layout)
    assert tags.names() == [] and tags.snapshots() == {}
    tags.create("b-tag", t.snapshot(2))
    tags.create("a.tag", t.snapshot(1))
    stored = io.read_bytes(layout.tag_path("a.tag"))
    assert stored == io.read_bytes(layout.snapshot_path(1))  # a copy of the snapshot file
    assert snapshot_codec.encode(snapshot_codec.decode(stored, "p")) == stored
    assert tags.names() == ["a.tag", "b-tag"]
    assert {n: s.id for n, s in tags.snapshots().items()} == {"a.tag": 1, "b-tag": 2}
    assert tags.get("b-tag") == t.snapshot(2)
    with pytest.raises(mp.InvalidArgumentError, match="already exists"):
        tags.create("a.tag", t.snapshot(2))
    assert tags.get("a.tag").id == 1  # never replaced
    tags.delete("a.tag")
    assert tags.names() == ["b-tag"]
    with pytest.raises(mp.SnapshotNotFoundError, match="no tag 'a.tag'"):
        tags.get("a.tag")
    with pytest.raises(mp.SnapshotNotFoundError):
        tags.delete("a.tag")
    with pytest.raises(mp.InvalidArgumentError, match="invalid tag name"):
        tags.get("../x")


def test_listing_skips_names_that_are_not_tags(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 1))
    t.create_tag("kept")
    layout = TableLayout(t.path)
    # (a single inner space is a tag's: Paimon's hourly automatic tags are "2024-03-05 10")
    for stray in ("tag-", ".tag-kept.0123.tmp", "README", "tag-..", "tag-a  b", "tag- a", "tag-a\nb"):
        (tmp_path / "t" / "tag" / stray).write_bytes(b"x")
    assert TagManager(LocalFileIO(), layout).names() == ["kept"]
    assert t.tags() == {"kept": 1}
