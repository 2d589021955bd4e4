"""Apache Paimon's own tag scenarios (paimon-spark's CreateAndDeleteTagProcedureTest,
paimon-core's TagTest and TagManagerTest), expressed with minipaimon's API, for what
minipaimon lacked before issue 39: ``rename_tag``, a tag's ``time_retained`` (Paimon's
``tagCreateTime`` / ``tagTimeRetained``), deleting several tags at once. Each test names the
Paimon test it follows; the expected rows and bytes are Paimon's."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError, InvalidArgumentError, SnapshotNotFoundError
from minipaimon_core.format import tag as tag_codec
from minipaimon_core.format.snapshot import Snapshot

A_B = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())])


def _table(path: Path, writes: list[tuple[int, str]]) -> mp.Table:
    """Paimon's test table T (a INT, b STRING) with primary key a, one commit a row."""
    t = mp.create_table(str(path), A_B, primary_key=["a"], options={"bucket": "3"})
    for a, b in writes:
        t.write(pa.table({"a": pa.array([a], pa.int32()), "b": [b]}, schema=A_B))
    return t


def _tag_names(t: mp.Table) -> list[str]:
    return sorted(mp.open_table(t.path).system_table("tags").column("tag_name").to_pylist())


def test_create_and_delete_tag(tmp_path: Path) -> None:
    # paimon-spark CreateAndDeleteTagProcedureTest, "Paimon Procedure: create and delete tag"
    t = _table(tmp_path / "t", [(1, "a"), (2, "b"), (2, "b2")])
    t.create_tag("test_tag", snapshot_id=2, time_retained="5 d")
    assert _tag_names(t) == ["test_tag"]
    assert t.scan(tag="test_tag").to_arrow().sort_by("a").to_pylist() == [{"a": 1, "b": "a"}, {"a": 2, "b": "b"}]
    t.delete_tag("test_tag")
    assert _tag_names(t) == []
    t.create_tag("test_latestSnapshot_tag")
    assert _tag_names(t) == ["test_latestSnapshot_tag"]
    t.delete_tag("test_latestSnapshot_tag")
    assert _tag_names(t) == []
    t.create_tag("test_tag_1", snapshot_id=1)
    t.create_tag("test_tag_2", snapshot_id=2)
    assert _tag_names(t) == ["test_tag_1", "test_tag_2"]
    t.rename_tag("test_tag_1", "test_tag_3")  # test rename_tag
    assert _tag_names(t) == ["test_tag_2", "test_tag_3"]
    assert t.tags() == {"test_tag_2": 2, "test_tag_3": 1}
    t.delete_tag(["test_tag_2", "test_tag_3"])  # delete test_tag_2 and test_tag_3
    assert _tag_names(t) == []


def test_create_same_tag_with_same_snapshot(tmp_path: Path) -> None:
    # paimon-spark CreateAndDeleteTagProcedureTest, "Paimon Procedure: create same tag with
    # same snapshot": a second create with a time_retained fails, "already exists"
    t = _table(tmp_path / "t", [(1, "a")])
    t.create_tag("test_tag", snapshot_id=1)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        t.create_tag("test_tag", snapshot_id=1, time_retained="5 d")
    assert t.tag_info("test_tag").time_retained_ms is None


def test_delete_multiple_tags(tmp_path: Path) -> None:
    # paimon-spark CreateAndDeleteTagProcedureTest, "Paimon Procedure: delete multiple tags"
    t = _table(tmp_path / "t", [(1, "a")])
    for name in ("tag-1", "tag-2", "tag-3", "tag-4"):
        t.create_tag(name)
    assert len(_tag_names(t)) == 4
    t.delete_tag(["tag-1", "tag-2"])
    assert _tag_names(t) == ["tag-3", "tag-4"]
    with pytest.raises(SnapshotNotFoundError, match="tag-5"):  # one missing: none deleted
        t.delete_tag(["tag-3", "tag-5"])
    assert _tag_names(t) == ["tag-3", "tag-4"]
    t.delete_tag(["tag-3", "tag-4"])
    assert _tag_names(t) == []


def test_rename_tag_with_existing_target_name(tmp_path: Path) -> None:
    # paimon-core TagManagerTest.testRenameTagWithExistingTargetName: "Tag 'tag2' already exists."
    t = _table(tmp_path / "t", [(1, "a")])
    t.create_tag("tag1")
    t.create_tag("tag2")
    with pytest.raises(InvalidArgumentError, match="'tag2' already exists"):
        t.rename_tag("tag1", "tag2")
    with pytest.raises(SnapshotNotFoundError, match="nope"):
        t.rename_tag("nope", "tag3")
    assert t.tags() == {"tag1": 1, "tag2": 1}


def test_a_rename_keeps_the_file_and_its_retention(tmp_path: Path) -> None:
    # the new name holds the old file's bytes (Paimon renames the file)
    t = _table(tmp_path / "t", [(1, "a")])
    t.create_tag("old", time_retained="1 h")
    before = (tmp_path / "t" / "tag" / "tag-old").read_bytes()
    t.rename_tag("old", "new")
    assert t.tags() == {"new": 1} and (tmp_path / "t" / "tag" / "tag-new").read_bytes() == before
    assert t.tag_info("new").time_retained_ms == 3_600_000
    with pytest.raises(InvalidArgumentError, match="itself"):
        t.rename_tag("new", "new")


