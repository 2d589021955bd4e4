"""Schema evolution: add, rename, drop and widen columns; alter options.

A change never rewrites data. It is a pure function from the current schema to the next
one (``apply_*``, tested without IO), committed as ``schema-<id+1>`` with create-if-absent:
if another process committed that id first, the change is re-applied to the new latest
schema and retried. Data files keep the schema id they were written with and are read by
field id (:func:`minipaimon_core.read.file_read.evolve`):

* an added column gets ``highestFieldId + 1`` (ids are never reused) and is always
  nullable, so older files read it as null;
* a renamed column keeps its id, so older files read under the new name;
* a dropped column's id disappears, so its values in older files are no longer read (a
  column added later under the same name is a new column);
* a widened column is cast on read: int8 -> int16 -> int32 -> int64, float -> double,
  decimal(p, s) -> decimal(p', s) with p' >= p.

Partition columns cannot be renamed, dropped or retyped (they name directories); primary
key and bucket-key columns cannot be dropped or retyped (they place and order rows).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import msgspec
import pyarrow as pa

from ..errors import CommitConflictError, ConflictReason, InvalidArgumentError, SchemaMismatchError
from ..format import data_types, options
from ..format.branch_names import FALLBACK_BRANCH, MAIN_BRANCH, is_branch_name
from ..format.kinds import ROW_KIND_COLUMN, SYSTEM_COLUMNS
from ..format.layout import TableLayout, keys_of
from ..io.fileio import FileIO
from . import table_options
from .features import check_migrated
from .schema import DataField, SchemaManager, TableSchema
from .table_options import names_in

MAX_ATTEMPTS = 50
IMMUTABLE_OPTIONS = ("bucket", "bucket-key", "merge-engine", "sequence.field", "ignore-delete",
                     "deletion-vectors.enabled", "partition.default-name")
_LIST_OPTIONS = ("sequence.field", "bucket-key")  # comma-separated column names

Change = Callable[[TableSchema], TableSchema | None]


def commit_change(io: FileIO, layout: TableLayout, change: Change) -> TableSchema:
    """Apply ``change`` to the latest schema and commit it as the next schema id.

    ``change`` returns None for "nothing to do". Returns the schema now current.

    Raises:
        whatever ``change`` raises (nothing is written then);
        UnsupportedOptionError: the changed schema's options no longer fit it
            (:func:`minipaimon_core.schema.table_options.check`);
        CommitConflictError: other processes kept committing schemas for MAX_ATTEMPTS tries.
    """
    manager = SchemaManager(io, layout)
    for _ in range(MAX_ATTEMPTS):
        current = manager.latest()
        check_migrated(current, layout.root)
        new = change(current)
        if new is None:
            return current
        table_options.check(new.options, new.arrow_schema(), new.primaryKeys, new.partitionKeys)
        new = msgspec.structs.replace(new, id=current.id + 1, timeMillis=int(time.time() * 1000))
        if manager.commit(new):
            return new
    raise CommitConflictError(
        f"gave up changing the schema of {layout.root}: schema-<id> was taken by other "
        f"processes {MAX_ATTEMPTS} times in a row", ConflictReason.RETRIES_EXHAUSTED
    )


# -- pure changes ------------------------------------------------------------------------------


def apply_add_column(schema: TableSchema, name: str, arrow_type: pa.DataType,
                     after: str | None = None) -> TableSchema:
    """Add nullable column ``name`` at the end, or right after column ``after``.

    Raises SchemaMismatchError (name taken or reserved, unsupported type, unknown ``after``).
    """
    _check_new_name(schema, name)
    ids = iter(range(schema.highestFieldId + 1, 2**31))
    fid = next(ids)
    notation = data_types.from_arrow(_arrow_type(arrow_type), True, lambda: next(ids))
    highest = next(ids) - 1
    fields = list(schema.fields)
    pos = len(fields) if after is None else _index(schema, after) + 1
    fields.insert(pos, DataField(fid, name, notation))
    return msgspec.structs.replace(schema, fields=fields, highestFieldId=highest)


def _no_ids() -> int:
    raise SchemaMismatchError("a type change cannot add nested fields")


def apply_rename_column(schema: TableSchema, old: str, new: str) -> TableSchema | None:
    """Rename column ``old`` to ``new``, keeping its field id (and key/option references).

    Raises:
        SchemaMismatchError: no column ``old``, or ``new`` is taken or reserved.
        InvalidArgumentError: ``old`` is a partition column.
    """
    i = _index(schema, old)
    if old == new:
        return None
    _check_new_name(schema, new)
    if old in schema.partitionKeys:
        raise InvalidArgumentError(f"cannot rename partition column {old!r}: it names directories")
    fields = list(schema.fields)
    fields[i] = msgspec.structs.replace(fields[i], name=new)
    opts: dict[str, str] = {}
    for key, value in schema.options.items():
        if key.startswith(f"fields.{old}."):
            key = f"fields.{new}." + key[len(f"fields.{old}."):]
        elif key in _LIST_OPTIONS:
            value = ",".join(new if c.strip() == old else c.strip() for c in value.split(","))
        opts[key] = value
    pk = [new if k == old else k for k in schema.primaryKeys]
    return msgspec.structs.replace(schema, fields=fields, primaryKeys=pk, options=opts)


def apply_drop_column(schema: TableSchema, name: str) -> TableSchema:
    """Drop column ``name`` (its per-field options go with it).

    Raises:
        SchemaMismatchError: no such column.
        InvalidArgumentError: a key, partition, bucket-key or sequence column, or the last one.
    """
    i = _index(schema, name)
    _check_not_key(schema, name, "drop")
    for key in _LIST_OPTIONS:
        if name in names_in(schema.options.get(key)):
            raise InvalidArgumentError(f"cannot drop column {name!r}: option {key!r} uses it")
    if len(schema.fields) == 1:
        raise InvalidArgumentError(f"cannot drop {name!r}: it is the only column of the table")
    fields = [f for j, f in enumerate(schema.fields) if j != i]
    opts = {k: v for k, v in schema.options.items() if not k.startswith(f"fields.{name}.")}
    return msgspec.structs.replace(schema, fields=fields, options=opts)


def apply_alter_column_type(schema: TableSchema, name: str, arrow_type: pa.DataType) -> TableSchema | None:
    """Widen column ``name`` to ``arrow_type`` (its nullability is kept).

    Raises:
        SchemaMismatchError: not a safe widening (or no such column).
        InvalidArgumentError: a key, partition or bucket-key column.
    """
    i = _index(schema, name)
    field = schema.fields[i]
    old = data_types.to_arrow(field.type)
    new = data_types.normalize(_arrow_type(arrow_type))
    if old.equals(new):
        return None
    _check_not_key(schema, name, "change the type of")
    if not is_safe_widening(old, new):
        raise SchemaMismatchError(
            f"cannot change column {name!r} from {old} to {new}: only widening is safe "
            "(int8 -> int16 -> int32 -> int64, an integer to float or double, float -> "
            "double, decimal precision up with the same scale); add a new column and copy "
            "the data instead"
        )
    fields = list(schema.fields)
    if pa.types.is_nested(new):
        raise SchemaMismatchError(f"cannot change the type of nested column {name!r}")
    retyped = data_types.from_arrow(new, data_types.nullable(field.type), _no_ids)
    fields[i] = msgspec.structs.replace(field, type=retyped)
    return msgspec.structs.replace(schema, fields=fields)


def apply_set_options(schema: TableSchema, updates: Mapping[str, str | None]) -> TableSchema | None:
    """Set options (a value of None removes the option).

    Raises:
        UnsupportedOptionError: unknown option, bad value, or one never set anew
            (``options.check_settable``).
        InvalidArgumentError: changing an option fixed at creation (IMMUTABLE_OPTIONS;
            setting one to its current effective value, default included, is no change).
    """
    current = dict(schema.options)
    for key, value in updates.items():
        options.spec_of(key)  # an unknown name is refused before the immutability rule
        options.check_settable({key: value})
        now = options.Options(current).get(key)
        after = options.Options({} if value is None else {key: value}).get(key)
        if key in IMMUTABLE_OPTIONS and now != after:
            raise InvalidArgumentError(
                f"option {key!r} cannot be changed after the table is created "
                f"(it decides where rows live or how they merge); create a new table instead"
            )
    opts = dict(current)
    for key, value in updates.items():
        if value is None:
            opts.pop(key, None)
        else:
            opts[key] = value
    opts = options.validate(opts)
    if opts == current:
        return None
    return msgspec.structs.replace(schema, options=opts)


def is_safe_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether ``old`` may become ``new``: every value exactly representable, or an integer
    to a float (Paimon's implicit cast, e.g. BIGINT to DOUBLE: as Java's ``(double)``, a
    value past the float's precision rounds to the nearest)."""
    if pa.types.is_signed_integer(old) and pa.types.is_signed_integer(new):
        return bool(new.bit_width >= old.bit_width)
    if pa.types.is_signed_integer(old) and pa.types.is_floating(new):
        return True
    if pa.types.is_floating(old) and pa.types.is_floating(new):
        return bool(new.bit_width >= old.bit_width)
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return bool(new.scale == old.scale and new.precision >= old.precision)
    return old.equals(new)


