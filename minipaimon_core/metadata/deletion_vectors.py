"""Deletion vectors: the rows of a primary-key table's data files that are no longer live.

With ``deletion-vectors.enabled`` every commit marks, for the keys it writes, the rows that
the merge engine would discard (an older version under ``deduplicate``, a newer one under
``first-row``), so at any snapshot each key has at most one unmarked row among the files
readers see (levels >= 1) and a reader takes every data file on its own: unmarked rows of
kind +I/+U are the table. A vector can be the only record of a delete (Paimon's compaction
drops a ``-D`` row once it has marked what it deletes), so whatever rewrites a table's
files reads them through their vectors (minipaimon_core.maintenance.compaction).

Paimon's format (:mod:`minipaimon_core.format.index_manifest`,
:mod:`minipaimon_core.format.deletion_vector_file`)::

    manifest/index-manifest-<uuid>-<n>   IndexManifestEntry: one DELETION_VECTORS index file
                                         per (partition, bucket) with vectors, each data
                                         file's (offset, length, cardinality) in it; the
                                         snapshot's full set (Snapshot.indexManifest)
    index/index-<uuid>-<n>               the vectors: 32-bit RoaringBitmaps with CRCs

Index files and index manifests are immutable, so decoded ones are cached by name.
Tables of minipaimon's earlier format are read too (:mod:`minipaimon_core.format.legacy`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import xxhash

from ..errors import CorruptMetadataError
from ..format import deletion_vector_file as dv_file
from ..format import index_manifest, legacy
from ..format.index_manifest import DELETION_VECTORS, HASH, IndexFileEntry, VectorRange
from ..format.kinds import EntryKind
from ..format.layout import TableLayout
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from .manifest_io import ManifestIO

Vectors = dict[str, np.ndarray]
"""Data file name -> sorted, distinct row positions (uint32) deleted in it."""
BucketKey = tuple[tuple[Any, ...], int]
"""(partition values, bucket)."""

_CACHE_SIZE = 1024
_VECTOR_TYPES = (DELETION_VECTORS, legacy.INDEX_TYPE)


class DeletionVectorIO:
    """Reads and writes index files and index manifests of one table. Thread-safe."""

    def __init__(self, io: FileIO, layout: TableLayout, manifests: ManifestIO) -> None:
        self._io = io
        self._layout = layout
        self._manifests = manifests
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, list[IndexFileEntry]] = OrderedDict()
        self._indexes: OrderedDict[str, Vectors] = OrderedDict()

    def _remember(self, cache: OrderedDict, name: str, value: Any) -> None:
        with self._lock:
            cache[name] = value
            while len(cache) > _CACHE_SIZE:
                cache.popitem(last=False)

    def _read(self, path: str) -> bytes:
        try:
            return self._io.read_bytes(path)
        except FileNotFoundError:  # as a missing data file (data_file.read_data_file)
            raise CorruptMetadataError(
                f"deletion-vector file {path} is missing: it was deleted outside minipaimon (or "
                "the snapshot read was expired or rolled back meanwhile: then re-plan the "
                "read); restore it or roll the table back") from None

    # -- reading -----------------------------------------------------------------------------

    def entries(self, snapshot: Snapshot | None) -> list[IndexFileEntry]:
        """The deletion-vector index files of ``snapshot`` ([] without deletion vectors).

        Raises CorruptMetadataError if the index manifest is missing, damaged, or not the
        one the snapshot recorded (its digest differs: swapped or copied over)."""
        return [e for e in self.index_entries(snapshot) if e.indexType in _VECTOR_TYPES]

    def hash_entries(self, snapshot: Snapshot | None) -> list[IndexFileEntry]:
        """The HASH index files of ``snapshot`` (dynamic-bucket tables; see
        :mod:`minipaimon_core.dynamic`). Raises CorruptMetadataError as :meth:`entries`."""
        return [e for e in self.index_entries(snapshot) if e.indexType == HASH]

    def index_entries(self, snapshot: Snapshot | None) -> list[IndexFileEntry]:
        """Every index file of ``snapshot``: deletion vectors, HASH indexes and any other
        type a later Paimon writes (what maintenance keeps, and what a new index manifest
        carries over). Raises CorruptMetadataError as :meth:`entries`."""
        name = snapshot.indexManifest if snapshot is not None else None
        if name is None:
            return []
        found = self._entries.get(name)
        if found is None:
            assert snapshot is not None
            path = self._layout.manifest_path(name)
            data = self._read(path)
            expected = snapshot.index_manifest_digest
            if expected is not None and xxhash.xxh64_hexdigest(data) != expected:
                raise CorruptMetadataError(
                    f"{path}: not the index manifest snapshot {snapshot.id} recorded (digest "
                    "differs): the file was replaced or damaged")
            if legacy.is_binary(data):
                found = legacy.decode_index_manifest(data, path)
            else:
                decoded = index_manifest.decode(data, path, self._manifests.row_types().partition)
                found = [e for e in decoded if e.kind == EntryKind.ADD]
            self._remember(self._entries, name, found)
        return found

    def by_bucket(self, snapshot: Snapshot | None) -> dict[BucketKey, IndexFileEntry]:
        return {(tuple(e.partition), e.bucket): e for e in self.entries(snapshot)}

    def vectors(self, entry: IndexFileEntry) -> Vectors:
        """The vectors of the index file ``entry`` names. Raises CorruptMetadataError if the
        file is damaged or is not the one ``entry`` describes (size, vector sizes, CRCs,
        deleted-row counts: an index file swapped or copied over) or missing."""
        found = self._indexes.get(entry.fileName)
        if found is None:
            path = self._layout.index_path(entry.fileName)
            data = self._read(path)
            if len(data) != entry.fileSize or (entry.digest is not None and xxhash.xxh64_intdigest(data) != entry.digest):
                raise CorruptMetadataError(
                    f"{path} ({len(data)} bytes) is not the index file its index manifest "
                    f"describes ({entry.fileSize} bytes): the file was replaced or damaged")
            if entry.indexType == legacy.INDEX_TYPE:
                found = legacy.decode_index_file(data, path)
                if sorted(found) != sorted(entry.data_files) or \
                        sum(len(p) for p in found.values()) != entry.rowCount:
                    raise CorruptMetadataError(f"{path} does not hold the vectors its index manifest "
                                               "lists: the file belongs to another bucket or snapshot")
            else:
                ranges = [dv_file.DeletionVectorRange(r.dataFile, r.offset, r.length,
                                                      -1 if r.cardinality is None else r.cardinality)
                          for r in entry.ranges or ()]
                found = dv_file.decode_index_file(data, ranges, path)
            self._remember(self._indexes, entry.fileName, found)
        return found

    # -- writing -----------------------------------------------------------------------------

    def write_index(self, partition: tuple[Any, ...], bucket: int, vectors: Vectors) -> IndexFileEntry:
        """Write one bucket's vectors (non-empty) as a new index file."""
        name = TableLayout.new_index_name()
        ordered = sorted(vectors.items())
        data, ranges = dv_file.encode_index_file(ordered)
        self._io.write_bytes(self._layout.index_path(name), data)
        self._remember(self._indexes, name, dict(vectors))
        return IndexFileEntry(
            kind=EntryKind.ADD, partition=tuple(partition), bucket=bucket, indexType=DELETION_VECTORS,
            fileName=name, fileSize=len(data), rowCount=len(ranges),
            ranges=tuple(VectorRange(r.file_name, r.offset, r.length, r.cardinality) for r in ranges),
            digest=xxhash.xxh64_intdigest(data))

    def write_manifest(self, entries: list[IndexFileEntry]) -> tuple[str, str]:
        """Write an index manifest; its name and digest (for the snapshot)."""
        name = TableLayout.new_index_manifest_name()
        data = index_manifest.encode(entries, self._manifests.row_types().partition)
        self._io.write_bytes(self._layout.manifest_path(name), data)
        self._remember(self._entries, name, list(entries))
        return name, xxhash.xxh64_hexdigest(data)

    def write_snapshot_index(self, base: Snapshot | None, vectors: list[IndexFileEntry] | None,
                             hashes: list[IndexFileEntry] | None, written: list[str]
                             ) -> tuple[str | None, str | None]:
        """The index manifest (name, digest) of a snapshot on ``base`` whose deletion-vector
        entries are ``vectors`` and HASH entries ``hashes`` (None: the base's, unchanged):
        the base's own manifest if both are None, no manifest if no entry is left, else a new
        one (its name appended to ``written``, for cleanup if the attempt fails)."""
        if vectors is None and hashes is None:
            return (base.indexManifest, base.index_manifest_digest) if base is not None else (None, None)
        if vectors is None:
            vectors = self.entries(base)
        if hashes is None:
            hashes = self.hash_entries(base)
        others = [e for e in self.index_entries(base) if e.indexType not in (*_VECTOR_TYPES, HASH)]
        entries = sorted([*vectors, *hashes, *others],
                         key=lambda e: repr((e.indexType, e.partition, e.bucket)))
        if not entries:
            return None, None
        name, digest = self.write_manifest(entries)
        written.append(name)
        return name, digest


