"""Schema files (``schema/schema-<id>``): Paimon's ``TableSchema`` JSON (version 3).

``version, id, fields [{id, name, type[, description]}], highestFieldId, partitionKeys,
primaryKeys, options, comment?, timeMillis``. Types are Paimon's type JSON
(:mod:`.data_types`); field ids are stable across evolution, nested ROW fields have ids of
their own. ``options`` are strings; minipaimon writes ``bucket`` explicitly (Paimon's default
differs between versions and table kinds). A file minipaimon writes ends with its checksum
member (:mod:`.json_file`). The first schema of a table minipaimon creates also holds
``minipaimonTableId`` (a random UUID; Paimon's readers ignore it): what a stream's offsets
name the table by (``SchemaManager.table_id``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa

from ..errors import SchemaMismatchError, UnsupportedFeatureError
from . import data_types, json_file

VERSION = 3


class DataField(msgspec.Struct, frozen=True, omit_defaults=True):
    id: int
    name: str
    type: Any  # Paimon type JSON: a string, or an object for nested types
    description: str | None = None

    @property
    def nullable(self) -> bool:
        return data_types.nullable(self.type)

    @property
    def row_type(self) -> str:
        """The type as a string (nested types by their kind, e.g. ``ARRAY``): how BinaryRow
        codecs see the column (stats of nested columns are always null)."""
        return self.type if isinstance(self.type, str) else str(self.type.get("type", ""))


#: arrow schemas by id of the TableSchema object they were built from (see arrow_schema)
_ARROW_SCHEMAS: dict[int, tuple[Any, pa.Schema]] = {}


class TableSchema(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """One version of a table's schema."""

    version: int
    id: int
    fields: list[DataField]
    highestFieldId: int
    partitionKeys: list[str]
    primaryKeys: list[str]
    options: dict[str, str]
    comment: str | None = None
    timeMillis: int
    # minipaimon's own member: the identity of the table (see the module docs)
    minipaimonTableId: str | None = None
    # Set by the reader of minipaimon's earlier format (never written): such a table is
    # read, not written (minipaimon_core.schema.features).
    legacyFormat: bool = False

    def arrow_schema(self) -> pa.Schema:
        """The schema users read and write (no system columns); fields carry their Paimon
        field ids (``PARQUET:field_id`` metadata), so data files record them. Built once per
        schema object (a read of many files asks for it per file)."""
        hit = _ARROW_SCHEMAS.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
        arrow = pa.schema(data_types.arrow_field(msgspec.to_builtins(f)) for f in self.fields)
        if len(_ARROW_SCHEMAS) >= 256:
            _ARROW_SCHEMAS.clear()
        _ARROW_SCHEMAS[id(self)] = (self, arrow)  # the entry keeps the schema (and its id) alive
        return arrow

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def field_types(self) -> list[str]:
        """Every field's type as BinaryRow codecs take it (:attr:`DataField.row_type`)."""
        return [f.row_type for f in self.fields]

    def field_by_name(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaMismatchError(f"no column {name!r} in the table (columns: {self.field_names})")

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """The primary key without the partition columns (Paimon's key of data files: the
        ``_KEY_`` columns, min/max key, the default bucket key); the whole key if that
        leaves nothing."""
        trimmed = [k for k in self.primaryKeys if k not in self.partitionKeys]
        return trimmed or list(self.primaryKeys)


def encode(schema: TableSchema) -> bytes:
    return json_file.encode(schema)


def decode(data: bytes, path: str) -> TableSchema:
    """Raises CorruptMetadataError (damaged, not a schema) or UnsupportedFeatureError (a
    type minipaimon does not read, named)."""
    schema = json_file.decode(data, TableSchema, path)
    if schema.version not in (1, 2, VERSION) and schema.version > VERSION:
        raise UnsupportedFeatureError(f"{path}: schema format version {schema.version} is newer than "
                                      f"the version {VERSION} minipaimon reads")
    return schema


__all__ = ["DataField", "TableSchema", "VERSION", "decode", "encode"]
