"""JSON metadata files (snapshots, schemas, tags, consumers) and minipaimon's checksum.

Paimon writes these as plain JSON objects; its readers (Java's Jackson, pypaimon, paimon-rust)
ignore members they do not know. minipaimon appends one: ``"checksum": "<xxhash64 hex>"``,
computed over the compact JSON text without that member, so a truncated, torn or altered
file of its own raises ``CorruptMetadataError`` instead of decoding to wrong data. A file
another writer wrote has no checksum and is parsed as it is (a file that is not valid JSON,
or not the structure, is still a ``CorruptMetadataError``).

The checksum is verified whatever the file's formatting: a file re-saved by a tool
(``json.dumps(..., indent=2)``, ``jq``) keeps its members and their order, so its compact
re-encoding without the checksum member is the text the checksum was computed over (and if
a tool reordered the members, the struct's own member order is tried too). A re-saved file
whose values changed is refused like a torn one.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
import xxhash

from ..errors import CorruptMetadataError
from . import typed_decode

T = TypeVar("T")
CHECKSUM = "checksum"
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
    return decode_checked(data, type_, path)[0]


def decode_checked(data: bytes, type_: type[T], path: str) -> tuple[T, bool]:
    """:func:`decode`, and whether the file carried minipaimon's checksum (then verified):
    False for a file of another writer, whose values minipaimon alone relies on (such as a
    snapshot's ``nextSequenceNumber``) are not to be trusted."""
    body, checked = _verified_body(data, type_, path)
    try:
        return typed_decode.json_decoder(type_).decode(body), checked
    except (msgspec.DecodeError, ValueError) as e:  # ValueError: invalid UTF-8
        raise CorruptMetadataError(f"{path}: cannot decode: {e}") from None


def _verified_body(data: bytes, type_: type[Any], path: str) -> tuple[bytes, bool]:
    """The JSON to decode and whether it was checksummed; a checksum that does not match
    raises CorruptMetadataError."""
    cut = data.rfind(_CHECKSUM_KEY)
    if cut >= 0 and data.endswith(b'"}') and len(data) - cut - len(_CHECKSUM_KEY) - 2 == 16:
        body = data[:cut] + b"}"  # as written: compact, checksum last
        if xxhash.xxh64_hexdigest(body) == data[cut + len(_CHECKSUM_KEY):-2].decode("ascii", "replace"):
            return body, True
    if b'"checksum"' not in data and cut < 0:
        return data, False  # another writer's file
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, ValueError) as e:  # ValueError: invalid UTF-8
        raise CorruptMetadataError(f"{path}: cannot decode: {e}") from None
    if not isinstance(obj, dict) or CHECKSUM not in obj:
        return data, False  # "checksum" only inside a value
    digest = obj.pop(CHECKSUM)
    body = msgspec.json.encode(obj)  # compact, members in the file's order
    if xxhash.xxh64_hexdigest(body) == digest or _reordered_matches(body, digest, type_):
        return body, True
    raise CorruptMetadataError(f"{path}: checksum mismatch (torn or altered file)")


def _reordered_matches(body: bytes, digest: object, type_: type[Any]) -> bool:
    """Whether ``body`` decoded as ``type_`` and encoded again (the struct's member order)
    matches ``digest``: a file whose members a tool reordered (``jq -S``)."""
    try:
        return xxhash.xxh64_hexdigest(_encoder.encode(typed_decode.json_decoder(type_).decode(body))) == digest
    except (msgspec.DecodeError, ValueError):
        return False


__all__ = ["decode", "decode_checked", "encode"]
