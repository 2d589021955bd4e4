"""Seeded property test: a pruned, filtered scan returns exactly the rows of the full read
that the filter matches under SQL semantics, evaluated here independently in exact Python
arithmetic (every value and literal as a Fraction of seconds / units)."""

from __future__ import annotations

import datetime
import decimal
import random
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("i", pa.int32()),
    ("d", pa.date32()),
    ("ts", pa.timestamp("ms")),
    ("s", pa.string()),
    ("f", pa.float64()),
    ("dec", pa.decimal128(10, 2)),
    pa.field("p", pa.string(), nullable=False),
])
DAY0 = datetime.date(2024, 1, 1)
TS0 = datetime.datetime(2024, 1, 1)


def _maybe(rng: random.Random, v: Any) -> Any:
    return None if rng.random() < 0.15 else v


def _rows(rng: random.Random, ids: list[int], centre: int) -> pa.Table:
    """Values clustered around ``centre`` so that every commit has different stats."""
    def near(width: int) -> int:
        return centre + rng.randint(-width, width)
    cols = {
        "id": ids,
        "i": [_maybe(rng, near(3)) for _ in ids],
        "d": [_maybe(rng, DAY0 + datetime.timedelta(days=near(3))) for _ in ids],
        "ts": [_maybe(rng, TS0 + datetime.timedelta(milliseconds=near(3))) for _ in ids],
        "s": [_maybe(rng, chr(ord("m") + near(3))) for _ in ids],
        "f": [_maybe(rng, near(3) / 2) for _ in ids],
        "dec": [_maybe(rng, decimal.Decimal(near(300)).scaleb(-2)) for _ in ids],
        "p": [rng.choice("abc") for _ in ids],
    }
    return pa.table(cols, schema=SCHEMA)


def _literal(rng: random.Random, column: str, c: int) -> Any:
    """A literal of the column's type, of a finer one, or of a coarser one."""
    k = c + rng.randint(-5, 5)
    choices = {
        "id": [k, k + 0.5, 2**70, -(2**70), decimal.Decimal(k) + decimal.Decimal("0.25")],
        "i": [k, k + 0.5, 2**40, float(k), decimal.Decimal(k)],
        "d": [DAY0 + datetime.timedelta(days=k), TS0 + datetime.timedelta(days=k, hours=rng.randint(0, 23)),
              TS0 + datetime.timedelta(days=k)],
        "ts": [TS0 + datetime.timedelta(milliseconds=k), TS0 + datetime.timedelta(microseconds=k * 1000 + 1),
               TS0 + datetime.timedelta(microseconds=k * 1000 - 1), DAY0, int(TS0.timestamp() * 1000) + k],
        "s": [chr(ord("m") + k), chr(ord("m") + k) + "a"],
        "p": ["a", "b", "c", "bb"],
        "f": [k / 2, k, k / 2 + 0.01, decimal.Decimal(k)],
        "dec": [decimal.Decimal(k * 100 + rng.randint(-9, 9)).scaleb(-2), k, decimal.Decimal(k * 1000 + 5).scaleb(-3),
                k + 0.5],
    }
    return rng.choice(choices[column])


def _exact(v: Any, column: str) -> Any:
    """A value or literal as an exact number (str stays str) for the reference evaluator."""
    if isinstance(v, datetime.datetime):
        d = v - TS0
        return Fraction((d.days * 86400 + d.seconds) * 10**6 + d.microseconds, 10**6)
    if isinstance(v, datetime.date):
        return Fraction((v - DAY0).days * 86400)
    if column == "ts" and isinstance(v, int):  # an int literal is in the column's unit (ms)
        return Fraction(v, 1000) - Fraction(int(TS0.timestamp() * 1000), 1000)
    if isinstance(v, (int, float, decimal.Decimal)):
        return Fraction(v)
    return v


def _matches(row: dict[str, Any], term: tuple) -> bool:
    """SQL semantics: unknown (a null involved) counts as not matching."""
    column, op = term[0], term[1]
    x = row[column]
    if op == "is null":
        return x is None
    if op == "is not null":
        return x is not None
    if x is None:
        return False
    xv = _exact(x, column)
    if op in ("in", "not in"):
        vals = [_exact(v, column) for v in term[2] if v is not None]
        if op == "in":
            return xv in vals
        return None not in term[2] and xv not in vals
    lv = _exact(term[2], column)
    return {"=": xv == lv, "!=": xv != lv, "<": xv < lv, "<=": xv <= lv, ">": xv > lv, ">=": xv >= lv}[op]


def _random_filter(rng: random.Random, columns: list[str], c: int) -> list[list[tuple]]:
    groups = []
    for _ in range(rng.randint(1, 2)):
        group = []
        for _ in range(rng.randint(1, 3)):
            col = rng.choice(columns)
            op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"])
            if op in ("is null", "is not null"):
                group.append((col, op))
            elif op in ("in", "not in"):
                vals = [_literal(rng, col, c) for _ in range(rng.randint(1, 3))]
                if rng.random() < 0.2:
                    vals.append(None)
                group.append((col, op, vals))
            else:
                group.append((col, op, _literal(rng, col, c)))
        groups.append(group)
    return groups


def _key(row: dict[str, Any]) -> tuple:
    return tuple((v is None, repr(v)) for v in row.values())


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
@pytest.mark.parametrize("pk", [False, True], ids=["append", "primary-key"])
@pytest.mark.parametrize("seed", range(2))
def test_pruned_scan_equals_full_read_filtered(tmp_path, pk, partitioned, seed):
    rng = random.Random(seed * 4 + pk * 2 + partitioned)
    keys = ["id", "p"] if partitioned else ["id"]
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=keys if pk else None,
                        partition_by=["p"] if partitioned else None,
                        options={"bucket": "2"} if pk else None)
    next_id = 0
    for commit in range(6):  # several commits: every file has its own stats
        centre = rng.randint(-8, 8)
        n = rng.randint(1, 6)
        if pk:
            ids = rng.sample(range(20), n)  # upserts of keys written before
        else:
            ids = list(range(next_id, next_id + n))
            next_id += n
        t.write(_rows(rng, sorted(ids), centre))
        if pk and commit == 3:
            t.compact(full=True)
    full = t.to_arrow().to_pylist()
    columns = SCHEMA.names
    for _ in range(60):
        f = _random_filter(rng, columns, rng.randint(-8, 8))
        if pk and rng.random() < 0.3:
            key_term = rng.choice([("id", "<", 10.5), ("id", ">=", 4), ("id", "in", [3, 7.5, 12]),
                                   ("id", "not in", [5, 6])])
            f = [[key_term, *g] for g in f]  # a key range: files can be pruned on keys
        expected = sorted((r for r in full if any(all(_matches(r, term) for term in g) for g in f)), key=_key)
        got = sorted(t.scan(filter=f).to_arrow().to_pylist(), key=_key)
        assert got == expected, f
