"""Avro data files through fastavro, as Paimon 0.9's ``AvroFileFormat`` writes them.

Record schema (Paimon's ``AvroSchemaConverter``): the file's rows are a nullable union
``["null", record]`` of a record named ``org.apache.paimon.avro.generated.record``; a
nested ROW column ``c`` is a record named ``<parent>_c``; nullable types are ``["null",
T]`` with default null, non-null ones plain ``T``. TINYINT/SMALLINT/INT are ``int``, BIGINT
``long``, STRING ``string``, BYTES ``bytes``, DECIMAL ``bytes`` with logical type
``decimal``, DATE ``int``/``date``, TIME(p <= 3) ``int``/``time-millis``, TIMESTAMP(p)
``long`` with ``timestamp-millis`` (p <= 3) or ``timestamp-micros`` (p <= 6), TIMESTAMP
WITH LOCAL TIME ZONE the same with ``local-timestamp-*`` (both hold epoch units: the
wall-clock time read as UTC, or the instant), ARRAY ``array``, MAP with string keys
``map``, other MAPs an array of ``{key, value}`` records (logical type ``map``). Higher
precisions are refused, as Paimon refuses them. Codec: ``zstandard`` when
``file.compression`` is zstd (Paimon's default), else ``snappy`` (Paimon's ``avro.codec``
default), through pyarrow's snappy (fastavro's needs a library the project does not pin).

Speed (bench/README.md): Avro is a row format; fastavro encodes and decodes record by
record (~3 us a row of five columns each way), about 20-40x slower than Parquet or ORC. The
conversion between Arrow columns and records is columnar; the per-record step is
fastavro's own. polars reads Avro natively but not Paimon's default ``zstandard`` codec.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Collection, Iterator, Sequence
from typing import Any, BinaryIO

import fastavro
import fastavro._read as _fastavro_read
import fastavro._write as _fastavro_write
import pyarrow as pa

from ..errors import UnsupportedFeatureError
from ..format import avro as avro_codecs  # registers the zstandard codec
from .base import FILE_NAME_KEY, FileFormat, FormatWriter, copy_bytes

RECORD = "org.apache.paimon.avro.generated.record"
#: the header of an Avro object container file (magic, metadata, sync marker), as the spec has it
_HEADER = fastavro.parse_schema({
    "type": "record", "name": "org.apache.avro.file.Header", "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "sync", "size": 16}}]})


# -- snappy blocks through pyarrow: Avro's snappy block is the raw snappy data + CRC32 (BE) --

def _read_varint_unsigned(data: bytes) -> int:
    shift = value = 0
    for byte in data[:10]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    raise ValueError("bad snappy length")


def _snappy_read_block(fo: Any) -> io.BytesIO:
    size = _fastavro_varint(fo)
    data = fo.read(size)
    raw = data[:-4]
    out = pa.decompress(raw, decompressed_size=_read_varint_unsigned(raw), codec="snappy", asbytes=True)
    if zlib.crc32(out) != int.from_bytes(data[-4:], "big"):
        raise ValueError("snappy block checksum mismatch")
    return io.BytesIO(out)


def _snappy_write_block(fo: Any, block: bytes, level: int | None) -> None:
    data = pa.compress(block, codec="snappy", asbytes=True) + zlib.crc32(block).to_bytes(4, "big")
    fo.write(avro_codecs.long_bytes(len(data)))
    fo.write(data)


def _fastavro_varint(fo: Any) -> int:
    shift = value = 0
    while True:
        byte = fo.read(1)
        if not byte:
            raise EOFError("truncated Avro block")
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7


_fastavro_read.BLOCK_READERS["snappy"] = _snappy_read_block
_fastavro_write.BLOCK_WRITERS["snappy"] = _snappy_write_block  # type: ignore[attr-defined]


# -- schema ----------------------------------------------------------------------------------

def _refuse(what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"{what} cannot be stored in an Avro data file (Paimon's "
                                   "AvroSchemaConverter refuses it); use 'file.format' = 'parquet' or 'orc'")


def _type(t: pa.DataType, nullable: bool, name: str) -> Any:
    is_ = pa.types
    base: Any
    if is_.is_boolean(t):
        base = "boolean"
    elif is_.is_int8(t) or is_.is_int16(t) or is_.is_int32(t):
        base = "int"
    elif is_.is_int64(t):
        base = "long"
    elif is_.is_float32(t):
        base = "float"
    elif is_.is_float64(t):
        base = "double"
    elif is_.is_string(t) or is_.is_large_string(t):
        base = "string"
    elif is_.is_binary(t) or is_.is_large_binary(t) or is_.is_fixed_size_binary(t):
        base = "bytes"
    elif is_.is_decimal(t):
        base = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif is_.is_date32(t):
        base = {"type": "int", "logicalType": "date"}
    elif is_.is_time(t):
        if t.unit not in ("s", "ms"):
            raise _refuse(f"TIME with precision above 3 (column {name.rsplit('_', 1)[-1]!r})")
        base = {"type": "int", "logicalType": "time-millis"}
    elif is_.is_timestamp(t):
        if t.unit == "ns":
            raise _refuse(f"TIMESTAMP with precision above 6 (column {name.rsplit('_', 1)[-1]!r})")
        unit = "micros" if t.unit == "us" else "millis"
        base = {"type": "long", "logicalType": f"{'local-' if t.tz else ''}timestamp-{unit}"}
    elif is_.is_struct(t):
        base = _record(list(t), name)
    elif is_.is_list(t) or is_.is_large_list(t):
        base = {"type": "array", "items": _type(t.value_type, t.value_field.nullable, name)}
    elif is_.is_map(t):
        if is_.is_string(t.key_type) or is_.is_large_string(t.key_type):
            base = {"type": "map", "values": _type(t.item_type, t.item_field.nullable, name)}
        else:
            entry = {"type": "record", "name": name, "fields": [
                {"name": "key", "type": _type(t.key_type, False, name + "_key")},
                _field("value", _type(t.item_type, t.item_field.nullable, name + "_value"),
                       t.item_field.nullable)]}
            base = {"type": "array", "items": entry, "logicalType": "map"}
    else:
        raise _refuse(f"Arrow type {t}")
    return ["null", base] if nullable else base


def _field(name: str, avro_type: Any, nullable: bool) -> dict[str, Any]:
    return {"name": name, "type": avro_type, "default": None} if nullable else {"name": name, "type": avro_type}


def _record(fields: list[pa.Field], name: str) -> dict[str, Any]:
    return {"type": "record", "name": name,
            "fields": [_field(f.name, _type(f.type, f.nullable, f"{name}_{f.name}"), f.nullable)
                       for f in fields]}


def record_schema(schema: pa.Schema) -> dict[str, Any]:
    """The Avro record of a data file whose Arrow layout is ``schema``. Raises
    UnsupportedFeatureError for a type Paimon's Avro files cannot hold."""
    return _record(list(schema), RECORD)