# -- committing ----------------------------------------------------------------------------------


def add_column(io: FileIO, layout: TableLayout, name: str, arrow_type: pa.DataType,
               after: str | None = None) -> TableSchema:
    return commit_change(io, layout, lambda s: apply_add_column(s, name, arrow_type, after))


def rename_column(io: FileIO, layout: TableLayout, old: str, new: str) -> TableSchema:
    return commit_change(io, layout, lambda s: apply_rename_column(s, old, new))


def drop_column(io: FileIO, layout: TableLayout, name: str) -> TableSchema:
    return commit_change(io, layout, lambda s: apply_drop_column(s, name))


def alter_column_type(io: FileIO, layout: TableLayout, name: str, arrow_type: pa.DataType) -> TableSchema:
    return commit_change(io, layout, lambda s: apply_alter_column_type(s, name, arrow_type))


def set_options(io: FileIO, layout: TableLayout, updates: Mapping[str, str | None]) -> TableSchema:
    fallback = updates.get(FALLBACK_BRANCH)
    if fallback is not None and (fallback == layout.branch or (fallback != MAIN_BRANCH and (
            not is_branch_name(fallback) or not keys_of("schema", io.list_names(layout.on_branch(fallback).schema_dir))))):
        raise InvalidArgumentError(  # as Paimon's SchemaValidation.validateFallbackBranch
            f"cannot set {FALLBACK_BRANCH!r} = {fallback!r}: no such branch (other than this one) "
            f"in {layout.root}")
    return commit_change(io, layout, lambda s: apply_set_options(s, updates))


