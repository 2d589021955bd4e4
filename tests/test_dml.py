"""Row-level changes (Table.delete / update / merge): what a user relies on beyond the model
test: files untouched by a change stay, history keeps the old rows, streams and diffs see
the change, bad input changes nothing, sources of every kind, object storage."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError, SchemaMismatchError
from tests.conftest import Storage

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    pa.field("status", pa.string()),
    pa.field("amount", pa.int64()),
])


def orders(ids: range, dt: str, status: str = "open") -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "status": [status] * len(ids),
                     "amount": [i * 10 for i in ids]}, schema=SCHEMA)


def files(t: mp.Table) -> dict[str, str]:
    """Data file name -> its partition directory, of the latest snapshot."""
    return {f.fileName: s.partition_path for s in t.scan().plan() for f in s.files}


def by_id(t: mp.Table, **scan) -> dict[int, dict]:
    return {r["id"]: r for r in t.scan(**scan).to_arrow().to_pylist()}


@pytest.fixture(params=["append", "primary-key"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def make(storage: Storage, kind: str, name: str = "orders", **options: str) -> mp.Table:
    t = mp.create_table(storage.path(name), SCHEMA, partition_by=["dt"],
                        primary_key=["id", "dt"] if kind == "primary-key" else None,
                        options={**storage.options, **({"bucket": "2"} if kind == "primary-key" else {}),
                                 **options})
    for day in ("2025-01-01", "2025-01-02", "2025-01-03"):
        start = int(day[-1]) * 100
        t.write(orders(range(start, start + 20), day))
    return t


def test_delete_update_merge_on_local_disk_and_s3(storage: Storage, kind: str) -> None:
    t = make(storage, kind)
    assert t.delete([("dt", "<", "2025-01-02")]) == 20
    assert t.update([("amount", ">=", 3150)], set={"status": "void"}) == 5
    source = pa.table({"id": [200, 201, 999], "dt": ["2025-01-02"] * 3, "status": ["paid"] * 3,
                       "amount": [1, 2, 3]}, schema=SCHEMA)
    result = t.merge(source, on=["id", "dt"]).when_matched_update_all().when_not_matched_insert_all().execute()
    assert (result.inserted, result.updated, result.deleted) == (1, 2, 0)
    rows = by_id(mp.open_table(storage.path("orders"), options=storage.options))
    assert len(rows) == 41 and min(rows) == 200
    assert rows[200]["status"] == "paid" and rows[999]["amount"] == 3
    assert sorted(r["id"] for r in rows.values() if r["status"] == "void") == [315, 316, 317, 318, 319]


def test_a_delete_in_one_partition_rewrites_nothing_outside_it(tmp_path, kind: str) -> None:
    t = make(Storage("local", str(tmp_path)), kind)
    before = files(t)
    assert t.delete([("dt", "=", "2025-01-02"), ("amount", "<", 2050)]) == 5
    after = files(t)
    outside = {n for n, d in before.items() if d != "dt=2025-01-02"}
    assert outside <= set(after)  # every file of the other partitions kept as it was
    assert {d for n, d in after.items() if n not in before} == {"dt=2025-01-02"}


def test_append_files_without_a_selected_row_are_never_rewritten(tmp_path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    for start in range(0, 100, 10):  # ten files, each its own id range (stats prune nine)
        t.write(orders(range(start, start + 10), "d"))
    before = files(t)
    assert t.update([("id", "=", 42)], set={"amount": pc.field("amount") + 1}) == 1
    after = files(t)
    # one file replaced by one holding its other rows and the updated row (same partition)
    assert len(set(before) - set(after)) == 1 and len(set(after) - set(before)) == 1
    assert t.update([("id", "=", 43)], set={"dt": "e"}) == 1  # the row moves: its own file
    assert len(set(files(t)) - set(after)) == 2 and set(files(t).values()) == {"dt=d", "dt=e"}
    after = files(t)
    assert t.delete([("id", ">", 1000)]) == 0 and files(t) == after  # nothing selected: no commit
    assert len(t.snapshots()) == 12


def test_history_keeps_the_rows_before_a_change(tmp_path, kind: str) -> None:
    t = make(Storage("local", str(tmp_path)), kind)
    t.create_tag("before")
    old = by_id(t)
    snap = t.latest_snapshot().id
    t.delete([("status", "=", "open")])
    t.merge(orders(range(5), "2025-01-05"), on=["id", "dt"]).when_not_matched_insert_all().execute()
    assert sorted(by_id(t)) == list(range(5))
    assert by_id(t, snapshot_id=snap) == old and by_id(t, tag="before") == old
    t.expire_snapshots(retain_max=1)
    assert by_id(t, tag="before") == old  # the tag keeps the rewritten files


@pytest.mark.parametrize("producer", ["none", "input", "lookup"])
def test_primary_key_changes_reach_streams_and_diffs_as_row_kinds(tmp_path, producer: str) -> None:
    t = make(Storage("local", str(tmp_path)), "primary-key", **{"changelog-producer": producer})
    stream = t.stream("etl", options={"read.changelog": "true"})
    list(stream)  # the full scan
    start = t.latest_snapshot().id
    t.delete([("id", "=", 100)])
    t.update([("id", "=", 101)], set={"status": "void"})
    batches = list(stream)
    kinds = sorted((r["id"], r["_row_kind"], r["status"]) for b in batches for r in b.data.to_pylist())
    if producer == "none":  # the new files' rows: the key's latest row of the commit, its
        assert kinds == [(100, "-D", "open"), (101, "+U", "void")]  # kind as stored (Paimon's)
    else:  # a changelog: the update as a -U/+U pair
        assert kinds == [(100, "-D", "open"), (101, "+U", "void"), (101, "-U", "open")]
    diff = t.diff(start, t.latest_snapshot().id).to_pylist()
    assert sorted((r["id"], r["_row_kind"], r["status"]) for r in diff) == [
        (100, "-D", "open"), (101, "+U", "void"), (101, "-U", "open")]


def test_sources_of_every_kind(tmp_path) -> None:
    t = make(Storage("local", str(tmp_path)), "primary-key")
    frame = pd.DataFrame({"id": [100], "dt": ["2025-01-01"], "status": ["pandas"], "amount": [1]})
    polars = pl.DataFrame({"id": [101], "dt": ["2025-01-01"], "status": ["polars"], "amount": [2]})
    reader = orders(range(102, 103), "2025-01-01", "reader").to_reader()
    for source in (frame, polars, reader):
        t.merge(source, on=["id", "dt"]).when_matched_update(set={"status": "source.status"}).execute()
    rows = by_id(t)
    assert [rows[i]["status"] for i in (100, 101, 102)] == ["pandas", "polars", "reader"]


def test_bad_input_is_a_typed_error_and_changes_nothing(tmp_path, kind: str) -> None:
    t = make(Storage("local", str(tmp_path)), kind)
    snapshots, on_disk = len(t.snapshots()), sorted(files(t))
    cases = [
        (InvalidArgumentError, lambda: t.delete([("nope", "=", 1)])),
        (InvalidArgumentError, lambda: t.update([("id", "=", 100)], set={"nope": 1})),
        (InvalidArgumentError, lambda: t.update([("id", "=", 100)], set={})),
        (SchemaMismatchError, lambda: t.update([("id", "=", 100)], set={"amount": "not a number"})),
        (InvalidArgumentError, lambda: t.update([("id", "=", 100)], set={"amount": pc.field("nope")})),
        (InvalidArgumentError, lambda: t.merge(orders(range(100, 102), "2025-01-01"), on=["nope"])),
        (InvalidArgumentError, lambda: t.merge(orders(range(100, 102), "2025-01-01"), on=["id"]).execute()),
        (InvalidArgumentError, lambda: t.merge(orders(range(100, 102), "2025-01-01"), on=["id"])
         .when_matched_update(set={"status": "paid"}).execute()),  # a string names a column
        (InvalidArgumentError, lambda: t.merge(pa.concat_tables([orders(range(100, 101), "2025-01-01")] * 2),
                                               on=["id", "dt"]).when_matched_update_all().execute()),
        (InvalidArgumentError, lambda: t.merge(orders(range(100, 102), "2025-01-01"), on=["id"])
         .when_matched_delete(condition="source.id > 3")),
        (InvalidArgumentError, lambda: t.merge(orders(range(100, 102), "2025-01-01"), on=["id"])
         .when_not_matched_insert(values={"id": "target.id"}).execute()),
    ]
    if kind == "primary-key":
        cases.append((InvalidArgumentError, lambda: t.update([("id", "=", 100)], set={"id": 5})))
    for error, call in cases:
        with pytest.raises(error):
            call()
    assert len(t.snapshots()) == snapshots and sorted(files(t)) == on_disk
    assert sorted(f.name for f in tmp_path.rglob("data-*.parquet")) == on_disk  # no file left behind


def test_merge_literals_conditions_and_clause_order(tmp_path) -> None:
    t = make(Storage("local", str(tmp_path)), "append")
    source = pa.table({"id": [100, 101, 102, 500], "dt": ["2025-01-01"] * 4, "status": ["x"] * 4,
                       "amount": [0, 5000, 7, 1]}, schema=SCHEMA)
    result = (t.merge(source, on=["id", "dt"])
              .when_matched_delete(condition=pc.field("source.amount") == 0)
              .when_matched_update(set={"status": pc.scalar("big"), "amount": "source.amount"},
                                   condition=pc.field("source.amount") > pc.field("target.amount"))
              .when_matched_update(set={"status": pc.scalar("small")})
              .when_not_matched_insert(values={"id": "source.id", "dt": "source.dt", "amount": 77})
              .when_not_matched_by_source_delete(condition=pc.field("target.id") == 119)
              .execute())
    assert (result.inserted, result.updated, result.deleted) == (1, 2, 2)
    rows = by_id(t)
    assert 100 not in rows and 119 not in rows and len(rows) == 60 - 2 + 1
    assert rows[101]["status"] == "big" and rows[101]["amount"] == 5000
    assert rows[102]["status"] == "small" and rows[102]["amount"] == 1020
    assert rows[500] == {"id": 500, "dt": "2025-01-01", "status": None, "amount": 77}


def test_changes_on_an_empty_table_and_from_an_empty_source(tmp_path, kind: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"],
                        primary_key=["id", "dt"] if kind == "primary-key" else None)
    assert t.delete([("id", "=", 1)]) == 0 and t.update(None, set={"status": "x"}) == 0
    empty = SCHEMA.empty_table()
    for source in (empty, empty.to_reader()):  # nothing changed upstream today: no commit
        r = t.merge(source, on=["id", "dt"]).when_matched_update_all().when_not_matched_insert_all().execute()
        assert (r.inserted, r.updated, r.deleted) == (0, 0, 0)
    assert t.snapshots() == []
    r = t.merge(orders(range(3), "d"), on=["id", "dt"]).when_not_matched_insert_all().execute()
    assert r.inserted == 3 and sorted(by_id(t)) == [0, 1, 2]
    r = t.merge(empty, on=["id", "dt"]).when_not_matched_by_source_delete().execute()
    assert r.deleted == 3 and by_id(t) == {}


def test_a_string_that_names_no_column_is_refused_with_the_literal_to_write(tmp_path) -> None:
    t = make(Storage("local", str(tmp_path)), "append")
    with pytest.raises(InvalidArgumentError) as e:
        t.merge(orders(range(100, 102), "2025-01-01"), on=["id", "dt"]) \
            .when_matched_update(set={"status": "paid"}).execute()
    assert "pyarrow.compute.scalar('paid')" in str(e.value) and "{value" not in str(e.value)


def test_partial_update_deletes_keys_of_a_table_with_not_null_columns(tmp_path) -> None:
    """remove-record-on-delete with a NOT NULL non-key column (issue 32 item 19): every
    delete and every written -D failed with ArrowInvalid (the merged row of a deleted key
    had nulls in the NOT NULL column)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False),
                        ("w", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"bucket": "1", "merge-engine": "partial-update",
                                 "partial-update.remove-record-on-delete": "true"})
    t.write(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "w": [1, 2, None, 4]}, schema=schema))
    assert t.delete([("id", "=", 1)]) == 1
    t.write(pa.table({"id": [2], "v": ["b"], "w": [2], "_row_kind": ["-D"]}))
    t.write(pa.table({"id": [3, 5], "v": ["c2", "e"], "w": [None, 5]}, schema=schema))
    want = [{"id": 3, "v": "c2", "w": None}, {"id": 4, "v": "d", "w": 4}, {"id": 5, "v": "e", "w": 5}]
    assert t.to_arrow().sort_by("id").to_pylist() == want
    t.compact(strategy="minor")
    assert t.to_arrow().sort_by("id").to_pylist() == want
    t.write(pa.table({"id": [1], "v": ["again"], "w": [None]}, schema=schema))  # a deleted key comes back
    assert t.compact(full=True) is not None
    assert t.to_arrow().sort_by("id").to_pylist() == [{"id": 1, "v": "again", "w": None}, *want]


