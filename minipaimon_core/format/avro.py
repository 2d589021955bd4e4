"""Avro object-container files, as Paimon writes its manifests (fastavro, C-accelerated).

Paimon writes manifest lists, manifests and index manifests as Avro object containers:
``Obj\\x01``, a metadata map (``avro.schema``, ``avro.codec``), then blocks of records, each
compressed with the codec (``manifest.compression``: Paimon's default ``zstd``, Avro's
``zstandard``). Record schemas follow Paimon's ``AvroSchemaConverter``: nullable fields are
unions ``["null", T]`` with default null, record types are defined inline with unique names.

Readers resolve the writer's fields by name: a field the writer lacks (an older Paimon's
file) takes its default, a field the reader does not know is skipped. So this module reads
the records as the writer wrote them (dicts) and leaves defaults to the codecs.

fastavro's own ``zstandard`` codec needs ``backports.zstd`` before Python 3.14; the block
reader and writer registered here use the ``zstandard`` package the project already has (a
streaming decompressor: Java's writer does not record the frame's content size).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable
from typing import Any

import fastavro
import fastavro._read as _fastavro_read
import fastavro._write as _fastavro_write
import zstandard

from ..errors import CorruptMetadataError

NAMESPACE = "org.apache.paimon.avro.generated"
CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "none": "null", "null": "null",
          "deflate": "deflate", "snappy": "snappy"}
ZSTD_LEVEL = 1  # Paimon's file.compression.zstd-level default


def _read_varint(fo: Any) -> int:
    shift = value = 0
    while True:
        byte = fo.read(1)
        if not byte:
            raise EOFError("truncated Avro block")
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zstd_read_block(fo: Any) -> io.BytesIO:
    size = _read_varint(fo)
    data = fo.read(size)
    return io.BytesIO(zstandard.ZstdDecompressor().decompressobj().decompress(data))


def _zstd_write_block(fo: Any, block: bytes, level: int | None) -> None:
    data = zstandard.ZstdCompressor(level=ZSTD_LEVEL if level is None else level).compress(block)
    fo.write(_varint(len(data)))
    fo.write(data)


_fastavro_read.BLOCK_READERS["zstandard"] = _zstd_read_block
_fastavro_write.BLOCK_WRITERS["zstandard"] = _zstd_write_block  # type: ignore[attr-defined]


def nullable(t: Any) -> list[Any]:
    """The union Paimon writes for a nullable type: null first."""
    return ["null", t]


def optional(name: str, t: Any) -> dict[str, Any]:
    """A nullable field (null by default)."""
    return {"name": name, "type": nullable(t), "default": None}


def required(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": t}


def codec_of(compression: str) -> str:
    """The Avro codec of a ``manifest.compression`` value (``zstd`` -> ``zstandard``)."""
    return CODECS.get(compression.lower(), "zstandard")


def write_container(schema: dict[str, Any], records: Iterable[dict[str, Any]],
                    compression: str = "zstd", metadata: dict[str, str] | None = None) -> bytes:
    """An Avro object container of ``records`` (``metadata``: extra header entries, which
    every Avro reader keeps but Paimon's ignore)."""
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec_of(compression),
                    metadata=metadata or {}, validator=False)
    return out.getvalue()


# -- encoding records by hand ----------------------------------------------------------------
# fastavro resolves every union per value (~15 us a manifest entry); the manifest writer
# encodes its fixed record schema with these instead (~4 us, byte for byte what fastavro
# writes: tests/format/test_manifest_file.py) and frames the records itself.

_SMALL_LONGS = [_varint(i) for i in range(-64, 8192)]
NULL_BRANCH = b"\x00"  # union branch 0 (null) of ["null", T]
VALUE_BRANCH = b"\x02"  # union branch 1 (T)
EMPTY_ARRAY = b"\x00"
ENCODED_CODECS = ("zstandard", "null")  # what write_encoded_container compresses with


def long_bytes(n: int) -> bytes:
    """An Avro int / long: zigzag varint."""
    return _SMALL_LONGS[n + 64] if -64 <= n < 8192 else _varint(n)


def bytes_bytes(data: bytes) -> bytes:
    """Avro bytes (strings: their UTF-8): the length, then the data."""
    return long_bytes(len(data)) + data


def optional_long(n: int | None) -> bytes:
    return NULL_BRANCH if n is None else VALUE_BRANCH + long_bytes(n)


def write_encoded_container(schema: dict[str, Any], records: Iterable[bytes], compression: str = "zstd",
                            metadata: dict[str, str] | None = None, block_size: int = 1 << 16) -> bytes:
    """An Avro object container of records already encoded in ``schema`` (blocks of about
    ``block_size`` bytes before compression; ``metadata`` as :func:`write_container`)."""
    codec = codec_of(compression)
    if codec not in ENCODED_CODECS:
        raise ValueError(f"codec {codec!r}: write such containers with write_container")
    header = {"avro.schema": schema_json(schema), "avro.codec": codec, **(metadata or {})}
    sync = os.urandom(16)
    out = [b"Obj\x01", long_bytes(len(header))]
    out += [bytes_bytes(k.encode()) + bytes_bytes(v.encode()) for k, v in header.items()]
    out += [b"\x00", sync]
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL) if codec == "zstandard" else None
    block: list[bytes] = []
    size = 0

    def flush() -> None:
        data = b"".join(block)
        if compressor is not None:
            data = compressor.compress(data)
        out.extend((long_bytes(len(block)), long_bytes(len(data)), data, sync))

    for record in records:
        block.append(record)
        size += len(record)
        if size >= block_size:
            flush()
            block, size = [], 0
    if block:
        flush()
    return b"".join(out)


class Container:
    """A decoded Avro object container: its records (dicts by field name), header
    metadata and writer schema."""

    def __init__(self, records: list[dict[str, Any]], metadata: dict[str, Any],
                 schema: dict[str, Any]) -> None:
        self.records = records
        self.metadata = metadata
        self.schema = schema

    def field_names(self) -> list[str]:
        """The top-level fields of the writer's record schema."""
        return [f["name"] for f in self.schema.get("fields", [])]


def read_container(data: bytes, path: str) -> Container:
    """Decode an Avro object container. Raises CorruptMetadataError naming ``path`` for
    anything that is not a readable container (truncated, bit flips, another format)."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        records = list(reader)
        return Container(records, dict(reader.metadata), reader.writer_schema)  # type: ignore[arg-type]
    except Exception as e:  # noqa: BLE001 - fastavro raises many kinds on damaged input
        raise CorruptMetadataError(f"{path}: not a readable Avro file ({type(e).__name__}: {e})") from None


def read_header(data: bytes, path: str) -> dict[str, Any]:
    """The header metadata of a container, without decoding its records; a container that
    does not end with its sync marker (truncated) is refused like an unreadable one."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        sync = reader._header["sync"]
    except Exception as e:  # noqa: BLE001
        raise CorruptMetadataError(f"{path}: not a readable Avro file ({type(e).__name__}: {e})") from None
    if not data.endswith(sync):
        raise CorruptMetadataError(f"{path}: not a readable Avro file (truncated: no sync marker at its end)")
    return dict(reader.metadata)


def schema_json(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"))


__all__ = ["EMPTY_ARRAY", "ENCODED_CODECS", "NAMESPACE", "NULL_BRANCH", "VALUE_BRANCH", "Container", "bytes_bytes",
           "codec_of", "long_bytes", "nullable", "optional", "optional_long", "read_container",
           "read_header", "required", "write_container", "write_encoded_container"]
