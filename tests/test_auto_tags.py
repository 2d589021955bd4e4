"""Automatic tags and tag retention after commits and by hand, as Paimon 0.9's
TagAutoCreation / TagTimeExpire / Flink's batch tag; Paimon's Tag JSON members. The time is
an injected clock (the commits' snapshot times and "now")."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError
from minipaimon_core.format import tag as tag_codec
from minipaimon_core.maintenance.tag_periods import TagPeriod
from minipaimon_core.metadata.tags import TagManager
from tests.test_partition_expire import Clock

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def table(tmp_path, clock: Clock, options: dict[str, str]) -> mp.Table:
    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, options=options)
    return mp.open_table(path, clock=clock)


def write_at(t: mp.Table, clock: Clock, at: datetime, i: int = 0) -> None:
    clock.set(at)
    t.write(pa.table({"id": [i]}, schema=SCHEMA))


# -- Paimon's Tag JSON ------------------------------------------------------------------------

JAVA_TAG = (b'{"version":3,"id":2,"schemaId":0,"baseManifestList":"manifest-list-a-0",'
            b'"deltaManifestList":"manifest-list-b-0","changelogManifestList":null,'
            b'"commitUser":"u","commitIdentifier":9,"commitKind":"APPEND","timeMillis":1709632800000,'
            b'"logOffsets":{},"totalRecordCount":1,"deltaRecordCount":1,"changelogRecordCount":0,'
            b'"tagCreateTime":[2024,3,5,10,0,1,500000000],"tagTimeRetained":86400.000000000}')


def test_a_java_tag_with_a_retention_decodes():
    """Jackson's LocalDateTime array and Duration as decimal seconds (Java 0.9 writes these)."""
    tag = tag_codec.decode(JAVA_TAG, "tag-x")
    assert tag_codec.create_time(tag) == datetime(2024, 3, 5, 10, 0, 1, 500000)
    assert tag_codec.time_retained_ms(tag) == 86_400_000
    assert tag_codec.trim(tag).id == 2 and not hasattr(tag_codec.trim(tag), "tagCreateTime")


def test_tag_members_are_written_as_paimon_writes_them():
    snap = tag_codec.trim(tag_codec.decode(JAVA_TAG, "x"))
    data = tag_codec.encode(snap, datetime(2024, 3, 5, 10, 0), 3_600_000)
    doc = json.loads(data)
    assert doc["tagCreateTime"] == [2024, 3, 5, 10, 0]  # trailing zeros left out, as Jackson
    assert b'"tagTimeRetained":3600.000000000' in data  # a Duration: seconds, nine decimals
    assert list(doc)[-3:] == ["tagCreateTime", "tagTimeRetained", "checksum"]
    tag = tag_codec.decode(data, "x")
    assert tag_codec.encode(tag_codec.trim(tag), tag_codec.create_time(tag), tag_codec.time_retained_ms(tag)) == data
    plain = json.loads(tag_codec.encode(snap))
    assert "tagCreateTime" not in plain and "tagTimeRetained" not in plain  # Paimon: none without a retention


@pytest.mark.parametrize("member, value", [("tagCreateTime", "[2024,13,5,10,0]"), ("tagCreateTime", "[2024]"),
                                           ("tagTimeRetained", "-1.0")])
def test_a_damaged_tag_member_is_corrupt(member, value):
    doc = JAVA_TAG.replace(b'"tagCreateTime":[2024,3,5,10,0,1,500000000]', f'"{member}":{value}'.encode()) \
        if member == "tagCreateTime" else JAVA_TAG.replace(b"86400.000000000", value.encode())
    with pytest.raises(CorruptMetadataError, match=member):
        tag_codec.decode(doc, "tag-x")


# -- periods ---------------------------------------------------------------------------------

