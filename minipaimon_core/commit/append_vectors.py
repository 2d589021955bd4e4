"""Deletion vectors of append tables (``deletion-vectors.enabled`` on a table without
primary key), kept by the committer.

An append file's vector lists the positions of its rows that are deleted. Nothing computes
them from keys (there are none): writers say which rows they delete. A row-level change
(minipaimon_core.dml.dml) marks the rows it removes instead of rewriting their file
(:attr:`CommitMessage.deletedRows`); a compaction of append files leaves out the marked
rows of its inputs, whose vectors then go (as do those of files an overwrite deletes).

Whoever read a file's rows through its vector records the vector's fingerprint (xxhash64 of
its positions, 0 for none: :attr:`CommitMessage.vectorsRead`); the commit refuses
(``CommitConflictError`` ROWS_CHANGED) if the file's vector in the snapshot it commits on
has another fingerprint: a concurrent change marked rows of the file meanwhile (or a
rollback unmarked some: not a count, which a rollback and a new change can restore with
other rows), and the change is read again. A file to be marked must still be live (else
FILES_GONE). Per touched bucket the commit writes
one new index file with the bucket's vectors; other buckets keep theirs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import xxhash

from ..errors import CommitConflictError, ConflictReason
from ..format.manifest_file import ManifestEntry
from ..format.snapshot import Snapshot
from ..metadata.commit_message import CommitMessage
from ..metadata.deletion_vectors import BucketKey, DeletionVectorIO, IndexFileEntry, Vectors
from ..metadata.manifest_io import ManifestIO, live_in_buckets


class AppendVectors:
    """The committer's step for append tables with deletion vectors."""

    def __init__(self, manifests: ManifestIO, dvio: DeletionVectorIO) -> None:
        self._manifests = manifests
        self._dvio = dvio

    def update(self, base: Snapshot | None, messages: Sequence[CommitMessage],
               overwritten: Sequence[ManifestEntry], written: list[str]) -> tuple[str | None, str | None]:
        """The index manifest (name, digest) of the snapshot that commits ``messages`` (and
        deletes ``overwritten``) on ``base``: the base's own when no vector changes, else a
        new one (new files' names appended to ``written``, for cleanup).

        Raises CommitConflictError: ROWS_CHANGED (a vector read changed since), FILES_GONE
        (a file to be marked is no longer live).
        """
        marks: dict[BucketKey, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
        read: dict[BucketKey, dict[str, int]] = defaultdict(dict)
        dropped: dict[BucketKey, set[str]] = defaultdict(set)
        for m in messages:
            key = (tuple(m.partition), m.bucket)
            for name, positions in m.deletedRows.items():
                marks[key][name].append(np.asarray(positions, dtype=np.int64))
            read[key].update(m.vectorsRead)
            dropped[key].update(f.fileName for f in m.compactBefore)
        for e in overwritten:
            dropped[(tuple(e.partition), e.bucket)].add(e.file.fileName)
        old = self._dvio.by_bucket(base)
        touched = {k for k in (*marks, *read) if marks[k] or read[k]} | {k for k in dropped if k in old}
        if not touched:
            return self._dvio.write_snapshot_index(base, None, None, written)
        live = _live_names(self._manifests, base, set(marks))
        result: dict[BucketKey, IndexFileEntry] = {k: v for k, v in old.items() if k not in touched}
        for key in sorted(touched, key=repr):
            vectors = dict(self._dvio.vectors(old[key])) if key in old else {}
            _check_read(key, vectors, read[key])
            for name in dropped[key]:
                vectors.pop(name, None)
            for name, parts in marks[key].items():
                if name not in live[key]:
                    raise CommitConflictError(
                        f"file {name} of bucket {key[1]} of partition {list(key[0])} is no longer live "
                        "(a concurrent compaction or overwrite replaced it)", ConflictReason.FILES_GONE)
                vectors[name] = np.union1d(vectors.get(name, np.zeros(0, np.int64)), np.concatenate(parts))
            if vectors:
                entry = self._dvio.write_index(key[0], key[1], _typed(vectors))
                written.append(entry.fileName)
                result[key] = entry
        return self._dvio.write_snapshot_index(base, list(result.values()), None, written)


def fingerprint(positions: np.ndarray | None) -> int:
    """The identity of a vector (sorted, distinct positions; None or empty: no vector, 0)."""
    if positions is None or len(positions) == 0:
        return 0
    return xxhash.xxh64_intdigest(np.asarray(positions, dtype=np.uint32).tobytes()) or 1


def _check_read(key: BucketKey, vectors: Vectors, read: dict[str, int]) -> None:
    for name, seen in read.items():
        if fingerprint(vectors.get(name)) != seen:
            raise CommitConflictError(
                f"the deleted rows of file {name} (bucket {key[1]} of partition {list(key[0])}) "
                "changed after this commit's writer read them (a concurrent change or a rollback)",
                ConflictReason.ROWS_CHANGED)


def _live_names(manifests: ManifestIO, base: Snapshot | None, buckets: set[BucketKey]) -> dict[BucketKey, set[str]]:
    out: dict[BucketKey, set[str]] = defaultdict(set)
    if buckets:
        for e in live_in_buckets(manifests, base, buckets):
            out[(tuple(e.partition), e.bucket)].add(e.file.fileName)
    return out


def _typed(vectors: dict[str, np.ndarray]) -> Vectors:
    """Positions as the index file codec takes them (sorted, unique, 32-bit)."""
    return {name: np.asarray(p, dtype=np.int64).astype(np.uint32) for name, p in vectors.items()}


__all__ = ["AppendVectors", "fingerprint"]
