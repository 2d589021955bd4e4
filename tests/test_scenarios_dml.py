"""Apache Paimon's own row-level change scenarios (paimon-spark's DeleteFromTableTestBase,
UpdateTableTestBase, MergeIntoTableTestBase), expressed with minipaimon's API, for what
minipaimon refused before issue 39. Each test names the Paimon test it follows; the
expected rows are Paimon's."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import (
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from minipaimon_core.expressions import predicate
from minipaimon_core.system_tables import audit_log_between

ID_NAME_DT_HH = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                           pa.field("dt", pa.string(), nullable=False),
                           pa.field("hh", pa.string(), nullable=False)])


def _table(schema: pa.Schema, rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)


def _deletes_in_changelog(t: mp.Table) -> int:
    t = mp.open_table(t.path)
    changes = audit_log_between(t, 0, t.latest_snapshot().id)  # type: ignore[union-attr]
    return changes.column("rowkind").to_pylist().count("-D")


def test_delete_producer_changelog(tmp_path: Path) -> None:
    # paimon-spark DeleteFromTableTestBase.scala, "test delete producer changelog": with
    # 'delete.force-produce-changelog' a DELETE that drops whole partitions still writes its
    # -D rows into the changelog (Paimon counts them in T$audit_log: 1, then 3; minipaimon's
    # batch audit_log holds merged rows only, so its incremental audit log counts them)
    t = mp.create_table(str(tmp_path / "t"), ID_NAME_DT_HH, primary_key=["id", "dt", "hh"],
                        partition_by=["dt", "hh"],
                        options={"merge-engine": "deduplicate", "changelog-producer": "input",
                                 "delete.force-produce-changelog": "true"})
    t.write(_table(ID_NAME_DT_HH, [(1, "a", "2023-10-01", "12"), (2, "b", "2023-10-01", "12"),
                                   (3, "c", "2023-10-02", "12"), (4, "d", "2023-10-02", "13"),
                                   (5, "e", "2023-10-02", "14"), (6, "f", "2023-10-02", "15")]))
    t.delete([("name", "=", "a"), ("hh", "=", "12")])  # isn't a partition drop
    assert _deletes_in_changelog(t) == 1
    t.delete([("hh", "=", "12")])  # is a partition drop
    assert _deletes_in_changelog(t) == 3


# -- deletes of first-row, partial-update and aggregation tables ---------------------------

ID_NAME_AGE = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()), ("age", pa.int32())])


def _rows(t: mp.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in mp.open_table(t.path).to_arrow().to_pylist())


@pytest.mark.parametrize("engine", ["partial-update", "aggregation", "first-row"])
def test_delete_with_merge_engine(tmp_path: Path, engine: str) -> None:
    # paimon-spark DeleteFromTableTestBase.scala, "test delete with merge engine $mergeEngine":
    # a write-only table of three commits refuses the delete ("please use 'COMPACT' procedure
    # first"); once compacted, DELETE FROM T WHERE id = 1 leaves [[2,b,null]]
    options = {"merge-engine": engine, "write-only": "true"}
    if engine == "first-row":
        options["changelog-producer"] = "lookup"
    t = mp.create_table(str(tmp_path / "t"), ID_NAME_AGE, primary_key=["id"], options=options)
    for row in [(1, "a", None), (2, "b", None), (1, None, 16)]:
        t.write(_table(ID_NAME_AGE, [row]))
    files = sorted(p.name for p in (tmp_path / "t").rglob("*"))
    with pytest.raises(UnsupportedFeatureError, match="COMPACT procedure first"):
        t.delete([("id", "=", 1)])
    assert sorted(p.name for p in (tmp_path / "t").rglob("*")) == files  # nothing changed
    assert t.compact() is not None
    assert t.delete([("id", "=", 1)]) == 1
    assert _rows(t) == [(2, "b", None)]
    snap = mp.open_table(t.path).latest_snapshot()
    assert snap is not None and snap.commitKind == "OVERWRITE"  # as Paimon's copy-on-write DELETE
    t.write(_table(ID_NAME_AGE, [(1, "c", 3)]))  # the key is gone: a new row starts afresh
    t.compact()  # (write-only first-row: level 0 is read once compacted)
    assert _rows(t) == [(1, "c", 3), (2, "b", None)]


def test_delete_first_row_table(tmp_path: Path) -> None:
    # paimon-spark DeleteFromTableTestBase.scala, "Paimon Delete: first-row table"
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"bucket": "1", "merge-engine": "first-row"})
    t.write(_table(schema, [(1, "a"), (2, "b"), (3, "c")]))
    assert _rows(t) == [(1, "a"), (2, "b"), (3, "c")]
    t.delete([("id", "=", 3)])
    assert _rows(t) == [(1, "a"), (2, "b")]
    t.write(_table(schema, [(3, "z"), (2, "late")]))  # first-row: 2 keeps its first row
    assert _rows(t) == [(1, "a"), (2, "b"), (3, "z")]


def test_delete_by_a_value_keeps_other_rows_and_their_order(tmp_path: Path) -> None:
    # a partial-update table compacted into several files of two partitions: rows selected
    # by a non-key column go, the files' other rows keep their sequence numbers, later
    # updates still merge onto them
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()),
                        pa.field("dt", pa.string(), nullable=False)])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "2", "merge-engine": "partial-update", "target-file-size": "1 kb"})
    t.write(_table(schema, [(i, f"v{i % 3}", d) for i in range(200) for d in ("a", "b")]))
    t.write(_table(schema, [(i, None, "a") for i in range(0, 200, 7)]))  # nulls keep values
    assert t.compact() is not None
    preview = __import__("minipaimon_core.dml.dml_preview", fromlist=["x"]).preview_delete(
        t.context(), [("v", "=", "v1"), ("dt", "=", "a")])
    assert preview.rows == 67 and all(files > 0 for _, _, files in preview.partitions)
    assert t.delete([("v", "=", "v1"), ("dt", "=", "a")]) == 67
    want = {(i, f"v{i % 3}", d) for i in range(200) for d in ("a", "b") if not (i % 3 == 1 and d == "a")}
    assert set(_rows(t)) == want
    t.write(_table(schema, [(3, "new", "a"), (1, "back", "a")]))
    want = (want - {(3, "v0", "a")}) | {(3, "new", "a"), (1, "back", "a")}
    assert set(_rows(t)) == want
    assert t.compact() is not None and set(_rows(t)) == want


def test_a_merge_cannot_delete_from_such_a_table(tmp_path: Path) -> None:
    # a merge writes -D rows, which a first-row table cannot take: refused, nothing written
    t = mp.create_table(str(tmp_path / "t"), ID_NAME_AGE, primary_key=["id"], options={"merge-engine": "first-row"})
    t.write(_table(ID_NAME_AGE, [(1, "a", 1)]))
    with pytest.raises(UnsupportedFeatureError, match="delete by condition only|deletes by condition only"):
        t.merge(_table(ID_NAME_AGE, [(1, "a", 1)]), on=["id"]).when_matched_delete().execute()
    assert _rows(t) == [(1, "a", 1)]
    with pytest.raises(UnsupportedFeatureError, match="update"):
        t.update([("id", "=", 1)], set={"age": 2})


def _stale_delete(t: mp.Table, dnf: list) -> tuple[Any, Any]:
    """A delete read on ``t``'s latest snapshot, not yet written: (context, change)."""
    import numpy as np

    from minipaimon_core.dml import dml

    ctx = t.context()
    target = dml.delete_target(ctx, predicate.normalize(dnf, ctx.schema.arrow_schema()))
    selected = dml.selected_rows(ctx, target, predicate.normalize(dnf, ctx.schema.arrow_schema()))
    empty = ctx.schema.arrow_schema().empty_table()
    return ctx, (target, dml.Change(selected, np.zeros(len(selected), bool), empty, empty))


