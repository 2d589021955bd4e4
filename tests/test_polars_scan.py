"""``minipaimon_core.scan_polars``: a lazy Polars frame whose projection and predicate reach
the planner (files opened counted), equal to the eager read filtered in Polars."""

from __future__ import annotations

import datetime
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.expressions.polars_predicate import to_dnf
from minipaimon_core.io.fileio import LocalFileIO
from tests.helpers import SCHEMA, rows

pl = pytest.importorskip("polars")


class OpenedIO(LocalFileIO):
    """Records the data files a read opens."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open_input(self, path: str) -> Any:
        if "/bucket-" in path:
            self.opened.append(path.rsplit("/", 1)[1])
        return super().open_input(path)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A partitioned primary-key table (4 partitions, 2 buckets, an update of some keys
    and a delete, so merged reads matter) and an append table (one file per commit)."""
    root = tmp_path_factory.mktemp("polars_scan")
    pk = mp.create_table(str(root / "pk"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                         options={"bucket": "2"})
    for dt in ("d1", "d2", "d3", "d4"):
        pk.write(rows(0, 40, dt))
    changed = rows(10, 5, "d2").set_column(2, "v", pa.array([-1.0] * 5))
    pk.write(changed)
    pk.write(rows(30, 2, "d3").append_column("_row_kind", pa.array(["-D", "-D"])))
    app = mp.create_table(str(root / "app"), SCHEMA)
    for start in range(0, 100, 20):  # ids in disjoint ranges: a file each
        app.write(rows(start, 20, "d1" if start < 60 else "d2").set_column(
            1, "k", pa.array([None if i % 7 == 0 else f"k{i}" for i in range(start, start + 20)])))
    return {"pk": pk.path, "app": app.path}


PREDICATES = [
    pl.col("dt") == "d2",
    (pl.col("dt") == "d2") & (pl.col("id") < 12),
    pl.col("v") < 0,                                      # a non-key column of a PK table
    (pl.col("dt") == "d1") | (pl.col("id").is_in([3, 33])),
    pl.col("id").is_between(5, 9, closed="left"),
    pl.col("k").is_null(),
    pl.col("k").is_not_null() & (pl.col("id") >= 95),
    (pl.col("id") % 7 == 0) & (pl.col("dt") != "d4"),     # arithmetic: filtered by Polars only
    ~(pl.col("dt") == "d1"),
    pl.col("k").str.starts_with("k1") & (pl.col("v") > 4.5),
    pl.col("dt").is_in(["d3", "d4"]) & (pl.col("id") > 1_000),
    pl.lit(5) > pl.col("id"),                             # literal on the left
]


@pytest.mark.parametrize("kind", ["pk", "app"])
def test_lazy_scan_equals_the_eager_read_filtered_in_polars(tables: dict[str, str], kind: str) -> None:
    t = mp.open_table(tables[kind])
    eager = pl.DataFrame(t.scan())
    lf = mp.scan_polars(tables[kind])
    assert lf.collect_schema() == eager.schema
    for pred in PREDICATES:
        got = lf.filter(pred).select("id", "dt", "v").collect().sort("id", "dt")
        want = eager.filter(pred).select("id", "dt", "v").sort("id", "dt")
        assert got.equals(want), pred
    assert lf.collect().sort("id", "dt").equals(eager.sort("id", "dt"))
    assert lf.select("k").collect().height == eager.height
    assert lf.filter(pl.col("dt") == "d1").head(3).collect().height == 3
    assert lf.filter(pl.col("dt") == "d1").collect(engine="streaming").sort("id", "dt").equals(
        eager.filter(pl.col("dt") == "d1").sort("id", "dt"))


def opened(path: str, query: Any) -> tuple[Any, list[str]]:
    io = OpenedIO()
    result = query(mp.scan_polars(mp.open_table(path, io=io))).collect()
    return result, io.opened


def test_partition_and_file_statistics_prune_files_opened(tables: dict[str, str]) -> None:
    everything, all_files = opened(tables["pk"], lambda lf: lf)
    d2, files = opened(tables["pk"], lambda lf: lf.filter(pl.col("dt") == "d2"))
    assert d2.height == 40 and set(d2["dt"]) == {"d2"}
    assert 0 < len(files) < len(all_files) / 2 and set(files) <= set(all_files)  # d2's only

    _, app_files = opened(tables["app"], lambda lf: lf)
    got, files = opened(tables["app"], lambda lf: lf.filter(pl.col("id").is_between(41, 45)))
    assert sorted(got["id"]) == [41, 42, 43, 44, 45]
    assert len(app_files) == 5 and len(files) == 1  # one file's id range holds them

    # a predicate the core cannot express prunes nothing and still filters exactly
    got, files = opened(tables["app"], lambda lf: lf.filter(pl.col("id") % 50 == 1))
    assert sorted(got["id"]) == [1, 51] and len(files) == 5


def test_projection_reads_only_the_columns_needed(tables: dict[str, str]) -> None:
    seen: list[list[str] | None] = []
    t = mp.open_table(tables["app"])
    real = t.scan

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("columns"))
        return real(*args, **kwargs)

    t.scan = spy  # type: ignore[method-assign]
    out = mp.scan_polars(t).filter(pl.col("v") > 40).select("k").collect()
    assert out.columns == ["k"] and out.height == 19
    assert seen[-1] == ["k", "v"]