def test_not_matched_by_source_update_sets_target_rows_no_source_row_matches(tmp_path, kind: str) -> None:
    """SQL's WHEN NOT MATCHED BY SOURCE THEN UPDATE, as Delta has it (issue 32 item 22):
    values and conditions over the target's columns, clauses in order with the deletes."""
    t = make(Storage("local", str(tmp_path)), kind)
    source = orders(range(100, 105), "2025-01-01", "seen")
    result = (t.merge(source, on=["id", "dt"])
              .when_matched_update(set={"status": "source.status"})
              .when_not_matched_by_source_delete(condition=pc.field("target.dt") == "2025-01-03")
              .when_not_matched_by_source_update(set={"status": pc.scalar("stale"), "amount": pc.field("target.amount") + 1},
                                                 condition=pc.field("target.id") < 110)
              .when_not_matched_by_source_update(set={"status": pc.scalar("unseen")})
              .execute())
    assert (result.inserted, result.updated, result.deleted) == (0, 5 + 5 + 30, 20)
    rows = by_id(t)
    assert len(rows) == 40 and not any(i >= 300 for i in rows)
    assert {rows[i]["status"] for i in range(100, 105)} == {"seen"}
    assert [(rows[i]["status"], rows[i]["amount"]) for i in (105, 109)] == [("stale", 1051), ("stale", 1091)]
    assert {rows[i]["status"] for i in [*range(110, 120), *range(200, 220)]} == {"unseen"}
    with pytest.raises(InvalidArgumentError, match="source"):
        t.merge(source, on=["id", "dt"]).when_not_matched_by_source_update(set={"status": "source.status"}).execute()
    assert len(t.snapshots()) == 4
