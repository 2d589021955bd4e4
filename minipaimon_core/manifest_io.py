"""Reading and writing manifest files and lists, and the live file set of a snapshot.

Manifests are immutable, so decoded ones are cached by file name. Entries merge with set
semantics: a file (identified by partition, bucket, level, name) is live if some manifest
ADDs it and none DELETEs it; file names are unique and never re-added once deleted.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterable

from . import manifest
from .errors import CorruptMetadataError
from .fileio import FileIO
from .layout import TableLayout
from .manifest import ADD, ManifestEntry, ManifestFileMeta
from .snapshot import Snapshot
from .stats import values_stats

_CACHE_SIZE = 4096


class ManifestIO:
    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout
        self._entries: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._lists: OrderedDict[str, list[ManifestFileMeta]] = OrderedDict()

    def _read(self, name: str) -> bytes:
        path = self._layout.manifest_path(name)
        try:
            return self._io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(
                f"manifest {path} is missing: the snapshot referencing it was expired or the "
                "table was damaged"
            ) from None

    @staticmethod
    def _remember(cache: OrderedDict, name: str, value: list) -> None:
        cache[name] = value
        while len(cache) > _CACHE_SIZE:
            with contextlib.suppress(KeyError):  # another thread evicted it first
                cache.popitem(last=False)

    # Thread-safe: a handle is shared by threads (a lookup returns the value it found or
    # decoded, never re-reads the cache, so a concurrent eviction cannot raise KeyError).

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        metas = self._lists.get(name)
        if metas is None:
            metas = manifest.decode_manifest_list(self._read(name), self._layout.manifest_path(name))
            self._remember(self._lists, name, metas)
        return metas

    def read_entries(self, name: str) -> list[ManifestEntry]:
        entries = self._entries.get(name)
        if entries is None:
            entries = manifest.decode_entries(self._read(name), self._layout.manifest_path(name))
            self._remember(self._entries, name, entries)
        return entries

    def write_entries(self, entries: list[ManifestEntry], schema_id: int, partition_width: int) -> ManifestFileMeta:
        """Write a manifest file and return its summary."""
        name = TableLayout.new_manifest_name()
        data = manifest.encode_entries(entries)
        self._io.write_bytes(self._layout.manifest_path(name), data)
        self._remember(self._entries, name, entries)
        return ManifestFileMeta(
            fileName=name,
            fileSize=len(data),
            numAddedFiles=sum(e.kind == ADD for e in entries),
            numDeletedFiles=sum(e.kind != ADD for e in entries),
            partitionStats=values_stats([e.partition for e in entries], partition_width),
            minBucket=min((e.bucket for e in entries), default=0),
            maxBucket=max((e.bucket for e in entries), default=0),
            minLevel=min((e.file.level for e in entries), default=0),
            maxLevel=max((e.file.level for e in entries), default=0),
            schemaId=schema_id,
        )

    def write_list(self, metas: list[ManifestFileMeta]) -> str:
        name = TableLayout.new_manifest_list_name()
        self._io.write_bytes(self._layout.manifest_path(name), manifest.encode_manifest_list(metas))
        self._remember(self._lists, name, metas)
        return name

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Manifests whose merged entries are the snapshot's full data file set."""
        return self.read_list(snapshot.baseManifestList) + self.read_list(snapshot.deltaManifestList)

    def entries_of(self, metas: Iterable[ManifestFileMeta]) -> list[ManifestEntry]:
        out: list[ManifestEntry] = []
        for m in metas:
            out.extend(self.read_entries(m.fileName))
        return out


def merge_entries(entries: Iterable[ManifestEntry]) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
    """Cancel ADD/DELETE pairs: returns (live ADDs, DELETEs whose ADD is not among them)."""
    adds: dict[tuple, ManifestEntry] = {}
    deletes: dict[tuple, ManifestEntry] = {}
    for e in entries:
        (adds if e.kind == ADD else deletes)[e.identifier] = e
    for key in list(deletes):
        if key in adds:
            del adds[key]
            del deletes[key]
    return list(adds.values()), list(deletes.values())


def live_files(mio: ManifestIO, snapshot: Snapshot | None) -> list[ManifestEntry]:
    """Every data file of ``snapshot`` (ADD entries)."""
    if snapshot is None:
        return []
    adds, _ = merge_entries(mio.entries_of(mio.data_manifests(snapshot)))
    return adds
