"""Schema files (``schema/schema-<id>``): columns with stable ids, keys and options.

A schema never changes in place: evolution writes ``schema-<id+1>``. Each data file records
the schema id it was written with, and readers map its columns by field id.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pyarrow as pa

from . import codec, datatypes, options
from .errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from .fileio import FileIO
from .kinds import ROW_KIND_COLUMN, SYSTEM_COLUMNS
from .layout import TableLayout, keys_of
from .table_options import check as check_options
from .table_options import names_in


class DataField(msgspec.Struct, frozen=True):
    id: int
    name: str
    type: Any  # type notation, see datatypes; " NOT NULL" marks a required column


class TableSchema(msgspec.Struct, frozen=True):
    """One version of a table's schema."""

    version: int
    id: int
    fields: list[DataField]
    highestFieldId: int
    partitionKeys: list[str]
    primaryKeys: list[str]
    options: dict[str, str]
    timeMillis: int
    comment: str | None = None

    def arrow_schema(self) -> pa.Schema:
        """The schema users read and write (no system columns)."""
        return pa.schema(
            pa.field(f.name, datatypes.to_arrow(f.type), datatypes.nullable_of(f.type))
            for f in self.fields
        )

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field_by_name(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaMismatchError(f"no column {name!r} in the table (columns: {self.field_names})")

    @property
    def bucket_keys(self) -> list[str]:
        """Columns hashed to pick a bucket: ``bucket-key``, else the primary key minus the
        partition keys (the whole key if that leaves nothing)."""
        if bk := names_in(self.options.get("bucket-key")):
            return bk
        trimmed = [k for k in self.primaryKeys if k not in self.partitionKeys]
        return trimmed or list(self.primaryKeys)

    @property
    def num_buckets(self) -> int:
        buckets: int = options.Options(self.options)["bucket"]
        return buckets


def build_schema(
    schema: pa.Schema,
    primary_key: list[str] | None,
    partition_by: list[str] | None,
    table_options: dict[str, str] | None,
) -> TableSchema:
    """Validate a user's table definition and build schema 0.

    Raises:
        SchemaMismatchError: duplicate/reserved column names, unsupported types.
        InvalidArgumentError: keys naming missing columns, partition keys outside the
            primary key, a nested key type.
        UnsupportedOptionError: unknown options, bad values, options that do not fit the
            table (see :mod:`minipaimon_core.table_options`).
    """
    pk = list(primary_key or [])
    parts = list(partition_by or [])
    opts = options.validate(table_options or {})
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
            if datatypes.is_nested(schema.field(c).type):
                raise InvalidArgumentError(f"{kind} column {c!r} cannot have nested type")
    if pk and not set(parts) <= set(pk):
        raise InvalidArgumentError(
            f"partition keys {parts} must be part of the primary key {pk} of a primary-key table"
        )
    if pk and int(opts.get("bucket", "-1")) == -1:
        opts["bucket"] = "1"
    check_options(opts, schema, pk, parts)
    fields = []
    for i, f in enumerate(schema):
        nullable = f.nullable and f.name not in pk
        fields.append(DataField(i, f.name, datatypes.from_arrow(f.type, nullable)))
    return TableSchema(
        version=codec.FORMAT_VERSION,
        id=0,
        fields=fields,
        highestFieldId=len(fields) - 1,
        partitionKeys=parts,
        primaryKeys=pk,
        options=opts,
        timeMillis=int(time.time() * 1000),
    )


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
            raise TableNotFoundError(f"no minipaimon table at {self._layout.root} (no schema file)")
        return self.get(ids[-1])

    def get(self, schema_id: int) -> TableSchema:
        path = self._layout.schema_path(schema_id)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(f"schema file {path} is missing") from None
        return codec.decode_json(data, TableSchema, path)

    def commit(self, schema: TableSchema) -> bool:
        """Create the file of ``schema`` unless one with its id exists (returns False)."""
        return self._io.write_if_absent(self._layout.schema_path(schema.id), codec.encode_json(schema))

    def redefine(self, schema: TableSchema) -> TableSchema:
        """Commit ``schema`` (a new definition, as :func:`build_schema` makes it) as the next
        schema of a table that has no snapshot yet, and return it. Its field ids follow every
        id used so far, so files an uncommitted writer left behind never map onto it.

        REQUIRES: the table has no snapshot (the caller checks; see minipaimon_spark.writer).
        Raises TableAlreadyExistsError if another process changed the schema meanwhile.
        """
        current = self.latest()
        shift = current.highestFieldId + 1
        new = msgspec.structs.replace(
            schema, id=current.id + 1, highestFieldId=schema.highestFieldId + shift,
            fields=[msgspec.structs.replace(f, id=f.id + shift) for f in schema.fields])
        if not self.commit(new):
            raise TableAlreadyExistsError(
                f"the table at {self._layout.root} was redefined concurrently; retry the write")
        return new

    def create(self, schema: TableSchema) -> None:
        """Write schema 0 of a new table. Raises TableAlreadyExistsError if a table is
        there, or the metadata of one dropped half-way (never adopted)."""
        leftovers = self.leftovers()
        if leftovers:
            raise TableAlreadyExistsError(
                f"{self._layout.root} holds the metadata of a table ({', '.join(leftovers)}) that "
                "was dropped half-way or is still being created; drop it again "
                "(catalog.drop_table) or pick another path")
        if self.schema_ids() or not self.commit(schema):
            raise TableAlreadyExistsError(f"a table already exists at {self._layout.root}")

    def leftovers(self) -> list[str]:
        """The table's metadata directories other than ``schema/`` that hold files
        (snapshots, manifests, index files, tags, consumers)."""
        layout = self._layout
        dirs = (layout.snapshot_dir, layout.manifest_dir, layout.index_dir, layout.tag_dir,
                layout.consumer_dir)
        return [d.rsplit("/", 1)[-1] for d in dirs if self._io.list_names(d)]
