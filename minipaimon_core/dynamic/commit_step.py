"""The committer's step for dynamic-bucket tables: one key, one bucket, and the HASH index.

Run by :class:`~minipaimon_core.commit.commit.FileStoreCommit` on the messages of an APPEND or
OVERWRITE snapshot (compactions move no key), each attempt against the snapshot it builds on:

```
 before the first attempt   writers of this commit reconciled (reconcile.py)
 each attempt, on latest    HASH_DYNAMIC: every key hash a message places in bucket b of
                            partition p must not be in another bucket of p in latest's HASH
                            index (looked up only when p's index changed since the message's
                            writer started) -> else CommitConflictError BUCKET_ASSIGNMENT;
                            then per touched bucket a new HASH index file: latest's hashes of
                            the bucket + the message's (an overwrite first drops the index of
                            the partitions it replaces)
                            CROSS_PARTITION: every key a message places at (p, b) must not be
                            in files that other commits since its writer started added at
                            another place (+I/+U rows; any row for the engines that never
                            delete a key) -> else CommitConflictError BUCKET_ASSIGNMENT
```

So two writers (processes, Spark jobs) never leave one key in two buckets: the second to
commit fails and writes again from the new snapshot. That is Paimon's single-writer rule for
dynamic buckets, checked instead of assumed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import CommitConflictError, ConflictReason, UnsupportedFeatureError
from ..expressions.sets import distinct
from ..format.index_manifest import IndexFileEntry
from ..format.kinds import VALUE_KIND, RowKind
from ..format.layout import TableLayout
from ..format.manifest_file import ADD
from ..format.options import Options
from ..format.snapshot import COMPACT, Snapshot
from ..io.fileio import FileIO
from ..metadata.commit_message import CommitMessage
from ..metadata.deletion_vectors import BucketKey, DeletionVectorIO
from ..metadata.manifest_io import ManifestIO
from ..metadata.resequence import rewritten_paths
from ..metadata.snapshot_manager import SnapshotManager
from ..read.read import read_file_as
from ..schema.bucket import CROSS_PARTITION, HASH_DYNAMIC, bucket_mode, key_hashes64
from ..schema.partition import PartitionSpec
from ..schema.schema import SchemaCache, SchemaManager, TableSchema
from .assigner import PartitionIndex
from .hash_index import HashIndexIO, union
from .reconcile import Moves, Reconciler, hash_dtype, moves


class DynamicBucketCommit:
    """The step for one table schema and commit user (see the module docs)."""

    def __init__(self, io: FileIO, layout: TableLayout, schema: TableSchema, manifests: ManifestIO,
                 dvio: DeletionVectorIO, user: str) -> None:
        self.mode = bucket_mode(schema)
        self._io = io
        self._layout = layout
        self._schema = schema
        self._manifests = manifests
        self._schemas = SchemaCache(SchemaManager(io, layout))
        self._snapshots = SnapshotManager(io, layout)
        self._user = user
        self._index = HashIndexIO(io, layout, dvio)
        self._reconciler = Reconciler(io, layout, self._schemas, self.mode)

    @staticmethod
    def of(io: FileIO, layout: TableLayout, schema: TableSchema, manifests: ManifestIO,
           dvio: DeletionVectorIO, user: str) -> DynamicBucketCommit | None:
        """The step, or None for a table without dynamic buckets."""
        if bucket_mode(schema) not in (HASH_DYNAMIC, CROSS_PARTITION):
            return None
        return DynamicBucketCommit(io, layout, schema, manifests, dvio, user)

    def moves(self, messages: Sequence[CommitMessage]) -> dict[int, Moves]:
        """Where writers of one commit disagree: :func:`reconcile.moves` ({} if nowhere).
        Raises CommitConflictError (a cross-partition key in two partitions)."""
        return moves(messages, self.mode)

    def reconciled(self, messages: Sequence[CommitMessage], todo: dict[int, Moves],
                   commit: Callable[[Sequence[CommitMessage]], int | None],
                   committed: Callable[[], bool]) -> int | None:
        """``commit`` of ``messages`` reconciled by ``todo`` (:meth:`moves`; before the first
        attempt), then, whether it raised or not: if ``committed()`` (a snapshot of the
        commit's user and identifier exists), the originals the rewrites replaced are
        deleted (no one commits them: every committer of these messages reconciles them
        alike); else the rewritten files. Raises what ``commit`` raises."""
        messages, pairs = self._reconciler.reconcile(messages, todo)
        try:
            return commit(messages)
        finally:
            for path in rewritten_paths(self._layout, pairs, originals=committed()):
                self._io.delete(path)

    def apply(self, latest: Snapshot | None, messages: Sequence[CommitMessage], overwrite: bool,
              dynamic: bool, written: list[str]) -> list[IndexFileEntry] | None:
        """Check ``messages`` against ``latest`` and return the HASH entries of the new
        snapshot (None: latest's, unchanged). ``overwrite``: the snapshot replaces the table,
        or with ``dynamic`` (partition overwrite) the partitions the messages write, as the
        committer's ``_overwritten`` decides. New index files' names are appended to ``written``.

        Raises CommitConflictError BUCKET_ASSIGNMENT (see the module docs), BASE_EXPIRED
        (a cross-partition check needs snapshots that expired meanwhile)."""
        if overwrite and dynamic and self.mode == CROSS_PARTITION and self._schema.partitionKeys:
            raise UnsupportedFeatureError(
                f"{self._layout.root}: a dynamic partition overwrite ('dynamic-partition-overwrite')"
                " of a cross-partition table (a primary key without every partition column) is not "
                "supported: a key moving out of a partition the write does not replace would stay "
                "there; overwrite the whole table, or write without overwrite")
        replaced_all = overwrite and not (dynamic and self._schema.partitionKeys)
        replaced = {tuple(m.partition) for m in messages if m.newFiles} if overwrite and not replaced_all else None
        placed = [m for m in messages if m.keyHashes]
        if self.mode == CROSS_PARTITION:
            if not replaced_all:
                self._check_cross(latest, placed)
            return None
        entries = self._index.entries(latest)
        gone = {k for k in entries if replaced_all or (replaced is not None and k[0] in replaced)}
        by_partition: dict[tuple[Any, ...], list[CommitMessage]] = defaultdict(list)
        for m in placed:
            by_partition[tuple(m.partition)].append(m)
        for partition, ms in by_partition.items():
            if not (replaced_all or (replaced is not None and partition in replaced)):
                self._check_dynamic(latest, partition, ms, entries)
        result = {k: e for k, e in entries.items() if k not in gone}
        changed = bool(gone)
        adds: dict[BucketKey, list[np.ndarray]] = defaultdict(list)
        for m in placed:
            adds[(tuple(m.partition), m.bucket)].append(m.key_hashes(np.int32))
        for key in sorted(adds, key=repr):
            old = result.get(key)
            have = self._index.read(old) if old is not None else np.zeros(0, np.int32)
            parts = adds[key]
            new = union(have, parts[0] if len(parts) == 1 else distinct(np.concatenate(parts)))
            if old is not None and len(new) == len(have):
                continue
            entry = self._index.write(key[0], key[1], new)
            written.append(entry.fileName)
            result[key] = entry
            changed = True
        return list(result.values()) if changed else None

    # -- HASH_DYNAMIC -----------------------------------------------------------------------

    def _check_dynamic(self, latest: Snapshot | None, partition: tuple[Any, ...], ms: list[CommitMessage],
                       entries: dict[BucketKey, IndexFileEntry]) -> None:
        now = {b: e.fileName for (p, b), e in entries.items() if p == partition}
        if not now:
            return
        index: PartitionIndex | None = None
        for m in ms:
            if self._unchanged_since(m.baseSnapshotId, partition, now):
                continue
            if index is None:
                index = PartitionIndex(self._index.partition(latest, partition))
            hashes = m.key_hashes(np.int32)
            found = index.lookup(hashes)
            elsewhere = (found >= 0) & (found != m.bucket)
            if elsewhere.any():
                raise CommitConflictError(
                    f"{int(elsewhere.sum())} key(s) this commit puts in bucket {m.bucket} of partition "
                    f"{list(partition)} are in bucket {int(found[elsewhere][0])} now: a commit since "
                    "this write started assigned them (dynamic-bucket tables take one writer at a "
                    "time, as in Paimon); write again", ConflictReason.BUCKET_ASSIGNMENT)

    def _unchanged_since(self, base_id: int | None, partition: tuple[Any, ...], now: dict[int, str]) -> bool:
        """Whether ``partition``'s HASH index files are those of snapshot ``base_id``."""
        if base_id is None:
            return not now
        base = self._snapshots.try_get(base_id)
        if base is None:
            return False
        return {b: e.fileName for (p, b), e in self._index.entries(base).items() if p == partition} == now

    # -- CROSS_PARTITION --------------------------------------------------------------------

    def _check_cross(self, latest: Snapshot | None, placed: list[CommitMessage]) -> None:
        if latest is None or not placed:
            return
        by_base: dict[int | None, list[CommitMessage]] = defaultdict(list)
        for m in placed:
            by_base[m.baseSnapshotId].append(m)
        for base_id, ms in by_base.items():
            theirs = self._placed_since(base_id, latest)
            for m in ms:
                mine = m.key_hashes(hash_dtype(self.mode))
                for (partition, bucket), hashes in theirs.items():
                    if (partition, bucket) == (tuple(m.partition), m.bucket):
                        continue
                    clash = np.isin(mine, hashes, kind="sort")
                    if clash.any():
                        raise CommitConflictError(
                            f"{int(clash.sum())} key(s) this commit puts in bucket {m.bucket} of "
                            f"partition {list(m.partition)} were written to bucket {bucket} of "
                            f"partition {list(partition)} by a commit since this write started "
                            "(dynamic-bucket tables take one writer at a time, as in Paimon); "
                            "write again", ConflictReason.BUCKET_ASSIGNMENT)

    def _placed_since(self, base_id: int | None, latest: Snapshot) -> dict[BucketKey, np.ndarray]:
        """(partition, bucket) -> 64-bit hashes of the keys other users' commits after
        ``base_id`` wrote there (rows that leave a key live there)."""
        out: dict[BucketKey, list[np.ndarray]] = defaultdict(list)
        first = (base_id or 0) + 1
        spec = PartitionSpec.of(self._schema)
        keys = list(self._schema.trimmed_primary_keys)
        live_kinds = [RowKind.INSERT, RowKind.UPDATE_AFTER]
        keeps_all = Options(self._schema.options)["merge-engine"] != "deduplicate"
        for sid in range(first, latest.id + 1):
            snap = latest if sid == latest.id else self._snapshots.try_get(sid)
            if snap is None:
                raise CommitConflictError(
                    f"snapshot {sid} expired before this commit could check the keys it wrote; "
                    "write again", ConflictReason.BASE_EXPIRED)
            if snap.commitKind == COMPACT or snap.commitUser == self._user:
                continue
            for e in self._manifests.delta_entries(snap):
                if e.kind != ADD:
                    continue
                rows = read_file_as(self._io, self._layout, self._schemas, self._schema,
                                    spec.path(list(e.partition)), e.bucket, e.file, [*keys, VALUE_KIND])
                if not keeps_all:
                    rows = rows.filter(np.isin(rows.column(VALUE_KIND).to_numpy(), live_kinds))
                out[(tuple(e.partition), e.bucket)].append(key_hashes64(rows, self._schema))
        return {k: np.concatenate(v) for k, v in out.items()}


__all__ = ["DynamicBucketCommit"]