def test_streams_split_by_split_and_stops_at_a_limit(tables: dict[str, str]) -> None:
    _, all_files = opened(tables["pk"], lambda lf: lf)  # 8 splits: 4 partitions, 2 buckets
    head, files = opened(tables["pk"], lambda lf: lf.head(5))
    assert head.height == 5 and len(files) < len(all_files) / 2


def test_time_travel_and_a_frame_keeps_its_snapshot(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"])
    empty = mp.scan_polars(t.path)
    assert empty.collect().height == 0 and empty.collect().columns == SCHEMA.names
    t.write(rows(0, 3))
    t.create_tag("first")
    first_ms = t.latest_snapshot().timeMillis  # type: ignore[union-attr]
    lf = mp.scan_polars(t.path)
    t.write(rows(3, 2))
    assert lf.collect().height == 3  # made at snapshot 1
    assert mp.scan_polars(t.path).collect().height == 5
    assert mp.scan_polars(t.path, snapshot_id=1).collect().height == 3
    assert mp.scan_polars(t.path, tag="first").collect().height == 3
    assert mp.scan_polars(t.path, timestamp_ms=first_ms).collect().height == 3
    with pytest.raises(mp.SnapshotNotFoundError):
        mp.scan_polars(t.path, snapshot_id=9)
    with pytest.raises(mp.InvalidArgumentError):
        mp.scan_polars(t.path, snapshot_id=1, tag="first")
    with pytest.raises(mp.TableNotFoundError):
        mp.scan_polars(str(tmp_path / "nothing"))


def test_without_polars_a_typed_error_names_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    monkeypatch.setitem(sys.modules, "polars", None)  # import polars -> ImportError
    with pytest.raises(mp.InstallationError, match="pip install polars"):
        mp.scan_polars(t.path)


TYPES = pa.schema([("i", pa.int32()), ("s", pa.string()), ("d", pa.date32()), ("t", pa.timestamp("us")),
                   ("z", pa.timestamp("us", tz="UTC")), ("f", pa.float64()), ("m", pa.decimal128(10, 2)),
                   ("b", pa.bool_())])


@pytest.mark.parametrize(("expr", "dnf"), [
    (pl.col("i") > 5, [[("i", ">", 5)]]),
    (pl.lit(5) >= pl.col("i"), [[("i", "<=", 5)]]),
    (pl.col("s") == "x", [[("s", "=", "x")]]),
    (pl.col("d") >= datetime.date(2024, 1, 2), [[("d", ">=", datetime.date(2024, 1, 2))]]),
    (pl.col("t") < datetime.datetime(2024, 1, 1, 12), [[("t", "<", datetime.datetime(2024, 1, 1, 12))]]),
    (pl.col("z") < datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
     [[("z", "<", datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc))]]),
    (pl.col("m") > Decimal("1.50"), [[("m", ">", Decimal("1.50"))]]),
    (pl.col("b") == True, [[("b", "=", True)]]),  # noqa: E712
    (pl.col("i").is_in([1, 2]), [[("i", "in", [1, 2])]]),
    (pl.col("i").is_between(1, 3), [[("i", ">=", 1), ("i", "<=", 3)]]),
    (pl.col("s").is_null(), [[("s", "is null", None)]]),
    ((pl.col("i") > 1) & ((pl.col("s") == "a") | (pl.col("s") == "b")),
     [[("i", ">", 1), ("s", "=", "a")], [("i", ">", 1), ("s", "=", "b")]]),
    ((pl.col("i") > 1) | (pl.col("i") * 2 > 3), None),             # half unknown: every row
    ((pl.col("i") > 1) & (pl.col("i") * 2 > 3), [[("i", ">", 1)]]),  # AND keeps the known half
    (~(pl.col("i") > 1), [[("i", "<=", 1)]]),                    # as Polars' optimizer hands it
    (~pl.col("s").str.contains("a"), None),
    (pl.col("f") > float("nan"), None),
    (pl.col("m") > 1.5, None),                                      # a float against a decimal
    (pl.col("i").is_in([1, None]), None),
    (pl.col("i").cast(pl.Int64) > 1, None),
])
def test_predicate_translation(expr: Any, dnf: Any) -> None:
    """What the source is handed (after Polars' optimizer types the literals)."""
    handed: list[Any] = []

    def source(with_columns: Any, predicate: Any, n_rows: Any, batch_size: Any) -> Any:
        handed.append(predicate)
        return iter([])

    from polars.io.plugins import register_io_source

    schema = pl.from_arrow(TYPES.empty_table()).schema
    register_io_source(source, schema=schema).filter(expr).collect()
    assert to_dnf(json.loads(handed[0].meta.serialize(format="json")), TYPES) == dnf
