"""Table schemas: building a new table's definition, and reading / writing ``schema-<id>``.

The file format is Paimon's (:mod:`minipaimon_core.format.table_schema`). A schema never
changes in place: evolution writes ``schema-<id+1>``. Each data file records the schema id
it was written with, and readers map its columns by field id.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

import msgspec
import pyarrow as pa

from ..errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from ..format import data_types, legacy, options
from ..format import table_schema as schema_codec
from ..format.kinds import ROW_KIND_COLUMN, SYSTEM_COLUMNS
from ..format.layout import TableLayout, keys_of
from ..format.table_schema import DataField, TableSchema
from ..io.fileio import FileIO
from .table_options import check as check_options


def build_schema(
    schema: pa.Schema,
    primary_key: list[str] | None,
    partition_by: list[str] | None,
    table_options: dict[str, str] | None,
    first_id: int = 0,
) -> TableSchema:
    """Validate a user's table definition and build schema 0.

    Raises:
        SchemaMismatchError: duplicate/reserved column names, unsupported types.
        InvalidArgumentError: keys naming missing columns, partition keys outside the
            primary key, a nested key type.
        UnsupportedOptionError: unknown options, bad values, options that do not fit the
            table (see :mod:`minipaimon_core.schema.table_options`).
    """
    pk = list(primary_key or [])
    parts = list(partition_by or [])
    opts = options.validate(table_options or {})
    options.check_settable(opts)
    names = schema.names
    if len(set(names)) != len(names):
        raise SchemaMismatchError(f"duplicate column names in {names}")
    for name in names:
        if name in SYSTEM_COLUMNS or name == ROW_KIND_COLUMN:
            raise SchemaMismatchError(f"column name {name!r} is reserved")
    for kind, cols in (("primary key", pk), ("partition key", parts)):
        for c in cols:
            if c not in names:
                raise InvalidArgumentError(f"{kind} column {c!r} is not in the schema {names}")
            if pa.types.is_nested(schema.field(c).type):
                raise InvalidArgumentError(f"{kind} column {c!r} cannot have nested type")
    # unset: -1 (Paimon's default since 0.8: dynamic buckets for a primary-key table),
    # written explicitly, as Paimon's default depends on its version
    opts.setdefault("bucket", "-1")
    check_options(opts, schema, pk, parts)
    fields = build_fields(schema, set(pk), first_id)
    return TableSchema(
        version=schema_codec.VERSION,
        id=0,
        fields=fields,
        highestFieldId=max([first_id - 1, *(f.id for f in fields), *(i for f in fields for i in _ids(f.type))]),
        partitionKeys=parts,
        primaryKeys=pk,
        options=opts,
        timeMillis=int(time.time() * 1000),
        minipaimonTableId=str(uuid.uuid4()),
    )


def build_fields(schema: pa.Schema, required: set[str], first_id: int = 0) -> list[DataField]:
    """Paimon fields of ``schema``: ids from ``first_id`` (a column's id, then the ids of
    its nested ROW fields); columns in ``required`` (the primary key) are NOT NULL."""
    counter = iter(range(first_id, 2**31))
    fields = []
    for f in schema:
        field_id = next(counter)
        type_json = data_types.from_arrow(f.type, f.nullable and f.name not in required,
                                          lambda: next(counter))
        fields.append(DataField(field_id, f.name, type_json))
    return fields


def _ids(type_json: object) -> Iterator[int]:
    """Ids of the nested ROW fields in a type."""
    if isinstance(type_json, dict):
        for f in type_json.get("fields", []):
            yield f["id"]
            yield from _ids(f["type"])
        for key in ("element", "key", "value"):
            if key in type_json:
                yield from _ids(type_json[key])


def other_format(names: list[str]) -> str | None:
    """What a directory whose entries are ``names`` holds when it is no Paimon table but
    another format's (Delta Lake, plain Parquet files), said with how to read it; else None."""
    if "_delta_log" in names:
        return ("it is a Delta Lake table (it has _delta_log/), not an Apache Paimon table: read "
                "it with the deltalake package (DeltaTable(path).to_pyarrow_table()) or Spark's "
                "delta format")
    if any(n.endswith(".parquet") for n in names):
        return ("it holds plain Parquet files, not a table: read them with "
                "pyarrow.dataset.dataset(path), or create_table(...) and write their rows into it")
    if any("=" in n for n in names):
        return ("it holds partition directories (like "
                f"{next(n for n in names if '=' in n)!r}) but no table metadata: a plain "
                "(Hive-partitioned) dataset, read with pyarrow.dataset.dataset(path, "
                "partitioning='hive'), or a table dropped with purge=False")
    return None


