"""Comparing what two clients read: the same columns, the same types (up to Arrow spelling)
and the same rows in any order; and minipaimon's read of a snapshot as Paimon reads it.

Values are put in a canonical form driven by the Arrow type, so that only what a table
means is compared. The judges' known quirks (measured on their own files as well as ours)
are named here and applied only when a comparison is told to:

* :data:`JAVA_NULL_ROW`: Java 0.9 reads a ROW whose fields are all null as a null ROW, from
  its own files and anyone's; with it both sides' all-null structs count as null.

Spelling differences that never change a value are ignored always: the time zone name of a
``TIMESTAMP WITH LOCAL TIME ZONE`` column (pypaimon/minipaimon ``UTC``, Java ``Etc/UTC``;
both are instants), list item names (Java ``$data$``), nullability of nested fields (Java's
map values ``not null``), string/binary/list width or view variants (paimon-rust's
DataFusion may hand out views), and field metadata (paimon-rust adds ``PARQUET:field_id``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Collection
from typing import Any

import pyarrow as pa

import minipaimon_core as mp

JAVA_NULL_ROW = "java09 reads an all-null ROW as a null ROW"


def type_signature(t: pa.DataType) -> str:
    """The type as the format means it (see the module docstring for what is ignored)."""
    is_ = pa.types
    if is_.is_string(t) or is_.is_large_string(t) or is_.is_string_view(t):
        return "string"
    if is_.is_binary(t) or is_.is_large_binary(t) or is_.is_binary_view(t):
        return "binary"
    if is_.is_timestamp(t):  # the zone's name is not compared: Java 0.9 says Etc/UTC
        return f"timestamp[{t.unit}{', instant' if t.tz is not None else ''}]"
    if is_.is_map(t):  # nullability is not compared: Java 0.9's map values are not null
        return f"map<{type_signature(t.key_type)}, {type_signature(t.item_type)}>"
    if is_.is_list(t) or is_.is_large_list(t) or is_.is_list_view(t):  # Java 0.9: item $data$
        return f"list<{type_signature(t.value_type)}>"
    if is_.is_struct(t):
        return "struct<" + ", ".join(f"{t.field(i).name}: {type_signature(t.field(i).type)}"
                                     for i in range(t.num_fields)) + ">"
    return str(t)


def schema_signature(schema: pa.Schema) -> list[tuple[str, str]]:
    return [(f.name, type_signature(f.type)) for f in schema]


def _value(v: Any, t: pa.DataType, quirks: Collection[str]) -> Any:
    if v is None:
        return None
    is_ = pa.types
    if is_.is_struct(t):
        fields = [(t.field(i).name, _value(v.get(t.field(i).name), t.field(i).type, quirks))
                  for i in range(t.num_fields)]
        if JAVA_NULL_ROW in quirks and all(x is None for _, x in fields):
            return None
        return ("row", tuple(fields))
    if is_.is_map(t):
        return ("map", tuple(sorted(((_value(k, t.key_type, quirks), _value(x, t.item_type, quirks))
                                     for k, x in v), key=repr)))
    if is_.is_list(t) or is_.is_large_list(t) or is_.is_list_view(t):
        return tuple(_value(x, t.value_type, quirks) for x in v)
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return ("instant", v.astimezone(dt.timezone.utc).replace(tzinfo=None))
    if isinstance(v, float) and math.isnan(v):
        return ("NaN",)
    if isinstance(v, decimal.Decimal):
        return ("decimal", str(v))
    return v


def canonical_rows(table: pa.Table, quirks: Collection[str] = (),
                   unordered: Collection[str] = ()) -> list[tuple[Any, ...]]:
    """The rows as comparable tuples (in column order), sorted; the lists of the columns
    named in ``unordered`` are compared as multisets (sorted)."""
    types = [f.type for f in table.schema]
    rows = [tuple(_unordered(_value(r[name], t, quirks), name in unordered)
                  for name, t in zip(table.column_names, types))
            for r in table.to_pylist()]
    return sorted(rows, key=repr)


def _unordered(v: Any, unordered: bool) -> Any:
    return tuple(sorted(v, key=repr)) if unordered and isinstance(v, tuple) else v


def differences(got: pa.Table, want: pa.Table, quirks: Collection[str] = (),
                unordered: Collection[str] = ()) -> str | None:
    """None if ``got`` has ``want``'s columns, types and rows (in any order), else what
    differs (columns, or the first rows only one side has). ``unordered``: list columns
    whose element order the format leaves open (Paimon's hash-set aggregates)."""
    if schema_signature(got.schema) != schema_signature(want.schema):
        return (f"schemas differ:\n  got  {schema_signature(got.schema)}\n"
                f"  want {schema_signature(want.schema)}")
    g, w = canonical_rows(got, quirks, unordered), canonical_rows(want, quirks, unordered)
    if g == w:
        return None
    only_got = _minus(g, w)
    only_want = _minus(w, g)
    return (f"{len(g)} rows, want {len(w)}; only in got ({len(only_got)}): {only_got[:5]}; "
            f"only in want ({len(only_want)}): {only_want[:5]}")


def _minus(a: list[Any], b: list[Any]) -> list[Any]:
    rest = list(b)
    out = []
    for x in a:
        if x in rest:
            rest.remove(x)
        else:
            out.append(x)
    return out


def read_at(path: str, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
    """minipaimon's time-travel read as Paimon defines it: in the snapshot's own schema
    (renamed columns under their old names, later columns absent, dropped ones present),
    as ``Table.scan`` and the Spark source (``open_at``) read it."""
    return mp.open_table(path).scan(snapshot_id=snapshot_id, tag=tag).to_arrow()
