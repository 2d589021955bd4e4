"""Schema evolution: the pure changes as tables of cases, then round trips through data files."""

from __future__ import annotations

import decimal

import msgspec
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.schema import schema_evolution as se
from minipaimon_core.schema.schema import SchemaManager, TableSchema, build_schema
from tests.conftest import Storage

BASE = pa.schema([
    pa.field("id", pa.int32(), nullable=False), ("name", pa.string()), ("score", pa.float32()),
    ("small", pa.int8()), ("price", pa.decimal128(5, 2)), pa.field("dt", pa.string(), nullable=False),
])


def base_schema(**options: str) -> TableSchema:
    return build_schema(BASE, ["id", "dt"], ["dt"], {"merge-engine": "aggregation",
                                                     "fields.score.aggregate-function": "max", **options})


# -- pure changes --------------------------------------------------------------------------------


def test_add_column_at_the_end_or_after_a_column():
    s = base_schema()
    end = se.apply_add_column(s, "extra", pa.int64())
    assert end.field_names[-1] == "extra" and end.fields[-1].id == s.highestFieldId + 1 == end.highestFieldId
    assert end.fields[-1].type == "BIGINT"  # always nullable
    mid = se.apply_add_column(s, "nick", pa.string(), after="name")
    assert mid.field_names == ["id", "name", "nick", "score", "small", "price", "dt"]
    dropped = se.apply_drop_column(end, "extra")
    assert se.apply_add_column(dropped, "extra", pa.int64()).fields[-1].id == end.highestFieldId + 1


@pytest.mark.parametrize(("name", "after", "error"), [
    ("name", None, "already exists"),
    ("_SEQUENCE_NUMBER", None, "reserved"),
    ("_row_kind", None, "reserved"),
    ("x", "missing", "no column 'missing'"),
])
def test_add_column_errors(name, after, error):
    with pytest.raises(mp.SchemaMismatchError, match=error):
        se.apply_add_column(base_schema(), name, pa.int64(), after)


def test_rename_keeps_the_id_and_follows_keys_and_options():
    s = base_schema(**{"sequence.field": "small"})
    r = se.apply_rename_column(s, "score", "best")
    assert r.fields[2].id == s.fields[2].id and r.fields[2].name == "best"
    assert "fields.best.aggregate-function" in r.options and "fields.score.aggregate-function" not in r.options
    assert se.apply_rename_column(s, "small", "tiny").options["sequence.field"] == "tiny"
    assert se.apply_rename_column(s, "id", "key").primaryKeys == ["key", "dt"]
    assert se.apply_rename_column(s, "id", "id") is None
    with pytest.raises(mp.InvalidArgumentError, match="partition"):
        se.apply_rename_column(s, "dt", "day")
    with pytest.raises(mp.SchemaMismatchError, match="already exists"):
        se.apply_rename_column(s, "name", "score")


def test_drop_column_rules():
    s = base_schema(**{"sequence.field": "small"})
    d = se.apply_drop_column(s, "score")
    assert "score" not in d.field_names and not any(k.startswith("fields.score.") for k in d.options)
    for col, error in (("id", "primary key"), ("dt", "primary key"), ("small", "sequence.field")):
        with pytest.raises(mp.InvalidArgumentError, match=error):
            se.apply_drop_column(s, col)
    with pytest.raises(mp.SchemaMismatchError):
        se.apply_drop_column(s, "nope")
    only = build_schema(pa.schema([("a", pa.int64())]), None, None, None)
    with pytest.raises(mp.InvalidArgumentError, match="only column"):
        se.apply_drop_column(only, "a")


@pytest.mark.parametrize(("old", "new", "ok"), [
    (pa.int8(), pa.int16(), True), (pa.int8(), pa.int64(), True), (pa.int32(), pa.int64(), True),
    (pa.int64(), pa.int32(), False), (pa.float32(), pa.float64(), True),
    (pa.float64(), pa.float32(), False), (pa.int32(), pa.float64(), True), (pa.float64(), pa.int64(), False),
    (pa.decimal128(5, 2), pa.decimal128(10, 2), True), (pa.decimal128(5, 2), pa.decimal128(10, 3), False),
    (pa.decimal128(10, 2), pa.decimal128(5, 2), False), (pa.string(), pa.binary(), False),
    (pa.int32(), pa.string(), False),
])
def test_type_widening_table(old, new, ok):
    assert se.is_safe_widening(old, new) is ok


