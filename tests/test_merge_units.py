"""A merge cut into units (minipaimon_core.dml.merge_units, what Spark's executors run) gives the
same table as the same merge run whole (``Table.merge``), and its commit makes the same
conflict checks. The "engine" here is a plain Arrow join standing in for Spark's."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.dml.merge_into import MergeClauses
from minipaimon_core.dml.merge_units import (
    ROW,
    UNIT,
    change_unit,
    commit_units,
    insert_rows_of,
    plan_merge,
    unit_keys,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64())])
CONFIGS = {
    "append": {},
    "append-bucketed": {"bucket": "3", "bucket-key": "id"},
    "append-dv": {"deletion-vectors.enabled": "true"},
    "primary-key": {"primary-key": "id,p", "bucket": "2"},
    "primary-key-dv": {"primary-key": "id,p", "bucket": "2", "deletion-vectors.enabled": "true"},
    # updates to a lower v are dropped, inserts under a delete of a higher v too (dml_sequence)
    "primary-key-sequence": {"primary-key": "id,p", "bucket": "2", "sequence.field": "v"},
}


def create(path: Path, config: str) -> mp.Table:
    options = dict(CONFIGS[config])
    keys = options.pop("primary-key", None)
    return mp.create_table(str(path), SCHEMA, partition_by=["p"],
                           primary_key=keys.split(",") if keys else None, options=options)


def clauses(builder: Any) -> Any:
    return (builder.when_matched_delete(condition=pc.field("source.v") < 0)
            .when_matched_update(set={"v": pc.field("target.v") + pc.field("source.v")},
                                 condition=pc.field("target.v") < 500)
            .when_not_matched_insert_all(condition=pc.field("source.v") != 7)
            .when_not_matched_by_source_delete(condition=pc.field("target.v") > 900)
            .when_not_matched_by_source_update(set={"v": pc.field("target.v") + 1000},
                                               condition=pc.field("target.v") < 50))


def run_in_units(table: mp.Table, source: pa.Table, on: list[str], builder: MergeClauses) -> Any:
    """The merge as an engine runs it: keys per unit, a join, one task per unit, inserts."""
    ctx = table.refresh().context()
    bounds = {c: (pc.min(source.column(c)).as_py(), pc.max(source.column(c)).as_py()) for c in on}
    plan = plan_merge(ctx, table.path, {}, builder._clauses, on, bounds)
    results = []
    keys = [k for i in range(len(plan.units)) if (k := unit_keys(plan, table.context(), i)) is not None]
    for i, unit_keys_table in enumerate(keys):
        matched = source.join(unit_keys_table, on, join_type="inner")
        results.append(change_unit(plan, table.context(), i, matched))
    every = pa.concat_tables(keys) if keys else None
    unmatched = source if every is None else source.join(every.select(on), on, join_type="left anti")
    results.append(insert_rows_of(plan, table.context(), unmatched, 0))
    return plan, results


def rows(table: mp.Table) -> list[tuple[Any, ...]]:
    t = table.refresh().to_arrow()
    return sorted(zip(*(t.column(c).to_pylist() for c in SCHEMA.names)))


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_merge_in_units_equals_the_merge_run_whole(tmp_path: Path, config: str) -> None:
    rng = random.Random(7)
    whole = create(tmp_path / "whole", config)
    for batch in range(3):
        ids = rng.sample(range(300), 120)
        data = pa.table({"id": ids, "p": [f"p{i % 3}" for i in ids], "v": [rng.randrange(1000) for _ in ids]},
                        schema=SCHEMA)
        if not CONFIGS[config].get("primary-key"):
            data = data.filter(pc.is_in(data.column("id"), pa.array(range(batch * 100, batch * 100 + 100))))
        whole.write(data)
    shutil.copytree(tmp_path / "whole", tmp_path / "units")
    units = mp.open_table(str(tmp_path / "units"))
    for round_ in range(4):
        ids = rng.sample(range(400), 60)
        source = pa.table({"id": ids, "p": [f"p{i % 3}" for i in ids],
                           "v": [rng.choice([-1, 7, rng.randrange(100)]) for _ in ids]}, schema=SCHEMA)
        want = clauses(whole.merge(source, on=["id", "p"])).execute()
        plan, results = run_in_units(units, source, ["id", "p"], clauses(MergeClauses(["id", "p"])))
        got = commit_units(units.refresh().context(), plan, results)
        assert got == want, f"round {round_}"
        assert rows(units) == rows(whole), f"round {round_}"


def test_a_unit_error_is_raised_typed_and_every_unit_file_is_deleted(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "append")
    t.write(pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"], "v": [1, 2, 3]}, schema=SCHEMA))
    before = {p for p in (tmp_path / "t").rglob("*") if p.is_file()}
    source = pa.table({"id": [1, 1, 3, 9], "p": ["a", "a", "c", "z"], "v": [5, 6, 7, 8]}, schema=SCHEMA)
    builder = MergeClauses(["id", "p"]).when_matched_update_all().when_not_matched_insert_all()
    plan, results = run_in_units(t, source, ["id", "p"], builder)
    assert any(r.messages for r in results)  # units without the duplicate wrote their files
    with pytest.raises(mp.InvalidArgumentError, match="several source rows match one target row"):
        commit_units(t.refresh().context(), plan, results)
    assert {p for p in (tmp_path / "t").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("config", ["append", "primary-key"])
def test_a_concurrent_change_of_the_units_rows_conflicts(tmp_path: Path, config: str) -> None:
    """Append: a compaction replaced a file a unit rewrote (FILES_GONE). Primary key: a writer
    wrote a key the merge deletes (ROWS_CHANGED). Either way the merge's files are deleted
    and the concurrent commit stands."""
    t = create(tmp_path / "t", config)
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "p": ["a", "a"], "v": [i, i]}, schema=SCHEMA))
    source = pa.table({"id": [1], "p": ["a"], "v": [-1]}, schema=SCHEMA)
    builder = MergeClauses(["id", "p"]).when_matched_delete()
    plan, results = run_in_units(t, source, ["id", "p"], builder)
    if config == "append":
        t.compact(full=True)
        reason = mp.ConflictReason.FILES_GONE
    else:
        t.write(pa.table({"id": [1], "p": ["a"], "v": [42]}, schema=SCHEMA))
        reason = mp.ConflictReason.ROWS_CHANGED
    latest = t.refresh().latest_snapshot().id  # type: ignore[union-attr]
    with pytest.raises(mp.CommitConflictError) as e:
        commit_units(t.refresh().context(), plan, results)
    assert e.value.reason == reason
    assert t.refresh().latest_snapshot().id == latest  # type: ignore[union-attr]
    written = {f.fileName for r in results for m in r.messages for f in m.newFiles}
    assert not any(name in {p.name for p in (tmp_path / "t").rglob("*")} for name in written)
    assert 1 in t.refresh().to_arrow().column("id").to_pylist()


def test_units_are_files_of_append_tables_and_buckets_of_primary_key_tables(tmp_path: Path) -> None:
    a = create(tmp_path / "a", "append")
    k = create(tmp_path / "k", "primary-key")
    for t in (a, k):
        for i in range(3):
            t.write(pa.table({"id": [i, i + 100], "p": ["x", "y"], "v": [i, i]}, schema=SCHEMA))
    everything = {"id": (0, 1000), "p": ("a", "z")}
    plan_a = plan_merge(a.context(), a.path, {}, [], ["id", "p"], everything)
    plan_k = plan_merge(k.context(), k.path, {}, [], ["id", "p"], everything)
    assert len(plan_a.units) == 6 and all(u.file is not None for u in plan_a.units)
    assert {(tuple(u.split.partition), u.split.bucket) for u in plan_k.units} == {
        (tuple(s.partition), s.bucket) for s in k.scan().plan()}
    keys = unit_keys(plan_a, a.context(), 0)
    assert keys is not None and keys.column_names == ["id", "p", UNIT, ROW]
    assert keys.column(ROW).to_pylist() == list(np.arange(keys.num_rows))
    with pytest.raises(mp.InvalidArgumentError, match="whole primary key"):
        plan_merge(k.context(), k.path, {}, [], ["id"], everything)


def test_a_schema_change_while_the_units_ran_conflicts(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "primary-key")
    t.write(pa.table({"id": [1, 2], "p": ["a", "a"], "v": [1, 2]}, schema=SCHEMA))
    builder = MergeClauses(["id", "p"]).when_matched_delete()
    plan, results = run_in_units(t, pa.table({"id": [1], "p": ["a"], "v": [0]}, schema=SCHEMA), ["id", "p"], builder)
    t.add_column("extra", pa.string())
    with pytest.raises(mp.CommitConflictError, match="schema changed") as e:
        commit_units(t.refresh().context(), plan, results)
    assert e.value.reason == mp.ConflictReason.ROWS_CHANGED
    # in the tasks: no keys, and the unit's result carries the conflict, typed (a Spark task
    # that raised would reach the driver as an untyped Spark error, never retried)
    assert unit_keys(plan, t.refresh().context(), 0) is None
    late = change_unit(plan, t.refresh().context(), 0, pa.table({"id": [1], "p": ["a"], "v": [0], ROW: [0]}))
    assert isinstance(late.error, mp.CommitConflictError) and "schema changed" in str(late.error)
    assert insert_rows_of(plan, t.refresh().context(), pa.table({"id": [9], "p": ["a"], "v": [0]}), 0).error is not None
    assert t.refresh().to_arrow().num_rows == 2
