"""minipaimon's earlier format (until 2026-11-25): read, never written.

Tables written before minipaimon adopted Paimon's format keep working: they are read as
before, writes to them are refused with a message naming ``minipaimon migrate``, and
:mod:`minipaimon_core.migrate` rewrites one into Paimon's format. What differs:

* JSON files (schema, snapshot, tag, consumer) carry ``"version": 1``; a schema's nested
  types use ``{"nullable": false}`` and ROW fields have no ids;
* manifests, manifest lists, index manifests and index files are ``b"MPM"`` + version byte
  (1, or 2 with big integers as msgpack ext type 1) + xxhash64 of the payload +
  zstd(msgpack) of the structs (the field names are those of the current structs);
* a primary-key file's rows hold writer-local ``_SEQUENCE_NUMBER`` values; the manifest's
  ``sequenceOffset`` makes them table-wide; its min/max key is the whole primary key;
* partition directories escape every character but ``[A-Za-z0-9_.-]`` and write dates as
  ISO dates.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec
import numpy as np
import xxhash
import zstandard

from ..errors import CorruptMetadataError
from . import index_manifest, manifest_file, manifest_list, typed_decode
from . import snapshot as snapshot_codec
from .data_file_meta import NonNegative
from .index_manifest import IndexFileEntry, VectorRange
from .manifest_file import ManifestEntry
from .manifest_list import ManifestFileMeta
from .snapshot import Digests, Snapshot
from .table_schema import DataField, TableSchema

MAGIC = b"MPM"
INDEX_TYPE = "MINIPAIMON_V1"  # IndexFileEntry.indexType of an index file of this format
_HEADER = struct.Struct("<3sBQ")
_BIG_INT = 1


def is_binary(data: bytes) -> bool:
    """Whether a manifest, manifest list, index manifest or index file is of this format."""
    return data[:3] == MAGIC


def is_json(data: bytes) -> bool:
    """Whether a schema / snapshot / tag JSON file is of this format (however re-formatted:
    version 1 first, a checksum member)."""
    head = b"".join(data[:64].split())
    return head.startswith(b'{"version":1,') and b'"checksum"' in data


def _ext_hook(code: int, data: memoryview) -> Any:
    if code != _BIG_INT:
        raise msgspec.DecodeError(f"unknown msgpack extension type {code}")
    return int.from_bytes(data, "big", signed=True)


def decode_binary(data: bytes, type_: Any, path: str) -> Any:
    """Decode an ``MPM`` file. Raises CorruptMetadataError naming ``path``."""
    if len(data) < _HEADER.size:
        raise CorruptMetadataError(f"{path}: truncated metadata file ({len(data)} bytes)")
    magic, version, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptMetadataError(f"{path}: not a minipaimon metadata file")
    if version not in (1, 2):
        raise CorruptMetadataError(f"{path}: unknown format version {version}")
    payload = data[_HEADER.size:]
    if xxhash.xxh64_intdigest(payload) != digest:
        raise CorruptMetadataError(f"{path}: checksum mismatch (torn or altered file)")
    try:
        return typed_decode.msgpack_decoder(type_, _ext_hook).decode(zstandard.ZstdDecompressor().decompress(payload))
    except (msgspec.DecodeError, zstandard.ZstdError) as e:
        raise CorruptMetadataError(f"{path}: cannot decode: {e}") from e


def decode_entries(data: bytes, path: str) -> list[ManifestEntry]:
    """Entries of a manifest of this format, checked as the current format's."""
    entries: list[ManifestEntry] = decode_binary(data, list[ManifestEntry], path)
    manifest_file.check_entries(entries, path)
    return entries


def decode_manifest_list(data: bytes, path: str) -> list[ManifestFileMeta]:
    """Metas of a manifest list of this format, checked as the current format's."""
    metas: list[ManifestFileMeta] = decode_binary(data, list[ManifestFileMeta], path)
    manifest_list.check_metas(metas, path)
    return metas


class _Snapshot(msgspec.Struct, frozen=True):
    version: int
    id: int
    schemaId: int
    baseManifestList: str
    deltaManifestList: str
    commitUser: str
    commitIdentifier: int
    commitKind: str
    timeMillis: int
    totalRecordCount: int
    deltaRecordCount: int
    nextSequenceNumber: int = 0
    changelogManifestList: str | None = None
    changelogRecordCount: int | None = None
    watermark: int | None = None
    properties: dict[str, str] | None = None
    indexManifest: str | None = None
    indexManifestDigest: str | None = None


