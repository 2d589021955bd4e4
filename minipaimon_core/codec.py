"""Checksummed, versioned encodings shared by every metadata file.

Two envelopes:

* **JSON** (schema, snapshot, tag, consumer files): the struct's compact JSON with a
  trailing ``"checksum"`` member, the xxhash64 (hex) of the JSON without it. The file stays
  plain, readable JSON.
* **Binary** (manifest and manifest-list files): ``b"MPM"`` + format version byte +
  8-byte little-endian xxhash64 of the payload + zstd(msgpack(struct)). Version 1 holds
  only 64-bit integers; version 2 (written only when some integer needs it, e.g. the
  unscaled value of a DECIMAL(38, 18) stat) adds msgpack ext type 1: an integer of any
  size as big-endian two's-complement bytes. Both versions are read.

A truncated, torn or altered file fails its checksum and raises
:class:`~minipaimon_core.errors.CorruptMetadataError`, never decodes to wrong data.
"""

from __future__ import annotations

import struct
import threading
from typing import Any, TypeVar

import msgspec
import xxhash
import zstandard

from .errors import CorruptMetadataError

T = TypeVar("T")

FORMAT_VERSION = 1
BIG_INT_VERSION = 2  # FORMAT_VERSION + ext type _BIG_INT for integers beyond 64 bits
_BIG_INT = 1
_MAGIC = b"MPM"
_HEADER = struct.Struct("<3sBQ")
_CHECKSUM_KEY = b',"checksum":"'


class _Codecs(threading.local):
    """Encoder and compressor objects, one set per thread.

    A ``zstandard`` compressor or decompressor must not be used by two threads at once
    (it releases the GIL and keeps its stream state in the object: shared, it produced
    corrupt output that was then checksummed as valid). msgspec encoders hold the GIL
    while encoding and would be safe to share, but cost nothing to keep per thread too.
    """

    def __init__(self) -> None:
        self.json = msgspec.json.Encoder()
        self.msgpack = msgspec.msgpack.Encoder()
        self.compressor = zstandard.ZstdCompressor(level=3)
        self.decompressor = zstandard.ZstdDecompressor()


_local = _Codecs()


def encode_json(obj: Any) -> bytes:
    """Encode a msgspec struct as checksummed JSON."""
    body = _local.json.encode(obj)
    if not body.endswith(b"}"):
        raise TypeError("only JSON objects can be checksummed")
    digest = xxhash.xxh64_hexdigest(body)
    return body[:-1] + _CHECKSUM_KEY + digest.encode() + b'"}'


def decode_json(data: bytes, type_: type[T], path: str) -> T:
    """Decode checksummed JSON into ``type_``. Raises CorruptMetadataError naming ``path``."""
    cut = data.rfind(_CHECKSUM_KEY)
    if cut < 0 or not data.endswith(b'"}'):
        raise CorruptMetadataError(f"{path}: truncated or not a minipaimon metadata file")
    body = data[:cut] + b"}"
    digest = data[cut + len(_CHECKSUM_KEY) : -2].decode("ascii", "replace")
    if xxhash.xxh64_hexdigest(body) != digest:
        raise CorruptMetadataError(f"{path}: checksum mismatch (torn or altered file)")
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.DecodeError as e:
        raise CorruptMetadataError(f"{path}: cannot decode: {e}") from e


def encode_binary(obj: Any) -> bytes:
    """Encode a msgspec struct as msgpack, zstd-compressed, with header and checksum."""
    packed, version = _pack(obj)
    payload = _local.compressor.compress(packed)
    return _HEADER.pack(_MAGIC, version, xxhash.xxh64_intdigest(payload)) + payload


def _pack(obj: Any) -> tuple[bytes, int]:
    """msgpack of ``obj`` and its format version: 1 unless an integer leaves 64 bits."""
    try:
        return _local.msgpack.encode(obj), FORMAT_VERSION
    except OverflowError:
        plain = msgspec.to_builtins(obj, builtin_types=(bytes,))
        return _local.msgpack.encode(_big_ints_as_ext(plain)), BIG_INT_VERSION


def _big_ints_as_ext(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _big_ints_as_ext(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):  # to_builtins keeps tuples
        return [_big_ints_as_ext(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
        return msgspec.msgpack.Ext(_BIG_INT, v.to_bytes(v.bit_length() // 8 + 1, "big", signed=True))
    return v


def _ext_hook(code: int, data: memoryview) -> Any:
    if code != _BIG_INT:
        raise msgspec.DecodeError(f"unknown msgpack extension type {code}")
    return int.from_bytes(data, "big", signed=True)


def decode_binary(data: bytes, type_: type[T], path: str) -> T:
    """Decode :func:`encode_binary` output. Raises CorruptMetadataError naming ``path``."""
    if len(data) < _HEADER.size:
        raise CorruptMetadataError(f"{path}: truncated metadata file ({len(data)} bytes)")
    magic, version, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        raise CorruptMetadataError(f"{path}: not a minipaimon metadata file")
    if version not in (FORMAT_VERSION, BIG_INT_VERSION):
        raise CorruptMetadataError(f"{path}: unknown format version {version}")
    payload = data[_HEADER.size :]
    if xxhash.xxh64_intdigest(payload) != digest:
        raise CorruptMetadataError(f"{path}: checksum mismatch (torn or altered file)")
    try:
        return msgspec.msgpack.decode(_local.decompressor.decompress(payload), type=type_, ext_hook=_ext_hook)
    except (msgspec.DecodeError, zstandard.ZstdError) as e:
        raise CorruptMetadataError(f"{path}: cannot decode: {e}") from e