def test_alter_column_type():
    s = base_schema()
    a = se.apply_alter_column_type(s, "small", pa.int32())
    assert a.fields[3].type == "INT" and a.fields[3].id == s.fields[3].id
    assert se.apply_alter_column_type(s, "small", pa.int8()) is None
    with pytest.raises(mp.SchemaMismatchError, match="only widening"):
        se.apply_alter_column_type(s, "score", pa.int64())
    with pytest.raises(mp.InvalidArgumentError, match="primary key"):
        se.apply_alter_column_type(s, "id", pa.int64())
    not_null = build_schema(pa.schema([pa.field("a", pa.int32(), nullable=False)]), None, None, None)
    assert se.apply_alter_column_type(not_null, "a", pa.int64()).fields[0].type == "BIGINT NOT NULL"


def test_set_options():
    s = base_schema()
    o = se.apply_set_options(s, {"snapshot.num-retained.min": "3", "write-only": True})
    assert o.options["snapshot.num-retained.min"] == "3" and o.options["write-only"] == "true"
    assert se.apply_set_options(o, {"write-only": None}).options.get("write-only") is None
    assert se.apply_set_options(s, {"bucket": s.options["bucket"]}) is None  # unchanged: fine
    with pytest.raises(mp.InvalidArgumentError, match="cannot be changed"):
        se.apply_set_options(s, {"bucket": "8"})
    with pytest.raises(mp.InvalidArgumentError, match="cannot be changed"):
        se.apply_set_options(s, {"merge-engine": "deduplicate"})
    with pytest.raises(mp.UnsupportedOptionError):
        se.apply_set_options(s, {"no-such-option": "1"})
    with pytest.raises(mp.UnsupportedOptionError):
        se.apply_set_options(s, {"snapshot.num-retained.min": "many"})


# -- committing ------------------------------------------------------------------------------------


def test_a_lost_race_for_the_schema_id_reapplies_the_change(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), BASE, primary_key=["id", "dt"], partition_by=["dt"])
    manager = SchemaManager(t.io, t.layout)
    raced = []

    def change(s: TableSchema) -> TableSchema:
        if not raced:  # another process commits schema-1 between our read and our create
            other = se.apply_add_column(s, "theirs", pa.int64())
            assert manager.commit(msgspec.structs.replace(other, id=s.id + 1))
            raced.append(True)
        return se.apply_add_column(s, "ours", pa.int64())

    result = se.commit_change(t.io, t.layout, change)
    assert result.id == 2 and result.field_names[-2:] == ["theirs", "ours"]
    assert t.refresh().schema().names[-2:] == ["theirs", "ours"]


def test_a_bad_change_writes_nothing(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), BASE, primary_key=["id", "dt"], partition_by=["dt"])
    with pytest.raises(mp.InvalidArgumentError):
        t.drop_column("id")
    with pytest.raises(mp.UnsupportedOptionError):
        t.set_options({"nope": "1"})
    assert SchemaManager(t.io, t.layout).schema_ids() == [0]


# -- round trips through data files ----------------------------------------------------------------