@pytest.mark.parametrize("period, dashes, start, name", [
    ("daily", True, datetime(2024, 3, 5), "2024-03-05"),
    ("daily", False, datetime(2024, 3, 5), "20240305"),
    ("hourly", True, datetime(2024, 3, 5, 7), "2024-03-05 07"),
    ("hourly", False, datetime(2024, 3, 5, 7), "20240305 07"),
    ("two-hours", False, datetime(2024, 3, 5, 8), "2024-03-05 08"),  # always with dashes
])
def test_tag_names_of_periods(period, dashes, start, name):
    p = TagPeriod(period, dashes)
    assert p.name(start) == name and p.to_time(name) == start


def test_which_tags_are_automatic_and_the_previous_period():
    daily, hourly = TagPeriod("daily", True), TagPeriod("hourly", True)
    assert daily.is_auto("2024-03-05 10")  # Paimon's daily tags read the text before a space
    assert not daily.is_auto("release-1") and not daily.is_auto("20240305")
    assert daily.to_time("2024-13-01") == datetime(2025, 1, 1)  # lenient, as Paimon
    assert not hourly.is_auto("2024-03-05")
    assert daily.previous(datetime(2024, 3, 5, 23, 59)) == datetime(2024, 3, 4)
    assert TagPeriod("two-hours", True).previous(datetime(2024, 3, 5, 9, 30)) == datetime(2024, 3, 5, 6)


# -- after commits ----------------------------------------------------------------------------

def test_process_time_tags_follow_the_snapshots_times(tmp_path):
    clock = Clock(datetime(2024, 3, 5, 10))
    t = table(tmp_path, clock, {"tag.automatic-creation": "process-time"})
    write_at(t, clock, datetime(2024, 3, 5, 10))
    assert t.tags() == {"2024-03-04": 1}  # the first commit tags the period that ended
    write_at(t, clock, datetime(2024, 3, 5, 23))
    assert t.tags() == {"2024-03-04": 1}
    write_at(t, clock, datetime(2024, 3, 6, 0, 0))
    write_at(t, clock, datetime(2024, 3, 9, 1))  # days without a commit make no tags
    assert t.tags() == {"2024-03-04": 1, "2024-03-05": 3, "2024-03-08": 4}
    assert t.last_after_commit is not None and t.last_after_commit.tags is not None
    assert t.last_after_commit.tags.created == {"2024-03-08": 4}


def test_creation_delay_and_automatic_completion(tmp_path):
    clock = Clock(datetime(2024, 3, 5, 10))
    t = table(tmp_path, clock, {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                                "tag.creation-delay": "10 min", "tag.automatic-completion": "true"})
    write_at(t, clock, datetime(2024, 3, 5, 10, 5))
    assert t.tags() == {"2024-03-05 09": 1}
    write_at(t, clock, datetime(2024, 3, 5, 11, 5))  # 11:05 - 10 min < 11:00 + 1 h
    write_at(t, clock, datetime(2024, 3, 5, 11, 15))
    assert t.tags() == {"2024-03-05 09": 1, "2024-03-05 10": 3}
    write_at(t, clock, datetime(2024, 3, 5, 15, 30))  # completion: the next missing hour, not 14
    assert sorted(t.tags()) == ["2024-03-05 09", "2024-03-05 10", "2024-03-05 11"]


def test_watermark_tags_read_the_snapshots_watermarks(tmp_path):
    clock = Clock(datetime(2024, 3, 1))
    t = table(tmp_path, clock, {"tag.automatic-creation": "watermark",
                                "sink.watermark-time-zone": "Asia/Shanghai"})

    def commit(watermark: datetime | None) -> None:
        w = t.new_write("job")
        w.write(pa.table({"id": [1]}, schema=SCHEMA))
        ms = None if watermark is None else int(watermark.timestamp() * 1000)
        t.new_commit("job").commit(w.prepare_commit(), len(t.snapshots()), watermark=ms)
        t.after_commit()

    commit(None)  # no watermark: no tag
    assert t.tags() == {}
    utc = timezone.utc
    commit(datetime(2024, 3, 1, 20, tzinfo=utc))  # 2024-03-02 04:00 in Shanghai
    assert t.tags() == {"2024-03-01": 2}
    commit(None)  # carries the watermark forward, as Paimon's committer
    assert t.latest_snapshot().watermark == int(datetime(2024, 3, 1, 20, tzinfo=utc).timestamp() * 1000)
    commit(datetime(2024, 3, 1, 10, tzinfo=utc))  # an older watermark: the snapshot keeps the newest
    commit(datetime(2024, 3, 2, 17, tzinfo=utc))  # 2024-03-03 01:00 in Shanghai
    assert t.tags() == {"2024-03-01": 2, "2024-03-02": 5}


