"""Deletion vectors kept right by the committer (tables with ``deletion-vectors.enabled``).

Each commit attempt recomputes the vectors of the buckets it changes against the snapshot
it is based on; an attempt that loses the race for the snapshot id recomputes against the
new latest. So concurrent writers and compactions never leave two live rows of one key, and
the vectors always describe exactly the files of their snapshot. Per changed bucket:

```
 survivors   the base's live files minus the files the change DELETEs (their vectors kept)
 added       the files the change ADDs (new files placed in a level >= 1, see
             lsm/placement.py, or a compaction's output); level-0 files are invisible to
             readers and take no part
 candidates  the rows of the added files, and the unmarked rows of survivors whose key is
             among them (a survivor whose key range misses the added keys is not read)
 winner      per key, the row the merge engine keeps: the last by (sequence.field,
             _SEQUENCE_NUMBER) for deduplicate, the first for first-row; retractions are no
             candidates with ignore-delete (and for first-row, which ignores them)
 marked      every other candidate row (a -D winner stays unmarked: readers drop it by kind)
```

A compaction's output merged its inputs without the rows their vectors marked (a vector can
be the only record of a delete: Paimon's compaction drops the ``-D`` row once it has marked
what it deletes), and its rows are recomputed here against the files it did not compact.
Marks of a live file only grow, except where a restore or a rollback gives it an older
snapshot's vector: :func:`check_applied` refuses a compaction that left out a row no longer
marked (it would be lost). The commit reads only key, sequence and kind columns, and caches
them per data file (files are immutable).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CommitConflictError, ConflictReason
from ..format.kinds import SEQUENCE, VALUE_KIND, RowKind
from ..format.layout import TableLayout
from ..format.manifest_file import ADD, DataFileMeta, ManifestEntry
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..lsm.key_range import find_overlap, key_order, overlaps
from ..lsm.merge_engines import MergeConfig
from ..lsm.merge_groups import Groups
from ..metadata.commit_message import CommitMessage
from ..metadata.deletion_vectors import BucketKey, DeletionVectorIO, IndexFileEntry, Vectors
from ..metadata.manifest_io import ManifestIO, live_in_buckets
from ..read.read import read_file_as
from ..schema.partition import PartitionSpec
from ..schema.schema import SchemaCache, SchemaManager, TableSchema

_FILE, _POS = "_DV_FILE", "_DV_POS"
_KEY_CACHE_BYTES = 256 << 20


class _KeyCache:
    """Key columns of data files by (table root, file name, schema id), bounded by bytes."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._used = 0
        self._tables: OrderedDict[tuple[str, str, int], pa.Table] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, int]) -> pa.Table | None:
        with self._lock:
            t = self._tables.get(key)
            if t is not None:
                self._tables.move_to_end(key)
            return t

    def put(self, key: tuple[str, str, int], table: pa.Table) -> None:
        with self._lock:
            if key in self._tables or table.nbytes > self._budget // 4:
                return
            self._tables[key] = table
            self._used += table.nbytes
            while self._used > self._budget:
                _, old = self._tables.popitem(last=False)
                self._used -= old.nbytes


_KEYS = _KeyCache(_KEY_CACHE_BYTES)


def check_applied(dvio: DeletionVectorIO, base: Snapshot | None, messages: Sequence[CommitMessage]) -> None:
    """Refuse compaction ``messages`` that left out rows (:attr:`CommitMessage.vectorsApplied`)
    which the vectors of ``base``, the snapshot they commit on, no longer mark.

    Raises CommitConflictError (ROWS_CHANGED): a restore or rollback since unmarked them."""
    if not any(m.vectorsApplied for m in messages):
        return
    index = dvio.by_bucket(base)
    for m in messages:
        if not m.vectorsApplied:
            continue
        entry = index.get((tuple(m.partition), m.bucket))
        vectors = dvio.vectors(entry) if entry is not None else {}
        for name in sorted(m.vectorsApplied):
            marked = vectors.get(name, np.zeros(0, dtype=np.uint32))
            if not np.isin(m.applied_positions(name), marked, assume_unique=True).all():
                raise CommitConflictError(
                    f"the compaction of bucket {m.bucket} of partition {m.partition} left out rows "
                    f"of {name} that its deletion vector no longer marks (a restore or rollback "
                    "since); compact again", ConflictReason.ROWS_CHANGED)


