"""Paimon data types in schema files (``schema/schema-N``, spec §4.2) and their Arrow types.

A type is JSON. An atomic type is a string, spelled as Java's ``DataType.asSQLString()``
writes it (``INT``, ``STRING``, ``BYTES``, ``DECIMAL(10, 2)``, ``TIMESTAMP(6) WITH LOCAL TIME
ZONE``, ...) with a `` NOT NULL`` suffix when not nullable. Nested types are objects whose
``"type"`` carries the nullability: ``{"type": "ARRAY NOT NULL", "element": T}``,
``{"type": "MAP", "key": K, "value": V}``, ``{"type": "ROW", "fields": [DataField...]}`` with a
DataField ``{"id": i, "name": n, "type": T[, "description": d]}``. Members other than these
(pypaimon writes ``"nullable"``) are ignored, as Java ignores them.

Reading accepts every spelling of Java's ``DataTypeJsonParser``: any letter case and spacing,
``INTEGER``, ``NUMERIC``/``DEC``, ``DOUBLE PRECISION``, ``TIMESTAMP_LTZ(p)``, ``... WITHOUT TIME
ZONE``, an explicit `` NULL``, the suffix form ``INT ARRAY``, and the defaults for missing
parameters (CHAR/VARCHAR/BINARY/VARBINARY length 1, DECIMAL(10, 0), TIME(0), TIMESTAMP(6)).

Arrow types: CHAR/VARCHAR/STRING read as ``pa.string()``, BINARY/VARBINARY/BYTES as
``pa.binary()``; TIME(p) and TIMESTAMP(p) use the unit of p (0: s, 1-3: ms, 4-6: us, 7-9: ns),
TIME as time32/time64, WITH LOCAL TIME ZONE as tz ``"UTC"``. So TIME(2) reads as ms and is
written back as TIME(3).

Parquet field ids (``PARQUET:field_id`` field metadata) follow Paimon HEAD
(``SpecialFields``, ``ParquetSchemaConverter``; 0.9 writes no ids, so nothing to agree with
there): a column or ROW field carries its DataField id; inside a column with id ``c`` the
element of an ARRAY at nesting depth ``d`` (1 for the column's own element) gets
``536870911 + 1024 * c + d``, a MAP key ``536870911 - 1024 * c - d`` and a MAP value
``536870911 + 1024 * c + d`` (Java int arithmetic, so wrapped to 32 bits). A ROW resets
``c`` to each of its fields' ids and ``d`` to 0.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import SchemaMismatchError, UnsupportedFeatureError

TypeJson = str | dict[str, Any]

PARQUET_FIELD_ID = b"PARQUET:field_id"
#: Parquet field id of ``_KEY_<k>`` is KEY_FIELD_ID_START + the id of field k.
KEY_FIELD_ID_START = 1073741823
SEQUENCE_NUMBER_FIELD_ID = 2147483646
VALUE_KIND_FIELD_ID = 2147483645
STRUCTURED_TYPE_FIELD_ID_BASE = 536870911
STRUCTURED_TYPE_FIELD_DEPTH_LIMIT = 1024

MAX_LENGTH = 2**31 - 1  # VARCHAR(MAX_LENGTH) is STRING, VARBINARY(MAX_LENGTH) is BYTES
MAX_DECIMAL_PRECISION = 38
MAX_TIME_PRECISION = 9
_NOT_NULL = " NOT NULL"
_UNITS = ("s", "ms", "ms", "ms", "us", "us", "us", "ns", "ns", "ns")  # by precision
_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_PLAIN: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
}
_PLAIN_NAMES = {t: name for name, t in _PLAIN.items()}
_ALIASES = {"INTEGER": "INT", "NUMERIC": "DECIMAL", "DEC": "DECIMAL"}
_LENGTH_TYPES = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
_TIME_TYPES = ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ")
_TOKEN = re.compile(r"\s*([0-9]+|[<>(),.]|[^\s<>(),.]+)")  # Java's tokenizer, minus quotes


@dataclass(frozen=True)
class AtomicType:
    """A parsed atomic type. ``name`` is canonical (``INT``, ``VARCHAR``, ``TIMESTAMP_LTZ``,
    ...); ``precision`` holds the length of CHAR/VARCHAR/BINARY/VARBINARY and the precision
    of DECIMAL/TIME/TIMESTAMP/TIMESTAMP_LTZ."""

    name: str
    nullable: bool = True
    precision: int = 0
    scale: int = 0

    def sql(self) -> str:
        """The string Java writes (``DataType.asSQLString()``)."""
        name, p = self.name, self.precision
        if name in ("VARCHAR", "VARBINARY") and p == MAX_LENGTH:
            text = "STRING" if name == "VARCHAR" else "BYTES"
        elif name == "DECIMAL":
            text = f"DECIMAL({p}, {self.scale})"
        elif name == "TIMESTAMP_LTZ":
            text = f"TIMESTAMP({p}) WITH LOCAL TIME ZONE"
        elif name in _LENGTH_TYPES or name in _TIME_TYPES:
            text = f"{name}({p})"
        else:
            text = name
        return text if self.nullable else text + _NOT_NULL

    def arrow(self) -> pa.DataType:
        """The Arrow type values of this type read as."""
        if self.name in _PLAIN:
            return _PLAIN[self.name]
        if self.name in ("CHAR", "VARCHAR"):
            return pa.string()
        if self.name in ("BINARY", "VARBINARY"):
            return pa.binary()
        if self.name == "DECIMAL":
            return pa.decimal128(self.precision, self.scale)
        unit = _UNITS[self.precision]
        if self.name == "TIME":
            return pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
        return pa.timestamp(unit, "UTC" if self.name == "TIMESTAMP_LTZ" else None)


@functools.lru_cache(maxsize=4096)  # per partition value and stats row: parse each text once
def parse_atomic(text: str) -> AtomicType:
    """Parse an atomic type string. Raises UnsupportedFeatureError if it is not one minipaimon
    reads (unknown or malformed, MULTISET/VARIANT/BLOB/..., bad length/precision/scale)."""
    parsed = _parse_sql(text)
    if not isinstance(parsed, AtomicType):
        raise UnsupportedFeatureError(f"expected an atomic type, got {text!r}")
    return parsed


def nullable(type_json: TypeJson) -> bool:
    """Whether the type allows nulls. Raises UnsupportedFeatureError like :func:`to_arrow`."""
    if isinstance(type_json, str):
        parsed = _parse_sql(type_json)
        return parsed.nullable if isinstance(parsed, AtomicType) else nullable(parsed)
    if isinstance(type_json, dict) and isinstance(type_json.get("type"), str):
        return "NOT NULL" not in type_json["type"]  # exactly Java's test
    raise UnsupportedFeatureError(f"cannot parse data type {type_json!r}")


def to_arrow(type_json: TypeJson, field_id: int | None = None) -> pa.DataType:
    """Arrow type of a Paimon type. ``field_id`` is the id of the column (or ROW field) of
    this type; given it, ARRAY elements and MAP keys/values carry Parquet field ids (module
    docstring). ROW fields always carry their own ids. Raises UnsupportedFeatureError naming
    the type if minipaimon cannot read it."""
    return _to_arrow(type_json, field_id, 0)


def arrow_field(data_field: dict[str, Any]) -> pa.Field:
    """Arrow field of a DataField JSON ``{"id", "name", "type"}``, carrying its field id.
    Raises UnsupportedFeatureError like :func:`to_arrow`."""
    return _arrow_field(data_field, True)


def field_id_metadata(field_id: int) -> dict[bytes, bytes]:
    """Arrow field metadata that makes the Parquet writer record ``field_id``."""
    return {PARQUET_FIELD_ID: str(field_id).encode()}


def key_field_id(field_id: int) -> int:
    """Parquet field id of the ``_KEY_<k>`` column of key field ``k``."""
    return KEY_FIELD_ID_START + field_id


def from_arrow(t: pa.DataType, nullable: bool, next_id: Callable[[], int]) -> TypeJson:
    """Type JSON Paimon writes for Arrow type ``t``.

    Fields of nested ROWs get their ids from ``next_id()`` in Paimon's order
    (``ReassignFieldId``): a field's own nested fields are numbered before the field itself,
    so the caller assigns a column's id first, then converts its type. For a column
    ``r ROW<a ROW<x, y>, b>`` with id 5 that is x=6, y=7, a=8, b=9.

    Accepted besides the exact counterparts of :func:`to_arrow`'s types: large_string and
    string_view (STRING), large_binary and binary_view (BYTES), date64 (DATE), any decimal
    width of precision <= 38, timestamps of any time zone (WITH LOCAL TIME ZONE) and
    large_list (ARRAY). Raises SchemaMismatchError naming the type for anything else
    (unsigned ints, float16, null, dictionary, duration, fixed_size_binary, ...).
    """
    suffix = "" if nullable else _NOT_NULL
    if t in _PLAIN_NAMES:
        return _PLAIN_NAMES[t] + suffix
    if pa.types.is_date64(t):
        return "DATE" + suffix
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "STRING" + suffix
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "BYTES" + suffix
    if pa.types.is_decimal(t):
        if not 1 <= t.precision <= MAX_DECIMAL_PRECISION or not 0 <= t.scale <= t.precision:
            raise SchemaMismatchError(
                f"unsupported column type {t}: Paimon decimals need precision 1..38 and scale "
                "0..precision; use a smaller precision or a STRING column")
        return f"DECIMAL({t.precision}, {t.scale}){suffix}"
    if pa.types.is_timestamp(t):
        zone = " WITH LOCAL TIME ZONE" if t.tz else ""
        return f"TIMESTAMP({_UNIT_PRECISION[t.unit]}){zone}{suffix}"
    if pa.types.is_time(t):
        return f"TIME({_UNIT_PRECISION[t.unit]}){suffix}"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = from_arrow(t.value_type, t.value_field.nullable, next_id)
        return {"type": "ARRAY" + suffix, "element": element}
    if pa.types.is_map(t):
        key = from_arrow(t.key_type, False, next_id)
        value = from_arrow(t.item_type, t.item_field.nullable, next_id)
        return {"type": "MAP" + suffix, "key": key, "value": value}
    if pa.types.is_struct(t):
        names = [f.name for f in t]
        if len(set(names)) != len(names):
            raise SchemaMismatchError(f"unsupported column type {t}: duplicate field names")
        fields = []
        for f in t:
            type_json = from_arrow(f.type, f.nullable, next_id)
            fields.append({"id": next_id(), "name": f.name, "type": type_json})
        return {"type": "ROW" + suffix, "fields": fields}
    raise SchemaMismatchError(
        f"unsupported column type {t}: Paimon has no such type; cast the column to a "
        "supported type (e.g. a signed integer, STRING, BYTES or TIMESTAMP)")


def normalize(t: pa.DataType) -> pa.DataType:
    """The Arrow type a column of type ``t`` is stored and read back as (without field ids).
    Raises SchemaMismatchError like :func:`from_arrow`."""
    ids = iter(range(2**31))
    return _to_arrow(from_arrow(t, True, lambda: next(ids)), None, 0, with_ids=False)


def _to_arrow(type_json: TypeJson, field_id: int | None, depth: int,
              with_ids: bool = True) -> pa.DataType:
    if isinstance(type_json, str):
        parsed = _parse_sql(type_json)
        if isinstance(parsed, AtomicType):
            return parsed.arrow()
        type_json = parsed
    kind = type_json.get("type") if isinstance(type_json, dict) else None
    if not isinstance(type_json, dict) or not isinstance(kind, str):
        raise UnsupportedFeatureError(f"cannot parse data type {type_json!r}")
    members = type_json

    def child(name: str, child_id: int, is_nullable: bool | None = None) -> pa.Field:
        if name not in members:
            raise UnsupportedFeatureError(f"data type {members!r} lacks {name!r}")
        arrow_type = _to_arrow(members[name], field_id, depth + 1, with_ids)
        if is_nullable is None:
            is_nullable = nullable(members[name])
        ids = with_ids and field_id is not None
        meta = field_id_metadata(_int32(child_id)) if ids else None
        return pa.field(name, arrow_type, is_nullable, metadata=meta)

    offset = (field_id or 0) * STRUCTURED_TYPE_FIELD_DEPTH_LIMIT + depth + 1
    if kind.startswith("ARRAY"):  # prefix tests, as Java's
        return pa.list_(child("element", STRUCTURED_TYPE_FIELD_ID_BASE + offset))
    if kind.startswith("MAP"):  # Arrow (and Parquet) map keys are never null
        return pa.map_(child("key", STRUCTURED_TYPE_FIELD_ID_BASE - offset, False),
                       child("value", STRUCTURED_TYPE_FIELD_ID_BASE + offset))
    if kind.startswith("ROW") and isinstance(type_json.get("fields"), list):
        return pa.struct([_arrow_field(f, with_ids) for f in type_json["fields"]])
    raise UnsupportedFeatureError(
        f"data type {kind.split()[0] if kind.split() else kind!r} is not supported by "
        f"minipaimon (in {type_json!r})")


def _arrow_field(data_field: Any, with_ids: bool) -> pa.Field:
    field_id = data_field.get("id") if isinstance(data_field, dict) else None
    name = data_field.get("name") if isinstance(data_field, dict) else None
    if not isinstance(name, str) or "type" not in data_field:
        raise UnsupportedFeatureError(f"cannot parse data field {data_field!r}")
    field_id = field_id if isinstance(field_id, int) and with_ids else None
    arrow_type = _to_arrow(data_field["type"], field_id, 0, with_ids)
    meta = field_id_metadata(field_id) if field_id is not None else None
    return pa.field(name, arrow_type, nullable(data_field["type"]), metadata=meta)


def _int32(value: int) -> int:
    """``value`` wrapped to a Java int."""
    return (value + 2**31) % 2**32 - 2**31


def _parse_sql(text: str) -> AtomicType | dict[str, Any]:
    """Java's ``parseAtomicTypeSQLString``: an atomic type, or the suffix form ``T ARRAY``."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise UnsupportedFeatureError(f"cannot parse data type {text!r}")
        tokens.append(m.group(1))
        pos = m.end()
    stream = _Tokens(text, tokens)
    atomic = stream.atomic()
    parsed: AtomicType | dict[str, Any] = atomic
    if stream.accept("ARRAY"):
        parsed = {"type": "ARRAY" + ("" if stream.nullability() else _NOT_NULL),
                  "element": atomic.sql()}
    elif stream.peek() == "MULTISET":
        raise UnsupportedFeatureError(f"data type MULTISET is not supported (in {text!r})")
    if stream.peek() is not None:
        raise UnsupportedFeatureError(f"cannot parse data type {text!r}")
    return parsed


