"""Structured Streaming source: ``spark.readStream.format("minipaimon").load(path)``.

The core plans and reads (:mod:`minipaimon_core.stream`); this module maps Spark's
``DataSourceStreamReader`` protocol onto it. An offset is ``StreamOffset.to_dict()``
(``{"snapshot": n, "full": bool, "splitIndex": i}``), stored verbatim in the checkpoint,
or the symbolic start ``{"initial": "latest-full" | "latest"}`` (see ``initialOffset``):
Spark keeps only batches' end offsets and replays batch 0 from a fresh ``initialOffset()``.

Where each method runs (measured on 4.0.5 and 4.3.0):

- one long-lived driver-side Python process holds the reader and calls ``initialOffset``
  (possibly more than once: the value is cached), ``latestOffset``, ``partitions``,
  ``commit`` (one batch late; the last end may never be committed) and, on 4.3, ``stop``;
- tasks unpickle their own copy of the reader and call ``read(partition)``, so the reader
  pickles without its table handle.

Spark version features, detected from the installed pyspark, never from a version string:

- 4.2+ (``pyspark.sql.streaming.datasource``): admission control — Spark calls
  ``latestOffset(start, limit)`` with ``getDefaultReadLimit()`` built from the options
  ``maxFilesPerTrigger`` / ``maxRowsPerTrigger`` (``read.stream.`` prefix optional), and
  ``read.stream.maxSnapshotsPerTrigger`` is applied on top; ``Trigger.AvailableNow`` through
  ``prepareForTriggerAvailableNow`` (the target is the latest snapshot at that moment).
- 4.0/4.1: Spark calls ``latestOffset()`` with no argument: everything available (the rate
  options are refused there, rather than ignored); ``Trigger.AvailableNow`` works through
  Spark's own wrapper (one batch).

Consumers: with ``consumer-id`` (read option or table option) a new stream resumes from the
consumer's stored next snapshot: the first snapshot no committed batch delivered. Progress
is recorded when Spark says a batch is committed: ``latestOffset(start)`` for the next
batch (Spark asks only after the previous batch committed; on 4.0 the start is this
reader's previous end) and ``commit(end)`` (one batch late). The first batch of a query is
pinned before it is planned: ``latestOffset`` records its start (with ``fullScanPending``
for a full scan, as the Python consumer does) and checks that the snapshot survived, so an
expiration between ``latestOffset`` and ``partitions`` cannot take it, nor its replay after
a restart. Expiration keeps the snapshots of every live consumer; a query that never
commits a batch keeps its first snapshot until ``consumer.expiration-time`` (a table
option, as in Paimon) deletes consumers not updated for that long.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.errors import (
    MiniPaimonError,
    SnapshotExpiredError,
    UnsupportedOptionError,
)
from minipaimon_core.metadata.consumer import ConsumerManager
from minipaimon_core.stream.stream import StreamOffset, StreamScanner
from minipaimon_spark.common.options import (
    check_known,
    connection_options,
    normalized,
    stream_limits,
    table_path,
)
from minipaimon_spark.common.types import BatchConformer, to_arrow_schema
from minipaimon_spark.common.worker_guard import ShippedToWorkers
from minipaimon_spark.read.partitions import StreamPartition
from minipaimon_spark.stream.stream_offsets import TableIdentity
from minipaimon_spark.stream.stream_support import (
    ADMISSION_CONTROL,
    FailedStreamReader,
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
    check_stream_schema,
    expired_hint,
)

CONSUMER_ID = "consumer-id"
INITIAL = "initial"  # key of the symbolic start offset
SYMBOLIC_MODES = ("latest-full", "latest")
_PIN_ATTEMPTS = 5  # a symbolic start re-resolved after its snapshot expired before the pin


@dataclass(frozen=True)
class StreamReadOptions:
    """What a streaming read asks: the table, the scanner's options, limits, consumer."""

    path: str
    scanner_options: dict[str, str]
    consumer_id: str | None = None
    max_snapshots: int | None = None
    max_files: int | None = None
    max_rows: int | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> StreamReadOptions:
        """Raises InvalidArgumentError naming a missing or malformed option."""
        options = normalized(raw)
        check_known(options)
        limits = stream_limits(options)
        return cls(path=table_path(options), scanner_options=options,
                   consumer_id=options.get(CONSUMER_ID) or None, **limits)

    @property
    def has_limits(self) -> bool:
        return any(v is not None for v in (self.max_snapshots, self.max_files, self.max_rows))


