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


# -- issue 15 items 6, 13, 15 --------------------------------------------------------------

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


@pytest.mark.parametrize("pk", [["id"], None])
def test_malformed_writes_are_typed_errors_and_write_nothing(tmp_path, pk):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=pk)
    t.write(pa.table({"id": [1], "v": [1]}, schema=KV))
    before = _files(t.path)
    dup = pa.Table.from_arrays([pa.array([2]), pa.array([2]), pa.array([3])], names=["id", "v", "v"])
    with pytest.raises(mp.SchemaMismatchError, match="duplicate"):
        t.write(dup)
    if pk:
        with pytest.raises(mp.SchemaMismatchError, match="_row_kind"):
            t.write(pa.table({"id": [2], "v": [2], "_row_kind": [0]}))
    assert _files(t.path) == before


def test_lossy_casts_are_schema_mismatches(tmp_path):
    schema = pa.schema([("ts", pa.timestamp("ms")), ("f", pa.float32())])
    t = mp.create_table(str(tmp_path / "t"), schema)
    us = pa.array([1_000_001], pa.timestamp("us"))
    with pytest.raises(mp.SchemaMismatchError, match="'ts'"):
        t.write(pa.table({"ts": us, "f": pa.array([1.0], pa.float32())}))
    with pytest.raises(mp.SchemaMismatchError, match="'f'"):
        t.write(pa.table({"ts": pa.array([1], pa.timestamp("ms")), "f": pa.array([16777217], pa.int32())}))
    t.write(pa.table({"ts": pa.array([1_000_000], pa.timestamp("us")), "f": pa.array([7], pa.int32())}))
    assert t.to_arrow().to_pylist()[0]["f"] == 7.0


def test_too_long_partition_value_is_refused_by_column(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    with pytest.raises(mp.InvalidArgumentError, match="'dt'"):
        t.write(rows(0, 3, "x" * 300))
    with pytest.raises(mp.InvalidArgumentError, match="'dt'"):
        t.write(rows(0, 3, "/" * 100))  # 100 characters, 300 bytes once escaped
    t.write(rows(0, 1, "x" * 250))
    assert t.latest_snapshot().id == 1 and not any("x" * 260 in f for f in _files(t.path))


def test_open_table_on_a_regular_file_is_table_not_found(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(mp.TableNotFoundError, match="no minipaimon table"):
        mp.open_table(str(tmp_path / "f"))


def test_snapshot_ids_below_one_are_invalid_not_expired(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV)
    t.write(pa.table({"id": [1], "v": [1]}, schema=KV))
    for bad in (0, -1):
        with pytest.raises(mp.InvalidArgumentError, match="snapshot_id") as e:
            t.scan(snapshot_id=bad)
        assert not isinstance(e.value, mp.SnapshotNotFoundError)


@pytest.mark.parametrize("pk", [["id"], None])
def test_stale_handle_reads_after_another_handle_widened_a_column(tmp_path, pk):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32())])
    a = mp.create_table(str(tmp_path / "t"), schema, primary_key=pk)
    a.write(pa.table({"id": [1], "v": pa.array([1], pa.int32())}))
    b = mp.open_table(a.path)
    b.alter_column_type("v", pa.int64())
    b.write(pa.table({"id": [2], "v": [2**40]}))
    assert a.to_arrow().sort_by("id").column("v").to_pylist() == [1, 2**40]


def test_float_keys_have_one_equality_before_and_after_compaction(tmp_path):
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["k"],
                        options={"bucket": "4", "write-only": "true"})
    t.write(pa.table({"k": [-0.0, 1.5], "v": [1, 1]}, schema=schema))
    t.write(pa.table({"k": [0.0], "v": [2]}, schema=schema))
    t.write(pa.table({"k": [-0.0], "v": [3]}, schema=schema))
    before = t.to_arrow().sort_by("k").to_pylist()
    assert before == [{"k": 0.0, "v": 3}, {"k": 1.5, "v": 1}]
    t.compact(full=True)
    assert t.to_arrow().sort_by("k").to_pylist() == before
    with pytest.raises(mp.InvalidArgumentError, match="NaN"):
        t.write(pa.table({"k": [float("nan")], "v": [4]}, schema=schema))
    assert t.to_arrow().sort_by("k").to_pylist() == before


class _Frame:
    """A foreign data frame: named DataFrame, has to_numpy, is not pandas."""

    def __init__(self, table: pa.Table) -> None:
        self._t = table

    def to_numpy(self):
        return None

    def __arrow_c_stream__(self, requested_schema=None):
        return self._t.__arrow_c_stream__(requested_schema)


_Frame.__name__ = "DataFrame"


def test_write_dispatches_on_real_types(tmp_path):
    pl = pytest.importorskip("polars")
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    t.write(pl.DataFrame({"id": [1, 2], "v": [10, 20]}))
    t.write(_Frame(pa.table({"id": [3], "v": [30]}, schema=KV)))
    pd = pytest.importorskip("pandas")
    t.write(pd.DataFrame({"id": [4], "v": [40]}))
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    no_stream = type("DataFrame", (), {"to_numpy": lambda self: None})()
    with pytest.raises(mp.InvalidArgumentError, match="DataFrame"):
        t.write(no_stream)
