"""File pruning over arrays of stats decides exactly as the per-file ``might_match``."""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from minipaimon_core.expressions import predicate
from minipaimon_core.expressions.stats_filter import may_match
from minipaimon_core.format.manifest_file import DataFileMeta, SimpleStats

# f mixes int and float stats (an int column evolved to double); s is missing from the files
# of schema 0; d holds decimals past 64 bits (unscaled integers).
SCHEMA = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("b", pa.binary()),
                    ("t", pa.bool_()), ("d", pa.decimal128(38, 0))])
POSITIONS = {0: {"i": 0, "f": 1, "b": 2, "t": 3, "d": 4},
             1: {"i": 0, "f": 1, "s": 2, "b": 3, "t": 4, "d": 5}}


def _value(rng: random.Random, column: str) -> Any:
    if column == "i":
        return rng.choice([rng.randint(-5, 5), rng.choice([-(2**63), 2**63 - 1])])
    if column == "f":  # NaN and infinities: as literals and as (another writer's) stats
        return rng.choice([rng.randint(-5, 5), rng.uniform(-5, 5), -0.0, 2.0**53 + 1, math.nan, math.inf])
    if column == "s":
        return rng.choice(["", "a", "ab", "b", "é", "z", "\U0001f600"])
    if column == "b":
        return rng.choice([b"", b"\x00", b"a", b"\xff", b"ab"])
    if column == "t":
        return rng.random() < 0.5
    return rng.choice([rng.randint(-5, 5), 10**30, -(10**30)])


def _stats(rng: random.Random, column: str, rows: int) -> tuple[Any, Any, int]:
    nulls = rng.choice([0, 0, 1, rows])
    if nulls == rows or rng.random() < 0.1:
        return None, None, nulls  # all null, or unknown min/max
    a, b = _value(rng, column), _value(rng, column)
    if column == "f" and rng.random() < 0.7:  # most f stats are floats
        a, b = float(a), float(b)
    lo, hi = min(a, b), max(a, b)
    if rng.random() < 0.05:
        lo = None  # a one-sided range
    return lo, hi, nulls


def _file(rng: random.Random, n: int) -> DataFileMeta:
    schema_id = rng.choice([0, 1, 1, 2])  # schema 2: no stats positions at all
    rows = rng.choice([1, 3, 10])
    columns = [c for c, _ in sorted(POSITIONS.get(schema_id, {}).items(), key=lambda kv: kv[1])]
    if rng.random() < 0.05:
        columns = columns[:2]  # stats of only the first columns
    stats = [_stats(rng, c, rows) for c in columns]
    return DataFileMeta(
        fileName=f"f{n}", fileSize=1, rowCount=rows, minKey=(), maxKey=(),
        valueStats=SimpleStats(tuple(s[0] for s in stats), tuple(s[1] for s in stats),
                               tuple(s[2] for s in stats)),
        minSequenceNumber=0, maxSequenceNumber=0, schemaId=schema_id, level=0, creationTime=0)


def _literal(rng: random.Random, column: str) -> Any:
    v = _value(rng, column)
    if column == "f":
        return float(v) if rng.random() < 0.8 else v
    if column == "d":
        return Decimal(v)
    return v


def _term(rng: random.Random) -> tuple:
    column = rng.choice(SCHEMA.names)
    op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"])
    if op in ("in", "not in"):
        return (column, op, [_literal(rng, column) for _ in range(rng.randint(1, 3))])
    if op in ("is null", "is not null"):
        return (column, op)
    return (column, op, _literal(rng, column))


def _lookup(file: DataFileMeta) -> predicate.StatsLookup:
    positions = POSITIONS.get(file.schemaId, {})

    def lookup(column: str) -> tuple[Any, Any, int, int] | None:
        i = positions.get(column)
        s = file.valueStats
        if i is None or i >= len(s.nullCounts):
            return None
        return s.minValues[i], s.maxValues[i], s.nullCounts[i], file.rowCount
    return lookup


@pytest.mark.parametrize("seed", range(40))
def test_array_decision_equals_the_per_file_one(seed: int) -> None:
    rng = random.Random(seed)
    files = [_file(rng, n) for n in range(rng.choice([1, 7, 200]))]
    for _ in range(25):
        raw = [[_term(rng) for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(1, 3))]
        dnf = predicate.normalize(raw, SCHEMA)
        columns = rng.choice([None, ["i"], ["s", "f"]])
        expected = [predicate.might_match(dnf, _lookup(f), columns) for f in files]
        assert may_match(dnf, files, POSITIONS, columns).tolist() == expected, raw


def test_no_filter_or_no_files() -> None:
    assert may_match(None, [_file(random.Random(0), 0)], POSITIONS).tolist() == [True]
    dnf = predicate.normalize([("i", "=", 1)], SCHEMA)
    assert may_match(dnf, [], POSITIONS).tolist() == []


def test_prunes_by_range_on_arrays() -> None:
    """The common case (one stats type, literal of that type) prunes: a check that the
    array path is the one taken is that the answer is exact, not all True."""
    files = [DataFileMeta(fileName=f"f{k}", fileSize=1, rowCount=10, minKey=(), maxKey=(),
                          valueStats=SimpleStats((k * 10, None, "a", b"", False, 0),
                                                 (k * 10 + 9, None, "z", b"", True, 0), (0,) * 6),
                          minSequenceNumber=0, maxSequenceNumber=0, schemaId=1, level=0, creationTime=0)
             for k in range(100)]
    dnf = predicate.normalize([[("i", ">=", 500), ("i", "<", 520)], [("i", "in", [5, 995])]], SCHEMA)
    assert [k for k, m in enumerate(may_match(dnf, files, POSITIONS)) if m] == [0, 50, 51, 99]


def test_a_null_count_left_out_makes_a_files_stats_unknown() -> None:
    """pypaimon writes stats without null counts (None): such a file is kept, never a crash
    (a filtered scan of a pypaimon-written table once raised TypeError here)."""
    def file(k: int, null_count: int | None) -> DataFileMeta:
        return DataFileMeta(fileName=f"f{k}", fileSize=1, rowCount=10, minKey=(), maxKey=(),
                            valueStats=SimpleStats((k * 10, None, "a", b"", False, 0),
                                                   (k * 10 + 9, None, "z", b"", True, 0),
                                                   (null_count, 0, 0, 0, 0, 0)),
                            minSequenceNumber=0, maxSequenceNumber=0, schemaId=1, level=0, creationTime=0)

    files = [file(0, None), file(1, 0), file(2, None), file(3, 0)]
    for flt, kept in (([("i", "=", 35)], [0, 2, 3]), ([("i", "is null")], [0, 2]),
                      ([("i", "is not null")], [0, 1, 2, 3])):
        dnf = predicate.normalize(flt, SCHEMA)
        assert [k for k, m in enumerate(may_match(dnf, files, POSITIONS)) if m] == kept, flt
