"""Tables of the merge-engine interop tests: schemas, options and batches of rows with their
kinds (+I, -U, +U, -D), written by Paimon's Java engine 0.9 and by minipaimon.

Each :class:`Scenario` is one table: its batches are committed one by one (a full
compaction after the batches listed in ``compact_after``), then ``update`` is a batch of
updates and new keys written on top. The rows exercise what the merge rules decide:
retractions of a key that only ever received retractions (lone or several in one batch),
retractions merged with older rows, retractions before inserts, CDC-style -U/+U pairs,
nulls, out-of-order sequence values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa

Row = tuple[Any, ...]  # (kind, id, values...)


def nn(name: str, typ: pa.DataType) -> pa.Field:
    return pa.field(name, typ, nullable=False)


def rows(schema: pa.Schema, data: list[Row]) -> pa.Table:
    """``data`` as a table of ``schema`` plus ``_row_kind`` (each row's first value)."""
    cols: dict[str, list[Any]] = {f.name: [r[i + 1] for r in data] for i, f in enumerate(schema)}
    table = pa.table(cols, schema=schema)
    return table.append_column("_row_kind", pa.array([r[0] for r in data], pa.string()))


@dataclass(frozen=True)
class Scenario:
    name: str
    schema: pa.Schema
    options: dict[str, str]
    batches: list[pa.Table]
    update: pa.Table
    compact_after: tuple[int, ...] = ()
    #: list columns in Java's hash-set order (collect distinct, keyed nested_update): Java's
    #: reads compare them in order; paimon-rust 0.4 keeps first-added order, so its reads
    #: compare them as multisets
    hash_ordered: tuple[str, ...] = ()
    #: readers besides Java that implement the table's merge engine and options
    readers: tuple[str, ...] = ()
    #: minipaimon refuses to write these batches (retractions the table cannot take)
    java_writes_only: bool = False
    primary_keys: list[str] = field(default_factory=lambda: ["id"])


def agg(**functions: str) -> dict[str, str]:
    out = {"bucket": "1", "merge-engine": "aggregation"}
    for column, fn in functions.items():
        out[f"fields.{column}.aggregate-function"] = fn
    return out


# -- aggregation with retractions: every function that retracts, the others ignoring them

RETRACT = pa.schema([
    nn("id", pa.int64()), ("s", pa.int64()), ("si", pa.int32()), ("sd", pa.float64()),
    ("sdec", pa.decimal128(12, 2)), ("pd", pa.float64()), ("pi", pa.int32()),
    ("lv", pa.string()), ("lnn", pa.string()), ("mx", pa.int32()), ("mn", pa.string()),
    ("fv", pa.string()), ("fnn", pa.int32()), ("la", pa.string()), ("ba", pa.bool_()),
    ("dflt", pa.string()),
])
RETRACT_OPTIONS = {
    **agg(s="sum", si="sum", sd="sum", sdec="sum", pd="product", pi="product", lv="last_value",
          lnn="last_non_null_value", mx="max", mn="min", fv="first_value",
          fnn="first_non_null_value", la="listagg", ba="bool_and"),
    **{f"fields.{c}.ignore-retract": "true" for c in ("mx", "mn", "fv", "fnn", "la", "ba")},
    "fields.la.list-agg-delimiter": "|",
}


def retract_row(kind: str, i: int, x: int, text: str | None, flag: bool | None = True) -> Row:
    return (kind, i, x, x * 2, x * 0.5, Decimal(x) / 4, float(x) if x else 2.0, x or 2, text,
            text, x, text, text, x, text, flag, text)


RETRACT_BATCHES = [
    [retract_row("+I", i, i + 1, f"a{i}") for i in range(1, 7)]
    + [retract_row("-D", 7, 4, "lone"),  # a key whose only row is a retraction
       retract_row("-U", 8, 3, "u1"), retract_row("-U", 8, 2, "u2")],  # merged in the batch
    [retract_row("-U", 1, 2, "a1"), retract_row("+U", 1, 10, "b1", False),
     retract_row("-U", 2, 3, "a2"), retract_row("+U", 2, 7, None),
     retract_row("-D", 3, 4, "a3"), retract_row("+I", 4, 4, None, None),
     retract_row("+I", 9, 9, "n9"), retract_row("-D", 10, 2, "x"), retract_row("+I", 10, 3, "y"),
     retract_row("+I", 7, 2, "after")],  # merged with key 7's lone retraction
    [retract_row("-U", 11, 5, "lone-u"), retract_row("-U", 1, 10, "b1"),
     retract_row("+U", 1, 12, "c1"), retract_row("-D", 5, 6, None)],
]
RETRACT_UPDATE = [retract_row("-U", 2, 7, None), retract_row("+U", 2, 8, "upd"),
                  retract_row("-D", 6, 7, "a6"), retract_row("+I", 12, 12, "new"),
                  retract_row("-D", 13, 1, "lone"), retract_row("+I", 9, 1, None),
                  retract_row("-U", 7, 2, "after")]

# -- aggregation over collections (ARRAY, MAP, ARRAY<ROW>) with retractions

ITEM = pa.struct([("k", pa.int32()), ("v", pa.string())])
COLLECTIONS = pa.schema([
    nn("id", pa.int64()), ("c", pa.list_(pa.int32())), ("cd", pa.list_(pa.string())),
    ("m", pa.map_(pa.string(), pa.int32())), ("nk", pa.list_(ITEM)), ("nu", pa.list_(ITEM)),
])
COLLECTIONS_OPTIONS = {
    **agg(c="collect", cd="collect", m="merge_map", nk="nested_update", nu="nested_update"),
    "fields.cd.distinct": "true", "fields.nk.nested-key": "k",
}


def items(*pairs: tuple[int, str | None]) -> list[dict[str, Any]]:
    return [{"k": k, "v": v} for k, v in pairs]


COLLECTION_BATCHES = [
    [("+I", 1, [1, 2, 2], ["a", "b", "a"], [("x", 1), ("y", 2)], items((1, "a"), (2, "b")),
      items((1, "a"), (2, "b"))),
     ("+I", 2, [5], ["z"], [("k", 5)], items((7, "q")), items((7, "q"))),
     ("+I", 3, None, None, None, None, None),
     ("-D", 4, [1], ["a"], [("x", 1)], items((1, "a")), items((1, "a"))),  # lone
     ("+I", 5, [3, 3], ["d", "d"], [("a", 1)], items((1, "a"), (1, "b")),
      items((1, "a"), (1, "a")))],
    [("+I", 1, [2, 3], ["b", "c"], [("y", 20), ("z", 3)], items((2, "B"), (3, "c")),
      items((3, "c"))),
     ("-U", 1, [2], ["a"], [("x", 0)], items((1, "zzz")), items((1, "a"))),
     ("+U", 2, [6, 5], ["z", "y"], [("k", 6)], items((7, "r")), items((7, "q"))),
     ("+I", 3, [], [], [], [], []),
     ("-U", 5, [3], ["d"], [("a", 1)], items((1, "b")), items((1, "a"))),
     ("+I", 6, [9], ["n"], [("n", 9)], items((9, "n")), items((9, "n")))],
    [("-D", 2, [5, 5], ["z"], [("k", 1)], items((7, "x")), items((7, "q"))),
     ("+I", 1, [1], ["a"], [("x", 11)], items((1, "again")), items((1, "a"))),
     ("-U", 7, [1], ["a"], [("a", 1)], items((1, "a")), items((1, "a")))],
]
COLLECTION_UPDATE = [
    ("-U", 1, [2, 3], ["b"], [("y", 20)], items((2, "B")), items((3, "c"))),
    ("+U", 1, [4], ["e"], [("w", 4)], items((4, "d")), items((4, "d"))),
    ("+I", 8, [8, 8], ["h", "h"], [("h", 8)], items((8, "h")), items((8, "h"))),
    ("-D", 9, [1], ["a"], [("x", 1)], items((1, "a")), items((1, "a"))),
    ("+I", 6, None, ["n", "o"], [("n", 10)], None, items((9, "n")))]

# -- the element order of collect (distinct) and keyed nested_update: Java's hash sets and
#    maps (issue 38 item 10), per element type, through growing and shrinking tables

HASHED = pa.schema([
    nn("id", pa.int64()), ("cs", pa.list_(pa.string())), ("ci", pa.list_(pa.int32())),
    ("cl", pa.list_(pa.int64())), ("cdec", pa.list_(pa.decimal128(20, 2))),
    ("cts", pa.list_(pa.timestamp("us"))), ("cf", pa.list_(pa.float64())),
    ("nk", pa.list_(ITEM)),
    ("nk2", pa.list_(pa.struct([("a", pa.string()), ("b", pa.int64()), ("v", pa.int32())]))),
])
HASHED_OPTIONS = {
    **agg(cs="collect", ci="collect", cl="collect", cdec="collect", cts="collect", cf="collect",
          nk="nested_update", nk2="nested_update"),
    **{f"fields.{c}.distinct": "true" for c in ("cs", "ci", "cl", "cdec", "cts", "cf")},
    "fields.nk.nested-key": "k", "fields.nk2.nested-key": "a,b",
}


def hashed_row(kind: str, i: int, xs: Any) -> Row:
    """Key ``i``'s row of elements made from the integers ``xs`` in every column."""
    xs = list(xs)
    return (kind, i, [f"c{x}" for x in xs], xs, [x * 10**10 + x for x in xs],
            [Decimal(x) / 4 - 3 for x in xs],
            [datetime(2024, 1, 1) + timedelta(microseconds=1001 * x) for x in xs],
            [x * 0.5 - 1 for x in xs], items(*((x, f"v{x}") for x in xs)),
            [{"a": f"k{x % 7}", "b": x // 7, "v": x} for x in xs])


HASHED_BATCHES = [
    [hashed_row("+I", 1, [1, 0]),  # the issue: c1, c0, then c2, c3 read c3, c2, c1, c0
     hashed_row("+I", 2, range(20)),  # 20 elements: a table of 32 slots
     hashed_row("+I", 3, [5, 6, 7]), hashed_row("+I", 4, range(14))],
    [hashed_row("+I", 1, [2, 3]),
     hashed_row("-U", 2, range(10)),  # 10 left, in the 32-slot order
     hashed_row("+I", 3, [7, 8]),
     hashed_row("-U", 4, range(13)), hashed_row("+U", 4, [40, 41])],
    [hashed_row("+I", 2, [25]),  # 11 elements: 16 slots, the older ones first in a slot
     hashed_row("+I", 5, [3, 1, 2]), hashed_row("-D", 3, [6])],
]
HASHED_UPDATE = [hashed_row("+I", 1, [4]), hashed_row("-U", 2, [12, 13]),
                 hashed_row("+I", 5, range(30, 50)), hashed_row("+I", 6, [9, 8]),
                 hashed_row("+I", 2, [14])]

# -- aggregation without retractions: every function, many types, a default function

PLAIN = pa.schema([
    nn("id", pa.int32()), ("s", pa.int16()), ("sdec", pa.decimal128(20, 3)),
    ("pdec", pa.decimal128(10, 2)), ("pf", pa.float32()), ("mxd", pa.date32()),
    ("mnts", pa.timestamp("us")), ("mxdec", pa.decimal128(8, 1)), ("mnf", pa.float64()),
    ("la", pa.string()), ("fv", pa.int64()), ("fnn", pa.string()), ("bo", pa.bool_()),
    ("ba", pa.bool_()), ("lv", pa.int64()), ("d1", pa.int64()), ("d2", pa.float64()),
])
PLAIN_OPTIONS = {
    **agg(s="sum", sdec="sum", pdec="product", pf="product", mxd="max", mnts="min", mxdec="max",
          mnf="min", la="listagg", fv="first_value", fnn="first_non_null_value", bo="bool_or",
          ba="bool_and", lv="last_value"),
    "fields.default-aggregate-function": "sum",
}


def plain_row(i: int, x: int | None) -> Row:
    def v(value: Any) -> Any:
        return None if x is None else value
    return ("+I", i, v(x), v(Decimal(x or 0) / 8), v(Decimal(x or 0) / 4 + Decimal("1.25")),
            v((x or 0) * 0.75 + 0.5), v(date(2024, 1, 1 + (x or 0) % 28)),
            v(datetime(2024, 5, 1, (x or 0) % 24, 30)), v(Decimal(x or 0) / 2), v(1.5 - (x or 0)),
            v(f"s{x}"), v(x), v(f"f{x}"), v((x or 0) % 3 == 0), v((x or 0) % 2 == 0), v(x),
            v(x), v((x or 0) / 4))


PLAIN_BATCHES = [
    [plain_row(i, i) for i in range(1, 6)] + [plain_row(6, None)],
    [plain_row(i, i * 3) for i in (1, 2, 6)] + [plain_row(3, None), plain_row(7, 7)],
    [plain_row(i, i + 10) for i in (1, 3, 7)] + [plain_row(1, 5)],
]
PLAIN_UPDATE = [plain_row(2, 1), plain_row(3, 2), plain_row(8, 8), plain_row(6, 4), plain_row(6, 5)]

# -- aggregation with a sequence field: rows merge in its order, not in arrival order

SEQ = pa.schema([nn("id", pa.int64()), ("ts", pa.int64()), ("s", pa.int64()),
                 ("lv", pa.string()), ("fv", pa.string()), ("la", pa.string())])
SEQ_OPTIONS = {**agg(s="sum", lv="last_value", fv="first_value", la="listagg"),
               "sequence.field": "ts", "fields.fv.ignore-retract": "true",
               "fields.la.ignore-retract": "true"}
SEQ_BATCHES = [
    [("+I", 1, 10, 1, "t10", "t10", "t10"), ("+I", 2, 5, 2, "t5", "t5", "t5"),
     ("+I", 1, 3, 4, "t3", "t3", "t3")],
    [("+I", 1, 7, 8, "t7", "t7", "t7"), ("-U", 2, 9, 2, "t9", "t9", "t9"),
     ("+I", 2, 1, 16, "t1", "t1", "t1"), ("+I", 3, None, 1, "null", "null", "null")],
]
SEQ_UPDATE = [("+I", 1, 2, 32, "t2", "t2", "t2"), ("+I", 3, 4, 2, "t4", "t4", "t4"),
              ("-D", 1, 11, 1, "t11", "t11", "t11"), ("+I", 4, 1, 1, "t1", "t1", "t1")]

# -- partial-update with sequence groups (one of two sequence fields), retractions

GROUPS = pa.schema([nn("id", pa.int64()), ("s1", pa.int64()), ("a", pa.string()),
                    ("b", pa.int32()), ("total", pa.int64()), ("s2", pa.int32()),
                    ("s3", pa.int32()), ("c", pa.string()), ("d", pa.float64()),
                    ("e", pa.string())])
GROUPS_OPTIONS = {"bucket": "1", "merge-engine": "partial-update",
                  "fields.s1.sequence-group": "a,b,total", "fields.s2,s3.sequence-group": "c,d",
                  "fields.total.aggregate-function": "sum"}
GROUPS_BATCHES = [
    [("+I", 1, 1, "a1", 1, 10, None, None, None, None, "e1"),
     ("+I", 1, None, None, None, None, 1, 1, "c1", 1.0, None),
     ("+I", 2, 5, "a5", 5, 50, 2, 0, "c2", 2.0, "e2"),
     ("+I", 2, 3, "a3-old", 3, 30, None, 5, "c-old", None, "e2b"),
     ("-D", 3, 1, "lone", 1, 1, 1, 1, "lone", 1.0, "lone")],
    [("+I", 1, 2, None, 2, 20, 1, 0, "c-older", 9.0, None),
     ("-U", 2, 5, "a5", 5, 50, None, None, None, None, None),
     ("+U", 2, 6, "a6", None, 60, None, None, None, None, "e2c"),
     ("-D", 1, None, None, None, None, 1, 2, "x", None, None),
     ("+I", 4, 1, "a4", 4, 4, 1, 1, "c4", 4.0, "e4")],
    [("+I", 1, 2, "tie", 22, 2, None, None, None, None, None),
     ("-U", 4, 0, "old", 0, 1, 9, 9, "c", 0.0, "e"),
     ("+I", 3, None, None, None, None, 2, 2, "c3", 3.0, "e3")],
]
GROUPS_UPDATE = [("+I", 1, 3, "a-upd", None, 5, None, None, None, None, "e-upd"),
                 ("-D", 2, 6, "a6", None, 60, 3, 0, None, None, None),
                 ("+I", 5, None, None, None, None, 1, 1, "c5", 5.0, "e5"),
                 ("-U", 6, 1, "lone", 1, 1, None, None, None, None, None),
                 ("+I", 4, 0, "older", 0, 100, 1, 1, "same-seq", 40.0, None)]

# -- partial-update without groups: remove-record-on-delete, ignore-delete, plain

PU = pa.schema([nn("id", pa.int64()), ("a", pa.string()), ("b", pa.int64()), ("c", pa.float64())])
PU_BATCHES = [
    [("+I", 1, "a1", None, 1.0), ("+I", 2, None, 2, None), ("+I", 3, "a3", 3, 3.0),
     ("+I", 1, None, 10, None)],
    [("-D", 3, None, None, None), ("-U", 2, None, 2, None), ("+U", 2, "a2", None, 2.5),
     ("-D", 9, "lone", 9, 9.0), ("+I", 4, "a4", 4, None)],
]
PU_UPDATE = [("-D", 1, None, None, None), ("+I", 5, "a5", None, 5.0),
             ("+I", 2, None, 20, None), ("-U", 4, "a4", 4, None)]
PU_PLAIN_BATCHES = [
    [("+I", 1, "a1", None, 1.0), ("+I", 1, None, 10, None), ("+I", 2, "a2", 2, None)],
    [("-D", 7, "lone", 7, 7.0), ("+I", 2, None, None, 2.5), ("-U", 8, "lone", 8, 8.0)],
]


def _scenario(name: str, schema: pa.Schema, options: dict[str, str], batches: list[list[Row]],
              update: list[Row], **kw: Any) -> Scenario:
    return Scenario(name, schema, options, [rows(schema, b) for b in batches],
                    rows(schema, update), **kw)


COLLECTIONS_PLAIN_BATCHES = [
    [r for r in batch if r[0] in ("+I", "+U")] for batch in COLLECTION_BATCHES]
COLLECTIONS_PLAIN_OPTIONS = {k: v for k, v in COLLECTIONS_OPTIONS.items() if k != "fields.cd.distinct"}
PU_PLAIN_INSERTS = [[r for r in batch if r[0] == "+I"] for batch in PU_BATCHES]
# paimon-rust 0.4 folds a retraction of a null state to null where Java 0.9 gives the
# retracted value itself (sum: its negation; product: the value): it reads the tables
# where that happens differently, so it judges the others.
RUST, PYPAIMON = "rust", "pypaimon21"

SCENARIOS = [
    _scenario("agg_retract", RETRACT, RETRACT_OPTIONS, RETRACT_BATCHES, RETRACT_UPDATE),
    _scenario("agg_retract_compacted", RETRACT, RETRACT_OPTIONS, RETRACT_BATCHES,
              RETRACT_UPDATE, compact_after=(1,), readers=(RUST,)),
    _scenario("agg_collections", COLLECTIONS, COLLECTIONS_OPTIONS, COLLECTION_BATCHES,
              COLLECTION_UPDATE, hash_ordered=("cd", "nk"), readers=(RUST,)),
    _scenario("agg_collections_compacted", COLLECTIONS, COLLECTIONS_OPTIONS,
              COLLECTION_BATCHES, COLLECTION_UPDATE, compact_after=(0, 1),
              hash_ordered=("cd", "nk"), readers=(RUST,)),
    _scenario("agg_collections_inserts", COLLECTIONS, COLLECTIONS_PLAIN_OPTIONS,
              COLLECTIONS_PLAIN_BATCHES, [r for r in COLLECTION_UPDATE if r[0] == "+I"],
              hash_ordered=("nk",), readers=(RUST,)),  # pypaimon 2.1 fails on MAP columns:
    # "Could not convert {'key': 'a', 'value': 1} with type dict: was expecting a tuple"
    _scenario("agg_hash_order", HASHED, HASHED_OPTIONS, HASHED_BATCHES, HASHED_UPDATE),
    _scenario("agg_hash_order_compacted", HASHED, HASHED_OPTIONS, HASHED_BATCHES,
              HASHED_UPDATE, compact_after=(0, 1)),
    _scenario("agg_plain", PLAIN, PLAIN_OPTIONS, PLAIN_BATCHES, PLAIN_UPDATE, compact_after=(1,),
              readers=(PYPAIMON, RUST)),
    _scenario("agg_sequence_field", SEQ, SEQ_OPTIONS, SEQ_BATCHES, SEQ_UPDATE, readers=(RUST,)),
    _scenario("pu_sequence_groups", GROUPS, GROUPS_OPTIONS, GROUPS_BATCHES, GROUPS_UPDATE),
    _scenario("pu_sequence_groups_compacted", GROUPS, GROUPS_OPTIONS, GROUPS_BATCHES,
              GROUPS_UPDATE, compact_after=(0,), readers=(RUST,)),
    _scenario("pu_remove_on_delete", PU, {"bucket": "1", "merge-engine": "partial-update",
                                          "partial-update.remove-record-on-delete": "true"},
              PU_BATCHES, PU_UPDATE, readers=(RUST,)),
    _scenario("pu_ignore_delete", PU, {"bucket": "1", "merge-engine": "partial-update",
                                       "ignore-delete": "true"}, PU_BATCHES, PU_UPDATE,
              compact_after=(0,), readers=(RUST,)),
    _scenario("pu_plain", PU, {"bucket": "1", "merge-engine": "partial-update"},
              PU_PLAIN_INSERTS, [r for r in PU_UPDATE if r[0] == "+I"], compact_after=(0,),
              readers=(PYPAIMON, RUST)),
    _scenario("pu_plain_lone_retractions", PU, {"bucket": "1", "merge-engine": "partial-update"},
              PU_PLAIN_BATCHES, [("+I", 3, "a3", 3, 3.0)], java_writes_only=True),
]