class VectorMaintainer:
    """Computes the index manifest of a commit for one table schema."""

    def __init__(self, io: FileIO, layout: TableLayout, schema: TableSchema,
                 manifests: ManifestIO, dvio: DeletionVectorIO) -> None:
        self._io = io
        self._layout = layout
        self._schema = schema
        self._schemas = SchemaCache(SchemaManager(io, layout))
        self._manifests = manifests
        self._dvio = dvio
        self._spec = PartitionSpec.of(schema)
        self._config = MergeConfig.from_options(tuple(schema.primaryKeys), schema.options)
        self._keys = list(schema.primaryKeys)
        self._columns = [*self._keys, *filter(None, [self._config.sequence_field]), SEQUENCE, VALUE_KIND]

    def update(self, base: Snapshot | None, entries: list[ManifestEntry], written: list[str],
               hashes: list[IndexFileEntry] | None = None) -> tuple[str | None, str | None]:
        """The index manifest (name, digest) of the snapshot that commits ``entries`` on
        ``base``: the base's own when no vector changes (and ``hashes``, the snapshot's HASH
        index entries of a dynamic-bucket table, is None: unchanged), else a new one (names
        of new files appended to ``written``, for cleanup if the attempt fails)."""
        return self._dvio.write_snapshot_index(base, self._vectors(base, entries, written), hashes, written)

    def _vectors(self, base: Snapshot | None, entries: list[ManifestEntry], written: list[str]
                 ) -> list[IndexFileEntry] | None:
        """The deletion-vector entries of the snapshot committing ``entries`` on ``base``,
        None if they are the base's (new index files' names appended to ``written``)."""
        # level-0 files are invisible to readers (Paimon's rule): they neither win nor lose
        entries = [e for e in entries if e.file.level > 0]
        touched = {(tuple(e.partition), e.bucket) for e in entries}
        if not touched:
            return None
        old = self._dvio.by_bucket(base)
        deleted = {((tuple(e.partition), e.bucket), e.file.fileName) for e in entries if e.kind != ADD}
        added: dict[BucketKey, list[ManifestEntry]] = defaultdict(list)
        for e in entries:
            if e.kind == ADD:
                added[(tuple(e.partition), e.bucket)].append(e)
        survivors: dict[BucketKey, list[DataFileMeta]] = defaultdict(list)
        for e in live_in_buckets(self._manifests, base, touched):
            key = (tuple(e.partition), e.bucket)
            if (key, e.file.fileName) not in deleted and e.file.level > 0:
                survivors[key].append(e.file)
        result = {k: v for k, v in old.items() if k not in touched}
        changed = False
        for key in sorted(touched, key=repr):
            before = self._dvio.vectors(old[key]) if key in old else {}
            vectors = self._bucket(key, survivors[key], [e.file for e in added[key]], before)
            if vectors is None:  # nothing marked, no vector dropped
                if key in old:
                    result[key] = old[key]
                continue
            changed = True
            if vectors:
                entry = self._dvio.write_index(key[0], key[1], vectors)
                written.append(entry.fileName)
                result[key] = entry
        return list(result.values()) if changed else None

    def losing_rows(self, base: Snapshot | None, added: dict[BucketKey, list[DataFileMeta]],
                    removed: set[tuple[BucketKey, str]]) -> dict[BucketKey, Vectors]:
        """Per bucket, the rows of the ``added`` files (levels >= 1) the merge engine
        discards against each other and the base's live files at levels >= 1 (those in
        ``removed`` left out); buckets without such rows are left out. Marks the base's
        files would get are not returned (see minipaimon_core.commit.first_row for the engine that
        uses this, where they cannot occur)."""
        touched = set(added)
        survivors: dict[BucketKey, list[DataFileMeta]] = defaultdict(list)
        for e in live_in_buckets(self._manifests, base, touched):
            key = (tuple(e.partition), e.bucket)
            if (key, e.file.fileName) not in removed and e.file.level > 0:
                survivors[key].append(e.file)
        out: dict[BucketKey, Vectors] = {}
        for key in sorted(touched, key=repr):
            names = {f.fileName for f in added[key]}
            marked = self._bucket(key, survivors[key], added[key], {}) or {}
            mine = {n: p for n, p in marked.items() if n in names}
            if mine:
                out[key] = mine
        return out

    # -- one bucket --------------------------------------------------------------------------

    def _bucket(self, key: BucketKey, survivors: list[DataFileMeta], added: list[DataFileMeta],
                before: Vectors) -> Vectors | None:
        """The bucket's vectors after the change, or None if they equal ``before``."""
        names = {f.fileName for f in survivors}
        vectors = {n: p for n, p in before.items() if n in names}
        dropped = len(vectors) != len(before)
        if not added:
            return vectors if dropped else None
        path = self._spec.path(list(key[0]))
        added = sorted(added, key=lambda f: (f.minSequenceNumber, f.maxSequenceNumber, f.fileName))
        files = [*survivors, *added]
        new_rows = [self._rows(path, key[1], f, len(survivors) + i, None) for i, f in enumerate(added)]
        new_keys = pa.concat_tables(new_rows).select(self._keys)
        low = min(key_order(f.minKey) for f in added)
        high = max(key_order(f.maxKey) for f in added)
        matched = [self._rows(path, key[1], f, i, vectors.get(f.fileName)).join(
                       new_keys, keys=self._keys, join_type="left semi")
                   for i, f in enumerate(survivors) if overlaps(f, low, high)]
        matched = [t for t in matched if t.num_rows]
        if find_overlap(added) is None:  # each file's keys are distinct: only survivors compete
            if not matched:
                return vectors if dropped else None
            old_keys = pa.concat_tables(matched).select(self._keys)
            new_rows = [t.join(old_keys, keys=self._keys, join_type="left semi") for t in new_rows]
        marked = self._losers(pa.concat_tables([*matched, *new_rows]))
        if not marked:
            return vectors if dropped else None
        for i, positions in marked.items():
            name = files[i].fileName
            vectors[name] = np.union1d(vectors[name], positions).astype(np.uint32) \
                if name in vectors else positions.astype(np.uint32)
        return vectors

    def _losers(self, rows: pa.Table) -> dict[int, np.ndarray]:
        """File index -> positions of the candidate ``rows`` the merge engine discards."""
        config = self._config
        if config.ignore_delete or config.engine == "first-row":
            kinds = rows.column(VALUE_KIND).to_numpy()
            rows = rows.filter(pa.array((kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)))
        if rows.num_rows < 2:
            return {}
        groups = Groups(rows, config)
        winners = groups.order[groups.ends if config.engine == "deduplicate" else groups.starts]
        lose = np.ones(rows.num_rows, dtype=bool)
        lose[winners] = False
        if not lose.any():
            return {}
        file_of = rows.column(_FILE).to_numpy()[lose]
        positions = rows.column(_POS).to_numpy()[lose]
        order = np.lexsort((positions, file_of))
        file_of, positions = file_of[order], positions[order]
        cuts = np.flatnonzero(np.diff(file_of)) + 1
        return {int(f[0]): p for f, p in zip(np.split(file_of, cuts), np.split(positions, cuts))}

    def _rows(self, path: str, bucket: int, f: DataFileMeta, index: int,
              deleted: np.ndarray | None) -> pa.Table:
        """Key, sequence and kind columns of ``f`` with its file index and row positions,
        rows in ``deleted`` left out."""
        # keyed by the schema read into too: after a column is widened (a sequence.field
        # int -> bigint) the same file is read with the new type
        cache_key = (self._layout.root, f.fileName, self._schema.id)
        t = _KEYS.get(cache_key)
        if t is None:  # cached without the sequence offset: a retried commit shifts it anew
            t = read_file_as(self._io, self._layout, self._schemas, self._schema, path, bucket,
                             msgspec.structs.replace(f, sequenceOffset=0), self._columns)
            # files of one table may differ in nullability (Spark writes nullable keys)
            t = t.cast(pa.schema([fld.with_nullable(True) for fld in t.schema]))
            _KEYS.put(cache_key, t)
        if f.sequenceOffset:
            i = t.column_names.index(SEQUENCE)
            t = t.set_column(i, t.schema.field(i),
                             pc.add(t.column(i), pa.scalar(f.sequenceOffset, pa.int64())))
        n = t.num_rows
        t = t.append_column(_FILE, pa.array(np.full(n, index, dtype=np.int32))) \
             .append_column(_POS, pa.array(np.arange(n, dtype=np.int64)))
        if deleted is not None and len(deleted):
            keep = np.ones(n, dtype=bool)
            keep[deleted] = False
            t = t.filter(pa.array(keep))
        return t

    # -- the base's files of the changed buckets ------------------------------------------------
