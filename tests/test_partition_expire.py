"""Partition expiration after commits and by hand, as Paimon 0.9's PartitionExpire
(``partition.expiration-time`` and its companions); the time is an injected clock."""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import (
    InvalidArgumentError,
    UnsupportedFeatureError,
    UnsupportedOptionError,
)
from minipaimon_core.maintenance.partition_expire import java_text, partition_time
from minipaimon_core.schema.post_commit_options import java_pattern, parse_partition_time

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])


class Clock:
    """A clock the test moves (epoch ms), given to the table handle."""

    def __init__(self, at: datetime) -> None:
        self.now = int(at.timestamp() * 1000)

    def __call__(self) -> int:
        return self.now

    def set(self, at: datetime) -> None:
        self.now = int(at.timestamp() * 1000)


def table(tmp_path, clock: Clock, options: dict[str, str], name: str = "t",
          schema: pa.Schema = SCHEMA, partition_by: list[str] | None = None) -> mp.Table:
    path = str(tmp_path / name)
    mp.create_table(path, schema, partition_by=partition_by or ["dt"], options=options)
    return mp.open_table(path, clock=clock)


def rows(ids: list[int], dts: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": dts}, schema=SCHEMA)


def partitions(t: mp.Table) -> list[str]:
    return sorted(set(t.to_arrow().column("dt").to_pylist()))


@pytest.mark.parametrize("text, formatter, expected", [
    ("2024-03-05", None, datetime(2024, 3, 5)),
    ("2024-3-5", None, datetime(2024, 3, 5)),  # 1-2 digit fields
    ("2024-03-05 10:11:12", None, datetime(2024, 3, 5, 10, 11, 12)),
    ("2024-03-05 10:11:12.5", None, datetime(2024, 3, 5, 10, 11, 12, 500000)),
    ("2024-13-01", None, datetime(2025, 1, 1)),  # LENIENT: month 13 carries over
    ("2024-02-30", None, datetime(2024, 3, 1)),
    ("20240305", None, None),  # not the default format: never expires
    ("2024-03-05 10", None, None),
    ("20240305", "yyyyMMdd", datetime(2024, 3, 5)),
    ("2024030510", "yyyyMMddHH", datetime(2024, 3, 5, 10)),
    ("2024/03/05", "yyyy/MM/dd", datetime(2024, 3, 5)),
    ("2024-03-05T10:00", "yyyy-MM-dd'T'HH:mm", datetime(2024, 3, 5, 10)),
    ("2024-3-05", "yyyy-MM-dd", None),  # MM: exactly two digits
    ("20240230", "yyyyMMdd", None),  # SMART resolver: no Feb 30
    ("240305", "yyMMdd", datetime(2024, 3, 5)),
])
def test_partition_times_parse_as_paimons_extractor(text, formatter, expected):
    """PartitionTimeExtractor: the default formatter (lenient y-M-d[ H:m:s[.f]]) or a Java
    pattern; what Java cannot parse is no time (the partition never expires)."""
    assert parse_partition_time(text, None if formatter is None else java_pattern(formatter)) == expected


def test_a_pattern_puts_the_partition_values_in():
    """partition.timestamp-pattern '$dt $hour:00:00' with the values of both keys."""
    keys = ["dt", "hour"]
    assert partition_time(["2024-03-05", "10"], keys, "$dt $hour:00:00", None) == datetime(2024, 3, 5, 10)
    assert partition_time(["2024-03-05", "10"], keys, None, None) == datetime(2024, 3, 5)  # first value
    assert partition_time([None, "10"], keys, "$dt", None) is None


def test_values_are_the_text_paimon_makes_of_them():
    assert java_text("x", "STRING") == "x"
    assert java_text(19723, "DATE") == "19723"  # Paimon's internal day number
    assert java_text(1704103200000, "TIMESTAMP(3)") == "2024-01-01T10:00"  # LocalDateTime.toString
    assert java_text(1704103201500, "TIMESTAMP(3)") == "2024-01-01T10:00:01.500"
    assert java_text(True, "BOOLEAN") == "true"
    assert java_text(None, "INT") is None


@pytest.mark.parametrize("pattern", ["MMM", "EEE", "yyyy-MM-dd a", "hh", "''yyyy'", "yyyy-MM-dd'T"])
def test_formatter_letters_minipaimon_cannot_parse_as_java_are_refused(pattern):
    with pytest.raises(UnsupportedOptionError):
        java_pattern(pattern)


def test_partitions_expire_after_a_commit(tmp_path):
    """check interval 0: every commit checks; old partitions go in one OVERWRITE snapshot."""
    clock = Clock(datetime(2024, 3, 10, 12))
    t = table(tmp_path, clock, {"partition.expiration-time": "30 d",
                                "partition.expiration-check-interval": "0 s",
                                "partition.timestamp-formatter": "yyyyMMdd"})
    t.write(rows([1, 2, 3], ["20240101", "20240209", "20240301"]))  # 20240209: 30 d + 12 h old
    result = t.last_after_commit
    assert result is not None and result.ok
    assert result.partitions is not None and result.partitions.partitions == [{"dt": "20240101"},
                                                                                {"dt": "20240209"}]
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "OVERWRITE"]
    assert partitions(t) == ["20240301"]
    clock.set(datetime(2024, 4, 1))  # 20240301 is 31 days old now
    t.write(rows([4], ["20240331"]))
    assert partitions(t) == ["20240331"]