@pytest.mark.parametrize("race", ["key-written", "compacted", "other-key"])
def test_a_rewrite_racing_a_writer_or_a_compaction(tmp_path: Path, race: str) -> None:
    # a delete read on snapshot S commits on L: a commit since S that wrote a key of a
    # rewritten file (ROWS_CHANGED) or replaced it (FILES_GONE) makes it read again; one
    # that wrote other keys of the bucket is kept with it
    from minipaimon_core.dml import dml
    from minipaimon_core.errors import CommitConflictError, ConflictReason

    t = mp.create_table(str(tmp_path / "t"), ID_NAME_AGE, primary_key=["id"],
                        options={"bucket": "1", "merge-engine": "aggregation", "fields.age.aggregate-function": "sum"})
    t.write(_table(ID_NAME_AGE, [(1, "a", 1), (2, "b", 2), (5, "e", 5)]))
    ctx, (target, change) = _stale_delete(t, [("id", "=", 1)])
    other = mp.open_table(t.path)
    if race == "key-written":
        other.write(_table(ID_NAME_AGE, [(2, None, 10)]))
    elif race == "other-key":
        other.write(_table(ID_NAME_AGE, [(9, "z", 9)]))
    else:
        other.write(_table(ID_NAME_AGE, [(7, "x", 7)]))
        assert other.compact() is not None
    before = _rows(t)
    if race == "other-key":
        dml.apply_change(ctx, target, change)
        assert _rows(t) == [(2, "b", 2), (5, "e", 5), (9, "z", 9)]
        return
    with pytest.raises(CommitConflictError) as raised:
        dml.apply_change(ctx, target, change)
    assert raised.value.reason == (ConflictReason.ROWS_CHANGED if race == "key-written" else ConflictReason.FILES_GONE)
    assert _rows(t) == before
    if race == "compacted":  # read again, the delete applies
        assert t.delete([("id", "=", 1)]) == 1 and _rows(t) == [(2, "b", 2), (5, "e", 5), (7, "x", 7)]


# -- MERGE: a pinned key set to itself; values stored by Spark's store assignment ----------

A_B_C = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.int32()), ("c", pa.string())])


def _target(tmp_path: Path, rows: list[tuple]) -> mp.Table:
    """MergeIntoTableTestBase's createTable("target", "a INT, b INT, c STRING", Seq("a"))."""
    t = mp.create_table(str(tmp_path / "target"), A_B_C, primary_key=["a"])
    t.write(_table(A_B_C, rows))
    return t


