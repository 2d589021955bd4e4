"""Row-level changes on tables with ``sequence.field`` (issue 32 item 10).

Paimon's rule: a key's row is the one with the largest sequence value (ties: the later
write), deletes included (a delete keeps the deleted row's sequence value). An update or a
merge that would give a row a lower sequence value than its stored one therefore changes
nothing, and is not counted; a merge insert of a key deleted with a higher sequence value
loses to that delete, and is not counted. No row disappears: before, such an update
deleted the row (its -U, with the old higher value, beat the +U), and on a partial-update
table it reported a change that did not happen.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("seq", pa.int64()), ("v", pa.string())])
CONFIGS = {
    "deduplicate": {"bucket": "2"},
    "deletion-vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "partial-update": {"bucket": "2", "merge-engine": "partial-update",
                       "partial-update.remove-record-on-delete": "true"},
}


@pytest.fixture(params=list(CONFIGS))
def table(request: pytest.FixtureRequest, tmp_path) -> mp.Table:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"sequence.field": "seq", **CONFIGS[request.param]})
    t.write(pa.table({"id": [1, 2, 3, 4], "seq": [10, 10, 10, None], "v": ["a", "b", "c", "d"]}, schema=SCHEMA))
    return t


def rows(t: mp.Table) -> dict[int, tuple[Any, Any]]:
    return {r["id"]: (r["seq"], r["v"]) for r in t.to_arrow().to_pylist()}


def merge_update(t: mp.Table, source: dict[str, list[Any]]) -> mp.MergeResult:
    return (t.merge(pa.table(source, schema=SCHEMA), on="id")
            .when_matched_update(set={"seq": "source.seq", "v": "source.v"})
            .when_not_matched_insert_all().execute())


STORED = {1: (10, "a"), 2: (10, "b"), 3: (10, "c"), 4: (None, "d")}


@pytest.mark.parametrize("full", [False, True], ids=["before-compaction", "after-compaction"])
def test_an_update_to_a_lower_sequence_changes_nothing_and_is_not_counted(table: mp.Table, full: bool) -> None:
    if full:
        table.compact(full=True)
    assert table.update([("id", "=", 1)], set={"seq": 5, "v": "late"}) == 0
    assert table.update([("id", "=", 2)], set={"seq": None, "v": "null-seq"}) == 0  # nulls sort first
    assert rows(table) == STORED
    assert table.update([("id", "in", [1, 2, 3, 4])], set={"seq": pc.field("seq") - 1, "v": "minus"}) == 1
    assert rows(table) == {**STORED, 4: (None, "minus")}  # null - 1 is null: not lower than null
    table.compact(full=True)
    assert rows(table) == {**STORED, 4: (None, "minus")}


def test_an_update_to_an_equal_or_higher_sequence_or_of_other_columns_is_made(table: mp.Table) -> None:
    assert table.update([("id", "=", 1)], set={"seq": 10, "v": "same"}) == 1
    assert table.update([("id", "=", 2)], set={"seq": 11, "v": "higher"}) == 1
    assert table.update([("id", "=", 3)], set={"v": "other column"}) == 1
    assert table.update([("id", "=", 4)], set={"seq": 1}) == 1  # above null
    want = {1: (10, "same"), 2: (11, "higher"), 3: (10, "other column"), 4: (1, "d")}
    assert rows(table) == want
    table.compact(full=True)
    assert rows(table) == want


def test_a_merge_counts_only_the_updates_that_win(table: mp.Table) -> None:
    r = merge_update(table, {"id": [1, 2, 3, 5], "seq": [9, 11, 10, 1], "v": ["low", "high", "tie", "new"]})
    assert (r.inserted, r.updated, r.deleted) == (1, 2, 0)
    want = {1: (10, "a"), 2: (11, "high"), 3: (10, "tie"), 4: (None, "d"), 5: (1, "new")}
    assert rows(table) == want
    table.compact(full=True)
    assert rows(table) == want


def test_a_merge_insert_under_a_delete_with_a_higher_sequence_is_not_counted(table: mp.Table) -> None:
    assert table.delete([("id", "in", [1, 2])]) == 2  # deletes that keep sequence value 10
    for full in (False, True):
        r = merge_update(table, {"id": [1, 2], "seq": [3, 10], "v": ["older", "tie"]})
        assert (r.inserted, r.updated, r.deleted) == (1, 0, 0)  # id 1 loses to its delete
        assert rows(table) == {2: (10, "tie"), 3: (10, "c"), 4: (None, "d")}
        table.delete([("id", "=", 2)])
        table.compact(full=full)
