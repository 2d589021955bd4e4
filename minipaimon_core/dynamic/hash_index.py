"""Reading and writing the HASH index of a dynamic-bucket table (``HASH_DYNAMIC``).

A snapshot's index manifest lists, per (partition, bucket), at most one index file of type
``HASH`` holding the hashes of every key ever written to the bucket (deletes included, as
Java's ``HashIndexMaintainer`` does; only an overwrite of the partition drops them). Index
files are immutable and their names unique, so decoded ones are cached in the process by
(table, name), bounded by bytes: the committer finds the files its writer read, the next
writer those the committer wrote. Decoded hashes are sorted (Java writes them in hash-set
order, minipaimon sorted).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import xxhash

from ..errors import CorruptMetadataError, SnapshotExpiredError
from ..format import hash_index_file
from ..format.index_manifest import HASH, IndexFileEntry
from ..format.kinds import EntryKind
from ..format.layout import TableLayout
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..metadata.deletion_vectors import BucketKey, DeletionVectorIO

_CACHE_BYTES = 256 << 20


class _Cache:
    """Decoded HASH files by (table root, file name), least recently used out past a budget."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._used = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], hashes: np.ndarray) -> None:
        with self._lock:
            if key in self._items or hashes.nbytes > self._budget // 4:
                return
            self._items[key] = hashes
            self._used += hashes.nbytes
            while self._used > self._budget:
                _, old = self._items.popitem(last=False)
                self._used -= old.nbytes


_CACHE = _Cache(_CACHE_BYTES)


class HashIndexIO:
    """The HASH index files of one table. Thread-safe."""

    def __init__(self, io: FileIO, layout: TableLayout, dvio: DeletionVectorIO) -> None:
        self._io = io
        self._layout = layout
        self._dvio = dvio

    def entries(self, snapshot: Snapshot | None) -> dict[BucketKey, IndexFileEntry]:
        """(partition, bucket) -> its HASH index file in ``snapshot``.

        Raises CorruptMetadataError if the index manifest is damaged or lists two HASH
        files for one bucket."""
        out: dict[BucketKey, IndexFileEntry] = {}
        for e in self._dvio.hash_entries(snapshot):
            key = (tuple(e.partition), e.bucket)
            if key in out:
                raise CorruptMetadataError(
                    f"index manifest {snapshot.indexManifest if snapshot else None} lists two HASH "
                    f"index files for bucket {e.bucket} of partition {list(e.partition)}")
            out[key] = e
        return out

    def partition(self, snapshot: Snapshot | None, partition: tuple[Any, ...]) -> dict[int, np.ndarray]:
        """bucket -> the hashes of its keys, for every bucket of ``partition`` with an index."""
        return {b: self.read(e) for (p, b), e in self.entries(snapshot).items() if p == partition}

    def read(self, entry: IndexFileEntry) -> np.ndarray:
        """The hashes (int32, sorted, read-only) of the HASH index file ``entry`` names.

        Raises CorruptMetadataError if the file is not the one ``entry`` describes (size,
        digest, count), SnapshotExpiredError if it is gone."""
        key = (self._layout.root, entry.fileName)
        found = _CACHE.get(key)
        if found is not None:
            return found
        path = self._layout.index_path(entry.fileName)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            raise SnapshotExpiredError(
                f"HASH index file {path} no longer exists: the snapshot being read was expired "
                "(or rolled back) meanwhile; write again") from None
        if len(data) != entry.fileSize or (entry.digest is not None and xxhash.xxh64_intdigest(data) != entry.digest):
            raise CorruptMetadataError(
                f"{path} ({len(data)} bytes) is not the HASH index file its index manifest "
                f"describes ({entry.fileSize} bytes): the file was replaced or damaged")
        hashes = hash_index_file.decode(data, path, entry.rowCount)
        if len(hashes) > 1 and not (hashes[1:] > hashes[:-1]).all():
            hashes = np.sort(hashes)
        hashes.setflags(write=False)
        _CACHE.put(key, hashes)
        return hashes

    def write(self, partition: tuple[Any, ...], bucket: int, hashes: np.ndarray) -> IndexFileEntry:
        """Write one bucket's hashes (int32, sorted and distinct) as a new HASH index file."""
        name = TableLayout.new_index_name()
        data = hash_index_file.encode(hashes)
        self._io.write_bytes(self._layout.index_path(name), data)
        stored = np.array(hashes, dtype=np.int32)
        stored.setflags(write=False)
        _CACHE.put((self._layout.root, name), stored)
        return IndexFileEntry(kind=EntryKind.ADD, partition=tuple(partition), bucket=bucket, indexType=HASH,
                              fileName=name, fileSize=len(data), rowCount=len(stored),
                              digest=xxhash.xxh64_intdigest(data))


def union(have: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``have`` (sorted, distinct) with the values of ``new`` (sorted, distinct) it lacks,
    sorted: an O(n) merge, not a sort."""
    if not len(have):
        return new
    at = np.searchsorted(have, new)  # where each would go: the insertion point of the fresh
    fresh = (at == len(have)) | (have[np.minimum(at, len(have) - 1)] != new)
    return np.insert(have, at[fresh], new[fresh]) if fresh.any() else have


__all__ = ["HashIndexIO", "union"]
