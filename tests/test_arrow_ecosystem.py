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