# -- Arrow columns <-> Python values of fastavro ---------------------------------------------

def _physical(t: pa.DataType) -> pa.DataType:
    """Temporal types as the integers fastavro writes (epoch units, days, milliseconds)."""
    is_ = pa.types
    if is_.is_timestamp(t):
        return pa.int64()
    if is_.is_date32(t) or is_.is_time(t):
        return pa.int32() if not is_.is_time64(t) else pa.int64()
    if is_.is_struct(t):
        return pa.struct([f.with_type(_physical(f.type)) for f in t])
    if is_.is_list(t) or is_.is_large_list(t):
        return pa.list_(t.value_field.with_type(_physical(t.value_type)))
    if is_.is_map(t):
        return pa.map_(t.key_field.with_type(_physical(t.key_type)),
                       t.item_field.with_type(_physical(t.item_type)))
    return t


def _in_millis(t: pa.DataType) -> pa.DataType:
    """Second-unit TIMESTAMP(0)/TIME(0) in the millisecond unit Avro stores."""
    is_ = pa.types
    if is_.is_timestamp(t) and t.unit == "s":
        return pa.timestamp("ms", t.tz)
    if is_.is_time32(t) and t.unit == "s":
        return pa.time32("ms")
    if is_.is_struct(t):
        return pa.struct([f.with_type(_in_millis(f.type)) for f in t])
    if is_.is_list(t) or is_.is_large_list(t):
        return pa.list_(t.value_field.with_type(_in_millis(t.value_type)))
    if is_.is_map(t):
        return pa.map_(t.key_field.with_type(_in_millis(t.key_type)),
                       t.item_field.with_type(_in_millis(t.item_type)))
    return t


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    return False


def _values(arr: pa.Array) -> list[Any]:
    """Python values of ``arr`` as fastavro writes them (maps: dicts, or key/value records)."""
    t = arr.type
    if not _has_map(t):
        return arr.to_pylist()
    valid = arr.is_valid().to_pylist()
    if pa.types.is_struct(t):
        children = [_values(arr.field(i)) for i in range(t.num_fields)]
        names = [f.name for f in t]
        return [dict(zip(names, row)) if ok else None for ok, *row in zip(valid, *children)]
    offsets = arr.offsets.to_pylist()
    if pa.types.is_map(t):
        keys, items = _values(arr.keys), _values(arr.items)
        if pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type):
            return [dict(zip(keys[a:b], items[a:b])) if ok else None
                    for ok, a, b in zip(valid, offsets, offsets[1:])]
        return [[{"key": k, "value": v} for k, v in zip(keys[a:b], items[a:b])] if ok else None
                for ok, a, b in zip(valid, offsets, offsets[1:])]
    items = _values(arr.values)
    return [items[a:b] if ok else None for ok, a, b in zip(valid, offsets, offsets[1:])]