def make_stream_reader(raw_options: Mapping[str, Any],
                       schema: StructType) -> DataSourceStreamReader:
    """The stream reader for ``schema``; never raises.

    pyspark's stream runner turns an exception raised by ``streamReader()`` into an
    ``UnboundLocalError`` (its ``finally: reader.stop()`` has no reader), so bad options give
    a :class:`FailedStreamReader` that raises the typed error from ``initialOffset()``,
    which Spark reports as is. (``schema()`` checks the same options earlier still.)
    """
    try:
        return MiniPaimonStreamReader(parse_stream_options(raw_options), schema)
    except MiniPaimonError as e:
        return FailedStreamReader(e)


def parse_stream_options(raw_options: Mapping[str, Any]) -> StreamReadOptions:
    """The options of a streaming read.

    Raises:
        InvalidArgumentError: no ``path``, a malformed value.
        UnsupportedOptionError: an unknown option; a rate limit on a pyspark without
            admission control (< 4.2).
    """
    options = StreamReadOptions.parse(raw_options)
    if options.has_limits and not ADMISSION_CONTROL:
        raise UnsupportedOptionError(
            "maxSnapshotsPerTrigger / maxFilesPerTrigger / maxRowsPerTrigger need pyspark 4.2 "
            "or later (admission control for Python data sources); remove them or upgrade"
        )
    return options