def test_num_retained_max_deletes_the_oldest_automatic_tags_only(tmp_path):
    clock = Clock(datetime(2024, 3, 1))
    t = table(tmp_path, clock, {"tag.automatic-creation": "process-time", "tag.num-retained-max": "2"})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    t.create_tag("release")  # not an automatic tag: never counted
    for day in (2, 3, 4):
        write_at(t, clock, datetime(2024, 3, day, 12))
    assert sorted(t.tags()) == ["2024-03-02", "2024-03-03", "release"]
    assert t.last_after_commit is not None and t.last_after_commit.tags is not None
    assert t.last_after_commit.tags.deleted == ["2024-03-01"]


def test_default_time_retained_tags_expire_after_commits(tmp_path):
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {"tag.automatic-creation": "process-time", "tag.default-time-retained": "2 d"})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    t.create_tag("manual")  # a manual tag takes the default retention too, as in Paimon
    tags = TagManager(t.io, t.layout)
    assert tags.info("manual").create_time == datetime(2024, 3, 1, 12)
    assert tags.info("2024-02-29").time_retained_ms == 2 * 86_400_000
    write_at(t, clock, datetime(2024, 3, 3, 12))  # exactly 2 days: kept (Paimon: after, not at)
    assert sorted(t.tags()) == ["2024-02-29", "2024-03-02", "manual"]
    write_at(t, clock, datetime(2024, 3, 3, 12, 0, 1))
    assert sorted(t.tags()) == ["2024-03-02"]


def test_a_given_time_retained_wins_over_the_default(tmp_path):
    """Paimon's createTag(name, snapshot, timeRetained): the given retention, else
    tag.default-time-retained; either way the tag is dated by the table's clock."""
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {"tag.default-time-retained": "2 d"})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    clock.set(datetime(2024, 3, 1, 13, 30))
    t.create_tag("short", time_retained="1 h")
    t.create_tag("default")
    assert (t.tag_info("short").time_retained_ms, t.tag_info("default").time_retained_ms) == \
        (3_600_000, 2 * 86_400_000)
    assert t.tag_info("short").create_time == datetime(2024, 3, 1, 13, 30)
    clock.set(datetime(2024, 3, 1, 14, 31))
    assert t.expire_tags().deleted == ["short"] and t.tags() == {"default": 1}


def test_a_retention_longer_than_a_datetime_reaches_never_expires(tmp_path):
    """Java writes any Duration (here ~31,700 years): the tag is kept, commits and
    expire_tags go on (no OverflowError from adding it to the create time)."""
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {"tag.automatic-creation": "process-time"})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    path = tmp_path / "t" / "tag" / "tag-forever"
    path.write_bytes(JAVA_TAG.replace(b'"id":2', b'"id":1').replace(b"86400.000000000", b"1000000000000.000000000"))
    assert t.tag_info("forever").time_retained_ms == 10**15
    write_at(t, clock, datetime(2024, 3, 2, 12), 1)
    assert t.last_after_commit is not None and t.last_after_commit.errors == []
    assert t.expire_tags().deleted == [] and "forever" in t.tags()


