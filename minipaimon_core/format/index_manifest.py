"""Index manifests (``manifest/index-manifest-<uuid>-<n>``): Paimon's ``IndexManifestEntry``.

An Avro object container of ``IndexManifestEntry`` records (``_VERSION`` 1): per
(partition, bucket), an index file of ``_INDEX_TYPE`` ``DELETION_VECTORS`` (or ``HASH``, the
key hashes of a dynamic-bucket table, which minipaimon does not write) with its size, row
count and, for deletion vectors, where each data file's vector is in it
(``_DELETIONS_VECTORS_RANGES``: data file name, offset, length, cardinality). A snapshot's
``indexManifest`` lists all of its index files (only ADD entries). minipaimon adds an
optional ``_MINIPAIMON_DIGEST``, the xxhash64 of the index file, which Paimon's readers skip
(they resolve fields by name): the index files do not name their data files, so two valid
index files of one size swapped between buckets are told apart only by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import CorruptMetadataError
from . import avro, binary_row, typed_decode
from .avro import optional, required
from .data_file_meta import Kind, NonNegative
from .file_names import check_data_file_names
from .kinds import EntryKind
from .layout import check_file_name

VERSION = 1
DELETION_VECTORS = "DELETION_VECTORS"
HASH = "HASH"
INDEX_TYPES = (DELETION_VECTORS, HASH)  # what Paimon 0.9 .. 1.x write
_RANGE = {"type": "record", "name": "record__DELETIONS_VECTORS_RANGES", "fields": [
    required("f0", "string"), required("f1", "int"), required("f2", "int"),
    optional("_CARDINALITY", "long")]}
SCHEMA: dict[str, Any] = {"type": "record", "name": "record", "namespace": avro.NAMESPACE, "fields": [
    required("_VERSION", "int"), required("_KIND", "int"), required("_PARTITION", "bytes"),
    required("_BUCKET", "int"), required("_INDEX_TYPE", "string"), required("_FILE_NAME", "string"),
    required("_FILE_SIZE", "long"), required("_ROW_COUNT", "long"),
    optional("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": avro.nullable(_RANGE)}),
    optional("_EXTERNAL_PATH", "string"),
    optional("_MINIPAIMON_DIGEST", "long"),
]}


class VectorRange(msgspec.Struct, frozen=True, gc=False):
    """Where one data file's deletion vector is in an index file; ``cardinality`` (its
    deleted rows) is None from writers before Paimon 1.0."""

    dataFile: str  # a data file name (check_entries)
    offset: NonNegative
    length: NonNegative
    cardinality: NonNegative | None


class IndexFileEntry(msgspec.Struct, frozen=True, gc=False):
    """One index file of one (partition, bucket)."""

    kind: Kind
    partition: tuple[Any, ...]
    bucket: NonNegative
    indexType: str
    fileName: str  # an index-* name (check_entries)
    fileSize: NonNegative
    rowCount: NonNegative
    ranges: tuple[VectorRange, ...] | None = None
    digest: int | None = None  # xxhash64 (unsigned) of the index file; None from other writers

    @property
    def data_files(self) -> tuple[str, ...]:
        return tuple(r.dataFile for r in self.ranges or ())


def encode(entries: Sequence[IndexFileEntry], partition_types: Sequence[str],
           compression: str = "zstd") -> bytes:
    records = [{
        "_VERSION": VERSION, "_KIND": int(e.kind),
        "_PARTITION": binary_row.encode(e.partition, partition_types, reserve_nulls=True),
        "_BUCKET": e.bucket,
        "_INDEX_TYPE": e.indexType, "_FILE_NAME": e.fileName, "_FILE_SIZE": e.fileSize,
        "_ROW_COUNT": e.rowCount,
        "_DELETIONS_VECTORS_RANGES": None if e.ranges is None else [
            {"f0": r.dataFile, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
            for r in e.ranges],
        "_EXTERNAL_PATH": None,
        "_MINIPAIMON_DIGEST": None if e.digest is None else e.digest - (1 << 64) if e.digest >= 1 << 63 else e.digest,
    } for e in entries]
    return avro.write_container(SCHEMA, records, compression)


def decode(data: bytes, path: str, partition_types: Sequence[str]) -> list[IndexFileEntry]:
    """The entries of an index manifest. Raises CorruptMetadataError (damaged, a value out
    of its range, an unknown index type, a name that is not a plain file name)."""
    out = []
    for r in avro.read_container(data, path).records:
        if r.get("_VERSION") != VERSION:
            raise CorruptMetadataError(f"{path}: index manifest version {r.get('_VERSION')} (expected {VERSION})")
        ranges = r.get("_DELETIONS_VECTORS_RANGES")
        try:
            entry = typed_decode.convert(dict(  # the struct's ranges checked, as in every decoder
                kind=r["_KIND"], partition=tuple(binary_row.decode(r["_PARTITION"], partition_types)),
                bucket=r["_BUCKET"], indexType=r["_INDEX_TYPE"], fileName=r["_FILE_NAME"],
                fileSize=r["_FILE_SIZE"], rowCount=r["_ROW_COUNT"],
                ranges=None if ranges is None else [
                    dict(dataFile=x["f0"], offset=x["f1"], length=x["f2"], cardinality=x.get("_CARDINALITY"))
                    for x in ranges if x],
                digest=None if r.get("_MINIPAIMON_DIGEST") is None
                else r["_MINIPAIMON_DIGEST"] & ((1 << 64) - 1)), IndexFileEntry)
        except msgspec.ValidationError as e:
            raise CorruptMetadataError(f"{path}: index file {r.get('_FILE_NAME')!r}: {e}; the index "
                                       "manifest is damaged: restore it or roll the table back") from None
        out.append(entry)
    check_entries(out, path, INDEX_TYPES)
    return out


def check_entries(entries: Sequence[IndexFileEntry], path: str, types: Sequence[str]) -> None:
    """What the struct types cannot say of decoded ``entries``: a known index type, a plain
    ``index-*`` file name, data file names in the ranges. Raises CorruptMetadataError."""
    for e in entries:
        if e.indexType not in types:
            raise CorruptMetadataError(
                f"{path}: index file {e.fileName!r} has the index type {e.indexType!r}, not one of "
                f"{', '.join(types)}: the index manifest is damaged; restore it or roll the table back")
        check_file_name("index", e.fileName, path)
    check_data_file_names([r.dataFile for e in entries for r in e.ranges or ()], path)


ADD = EntryKind.ADD

__all__ = ["ADD", "DELETION_VECTORS", "HASH", "INDEX_TYPES", "IndexFileEntry", "SCHEMA", "VectorRange",
           "check_entries", "decode", "encode"]
