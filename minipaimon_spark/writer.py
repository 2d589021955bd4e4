"""Batch writes: tasks write files, the driver commits them once.

Flow (measured on 4.0.5 and 4.3.0, each step in its own process):

1. ``writer()`` (driver side, once per job): opens the table, or creates it from the
   DataFrame schema on the first write; checks the DataFrame fits (typed error, nothing
   written); picks a fresh commit user for the job.
2. ``write(batches)`` (each task): a core writer writes files and returns the core's commit
   messages, pickled, in a :class:`MiniPaimonCommitMessage` (also for empty input). A task
   that fails deletes what it wrote.
3. ``commit(messages)`` (driver side): one core commit of all messages. Spark passes exactly
   one message per partition: the chosen attempt's (a retried task's first attempt never
   reaches the commit). Then compaction, if the table's triggers are reached.
4. ``abort(messages)``: after failed tasks (messages of finished tasks may be None: their
   files stay as orphans for orphan cleanup) and after a ``commit`` that raised. The commit
   may have landed before it raised, so abort deletes files only if the commit identifier is
   not committed.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError, SchemaMismatchError
from minipaimon_core.format.branch_names import MAIN_BRANCH
from minipaimon_core.format.kinds import ROW_KIND_COLUMN
from minipaimon_core.format.options import Options, validate
from minipaimon_core.metadata.sequence import SequenceStart, start_of
from minipaimon_core.schema.schema import SchemaManager, build_schema
from minipaimon_core.write.conform import conform
from minipaimon_spark.options import BRANCH, WriteOptions
from minipaimon_spark.types import refuse_variant, to_arrow_schema
from minipaimon_spark.worker_guard import ShippedToWorkers
from minipaimon_spark.zones import SparkTimes

# One job = one fresh commit user, so one identifier suffices.
COMMIT_IDENTIFIER = 1


@dataclass(frozen=True)
class MiniPaimonCommitMessage(WriterCommitMessage):
    """What one task attempt wrote: the pickled core commit messages."""

    payload: bytes
    partition_id: int = -1
    attempt: int = -1
    num_rows: int = 0

    def core_messages(self) -> list[mp.CommitMessage]:
        messages: list[mp.CommitMessage] = pickle.loads(self.payload)
        return messages


def make_writer(raw_options: Mapping[str, Any], schema: StructType,
                overwrite: bool) -> MiniPaimonWriter:
    """The writer of one job; creates the table if it does not exist yet.

    Raises:
        SchemaMismatchError: the DataFrame does not fit the existing table.
        InvalidArgumentError: options that contradict the existing table, or no path.
        UnsupportedOptionError: an unknown table option (first write).
    """
    options = WriteOptions.parse(raw_options)
    refuse_variant(schema)
    table = prepare_table(options, to_arrow_schema(schema))
    return MiniPaimonWriter(options.path, f"spark-{uuid.uuid4()}", overwrite,
                            options.dynamic_partition_overwrite, options.connection,
                            sequence_start(table))


def sequence_start(table: mp.Table) -> SequenceStart:
    """Where the sequence numbers of a job's tasks start (each task interleaves its own,
    see minipaimon_core.metadata.sequence): the table's next number now, on the driver."""
    return start_of(table.manifests, table.latest_snapshot())


def prepare_table(options: WriteOptions, arrow: pa.Schema) -> mp.Table:
    """The table a write goes to, checked against the data's schema before any task runs:
    created on the first write; with ``mergeSchema``, new columns are added first.

    Raises SchemaMismatchError, InvalidArgumentError, UnsupportedOptionError.
    """
    _refuse_keyless_changelog(options, arrow)
    try:
        table = mp.open_table(options.path, options=options.connection)
    except mp.TableNotFoundError as e:
        if isinstance(e, mp.BranchNotFoundError) or options.connection.get(BRANCH, MAIN_BRANCH) != MAIN_BRANCH:
            raise  # a branch is made from a table: create_branch first (never the table here)
        _refuse_names_differing_in_case([], arrow)
        table = _create(options, arrow)
    else:
        committed = table.snapshot_manager.latest_id() is not None  # else the write may redefine it
        _refuse_names_differing_in_case(table.schema().names if committed else [], arrow)
        if not committed:
            table = _redefine_if_contradicted(table, options, arrow)
        _check_definition(table, options, arrow)
        if options.merge_schema:
            table = _add_new_columns(table, arrow)
    _check_fits(table, arrow)
    return table


def _refuse_keyless_changelog(options: WriteOptions, arrow: pa.Schema) -> None:
    """A ``_row_kind`` column (a changelog: upserts and deletes) needs a primary-key table:
    on a first write the key must be said up front, before any file is written."""
    if ROW_KIND_COLUMN not in arrow.names or options.primary_key is not None:
        return
    try:
        keys = mp.open_table(options.path, options=options.connection).primary_keys()
    except mp.TableNotFoundError:
        keys = []
    if not keys:
        raise InvalidArgumentError(
            f"the data has a {ROW_KIND_COLUMN!r} column (a changelog, e.g. from a stream with "
            "read.changelog=true), which needs a primary-key table: give the sink "
            ".option('primary-key', 'id,...') (the source's keys) on the first write, or drop "
            "the column"
        )


