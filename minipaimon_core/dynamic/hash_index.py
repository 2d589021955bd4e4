"""Reading and writing the HASH index of a dynamic-bucket table (``HASH_DYNAMIC``).

A snapshot's index manifest lists, per (partition, bucket), at most one index file of type
``HASH`` holding the hashes of every key ever written to the bucket (deletes included, as
Java's ``HashIndexMaintainer`` does; only an overwrite of the partition drops them). Index
files are immutable, so decoded ones are cached by name (bounded by bytes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import xxhash

from ..deletion_vectors import BucketKey, DeletionVectorIO
from ..errors import CorruptMetadataError, SnapshotExpiredError
from ..fileio import FileIO
from ..format import hash_index_file
from ..format.index_manifest import HASH, IndexFileEntry
from ..format.snapshot import Snapshot
from ..kinds import EntryKind
from ..layout import TableLayout

_CACHE_BYTES = 256 << 20


class HashIndexIO:
    """The HASH index files of one table. Thread-safe."""

    def __init__(self, io: FileIO, layout: TableLayout, dvio: DeletionVectorIO) -> None:
        self._io = io
        self._layout = layout
        self._dvio = dvio
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cached_bytes = 0

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
        """The hashes (int32) of the HASH index file ``entry`` names.

        Raises CorruptMetadataError if the file is not the one ``entry`` describes (size,
        digest, count), SnapshotExpiredError if it is gone."""
        with self._lock:
            found = self._cache.get(entry.fileName)
            if found is not None:
                self._cache.move_to_end(entry.fileName)
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
        hashes.setflags(write=False)
        self._remember(entry.fileName, hashes)
        return hashes

    def _remember(self, name: str, hashes: np.ndarray) -> None:
        if hashes.nbytes > _CACHE_BYTES // 4:
            return
        with self._lock:
            if name in self._cache:
                return
            self._cache[name] = hashes
            self._cached_bytes += hashes.nbytes
            while self._cached_bytes > _CACHE_BYTES:
                _, old = self._cache.popitem(last=False)
                self._cached_bytes -= old.nbytes

    def write(self, partition: tuple[Any, ...], bucket: int, hashes: np.ndarray) -> IndexFileEntry:
        """Write one bucket's hashes (int32, distinct) as a new HASH index file."""
        name = TableLayout.new_index_name()
        data = hash_index_file.encode(hashes)
        self._io.write_bytes(self._layout.index_path(name), data)
        stored = np.frombuffer(data, dtype=">i4").astype(np.int32)
        stored.setflags(write=False)
        self._remember(name, stored)
        return IndexFileEntry(kind=EntryKind.ADD, partition=tuple(partition), bucket=bucket, indexType=HASH,
                              fileName=name, fileSize=len(data), rowCount=len(stored),
                              digest=xxhash.xxh64_intdigest(data))


__all__ = ["HashIndexIO"]
