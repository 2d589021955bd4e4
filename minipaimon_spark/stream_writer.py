"""Structured Streaming sink: ``df.writeStream.format("minipaimon").start(path)``, exactly once.

Flow of one micro-batch (each step in its own process, measured on 4.0.5 and 4.3.0):

1. ``streamWriter()`` (driver side): opens the table, or creates it from the DataFrame's
   schema on the first write (as the batch writer does); checks the DataFrame fits.
2. ``write(batches)`` (each task): a core writer writes files; the task returns the core's
   commit messages, pickled (also for empty input). A failing task deletes its files.
3. ``commit(messages, batchId)`` (driver side, a new writer object per batch): one core
   commit with ``commit_identifier = batchId`` by the query's commit user; then the
   table's automatic compaction (changelog producers, merge engines) and expiration, as
   after a batch write.
4. ``abort(messages, batchId)``: deletes the tasks' files unless the batch is committed.

Exactly once. Spark writes ``offsets/N`` before running batch N and ``commits/N`` after the
sink's commit returned; a crash in between makes the restarted query run batch N again,
with the same batch id and the same source offsets. The commit user is stable across
restarts of one query — ``stream-`` + sha1 of the checkpoint location's real path and of the
query id Spark keeps in ``<checkpoint>/metadata`` — so the core knows whether batch N is
committed (it dedupes on (commit user, identifier <= the user's latest identifier)): a
replayed batch deletes the files it wrote again and commits nothing. The query id makes a
new query in a reused (emptied) checkpoint directory a new commit user: its batch ids start
at 0 again and must not be mistaken for batches already committed.

Output modes: append (append tables; upserts and ``_row_kind`` deletes for primary-key
tables) and complete (each batch replaces the whole table: one OVERWRITE snapshot).

pyspark 4.1+ has ``DataSourceStreamArrowWriter`` (Arrow batches to ``write``). On 4.0 the
write worker hands Arrow batches to any writer that is a ``DataSourceArrowWriter``, so the
4.0 writer derives from both stream and Arrow writer base classes; ``write`` also accepts
Rows (converted to Arrow in chunks) in case a Spark version hands Rows over.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.maintenance.partition_expire import ExpireClock
from minipaimon_core.metadata.context import wall_clock_ms
from minipaimon_core.metadata.sequence import SequenceStart
from minipaimon_spark.options import WriteOptions, normalized
from minipaimon_spark.types import refuse_variant, to_arrow_schema
from minipaimon_spark.worker_guard import ShippedToWorkers
from minipaimon_spark.writer import (
    MiniPaimonCommitMessage,
    core_messages,
    prepare_table,
    sequence_start,
    write_task,
)

try:  # pyspark 4.1+
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pyspark 4.0: Arrow batches reach any DataSourceArrowWriter
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter

    class _StreamWriterBase(  # type: ignore[no-redef,misc]
        DataSourceStreamWriter, DataSourceArrowWriter
    ):
        """Stream writer that pyspark 4.0's write worker feeds with Arrow batches."""

CHECKPOINT_LOCATION = "checkpointlocation"
_ROWS_PER_CHUNK = 10_000

log = logging.getLogger(__name__)


def make_stream_writer(raw_options: Mapping[str, Any], schema: StructType,
                       overwrite: bool) -> MiniPaimonStreamWriter:
    """The writer of one micro-batch; creates the table if it does not exist yet.

    Raises:
        InvalidArgumentError: no ``checkpointLocation``, no ``path``, or options that
            contradict the existing table.
        SchemaMismatchError: the stream's rows do not fit the existing table.
        UnsupportedOptionError: an unknown table option (first write).
    """
    options = WriteOptions.parse(raw_options)
    user = commit_user(raw_options)
    refuse_variant(schema)
    table = prepare_table(options, to_arrow_schema(schema))
    return MiniPaimonStreamWriter(options.path, user, overwrite, schema, options.connection,
                                  sequence_start(table))


