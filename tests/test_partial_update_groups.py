"""Partial-update sequence groups (``fields.<s>.sequence-group``): cases of one key, then
seeded random keys against a per-row oracle written from Paimon 0.9's
PartialUpdateMergeFunction (its updateWithSequenceGroup / retractWithSequenceGroup, field
by field in schema order; the engine computes each group's winner at once), then a table:
options checked at creation, reads of some columns, writes of retractions."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError
from minipaimon_core.lsm.merge_engines import SEQUENCE, VALUE_KIND, MergeConfig, merge

KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s1", pa.int64()),
                    ("a", pa.string()), ("total", pa.int64()), ("s2", pa.int32()),
                    ("s3", pa.int32()), ("c", pa.string()), ("e", pa.string()),
                    ("m", pa.int64())])
OPTIONS = {"merge-engine": "partial-update", "fields.s1.sequence-group": "a,total",
           "fields.s2,s3.sequence-group": "c", "fields.total.aggregate-function": "sum",
           "fields.m.aggregate-function": "max"}
FIELDS = SCHEMA.names[1:]
GROUPS = {"s1": ("s1",), "a": ("s1",), "total": ("s1",), "s2": ("s2", "s3"),
          "s3": ("s2", "s3"), "c": ("s2", "s3")}
AGGS = {"total": "sum", "m": "max"}


def table(rows: list[tuple[Any, ...]]) -> pa.Table:
    """Rows are (kind, id, s1, a, total, s2, s3, c, e, m), in merge order."""
    cols = {f.name: pa.array([r[i + 1] for r in rows], f.type) for i, f in enumerate(SCHEMA)}
    cols[SEQUENCE] = pa.array(np.arange(len(rows)), pa.int64())
    cols[VALUE_KIND] = pa.array([KINDS[r[0]] for r in rows], pa.int8())
    return pa.table(cols)


def merged(rows: list[tuple[Any, ...]], keep_deletes: bool = False) -> list[dict[str, Any]]:
    config = MergeConfig.from_options(["id"], OPTIONS)
    out = merge(table(rows), config, keep_deletes=keep_deletes)
    return [{k: r[k] for k in ["id", *FIELDS]} for r in out.to_pylist()]


def row(id_: int, s1: Any = None, a: Any = None, total: Any = None, s2: Any = None,
        s3: Any = None, c: Any = None, e: Any = None, m: Any = None) -> dict[str, Any]:
    return {"id": id_, "s1": s1, "a": a, "total": total, "s2": s2, "s3": s3, "c": c, "e": e, "m": m}


CASES = [
    # each group follows its own sequence; a row whose sequence fields are all null
    # leaves the group alone; a newer row sets the group's columns, nulls too
    ([("+I", 1, 1, "a1", 10, None, None, None, "e1", 5),
      ("+I", 1, None, "ignored", 100, 1, 1, "c1", None, 7)],
     [row(1, 1, "a1", 10, 1, 1, "c1", "e1", 7)]),
    ([("+I", 1, 5, "new", 1, None, None, None, None, None),
      ("+I", 1, 3, "old", 2, None, None, None, None, None)],
     [row(1, 5, "new", 3)]),  # an older row: not applied, but summed
    ([("+I", 1, 5, "x", 1, None, None, None, None, None),
      ("+I", 1, 5, None, 1, None, None, None, None, None)],
     [row(1, 5, None, 2)]),  # a tie: the later row wins, its null too
    # several sequence fields compare in order, nulls first
    ([("+I", 1, None, None, None, 2, 0, "two", None, None),
      ("+I", 1, None, None, None, None, 9, "null-first", None, None)],
     [row(1, s2=2, s3=0, c="two")]),
    # a retraction with the largest sequence clears its group's columns (not the others)
    ([("+I", 1, 1, "a", 10, 1, 1, "c", "e", 3),
      ("-U", 1, 2, "a", 10, None, None, None, "e", 9)],
     [row(1, 2, None, 0, 1, 1, "c", "e", 3)]),
    ([("+I", 1, 3, "a", 10, None, None, None, None, None),
      ("-D", 1, 2, "old", 4, None, None, None, None, None)],
     [row(1, 3, "a", 6)]),  # an older retraction: the group stays; sum retracts anyway
    # a key of one row is not merged: a lone retraction is dropped by a read
    ([("-D", 1, 1, "a", 1, 1, 1, "c", "e", 1)], []),
    ([("-D", 1, 1, "a", 1, 1, 1, "c", "e", 1), ("+I", 1, None, None, None, 2, 2, "c2", "e2", None)],
     [row(1, 1, None, -1, 2, 2, "c2", "e2")]),  # a retraction of the null state: sum -1
]


@pytest.mark.parametrize(("rows", "want"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_sequence_groups_merge_as_paimon(rows: list[tuple[Any, ...]], want: list[dict[str, Any]]) -> None:
    assert merged(rows) == want


def test_a_lone_retraction_is_kept_by_a_compaction_that_keeps_deletes() -> None:
    config = MergeConfig.from_options(["id"], OPTIONS)
    out = merge(table([("-U", 1, 1, "a", 1, 1, 1, "c", "e", 1)]), config, keep_deletes=True)
    assert out.column(VALUE_KIND).to_pylist() == [1]


# ------------------------------------------------------------------ the per-row oracle


def _older(kv: dict[str, Any], row: dict[str, Any], seq: tuple[str, ...]) -> bool:
    """Paimon's comparator: the sequence fields in order, nulls first; True if kv < row."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple((0, 0) if r[s] is None else (1, r[s]) for s in seq)
    return key(kv) < key(row)


