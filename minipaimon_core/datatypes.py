"""Mapping between Arrow types and the schema file's type notation.

Primitive types are strings as Paimon writes them (``BIGINT``, ``DECIMAL(10, 2)``,
``TIMESTAMP(6)``, ``TIMESTAMP(6) WITH LOCAL TIME ZONE`` …, with `` NOT NULL`` for a
non-nullable nested element); nested types are JSON objects:
``{"type": "ARRAY", "element": T}``, ``{"type": "MAP", "key": T, "value": T}``,
``{"type": "ROW", "fields": [{"name": n, "type": T}]}``.

Strings and binaries read back as ``pa.string()`` / ``pa.binary()`` (never the large
variants), timestamps with a time zone as UTC.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from .errors import SchemaMismatchError

MAX_DECIMAL_PRECISION = 38
_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_PRECISION_UNIT = {v: k for k, v in _UNIT_PRECISION.items()}
_SIMPLE: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "BYTES": pa.binary(),
    "DATE": pa.date32(),
}
_SIMPLE_NAMES = {v: k for k, v in _SIMPLE.items()}
_DECIMAL = re.compile(r"^DECIMAL\((\d+), ?(\d+)\)$")
_TIMESTAMP = re.compile(r"^TIMESTAMP\((\d)\)( WITH LOCAL TIME ZONE)?$")


def normalize(t: pa.DataType) -> pa.DataType:
    """The Arrow type a column of type ``t`` is stored and read back as."""
    return to_arrow(from_arrow(t))


def from_arrow(t: pa.DataType, nullable: bool = True) -> Any:
    """Type notation for Arrow type ``t``. Raises SchemaMismatchError if unsupported."""
    suffix = "" if nullable else " NOT NULL"
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        t = pa.string()
    elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        t = pa.binary()
    elif pa.types.is_date64(t):
        t = pa.date32()
    if t in _SIMPLE_NAMES:
        return _SIMPLE_NAMES[t] + suffix
    if pa.types.is_decimal(t):
        _check_decimal(t.precision, t.scale)
        return f"DECIMAL({t.precision}, {t.scale}){suffix}"
    if pa.types.is_timestamp(t):
        tz = " WITH LOCAL TIME ZONE" if t.tz else ""
        return f"TIMESTAMP({_UNIT_PRECISION[t.unit]}){tz}{suffix}"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        elem = from_arrow(t.value_type, t.value_field.nullable)
        return _nested({"type": "ARRAY", "element": elem}, nullable)
    if pa.types.is_map(t):
        return _nested(
            {
                "type": "MAP",
                "key": from_arrow(t.key_type, False),
                "value": from_arrow(t.item_type, t.item_field.nullable),
            },
            nullable,
        )
    if pa.types.is_struct(t):
        fields = [{"name": f.name, "type": from_arrow(f.type, f.nullable)} for f in t]
        return _nested({"type": "ROW", "fields": fields}, nullable)
    raise SchemaMismatchError(f"unsupported column type {t}")


def _check_decimal(precision: int, scale: int) -> None:
    """DECIMAL(p, s) needs 1 <= p <= 38 and 0 <= s <= p (Paimon's and Spark's limits)."""
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
        raise SchemaMismatchError(
            f"unsupported type DECIMAL({precision}, {scale}): precision must be 1..{MAX_DECIMAL_PRECISION} "
            "and scale 0..precision (decimal256 with more digits is not supported; use a "
            "STRING column or a smaller precision)")


def _nested(obj: dict[str, Any], nullable: bool) -> dict[str, Any]:
    if not nullable:
        obj["nullable"] = False
    return obj


def nullable_of(notation: Any) -> bool:
    """Whether a nested element's notation allows nulls."""
    if isinstance(notation, str):
        return not notation.endswith(" NOT NULL")
    return bool(notation.get("nullable", True))


def to_arrow(notation: Any) -> pa.DataType:
    """Arrow type of a type notation. Raises SchemaMismatchError if it is not understood."""
    if isinstance(notation, str):
        name = notation.removesuffix(" NOT NULL")
        if name in _SIMPLE:
            return _SIMPLE[name]
        if m := _DECIMAL.fullmatch(name):
            precision, scale = int(m.group(1)), int(m.group(2))
            _check_decimal(precision, scale)
            return pa.decimal128(precision, scale)
        if m := _TIMESTAMP.fullmatch(name):
            return pa.timestamp(_PRECISION_UNIT[int(m.group(1))], "UTC" if m.group(2) else None)
        raise SchemaMismatchError(f"unknown type {notation!r} in schema")
    kind = notation.get("type")
    if kind == "ARRAY":
        elem = notation["element"]
        return pa.list_(pa.field("element", to_arrow(elem), nullable_of(elem)))
    if kind == "MAP":
        value = notation["value"]
        return pa.map_(to_arrow(notation["key"]), pa.field("value", to_arrow(value), nullable_of(value)))
    if kind == "ROW":
        return pa.struct(
            [pa.field(f["name"], to_arrow(f["type"]), nullable_of(f["type"])) for f in notation["fields"]]
        )
    raise SchemaMismatchError(f"unknown type {notation!r} in schema")


def is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t)