class MiniPaimonStreamReader(ShippedToWorkers, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streams a table's snapshots; offsets are :class:`StreamOffset` dicts stamped with the
    table's identity (see :mod:`minipaimon_spark.stream.stream_offsets`): an offset of another
    table, from a checkpoint reused, stops the query with an InvalidArgumentError."""

    def __init__(self, options: StreamReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._initial: dict[str, Any] | None = None
        self._last_end: dict[str, Any] | None = None
        self._up_to: int | None = None
        self._recorded: int | None = None
        self._table_cache: mp.Table | None = None
        self._scanner_cache: StreamScanner | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_table_cache"] = state["_scanner_cache"] = None  # tasks open the table
        return state

    # -- driver side -----------------------------------------------------------------------

    def _table(self) -> mp.Table:
        if self._table_cache is None:
            self._table_cache = mp.open_table(
                self.options.path, options=connection_options(self.options.scanner_options))
        return self._table_cache

    def _scanner(self) -> StreamScanner:
        """One scanner for the reader's life: it caches the plan of a full first snapshot."""
        if self._scanner_cache is None:
            self._scanner_cache = StreamScanner(self._table(), self.options.scanner_options)
        return self._scanner_cache

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's name)
        """Where a new query starts (the same value on every call of this reader).

        ``latest-full`` and ``latest`` give the symbolic start ``{"initial": mode}``: Spark
        runs (and replays, after a restart) batch 0 from whatever ``initialOffset()`` says
        then, so a start that depends on the time of the call would make a replayed batch 0
        read other rows. The snapshot is resolved by the first ``latestOffset`` instead, and
        batch 0 ends within it, so its end offset (in the checkpoint) fixes batch 0's rows.

        Raises:
            SnapshotExpiredError: the start (``scan.snapshot-id``, or the consumer's next
                snapshot) has been expired; the message names the options to change.
            SnapshotNotFoundError, InvalidArgumentError: a bad startup option.
        """
        if self._initial is None:
            with expired_hint(self.options.path):
                self._initial = self._compute_initial()
        return self._initial

    def _identity(self) -> TableIdentity:
        """The identity of the table at the path now (a drop and re-create changes it)."""
        return TableIdentity.of(self._table())

    def _compute_initial(self) -> dict[str, Any]:
        scanner = self._scanner()
        table = self._table()
        consumer_id = self._consumer_id()
        consumers = ConsumerManager(table.io, table.layout)
        latest = table.snapshot_manager.latest_id() or 0
        if consumer_id is not None:
            stored = consumers.recheck(consumer_id, table.snapshot_manager)  # an unchecked pin: checked now
            if stored is not None:  # resume where the consumer is
                if stored.nextSnapshot <= latest:
                    table.snapshot_manager.get(stored.nextSnapshot)  # SnapshotExpiredError if gone
                if stored.fullScanPending:  # a first batch pinned, never committed
                    return self._identity().stamp(StreamOffset(stored.nextSnapshot, full=True).to_dict())
                return self._identity().stamp(StreamOffset(min(stored.nextSnapshot - 1, latest)).to_dict())
        if scanner.mode in SYMBOLIC_MODES:
            return {INITIAL: scanner.mode}
        # The consumer is registered when the first batch is planned (latestOffset), not
        # here: Spark may ask for the initial offset of a query that never runs a batch.
        return self._identity().stamp(scanner.initial_offset().to_dict())

    def _consumer_id(self) -> str | None:
        if self.options.consumer_id is not None:
            return self.options.consumer_id
        value = self._table().options().get(CONSUMER_ID)
        return value or None

    def _resolve(self, start: Mapping[str, Any], up_to: int | None) -> tuple[StreamOffset, int | None]:
        """The core offset for Spark's ``start``, and the snapshot the batch may not pass.

        A symbolic start becomes the latest snapshot now (full scan or not), and the batch
        stays within it.
        """
        if INITIAL not in start:
            return StreamOffset.from_dict(start), up_to
        latest = self._table().snapshot_manager.latest_id() or 0
        if up_to is not None:
            latest = min(latest, up_to)
        return StreamOffset(latest, full=start[INITIAL] == "latest-full" and latest > 0), latest

    def latestOffset(  # noqa: N802 (Spark's name)
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        """The end of the next batch.

        pyspark 4.2+ passes ``start`` and ``limit``; older versions pass nothing and get
        everything available (no limit, so the start does not matter).
        """
        scanner = self._scanner()
        self._check_schema(mp.open_table(self.options.path,
                                         options=connection_options(self.options.scanner_options)))
        identity = self._identity()
        committed = start if start is not None else self._last_end
        identity.check(committed)
        if committed is not None and INITIAL not in committed:
            self._record(StreamOffset.from_dict(committed))
        with expired_hint(self.options.path):
            if start is None:
                begin, cap = self._pinned(self._last_end or self.initialOffset(), None)
                end = scanner.latest_offset(begin, up_to=cap)
            else:
                begin, cap = self._pinned(start, self._up_to)
                end = scanner.latest_offset(begin, up_to=cap, **self._limits(limit))
        self._last_end = identity.stamp(end.to_dict())
        return self._last_end

    def _pinned(self, start: Mapping[str, Any], up_to: int | None) -> tuple[StreamOffset, int | None]:
        """:meth:`_resolve`, and with a consumer the batch's first snapshot pinned before
        anything plans it (ConsumerManager.pin: the consumer file names it, then no
        expiration may have marked it). A symbolic start whose snapshot an expiration took
        moves on to the new latest snapshot; a fixed one raises SnapshotExpiredError."""
        for _ in range(_PIN_ATTEMPTS):
            begin, cap = self._resolve(start, up_to)
            consumer_id = self._consumer_id()
            if consumer_id is None or self._recorded == begin.next_snapshot or begin.next_snapshot < 1:
                return begin, cap
            table = self._table()
            sm = table.snapshot_manager
            if ConsumerManager(table.io, table.layout).pin(consumer_id, begin.next_snapshot, begin.full, sm):
                self._recorded = begin.next_snapshot
                return begin, cap
            if INITIAL not in start:
                sm.get(begin.next_snapshot)  # SnapshotExpiredError naming it, once it is gone
                raise SnapshotExpiredError(
                    f"snapshot {begin.next_snapshot} of {self.options.path}, where this stream "
                    "continues, is being expired; raise 'snapshot.num-retained.min' / "
                    "'snapshot.time-retained', or keep it with a tag")
        raise SnapshotExpiredError(
            f"the latest snapshot of {self.options.path} was expired {_PIN_ATTEMPTS} times before "
            "this stream could pin it; raise 'snapshot.num-retained.min' or retry")

    def _limits(self, limit: ReadLimit | None) -> dict[str, int | None]:
        """The core's limits for Spark's ``limit`` (options fill in what it does not say)."""
        o = self.options
        if isinstance(limit, ReadAllAvailable):
            if isinstance(self.getDefaultReadLimit(), ReadAllAvailable):
                return {"max_snapshots": o.max_snapshots}  # Spark has no snapshot limit
            return {}  # the engine overrides the options' file/row limits
        limits: dict[str, int | None] = {"max_snapshots": o.max_snapshots,
                                         "max_files": o.max_files, "max_rows": o.max_rows}
        if isinstance(limit, ReadMaxFiles):
            limits["max_files"] = limit.max_files
        elif isinstance(limit, ReadMaxRows):
            limits["max_rows"] = limit.max_rows
        return limits

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark's name)
        """``maxFilesPerTrigger`` / ``maxRowsPerTrigger`` as Spark's read limit."""
        if self.options.max_files is not None:
            return ReadMaxFiles(self.options.max_files)
        if self.options.max_rows is not None:
            return ReadMaxRows(self.options.max_rows)
        return ReadAllAvailable()

    def _check_schema(self, table: mp.Table) -> None:
        """A stream keeps the schema it started with. New columns are left out; a column
        of the stream that was renamed, dropped or retyped since stops it with a typed
        error (restart the query: it continues from its checkpoint with the new schema)."""
        check_stream_schema(self.schema, table, self.options.path)

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802 (Spark's name)
        """The latest snapshot, for the query's progress report."""
        latest = self._table().snapshot_manager.latest_id()
        return None if latest is None else self._identity().stamp(StreamOffset(latest).to_dict())

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark's name)
        """Trigger.AvailableNow: stop at the snapshot that is the latest now."""
        self._up_to = self._table().snapshot_manager.latest_id() or 0

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """The splits between two offsets: the same ones whenever Spark asks (replays).

        Raises SnapshotExpiredError (naming the options to change) if a snapshot of the
        range has been expired, InvalidArgumentError for offsets of another table.
        """
        identity = self._identity()
        identity.check(start)
        identity.check(end)
        stop = StreamOffset.from_dict(end)
        if INITIAL not in start:
            begin = StreamOffset.from_dict(start)
        elif start[INITIAL] == "latest-full" and stop.snapshot > 0:
            begin = StreamOffset(stop.snapshot, full=True)  # batch 0: the full scan it ends in
        else:
            begin = stop  # batch 0 of "latest": nothing
        if begin == stop:
            return []
        with expired_hint(self.options.path):
            splits = self._scanner().plan(begin, stop)
        return [StreamPartition(split) for split in splits]

    def commit(self, end: dict[str, Any]) -> None:
        """Spark processed everything up to ``end``: record the consumer's progress."""
        if INITIAL not in end:
            self._identity().check(end)
            self._record(StreamOffset.from_dict(end))

    def _record(self, committed: StreamOffset) -> None:
        """The batch ending at ``committed`` is committed by the query: the consumer's next
        snapshot is the first one it has not delivered (written only when it moves)."""
        consumer_id = self._consumer_id()
        if consumer_id is None or committed.next_snapshot < 1:
            return
        if self._recorded == committed.next_snapshot:
            return
        table = self._table()
        ConsumerManager(table.io, table.layout).write(consumer_id, committed.next_snapshot)
        self._recorded = committed.next_snapshot

    def stop(self) -> None:
        self._table_cache = self._scanner_cache = None

    # -- tasks ------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Arrow batches of one stream split, cast to exactly the schema Spark expects."""
        if not isinstance(partition, StreamPartition):
            return  # a placeholder partition of an empty batch
        table = mp.open_table(self.options.path,
                              options=connection_options(self.options.scanner_options))
        check_stream_schema(self.schema, table, self.options.path)
        scanner = StreamScanner(table, self.options.scanner_options)
        conform = BatchConformer(to_arrow_schema(self.schema))
        with expired_hint(self.options.path):
            for batch in scanner.read(partition.split):
                if batch.num_rows:
                    yield conform(batch)
