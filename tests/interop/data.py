"""Deterministic data of the interop tests: key-value batches (seeded) and the type table."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa

DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")

#: id, a name, a score, a partition day (the primary key of partitioned tables is (id, dt))
KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                ("score", pa.float64()), pa.field("dt", pa.string(), nullable=False)])


def kv(ids: list[int], tag: str, kinds: list[str] | None = None) -> pa.Table:
    """Rows for ``ids`` (partition day by id), names ``<tag>-<id>``; ``kinds`` adds
    ``_row_kind`` (+I/-D...) for minipaimon's writes."""
    table = pa.table({"id": ids, "name": [f"{tag}-{i}" for i in ids],
                      "score": [i * 1.5 for i in ids], "dt": [DAYS[i % len(DAYS)] for i in ids]},
                     schema=KV)
    if kinds is not None:
        table = table.append_column("_row_kind", pa.array(kinds, pa.string()))
    return table


def random_ops(seed: int, n_keys: int, batches: int, size: int) -> list[tuple[list[int], list[str]]]:
    """Seeded batches of (ids, kinds): upserts (+I) and some deletes (-D), each key at most
    once per batch."""
    rng = random.Random(seed)
    out = []
    for _ in range(batches):
        ids = sorted(rng.sample(range(n_keys), size))
        out.append((ids, ["-D" if rng.random() < 0.15 else "+I" for _ in ids]))
    return out


class KeyModel:
    """A plain-Python model of a deduplicate primary-key table: key -> row."""

    def __init__(self, key: tuple[str, ...] = ("id", "dt")) -> None:
        self.key = key
        self.rows: dict[tuple[Any, ...], dict[str, Any]] = {}

    def apply(self, table: pa.Table) -> None:
        for r in table.to_pylist():
            kind = r.pop("_row_kind", "+I")
            k = tuple(r[c] for c in self.key)
            if kind in ("-D", "-U"):
                self.rows.pop(k, None)
            else:
                self.rows[k] = r

    def table(self, schema: pa.Schema) -> pa.Table:
        return pa.Table.from_pylist(list(self.rows.values()), schema=schema)


def types_schema(primary_key: bool = False) -> pa.Schema:
    """Every column type minipaimon writes in Paimon's format."""
    return pa.schema([
        pa.field("id", pa.int32(), nullable=False),
        ("c_tinyint", pa.int8()), ("c_smallint", pa.int16()), ("c_int", pa.int32()),
        ("c_bigint", pa.int64()), ("c_float", pa.float32()), ("c_double", pa.float64()),
        ("c_dec_9", pa.decimal128(9, 2)), ("c_dec_18", pa.decimal128(18, 4)),
        ("c_dec_38", pa.decimal128(38, 10)), ("c_dec_38_0", pa.decimal128(38, 0)),
        ("c_string", pa.string()), ("c_binary", pa.binary()), ("c_boolean", pa.bool_()),
        ("c_date", pa.date32()), ("c_ts_ms", pa.timestamp("ms")), ("c_ts_us", pa.timestamp("us")),
        ("c_ltz_ms", pa.timestamp("ms", tz="UTC")), ("c_ltz_us", pa.timestamp("us", tz="UTC")),
        ("c_array", pa.list_(pa.int32())), ("c_array_string", pa.list_(pa.string())),
        ("c_map", pa.map_(pa.string(), pa.int64())),
        ("c_struct", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("c_nested", pa.list_(pa.struct([("x", pa.int64()), ("tags", pa.list_(pa.string()))]))),
    ])


def _utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.timezone.utc)  # type: ignore[misc]


def types_rows(ids: list[int], variant: int = 0) -> pa.Table:
    """Rows of the type table: extremes, unicode, empties, and all nulls (id 3); ``variant``
    changes the values (for updates of a primary-key type table)."""
    base = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    v = variant
    rows: dict[int, dict[str, Any]] = {
        0: {"c_tinyint": -128, "c_smallint": -32768, "c_int": -2147483648,
            "c_bigint": -9223372036854775808, "c_float": float("-inf"), "c_double": -1.7976931348623157e308,
            "c_dec_9": Decimal("-9999999.99"), "c_dec_18": Decimal("-99999999999999.9999"),
            "c_dec_38": Decimal("-9999999999999999999999999999.9999999999"),
            "c_dec_38_0": Decimal("-" + "9" * 38),
            "c_string": "", "c_binary": b"", "c_boolean": False, "c_date": dt.date(1900, 1, 1),
            "c_ts_ms": dt.datetime(1900, 1, 1, 0, 0, 0, 1000), "c_ts_us": dt.datetime(1900, 1, 1, 0, 0, 0, 1),
            "c_ltz_ms": _utc(1969, 12, 31, 23, 59, 59, 999000), "c_ltz_us": _utc(1970, 1, 1, 0, 0, 0, 1),
            "c_array": [], "c_array_string": [], "c_map": [], "c_struct": {"a": None, "b": None},
            "c_nested": []},
        1: {"c_tinyint": 127, "c_smallint": 32767, "c_int": 2147483647,
            "c_bigint": 9223372036854775807, "c_float": float("inf"), "c_double": 1.7976931348623157e308,
            "c_dec_9": Decimal("9999999.99"), "c_dec_18": Decimal("99999999999999.9999"),
            "c_dec_38": Decimal("9999999999999999999999999999.9999999999"),
            "c_dec_38_0": Decimal("9" * 38),
            "c_string": "ünïcødé ✓ 日本語 🦆 e\u0301", "c_binary": bytes(range(256)),
            "c_boolean": True, "c_date": dt.date(9999, 12, 31),
            "c_ts_ms": dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
            "c_ts_us": dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
            "c_ltz_ms": _utc(2038, 1, 19, 3, 14, 8), "c_ltz_us": _utc(2100, 2, 28, 12, 0, 0, 999999),
            "c_array": [1, None, -3], "c_array_string": ["a", None, "ü"],
            "c_map": [("k1", 1), ("k2", None), ("ключ", -9223372036854775808)],
            "c_struct": {"a": 7, "b": "x"},
            "c_nested": [{"x": 1, "tags": ["p", "q"]}, {"x": None, "tags": None}, None]},
        2: {"c_tinyint": 0, "c_smallint": 1, "c_int": 2, "c_bigint": 3, "c_float": float("nan"),
            "c_double": 0.1, "c_dec_9": Decimal("0.01"), "c_dec_18": Decimal("-0.0001"),
            "c_dec_38": Decimal("-0.0000000001"), "c_dec_38_0": Decimal("0"),
            "c_string": "hello", "c_binary": b"\x00\xff\x00", "c_boolean": True,
            "c_date": dt.date(1970, 1, 1), "c_ts_ms": base.replace(microsecond=123000), "c_ts_us": base,
            "c_ltz_ms": base.replace(microsecond=123000, tzinfo=dt.timezone.utc),
            "c_ltz_us": base.replace(tzinfo=dt.timezone.utc),
            "c_array": [5], "c_array_string": [""], "c_map": [("", 0)], "c_struct": {"a": None, "b": "only b"},
            "c_nested": [{"x": -1, "tags": []}]},
    }
    out = []
    for i in ids:
        if i % 4 == 3:
            row = {name: None for name in types_schema().names}
        else:
            row = dict(rows[i % 4])
            if v:
                row["c_int"] = (row["c_int"] or 0) // 2 + v
                row["c_string"] = f"{row['c_string']} v{v}"
        row["id"] = i
        out.append(row)
    return pa.Table.from_pylist(out, schema=types_schema())