def _column_values(col: pa.ChunkedArray, t: pa.DataType) -> list[Any]:
    col = col.cast(_in_millis(t)) if not _in_millis(t).equals(t) else col
    col = col.cast(_physical(col.type)) if not _physical(col.type).equals(col.type) else col
    return _values(col.combine_chunks())


def _arrow_values(values: list[Any], t: pa.DataType) -> list[Any]:
    """fastavro's values of a column as pyarrow builds ``t`` from them (maps: key/value pairs)."""
    if not _has_map(t):
        return values
    if pa.types.is_map(t):
        string_keys = pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)
        out: list[Any] = []
        for v in values:
            if v is None:
                out.append(None)
                continue
            pairs = list(v.items()) if string_keys else [(e["key"], e["value"]) for e in v]
            ks = _arrow_values([k for k, _ in pairs], t.key_type)
            vs = _arrow_values([x for _, x in pairs], t.item_type)
            out.append(list(zip(ks, vs)))
        return out
    if pa.types.is_struct(t):
        cols = {f.name: _arrow_values([None if v is None else v.get(f.name) for v in values], f.type)
                for f in t}
        return [None if v is None else {n: cols[n][i] for n in cols} for i, v in enumerate(values)]
    return [None if v is None else _arrow_values(v, t.value_type) for v in values]


# -- the format ------------------------------------------------------------------------------

class _Writer(FormatWriter):
    def __init__(self, sink: BinaryIO, schema: pa.Schema, codec: str, file_name: str,
                 level: int | None = None) -> None:
        self._schema = schema
        parsed = fastavro.parse_schema(["null", record_schema(schema)])
        self._writer = fastavro.write.Writer(
            sink, parsed, codec=codec, validator=False, compression_level=level,
            metadata={FILE_NAME_KEY.decode(): file_name})

    def write(self, table: pa.Table) -> None:
        names = self._schema.names
        columns = [_column_values(table.column(i), f.type) for i, f in enumerate(self._schema)]
        write = self._writer.write
        for row in zip(*columns):  # fastavro encodes record by record (inherent to it)
            write((RECORD, dict(zip(names, row))))  # type: ignore[arg-type]  # union branch by name

    def close(self) -> None:
        self._writer.flush()


class AvroFormat(FileFormat):
    name = "avro"

    def open_writer(self, sink: BinaryIO, schema: pa.Schema, first: pa.Table, *,
                    compression: str, file_name: str,
                    dictionary: Collection[str] | None = None, zstd_level: int = 1) -> FormatWriter:
        codec = "zstandard" if compression.lower() == "zstd" else "snappy"
        return _Writer(sink, schema, codec, file_name, zstd_level if codec == "zstandard" else None)

    def copy(self, source: BinaryIO, sink: BinaryIO, file_name: str) -> None:
        """Byte for byte, except a header naming the file (minipaimon's): it is written
        again naming ``file_name``, with the same sync marker, and the blocks after it are
        copied as they are."""
        header = fastavro.schemaless_reader(source, _HEADER, None)
        if not isinstance(header, dict) or FILE_NAME_KEY.decode() not in header["meta"]:
            source.seek(0)
            copy_bytes(source, sink)
            return
        meta = {**header["meta"], FILE_NAME_KEY.decode(): file_name.encode()}
        fastavro.schemaless_writer(sink, _HEADER, {**header, "meta": meta})
        copy_bytes(source, sink)

    def read(self, source: BinaryIO, columns: Sequence[str] | None,
             declared: pa.Schema | None, dictionary: Collection[str] = ()) -> tuple[pa.Table, bytes | None]:
        reader = fastavro.reader(source)
        named = reader.metadata.get(FILE_NAME_KEY.decode())
        records = [r for r in _records(reader)]
        writer_schema = reader.writer_schema
        record = writer_schema[1] if isinstance(writer_schema, list) else writer_schema
        stored = [f["name"] for f in record["fields"]]  # type: ignore[index]
        names = list(columns) if columns is not None else stored
        arrays = []
        fields = []
        for name in names:
            if name not in stored:
                raise KeyError(f"no column {name!r} in the file")
            values = [r[name] for r in records]
            field = declared.field(name) if declared is not None and name in declared.names else None
            if field is None:
                arr = pa.array(values)
                field = pa.field(name, arr.type)
            else:
                arr = pa.array(_arrow_values(values, field.type), type=field.type)
            arrays.append(arr)
            fields.append(field)
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else \
            pa.table({"_": pa.nulls(len(records))}).drop_columns(["_"])
        return table, (named.encode() if isinstance(named, str) else named)


def _records(reader: Any) -> Iterator[dict[str, Any]]:
    for r in reader:
        if r is None:
            raise ValueError("a null row in an Avro data file")
        yield r


__all__ = ["AvroFormat", "RECORD", "record_schema"]