class SchemaManager:
    """Reads and writes ``schema/schema-<id>`` files."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def schema_ids(self) -> list[int]:
        """Ids of the schema files ([] where there is no table, or a file)."""
        names = self._io.list_names(self._layout.schema_dir)
        return sorted(int(k) for k in keys_of("schema", names))

    def latest(self) -> TableSchema:
        """The current schema. Raises TableNotFoundError if there is none."""
        ids = self.schema_ids()
        if not ids:
            raise self._not_found()
        return self.get(ids[-1])

    def get(self, schema_id: int) -> TableSchema:
        """Schema ``schema_id``. Raises CorruptMetadataError if it is missing or damaged."""
        path, data = self.file_bytes(schema_id)
        if legacy.is_json(data):
            return legacy.decode_schema(data, path)
        return schema_codec.decode(data, path)

    def file_bytes(self, schema_id: int) -> tuple[str, bytes]:
        """(path, bytes) of the file of schema ``schema_id``. On a branch, an id below the
        branch's first schema is the main line's (shared history: Paimon 0.9 copies only
        the schema of a branch's first snapshot, whose files may name older ones). Raises
        CorruptMetadataError if there is none."""
        path = self._layout.schema_path(schema_id)
        try:
            return path, self._io.read_bytes(path)
        except FileNotFoundError:
            pass
        if not self._layout.is_main:
            ids = self.schema_ids()
            if ids and schema_id < ids[0]:
                main = self._layout.on_branch("main")
                with contextlib.suppress(FileNotFoundError):
                    return main.schema_path(schema_id), self._io.read_bytes(main.schema_path(schema_id))
        raise CorruptMetadataError(f"schema file {path} is missing")

    def table_id(self) -> str:
        """The identity of the table at this path, read now: the ``minipaimonTableId`` of its
        first schema, or for a table another writer created (which has none) the creation
        time of that schema, as Paimon's ``Table.uuid()`` takes it. A table dropped and
        created again at the same path is another table.

        On a branch: the table's identity and the branch's name (a stream's offsets on one
        branch mean nothing on another).

        Raises TableNotFoundError if there is no table.
        """
        if not self._layout.is_main:
            main = SchemaManager(self._io, self._layout.on_branch("main")).table_id()
            return f"{main}@branch:{self._layout.branch}"
        ids = self.schema_ids()
        if not ids:
            raise self._not_found()
        first = self.get(ids[0])
        return first.minipaimonTableId or f"created-{first.timeMillis}"

    def _not_found(self) -> TableNotFoundError:
        """The error for a path without a schema file; it says what the directory holds
        instead when that is another format's data (one listing of the directory)."""
        layout = self._layout
        other = other_format(self._io.list_names(layout.root)) if layout.is_main else None
        return TableNotFoundError(f"no minipaimon table at {layout.where} (no schema file)"
                                  + (f": {other}" if other else ""))

    def commit(self, schema: TableSchema) -> bool:
        """Create the file of ``schema`` unless one with its id exists (returns False)."""
        return self._io.write_if_absent(self._layout.schema_path(schema.id), schema_codec.encode(schema))

    def redefine(self, schema: TableSchema) -> TableSchema:
        """Commit ``schema`` (a new definition, as :func:`build_schema` makes it) as the next
        schema of a table that has no snapshot yet, and return it. Its field ids follow every
        id used so far, so files an uncommitted writer left behind never map onto it.

        REQUIRES: the table has no snapshot (the caller checks; see minipaimon_spark.writer).
        Raises TableAlreadyExistsError if another process changed the schema meanwhile.
        """
        current = self.latest()
        fields = build_fields(schema.arrow_schema(), set(schema.primaryKeys), current.highestFieldId + 1)
        highest = max([current.highestFieldId, *(f.id for f in fields), *(i for f in fields for i in _ids(f.type))])
        new = msgspec.structs.replace(schema, id=current.id + 1, highestFieldId=highest, fields=fields)
        if not self.commit(new):
            raise TableAlreadyExistsError(
                f"the table at {self._layout.where} was redefined concurrently; retry the write")
        return new

    def create(self, schema: TableSchema) -> None:
        """Write schema 0 of a new table. Raises TableAlreadyExistsError if a table is
        there, or the metadata of one dropped half-way (never adopted).

        A table's schema file is the last thing a drop deletes (catalog.drop_table), so
        metadata without a schema is a drop that failed half-way; with one, it is a table.
        """
        if self.schema_ids():
            raise self._exists()
        leftovers = self.leftovers()
        if leftovers:
            raise TableAlreadyExistsError(
                f"{self._layout.where} holds the metadata of a table ({', '.join(leftovers)}) but no "
                "schema: a drop of it failed half-way. Finish the drop (catalog.drop_table "
                "again) or pick another path")
        if not self.commit(schema):
            raise self._exists()

    def _exists(self) -> TableAlreadyExistsError:
        return TableAlreadyExistsError(
            f"a table already exists at {self._layout.where}: open it (open_table), or pick another path")

    def leftovers(self) -> list[str]:
        """The table's metadata directories other than ``schema/`` that hold files
        (snapshots, manifests, index files, tags, consumers)."""
        layout = self._layout
        dirs = (layout.snapshot_dir, layout.manifest_dir, layout.index_dir, layout.tag_dir,
                layout.consumer_dir)
        return [d.rsplit("/", 1)[-1] for d in dirs if self._io.list_names(d)]


class SchemaCache:
    """Schemas by id (immutable, so cached). Thread-safe enough: a race reads a file twice."""

    def __init__(self, manager: SchemaManager) -> None:
        self.manager = manager
        self._schemas: dict[int, TableSchema] = {}

    def ids(self) -> list[int]:
        """Ids of every schema of the table, ascending (lists the schema directory)."""
        return self.manager.schema_ids()

    def holding(self, schema: TableSchema) -> SchemaCache:
        """This cache, ``schema`` in it (a caller that has read it already)."""
        self._schemas[schema.id] = schema
        return self

    def get(self, schema_id: int) -> TableSchema:
        if schema_id not in self._schemas:
            self._schemas[schema_id] = self.manager.get(schema_id)
        return self._schemas[schema_id]
