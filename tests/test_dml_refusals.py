"""Row-level changes a table cannot take are refused with a typed error, and the table and
its files stay exactly as they were (issue 32 items 11, 19, 20, 21, 23)."""

from __future__ import annotations

import datetime
import decimal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.dml import dml
from minipaimon_core.dml.dml_preview import preview_delete
from minipaimon_core.errors import InvalidArgumentError, MiniPaimonError, SchemaMismatchError
from minipaimon_core.file_format.data_file import write_data_file

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def listing(path: str) -> dict[str, bytes]:
    """Every file under the table, with its bytes."""
    return {os.path.relpath(os.path.join(d, n), path): Path(d, n).read_bytes()
            for d, _, names in os.walk(path) for n in names}


def refused(t: mp.Table, error: type[MiniPaimonError], call: Callable[[], Any], match: str | None = None) -> str:
    """``call`` raises ``error`` (matching ``match``) and leaves every file of ``t`` as it was."""
    before = listing(t.path)
    with pytest.raises(error, match=match) as e:
        call()
    assert listing(t.path) == before
    return str(e.value)


# -- item 21: an empty filter is not "every row" ----------------------------------------------

@pytest.mark.parametrize("pk", [None, ["id"]], ids=["append", "primary-key"])
@pytest.mark.parametrize("flt", [[], [[]], (), [[("id", "=", 1)], []]], ids=["[]", "[[]]", "()", "or-empty"])
def test_an_empty_filter_is_refused_everywhere_a_filter_is_taken(tmp_path, pk, flt) -> None:
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=pk, options={"bucket": "1"} if pk else None)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=KV))
    for call in (lambda: t.delete(flt), lambda: t.update(flt, set={"v": "x"}),
                 lambda: t.scan(filter=flt).to_arrow(), lambda: preview_delete(t.context(), flt)):
        message = refused(t, InvalidArgumentError, call, match="empty")
        assert "None" in message  # says how to select every row
    assert t.to_arrow().num_rows == 2
    assert t.delete(None) == 2  # None still means every row


# -- item 23: values are converted as write() converts them ----------------------------------

VALUES = pa.schema([pa.field("id", pa.int64(), nullable=False), ("d", pa.decimal128(10, 2)),
                    ("day", pa.date32()), ("small", pa.int8()), ("f", pa.float32()),
                    ("ms", pa.timestamp("ms")), ("s", pa.string()), ("big", pa.int64()),
                    ("i", pa.int32())])
ROW = {"id": 1, "d": decimal.Decimal("1.00"), "day": datetime.date(2024, 1, 1), "small": 1, "f": 1.0,
       "ms": datetime.datetime(2024, 1, 1), "s": "a", "big": 2**40, "i": 3}
KINDS = {"append": (None, {}), "append-dv": (None, {"deletion-vectors.enabled": "true"}),
         "primary-key": (["id"], {"bucket": "1"})}


def of(value: Any, at: str) -> Any:
    """``value``, or the expression ``value(at)`` makes over the columns named ``at`` + name
    (a string in a merge, where a string names a column: ``pc.scalar``)."""
    if callable(value):
        return value(at)
    return pc.scalar(value) if at and isinstance(value, str) else value


