"""Reading and writing manifest files and lists, and the live file set of a snapshot.

Manifests are immutable, so decoded ones are cached by file name. Entries merge with set
semantics: a file (identified by partition, bucket, level, name) is live if some manifest
ADDs it and none DELETEs it; file names are unique and never re-added once deleted.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import xxhash

from . import manifest
from .errors import CorruptMetadataError
from .fileio import FileIO
from .layout import TableLayout
from .manifest import ADD, ManifestEntry, ManifestFileMeta
from .snapshot import Snapshot
from .stats import values_stats

_CACHE_SIZE = 4096
_READ_THREADS = 8  # manifests read at once by one plan


class _Facts(NamedTuple):
    """What a manifest's summary is checked against, computed once per decoded manifest:
    its size and xxhash64 as read, its ADD and DELETE counts, and the rows it adds."""

    size: int
    digest: int | None
    adds: int
    deletes: int
    rows: int

    @classmethod
    def of(cls, size: int, digest: int | None, entries: list[ManifestEntry]) -> _Facts:
        adds = sum(e.kind == ADD for e in entries)
        return cls(size, digest, adds, len(entries) - adds, record_delta(entries))


class ManifestIO:
    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout
        self._entries: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._lists: OrderedDict[str, list[ManifestFileMeta]] = OrderedDict()
        self._facts: OrderedDict[str, _Facts] = OrderedDict()

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
    def _remember(cache: OrderedDict, name: str, value: object) -> None:
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
            data = self._read(name)
            entries = manifest.decode_entries(data, self._layout.manifest_path(name))
            self._remember(self._facts, name, _Facts.of(len(data), xxhash.xxh64_intdigest(data), entries))
            self._remember(self._entries, name, entries)
        return entries

    def write_entries(self, entries: list[ManifestEntry], schema_id: int, partition_width: int,
                      clustered: bool = False, encoded: bytes | None = None) -> ManifestFileMeta:
        """Write a manifest file and return its summary (``clustered``: see ManifestFileMeta;
        ``encoded``: ``manifest.encode_entries(entries)`` if the caller has it already)."""
        name = TableLayout.new_manifest_name()
        data = manifest.encode_entries(entries) if encoded is None else encoded
        self._io.write_bytes(self._layout.manifest_path(name), data)
        digest = xxhash.xxh64_intdigest(data)
        self._remember(self._facts, name, _Facts.of(len(data), digest, entries))
        self._remember(self._entries, name, entries)
        return ManifestFileMeta(
            fileName=name,
            fileSize=len(data),
            fileDigest=digest,
            numAddedFiles=sum(e.kind == ADD for e in entries),
            numDeletedFiles=sum(e.kind != ADD for e in entries),
            partitionStats=values_stats([e.partition for e in entries], partition_width),
            minBucket=min((e.bucket for e in entries), default=0),
            maxBucket=max((e.bucket for e in entries), default=0),
            minLevel=min((e.file.level for e in entries), default=0),
            maxLevel=max((e.file.level for e in entries), default=0),
            schemaId=schema_id,
            clustered=clustered,
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
        """The entries of ``metas``' manifests, each checked against its summary.

        Raises CorruptMetadataError if a manifest is not the file its manifest list
        describes (another valid manifest saved under its name: size or counts differ).
        """
        return self._checked_entries(list(metas))[0]

    def _checked_entries(self, metas: list[ManifestFileMeta]) -> tuple[list[ManifestEntry], int]:
        """:meth:`entries_of` and the rows they add (:func:`record_delta`)."""
        self._prefetch([m.fileName for m in metas if m.fileName not in self._entries])
        out: list[ManifestEntry] = []
        rows = 0
        for m in metas:
            entries = self.read_entries(m.fileName)
            facts = self._facts.get(m.fileName) or _Facts.of(m.fileSize, m.fileDigest, entries)  # evicted
            if facts.size != m.fileSize or facts.adds != m.numAddedFiles or facts.deletes != m.numDeletedFiles \
                    or (m.fileDigest is not None and facts.digest != m.fileDigest):
                raise CorruptMetadataError(
                    f"manifest {self._layout.manifest_path(m.fileName)} does not match its manifest "
                    f"list ({facts.size} bytes, {facts.adds} adds, {facts.deletes} deletes; expected "
                    f"{m.fileSize}, {m.numAddedFiles}, {m.numDeletedFiles}): the file was replaced; "
                    "restore it or roll the table back")
            out.extend(entries)
            rows += facts.rows
        return out, rows

    def _prefetch(self, names: list[str]) -> None:
        """Read and decode ``names`` into the cache, several at once: on a store with
        latency (S3: ~20 ms a request) n manifests cost ~n / _READ_THREADS round trips
        instead of n. A failed read is left for the caller's own read, which raises it in
        order; at most half the cache is prefetched, so nothing fetched is evicted unused."""
        names = names[:_CACHE_SIZE // 2]
        if len(names) < 2:
            return
        with ThreadPoolExecutor(max_workers=min(_READ_THREADS, len(names))) as pool:
            for future in [pool.submit(self.read_entries, n) for n in names]:
                future.exception()  # wait; an error is raised again by the caller's read

    def data_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """All entries of the snapshot's data manifests (base, then delta).

        Raises CorruptMetadataError if a list's rows (added minus deleted) differ from what
        the snapshot recorded at commit (``deltaRecordCount``; base + delta =
        ``totalRecordCount``): a manifest list was replaced by another one."""
        base, rows = self._checked_entries(self.read_list(snapshot.baseManifestList))
        delta = self.delta_entries(snapshot)
        self._check_rows(snapshot.baseManifestList, rows,
                         snapshot.totalRecordCount - snapshot.deltaRecordCount, snapshot)
        return base + delta

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries the snapshot committed (its delta manifests), checked as in
        :meth:`data_entries`."""
        delta, rows = self._checked_entries(self.read_list(snapshot.deltaManifestList))
        self._check_rows(snapshot.deltaManifestList, rows, snapshot.deltaRecordCount, snapshot)
        return delta

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries of the snapshot's changelog manifests ([] if it has none).

        Raises CorruptMetadataError as :meth:`data_entries` (``changelogRecordCount``)."""
        if snapshot.changelogManifestList is None:
            return []
        entries, rows = self._checked_entries(self.read_list(snapshot.changelogManifestList))
        if snapshot.changelogRecordCount is not None:
            self._check_rows(snapshot.changelogManifestList, rows, snapshot.changelogRecordCount, snapshot)
        return entries

    def _check_rows(self, list_name: str, rows: int, expected: int, snapshot: Snapshot) -> None:
        if rows != expected:
            raise CorruptMetadataError(
                f"manifest list {self._layout.manifest_path(list_name)} holds {rows} rows, snapshot "
                f"{snapshot.id} recorded {expected}: the file was replaced; restore it or roll the table back")


def record_delta(entries: Iterable[ManifestEntry]) -> int:
    """Rows the ``entries`` add to the table: ADDed files' rows minus DELETEd files' rows."""
    return sum(e.file.rowCount if e.kind == ADD else -e.file.rowCount for e in entries)


def merge_entries(entries: Iterable[ManifestEntry]) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
    """Cancel ADD/DELETE pairs: returns (live ADDs, DELETEs whose ADD is not among them).

    An ADD is cancelled by a DELETE of the same identifier, wherever either comes; only ADDs
    of a file name some DELETE names are looked up by identifier (an upgrade DELETEs a file
    at one level and ADDs it at another)."""
    entries = entries if isinstance(entries, list) else list(entries)
    deletes = {e.identifier: e for e in entries if e.kind != ADD}
    deleted_names = {key[3] for key in deletes}
    adds = [e for e in entries if e.kind == ADD and not (
        e.file.fileName in deleted_names and deletes.pop(e.identifier, None) is not None)]
    return adds, list(deletes.values())


def live_files(mio: ManifestIO, snapshot: Snapshot | None) -> list[ManifestEntry]:
    """Every data file of ``snapshot`` (ADD entries)."""
    if snapshot is None:
        return []
    adds, _ = merge_entries(mio.data_entries(snapshot))
    return adds