def index_file_names(dvio: DeletionVectorIO, snapshot: Snapshot) -> list[str]:
    """Names of the index manifest and index files (deletion vectors, HASH) ``snapshot``
    references."""
    if snapshot.indexManifest is None:
        return []
    return [snapshot.indexManifest, *(e.fileName for e in dvio.index_entries(snapshot))]


def deleted_rows(entry: IndexFileEntry) -> int | None:
    """Rows the index file marks (None where the writer did not record the counts)."""
    if entry.indexType == legacy.INDEX_TYPE:
        return entry.rowCount
    counts = [r.cardinality for r in entry.ranges or ()]
    return None if None in counts else sum(c for c in counts if c is not None)


def live_mask(num_rows: int, positions: np.ndarray | None, path: str) -> np.ndarray | None:
    """Boolean mask of the rows not in ``positions`` (None: all rows live).

    Raises CorruptMetadataError if a position is past the file's ``num_rows`` rows."""
    if positions is None or len(positions) == 0:
        return None
    if int(positions[-1]) >= num_rows:
        raise CorruptMetadataError(
            f"deletion vector of {path} deletes row {int(positions[-1])} of a file of "
            f"{num_rows} rows: the index file does not belong to this data file")
    mask = np.ones(num_rows, dtype=bool)
    mask[positions] = False
    return mask


__all__ = ["BucketKey", "DeletionVectorIO", "IndexFileEntry", "Vectors", "deleted_rows",
           "index_file_names", "live_mask"]