def test_tags_with_a_retention_live_and_expire_per_branch(tmp_path):
    """A branch's tags are its own (tag/ under its home): created with the table's clock
    (a branch handle keeps it), expired after the branch's commits, main's left alone."""
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {"tag.default-time-retained": "1 h"})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    t.create_tag("t1")
    br = t.create_branch("br", tag="t1")  # the branch gets its own copy of t1
    clock.set(datetime(2024, 3, 1, 12, 30))
    br.create_tag("b2", 1)
    assert br.tag_info("b2").create_time == datetime(2024, 3, 1, 12, 30)
    br.rename_tag("b2", "b3")
    assert br.tags() == {"t1": 1, "b3": 1} and t.tags() == {"t1": 1}
    write_at(br, clock, datetime(2024, 3, 1, 13, 0, 1), 1)  # past t1's hour: the branch's t1 goes
    assert br.tags() == {"b3": 1} and t.tags() == {"t1": 1}
    with pytest.raises(mp.SnapshotNotFoundError, match="branch 'br'"):
        br.delete_tag("t1")


def test_batch_tags_at_the_end_of_batch_writes(tmp_path):
    """Flink's batch tag: batch-write-<date>, replaced by a later write of the same day;
    tag.num-retained-max then counts every tag."""
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    write_at(t, clock, datetime(2024, 3, 1, 13))
    assert t.tags() == {"batch-write-2024-03-01": 2}
    t.create_tag("manual", 1)
    write_at(t, clock, datetime(2024, 3, 2, 9))
    assert t.tags() == {"batch-write-2024-03-01": 2, "batch-write-2024-03-02": 3}  # oldest (manual) went
    w = t.new_write("stream")
    w.write(pa.table({"id": [9]}, schema=SCHEMA))
    clock.set(datetime(2024, 3, 3))
    t.new_commit("stream").commit(w.prepare_commit(), 1)
    t.after_commit()  # not the end of a batch write: no batch tag
    assert "batch-write-2024-03-03" not in t.tags()


def test_tags_by_hand_with_dry_runs(tmp_path):
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {"write-only": "true"})  # nothing after commits
    write_at(t, clock, datetime(2024, 3, 1, 12))
    write_at(t, clock, datetime(2024, 3, 3, 12))
    t.set_options({"tag.automatic-creation": "process-time", "tag.default-time-retained": "1 d"})
    assert t.tags() == {}
    dry = t.create_auto_tags(dry_run=True)
    assert dry.dry_run and dry.created == {"2024-02-29": 1, "2024-03-02": 2} and t.tags() == {}
    assert t.create_auto_tags().created == {"2024-02-29": 1, "2024-03-02": 2}
    clock.set(datetime(2024, 3, 4, 12, 0, 1))  # made at 2024-03-03 12:00, kept a day
    assert t.expire_tags(dry_run=True).deleted == ["2024-02-29", "2024-03-02"] and len(t.tags()) == 2
    t.set_options({"tag.default-time-retained": "30 d"})
    t.create_tag("keep")
    clock.set(datetime(2024, 3, 5))
    assert t.expire_tags().deleted == ["2024-02-29", "2024-03-02"]
    assert t.expire_tags(older_than=timedelta(days=1)).deleted == []  # 'keep' was made 2024-03-04 12:00
    assert t.expire_tags(older_than=datetime(2024, 3, 6, tzinfo=timezone.utc)).deleted == ["keep"]


def test_two_automatic_tags_of_one_snapshot_stop_tag_creation_not_the_commit(tmp_path):
    clock = Clock(datetime(2024, 3, 1, 12))
    t = table(tmp_path, clock, {})
    write_at(t, clock, datetime(2024, 3, 1, 12))
    t.create_tag("2024-02-27")
    t.create_tag("2024-02-28")
    t.set_options({"tag.automatic-creation": "process-time"})
    write_at(t, clock, datetime(2024, 3, 2, 12))
    result = t.last_after_commit
    assert result is not None and len(t.snapshots()) == 2
    assert [type(e).__name__ for e in result.errors] == ["InvalidArgumentError"]
