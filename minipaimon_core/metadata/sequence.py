"""Sequence numbers: the later commit wins, with Paimon's numbers in the files.

A primary-key file's ``_SEQUENCE_NUMBER`` column orders the rows of a key, for minipaimon
and for Paimon's readers alike, so the numbers in the files are final:

* a snapshot records the table's next sequence number (``nextSequenceNumber``, above every
  row in the table; a snapshot another writer made has none, and it is computed from the
  files' maximum, as Paimon's writers restore theirs per bucket);
* a writer numbers its rows from the next number of the snapshot it started on
  (:class:`SequenceStart`), in input order; the tasks of one Spark write share a start and
  interleave (``stride`` 4096, ``offset`` the task's partition id), so no two rows of one
  write tie (rows of one key in one task apply in task order; Spark orders no rows across
  tasks, and neither does this: a stream source hands each bucket's changes to one task);
* the committer keeps the numbers when no commit since the writer's snapshot added a file
  to the same bucket with numbers as high; otherwise it rewrites the message's files with
  their numbers moved above the table's next number (:mod:`minipaimon_core.metadata.resequence`),
  so a later commit still wins whichever process wrote its files first;
* compaction keeps the numbers it merges, and a snapshot's next number is one above the
  highest it holds.

Append files have no such column: their min/max sequence numbers (which order append
compaction) are set by the committer from the table's next number.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..format.snapshot import Snapshot
from .manifest_io import ManifestIO, live_files

SPARK_STRIDE = 4096


@dataclass(frozen=True)
class SequenceStart:
    """Where a writer's sequence numbers start: row ``i`` it writes gets
    ``base + i * stride + offset``."""

    base: int
    snapshot_id: int | None
    stride: int = 1
    offset: int = 0

    def numbers_at(self, first: int, positions: np.ndarray | None, count: int) -> np.ndarray:
        """The numbers (int64) of this writer's rows ``first + p`` for each position ``p``
        of ``positions`` (None: ``0 .. count - 1``)."""
        if positions is None:
            numbers = np.arange(first, first + count, dtype=np.int64)  # one array, the rest in place
        else:
            numbers = np.add(positions, first, dtype=np.int64)
        if self.stride != 1:
            numbers *= self.stride
        numbers += self.base + self.offset
        return numbers

    def for_task(self, partition_id: int) -> SequenceStart:
        """The start of one task of a write whose tasks share this start."""
        return SequenceStart(self.base, self.snapshot_id, SPARK_STRIDE, partition_id % SPARK_STRIDE)


_computed: dict[tuple[str, int], int] = {}
_lock = threading.Lock()


def next_sequence(manifests: ManifestIO, snapshot: Snapshot | None) -> int:
    """The first sequence number above every row of ``snapshot`` (0 for an empty table)."""
    if snapshot is None:
        return 0
    if snapshot.nextSequenceNumber is not None:
        return snapshot.nextSequenceNumber
    key = (manifests.root, snapshot.id)  # the root names the branch too
    with _lock:
        found = _computed.get(key)
    if found is None:  # another writer's snapshot: the files' maximum, as Paimon restores it
        found = max((e.file.maxSequenceNumber for e in live_files(manifests, snapshot)), default=-1) + 1
        with _lock:
            _computed[key] = found
    return found


def start_of(manifests: ManifestIO, snapshot: Snapshot | None) -> SequenceStart:
    """The start of a writer beginning on ``snapshot``."""
    return SequenceStart(next_sequence(manifests, snapshot), snapshot.id if snapshot else None)


__all__ = ["SPARK_STRIDE", "SequenceStart", "next_sequence", "start_of"]
