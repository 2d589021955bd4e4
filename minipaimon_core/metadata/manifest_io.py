"""Reading and writing manifest files and lists, and the live file set of a snapshot.

Files are Paimon's (:mod:`minipaimon_core.format.manifest_file`, ``.manifest_list``), or of
minipaimon's earlier format (:mod:`minipaimon_core.format.legacy`). Manifests are immutable:
decoded ones are cached by file name. Entries merge with set semantics: a file (partition,
bucket, level, name) is live if some manifest ADDs it and none DELETEs it; names are unique
and never re-added, so a file live twice in a bucket is damaged metadata, refused
(:func:`live_adds`), not read twice."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import xxhash

from ..errors import CorruptMetadataError
from ..expressions.stats import values_stats
from ..format import legacy, manifest_file, manifest_list
from ..format.layout import TableLayout
from ..format.manifest_file import ADD, ManifestEntry, RowTypes
from ..format.manifest_list import ManifestFileMeta
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..schema.schema import SchemaCache, TableSchema

_CACHE_SIZE = 4096
_READ_THREADS = 8  # manifests read at once by one plan
# Encoded manifest records of every table this process wrote: merges and rewrites of the
# base manifests write the same entries again (format/manifest_file.RecordCache).
_RECORDS = manifest_file.RecordCache()


class _Facts(NamedTuple):
    """What a manifest's summary is checked against, computed once per decoded manifest:
    its size and xxhash64 as read, its ADD and DELETE counts, the rows it adds; and its
    entries' file names in order (for :func:`live_adds`)."""

    size: int
    digest: int | None
    adds: int
    deletes: int
    rows: int
    names: list[str]

    @classmethod
    def of(cls, size: int, digest: int | None, entries: list[ManifestEntry],
           names: list[str] | None = None) -> _Facts:
        adds = sum(e.kind == ADD for e in entries)
        return cls(size, digest, adds, len(entries) - adds, record_delta(entries),
                   [e.file.fileName for e in entries] if names is None else names)


