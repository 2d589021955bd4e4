"""Bad input gets a clear, typed error and changes nothing on disk."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows


def _files(path: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs}


def test_wrong_schema_is_rejected_and_nothing_is_written(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(rows(0, 3))
    before = _files(t.path)
    bad = [
        rows(0, 3).drop_columns(["v"]),
        rows(0, 3).append_column("extra", pa.array([1, 2, 3])),
        rows(0, 3).set_column(2, "v", pa.array(["a", "b", "c"])),
    ]
    for data in bad:
        with pytest.raises(mp.SchemaMismatchError):
            t.write(data)
    assert _files(t.path) == before
    assert t.latest_snapshot().id == 1


def test_safe_widening_is_accepted(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    data = rows(0, 3)
    t.write(data.set_column(0, "id", data.column("id").cast(pa.int32())))
    assert t.to_arrow().schema == SCHEMA


def test_null_in_not_null_column_is_rejected(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    data = pa.table({"id": [1, None], "k": ["a", "b"], "v": [1.0, 2.0], "dt": ["x", "y"]})
    with pytest.raises(mp.InvalidArgumentError, match="null"):
        t.write(data)
    assert t.latest_snapshot() is None


def test_hostile_partition_value_stays_under_the_table(tmp_path):
    root = tmp_path / "wh"
    t = mp.create_table(str(root / "t"), SCHEMA, partition_by=["dt"])
    for value in ["../../etc", "..", "/abs", "a\\b", "nul\x00", "ü/ß"]:
        t.write(rows(0, 1, value))
    for f in _files(str(root)):
        assert os.path.realpath(f).startswith(os.path.realpath(root / "t") + os.sep)
    got = sorted(t.to_arrow().column("dt").to_pylist())
    assert got == sorted(["../../etc", "..", "/abs", "a\\b", "nul\x00", "ü/ß"])
    assert t.scan(filter=[("dt", "=", "../../etc")]).to_arrow().num_rows == 1


def test_opening_a_non_table_raises_table_not_found(tmp_path):
    with pytest.raises(mp.TableNotFoundError):
        mp.open_table(str(tmp_path / "missing"))
    (tmp_path / "dir").mkdir()
    with pytest.raises(mp.TableNotFoundError):
        mp.open_table(str(tmp_path / "dir"))


def test_unknown_option_is_rejected_by_name(tmp_path):
    with pytest.raises(mp.UnsupportedOptionError, match="buckets"):
        mp.create_table(str(tmp_path / "t"), SCHEMA, options={"buckets": "4"})
    with pytest.raises(mp.UnsupportedOptionError, match="target-file-size"):
        mp.create_table(str(tmp_path / "t"), SCHEMA, options={"target-file-size": "big"})
    assert not (tmp_path / "t").exists()


def test_creating_twice_fails(tmp_path):
    mp.create_table(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(mp.TableAlreadyExistsError):
        mp.create_table(str(tmp_path / "t"), SCHEMA)


def test_bad_filters_and_columns_are_typed_errors(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for f in ([("nope", "=", 1)], [("id", "~", 1)], [("id", "=", "x")], "id = 1"):
        with pytest.raises(mp.InvalidArgumentError):
            t.scan(filter=f)
    with pytest.raises(mp.InvalidArgumentError):
        t.scan(columns=["nope"])


def test_corrupt_snapshot_is_reported(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    p = tmp_path / "t" / "snapshot" / "snapshot-1"
    p.write_bytes(p.read_bytes()[:-10])
    with pytest.raises(mp.CorruptMetadataError, match="snapshot-1"):
        mp.open_table(t.path).to_arrow()