# -- helpers ---------------------------------------------------------------------------------------


def _arrow_type(t: object) -> pa.DataType:
    if not isinstance(t, pa.DataType):
        raise SchemaMismatchError(f"expected a pyarrow DataType (e.g. pa.int64()), got {t!r}")
    return t


def _index(schema: TableSchema, name: str) -> int:
    for i, f in enumerate(schema.fields):
        if f.name == name:
            return i
    raise SchemaMismatchError(f"no column {name!r} in the table (columns: {schema.field_names})")


def _check_new_name(schema: TableSchema, name: str) -> None:
    if not isinstance(name, str) or not name:
        raise SchemaMismatchError(f"a column name must be a non-empty string, got {name!r}")
    if name in SYSTEM_COLUMNS or name == ROW_KIND_COLUMN:
        raise SchemaMismatchError(f"column name {name!r} is reserved")
    if name in schema.field_names:
        raise SchemaMismatchError(f"column {name!r} already exists")


def _check_not_key(schema: TableSchema, name: str, verb: str) -> None:
    for kind, cols in (("primary key", schema.primaryKeys), ("partition", schema.partitionKeys),
                       ("bucket-key", names_in(schema.options.get("bucket-key")))):
        if name in cols:
            raise InvalidArgumentError(f"cannot {verb} {kind} column {name!r}")