def values_table(path: Path, kind: str) -> mp.Table:
    pk, options = KINDS[kind]
    t = mp.create_table(str(path), VALUES, primary_key=pk, options=options)
    t.write(pa.Table.from_pylist([ROW], schema=VALUES))
    return t


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("column", "value", "stored"), [
    ("d", 1, decimal.Decimal("1.00")),  # SQL: SET d = 1 (an integer fits exactly)
    ("d", decimal.Decimal("2.5"), decimal.Decimal("2.50")),
    ("d", 1.25, decimal.Decimal("1.25")),
    ("small", 5, 5),
    ("f", 1, 1.0),
    ("f", 0.5, 0.5),
    ("i", 2.0, 2),
    ("day", datetime.date(2024, 2, 3), datetime.date(2024, 2, 3)),
    ("ms", datetime.datetime(2024, 1, 1, 0, 0, 0, 5000), datetime.datetime(2024, 1, 1, 0, 0, 0, 5000)),
    ("s", pc.scalar("b"), "b"),
    ("i", lambda at: pc.field(at + "i") + 1, 4),  # an expression: "" for update, "target." for merge
    ("d", None, None),
])
def test_a_literal_that_fits_its_column_exactly_is_set(tmp_path, kind, column, value, stored) -> None:
    t = values_table(tmp_path / "t", kind)
    assert t.update([("id", "=", 1)], set={column: of(value, "")}) == 1
    assert t.to_arrow().to_pylist()[0][column] == stored
    t.update([("id", "=", 1)], set={column: ROW[column]})
    assert t.merge(pa.table({"id": [1]}), on="id") \
        .when_matched_update(set={column: of(value, "target.")}).execute().updated == 1
    assert t.to_arrow().to_pylist()[0][column] == stored


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("column", "value"), [
    ("day", datetime.datetime(2024, 1, 2, 12, 30)),  # write() refuses a timestamp for a DATE
    ("d", decimal.Decimal("1.005")),  # a third fraction digit
    ("d", 10**8),  # past DECIMAL(10, 2)'s eight integer digits
    ("d", 0.1),  # not 0.1 as a binary float: give Decimal("0.1")
    ("small", 300),
    ("f", 0.1),  # rounds in a FLOAT
    ("i", 1.5),
    ("ms", datetime.datetime(2024, 1, 1, 0, 0, 0, 1)),  # finer than milliseconds
    ("s", 5),
    ("i", "5"),
    ("i", True),
    ("i", lambda at: pc.field(at + "big")),  # an int64 column into an INT column, as write() refuses it
    ("f", lambda at: pc.field(at + "f") + 0.1),  # a double
])
def test_a_value_that_does_not_fit_its_column_is_refused_and_nothing_changes(tmp_path, kind, column, value) -> None:
    t = values_table(tmp_path / "t", kind)
    message = refused(t, SchemaMismatchError, lambda: t.update([("id", "=", 1)], set={column: of(value, "")}))
    assert repr(column) in message
    refused(t, SchemaMismatchError, lambda: t.merge(pa.table({"id": [1]}), on="id")
            .when_matched_update(set={column: of(value, "target.")}).execute())
    source = pa.table({"id": [2], "big": [2**40], "f": pa.array([1.0], pa.float32())})
    refused(t, SchemaMismatchError, lambda: t.merge(source, on="id")
            .when_not_matched_insert(values={"id": "source.id", column: of(value, "source.")}).execute())
    assert t.to_arrow().to_pylist() == [ROW]


SOURCE_TYPES = [("d", pa.int64()), ("d", pa.decimal128(4, 2)), ("d", pa.decimal128(12, 3)), ("d", pa.float64()),
                ("day", pa.timestamp("us")), ("day", pa.string()), ("small", pa.int16()), ("i", pa.int16()),
                ("i", pa.int64()), ("f", pa.float64()), ("f", pa.int16()), ("ms", pa.timestamp("s")),
                ("ms", pa.timestamp("us")), ("ms", pa.date32()), ("s", pa.large_string()), ("big", pa.uint32())]


@pytest.mark.parametrize(("column", "source_type"), SOURCE_TYPES, ids=[f"{c}-{t}" for c, t in SOURCE_TYPES])
def test_a_merge_takes_a_source_column_exactly_when_write_takes_it(tmp_path, column, source_type) -> None:
    """The one conversion of a column of values: merge inserts and updates accept a source
    column's type where write() accepts it, and refuse it where write() refuses it."""
    value = pa.array([ROW[column]]).cast(source_type, safe=False) if column != "d" or source_type != pa.int64() \
        else pa.array([1], pa.int64())
    row = pa.table({**{n: pa.array([v], VALUES.field(n).type) for n, v in ROW.items() if n != column},
                    column: value})
    row = row.set_column(0, "id", pa.array([2], pa.int64()))
    writes = mp.create_table(str(tmp_path / "w"), VALUES)
    try:
        writes.write(row.select(VALUES.names))
        written: type[Exception] | None = None
    except SchemaMismatchError:
        written = SchemaMismatchError
    t = values_table(tmp_path / "t", "append")
    merges = [lambda: t.merge(row, on="id").when_not_matched_insert_all().execute(),
              lambda: t.merge(row.set_column(0, "id", pa.array([1], pa.int64())), on="id")
              .when_matched_update(set={column: f"source.{column}"}).execute()]
    for merge in merges:
        if written is None:
            merge()
        else:
            refused(t, written, merge)


# -- item 20: a null for a NOT NULL column ----------------------------------------------------

NOT_NULL = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False),
                      ("w", pa.int64())])


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_null_for_a_not_null_column_is_refused_before_any_file_is_written(tmp_path, kind) -> None:
    pk, options = KINDS[kind]
    t = mp.create_table(str(tmp_path / "t"), NOT_NULL, primary_key=pk, options=options)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "w": [1, 2]}, schema=NOT_NULL))
    nulls = pa.table({"id": [1, 3], "v": pa.array([None, None], pa.string()), "w": [5, 6]})
    calls = [lambda: t.update([("id", "=", 1)], set={"v": None}),
             lambda: t.update([("id", "=", 1)], set={"v": pc.scalar(pa.scalar(None, pa.string()))}),
             lambda: t.merge(nulls, on="id").when_matched_update_all().execute(),
             lambda: t.merge(nulls, on="id").when_not_matched_insert_all().execute(),
             lambda: t.merge(nulls, on="id").when_not_matched_insert(values={"id": "source.id"}).execute()]
    for call in calls:
        message = refused(t, InvalidArgumentError, call, match="NOT NULL")
        assert "'v'" in message
    assert t.to_arrow().sort_by("id").to_pylist() == [{"id": 1, "v": "a", "w": 1}, {"id": 2, "v": "b", "w": 2}]


