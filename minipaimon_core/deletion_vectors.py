"""Deletion vectors: the rows of a primary-key table's data files that are no longer live.

With ``deletion-vectors.enabled`` every commit marks, for the keys it writes, the rows that
the merge engine would discard (an older version under ``deduplicate``, a newer one under
``first-row``), so at any snapshot each key has at most one unmarked row and a reader takes
every data file on its own: unmarked rows of kind +I/+U are the table. The files keep their
LSM meaning (a merge of a bucket's files ignoring the vectors gives the same rows), so the
vectors only make reads cheaper.

```
manifest/index-manifest-<uuid>   list[IndexEntry]: one per (partition, bucket) with vectors,
                                 the snapshot's full set (Snapshot.indexManifest)
index/index-<uuid>               DeletionIndex: data file name -> deleted row positions
```

Both use the binary envelope of :mod:`minipaimon_core.codec` (versioned, checksummed);
positions are sorted, distinct little-endian uint32. Index files and index manifests are
immutable, so decoded ones are cached by name.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import msgspec
import numpy as np
import xxhash

from . import codec
from .errors import CorruptMetadataError, SnapshotExpiredError
from .fileio import FileIO
from .layout import TableLayout
from .snapshot import Snapshot

Vectors = dict[str, np.ndarray]
"""Data file name -> sorted, distinct row positions (uint32) deleted in it."""
BucketKey = tuple[tuple[Any, ...], int]
"""(partition values, bucket)."""

_CACHE_SIZE = 1024


class IndexEntry(msgspec.Struct, frozen=True):
    """One bucket's index file, as listed in an index manifest."""

    partition: list[Any]
    bucket: int
    fileName: str
    fileSize: int
    deletedRows: int
    dataFiles: list[str] = []  # the data files that have a vector in it (planning reads this)


class DeletionIndex(msgspec.Struct, frozen=True):
    """The content of one index file."""

    vectors: dict[str, bytes]


def encode_positions(positions: np.ndarray) -> bytes:
    return np.asarray(positions, dtype="<u4").tobytes()


def decode_positions(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<u4")


class DeletionVectorIO:
    """Reads and writes index files and index manifests of one table. Thread-safe."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout
        self._lock = threading.Lock()
        self._manifests: OrderedDict[str, list[IndexEntry]] = OrderedDict()
        self._indexes: OrderedDict[str, Vectors] = OrderedDict()

    def _remember(self, cache: OrderedDict, name: str, value: Any) -> None:
        with self._lock:
            cache[name] = value
            while len(cache) > _CACHE_SIZE:
                cache.popitem(last=False)

    def _read(self, path: str) -> bytes:
        try:
            return self._io.read_bytes(path)
        except FileNotFoundError:  # as for a missing data file (data_file.read_data_file)
            raise SnapshotExpiredError(
                f"deletion-vector file {path} no longer exists: the snapshot being read was "
                "expired (or rolled back) meanwhile; re-plan the read, or keep snapshots longer "
                "with 'snapshot.num-retained.min' / 'snapshot.time-retained', a tag or a "
                "consumer-id") from None

    # -- reading -----------------------------------------------------------------------------

    def entries(self, snapshot: Snapshot | None) -> list[IndexEntry]:
        """The index entries of ``snapshot`` ([] without deletion vectors).

        Raises CorruptMetadataError if the index manifest is missing, damaged, or not the
        one the snapshot recorded (its digest differs: swapped or copied over)."""
        name = snapshot.indexManifest if snapshot is not None else None
        if name is None:
            return []
        found = self._manifests.get(name)
        if found is None:
            path = self._layout.manifest_path(name)
            data = self._read(path)
            assert snapshot is not None
            expected = snapshot.indexManifestDigest
            if expected is not None and xxhash.xxh64_hexdigest(data) != expected:
                raise CorruptMetadataError(
                    f"{path}: not the index manifest snapshot {snapshot.id} recorded (digest "
                    "differs): the file was replaced or damaged")
            found = codec.decode_binary(data, list[IndexEntry], path)
            self._remember(self._manifests, name, found)
        return found

    def by_bucket(self, snapshot: Snapshot | None) -> dict[BucketKey, IndexEntry]:
        return {(tuple(e.partition), e.bucket): e for e in self.entries(snapshot)}

    def vectors(self, entry: IndexEntry) -> Vectors:
        """The vectors of the index file ``entry`` names. Raises CorruptMetadataError if the
        file is missing or damaged, or is not the one ``entry`` describes (its size, data
        files or deleted-row count differ: an index file swapped or copied over)."""
        found = self._indexes.get(entry.fileName)
        if found is None:
            path = self._layout.index_path(entry.fileName)
            data = self._read(path)
            if len(data) != entry.fileSize:
                raise CorruptMetadataError(
                    f"{path} is {len(data)} bytes, its index manifest says {entry.fileSize}: "
                    "the file was replaced or damaged")
            index = codec.decode_binary(data, DeletionIndex, path)
            found = {name: decode_positions(data) for name, data in index.vectors.items()}
            deleted = sum(len(p) for p in found.values())
            if (entry.dataFiles and sorted(found) != sorted(entry.dataFiles)) or deleted != entry.deletedRows:
                raise CorruptMetadataError(
                    f"{path} holds vectors of {len(found)} files ({deleted} rows), its index "
                    f"manifest says {len(entry.dataFiles)} ({entry.deletedRows} rows): the file "
                    "belongs to another bucket or snapshot")
            self._remember(self._indexes, entry.fileName, found)
        return found

    # -- writing -----------------------------------------------------------------------------

    def write_index(self, partition: list[Any], bucket: int, vectors: Vectors) -> IndexEntry:
        """Write one bucket's vectors (non-empty) as a new index file."""
        name = TableLayout.new_index_name()
        data = codec.encode_binary(DeletionIndex({n: encode_positions(p) for n, p in vectors.items()}))
        self._io.write_bytes(self._layout.index_path(name), data)
        self._remember(self._indexes, name, dict(vectors))
        return IndexEntry(list(partition), bucket, name, len(data), sum(len(p) for p in vectors.values()),
                          sorted(vectors))

    def write_manifest(self, entries: list[IndexEntry]) -> tuple[str, str]:
        """Write an index manifest; its name and digest (for ``Snapshot.indexManifestDigest``)."""
        name = TableLayout.new_index_manifest_name()
        data = codec.encode_binary(entries)
        self._io.write_bytes(self._layout.manifest_path(name), data)
        self._remember(self._manifests, name, list(entries))
        return name, xxhash.xxh64_hexdigest(data)


def index_file_names(dvio: DeletionVectorIO, snapshot: Snapshot) -> list[str]:
    """Names of the index manifest and index files ``snapshot`` references."""
    if snapshot.indexManifest is None:
        return []
    return [snapshot.indexManifest, *(e.fileName for e in dvio.entries(snapshot))]


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


__all__ = ["BucketKey", "DeletionIndex", "DeletionVectorIO", "IndexEntry", "Vectors",
           "decode_positions", "encode_positions", "index_file_names", "live_mask"]
