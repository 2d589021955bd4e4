"""Scans as Arrow C streams: Polars, DuckDB and pyarrow read a minipaimon scan directly."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows


@pytest.fixture
def table(tmp_path: Path) -> mp.Table:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"],
                        partition_by=["dt"], options={"bucket": "2"})
    t.write(pa.concat_tables([rows(0, 50, "d1"), rows(0, 30, "d2")]))
    t.write(rows(10, 5, "d1").set_column(2, "v", pa.array([-1.0] * 5)))
    return t


def test_pyarrow_reads_a_scan_as_a_stream(table: mp.Table) -> None:
    scan = table.scan(filter=[("dt", "=", "d1")], columns=["id", "v"])
    got = pa.table(scan).sort_by("id")
    assert got.equals(scan.to_arrow().sort_by("id"))
    assert got.num_rows == 50 and got.column("v").to_pylist()[10:15] == [-1.0] * 5


def test_polars_dataframe_from_a_scan(table: mp.Table) -> None:
    pl = pytest.importorskip("polars")
    df = pl.DataFrame(table.scan(columns=["id", "dt", "v"]))
    assert df.columns == ["id", "dt", "v"] and df.height == 80
    assert df.filter(pl.col("v") < 0)["id"].sort().to_list() == [10, 11, 12, 13, 14]


def test_duckdb_queries_a_scan(table: mp.Table) -> None:
    duckdb = pytest.importorskip("duckdb")
    scan = table.scan(filter=[("dt", "=", "d2")])  # noqa: F841  (found by name by DuckDB)
    assert duckdb.sql("SELECT count(*), max(id) FROM scan").fetchall() == [(30, 29)]


def test_writes_take_arrow_streams_arrays_and_generators(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    t = mp.create_table(str(tmp_path / "w"), SCHEMA, primary_key=["id"])
    relation = duckdb.sql("SELECT range AS id, 'k' || range AS k, (range * 0.5)::DOUBLE AS v, 'd1' AS dt "
                          "FROM range(0, 1000)")
    t.write(relation)  # a DuckDB relation: __arrow_c_stream__
    frames = (pl.DataFrame({"id": [i], "k": ["x"], "v": [1.0], "dt": ["d1"]}) for i in range(1000, 1003))
    t.write(frames)  # a generator of Polars frames, consumed one by one
    t.write(_CArray(rows(2000, 2)))  # only __arrow_c_array__
    got = t.to_arrow().sort_by("id").column("id").to_pylist()
    assert got == [*range(1000), 1000, 1001, 1002, 2000, 2001]


class _CArray:
    """Only the Arrow C array interface (as nanoarrow arrays or other libraries offer)."""

    def __init__(self, table: pa.Table) -> None:
        self._batch = table.to_batches()[0]

    def __arrow_c_array__(self, requested_schema: object = None) -> object:
        return self._batch.__arrow_c_array__(requested_schema)


def test_a_generator_is_consumed_lazily(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "g"), SCHEMA, primary_key=["id"])
    pulled: list[int] = []

    def batches() -> object:
        for i in range(3):
            pulled.append(i)
            yield rows(i * 10, 10)
        raise mp.InvalidArgumentError("the source failed")  # after 3 batches

    with pytest.raises(mp.InvalidArgumentError, match="source failed"):
        t.write(batches())
    assert pulled == [0, 1, 2] and t.latest_snapshot() is None  # nothing committed


def test_unwritable_objects_are_typed_errors(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "u"), SCHEMA)
    for bad in ({"id": [1]}, "text", 42, [1, 2]):
        with pytest.raises(mp.InvalidArgumentError, match="cannot write"):
            t.write(bad)


# -- issue 38 item 14: a Table is an Arrow C stream too (its latest snapshot) -------------

def test_duckdb_polars_and_pyarrow_take_a_table_as_its_latest_snapshot(table: mp.Table) -> None:
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    t = table  # noqa: F841  (found by name by DuckDB)
    assert duckdb.sql("SELECT count(*), count(DISTINCT id) FROM t").fetchall() == [(80, 50)]
    assert pl.DataFrame(table).sort(["dt", "id"]).to_arrow().equals(
        pl.DataFrame(table.to_arrow()).sort(["dt", "id"]).to_arrow())
    assert pa.table(table).num_rows == 80
    table.write(rows(100, 3, "d3"))  # read at each call: the snapshot latest then
    assert duckdb.sql("SELECT count(*) FROM t").fetchall() == [(83,)]
    copy = mp.create_table(str(Path(table.path).parent / "copy"), table.schema(),
                           primary_key=["id", "dt"], partition_by=["dt"], options={"bucket": "2"})
    copy.write(table)  # and so a table is something write() takes
    assert copy.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(
        table.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]))