class _Tokens:
    """Cursor over the tokens of one type string (keywords compare case-insensitively)."""

    def __init__(self, text: str, tokens: list[str]) -> None:
        self.text, self.tokens, self.pos = text, tokens, 0

    def peek(self, ahead: int = 0) -> str | None:
        i = self.pos + ahead
        return self.tokens[i].upper() if i < len(self.tokens) else None

    def accept(self, *words: str) -> bool:
        if all(self.peek(i) == w for i, w in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise UnsupportedFeatureError(f"cannot parse data type {self.text!r}")

    def integer(self) -> int:
        token = self.peek()
        if token is None or not (token.isascii() and token.isdigit()) or int(token) > MAX_LENGTH:
            raise UnsupportedFeatureError(f"cannot parse data type {self.text!r}")
        self.pos += 1
        return int(token)

    def params(self, defaults: tuple[int, ...]) -> tuple[int, ...]:
        """``(a)`` or, when two defaults are given, ``(a[, b])``; missing ones default."""
        if not self.accept("("):
            return defaults
        values = [self.integer()]
        if len(defaults) == 2 and self.accept(","):
            values.append(self.integer())
        self.expect(")")
        return tuple(values) + defaults[len(values):]

    def nullability(self) -> bool:
        if self.accept("NOT", "NULL"):
            return False
        self.accept("NULL")
        return True

    def atomic(self) -> AtomicType:
        word = self.peek() or ""
        name = _ALIASES.get(word, word)
        self.pos += 1
        precision, scale = 0, 0
        if name in _PLAIN:
            if name == "DOUBLE":
                self.accept("PRECISION")
        elif name in ("STRING", "BYTES"):
            name, precision = ("VARCHAR" if name == "STRING" else "VARBINARY"), MAX_LENGTH
        elif name in _LENGTH_TYPES:
            (precision,) = self.params((1,))
        elif name == "DECIMAL":
            precision, scale = self.params((10, 0))
        elif name in _TIME_TYPES:
            (precision,) = self.params((0 if name == "TIME" else 6,))
            if name == "TIMESTAMP" and self.accept("WITH", "LOCAL", "TIME", "ZONE"):
                name = "TIMESTAMP_LTZ"
            elif name != "TIMESTAMP_LTZ":
                self.accept("WITHOUT", "TIME", "ZONE")
        else:
            raise UnsupportedFeatureError(
                f"data type {word or self.text!r} is not supported by minipaimon "
                f"(in {self.text!r})")
        if not _valid(name, precision, scale):
            raise UnsupportedFeatureError(
                f"data type {self.text!r} is not supported: DECIMAL needs precision 1..38 and "
                "scale <= precision, TIME/TIMESTAMP precision 0..9, lengths >= 1")
        return AtomicType(name, self.nullability(), precision, scale)


def _valid(name: str, precision: int, scale: int) -> bool:
    """Java's constructor checks (CharType, DecimalType, TimestampType, ...)."""
    if name in _LENGTH_TYPES:
        return precision >= 1
    if name == "DECIMAL":
        return 1 <= precision <= MAX_DECIMAL_PRECISION and scale <= precision
    return name not in _TIME_TYPES or precision <= MAX_TIME_PRECISION