def test_a_data_file_whose_write_fails_leaves_nothing_behind(tmp_path) -> None:
    """The writer's own guard under every path that writes files (a copy-on-write rewrite
    left a partial Parquet file when a value failed inside the encoder)."""
    t = mp.create_table(str(tmp_path / "t"), NOT_NULL)
    ctx = t.context()
    bad = pa.Table.from_arrays([pa.array([1]), pa.array([None], pa.string()), pa.array([1])], schema=NOT_NULL)
    with pytest.raises(pa.ArrowInvalid):
        write_data_file(ctx.io, ctx.layout, "", 0, bad, schema=ctx.schema)
    assert not list((tmp_path / "t").rglob("*.parquet"))


# -- item 11: a merge not joined on the primary key inserts no existing key --------------------

PEOPLE = pa.schema([pa.field("id", pa.int64(), nullable=False), ("email", pa.string()), ("n", pa.int64())])


@pytest.mark.parametrize("options", [{"bucket": "2"}, {"bucket": "2", "deletion-vectors.enabled": "true"}])
def test_a_merge_on_other_columns_refuses_to_insert_a_key_the_table_has(tmp_path, options) -> None:
    t = mp.create_table(str(tmp_path / "t"), PEOPLE, primary_key=["id"], options=options)
    t.write(pa.table({"id": [1, 2, 3], "email": ["a@x", "b@x", "c@x"], "n": [1, 2, 3]}, schema=PEOPLE))
    t.write(pa.table({"id": [4], "email": ["d@x"], "n": [4]}, schema=PEOPLE))

    def merge(source: dict[str, list[Any]]) -> mp.MergeResult:
        return (t.merge(pa.table(source, schema=PEOPLE), on="email")
                .when_matched_delete(condition=pc.field("source.n") < 0)
                .when_matched_update(set={"n": "source.n"})
                .when_not_matched_insert_all().execute())

    # id 1 exists with another email: the insert would replace it (and count as an insert)
    message = refused(t, InvalidArgumentError, lambda: merge({"id": [1, 9], "email": ["new@x", "z@x"], "n": [9, 9]}),
                      match="primary key")
    assert "{'id': 1}" in message and "'email'" in message and "9" not in message.split("{'id': 1}")[1][:12]
    # a key updated by the same merge still exists: refused too
    refused(t, InvalidArgumentError, lambda: merge({"id": [2, 3], "email": ["b@x", "q@x"], "n": [20, 30]}))
    # two source rows inserting one new key: refused, as a SQL primary key would
    refused(t, InvalidArgumentError, lambda: merge({"id": [7, 7], "email": ["p@x", "r@x"], "n": [1, 2]}),
            match="twice")
    assert t.to_arrow().sort_by("id").column("n").to_pylist() == [1, 2, 3, 4]
    # new keys, and a key the same merge deletes, are inserted
    r = merge({"id": [3, 8, 3], "email": ["c@x", "h@x", "new-c@x"], "n": [-1, 8, 33]})
    assert (r.inserted, r.updated, r.deleted) == (2, 0, 1)
    rows = {row["id"]: row for row in t.to_arrow().to_pylist()}
    assert sorted(rows) == [1, 2, 3, 4, 8] and rows[3]["email"] == "new-c@x"


def test_a_key_written_while_such_a_merge_ran_makes_it_read_again_and_refuse(tmp_path, monkeypatch) -> None:
    """Deterministic interleaving: another writer commits the key the merge inserts after
    the merge read the table; the commit check sees it, the merge reads again and refuses."""
    t = mp.create_table(str(tmp_path / "t"), PEOPLE, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1], "email": ["a@x"], "n": [1]}, schema=PEOPLE))
    real = dml.write_change
    calls = []

    def concurrent_write_first(*args: Any, **kwargs: Any) -> Any:
        if not calls:
            mp.open_table(t.path).write(pa.table({"id": [9], "email": ["other@x"], "n": [0]}, schema=PEOPLE))
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dml, "write_change", concurrent_write_first)
    source = pa.table({"id": [9], "email": ["new@x"], "n": [9]}, schema=PEOPLE)
    with pytest.raises(InvalidArgumentError, match="{'id': 9}"):
        t.merge(source, on="email").when_not_matched_insert_all().execute()
    assert len(calls) == 1 and len(t.snapshots()) == 2
    assert t.to_arrow().sort_by("id").to_pylist() == [{"id": 1, "email": "a@x", "n": 1},
                                                      {"id": 9, "email": "other@x", "n": 0}]
