"""Checks of a table's options against its columns and keys (pure; no IO).

:func:`check` runs at ``create_table`` and at every ``set_options`` (and schema change), so
an option that would make later writes or reads fail is refused before anything is written,
with :class:`UnsupportedOptionError` naming the option. The rules, as in Paimon:

* ``bucket``: -1 or >= 1 (unset: -1, Paimon's default), or -2 (postponed buckets) in a
  primary-key table. -1 is an unbucketed append table, or a primary-key table with dynamic
  buckets (minipaimon_core.dynamic; ``dynamic-bucket.max-buckets`` -1 or >= 1); an append
  table with ``bucket`` >= 1 needs ``bucket-key``. A primary key without every partition column
  (cross-partition updates) needs ``bucket`` = -1.
* ``bucket-key``: distinct, non-nested columns; in a primary-key table a subset of the
  primary key (an update must land in the bucket of its key), and not with dynamic buckets
  (their buckets are not a hash of any column).
* ``partition.default-name`` (the directory value of a null partition value): not empty,
  its directory name a path segment file systems take.
* ``merge-engine``, ``sequence.field``, ``changelog-producer``, ``ignore-delete``,
  ``partial-update.*`` and the aggregation options belong to primary-key tables only.
* ``deletion-vectors.enabled`` on a primary-key table needs the ``deduplicate`` engine
  (Paimon refuses it with ``first-row``, which never deletes an older row; see
  minipaimon_core.commit.first_row); on an append table, row-level changes mark rows instead of
  rewriting files (minipaimon_core.commit.append_vectors).
* ``sequence.field``: one existing, non-key column of an orderable type (numeric, decimal,
  date, time, timestamp); several sequence fields are refused.
* ``file-index.*`` of an append table: bloom filters of top-level columns Paimon can hash
  (minipaimon writes no bitmap / bsi index; :mod:`minipaimon_core.file_format.file_index`).
* ``fields.<f>.*``: ``f`` is a non-key column; aggregation options need
  ``merge-engine`` = ``aggregation`` (a partial-update table takes
  ``aggregate-function`` and ``ignore-retract`` of its sequence groups' columns); the
  function fits the column's type (and so does ``fields.default-aggregate-function`` for
  every column it applies to): ``collect`` an ARRAY (``distinct`` with it or ``listagg``),
  ``merge_map`` a MAP, ``nested_update`` an ARRAY of ROW (``nested-key`` names fields of
  the ROW).
* ``fields.<s1,s2>.sequence-group`` = ``<f1,f2>`` (partial-update): non-key columns, each
  in one group; sequence fields orderable; no aggregate function on a sequence field and
  not with ``partial-update.remove-record-on-delete`` (lsm/merge_config.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from ..errors import UnsupportedFeatureError, UnsupportedOptionError
from ..file_format import file_index
from ..format.options import Options, field_option
from ..format.partition_path import escape
from ..lsm.merge_engines import MergeConfig
from . import post_commit_options
from .partition import MAX_SEGMENT_BYTES

PK_ONLY = ("merge-engine", "sequence.field", "changelog-producer", "ignore-delete",
           "partial-update.ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
           "partial-update.remove-record-on-delete", "aggregation.remove-record-on-delete",
           "partial-update.remove-record-on-sequence-group",
           "fields.default-aggregate-function")
DELETION_VECTOR_ENGINES = ("deduplicate",)


def names_in(value: str | None) -> list[str]:
    """The column names of a comma-separated option value."""
    return [c.strip() for c in value.split(",")] if value else []


def check(options: Mapping[str, str], schema: pa.Schema, primary_keys: Sequence[str],
          partition_keys: Sequence[str]) -> None:
    """Refuse options that do not fit the table (rules in the module docstring).

    ``options`` were validated by :func:`minipaimon_core.format.options.validate` already.

    Raises:
        UnsupportedOptionError: the first option that does not fit, by name.
    """
    typed = Options(options)
    pk = list(primary_keys)
    _check_buckets(typed, options, schema, pk)
    post_commit_options.check_values(options)
    _check_default_partition_name(typed, partition_keys)
    outside = [c for c in partition_keys if c not in pk]
    if pk and outside and typed["bucket"] != -1:
        raise UnsupportedOptionError(
            f"option 'bucket' = {typed['bucket']}: the primary key {pk} leaves out partition "
            f"column(s) {outside}, so an update may move a key to another partition, which "
            "needs dynamic buckets ('bucket' = -1, as in Paimon); add the columns to the key "
            "or use 'bucket' = -1")
    if not pk:
        for name in options:
            if name in PK_ONLY or field_option(name) is not None:
                raise UnsupportedOptionError(
                    f"option {name!r} applies to primary-key tables only; this table has no "
                    "primary key (remove the option, or create the table with primary_key=...)")
        try:  # the file indexes of append files, which minipaimon writes as Paimon does
            file_index.check_writable(options, schema, "this table")
        except UnsupportedFeatureError as e:
            raise UnsupportedOptionError(f"option 'file-index.*': {e}") from None
        return
    _check_sequence_field(options, schema, pk)
    if typed["deletion-vectors.enabled"] and typed["merge-engine"] not in DELETION_VECTOR_ENGINES:
        raise UnsupportedOptionError(
            f"option 'deletion-vectors.enabled' needs 'merge-engine' deduplicate (this "
            f"table's is {typed['merge-engine']!r}): a {typed['merge-engine']} row merges values "
            "of several versions, which marking old rows as deleted cannot express, and a "
            "first-row table never deletes an older row (Paimon refuses the pair too)")
    _check_field_options(typed, options, schema, pk)
    MergeConfig.from_options(tuple(pk), options)


def _check_buckets(typed: Options, options: Mapping[str, str], schema: pa.Schema,
                   pk: list[str]) -> None:
    buckets = typed["bucket"]
    if typed["dynamic-bucket.max-buckets"] == 0:
        raise UnsupportedOptionError(
            "option 'dynamic-bucket.max-buckets' must be -1 (unbounded) or >= 1")
    if buckets == 0 or (buckets == -2 and not pk):
        need = "-1 (dynamic buckets), -2 (postponed buckets) or >= 1" if pk else "-1 (unbucketed) or >= 1"
        raise UnsupportedOptionError(f"option 'bucket' must be {need}")
    keys = names_in(options.get("bucket-key"))
    if pk and buckets == -1 and keys:
        raise UnsupportedOptionError(
            "option 'bucket-key' cannot be set on a primary-key table with dynamic buckets "
            "('bucket' = -1): their buckets come from the table's index of keys, not a hash; "
            "remove it, or give 'bucket' a number of buckets")
    if not pk and buckets >= 1 and not keys:
        raise UnsupportedOptionError(
            "option 'bucket' >= 1 on an append table needs 'bucket-key' (the columns "
            "hashed to pick a bucket); set it, or use 'bucket' = -1")
    if "bucket-key" not in options:
        return
    if len(set(keys)) != len(keys) or "" in keys:
        raise UnsupportedOptionError(
            "option 'bucket-key' must list distinct column names")
    for c in keys:
        if c not in schema.names:
            raise UnsupportedOptionError(  # never the value: it may be a misplaced secret
                f"option 'bucket-key' names a column that is not in the schema {schema.names}")
        if pa.types.is_nested(schema.field(c).type):
            raise UnsupportedOptionError(f"option 'bucket-key': column {c!r} has a nested type")
        if pk and c not in pk:
            raise UnsupportedOptionError(
                f"option 'bucket-key': column {c!r} is not in the primary key {pk}; the bucket "
                "keys of a primary-key table must be primary-key columns (an update of the "
                "column would move the key to another bucket)")


def _check_default_partition_name(typed: Options, partition_keys: Sequence[str]) -> None:
    """``partition.default-name`` names the directories of null values: not empty, and
    ``<key>=<name>`` escaped a path segment a file system takes."""
    name = typed["partition.default-name"]
    if not name:
        raise UnsupportedOptionError("option 'partition.default-name' must not be empty")
    for key in partition_keys:
        if len(f"{escape(key)}={escape(name)}".encode()) > MAX_SEGMENT_BYTES:
            raise UnsupportedOptionError(
                f"option 'partition.default-name' is too long: the directory of a null {key!r} "
                f"would be longer than {MAX_SEGMENT_BYTES} bytes")


def _orderable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            or pa.types.is_temporal(t))


def _check_sequence_field(options: Mapping[str, str], schema: pa.Schema, pk: list[str]) -> None:
    if "sequence.field" not in options:
        return
    names = names_in(options["sequence.field"])
    if len(names) != 1:
        raise UnsupportedOptionError(
            "option 'sequence.field': give exactly one column (several sequence fields are "
            "not supported)")
    name = names[0]
    if name not in schema.names:
        raise UnsupportedOptionError(  # never the value: it may be a misplaced secret
            f"option 'sequence.field' names a column that is not in the schema {schema.names}")
    if name in pk:
        raise UnsupportedOptionError(
            f"option 'sequence.field': column {name!r} is a primary-key column")
    if not _orderable(schema.field(name).type):
        raise UnsupportedOptionError(
            f"option 'sequence.field': column {name!r} has type {schema.field(name).type}; use "
            "a numeric, decimal, date, time or timestamp column")


def _fits(fn: str, t: pa.DataType) -> bool:
    """Whether aggregate function ``fn`` applies to a column of type ``t``."""
    if fn in ("sum", "product"):
        return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
    if fn == "count":
        return pa.types.is_integer(t)
    if fn in ("min", "max"):
        return _orderable(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
    if fn in ("bool_and", "bool_or"):
        return pa.types.is_boolean(t)
    if fn == "listagg":
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    if fn == "collect":
        return pa.types.is_list(t)
    if fn == "merge_map":
        return pa.types.is_map(t)
    if fn == "nested_update":
        return pa.types.is_list(t) and pa.types.is_struct(t.value_type)
    return True  # first/last (non-null) value: any type


#: per-field options of each engine (``sequence-group`` is checked on its own)
_ENGINE_FIELD_OPTIONS = {
    "aggregation": ("aggregate-function", "ignore-retract", "list-agg-delimiter", "distinct",
                    "nested-key"),
    "partial-update": ("aggregate-function", "ignore-retract"),
}


def _check_field_options(typed: Options, options: Mapping[str, str], schema: pa.Schema,
                         pk: list[str]) -> None:
    engine = typed["merge-engine"]
    aggregation = engine == "aggregation"
    explicit: dict[str, str] = {}
    for name in options:
        f = field_option(name)
        if f is None:
            continue
        column, suffix = f
        columns = names_in(column) if suffix == "sequence-group" else [column]
        if suffix == "sequence-group":
            columns += names_in(options[name])
        for c in columns:
            if c not in schema.names or c in pk:
                what = "a primary-key column" if c in pk else f"not a column of {schema.names}"
                raise UnsupportedOptionError(f"option {name!r}: {c!r} is {what}")
        if suffix == "sequence-group":
            _check_sequence_group(name, engine, names_in(column), schema)
        elif suffix not in _ENGINE_FIELD_OPTIONS.get(engine, ()):
            need = "'aggregation'" if suffix in _ENGINE_FIELD_OPTIONS["aggregation"] else ""
            raise UnsupportedOptionError(
                f"option {name!r} needs 'merge-engine' = {need or 'aggregation or partial-update'} "
                f"(this table's engine is {engine!r})")
        if suffix == "aggregate-function":
            explicit[column] = typed[name]
    if "fields.default-aggregate-function" in options and not aggregation:
        raise UnsupportedOptionError(
            "option 'fields.default-aggregate-function' needs 'merge-engine' = 'aggregation'")
    default = typed["fields.default-aggregate-function"] if aggregation else None
    for field in schema:
        fn = explicit.get(field.name, default)
        if field.name in pk or fn is None:
            continue
        if not _fits(fn, field.type):
            key = (f"fields.{field.name}.aggregate-function" if field.name in explicit
                   else "fields.default-aggregate-function")
            raise UnsupportedOptionError(
                f"option {key!r} = {fn!r} does not apply to column {field.name!r} of type "
                f"{field.type}")
        _check_collection_options(options, field, fn)


def _check_sequence_group(name: str, engine: str, sequence_fields: list[str],
                          schema: pa.Schema) -> None:
    if engine != "partial-update":
        raise UnsupportedOptionError(
            f"option {name!r} needs 'merge-engine' = 'partial-update' (this table's engine "
            f"is {engine!r})")
    for s in sequence_fields:
        if not _orderable(schema.field(s).type):
            raise UnsupportedOptionError(
                f"option {name!r}: sequence field {s!r} has type {schema.field(s).type}; use a "
                "numeric, decimal, date, time or timestamp column")


def _check_collection_options(options: Mapping[str, str], f: pa.Field, fn: str) -> None:
    """``distinct`` goes with ``collect`` or ``listagg``, ``nested-key`` with ``nested_update`` and names
    fields of its rows."""
    distinct = f"fields.{f.name}.distinct"
    if distinct in options and fn not in ("collect", "listagg"):
        raise UnsupportedOptionError(f"option {distinct!r} needs the 'collect' or 'listagg' function")
    nested = f"fields.{f.name}.nested-key"
    if nested not in options:
        return
    if fn != "nested_update":
        raise UnsupportedOptionError(f"option {nested!r} needs the 'nested_update' function")
    row = f.type.value_type
    for k in names_in(options[nested]):
        if row.get_field_index(k) < 0:
            raise UnsupportedOptionError(f"option {nested!r}: {k!r} is not a field of {row}")
