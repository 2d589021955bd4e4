"""JSON metadata files (snapshots, schemas, tags, consumers) and minipaimon's checksum.

Paimon writes these as plain JSON objects; its readers (Java's Jackson, pypaimon, paimon-rust)
ignore members they do not know. minipaimon appends one: ``"checksum": "<xxhash64 hex>"``,
computed over the JSON text without that member, so a truncated, torn or altered file of
its own raises ``CorruptMetadataError`` instead of decoding to wrong data. A file another
writer wrote has no checksum and is parsed as it is (a file that is not valid JSON, or not
the structure, is still a ``CorruptMetadataError``).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
import xxhash

from ..errors import CorruptMetadataError

T = TypeVar("T")
_CHECKSUM_KEY = b',"checksum":"'
_encoder = msgspec.json.Encoder()


def encode(obj: Any) -> bytes:
    """``obj`` (a msgspec struct) as compact JSON with a trailing checksum member."""
    body = _encoder.encode(obj)
    if not body.endswith(b"}"):
        raise TypeError("only JSON objects can be checksummed")
    return body[:-1] + _CHECKSUM_KEY + xxhash.xxh64_hexdigest(body).encode() + b'"}'


def decode(data: bytes, type_: type[T], path: str) -> T:
    """Decode a JSON metadata file into ``type_``, checking minipaimon's checksum where
    there is one. Raises CorruptMetadataError naming ``path``."""
    body = data
    cut = data.rfind(_CHECKSUM_KEY)
    if cut >= 0 and data.endswith(b'"}') and len(data) - cut - len(_CHECKSUM_KEY) - 2 == 16:
        body = data[:cut] + b"}"
        digest = data[cut + len(_CHECKSUM_KEY):-2].decode("ascii", "replace")
        if xxhash.xxh64_hexdigest(body) != digest:
            raise CorruptMetadataError(f"{path}: checksum mismatch (torn or altered file)")
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.DecodeError as e:
        raise CorruptMetadataError(f"{path}: cannot decode: {e}") from None


__all__ = ["decode", "encode"]