def _agg(fn: str, acc: Any, v: Any, retract: bool = False) -> Any:
    if v is None:
        return acc
    if fn == "sum":
        return (0 if acc is None else acc) + (-v if retract else v)
    return v if acc is None else max(acc, v)


def oracle(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if len(rows) == 1:  # not merged
        return None if rows[0]["kind"] in ("-U", "-D") else {k: rows[0][k] for k in ["id", *FIELDS]}
    acc: dict[str, Any] = {f: None for f in FIELDS}
    for kv in rows:
        retract = kv["kind"] in ("-U", "-D")
        updated: set[str] = set()
        for f in FIELDS:
            seq, fn = GROUPS.get(f), AGGS.get(f)
            if seq is None:
                if not retract:
                    acc[f] = _agg(fn, acc[f], kv[f]) if fn else (kv[f] if kv[f] is not None else acc[f])
                continue
            if all(kv[s] is None for s in seq):
                continue
            if not _older(kv, acc, seq):
                if f in seq:
                    for s in seq:
                        if not (retract and s in updated):
                            acc[s] = kv[s]
                            updated.add(s)
                    if not retract:
                        acc[f] = kv[f] if fn is None else _agg(fn, acc[f], kv[f])
                elif retract:
                    acc[f] = None if fn is None else _agg(fn, acc[f], kv[f], True)
                else:
                    acc[f] = kv[f] if fn is None else _agg(fn, acc[f], kv[f])
            elif fn is not None:
                acc[f] = _agg(fn, acc[f], kv[f], retract)
    return {"id": rows[0]["id"], **acc}


@pytest.mark.parametrize("seed", range(30))
def test_random_keys_merge_as_the_oracle(seed: int) -> None:
    rng = random.Random(seed)

    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.3 else v

    rows = []
    for key in range(40):
        for _ in range(rng.randrange(1, 7)):
            rows.append({"kind": rng.choice(["+I", "+I", "+U", "-U", "-D"]), "id": key,
                         "s1": maybe(rng.randrange(4)), "a": maybe(rng.choice("xyz")),
                         "total": maybe(rng.randrange(10)), "s2": maybe(rng.randrange(3)),
                         "s3": maybe(rng.randrange(3)), "c": maybe(rng.choice("pq")),
                         "e": maybe(rng.choice("uv")), "m": maybe(rng.randrange(10))})
    want = [w for key in range(40)
            if (w := oracle([r for r in rows if r["id"] == key])) is not None and key in
            {r["id"] for r in rows}]
    got = merged([(r["kind"], *[r[f] for f in SCHEMA.names]) for r in rows])
    assert got == want


# ------------------------------------------------------------------ a table


def test_a_table_checks_its_groups_at_creation(tmp_path: Path) -> None:
    def create(options: dict[str, str]) -> None:
        mp.create_table(str(tmp_path / f"t{len(list(tmp_path.iterdir()))}"), SCHEMA,
                        primary_key=["id"], options={"bucket": "1", **options})

    bad = [
        ({**OPTIONS, "fields.s2,s3.sequence-group": "a"}, "already in the group"),
        ({**OPTIONS, "fields.s1.sequence-group": "nope"}, "'nope' is not a column"),
        ({**OPTIONS, "fields.a.sequence-group": "c"}, "sequence field 'a' has type string"),
        ({**OPTIONS, "fields.s1.aggregate-function": "sum"}, "sequence field"),
        ({**OPTIONS, "fields.total.aggregate-function": "last_non_null_value"}, "'last_non_null_value' in a partial-update"),
        ({**OPTIONS, "partial-update.remove-record-on-delete": "true"}, "conflict"),
        ({"merge-engine": "aggregation", "fields.s1.sequence-group": "a"}, "needs 'merge-engine' = 'partial-update'"),
        ({"merge-engine": "partial-update", "fields.m.aggregate-function": "max"}, "needs sequence groups"),
    ]
    for options, message in bad:
        with pytest.raises(UnsupportedOptionError, match=message):
            create(options)
    assert list(tmp_path.iterdir()) == []


def test_reads_writes_and_compactions_follow_the_groups(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", **OPTIONS})
    kinded = SCHEMA.append(pa.field("_row_kind", pa.string()))

    def write(rows: list[tuple[Any, ...]]) -> None:
        cols = {n: [r[i + 1] for r in rows] for i, n in enumerate(SCHEMA.names)}
        t.write(pa.table({**cols, "_row_kind": [r[0] for r in rows]}, schema=kinded))

    write([("+I", 1, 5, "a5", 1, 1, 1, "c1", "e1", 1), ("+I", 2, 1, "x", 1, None, None, None, None, 2)])
    write([("+I", 1, 3, "old", 2, 2, 0, "c2", None, 9), ("-D", 2, 2, None, 1, None, None, None, None, None)])
    want = [row(1, 5, "a5", 3, 2, 0, "c2", "e1", 9), row(2, 2, None, 0, m=2)]
    assert t.to_arrow().sort_by("id").to_pylist() == want
    # a read of some columns reads their groups' sequence fields too
    assert t.scan(columns=["id", "a", "c"]).to_arrow().sort_by("id").to_pylist() == [
        {k: w[k] for k in ("id", "a", "c")} for w in want]
    # the keys alone, and count(): no group's columns are read, so no winner is needed
    # (was KeyError 'Field "s1" does not exist in schema')
    assert t.scan(columns=["id"]).to_arrow().sort_by("id").to_pylist() == [{"id": 1}, {"id": 2}]
    assert t.scan(columns=["id", "e"]).to_arrow().sort_by("id").column("e").to_pylist() == ["e1", None]
    assert t.count() == 2
    t.compact(full=True)
    assert t.to_arrow().sort_by("id").to_pylist() == want
    plain = mp.create_table(str(tmp_path / "plain"), SCHEMA, primary_key=["id"],
                            options={"bucket": "1", "merge-engine": "partial-update"})
    with pytest.raises(InvalidArgumentError, match="sequence groups"):
        plain.write(pa.table({"id": [1], **{f.name: pa.nulls(1, f.type) for f in SCHEMA
                                            if f.name != "id"}, "_row_kind": ["-D"]}))
    assert plain.latest_snapshot() is None