def test_a_committer_checks_once_its_interval_has_passed(tmp_path):
    """As Paimon's PartitionExpire: the check interval (1 h) starts when the committer (the
    handle) is made; a one-off writer of a batch never checks, unless
    end-input.check-partition-expire."""
    clock = Clock(datetime(2024, 3, 10, 12))
    t = table(tmp_path, clock, {"partition.expiration-time": "1 d"})
    t.write(rows([1], ["2024-01-01"]))
    assert t.last_after_commit is not None and t.last_after_commit.partitions is None  # not due
    clock.set(datetime(2024, 3, 10, 12, 59))
    t.write(rows([2], ["2024-01-02"]))
    assert partitions(t) == ["2024-01-01", "2024-01-02"]
    clock.set(datetime(2024, 3, 10, 13, 0, 1))  # an hour since the handle was opened
    t.write(rows([3], ["2024-03-10"]))
    assert partitions(t) == ["2024-03-10"]
    clock.set(datetime(2024, 3, 10, 13, 30))  # 30 min since the last check: not due
    t.write(rows([4], ["2024-03-08"]))
    assert partitions(t) == ["2024-03-08", "2024-03-10"]

    t.set_options({"end-input.check-partition-expire": "true"})
    t.write(rows([5], ["2024-03-09"]))  # a batch write ends its input: checks
    assert partitions(t) == ["2024-03-10"]


def test_expire_partitions_by_hand_and_dry_run(tmp_path):
    clock = Clock(datetime(2024, 3, 10))
    t = table(tmp_path, clock, {})
    t.write(rows([1, 2, 3], ["2024-01-01", "2024-02-01", "2024-03-01"]))
    with pytest.raises(InvalidArgumentError, match="partition.expiration-time"):
        t.expire_partitions()
    dry = t.expire_partitions(expiration_time="30 d", dry_run=True)
    assert dry.dry_run and dry.partitions == [{"dt": "2024-01-01"}, {"dt": "2024-02-01"}]
    assert len(t.snapshots()) == 1 and len(partitions(t)) == 3
    done = t.expire_partitions(expiration_time="30 d")
    assert done.snapshot_id == 2 and partitions(t) == ["2024-03-01"]
    assert t.expire_partitions(expiration_time="30 d").partitions == []
    with pytest.raises(InvalidArgumentError):
        t.expire_partitions(expiration_time="thirty days")