def _source(rows: list[tuple]) -> pa.Table:
    return pa.table({"a": pa.array([r[0] for r in rows], pa.int32()), "b": pa.array([r[1] for r in rows], pa.int32()),
                     "c": [r[2] for r in rows]})


def test_merge_only_update(tmp_path: Path) -> None:
    # paimon-spark MergeIntoTableTestBase.scala, "Paimon MergeInto: only update":
    # ON target.a = source.a ... UPDATE SET a = source.a, b = source.b, c = source.c
    t = _target(tmp_path, [(1, 10, "c1"), (2, 20, "c2")])
    result = (t.merge(_source([(1, 100, "c11"), (3, 300, "c33")]), on=["a"])
              .when_matched_update(set={"a": "source.a", "b": "source.b", "c": "source.c"}).execute())
    assert (result.updated, result.inserted) == (1, 0)
    assert _rows(t) == [(1, 100, "c11"), (2, 20, "c2")]
    (t.merge(_source([(2, 5, "x")]), on=["a"])  # the same, written as an expression, and target.a
     .when_matched_update(set={"a": pc.field("source.a"), "b": "source.b"}).execute())
    (t.merge(_source([(2, 6, "x")]), on=["a"]).when_matched_update(set={"a": "target.a", "b": "source.b"}).execute())
    assert _rows(t) == [(1, 100, "c11"), (2, 6, "c2")]


def test_merge_fail_in_case_that_maybe_update_primary_key_column(tmp_path: Path) -> None:
    # paimon-spark MergeIntoTableTestBase.scala, "Paimon MergeInto: fail in case that maybe
    # update primary key column": ON target.b = source.b, SET a = source.a is refused
    # ("Can't update the primary key column"); SET c = source.c with INSERT * works
    t = _target(tmp_path, [(1, 10, "c1"), (2, 20, "c2")])
    source = _source([(101, 10, "c111"), (103, 30, "c333")])
    with pytest.raises(InvalidArgumentError, match="primary-key column"):
        (t.merge(source, on=["b"]).when_matched_update(set={"a": "source.a", "b": "source.b", "c": "source.c"})
         .when_not_matched_insert_all().execute())
    (t.merge(source, on=["b"]).when_matched_update(set={"c": "source.c"}).when_not_matched_insert_all().execute())
    assert _rows(t) == [(1, 10, "c111"), (2, 20, "c2"), (103, 30, "c333")]


def test_python_merge_stores_values_exactly(tmp_path: Path) -> None:
    # Table.merge from Python keeps write()'s rule: b * 1.1 (a double) into an INT column is
    # refused unless exact (minipaimon_spark.merge takes Spark's store assignment instead:
    # tests/spark/test_spark_dml.py)
    t = _target(tmp_path, [(1, 10, "c1")])
    with pytest.raises(SchemaMismatchError, match="do not fit column 'b'"):
        (t.merge(_source([(9, 900, "c99")]), on=["a"])
         .when_not_matched_insert(values={"a": "source.a", "b": pc.field("source.b") * 1.1, "c": "source.c"})
         .execute())
    assert _rows(t) == [(1, 10, "c1")]


@pytest.mark.parametrize("values,typ,want", [
    (pa.array([990.0000000000001, -3.7, None]), pa.int32(), [990, -3, None]),  # cut toward zero
    (pa.array([Decimal("990.0"), Decimal("-3.7")], pa.decimal128(12, 1)), pa.int32(), [990, -3]),
    (pa.array([7, -2]), pa.decimal128(5, 2), [Decimal("7.00"), Decimal("-2.00")]),
    (pa.array([Decimal("1.005"), Decimal("-1.005")], pa.decimal128(6, 3)), pa.decimal128(5, 2),
     [Decimal("1.01"), Decimal("-1.01")]),  # ROUND_HALF_UP
    (pa.array([2**40 + 1]), pa.float32(), [float(2**40)]),  # the nearest float
    (pa.array([1.5]), pa.decimal128(5, 2), [1.5]),  # a double into DECIMAL: left to the exact rule
])
def test_spark_store_assignment_of_numbers(values: pa.Array, typ: pa.DataType, want: list) -> None:
    # Spark's ANSI store assignment (Paimon's Spark MERGE stores b * 1.1 into INT as 990)
    from minipaimon_core.dml.assignment import spark_cast

    assert spark_cast(values, typ, "merge").to_pylist() == want


@pytest.mark.parametrize("values,typ", [(pa.array([2**40]), pa.int32()), (pa.array([float("nan")]), pa.int32()),
                                        (pa.array([1e20]), pa.int64()),
                                        (pa.array([Decimal("12345.6")]), pa.decimal128(5, 2))])
def test_spark_store_assignment_overflow_fails(values: pa.Array, typ: pa.DataType) -> None:
    # ANSI: a value out of the column's range is an error, not a wrapped or null value
    from minipaimon_core.dml.assignment import spark_cast

    with pytest.raises(InvalidArgumentError, match="store assignment"):
        spark_cast(values, typ, "merge")
