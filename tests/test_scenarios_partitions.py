"""Apache Paimon's own scenarios of ``partition.default-name`` (the directory of a null
partition value), expressed with minipaimon's API (issue 39). Each test names the Paimon
test it follows; the expected rows and paths are Paimon's. Java 0.9 judges the directories
in tests/interop/test_scenarios_java.py."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError

A_DT = pa.schema([("a", pa.int32()), ("dt", pa.string())])


def test_delete_null_partition_with_specified_default_partition_name(tmp_path: Path) -> None:
    # paimon-spark DeleteFromTableTestBase.scala, "Paimon Delete: delete null partition with
    # specified default partition name"
    t = mp.create_table(str(tmp_path / "t"), A_DT, partition_by=["dt"],
                        options={"partition.default-name": "__TEST_DEFAULT_PARTITION__"})
    t.write(pa.table({"a": pa.array([1, 2], pa.int32()), "dt": ["20240601", None]}))
    assert t.to_arrow().sort_by("a").to_pylist() == [{"a": 1, "dt": "20240601"}, {"a": 2, "dt": None}]
    assert sorted(os.listdir(t.path)) == ["dt=20240601", "dt=__TEST_DEFAULT_PARTITION__", "manifest",
                                          "schema", "snapshot"]
    t.delete([("dt", "is null")])
    assert t.to_arrow().sort_by("a").to_pylist() == [{"a": 1, "dt": "20240601"}]


@pytest.mark.parametrize("dt,hr,expected", [
    ("20211224", 16, "dt=20211224/hr=16"),
    ("20211224", None, "dt=20211224/hr=default"),
    (None, 16, "dt=default/hr=16"),
    (None, None, "dt=default/hr=default"),
])
def test_create_data_file_path_factory_with_partition(tmp_path: Path, dt: str | None, hr: int | None,
                                                      expected: str) -> None:
    # paimon-core FileStorePathFactoryTest.testCreateDataFilePathFactoryWithPartition: the
    # default partition name "default" names each null value's directory
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("dt", pa.string()), ("hr", pa.int32())])
    t = mp.create_table(str(tmp_path / "t"), schema, partition_by=["dt", "hr"],
                        options={"partition.default-name": "default"})
    t.write(pa.table({"id": pa.array([1], pa.int32()), "dt": [dt], "hr": pa.array([hr], pa.int32())}))
    (split,) = t.scan().plan()
    assert split.partition_path == expected
    assert (tmp_path / "t" / expected / "bucket-0").is_dir()
    assert t.to_arrow().to_pylist() == [{"id": 1, "dt": dt, "hr": hr}]


def test_primary_key_table_with_a_default_name_updates_and_compacts(tmp_path: Path) -> None:
    # a primary-key table (its key columns are never null): an empty partition value is
    # named by the default name too (Paimon's InternalRowPartitionComputer), and its rows
    # merge and compact in that directory
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()),
                        pa.field("dt", pa.string(), nullable=False)])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "1", "partition.default-name": "nothing"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"], "dt": ["", "x"]}, schema=schema))
    t.write(pa.table({"id": pa.array([1], pa.int32()), "v": ["c"], "dt": [""]}, schema=schema))
    assert t.compact(full=True) is not None
    assert t.to_arrow().sort_by("id").to_pylist() == [{"id": 1, "v": "c", "dt": ""},
                                                      {"id": 2, "v": "b", "dt": "x"}]
    assert sorted(os.listdir(tmp_path / "t" / "dt=nothing" / "bucket-0"))[0].startswith("data-")


def test_the_default_name_is_fixed_at_creation(tmp_path: Path) -> None:
    # the directories already written are named by it: changing it would lose them
    t = mp.create_table(str(tmp_path / "t"), A_DT, partition_by=["dt"])
    with pytest.raises(InvalidArgumentError, match="partition.default-name"):
        t.set_options({"partition.default-name": "other"})
    with pytest.raises(UnsupportedOptionError, match="partition.default-name"):
        mp.create_table(str(tmp_path / "u"), A_DT, partition_by=["dt"], options={"partition.default-name": ""})
    with pytest.raises(UnsupportedOptionError, match="partition.default-name"):
        mp.create_table(str(tmp_path / "v"), A_DT, partition_by=["dt"],
                        options={"partition.default-name": "x" * 300})
    assert not (tmp_path / "u").exists() and not (tmp_path / "v").exists()
