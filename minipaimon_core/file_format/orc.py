"""ORC data files through pyarrow's ORC adapter (Apache ORC's C++ library), as Paimon 0.9's
``OrcFileFormat`` lays them out.

Types, as Paimon's ``OrcSplitReaderUtil.toOrcType``: the integers as byte/short/int/long,
FLOAT/DOUBLE, STRING as string, BYTES as binary, DECIMAL(p, s) as decimal(p, s), DATE as
date, TIMESTAMP as timestamp (a wall-clock time) and TIMESTAMP WITH LOCAL TIME ZONE as
timestamp with local time zone (an instant: Arrow timestamps with a zone), TIME as int
(milliseconds of the day), ARRAY/MAP/ROW as list/map/struct. Column names are the file
layout's (``_KEY_<k>``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then the columns); ORC files
of Paimon 0.9 carry no field ids, and readers select columns by name. Compression is
``file.compression`` (zstd by default; ``gzip`` is ORC's zlib).

Limits of pyarrow's adapter, refused before anything is written (nothing is committed):
it reads every timestamp as nanoseconds, so values outside 1677-09-21 .. 2262-04-11 cannot
be read back (``InvalidArgumentError`` naming the column; reading such a file another
writer made is an ``UnsupportedFeatureError``); timestamps before 1970 with a fraction of a
second, which the C++ writer stores with negative nanoseconds that paimon-rust (any) and
Paimon 0.9's Java reader (below the millisecond) fail on (``InvalidArgumentError``); ``brotli`` is no ORC codec; types it has no
ORC type for (``UnsupportedFeatureError``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .base import FileFormat, FormatWriter, conform, copy_bytes

_CODECS = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "gzip": "zlib", "none": "uncompressed"}
# the instants pyarrow can read back from ORC (it reads nanoseconds into an int64)
_MIN_NS, _MAX_NS = -(2**63), 2**63 - 1


def _physical(t: pa.DataType) -> pa.DataType:
    """The Arrow type written for ``t``: TIME as int32 milliseconds (Paimon's ORC TIME)."""
    if pa.types.is_time(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_physical(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_physical(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_physical(t.key_type)),
                       t.item_field.with_type(_physical(t.item_type)))
    return t


def _has_time(t: pa.DataType) -> bool:
    return not _physical(t).equals(t)


def _time_to_millis(col: Any, t: pa.DataType) -> Any:
    """A TIME column as int32 milliseconds of the day."""
    ints = col.cast(pa.int64())
    per_ms = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
    if per_ms is None:
        ints = pc.multiply(ints, 1000)
    elif per_ms > 1:
        ints = pc.divide(ints, per_ms)
    return ints.cast(pa.int32())


def _check_timestamps(table: pa.Table, file_name: str) -> None:
    """Refuse timestamps pyarrow could write but never read back (outside int64 ns), and
    those before 1970 with a fraction of a second, which Apache ORC's C++ writer stores with
    negative nanoseconds: paimon-rust's reader fails on any, Paimon 0.9's Java reader on
    those with digits below the millisecond (measured)."""
    for field in table.schema:
        t = field.type
        if not pa.types.is_timestamp(t):
            continue
        ints = table.column(field.name).cast(pa.int64())
        if t.unit != "s":
            per_s = {"ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
            early = pc.filter(ints, pc.less(ints, 0))
            if len(early) and pc.any(pc.not_equal(pc.remainder(early, per_s), 0)).as_py():
                raise InvalidArgumentError(
                    f"column {field.name!r} holds timestamps before 1970 with a fraction of a "
                    f"second, which Paimon's readers cannot read from an ORC data file "
                    f"({file_name}) as pyarrow writes them; use 'file.format' = 'parquet' or "
                    "'avro' for such values")
        if t.unit == "ns":
            continue
        per_ns = {"s": 10**9, "ms": 10**6, "us": 10**3}[t.unit]
        mm = pc.min_max(ints)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is not None and (lo * per_ns < _MIN_NS or hi * per_ns > _MAX_NS):
            raise InvalidArgumentError(
                f"column {field.name!r} holds timestamps outside 1677-09-21 .. 2262-04-11, "
                f"which an ORC data file ({file_name}) written by pyarrow cannot read back "
                "(it reads ORC timestamps as nanoseconds); use 'file.format' = 'parquet' or "
                "'avro' for such values")


class _Writer(FormatWriter):
    def __init__(self, writer: orc.ORCWriter, schema: pa.Schema, file_name: str) -> None:
        self._writer = writer
        self._schema = schema
        self._file_name = file_name
        self._physical = pa.schema([f.with_type(_physical(f.type)) for f in schema])

    def write(self, table: pa.Table) -> None:
        _check_timestamps(table, self._file_name)
        if any(chunk.offset for column in table.columns for chunk in column.chunks):
            # pyarrow's ORC writer mis-writes arrays that start at an offset (slices): Paimon's
            # Java reader read such a row as null in every column but the key
            # (tests/interop/test_file_formats.py). A slice is written from a copy.
            table = table.take(np.arange(table.num_rows))
        if not self._physical.equals(self._schema):
            cols = []
            for field, col in zip(self._schema, table.columns):
                if pa.types.is_time(field.type):
                    col = _time_to_millis(col, field.type)
                elif _has_time(field.type):
                    raise UnsupportedFeatureError(
                        f"column {field.name!r}: TIME inside a nested type is not written to "
                        "ORC data files by minipaimon; use 'file.format' = 'parquet'")
                cols.append(col)
            table = pa.Table.from_arrays(cols, schema=self._physical)
        self._writer.write(table)

    def close(self) -> None:
        self._writer.close()


class OrcFormat(FileFormat):
    name = "orc"

    def open_writer(self, sink: BinaryIO, schema: pa.Schema, first: pa.Table, *,
                    compression: str, file_name: str,
                    dictionary: Collection[str] | None = None, zstd_level: int = 1) -> FormatWriter:
        # zstd_level: pyarrow's ORC writer takes none (its zstd runs at the library's level)
        codec = _CODECS.get(compression.lower())
        if codec is None:
            raise UnsupportedFeatureError(
                f"'file.compression' = {compression!r} has no ORC codec (ORC data file "
                f"{file_name}); use one of {', '.join(_CODECS)}")
        try:
            writer = orc.ORCWriter(sink, compression=codec, file_version="0.12")
        except pa.ArrowException as e:  # pragma: no cover - only a bad sink
            raise UnsupportedFeatureError(f"cannot write ORC data file {file_name}: {e}") from e
        return _Writer(writer, schema, file_name)

    def copy(self, source: BinaryIO, sink: BinaryIO, file_name: str) -> None:
        """Byte for byte: no ORC file names itself (minipaimon's writer embeds no name)."""
        copy_bytes(source, sink)

    def read(self, source: BinaryIO, columns: Sequence[str] | None,
             declared: pa.Schema | None, dictionary: Collection[str] = ()) -> tuple[pa.Table, bytes | None]:
        reader = orc.ORCFile(source)
        names = list(columns) if columns is not None else None
        try:
            t = reader.read(columns=names)  # in the file's column order
        except pa.ArrowInvalid as e:
            if "out of range for nanosecond" in str(e):
                raise UnsupportedFeatureError(
                    f"an ORC data file holds a timestamp outside 1677-09-21 .. 2262-04-11, "
                    f"which pyarrow's ORC reader cannot read ({e})") from None
            raise
        if names is not None:
            t = t.select(names)
        return conform(t, declared, _from_physical), None


def _from_physical(stored: pa.DataType, want: pa.DataType, col: Any) -> Any:
    """A column as ORC stores it into the declared type: TIME from int milliseconds."""
    if pa.types.is_time(want) and pa.types.is_integer(stored):
        ms = col.cast(pa.int64())
        if want.unit == "s":
            return pc.divide(ms, 1000).cast(pa.int32()).cast(want)
        if want.unit in ("us", "ns"):
            return pc.multiply(ms, 1000 if want.unit == "us" else 1_000_000).cast(want)
        return ms.cast(pa.int32()).cast(want)
    return col


__all__ = ["OrcFormat"]
