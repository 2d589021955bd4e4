"""Manifest lists (``manifest/manifest-list-<uuid>-<n>``): Paimon's ``ManifestFileMeta``.

An Avro object container of ``ManifestFileMeta`` records (``_VERSION`` 2, file name and
size, added / deleted file counts, partition stats as ``BinaryRow`` bytes, schema id, and
the bucket / level ranges Paimon 1.x added). minipaimon adds two optional fields, which
Paimon's readers skip (they resolve fields by name): ``_MINIPAIMON_DIGEST``, the xxhash64 of
the whole manifest file, checked when it is read (another valid manifest under this name is
refused), and ``_MINIPAIMON_CLUSTERED``, set by a full manifest rewrite
(:mod:`minipaimon_core.metadata.manifest_merge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import CorruptMetadataError
from . import avro
from .avro import optional, required
from .bucket_names import POSTPONE_BUCKET
from .data_file_meta import Bucket, NonNegative
from .layout import check_file_name
from .manifest_file import SimpleStats, decode_stats, encode_stats

VERSION = 2
_STATS = {"type": "record", "name": "record__PARTITION_STATS", "fields": [
    required("_MIN_VALUES", "bytes"), required("_MAX_VALUES", "bytes"),
    optional("_NULL_COUNTS", {"type": "array", "items": avro.nullable("long")})]}
SCHEMA: dict[str, Any] = {"type": "record", "name": "record", "namespace": avro.NAMESPACE, "fields": [
    required("_VERSION", "int"), required("_FILE_NAME", "string"), required("_FILE_SIZE", "long"),
    required("_NUM_ADDED_FILES", "long"), required("_NUM_DELETED_FILES", "long"),
    required("_PARTITION_STATS", _STATS), required("_SCHEMA_ID", "long"),
    optional("_MIN_BUCKET", "int"), optional("_MAX_BUCKET", "int"),
    optional("_MIN_LEVEL", "int"), optional("_MAX_LEVEL", "int"),
    optional("_MIN_ROW_ID", "long"), optional("_MAX_ROW_ID", "long"),
    optional("_MINIPAIMON_DIGEST", "long"), optional("_MINIPAIMON_CLUSTERED", "boolean"),
]}


class ManifestFileMeta(msgspec.Struct, frozen=True, gc=False):
    """Summary of one manifest file, as stored in a manifest list. Bucket and level ranges
    are None in lists of writers before Paimon 1.0."""

    fileName: str  # a manifest-* name (check_metas)
    fileSize: NonNegative
    numAddedFiles: NonNegative
    numDeletedFiles: NonNegative
    partitionStats: SimpleStats
    minBucket: Bucket | None
    maxBucket: Bucket | None
    minLevel: NonNegative | None
    maxLevel: NonNegative | None
    schemaId: NonNegative
    # xxhash64 (unsigned) of the whole manifest file; None from other writers.
    fileDigest: int | None = None
    # Written by a full manifest rewrite: its entries are sorted by partition and, with the
    # list's other clustered manifests, form one run cut at manifest.target-file-size.
    clustered: bool = False


def _signed(digest: int | None) -> int | None:
    return None if digest is None else digest - (1 << 64) if digest >= 1 << 63 else digest


def _unsigned(value: int | None) -> int | None:
    return None if value is None else value & ((1 << 64) - 1)


def encode(metas: Sequence[ManifestFileMeta], partition_names: Sequence[str],
           partition_types: Sequence[str], compression: str = "zstd") -> bytes:
    del partition_names  # stats cover every partition column, in order
    records = [{
        "_VERSION": VERSION, "_FILE_NAME": m.fileName, "_FILE_SIZE": m.fileSize,
        "_NUM_ADDED_FILES": m.numAddedFiles, "_NUM_DELETED_FILES": m.numDeletedFiles,
        "_PARTITION_STATS": encode_stats(m.partitionStats, partition_types), "_SCHEMA_ID": m.schemaId,
        "_MIN_BUCKET": m.minBucket, "_MAX_BUCKET": m.maxBucket, "_MIN_LEVEL": m.minLevel,
        "_MAX_LEVEL": m.maxLevel, "_MIN_ROW_ID": None, "_MAX_ROW_ID": None,
        "_MINIPAIMON_DIGEST": _signed(m.fileDigest), "_MINIPAIMON_CLUSTERED": m.clustered or None,
    } for m in metas]
    return avro.write_container(SCHEMA, records, compression)


def decode(data: bytes, path: str, partition_names: Sequence[str],
           partition_types: Sequence[str]) -> list[ManifestFileMeta]:
    """The manifest metas of a manifest list. Raises CorruptMetadataError (damaged, a value
    out of its range, a name that is not a plain manifest name)."""
    out = []
    for r in avro.read_container(data, path).records:
        if r.get("_VERSION") != VERSION:
            raise CorruptMetadataError(f"{path}: manifest list version {r.get('_VERSION')} (expected {VERSION})")
        _check_ranges(r, path)
        out.append(ManifestFileMeta(
            fileName=r["_FILE_NAME"], fileSize=r["_FILE_SIZE"], numAddedFiles=r["_NUM_ADDED_FILES"],
            numDeletedFiles=r["_NUM_DELETED_FILES"],
            partitionStats=decode_stats(r["_PARTITION_STATS"], partition_names, partition_types, None, path),
            minBucket=r.get("_MIN_BUCKET"), maxBucket=r.get("_MAX_BUCKET"),
            minLevel=r.get("_MIN_LEVEL"), maxLevel=r.get("_MAX_LEVEL"), schemaId=r["_SCHEMA_ID"],
            fileDigest=_unsigned(r.get("_MINIPAIMON_DIGEST")),
            clustered=bool(r.get("_MINIPAIMON_CLUSTERED"))))
    check_metas(out, path)
    return out


_NON_NEGATIVE = ("_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES", "_SCHEMA_ID", "_MIN_BUCKET",
                 "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL")
_BUCKETS = ("_MIN_BUCKET", "_MAX_BUCKET")  # may be -2: postponed rows (POSTPONE_BUCKET)


def _check_ranges(r: dict[str, Any], path: str) -> None:
    """The ranges of :class:`ManifestFileMeta` on an Avro record (null where optional)."""
    for field in _NON_NEGATIVE:
        value = r.get(field)
        if value is not None and value < 0 and not (field in _BUCKETS and value == POSTPONE_BUCKET):
            raise CorruptMetadataError(
                f"{path}: manifest {r.get('_FILE_NAME')!r} has {field} = {value}, which cannot be "
                "negative: the manifest list is damaged; restore it or roll the table back")


def check_metas(metas: Sequence[ManifestFileMeta], path: str) -> None:
    """Every meta of a decoded manifest list names a manifest by a plain ``manifest-*``
    name. Raises CorruptMetadataError naming ``path``."""
    for m in metas:
        check_file_name("manifest", m.fileName, path)
        if -1 in (m.minBucket, m.maxBucket):  # the struct allows -2..: -2 is postponed rows
            raise CorruptMetadataError(f"{path}: manifest {m.fileName!r} has the bucket range "
                                       f"{m.minBucket}..{m.maxBucket}: the manifest list is damaged")


__all__ = ["ManifestFileMeta", "SCHEMA", "check_metas", "decode", "encode"]