def test_update_time_strategy_uses_the_newest_file_of_a_partition(tmp_path):
    """update-time: a partition expires once its newest file (creationTime, the writer's
    local wall clock as Paimon reads it) is older than the expiration time."""
    from minipaimon_core.metadata.manifest_io import live_files

    clock = Clock(datetime(2024, 3, 10))
    t = table(tmp_path, clock, {"partition.expiration-strategy": "update-time"})
    t.write(rows([1, 2], ["a", "b"]))
    t.write(rows([3], ["b"]))
    newest = {e.partition[0]: 0 for e in live_files(t.manifests, t.latest_snapshot())}
    for e in live_files(t.manifests, t.latest_snapshot()):
        newest[e.partition[0]] = max(newest[e.partition[0]], e.file.creationTime)
    local = int((datetime(1970, 1, 1) - datetime.fromtimestamp(0)).total_seconds() * 1000)  # local <-> epoch
    day = 86_400_000
    clock.now = newest["a"] + day + local  # exactly a day after a's newest file: not yet
    assert t.expire_partitions(expiration_time="1 d", dry_run=True).partitions == []
    clock.now = newest["b"] + day + local + 1
    assert t.expire_partitions(expiration_time="1 d", dry_run=True).partitions == [{"dt": "a"}, {"dt": "b"}]


def test_partition_expiration_of_a_two_key_table_by_pattern(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()), pa.field("hh", pa.int32())])
    clock = Clock(datetime(2024, 3, 10, 12))
    t = table(tmp_path, clock, {"partition.expiration-time": "2 h", "partition.expiration-check-interval": "0 s",
                                "partition.timestamp-pattern": "$dt $hh:00:00"}, schema=schema,
              partition_by=["dt", "hh"])
    t.write(pa.table({"id": [1, 2, 3], "dt": ["2024-03-10"] * 3, "hh": pa.array([9, 10, 11], pa.int32())}))
    assert sorted(t.to_arrow().column("hh").to_pylist()) == [10, 11]  # 09:00 is 3 h old, 10:00 exactly 2 h


def test_write_only_tables_do_not_expire_partitions(tmp_path):
    clock = Clock(datetime(2024, 3, 10))
    t = table(tmp_path, clock, {"partition.expiration-time": "1 d", "partition.expiration-check-interval": "0 s",
                                "write-only": "true"})
    t.write(rows([1], ["2024-01-01"]))
    assert partitions(t) == ["2024-01-01"]


@pytest.mark.parametrize("option, value", [
    ("partition.timestamp-formatter", "dd MMM yyyy"),
    ("partition.expiration-strategy", "custom"),
    ("tag.creation-period", "weekly"),
    ("tag.automatic-creation", "sometimes"),
    ("sink.watermark-time-zone", "Mars/Olympus"),
])
def test_options_minipaimon_cannot_honour_refuse_writes(tmp_path, option, value):
    """Never a silent difference: a Paimon table (options set by another engine) whose
    post-commit option minipaimon cannot apply exactly is refused for writes, by name."""
    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, partition_by=["dt"])
    t = mp.open_table(path)
    schema_file = tmp_path / "t" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc.pop("checksum", None)
    doc["options"][option] = value
    schema_file.write_text(json.dumps(doc))
    t = mp.open_table(path)
    with pytest.raises(UnsupportedFeatureError, match=option):
        t.write(rows([1], ["2024-01-01"]))
    assert t.latest_snapshot() is None


def test_a_creation_delay_of_a_whole_period_is_refused(tmp_path):
    with pytest.raises(UnsupportedOptionError, match="tag.creation-delay"):
        table(tmp_path, Clock(datetime(2024, 3, 10)), {"tag.automatic-creation": "process-time",
                                                       "tag.creation-period": "hourly",
                                                       "tag.creation-delay": "1 h"})


@pytest.mark.parametrize("option, value", [("partition.timestamp-formatter", "MMM yyyy"),
                                           ("sink.watermark-time-zone", "Nowhere/City"),
                                           ("tag.creation-period", "weekly")])
def test_create_table_and_set_options_refuse_what_cannot_be_honoured(tmp_path, option, value):
    with pytest.raises(UnsupportedOptionError, match=option):
        mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"], options={option: value})
    t = mp.create_table(str(tmp_path / "u"), SCHEMA, partition_by=["dt"])
    with pytest.raises(UnsupportedOptionError, match=option):
        t.set_options({option: value})