def commit_user(raw_options: Mapping[str, Any]) -> str:
    """The commit user of a streaming query: the same for every restart from its checkpoint.

    Raises InvalidArgumentError if the query has no ``checkpointLocation`` option.
    """
    location = normalized(raw_options).get(CHECKPOINT_LOCATION, "").strip()
    if not location:
        raise InvalidArgumentError(
            "a minipaimon streaming sink needs the option 'checkpointLocation' "
            "(df.writeStream.option('checkpointLocation', dir)): exactly-once commits are "
            "keyed by it"
        )
    local = _local_path(location)
    key = os.path.realpath(local) if local is not None else location
    query_id = _query_id(local) if local is not None else None
    digest = hashlib.sha1(f"{key}\n{query_id or ''}".encode()).hexdigest()
    return f"stream-{digest}"


def _local_path(location: str) -> str | None:
    """The local path of a checkpoint location (None for a remote file system)."""
    if location.startswith("file://"):
        return location[len("file://"):]
    if location.startswith("file:"):
        return location[len("file:"):]
    if "://" in location:
        return None
    return location


def _query_id(checkpoint: str) -> str | None:
    """The query id Spark stores in ``<checkpoint>/metadata`` when the query is created."""
    try:
        with open(os.path.join(checkpoint, "metadata"), encoding="utf-8") as f:
            value = json.loads(f.readline()).get("id")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


class MiniPaimonStreamWriter(ShippedToWorkers, _StreamWriterBase):
    """Writes a micro-batch in tasks; commits it once, idempotently, on the driver."""

    def __init__(self, path: str, commit_user: str, overwrite: bool, schema: StructType,
                 connection: dict[str, str] | None = None, sequence: SequenceStart | None = None) -> None:
        self.path = path
        self.sequence = sequence
        self.connection = connection or {}  # s3.* / azure.* options: reach the executors pickled
        self.commit_user = commit_user
        self.overwrite = overwrite
        self.schema = schema

    def write(self, iterator: Iterator[Any]) -> MiniPaimonCommitMessage:
        """Write this task's rows; deletes its files if anything fails."""
        return write_task(self.path, self.commit_user, _arrow_batches(iterator, self.schema),
                          self.connection, self.sequence, self.overwrite)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Commit batch ``batchId`` once; a replay of a committed batch only drops its files."""
        table = mp.open_table(self.path, options=self.connection)
        committer = table.new_commit(self.commit_user)
        core = core_messages(messages)
        if committer.is_committed(batchId):
            log.info("minipaimon: batch %d of %s is committed already (replay)", batchId, self.path)
            committer.abort(core)
            return
        try:
            committed = committer.commit(core, batchId, overwrite=self.overwrite)
        except BaseException:
            self._in_doubt = batchId if committer.may_have_landed() else None  # abort keeps files
            raise
        if committed is not None:  # compaction + expiration; never raises (the commit stands)
            mp.open_table(self.path, options=self.connection).after_commit(core, clock=self._partition_clock())

    def _partition_clock(self) -> ExpireClock:
        """The query's partition-expiration clock, as a Paimon streaming committer's: it
        starts at the query's first commit and lives as long as this writer."""
        if getattr(self, "_clock", None) is None:
            self._clock = ExpireClock(wall_clock_ms())
        return self._clock

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Delete the tasks' files, unless the batch is committed (then they may be the table's)."""
        if getattr(self, "_in_doubt", None) == batchId:  # its commit's outcome is not known
            return
        table = mp.open_table(self.path, options=self.connection)
        committer = table.new_commit(self.commit_user)
        if committer.is_committed(batchId):
            return
        committer.abort(core_messages(messages))


def _arrow_batches(items: Iterable[Any], schema: StructType) -> Iterator[pa.RecordBatch]:
    """Arrow batches as they come; Rows (a row-based Spark write path) in chunks."""
    it = iter(items)
    first = next(it, None)
    if first is None:
        return
    if isinstance(first, pa.RecordBatch):
        yield first
        yield from it
        return
    arrow = to_arrow_schema(schema)
    rows = itertools.chain([first], it)
    while chunk := list(itertools.islice(rows, _ROWS_PER_CHUNK)):
        yield pa.RecordBatch.from_pylist([r.asDict(recursive=True) for r in chunk], schema=arrow)
