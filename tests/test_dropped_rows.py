"""``Table.dropped_rows(split)``: a read of a split as a selection of its files' stored rows.

For every split a selection can describe (no merge, with or without deletion vectors; the
merges of ``deduplicate`` and ``first-row``), the files' stored rows minus the dropped
positions (and, without a merge, kept where their kind is +I/+U) are exactly the rows ``read_split`` returns;
``partial-update`` and ``aggregation`` merges, which build rows, give None. This is what
``minipaimon_spark.table`` hands Spark's own Parquet reader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError
from minipaimon_core.format.kinds import VALUE_KIND

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string(), nullable=False),
                    ("v", pa.float64()), ("q", pa.int32())])


def rows(ids: list[int], v: float = 1.0, kind: str | None = None, q: int | None = None) -> pa.Table:
    t = pa.table({"id": ids, "g": [f"g{i % 3}" for i in ids], "v": [i * v for i in ids],
                  "q": pa.array([q if q is not None else i % 7 for i in ids], pa.int32())}, schema=SCHEMA)
    return t if kind is None else t.append_column("_row_kind", pa.array([kind] * len(ids)))


def selected(t: mp.Table, split: mp.Split, dropped: dict[str, np.ndarray]) -> pa.Table:
    """The split's stored rows without ``dropped``, live kinds only in a split read without a
    merge (a merge's positions leave its retractions out themselves)."""
    parts = []
    for f in split.files:
        stored = t.read_file_rows(split, f, with_kind=bool(t.primary_keys()))
        keep = np.ones(stored.num_rows, bool)
        keep[dropped.get(f.fileName, np.array([], np.int64))] = False
        if t.primary_keys() and split.raw_convertible:
            kinds = stored.column(VALUE_KIND).to_numpy()
            keep &= (kinds == 0) | (kinds == 2)
        parts.append(stored.filter(pa.array(keep)).select(t.schema().names))
    return pa.concat_tables(parts)


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by([(n, "ascending") for n in table.column_names])


def check_all_splits(t: mp.Table, **scan: object) -> int:
    """Asserts the selection equals the read for every split; returns how many splits merge."""
    merging = 0
    for split in t.scan(**scan).plan():  # type: ignore[arg-type]
        dropped = t.dropped_rows(split)
        assert dropped is not None
        read = pa.Table.from_batches(list(t.read_split(split)), schema=t.schema())
        assert sort(selected(t, split, dropped)).equals(sort(read.cast(t.schema())))
        merging += not split.raw_convertible
    return merging


def overlapping_writes(t: mp.Table) -> None:
    t.write(rows(list(range(60))))
    t.write(rows(list(range(0, 60, 3)), v=2.0, q=1))
    t.write(rows(list(range(0, 60, 4)), v=3.0, q=0))
    t.write(rows([5, 8, 9], kind="-D"))
    t.write(rows([9], v=4.0))


@pytest.mark.parametrize(("options", "merging"), [
    ({}, 2),                                                # one key: the probing merge
    ({"sequence.field": "q"}, 2),                           # the sorting merge
    ({"ignore-delete": "true"}, 2),
    # first-row writes are placed above level 0 without the keys already there: no merge
    ({"merge-engine": "first-row", "ignore-delete": "true"}, 0),
])
def test_row_selecting_merges_are_selections(tmp_path: Path, options: dict[str, str], merging: int) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "2", "write-only": "true", **options})
    overlapping_writes(t)
    assert check_all_splits(t) == merging  # every bucket merges (but first-row's)
    assert check_all_splits(t, snapshot_id=2) == merging  # an earlier snapshot: its own files


def test_composite_keys_and_evolved_schema(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["g", "id"], partition_by=["g"],
                        options={"bucket": "2", "write-only": "true"})
    overlapping_writes(t)
    t.rename_column("v", "value")
    t.add_column("extra", pa.string())
    t.write(pa.table({"id": [0, 3, 100], "g": ["g0", "g0", "g1"], "value": [7.0, None, 8.0],
                      "q": pa.array([1, 2, 3], pa.int32()), "extra": ["x", None, "z"]}))
    assert check_all_splits(mp.open_table(t.path)) >= 3


def test_first_row_without_deletes(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "merge-engine": "first-row"})
    t.write(rows(list(range(20))))
    t.write(rows(list(range(10, 30)), v=2.0))
    check_all_splits(t)


def test_deletion_vectors_are_the_dropped_rows(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "2", "deletion-vectors.enabled": "true"})
    overlapping_writes(t)
    splits = t.scan().plan()
    assert all(s.raw_convertible for s in splits) and any(s.deletion_index for s in splits)
    marked = sum(len(p) for s in splits for p in (t.dropped_rows(s) or {}).values())
    assert marked == sum(len(v) for s in splits if s.deletion_index
                         for v in t.context().vectors.vectors(s.deletion_index).values())
    check_all_splits(t)
    check_all_splits(t, snapshot_id=3)


def test_append_table_vectors(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"deletion-vectors.enabled": "true"})
    t.write(rows(list(range(50))))
    t.write(rows(list(range(50, 70))))
    t.delete([("q", "=", 3)])
    t.update([("id", "<", 5)], set={"v": -1.0})
    assert any(t.dropped_rows(s) for s in t.scan().plan())
    check_all_splits(t)


def test_merges_that_build_rows_give_none(tmp_path: Path) -> None:
    for engine, extra in (("partial-update", {}), ("aggregation", {"fields.v.aggregate-function": "sum"})):
        t = mp.create_table(str(tmp_path / engine), SCHEMA, primary_key=["id"],
                            options={"bucket": "1", "merge-engine": engine, **extra})
        t.write(rows(list(range(10))))
        t.write(rows(list(range(5)), v=2.0))
        (split,) = t.scan().plan()
        assert not split.raw_convertible and t.dropped_rows(split) is None


def test_a_vector_past_its_file_is_corrupt(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(list(range(10))))
    t.write(rows([1, 2], v=2.0))
    split = next(s for s in t.scan().plan() if s.deletion_index)
    assert split.deletion_index is not None
    vectors = t.context().vectors.vectors(split.deletion_index)
    name = next(iter(vectors))
    vectors[name] = np.append(vectors[name], np.uint32(10_000))  # damage the decoded (cached) vector
    with pytest.raises(CorruptMetadataError, match="deletes row 10000"):
        t.dropped_rows(split)