def _redefine_if_contradicted(table: mp.Table, options: WriteOptions, arrow: pa.Schema) -> mp.Table:
    """A table with a schema but no snapshot (created by a first write that never committed,
    or by ``create_table``) is used as is when this write fits it; a write that contradicts
    it (other keys or options, columns that do not fit) redefines it: the write's
    definition (keys and table options it does not give are kept) is committed as the next
    schema, with fresh field ids (SchemaManager.redefine).
    """
    try:
        _check_definition(table, options, arrow)
        _check_fits(table, arrow)
        return table
    except (InvalidArgumentError, SchemaMismatchError):
        pass
    fields = [f for f in arrow if f.name != ROW_KIND_COLUMN]
    given = _resolve_field_options(options.table_options, [f.name for f in fields])
    new = build_schema(
        pa.schema(fields),
        options.primary_key if options.primary_key is not None else table.primary_keys(),
        options.partition_by if options.partition_by is not None else table.partition_keys(),
        given or table.options(),
    )
    SchemaManager(table.io, table.layout).redefine(new)
    return table.branch(table.current_branch)  # reopened: the schema just committed


def _create(options: WriteOptions, arrow: pa.Schema) -> mp.Table:
    """Create the table from the DataFrame's schema (without ``_row_kind``)."""
    fields = [f for f in arrow if f.name != ROW_KIND_COLUMN]
    table_options = _resolve_field_options(options.table_options, [f.name for f in fields])
    try:
        return mp.create_table(options.path, pa.schema(fields), primary_key=options.primary_key,
                               partition_by=options.partition_by,
                               options={**table_options, **{k: v for k, v in options.connection.items()
                                                            if k != BRANCH}})
    except mp.TableAlreadyExistsError:  # a concurrent first write won the race
        table = mp.open_table(options.path, options=options.connection)
        _check_definition(table, options, arrow)
        return table


def _resolve_field_options(options: Mapping[str, str], names: list[str]) -> dict[str, str]:
    """Spark lower-cases option keys: give ``fields.<f>.*`` keys back their column's case."""
    by_lower = {n.lower(): n for n in names}
    out: dict[str, str] = {}
    for key, value in options.items():
        parts = key.split(".")
        if len(parts) >= 3 and parts[0] == "fields" and parts[1] in by_lower:
            key = ".".join(["fields", by_lower[parts[1]], *parts[2:]])
        out[key] = value
    return out


def _check_definition(table: mp.Table, options: WriteOptions, arrow: pa.Schema) -> None:
    """Write options that would define the table must agree with the existing table."""
    where = f"the table at {options.path}"
    if options.primary_key is not None and options.primary_key != table.primary_keys():
        raise InvalidArgumentError(
            f"option 'primary-key' is {options.primary_key}, but {where} has primary key "
            f"{table.primary_keys()}; it is fixed when the first write creates the table"
        )
    if options.partition_by is not None and options.partition_by != table.partition_keys():
        raise InvalidArgumentError(
            f"option 'partition' is {options.partition_by}, but {where} is partitioned by "
            f"{table.partition_keys()}; it is fixed when the first write creates the table"
        )
    given = _resolve_field_options(options.table_options, arrow.names)
    validate(given)  # UnsupportedOptionError for unknown names, as on creation
    have = table.options()
    typed = Options(have)
    for key, value in given.items():
        if key.startswith("fields."):
            same = have.get(key) == value
        else:
            same = Options({key: value})[key] == typed[key]
        if not same:
            raise InvalidArgumentError(
                f"option {key!r} differs from {where}'s value; "
                "table options are fixed when the first write creates the table"
            )


def _add_new_columns(table: mp.Table, arrow: pa.Schema) -> mp.Table:
    """``mergeSchema``: add the DataFrame's columns the table lacks (nullable, at the end),
    once the data is known to fit the table they make (else nothing changes).

    Raises SchemaMismatchError."""
    have = table.schema()
    new = [f for f in arrow if f.name not in have.names and f.name != ROW_KIND_COLUMN]
    if not new:
        return table
    _check_fits(table, arrow, pa.schema([*have, *[f.with_nullable(True) for f in new]]))
    for field in new:
        table.add_column(field.name, field.type)
    return table.branch(table.current_branch)  # reopened: the schema just committed


