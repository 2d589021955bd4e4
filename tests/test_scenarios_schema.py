"""Apache Paimon's own schema-evolution scenarios, expressed with minipaimon's API, for
what minipaimon refused before issue 39: widening an integer column to a float (Paimon's
implicit cast, BIGINT to DOUBLE). Each test names the Paimon test it follows; the
expected rows are Paimon's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError, SchemaMismatchError

A_B_C = pa.schema([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.int64(), nullable=False),
                   ("c", pa.string())])


def _rows(t: mp.Table) -> list[tuple]:
    return [tuple(r.values()) for r in mp.open_table(t.path).to_arrow().sort_by("a").to_pylist()]


@pytest.mark.parametrize("file_format", ["avro", "parquet", "orc"])
def test_alter_column_type(tmp_path: Path, file_format: str) -> None:
    # paimon-spark SparkSchemaEvolutionITCase.testAlterColumnType (createTableWithNonNullColumn:
    # primary key a, bucket 1, file.format avro): BIGINT NOT NULL to DOUBLE NOT NULL
    t = mp.create_table(str(tmp_path / "t"), A_B_C, primary_key=["a"],
                        options={"bucket": "1", "file.format": file_format})
    t.write(pa.table({"a": pa.array([1, 5], pa.int32()), "b": pa.array([2, 6], pa.int64()), "c": ["1", "3"]},
                     schema=A_B_C))
    null_b = pa.table({"a": pa.array([1], pa.int32()), "b": pa.array([None], pa.int64()), "c": ["a"]})
    with pytest.raises(InvalidArgumentError, match="NOT NULL column 'b'"):
        t.write(null_b)
    t.alter_column_type("b", pa.float64())
    assert _rows(t) == [(1, 2.0, "1"), (5, 6.0, "3")]
    field = mp.open_table(t.path).schema().field("b")
    assert (field.type, field.nullable) == (pa.float64(), False)  # "b DOUBLE NOT NULL"
    with pytest.raises(InvalidArgumentError, match="NOT NULL column 'b'"):
        mp.open_table(t.path).write(null_b.cast(pa.schema([null_b.schema.field(0), ("b", pa.float64()), ("c", pa.string())])))


def test_a_widened_column_filters_updates_and_compacts(tmp_path: Path) -> None:
    # the old files' BIGINT values read as DOUBLE (rounded past 2**53, as Java's (double)
    # cast), filters over their stats and the merge with new DOUBLE rows see the new type
    t = mp.create_table(str(tmp_path / "t"), A_B_C, primary_key=["a"], options={"bucket": "1"})
    t.write(pa.table({"a": pa.array([1, 5, 7], pa.int32()), "b": pa.array([2, 6, 2**53 + 1], pa.int64()),
                      "c": ["1", "3", "x"]}, schema=A_B_C))
    t.alter_column_type("b", pa.float64())
    t = mp.open_table(t.path)
    assert [r["a"] for r in t.scan(filter=[("b", "<", 2.5)]).to_arrow().to_pylist()] == [1]
    assert t.scan(filter=[("b", "=", 2.5)]).to_arrow().num_rows == 0
    t.write(pa.table({"a": pa.array([5, 9], pa.int32()), "b": [6.5, 0.25], "c": ["y", "z"]}))
    want = [(1, 2.0, "1"), (5, 6.5, "y"), (7, 9007199254740992.0, "x"), (9, 0.25, "z")]
    assert _rows(t) == want
    assert t.compact(full=True) is not None
    assert _rows(t) == want


def test_narrowing_and_other_types_stay_refused(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), A_B_C, primary_key=["a"], options={"bucket": "1"})
    for name, typ in (("b", pa.int32()), ("c", pa.float64()), ("a", pa.float64())):
        with pytest.raises((SchemaMismatchError, InvalidArgumentError)):
            t.alter_column_type(name, typ)
    assert t.system_table("schemas").num_rows == 1
