"""How the rows of one key merge: the merge configuration from table options, the system
columns and row kinds. See :mod:`minipaimon_core.lsm.merge_engines` for the rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError

from .. import options as option_values
from ..format.table_schema import TableSchema
from ..kinds import SEQUENCE, VALUE_KIND, RowKind

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = RowKind  # short names of the merge code
ENGINES = option_values.MERGE_ENGINES
AGGREGATE_FUNCTIONS = frozenset(option_values.AGGREGATE_FUNCTIONS)
_IGNORE_DELETE_KEYS = ("ignore-delete", "partial-update.ignore-delete",
                       "first-row.ignore-delete", "deduplicate.ignore-delete")


@dataclass(frozen=True)
class MergeConfig:
    """How the rows of one key merge.  Build with :meth:`from_options` from table options.

    Raises (on construction):
        InvalidArgumentError: no key columns.
        UnsupportedOptionError: unknown engine or aggregate function.
    """

    key_columns: tuple[str, ...]
    engine: str = "deduplicate"
    sequence_field: str | None = None
    ignore_delete: bool = False
    partial_update_remove_on_delete: bool = False
    aggregate_functions: Mapping[str, str] = field(default_factory=dict)
    default_aggregate_function: str = "last_non_null_value"
    ignore_retract: frozenset[str] = frozenset()
    listagg_delimiter: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.key_columns:
            raise InvalidArgumentError("a merge needs at least one primary-key column")
        if self.engine not in ENGINES:
            raise UnsupportedOptionError(
                f"option 'merge-engine' has an unknown value; use one of {ENGINES}")
        for name, fn in [*self.aggregate_functions.items(),
                         ("default", self.default_aggregate_function)]:
            if fn not in AGGREGATE_FUNCTIONS:
                key = ("fields.default-aggregate-function" if name == "default"
                       else f"fields.{name}.aggregate-function")
                raise UnsupportedOptionError(
                    f"option {key!r} has an unknown value; use one of {sorted(AGGREGATE_FUNCTIONS)}")

    @staticmethod
    def from_options(key_columns: Sequence[str], options: Mapping[str, str]) -> MergeConfig:
        """Parse Paimon option names: ``merge-engine``, ``sequence.field``, ``ignore-delete``
        (and its legacy per-engine names), ``partial-update.remove-record-on-delete``,
        ``fields.default-aggregate-function``, ``fields.<f>.aggregate-function``,
        ``fields.<f>.ignore-retract``, ``fields.<f>.list-agg-delimiter``.

        Raises:
            UnsupportedOptionError: unknown engine or function, a non-boolean flag, several
                sequence fields, or ``fields.<f>.sequence-group`` (not supported).
        """
        typed = option_values.Options(options)
        functions: dict[str, str] = {}
        delimiters: dict[str, str] = {}
        ignore_retract: set[str] = set()
        for key in options:
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                option_values.spec_of(key)  # raises: sequence groups are not supported
            if (f := option_values.field_option(key)) is None:
                continue
            name, suffix = f
            if suffix == "aggregate-function":
                functions[name] = typed[key]
            elif suffix == "list-agg-delimiter":
                delimiters[name] = typed[key]
            elif typed[key]:
                ignore_retract.add(name)
        seq = (options.get("sequence.field") or "").strip() or None
        if seq is not None and "," in seq:
            raise UnsupportedOptionError(
                "option 'sequence.field': only one sequence field is supported")
        return MergeConfig(
            key_columns=tuple(key_columns),
            engine=typed["merge-engine"],
            sequence_field=seq,
            ignore_delete=any(typed[k] for k in _IGNORE_DELETE_KEYS),
            partial_update_remove_on_delete=typed["partial-update.remove-record-on-delete"],
            aggregate_functions=functions,
            default_aggregate_function=typed["fields.default-aggregate-function"],
            ignore_retract=frozenset(ignore_retract),
            listagg_delimiter=delimiters,
        )

    @property
    def keeps_tombstones(self) -> bool:
        """Deletes must be kept at every level, the bottom one included: with a
        ``sequence.field`` a late row with a lower sequence value must still lose against a
        -D with a higher one, whenever compaction ran (the reader drops -D rows)."""
        return self.sequence_field is not None and self.engine in ("deduplicate", "partial-update")

    def function_of(self, column: str) -> str:
        """The aggregate function of a non-key column."""
        return self.aggregate_functions.get(column, self.default_aggregate_function)


def prepare_input(table: pa.Table, config: MergeConfig) -> pa.Table:
    """Turn rows written by a user into merge input: for ``count`` columns of an aggregation
    table a non-null value becomes 1 and a null 0 (the column's type is kept).  Apply exactly
    once, before the first :func:`merge` of those rows; other engines return ``table``."""
    if config.engine != "aggregation":
        return table
    for i, name in enumerate(table.column_names):
        if name in config.key_columns or name in (SEQUENCE, VALUE_KIND):
            continue
        if config.function_of(name) == "count":
            col = table.column(i)
            ones = pc.cast(pc.is_valid(col), pa.int8()).cast(col.type)
            table = table.set_column(i, table.schema.field(i), ones)
    return table


def places_above_level0(schema: TableSchema) -> bool:
    """Whether a write of the table is committed above level 0 (lsm/placement.py): where
    readers skip level 0, unless a ``lookup`` / ``full-compaction`` changelog producer makes
    every write's level-0 files visible by the compaction that writes their changelog (as
    Paimon does)."""
    producer = option_values.Options(schema.options)["changelog-producer"]
    return skips_level0(schema) and producer in ("none", "input")


def skips_level0(schema: TableSchema) -> bool:
    """Whether batch reads of the table skip level-0 files, as Paimon's do
    (``batch_scan_skip_level0``): primary-key tables with deletion vectors or the
    ``first-row`` engine. Their writes are placed above level 0 (lsm/placement.py). Tables
    of minipaimon's earlier format read level 0 too (its vectors covered it)."""
    if not schema.primaryKeys or schema.legacyFormat:
        return False
    typed = option_values.Options(schema.options)
    return bool(typed["deletion-vectors.enabled"]) or typed["merge-engine"] == "first-row"