class ManifestIO:
    """Manifests of one table. ``schemas`` gives the types their rows are encoded with;
    ``writing``: the schema whose options (``manifest.compression``) the files written
    follow, a committer's own (None: the latest, listed at each write); ``caches_of``: a
    ManifestIO of the same table whose decoded files (by name: a file never changes) and
    row types this one shares (a handle's committer finds what its last commit wrote)."""

    def __init__(self, io: FileIO, layout: TableLayout, schemas: SchemaCache,
                 writing: TableSchema | None = None, caches_of: ManifestIO | None = None) -> None:
        self._io = io
        self._layout = layout
        self._schemas = schemas
        self._writing = writing
        self._types: RowTypes | None = None
        self._partition_keys: list[str] = []  # with _types (partition keys never change)
        self._entries: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._lists: OrderedDict[str, list[ManifestFileMeta]] = OrderedDict()
        self._facts: OrderedDict[str, _Facts] = OrderedDict()
        if caches_of is not None:  # of one table (asserted): the same files under the same names
            assert caches_of._layout.home == layout.home
            self._types, self._partition_keys, self._entries, self._lists, self._facts = (
                caches_of._types, caches_of._partition_keys, caches_of._entries, caches_of._lists, caches_of._facts)

    @property
    def root(self) -> str:  # the table and its branch: snapshot ids are unique in a branch
        return self._layout.where

    def row_types(self) -> RowTypes:
        """The types of the table's manifest rows (partition and key columns never change
        type, so the latest schema's serve every file)."""
        if self._types is None:
            schema = self._schemas.manager.latest()
            fields = {f.name: f for f in schema.fields}
            keys = [] if not schema.primaryKeys else schema.trimmed_primary_keys
            schemas = self._schemas

            def fields_of(schema_id: int) -> tuple[list[str], list[str]]:
                s = schemas.get(schema_id)
                return s.field_names, s.field_types

            self._partition_keys = list(schema.partitionKeys)
            self._types = RowTypes([fields[k].row_type for k in schema.partitionKeys],
                                   [fields[k].row_type for k in keys],
                                   [schema.field_names.index(k) for k in keys], fields_of)
        return self._types

    def _compression(self) -> str:
        schema = self._writing if self._writing is not None else self._schemas.manager.latest()
        return schema.options.get("manifest.compression", "zstd")

    def _read(self, name: str) -> bytes:
        path = self._layout.manifest_path(name)
        try:
            return self._io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(f"manifest {path} is missing: the snapshot referencing it was "
                                       "expired or the table was damaged") from None

    @staticmethod
    def _remember(cache: OrderedDict, name: str, value: object) -> None:
        cache[name] = value
        while len(cache) > _CACHE_SIZE:
            with contextlib.suppress(KeyError):  # another thread evicted it first
                cache.popitem(last=False)

    # Thread-safe: a handle is shared by threads (a lookup returns the value it found or
    # decoded, never re-reads the cache, so a concurrent eviction cannot raise KeyError).

    def read_list(self, name: str, size: int | None = None, digest: str | None = None) -> list[ManifestFileMeta]:
        """A manifest list; ``size`` / ``digest``: what the snapshot recorded of it, checked
        (CorruptMetadataError: another file under its name)."""
        metas = self._lists.get(name)
        if metas is None:
            data = self._read(name)
            if (size is not None and len(data) != size) or \
                    (digest is not None and xxhash.xxh64_hexdigest(data) != digest):
                raise CorruptMetadataError(
                    f"manifest list {self._layout.manifest_path(name)} is not the file its snapshot "
                    "recorded (size or digest differ): it was replaced; restore it or roll the table back")
            metas = self.decode_list(data, name)
            self._remember(self._lists, name, metas)
        return metas

    def snapshot_list(self, snapshot: Snapshot, which: str) -> list[ManifestFileMeta]:
        """The ``base``, ``delta`` or ``changelog`` manifest list of ``snapshot``, checked
        against the size and digest the snapshot recorded."""
        digests = snapshot.minipaimonDigests
        if which == "base":
            return self.read_list(snapshot.baseManifestList, snapshot.baseManifestListSize,
                                  digests.base if digests else None)
        if which == "delta":
            return self.read_list(snapshot.deltaManifestList, snapshot.deltaManifestListSize,
                                  digests.delta if digests else None)
        assert snapshot.changelogManifestList is not None
        return self.read_list(snapshot.changelogManifestList, snapshot.changelogManifestListSize,
                              digests.changelog if digests else None)

    def decode_list(self, data: bytes, name: str) -> list[ManifestFileMeta]:
        path = self._layout.manifest_path(name)
        if legacy.is_binary(data):
            return legacy.decode_manifest_list(data, path)
        types = self.row_types()
        try:
            return manifest_list.decode(data, path, self._partition_keys, types.partition)
        except (KeyError, TypeError) as e:  # a damaged file whose records lack a field
            raise CorruptMetadataError(f"{path}: not a valid manifest list ({type(e).__name__}: {e}); "
                                       "restore it or roll the table back") from None

    def read_entries(self, name: str) -> list[ManifestEntry]:
        entries = self._entries.get(name)
        if entries is None:
            data = self._read(name)
            path = self._layout.manifest_path(name)
            entries, names = (legacy.decode_entries(data, path), None) if legacy.is_binary(data) \
                else manifest_file.decode_with_names(data, path, self.row_types())
            self._remember(self._facts, name, _Facts.of(len(data), xxhash.xxh64_intdigest(data), entries, names))
            self._remember(self._entries, name, entries)
        return entries

    def encode_entries(self, entries: list[ManifestEntry]) -> bytes:
        return manifest_file.encode(entries, self.row_types(), self._compression(), _RECORDS,
                                    self._layout.home)

    def write_entries(self, entries: list[ManifestEntry], schema_id: int, partition_width: int,
                      clustered: bool = False, encoded: bytes | None = None) -> ManifestFileMeta:
        """Write a manifest file and return its summary (``clustered``: see ManifestFileMeta;
        ``encoded``: ``self.encode_entries(entries)`` if the caller has it already)."""
        name = TableLayout.new_manifest_name()
        data = self.encode_entries(entries) if encoded is None else encoded
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

    def write_list(self, metas: list[ManifestFileMeta]) -> tuple[str, int, str]:
        """Write a manifest list; its name, size and xxhash64 (hex, for the snapshot)."""
        name = TableLayout.new_manifest_list_name()
        types = self.row_types()
        data = manifest_list.encode(metas, self._partition_keys, types.partition, self._compression())
        self._io.write_bytes(self._layout.manifest_path(name), data)
        self._remember(self._lists, name, metas)
        return name, len(data), xxhash.xxh64_hexdigest(data)

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Manifests whose merged entries are the snapshot's full data file set."""
        return self.snapshot_list(snapshot, "base") + self.snapshot_list(snapshot, "delta")

    def names_of(self, metas: Iterable[ManifestFileMeta]) -> list[str] | None:
        """The file names of ``metas``' entries, in :meth:`entries_of`'s order, if every one
        of them is decoded (cached); else None."""
        out: list[str] = []
        for m in metas:
            facts = self._facts.get(m.fileName)
            if facts is None:
                return None
            out += facts.names
        return out

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
        base, rows = self._checked_entries(self.snapshot_list(snapshot, "base"))
        delta = self.delta_entries(snapshot)
        self._check_rows(snapshot.baseManifestList, rows,
                         snapshot.totalRecordCount - snapshot.deltaRecordCount, snapshot)
        return base + delta

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries the snapshot committed (its delta manifests), checked as in
        :meth:`data_entries`, and no file ADDed twice."""
        delta, rows = self._checked_entries(self.snapshot_list(snapshot, "delta"))
        self._check_rows(snapshot.deltaManifestList, rows, snapshot.deltaRecordCount, snapshot)
        check_unique([e for e in delta if e.kind == ADD], self._where(snapshot, "delta"))
        return delta

    def _where(self, snapshot: Snapshot, what: str) -> str:
        return f"the {what} of snapshot {snapshot.id} of {self._layout.root}"

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries of the snapshot's changelog manifests ([] if it has none).

        Raises CorruptMetadataError as :meth:`data_entries` (``changelogRecordCount``)."""
        if snapshot.changelogManifestList is None:
            return []
        entries, rows = self._checked_entries(self.snapshot_list(snapshot, "changelog"))
        if snapshot.changelogRecordCount is not None:
            self._check_rows(snapshot.changelogManifestList, rows, snapshot.changelogRecordCount, snapshot)
        check_unique([e for e in entries if e.kind == ADD], self._where(snapshot, "changelog"))
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
    if not deletes:  # an append-only history, or a rewritten base: nothing cancels
        return list(entries), []
    deleted_names = {key[3] for key in deletes}
    adds = [e for e in entries if e.kind == ADD and not (
        e.file.fileName in deleted_names and deletes.pop(e.identifier, None) is not None)]
    return adds, list(deletes.values())