def decode_snapshot(data: bytes, path: str) -> Snapshot:
    from . import json_file

    s = json_file.decode(data, _Snapshot, path)
    return snapshot_codec.checked(Snapshot(
        version=1, id=s.id, schemaId=s.schemaId, baseManifestList=s.baseManifestList,
        deltaManifestList=s.deltaManifestList, changelogManifestList=s.changelogManifestList,
        indexManifest=s.indexManifest, commitUser=s.commitUser, commitIdentifier=s.commitIdentifier,
        commitKind=s.commitKind, timeMillis=s.timeMillis, totalRecordCount=s.totalRecordCount,
        deltaRecordCount=s.deltaRecordCount, changelogRecordCount=s.changelogRecordCount,
        watermark=s.watermark, properties=s.properties, nextSequenceNumber=s.nextSequenceNumber,
        minipaimonDigests=Digests(index=s.indexManifestDigest) if s.indexManifestDigest else None), path)


class _Schema(msgspec.Struct, frozen=True):
    version: int
    id: int
    fields: list[dict[str, Any]]
    highestFieldId: int
    partitionKeys: list[str]
    primaryKeys: list[str]
    options: dict[str, str]
    timeMillis: int
    comment: str | None = None


def _paimon_type(t: Any, next_id: list[int]) -> Any:
    """This format's type notation as Paimon's type JSON (nested ROW fields get ids above
    the schema's highest)."""
    if isinstance(t, str):
        return t
    suffix = "" if t.get("nullable", True) else " NOT NULL"
    kind = t["type"]
    if kind == "ARRAY":
        return {"type": "ARRAY" + suffix, "element": _paimon_type(t["element"], next_id)}
    if kind == "MAP":
        return {"type": "MAP" + suffix, "key": _paimon_type(t["key"], next_id),
                "value": _paimon_type(t["value"], next_id)}
    fields = []
    for f in t["fields"]:
        typ = _paimon_type(f["type"], next_id)
        next_id[0] += 1
        fields.append({"id": next_id[0], "name": f["name"], "type": typ})
    return {"type": "ROW" + suffix, "fields": fields}


def decode_schema(data: bytes, path: str) -> TableSchema:
    from . import json_file

    s = json_file.decode(data, _Schema, path)
    next_id = [s.highestFieldId]
    fields = [DataField(f["id"], f["name"], _paimon_type(f["type"], next_id)) for f in s.fields]
    return TableSchema(version=1, id=s.id, fields=fields, highestFieldId=next_id[0],
                       partitionKeys=s.partitionKeys, primaryKeys=s.primaryKeys,
                       options=dict(s.options), timeMillis=s.timeMillis, comment=s.comment,
                       legacyFormat=True)


class _IndexEntry(msgspec.Struct, frozen=True):
    partition: list[Any]
    bucket: NonNegative
    fileName: str
    fileSize: NonNegative
    deletedRows: NonNegative
    dataFiles: list[str] = []


class _DeletionIndex(msgspec.Struct, frozen=True):
    vectors: dict[str, bytes]


def decode_index_manifest(data: bytes, path: str) -> list[IndexFileEntry]:
    """Entries of an index manifest of this format, as IndexFileEntry of type
    :data:`INDEX_TYPE` (ranges name the data files; offsets and lengths are unused)."""
    out = []
    for e in decode_binary(data, list[_IndexEntry], path):
        out.append(IndexFileEntry(0, tuple(e.partition), e.bucket, INDEX_TYPE, e.fileName, e.fileSize,
                                  e.deletedRows, tuple(VectorRange(n, 0, 0, None) for n in e.dataFiles)))
    index_manifest.check_entries(out, path, (INDEX_TYPE,))
    return out


def decode_index_file(data: bytes, path: str) -> dict[str, np.ndarray]:
    """Data file name -> deleted row positions of an index file of this format."""
    index = decode_binary(data, _DeletionIndex, path)
    return {name: np.frombuffer(raw, dtype="<u4") for name, raw in index.vectors.items()}


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
NULL_PARTITION = "__DEFAULT_PARTITION__"


def escape_segment(value: str) -> str:
    """This format's partition value escaping (every character but ``[A-Za-z0-9_.-]`` as
    ``%XX`` of its UTF-8 bytes; dots-only values and the literal default name encoded)."""
    if value and set(value) == {"."}:
        return "%2E" * len(value)
    escaped = "".join(ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode()) for ch in value)
    return "%5F" + escaped[1:] if escaped == NULL_PARTITION else escaped


def partition_path(keys: list[str], texts: list[str | None]) -> str:
    """``k1=v1/k2=v2`` as this format named partition directories (``texts``: the values as
    :func:`minipaimon_core.expressions.stats.stat_to_string` renders them, None for null)."""
    return "/".join(f"{escape_segment(k)}={NULL_PARTITION if v is None else escape_segment(v)}"
                    for k, v in zip(keys, texts))


__all__ = ["INDEX_TYPE", "MAGIC", "decode_binary", "decode_entries", "decode_index_file",
           "decode_index_manifest", "decode_manifest_list", "decode_schema", "decode_snapshot",
           "escape_segment", "is_binary", "is_json", "partition_path"]