def _refuse_names_differing_in_case(table_names: list[str], arrow: pa.Schema) -> None:
    """Spark resolves column names without case (``spark.sql.caseSensitive`` off, its
    default), so a table whose columns differ only in case cannot be read back by name
    (AMBIGUOUS_REFERENCE): refuse data with two such columns, or with a column named as a
    table column in another case (``mergeSchema`` would have added it beside).

    Raises SchemaMismatchError."""
    seen: dict[str, str] = {}
    for name in [n for n in arrow.names if n != ROW_KIND_COLUMN]:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise SchemaMismatchError(f"the data's columns {other!r} and {name!r} differ only in case; "
                                      "Spark resolves column names without case: rename one of them")
    by_lower = {n.lower(): n for n in table_names}
    for name in arrow.names:
        table_name = by_lower.get(name.lower())
        if table_name is not None and table_name != name:
            raise SchemaMismatchError(f"the data's column {name!r} is the table's column {table_name!r} "
                                      f"in another case: write it as {table_name!r} (Spark resolves "
                                      "column names without case, so the table cannot hold both)")


def _check_fits(table: mp.Table, arrow: pa.Schema, schema: pa.Schema | None = None) -> None:
    """Raise the core's SchemaMismatchError now, before any task writes a file, if data of
    ``arrow`` does not fit the table (or ``schema``, a schema it is about to take)."""
    keys = table.primary_keys()
    conform(pa.RecordBatch.from_pylist([], schema=arrow), schema or table.schema(), keys,
            allow_row_kind=bool(keys))


class MiniPaimonWriter(ShippedToWorkers, DataSourceArrowWriter):
    """Writes Arrow batches in tasks; commits (or aborts) once on the driver."""

    def __init__(self, path: str, commit_user: str, overwrite: bool,
                 dynamic_partition_overwrite: bool | None,
                 connection: dict[str, str] | None = None,
                 sequence: SequenceStart | None = None) -> None:
        self.path = path
        self.sequence = sequence
        self.connection = connection or {}  # s3.* / azure.* options: reach the executors pickled
        self.commit_user = commit_user
        self.overwrite = overwrite
        self.dynamic_partition_overwrite = dynamic_partition_overwrite
        self._may_have_landed = False  # set when commit raised after its snapshot create

    def write(self, iterator: Iterator[pa.RecordBatch]) -> MiniPaimonCommitMessage:
        """Write this task's batches; deletes its files if anything fails."""
        return write_task(self.path, self.commit_user, iterator, self.connection, self.sequence,
                          self.overwrite)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Commit every task's files in one snapshot (OVERWRITE for overwrite mode)."""
        table = mp.open_table(self.path, options=self.connection)
        core = core_messages(messages)
        # The job's user is new: no backward scan for an earlier commit of it is needed.
        committer = table.new_commit(self.commit_user, fresh_user=True)
        try:
            committed = committer.commit(
                core, COMMIT_IDENTIFIER, overwrite=self.overwrite,
                dynamic_partition_overwrite=self.dynamic_partition_overwrite,
            )
        except BaseException:
            self._may_have_landed = committer.may_have_landed()  # then abort keeps the files
            raise
        if committed is not None:  # compaction + expiration; never raises (the commit stands)
            mp.open_table(self.path, options=self.connection).after_commit(core, end_of_input=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete the tasks' files, unless the commit landed (then they are the table's)."""
        if self._may_have_landed:  # the commit's outcome is not known: never delete
            return
        table = mp.open_table(self.path, options=self.connection)
        committer = table.new_commit(self.commit_user)
        if committer.is_committed(COMMIT_IDENTIFIER):
            return
        committer.abort(core_messages(messages))


def write_task(path: str, commit_user: str, batches: Iterable[pa.RecordBatch],
               connection: dict[str, str] | None = None,
               sequence: SequenceStart | None = None, overwrite: bool = False) -> MiniPaimonCommitMessage:
    """One task's writing (batch or streaming): files for ``batches``, the commit message
    Spark hands the driver; the task's files are deleted if anything fails. ``connection``:
    the storage options (``s3.*``, ``azure.*``) of the write; ``sequence``: the job's start. Timestamps
    of the other kind than their column are converted as Spark casts them
    (:mod:`minipaimon_spark.zones`)."""
    ctx = TaskContext.get()
    start = sequence.for_task(ctx.partitionId() if ctx else 0) if sequence is not None else None
    table = mp.open_table(path, options=connection)
    # dynamic buckets: every task assigns from the job's start snapshot (``sequence``), so
    # they mostly agree; the commit reconciles where they do not (minipaimon_core.dynamic)
    writer = table.new_write(commit_user, sequence=start, overwrite=overwrite)
    rows = 0
    try:
        for batch in SparkTimes(table.schema()).all(batches):
            if batch.num_rows:
                writer.write(batch)
                rows += batch.num_rows
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    return MiniPaimonCommitMessage(
        payload=pickle.dumps(messages, protocol=pickle.HIGHEST_PROTOCOL),
        partition_id=ctx.partitionId() if ctx else -1,
        attempt=ctx.attemptNumber() if ctx else -1,
        num_rows=rows,
    )


def core_messages(messages: Iterable[WriterCommitMessage | None]) -> list[mp.CommitMessage]:
    out: list[mp.CommitMessage] = []
    for m in messages:
        if m is None:
            continue
        if not isinstance(m, MiniPaimonCommitMessage):
            raise InvalidArgumentError(f"unexpected commit message {type(m).__name__}")
        out.extend(m.core_messages())
    return out