def live_adds(entries: Iterable[ManifestEntry], where: str, names: list[str] | None = None
              ) -> list[ManifestEntry]:
    """The live ADDs of a whole file set (:func:`merge_entries`), each file once. Raises
    CorruptMetadataError if a file is live twice in its bucket (``where``: whose set).
    ``names``: the entries' file names in order (:meth:`ManifestIO.names_of`), if known."""
    entries = entries if isinstance(entries, list) else list(entries)
    adds, _ = merge_entries(entries)
    check_unique(adds, where, names if names is not None and len(adds) == len(entries) else None)
    return adds


def check_unique(adds: list[ManifestEntry], where: str, names: list[str] | None = None) -> None:
    """No two of ``adds`` name one file of one (partition, bucket). A set of the names
    first (``names``: theirs, if known; ~30 ns an entry); the exact key only when a name
    repeats. Raises CorruptMetadataError naming the file."""
    names = [e.file.fileName for e in adds] if names is None else names
    if len(set(names)) == len(names):
        return
    seen: set[tuple[tuple[Any, ...], int, str]] = set()
    for e in adds:
        key = (tuple(e.partition), e.bucket, e.file.fileName)
        if key in seen:
            raise CorruptMetadataError(
                f"{where}: the data file {e.file.fileName} of bucket {e.bucket} is added twice (two "
                "live entries; it would be read twice): the manifests are damaged or a writer "
                "committed the file twice; roll the table back to a snapshot before it")
        seen.add(key)


def live_files(mio: ManifestIO, snapshot: Snapshot | None) -> list[ManifestEntry]:
    """Every data file of ``snapshot`` (ADD entries). Raises CorruptMetadataError for
    damaged metadata (a file live twice among them)."""
    if snapshot is None:
        return []
    entries = mio.data_entries(snapshot)
    return live_adds(entries, f"snapshot {snapshot.id} of {mio.root}", mio.names_of(mio.data_manifests(snapshot)))


def live_in_buckets(mio: ManifestIO, base: Snapshot | None,
                    touched: set[tuple[tuple[Any, ...], int]]) -> list[ManifestEntry]:
    """Live entries of ``base`` in the ``touched`` (partition, bucket)s: only manifests
    whose bucket and partition ranges may hold one of them are read."""
    if base is None:
        return []
    metas = [m for m in mio.data_manifests(base) if any(_may_hold(m, k) for k in touched)]
    adds = live_adds(mio.entries_of(metas), f"snapshot {base.id} of {mio.root}", mio.names_of(metas))
    return [e for e in adds if (tuple(e.partition), e.bucket) in touched]


def _may_hold(meta: ManifestFileMeta, key: tuple[tuple[Any, ...], int]) -> bool:
    """Whether manifest ``meta`` may hold entries of bucket ``key`` (by its stats). A DELETE
    has its ADD's partition and bucket, so the manifests of both pass or fail together."""
    partition, bucket = key
    if meta.minBucket is not None and meta.maxBucket is not None \
            and not meta.minBucket <= bucket <= meta.maxBucket:
        return False
    stats = meta.partitionStats
    for i, v in enumerate(partition):
        if i >= len(stats.minValues):
            return True
        lo, hi = stats.minValues[i], stats.maxValues[i]
        if v is None or lo is None or hi is None:
            continue
        try:
            if v < lo or v > hi:
                return False
        except TypeError:
            continue
    return True
