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


RENAMED = {"f": "g"}  # the evolved table's name of an original column


def _evolved_rows(rng: random.Random, ids: list[int], centre: int, t: mp.Table) -> pa.Table:
    """:func:`_rows` in the table's current schema (dropped, renamed, widened, re-added)."""
    rows = _rows(rng, ids, centre)
    originals = {v: k for k, v in RENAMED.items()}
    return pa.table({f.name: rows.column(originals.get(f.name, f.name)).cast(f.type) for f in t.schema()})


@pytest.mark.parametrize("pk", [False, True], ids=["append", "primary-key"])
@pytest.mark.parametrize("seed", range(3))
def test_pruned_scan_equals_full_read_across_schema_changes(tmp_path, pk, seed):
    """Files of five schemas (a column dropped, renamed, widened and a new one of the
    dropped name added): pruning by each file's stats, found by field id, keeps every row
    the filter matches and no other."""
    rng = random.Random(100 + seed * 2 + pk)
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"] if pk else None,
                        options={"bucket": "2"} if pk else None)
    changes = [lambda: None, lambda: t.drop_column("s"), lambda: t.rename_column("f", "g"),
               lambda: t.alter_column_type("i", pa.int64()), lambda: t.add_column("s", pa.string()),
               lambda: None]
    next_id = 0
    for step, change in enumerate(changes):
        change()
        for _ in range(2):  # two files of each schema
            n = rng.randint(1, 6)
            ids = rng.sample(range(20), n) if pk else list(range(next_id, next_id + n))
            next_id += n
            t.write(_evolved_rows(rng, sorted(ids), rng.randint(-8, 8), t))
        if pk and step == 3:
            t.compact(full=True)
    assert [f.name for f in t.schema()] == ["id", "i", "d", "ts", "g", "dec", "p", "s"]
    originals = {v: k for k, v in RENAMED.items()}
    full = [{originals.get(k, k): v for k, v in r.items()} for r in t.to_arrow().to_pylist()]
    for _ in range(60):
        f = _random_filter(rng, [originals.get(n, n) for n in t.schema().names], rng.randint(-8, 8))
        expected = sorted((r for r in full if any(all(_matches(r, term) for term in g) for g in f)), key=_key)
        evolved = [[(RENAMED.get(term[0], term[0]), *term[1:]) for term in g] for g in f]
        got = [{originals.get(k, k): v for k, v in r.items()} for r in t.scan(filter=evolved).to_arrow().to_pylist()]
        assert sorted(got, key=_key) == expected, f
