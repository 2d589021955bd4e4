"""The committer: turns writers' commit messages into snapshots.

```
 messages ──► read latest snapshot N ──► already committed? (commitUser, identifier, kind)
                     ▲                        │ yes: done          │ no
                     │                        ▼                    ▼
                     │               conflict check against N (deleted files still live,
                     │               no overlapping key ranges in a level >= 1): the pure
                     │               rules of conflicts.py over N's live files; dynamic
                     │               buckets: one key in one bucket, the HASH index (dynamic/)
                     │                        ▼
                     │               entries of the kind: entries_for (pure, commit_message.py)
                     │                        ▼
                     │               write delta manifest, base list = base(N) + delta(N)
                     │               (small manifests merged), delta list; with deletion
                     │               vectors, the changed buckets' vectors recomputed
                     │               against N (dv_maintainer.py)
                     │                        │
                     │                        ▼
       lost the race │◄── known lost ── create snapshot-(N+1) if absent, settled ──► LATEST hint
   (clean manifests, │                  by looking (commit_point.py); in doubt:
    backoff+jitter)                     nothing deleted
```

Append-only changes never conflict and cost O(files added): the base list grows by the
previous delta's manifest metas; small manifests are merged past
``manifest.merge-min-count`` and, rarely (amortised), the base is rewritten clustered by
partition (:mod:`manifest_merge`). Sequencing (:mod:`minipaimon_core.metadata.sequence`): a
primary-key message keeps the numbers its writer gave its rows unless a commit since its
writer's snapshot added files to its bucket whose numbers reach them; then its files are
rewritten above the table's next number first (:mod:`minipaimon_core.metadata.resequence`), so a
later commit always wins. Append files get their sequence range from the table's next
number.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import msgspec

from ..dynamic.commit_step import DynamicBucketCommit
from ..errors import DAMAGED_OR_GONE
from ..file_format.data_file import file_paths
from ..format.index_manifest import IndexFileEntry
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta, ManifestEntry
from ..format.options import Options
from ..format.snapshot import APPEND, COMPACT, OVERWRITE, Digests, Snapshot
from ..format.snapshot import VERSION as SNAPSHOT_VERSION
from ..io.fileio import FileIO
from ..lsm.compaction_picker import PickerOptions
from ..lsm.merge_config import places_above_level0, places_sorted_loads
from ..metadata import resequence
from ..metadata.commit_message import (
    CommitEntries,
    CommitMessage,
    check_messages,
    entries_for,
    split_kinds,
)
from ..metadata.context import Clock, wall_clock_ms
from ..metadata.deletion_vectors import DeletionVectorIO
from ..metadata.manifest_io import ManifestIO, live_files, live_in_buckets, record_delta
from ..metadata.sequence import next_sequence
from ..metadata.snapshot_manager import SnapshotManager
from ..schema.features import check_writable
from ..schema.schema import SchemaCache, SchemaManager, TableSchema
from .append_vectors import AppendVectors
from .commit_dedupe import CommitRecords, committed_kinds
from .commit_metadata import make_durable, write_manifests
from .commit_point import CommitPoint, gave_up, retry_wait
from .conflicts import check_compaction, files_still_live
from .dv_maintainer import VectorMaintainer, check_applied
from .first_row import first_rows_only
from .placement import place_messages

# The longest a commit attempt may take from reading its base to creating the next
# snapshot; far below snapshot_manager.TOMBSTONE_RETAINED_MS (1 h).
MAX_ATTEMPT_SECONDS = 600

class FileStoreCommit:
    """Commits messages for one ``commit_user``. Not thread-safe; cheap to create (with a
    handle's ``manifests`` it does not read again the lists the last commit wrote)."""

    def __init__(
        self,
        io: FileIO,
        layout: TableLayout,
        schema: TableSchema,
        commit_user: str,
        fresh_user: bool = False,
        manifests: ManifestIO | None = None,  # the handle's: its caches are shared
        clock: Clock = wall_clock_ms,  # the snapshots' timeMillis
    ) -> None:
        self._io = io
        self._layout = layout
        self._schema = schema
        self._user = commit_user
        self._clock = clock
        self._watermark: int | None = None  # of the commit in progress
        self._fresh_user = fresh_user  # a new random user: nothing of it can be committed yet
        self._snapshots = SnapshotManager(io, layout)
        self._records = CommitRecords(io, layout)
        self._point = CommitPoint(io, layout, self._snapshots)
        self.attempts = 0  #: attempts of the last snapshot committed (1: no race lost)
        self._schemas = SchemaCache(SchemaManager(io, layout)).holding(schema)
        self._manifests = ManifestIO(io, layout, self._schemas, writing=schema,  # no schema read per attempt
                                     caches_of=manifests)
        self._options = Options(schema.options)
        dvio = self._dvio = DeletionVectorIO(io, layout, self._manifests)
        self._dynamic = DynamicBucketCommit.of(io, layout, schema, self._manifests, dvio, commit_user)
        self._vectors = VectorMaintainer(io, layout, schema, self._manifests, dvio) \
            if schema.primaryKeys and self._options["deletion-vectors.enabled"] else None
        self._append_vectors = AppendVectors(self._manifests, dvio) \
            if not schema.primaryKeys and self._options["deletion-vectors.enabled"] else None
        # first-row without vectors: new rows of keys already there are dropped (first_row.py)
        self._first_rows = VectorMaintainer(io, layout, schema, self._manifests, dvio) \
            if self._vectors is None and self._options["merge-engine"] == "first-row" \
            and places_above_level0(schema) else None

    # -- public ----------------------------------------------------------------------------

    def commit(self, messages: Sequence[CommitMessage], commit_identifier: int, overwrite: bool = False,
               dynamic_partition_overwrite: bool | None = None, properties: dict[str, str] | None = None,
               watermark: int | None = None) -> int | None:
        """Commit ``messages`` once per ``(commit_user, commit_identifier)``.

        New files become an APPEND snapshot (or one OVERWRITE snapshot with
        ``overwrite=True``: the whole table, or with dynamic partition overwrite only the
        partitions the messages write), compaction changes a following COMPACT snapshot.
        Returns the id of the last snapshot created, or None if there was nothing to do or it
        was already committed. Each snapshot keeps the largest ``watermark`` (epoch ms) so far.

        Raises:
            CommitConflictError: the change conflicts with what others committed, or the
                snapshot race was lost more than ``commit.max-retries`` times.
        """
        check_writable(self._schema, self._layout.root)
        self._point.in_doubt = False
        self._watermark = watermark
        check_messages(messages, self._schema)  # InvalidArgumentError, nothing written
        if dynamic_partition_overwrite is None:
            dynamic_partition_overwrite = bool(self._options["dynamic-partition-overwrite"])
        done = self._committed_kinds(commit_identifier)
        if self._dynamic is not None and not done & {OVERWRITE, APPEND} and (moves := self._dynamic.moves(messages)):
            return self._dynamic.reconciled(messages, moves, lambda ms: self.commit(ms, commit_identifier, overwrite,
                dynamic_partition_overwrite, properties), lambda: self.is_committed(commit_identifier))
        new_files, compactions = split_kinds(messages)
        last: int | None = None
        if overwrite and OVERWRITE not in done:
            last = self._commit_kind(OVERWRITE, new_files, commit_identifier, properties,
                                     dynamic_partition_overwrite)
        elif new_files and APPEND not in done:
            last = self._commit_kind(APPEND, new_files, commit_identifier, properties, False)
        if compactions and not overwrite and COMPACT not in done:
            last = self._commit_kind(COMPACT, compactions, commit_identifier, properties, False)
        return last

    def commit_rewrite(self, messages: Sequence[CommitMessage], commit_identifier: int,
                       check: Callable[[Snapshot | None], None] | None = None) -> int | None:
        """Commit a row-level change (minipaimon_core.dml.dml) as one snapshot: each message's
        ``compactBefore`` DELETEd (still live, else CommitConflictError FILES_GONE) and its
        ``newFiles`` ADDed, its ``deletedRows`` marked (append tables with deletion
        vectors); an OVERWRITE if it deletes files or rows, else an APPEND. ``check(latest)`` runs on the base of each attempt before
        anything is written and raises CommitConflictError if the change no longer applies."""
        check_writable(self._schema, self._layout.root)
        self._point.in_doubt = False
        self._watermark = None  # (the latest's is carried forward)
        if self._committed_kinds(commit_identifier):
            return None
        kind = OVERWRITE if any(m.compactBefore or m.deletedRows for m in messages) else APPEND
        if kind == APPEND and not any(m.newFiles or m.changelogFiles for m in messages):
            return None
        if self._dynamic is not None and (moves := self._dynamic.moves(messages)):
            return self._dynamic.reconciled(messages, moves, lambda ms: self.commit_rewrite(
                ms, commit_identifier, check), lambda: self.is_committed(commit_identifier))
        return self._commit_kind(kind, messages, commit_identifier, None, False, check=check, rewrite=True)

    def _committed_kinds(self, identifier: int, even_if_fresh: bool = False) -> set[str]:
        fresh = self._fresh_user and not even_if_fresh  # a new random user: nothing committed yet
        return set() if fresh else committed_kinds(self._snapshots, self._records, self._user, identifier)

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether some snapshot of this commit user has ``commit_identifier`` (or later)."""
        return bool(self._committed_kinds(commit_identifier, even_if_fresh=True))

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files ``messages`` wrote. Call only for messages never committed."""
        check_messages(messages, self._schema)  # none outside the table
        for m in messages:
            for f in (*m.newFiles, *m.compactAfter, *m.changelogFiles):
                for path in file_paths(self._layout, m.partitionPath, m.bucket, f):
                    self._io.delete(path)

    # -- one snapshot ------------------------------------------------------------------------

    def _commit_kind(
        self,
        kind: str,
        messages: Sequence[CommitMessage],
        identifier: int,
        properties: dict[str, str] | None,
        dynamic: bool,
        check: Callable[[Snapshot | None], None] | None = None,
        rewrite: bool = False,
    ) -> int | None:
        max_retries = self._options["commit.max-retries"]
        started = time.monotonic()
        deadline = started + self._options["commit.timeout"] / 1000
        attempt = store_failures = 0
        while True:
            read_at = time.monotonic()
            latest = self._snapshots.latest()
            written: list[str] = []
            moved: list[tuple[CommitMessage, CommitMessage]] = []  # (original, rewritten)
            try:
                snap = self._try_commit(kind, messages, identifier, properties, dynamic, latest, read_at,
                                        written, moved, check, rewrite)
            except BaseException as e:
                self._clean(written, moved)  # nothing references them: no create was tried
                # metadata or (deletion vectors) data files of our base read missing: if our
                # base expired under us, a lost race (retry from the latest), else damage
                if not isinstance(e, DAMAGED_OR_GONE) or not self._base_expired(latest):
                    raise
                snap = None
            self.attempts = attempt + 1
            if snap is not None and self._point.create(snap, deadline):
                # the originals of rewritten files were never committed: garbage now
                self._point.after_landing(snap, resequence.rewritten_paths(self._layout, moved, originals=True))
                return snap.id
            self._clean(written, moved)  # the attempt is known not to have landed
            attempt += 1
            failure = self._point.store_failure if snap is not None else None
            store_failures += failure is not None
            if attempt > max_retries or time.monotonic() > deadline:
                raise gave_up(self._layout.root, attempt, time.monotonic() - started, store_failures, failure)
            time.sleep(retry_wait(attempt, self._options["commit.min-retry-wait"],
                                  self._options["commit.max-retry-wait"],
                                  (time.monotonic() - started) * 1000) / 1000)

    def may_have_landed(self) -> bool:
        """Whether a snapshot of the last ``commit`` / ``commit_rewrite`` call may be
        committed (its create was tried and is not known to have failed). A caller whose
        commit raised deletes the messages' files (:meth:`abort`) only if this is False."""
        return self._point.in_doubt

    def _base_expired(self, base: Snapshot | None) -> bool:
        """Has ``base`` expired? Then metadata of it missing means a lost race, not damage
        (expiration keeps the latest; docs/format.md, "Expiration order"). A zombie under
        its id is no answer (issue 32 follow-up: the write raised 'manifest missing')."""
        return base is not None and self._snapshots.has_expired(base)

    def _clean(self, names: list[str], moved: Sequence[tuple[CommitMessage, CommitMessage]] = ()) -> None:
        """Delete what a failed attempt wrote: metadata files by name, rewritten data files."""
        for name in names:
            self._io.delete(self._layout.metadata_path(name))
        for path in resequence.rewritten_paths(self._layout, moved, originals=False):
            self._io.delete(path)

    def _try_commit(self, kind: str, messages: Sequence[CommitMessage], identifier: int,
                    properties: dict[str, str] | None, dynamic: bool, latest: Snapshot | None,
                    read_at: float, written: list[str], moved: list[tuple[CommitMessage, CommitMessage]],
                    check: Callable[[Snapshot | None], None] | None = None, rewrite: bool = False,
                    ) -> Snapshot | None:
        """The snapshot of one attempt on ``latest``, its metadata files written (names in
        ``written``), not created; None if the attempt is too old to create (retry)."""
        overwritten: list[ManifestEntry] = []
        if check is not None:
            check(latest)
        given = messages  # before rewrite drops the messages without new files
        if rewrite:
            overwritten, messages = self._rewritten(latest, messages)
        elif kind == COMPACT:
            conflict = check_compaction(live_files(self._manifests, latest), messages,
                                        bool(self._schema.primaryKeys))
            if conflict is not None:
                raise conflict.error()
            check_applied(self._dvio, latest, messages)  # rows a compaction left out: still marked
        elif kind == OVERWRITE:
            overwritten = self._overwritten(latest, messages, dynamic)
        hashes = self._dynamic.apply(latest, messages, kind == OVERWRITE and not rewrite, dynamic, written) \
            if self._dynamic is not None and kind != COMPACT else None  # the new HASH index (None: latest's)
        next_seq = next_sequence(self._manifests, latest)
        if kind != COMPACT and self._schema.primaryKeys and latest is not None:
            messages = self._moved_above(messages, latest, next_seq, moved)
        if kind != COMPACT and (places_above_level0(self._schema) or places_sorted_loads(self._schema)):
            messages = self._placed(messages, latest, overwritten)
            if self._first_rows is not None:
                messages = first_rows_only(self._first_rows, self._io, self._layout, self._schemas,
                                           messages, latest, overwritten, moved)
        change = entries_for(kind, messages, next_seq, overwritten, bool(self._schema.primaryKeys))
        index = self._append_vectors.update(latest, given, overwritten, written) \
            if self._append_vectors is not None else None
        snap = self._write_metadata(kind, change, identifier, properties, latest, written, index, hashes)
        make_durable(self._io, self._layout, messages, written)  # before the create
        # If base N expired meanwhile, snapshot-(N+1) exists (our create fails, we retry) or
        # expired too and its marker names another snapshot (we landed below the latest:
        # undone, retried), while the marker lives; an older attempt starts again
        # (docs/format.md, "Expiration and in-flight commits").
        if time.monotonic() - read_at > MAX_ATTEMPT_SECONDS:
            return None
        return snap

    def _rewritten(self, latest: Snapshot | None, messages: Sequence[CommitMessage]
                   ) -> tuple[list[ManifestEntry], list[CommitMessage]]:
        """The entries a row-level change replaces (``compactBefore``: live in ``latest``,
        else FILES_GONE) and the messages left to ADD."""
        conflict = files_still_live(live_files(self._manifests, latest), messages, bool(self._schema.primaryKeys))
        if conflict is not None:
            raise conflict.error()
        gone = [m.entry(0, f) for m in messages for f in m.compactBefore]
        return gone, [msgspec.structs.replace(m, compactBefore=[]) for m in messages if m.newFiles]

    def _placed(self, messages: Sequence[CommitMessage], latest: Snapshot | None,
                overwritten: Sequence[ManifestEntry]) -> list[CommitMessage]:
        """``messages`` with their new files placed (above level 0, or a sorted load at the bottom)."""
        touched = {(tuple(m.partition), m.bucket) for m in messages if m.newFiles}
        live = live_in_buckets(self._manifests, latest, touched)
        max_level = PickerOptions.from_options(self._schema.options).max_level
        return place_messages(messages, live, overwritten, max_level, places_above_level0(self._schema))

    def _moved_above(self, messages: Sequence[CommitMessage], latest: Snapshot, next_seq: int,
                     moved: list[tuple[CommitMessage, CommitMessage]]) -> list[CommitMessage]:
        """``messages``, those that may tie with files committed since their writer started
        rewritten above ``next_seq`` ((original, rewritten) appended to ``moved``)."""
        added: dict[int | None, dict | None] = {}
        out = []
        for m in messages:
            if m.baseSnapshotId not in added:
                added[m.baseSnapshotId] = resequence.added_since(
                    self._manifests, self._snapshots, m.baseSnapshotId, latest)
            if resequence.needs_moving(m, added[m.baseSnapshotId]):
                new = resequence.move(self._io, self._layout, self._schemas, m, next_seq, [])
                moved.append((m, new))
                next_seq = max(f.maxSequenceNumber for f in (*new.newFiles, *new.changelogFiles)) + 1
                m = new
            out.append(m)
        return out

    def _write_metadata(self, kind: str, change: CommitEntries, identifier: int,
                        properties: dict[str, str] | None, latest: Snapshot | None,
                        written: list[str], index: tuple[str | None, str | None] | None = None,
                        hashes: list[IndexFileEntry] | None = None) -> Snapshot:
        """Write the manifests and manifest lists of ``change`` (names appended to
        ``written``) and return the snapshot that would reference them (not written)."""
        entries, changelog = change.entries, change.changelog
        lists = write_manifests(self._manifests, self._schema, self._options, change, latest, written)
        delta_rows = record_delta(entries)
        index_manifest, index_digest = (latest.indexManifest, latest.index_manifest_digest) \
            if latest is not None else (None, None)
        if self._vectors is not None:
            index_manifest, index_digest = self._vectors.update(latest, entries, written, hashes)
        elif index is not None:  # append vectors (``index``: their new index manifest)
            index_manifest, index_digest = index
        elif hashes is not None:  # dynamic buckets: their HASH index changed
            index_manifest, index_digest = self._dvio.write_snapshot_index(latest, None, hashes, written)
        return Snapshot(
            version=SNAPSHOT_VERSION,
            id=(latest.id + 1) if latest else 1,
            schemaId=self._schema.id,
            baseManifestList=lists.base[0],
            baseManifestListSize=lists.base[1],
            deltaManifestList=lists.delta[0],
            deltaManifestListSize=lists.delta[1],
            changelogManifestList=lists.changelog[0],
            changelogManifestListSize=lists.changelog[1],
            indexManifest=index_manifest,
            commitUser=self._user,
            commitIdentifier=identifier,
            commitKind=kind,
            timeMillis=self._clock(),
            totalRecordCount=(latest.totalRecordCount if latest else 0) + delta_rows,
            deltaRecordCount=delta_rows,
            changelogRecordCount=sum(e.file.rowCount for e in changelog) if changelog else None,
            watermark=max((w for w in (self._watermark, latest.watermark if latest else None) if w is not None), default=None),
            properties=properties,
            nextSequenceNumber=change.next_sequence,
            minipaimonDigests=Digests(lists.base[2], lists.delta[2], lists.changelog[2], index_digest),
            minipaimonReplayable=None if self._fresh_user else True,
        )

    def _overwritten(self, latest: Snapshot | None, messages: Sequence[CommitMessage],
                     dynamic: bool) -> list[ManifestEntry]:
        """The live entries an overwrite replaces: all, or with dynamic partition overwrite
        those of the partitions ``messages`` write."""
        live = live_files(self._manifests, latest)
        if dynamic and self._schema.partitionKeys:
            written = {tuple(m.partition) for m in messages if m.newFiles}
            live = [e for e in live if tuple(e.partition) in written]
        return live


__all__ = ["CommitMessage", "DataFileMeta", "FileStoreCommit"]