def test_round_trip_add_rename_widen_then_old_and_new_snapshots_read_right(storage: Storage):
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float32()),
                        ("price", pa.decimal128(5, 2))])
    t = mp.create_table(storage.path("t"), schema)
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"],
                      "score": pa.array([1.5, 2.5], pa.float32()),
                      "price": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(5, 2))}))
    stale = mp.open_table(t.path)  # a handle that still has schema 0
    t.add_column("tag", pa.string(), after="id")
    t.rename_column("name", "label")
    t.alter_column_type("id", pa.int64())
    t.alter_column_type("score", pa.float64())
    t.alter_column_type("price", pa.decimal128(12, 2))
    t.drop_column("tag")
    t.add_column("tag", pa.string())  # same name, new column: old rows read null
    assert t.schema() == pa.schema([("id", pa.int64()), ("label", pa.string()), ("score", pa.float64()),
                                    ("price", pa.decimal128(12, 2)), ("tag", pa.string())])
    t.write(pa.table({"id": pa.array([3], pa.int64()), "label": ["c"], "score": [3.25],
                      "price": pa.array([decimal.Decimal("1234567.89")], pa.decimal128(12, 2)),
                      "tag": ["new"]}))
    stale.write(pa.table({"id": pa.array([4], pa.int32()), "name": ["d"],
                          "score": pa.array([4.5], pa.float32()),
                          "price": pa.array([None], pa.decimal128(5, 2))}))
    reader = mp.open_table(t.path)
    # time travel reads the snapshot's own schema, as Paimon does (issue 38 item 6)
    old = reader.scan(snapshot_id=1).to_arrow()
    assert old.schema == reader.schema_by_id(0).arrow_schema() == reader.as_of(snapshot_id=1).schema()
    assert old.to_pylist() == [
        {"id": 1, "name": "a", "score": 1.5, "price": decimal.Decimal("1.25")},
        {"id": 2, "name": "b", "score": 2.5, "price": None},
    ]
    latest = reader.to_arrow().sort_by("id")
    assert latest.column("id").to_pylist() == [1, 2, 3, 4]
    assert latest.column("label").to_pylist() == ["a", "b", "c", "d"]
    assert latest.column("tag").to_pylist() == [None, None, "new", None]
    assert latest.column("price").to_pylist()[2] == decimal.Decimal("1234567.89")
    # filters on evolved columns use old files' stats correctly
    assert reader.scan(filter=[("label", "=", "b")]).to_arrow().column("id").to_pylist() == [2]
    assert sorted(reader.scan(filter=[("score", ">", 2.0)]).to_arrow().column("id").to_pylist()) == [2, 3, 4]
    assert reader.scan(filter=[("tag", "=", "new")]).to_arrow().column("id").to_pylist() == [3]


def test_primary_key_table_evolves_and_compacts_across_schemas(storage: Storage):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32()), ("s", pa.string())])
    t = mp.create_table(storage.path("t"), schema, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([10, 20, 30], pa.int32()),
                      "s": ["a", "b", "c"]}))
    t.rename_column("id", "key")
    t.alter_column_type("v", pa.int64())
    t.add_column("w", pa.float64())
    t.drop_column("s")
    t.write(pa.table({"key": pa.array([2, 4], pa.int64()), "v": pa.array([2 ** 40, 40], pa.int64()),
                      "w": [0.5, 1.5]}))
    expected = [(1, 10, None), (2, 2 ** 40, 0.5), (3, 30, None), (4, 40, 1.5)]

    def read(**kw):
        out = t.scan(**kw).to_arrow()
        return sorted(zip(*(out.column(c).to_pylist() for c in ["key", "v", "w"])))

    assert read() == expected
    old = t.scan(snapshot_id=1).to_arrow()  # in snapshot 1's schema (time travel)
    assert old.column_names == ["id", "v", "s"] and old.schema.field("v").type == pa.int32()
    assert sorted(old.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": 10, "s": "a"}, {"id": 2, "v": 20, "s": "b"}, {"id": 3, "v": 30, "s": "c"}]
    t.compact(full=True)
    assert read() == expected
    assert t.system_table("files").column("schema_id").to_pylist() == [4, 4]


def test_set_options_changes_behaviour_after_refresh(storage: Storage):
    t = mp.create_table(storage.path("t"), pa.schema([("a", pa.int64())]))
    other = mp.open_table(t.path)
    t.set_options({"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    for i in range(3):
        t.write(pa.table({"a": [i]}))
        t.maybe_expire()
    assert [s.id for s in t.snapshots()] == [3]
    assert "snapshot.num-retained.max" not in other.options()
    assert other.refresh().options()["snapshot.num-retained.max"] == "1"
