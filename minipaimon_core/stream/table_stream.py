"""A plain-Python streaming consumer of a table, with an exactly-once hand-off.

```python
stream = source.stream(consumer_id="job")         # same scan.mode / options as Spark's source
for batch in stream:                               # what is there now, one snapshot per batch
    w = target.new_write("job"); w.write(batch.data)
    target.new_commit("job").commit(w.prepare_commit(), commit_identifier=batch.identifier)
    stream.commit(batch)                           # progress into consumer/consumer-job
```

Batches are deterministic: the first is the full scan of the start snapshot (``latest-full``,
``from-snapshot-full``) or the changes of one snapshot, and every later batch is the changes
of exactly one more snapshot, so ``batch.identifier`` (the snapshot id the batch completes)
names the same rows on every run. A consumer killed after its downstream commit but before
``stream.commit`` re-reads that batch on restart, and the downstream commit of the same
identifier by the same commit user is a no-op: nothing is written twice.

With a ``consumer_id`` the stream resumes after the last committed batch, and expiration
keeps every snapshot the consumer still needs. A new consumer's start is pinned when the
stream is created, before any batch is handed out (written, then checked against an
expiration in flight: :meth:`ConsumerManager.pin`; ``latest-full`` / ``latest`` move on to
the new latest snapshot if theirs was taken, a fixed start raises SnapshotExpiredError): a
consumer killed after the downstream commit of its first batch restarts at that same batch
(whatever was committed upstream meanwhile), so the first batch too is handed over exactly
once.

A stream belongs to one table: if the table at its path is dropped and created again while
the stream is used, its position (a snapshot id of the old table) means nothing in the new
one, and the next iteration raises InvalidArgumentError instead of skipping rows. Batch
identifiers start again with a new table: a downstream writer that dedupes by them should
make ``stream.table_id`` part of its commit user.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa

from ..errors import InvalidArgumentError, SnapshotExpiredError
from ..metadata.consumer import ConsumerManager
from ..read.table_view import TableView
from ..schema.schema import SchemaManager
from .stream import StreamOffset, StreamScanner

PIN_ATTEMPTS = 5  # a latest / latest-full start chosen again after an expiration took it


@dataclass(frozen=True)
class StreamBatch:
    """The rows between two stream offsets (``start`` exclusive, ``end`` inclusive)."""

    data: pa.Table
    start: StreamOffset
    end: StreamOffset

    @property
    def identifier(self) -> int:
        """The snapshot id this batch completes: a commit identifier for a downstream write
        that is the same on every run over the same history."""
        return self.end.snapshot


class TableStream:
    """Iterates the batches available now; iterate again later for newer snapshots."""

    def __init__(self, table: TableView, consumer_id: str | None = None,
                 options: Mapping[str, str] | None = None) -> None:
        self._table = table
        self._schemas = SchemaManager(table.io, table.layout)
        #: the identity of the table this stream reads (SchemaManager.table_id)
        self.table_id = self._schemas.table_id()
        self._scanner = StreamScanner(table, options)
        self._consumers = ConsumerManager(table.io, table.layout)
        self.consumer_id = consumer_id
        snapshots = table.snapshot_manager
        resumed = self._consumers.recheck(consumer_id, snapshots) if consumer_id is not None else None
        if resumed is not None:
            self.position = (StreamOffset(resumed.nextSnapshot, full=True)
                             if resumed.fullScanPending else StreamOffset(resumed.nextSnapshot - 1))
        else:
            self.position = self._pinned_start(consumer_id)

    def _pinned_start(self, consumer_id: str | None) -> StreamOffset:
        """The start of a new stream, pinned under ``consumer_id`` (if any). A start whose
        snapshot an expiration in flight took is chosen again (``latest-full`` and
        ``latest`` move on); a fixed one raises SnapshotExpiredError."""
        for _ in range(PIN_ATTEMPTS):
            start = self._scanner.initial_offset()
            if consumer_id is None or self._consumers.pin(
                    consumer_id, start.next_snapshot, start.full, self._table.snapshot_manager):
                return start
            if self._scanner.mode not in ("latest-full", "latest"):
                break
        raise SnapshotExpiredError(
            f"snapshot {start.next_snapshot} of {self._table.path}, where the stream "
            f"{consumer_id!r} would start, was expired while the stream was created; start "
            "from a later snapshot, or raise 'snapshot.num-retained.min' / 'snapshot.time-retained'")

    def output_schema(self) -> pa.Schema:
        return self._scanner.output_schema()

    def __iter__(self) -> Iterator[StreamBatch]:
        """Batches from the current position up to the latest snapshot; empty ones are
        skipped (the position still moves past them)."""
        while True:
            self._check_table()
            end = self._next_end()
            if end is None:
                return
            start, self.position = self.position, end
            splits = self._scanner.plan(start, end)
            batches = [b for split in splits for b in self._scanner.read(split)]
            if batches:
                yield StreamBatch(pa.Table.from_batches(batches, self.output_schema()), start, end)

    def commit(self, batch: StreamBatch) -> None:
        """Record that ``batch`` is processed (no-op without a consumer id).

        Raises InvalidArgumentError for a batch beyond the stream's position.
        """
        if batch.end.snapshot > self.position.snapshot:
            raise InvalidArgumentError(
                f"batch up to snapshot {batch.end.snapshot} was not read by this stream "
                f"(position {self.position.snapshot})")
        if self.consumer_id is not None:
            self._consumers.write(self.consumer_id, batch.end.next_snapshot)

    def _check_table(self) -> None:
        """Raise InvalidArgumentError if the table at the path is no longer this stream's."""
        now = self._schemas.table_id()
        if now != self.table_id:
            raise InvalidArgumentError(
                f"the table at {self._table.path} was dropped and created again while this "
                f"stream read it (table id {self.table_id}, now {now}): the stream's position, "
                f"snapshot {self.position.snapshot}, is the old table's; create a new stream "
                "on the new table")

    def _next_end(self) -> StreamOffset | None:
        if self.position.full:
            return StreamOffset(self.position.snapshot)  # the whole full scan: one batch
        latest = self._table.snapshot_manager.latest_id() or 0
        if self.position.snapshot >= latest:
            return None
        return StreamOffset(self.position.snapshot + 1)