SNAPSHOT = Snapshot(version=3, id=1, schemaId=0, baseManifestList="manifest-list-a-0",
                    deltaManifestList="manifest-list-b-0", commitUser="u", commitIdentifier=0,
                    commitKind="APPEND", timeMillis=1000, totalRecordCount=0, deltaRecordCount=0)


def test_from_snapshot_and_tag_ttl() -> None:
    # paimon-core TagTest.testFromSnapshotAndTagTtl: the two members as Java's Jackson
    # writes them: "tagCreateTime" : [ 1969, 1, 1, 0, 0, 0, 123456789 ], "tagTimeRetained" : 5.000000000
    data = tag_codec.encode(SNAPSHOT, datetime.datetime(1969, 1, 1, 0, 0, 0, 123456), 5000)
    doc = json.loads(data)
    assert b'"tagCreateTime":[1969,1,1,0,0,0,123456000]' in data and b'"tagTimeRetained":5.000000000' in data
    assert doc["id"] == 1 and doc["commitKind"] == "APPEND"
    tag = tag_codec.decode(data, "tag-t")
    assert tag_codec.trim(tag) == SNAPSHOT  # trimToSnapshot
    assert tag_codec.encode(tag_codec.trim(tag), tag_codec.create_time(tag), tag_codec.time_retained_ms(tag)) == data
    assert tag_codec.create_time(tag) == datetime.datetime(1969, 1, 1, 0, 0, 0, 123456)
    assert tag_codec.time_retained_ms(tag) == 5000
    java = data.replace(b"123456000", b"123456789")  # Java's nanoseconds read to the microsecond
    assert tag_codec.create_time(tag_codec.decode(java.split(b',"checksum"')[0] + b"}", "t")) == \
        datetime.datetime(1969, 1, 1, 0, 0, 0, 123456)


def test_from_json_without_retention() -> None:
    # paimon-core TagTest.testFromJson / TagManagerTest: a tag without time retained is the
    # snapshot's JSON ("do not write the tagCreateTime field")
    data = tag_codec.encode(SNAPSHOT)
    assert b"tagCreateTime" not in data and b"tagTimeRetained" not in data
    assert tag_codec.trim(tag_codec.decode(data, "t")) == SNAPSHOT


def test_create_tag_with_time_retained(tmp_path: Path) -> None:
    # paimon-core TagManagerTest.testCreateTagWithTimeRetained: Duration.ofDays(1); the
    # tag's file holds both members and reads back the same; $tags shows them as Paimon's
    t = _table(tmp_path / "t", [(1, "a")])
    before = datetime.datetime.now().replace(microsecond=0)
    t.create_tag("tag", time_retained=datetime.timedelta(days=1))
    raw = json.loads((tmp_path / "t" / "tag" / "tag-tag").read_bytes())
    assert "tagCreateTime" in raw and raw["tagTimeRetained"] == 86400.0
    info = t.tag_info("tag")
    assert info.snapshot == t.snapshot(1) and info.time_retained_ms == 86_400_000
    assert info.create_time is not None and before <= info.create_time <= datetime.datetime.now()
    (row,) = t.system_table("tags").to_pylist()
    assert row["time_retained"] == "PT24H" and row["create_time"] is not None


@pytest.mark.parametrize("bad", [b'"tagTimeRetained":-1', b'"tagTimeRetained":"PT5S"',
                                 b'"tagCreateTime":[2024,13,1,0,0]'])
def test_a_damaged_retention_is_corrupt(tmp_path: Path, bad: bytes) -> None:
    data = b'{"version":3,"id":1,"schemaId":0,"baseManifestList":"manifest-list-a-0",' \
        b'"deltaManifestList":"manifest-list-b-0","commitUser":"u","commitIdentifier":0,' \
        b'"commitKind":"APPEND","timeMillis":1000,"totalRecordCount":0,"deltaRecordCount":0,' + bad + b"}"
    with pytest.raises(CorruptMetadataError):
        tag_codec.decode(data, "tag-x")


def test_time_retained_is_a_length_of_time(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", [(1, "a")])
    for bad in ("5", "soon", datetime.timedelta(seconds=-1), 5):
        with pytest.raises(InvalidArgumentError, match="time_retained"):
            t.create_tag("x", time_retained=bad)  # type: ignore[arg-type]
    assert t.tags() == {}


def test_command_line_renames_and_deletes_several(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", [(1, "a")])

    def cli(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "minipaimon_core.cli", *args], check=True,
                             capture_output=True, text=True)
        return out.stdout

    cli("tag", "create", t.path, "a", "--time-retained", "36 h")
    cli("tag", "create", t.path, "b")
    cli("tag", "rename", t.path, "a", "c")
    assert t.tags() == {"b": 1, "c": 1} and t.tag_info("c").time_retained_ms == 36 * 3_600_000
    assert "deleted tags b, c" in cli("tag", "delete", t.path, "b", "c")
    assert t.tags() == {}
