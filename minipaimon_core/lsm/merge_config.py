"""How the rows of one key merge: the merge configuration from table options, the system
columns and row kinds. See :mod:`minipaimon_core.lsm.merge_engines` for the rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError

from ..format import options as option_values
from ..format.kinds import SEQUENCE, VALUE_KIND, RowKind
from ..format.table_schema import TableSchema

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = RowKind  # short names of the merge code
ENGINES = option_values.MERGE_ENGINES
AGGREGATE_FUNCTIONS = frozenset(option_values.AGGREGATE_FUNCTIONS)
#: Engines whose merge of a key returns one of its stored rows as it is (the last or the
#: first); the others build a row from several.
ROW_SELECTING_ENGINES = frozenset({"deduplicate", "first-row"})
_IGNORE_DELETE_KEYS = ("ignore-delete", "partial-update.ignore-delete",
                       "first-row.ignore-delete", "deduplicate.ignore-delete")


#: Functions whose retraction (-U/-D) Paimon defines; the others fail on a retraction
#: unless ``fields.<f>.ignore-retract``.
RETRACTABLE = frozenset({"sum", "count", "product", "last_value", "last_non_null_value",
                         "collect", "merge_map", "nested_update"})
#: Functions allowed in a partial-update table (in a sequence group or not): those whose
#: result does not depend on whether a row is newer or older than the group's latest, which
#: Paimon folds in opposite orders (``agg`` / ``aggReversed``).
PARTIAL_UPDATE_FUNCTIONS = frozenset({"sum", "product", "min", "max", "bool_and", "bool_or"})
#: ... and those that follow Paimon's fold in both orders, in a sequence group only
#: (minipaimon_core.lsm.group_order)
GROUP_ORDERED_FUNCTIONS = frozenset({"first_value", "last_value"})
_ALIASES = {"first_not_null_value": "first_non_null_value"}  # Paimon's legacy name


@dataclass(frozen=True)
class SequenceGroup:
    """``fields.<sequence_fields>.sequence-group`` = ``<fields>``: the group's columns take
    the values of its row with the largest ``sequence_fields`` (compared in order, nulls
    first; a row whose sequence fields are all null leaves the group alone)."""

    sequence_fields: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(frozen=True)
class MergeConfig:
    """How the rows of one key merge.  Build with :meth:`from_options` from table options.

    Raises (on construction):
        InvalidArgumentError: no key columns.
        UnsupportedOptionError: unknown engine or aggregate function, or a combination of
            options Paimon refuses (sequence groups with ``remove-record-on-delete``, an
            aggregate function of a partial-update table outside what minipaimon folds).
    """

    key_columns: tuple[str, ...]
    engine: str = "deduplicate"
    sequence_field: str | None = None
    ignore_delete: bool = False
    partial_update_remove_on_delete: bool = False
    aggregation_remove_on_delete: bool = False
    aggregate_functions: Mapping[str, str] = field(default_factory=dict)
    default_aggregate_function: str = "last_non_null_value"
    ignore_retract: frozenset[str] = frozenset()
    listagg_delimiter: Mapping[str, str] = field(default_factory=dict)
    collect_distinct: frozenset[str] = frozenset()
    nested_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sequence_groups: tuple[SequenceGroup, ...] = ()
    remove_on_sequence_group: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.key_columns:
            raise InvalidArgumentError("a merge needs at least one primary-key column")
        if self.engine not in ENGINES:
            raise UnsupportedOptionError(
                f"option 'merge-engine' has an unknown value; use one of {ENGINES}")
        for name, fn in [*self.aggregate_functions.items(),
                         ("default", self.default_aggregate_function)]:
            if fn not in AGGREGATE_FUNCTIONS or fn in _ALIASES:
                key = ("fields.default-aggregate-function" if name == "default"
                       else f"fields.{name}.aggregate-function")
                raise UnsupportedOptionError(
                    f"option {key!r} has an unknown value; use one of {sorted(AGGREGATE_FUNCTIONS)}")
        if self.engine == "partial-update":
            self._check_partial_update()
        if self.aggregation_remove_on_delete and self.ignore_retract:
            raise UnsupportedOptionError(
                f"options 'aggregation.remove-record-on-delete' and "
                f"'fields.{sorted(self.ignore_retract)[0]}.ignore-retract' conflict (Paimon refuses "
                "the pair): a delete removes the key, it is never ignored")

    def _check_partial_update(self) -> None:
        if self.remove_on_sequence_group:
            self._check_removal_group()
        if self.sequence_groups and self.partial_update_remove_on_delete:
            raise UnsupportedOptionError(
                "options 'fields.<f>.sequence-group' and 'partial-update.remove-record-on-delete' "
                "conflict (Paimon refuses the pair): a sequence group retracts its own columns")
        if self.aggregate_functions and not self.sequence_groups:
            name = next(iter(self.aggregate_functions))
            raise UnsupportedOptionError(
                f"option 'fields.{name}.aggregate-function' on a partial-update table needs "
                "sequence groups ('fields.<f>.sequence-group'), as in Paimon")
        for name, fn in self.aggregate_functions.items():
            if fn in GROUP_ORDERED_FUNCTIONS and self.group_of(name) is None:
                raise UnsupportedOptionError(
                    f"option 'fields.{name}.aggregate-function' = {fn!r} in a partial-update "
                    "table needs the column in a sequence group ('fields.<s>.sequence-group'), "
                    "as in Paimon")
            if fn not in PARTIAL_UPDATE_FUNCTIONS | GROUP_ORDERED_FUNCTIONS:
                raise UnsupportedOptionError(
                    f"option 'fields.{name}.aggregate-function' = {fn!r} in a partial-update "
                    "table is not supported (minipaimon folds "
                    f"{', '.join(sorted(PARTIAL_UPDATE_FUNCTIONS | GROUP_ORDERED_FUNCTIONS))} there)")
        grouped = [f for g in self.sequence_groups for f in (*g.sequence_fields, *g.fields)]
        for f in grouped:
            if f in self.key_columns:
                raise UnsupportedOptionError(
                    f"option 'fields.<f>.sequence-group': {f!r} is a primary-key column")
        for g in self.sequence_groups:
            for f in g.sequence_fields:
                if f in self.aggregate_functions:
                    raise UnsupportedOptionError(
                        f"option 'fields.{f}.aggregate-function': {f!r} is a sequence field of "
                        "a sequence group, which takes no aggregate function (as in Paimon)")

    def _check_removal_group(self) -> None:
        key = "partial-update.remove-record-on-sequence-group"
        sequence_fields = {f for g in self.sequence_groups for f in g.sequence_fields}
        outside = [f for f in self.remove_on_sequence_group if f not in sequence_fields]
        if outside:
            raise UnsupportedOptionError(
                f"field {outside[0]!r} defined in option {key!r} must be part of sequence groups "
                "(a sequence field of a 'fields.<f>.sequence-group'), as in Paimon")
        if self.ignore_delete:
            raise UnsupportedOptionError(
                f"options 'ignore-delete' and {key!r} conflict (Paimon refuses the pair)")
        if len({self.group_of(f) for f in self.remove_on_sequence_group}) > 1:
            raise UnsupportedOptionError(
                f"option {key!r} names the sequence fields of several groups; minipaimon removes "
                "a record by one group's sequence (a removal there resets the other groups, which "
                "its merge cannot follow); name one group's")

    @property
    def removal_group(self) -> SequenceGroup | None:
        """The sequence group whose winning -D removes the whole record
        (``partial-update.remove-record-on-sequence-group``), or None."""
        if not self.remove_on_sequence_group:
            return None
        return self.group_of(self.remove_on_sequence_group[0])

    @staticmethod
    def from_options(key_columns: Sequence[str], options: Mapping[str, str]) -> MergeConfig:
        """Parse Paimon option names: ``merge-engine``, ``sequence.field``, ``ignore-delete``
        (and its legacy per-engine names), ``partial-update.remove-record-on-delete``,
        ``aggregation.remove-record-on-delete``,
        ``partial-update.remove-record-on-sequence-group``,
        ``fields.default-aggregate-function``, ``fields.<f>.aggregate-function``,
        ``fields.<f>.ignore-retract``, ``fields.<f>.list-agg-delimiter``,
        ``fields.<f>.distinct``, ``fields.<f>.nested-key``,
        ``fields.<s1,s2>.sequence-group``.

        Raises:
            UnsupportedOptionError: unknown engine or function, a non-boolean flag, several
                sequence fields, a column in two sequence groups, or a combination Paimon
                refuses (see the class).
        """
        typed = option_values.Options(options)
        functions: dict[str, str] = {}
        delimiters: dict[str, str] = {}
        nested: dict[str, tuple[str, ...]] = {}
        ignore_retract: set[str] = set()
        distinct: set[str] = set()
        groups: list[SequenceGroup] = []
        for key in sorted(options):
            if (f := option_values.field_option(key)) is None:
                continue
            name, suffix = f
            if suffix == "aggregate-function":
                fn = typed[key]
                functions[name] = _ALIASES.get(fn, fn)
            elif suffix == "list-agg-delimiter":
                delimiters[name] = typed[key]
            elif suffix == "nested-key":
                nested[name] = tuple(k.strip() for k in typed[key].split(","))
            elif suffix == "sequence-group":
                groups.append(SequenceGroup(tuple(s.strip() for s in name.split(",")),
                                            tuple(v.strip() for v in typed[key].split(","))))
            elif suffix == "distinct":
                if typed[key]:
                    distinct.add(name)
            elif typed[key]:
                ignore_retract.add(name)
        _check_groups(groups)
        seq = (options.get("sequence.field") or "").strip() or None
        if seq is not None and "," in seq:
            raise UnsupportedOptionError(
                "option 'sequence.field': only one sequence field is supported")
        default = typed["fields.default-aggregate-function"]
        engine = typed["merge-engine"]
        if engine == "partial-update" and "fields.default-aggregate-function" in options:
            raise UnsupportedOptionError(
                "option 'fields.default-aggregate-function' on a partial-update table is not "
                "supported (it would fold every column, sequence fields included); name the "
                "function of each column with 'fields.<f>.aggregate-function'")
        return MergeConfig(
            key_columns=tuple(key_columns),
            engine=engine,
            sequence_field=seq,
            ignore_delete=any(typed[k] for k in _IGNORE_DELETE_KEYS),
            partial_update_remove_on_delete=typed["partial-update.remove-record-on-delete"],
            aggregation_remove_on_delete=typed["aggregation.remove-record-on-delete"],
            remove_on_sequence_group=tuple(
                f.strip() for f in (typed["partial-update.remove-record-on-sequence-group"] or "").split(",")
                if f.strip()),
            aggregate_functions=functions,
            default_aggregate_function=_ALIASES.get(default, default),
            ignore_retract=frozenset(ignore_retract),
            listagg_delimiter=delimiters,
            collect_distinct=frozenset(distinct),
            nested_keys=nested,
            sequence_groups=tuple(groups),
        )

    @property
    def keeps_tombstones(self) -> bool:
        """Deletes must be kept at every level, the bottom one included: with a
        ``sequence.field`` a late row with a lower sequence value must still lose against a
        -D with a higher one, whenever compaction ran (the reader drops -D rows)."""
        return self.sequence_field is not None and self.engine in ("deduplicate", "partial-update")

    def function_of(self, column: str) -> str:
        """The aggregate function of a non-key column of an aggregation table."""
        return self.aggregate_functions.get(column, self.default_aggregate_function)

    def retracts(self, column: str, fn: str) -> bool:
        """Whether a retraction (-U/-D) changes ``column`` (aggregated by ``fn``); False
        for an ignored one. Raises InvalidArgumentError if it cannot (Paimon fails then)."""
        if column in self.ignore_retract:
            return False
        if fn not in RETRACTABLE:
            raise InvalidArgumentError(
                f"field {column!r} with aggregate function {fn!r} cannot accept retractions "
                f"(-U/-D rows); set 'fields.{column}.ignore-retract' = 'true' or 'ignore-delete'")
        return True

    def group_of(self, column: str) -> SequenceGroup | None:
        """The sequence group ``column`` belongs to (as a sequence field or a field)."""
        for g in self.sequence_groups:
            if column in g.fields or column in g.sequence_fields:
                return g
        return None

    def merge_columns(self, columns: Sequence[str]) -> list[str]:
        """``columns`` plus the columns a merge of them needs: the sequence field, the
        sequence fields of their sequence groups and of the removal group."""
        extra = [self.sequence_field] if self.sequence_field else []
        extra += self.remove_on_sequence_group  # a removal there removes every column
        for c in columns:
            if (g := self.group_of(c)) is not None:
                extra.extend(g.sequence_fields)
        return list(dict.fromkeys([*columns, *extra]))


def _check_groups(groups: list[SequenceGroup]) -> None:
    seen: dict[str, SequenceGroup] = {}
    for g in groups:
        for f in g.fields:
            if f in seen:
                raise UnsupportedOptionError(
                    f"option 'fields.{','.join(g.sequence_fields)}.sequence-group': field {f!r} "
                    f"is already in the group of {','.join(seen[f].sequence_fields)!r}")
            seen[f] = g
    for g in groups:
        for s in g.sequence_fields:
            if s in seen and seen[s] is not g:
                raise UnsupportedOptionError(
                    f"option 'fields.{','.join(g.sequence_fields)}.sequence-group': sequence field "
                    f"{s!r} is a field of another group")


def check_retractions(kinds: pa.Array, columns: Sequence[str], config: MergeConfig) -> None:
    """Refuse written rows of ``kinds`` (``_VALUE_KIND`` values) that hold retractions
    (-U/-D) the table cannot take: a partial-update table without ``ignore-delete``,
    ``remove-record-on-delete`` or sequence groups; a column of ``columns`` whose aggregate
    function cannot retract. Paimon writes such rows and fails when it merges them with
    others; minipaimon refuses them before writing.

    Raises:
        InvalidArgumentError: naming the option to set.
    """
    k = kinds.to_numpy(zero_copy_only=False)
    retracting = (k == UPDATE_BEFORE) | (k == DELETE)
    if config.engine == "aggregation" and config.aggregation_remove_on_delete:
        retracting = k == UPDATE_BEFORE  # a -D removes the key, retracting nothing
    if config.ignore_delete or not retracting.any():
        return
    if config.engine == "partial-update" and not (
            config.partial_update_remove_on_delete or config.sequence_groups):
        raise InvalidArgumentError(partial_update_refuses_retractions())
    for name in columns:
        if name in (*config.key_columns, SEQUENCE, VALUE_KIND):
            continue
        if config.engine == "aggregation":
            config.retracts(name, config.function_of(name))
        elif config.engine == "partial-update" and name in config.aggregate_functions \
                and config.group_of(name) is not None:
            config.retracts(name, config.aggregate_functions[name])


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


def partial_update_refuses_retractions() -> str:
    return ("partial-update cannot accept delete or update-before rows; set 'ignore-delete' = "
            "'true', 'partial-update.remove-record-on-delete' = 'true', or sequence groups "
            "('fields.<f>.sequence-group') whose columns a retraction clears")


def places_above_level0(schema: TableSchema) -> bool:
    """Whether a write of the table is committed above level 0 (lsm/placement.py): where
    readers skip level 0, unless a ``lookup`` / ``full-compaction`` changelog producer makes
    every write's level-0 files visible by the compaction that writes their changelog (as
    Paimon does)."""
    producer = option_values.Options(schema.options)["changelog-producer"]
    return skips_level0(schema) and producer in ("none", "input")


def places_sorted_loads(schema: TableSchema) -> bool:
    """Whether a write into key ranges no file of its bucket holds is committed at the
    bottom level (commit/placement.py): primary-key tables whose writes stay at level 0 and
    whose changelog producer does not need a compaction of them (``none``, ``input``)."""
    producer = option_values.Options(schema.options)["changelog-producer"]
    return bool(schema.primaryKeys) and not schema.legacyFormat and not skips_level0(schema) \
        and producer in ("none", "input")


def skips_level0(schema: TableSchema) -> bool:
    """Whether batch reads of the table skip level-0 files, as Paimon's do
    (``batch_scan_skip_level0``): primary-key tables with deletion vectors or the
    ``first-row`` engine. Their writes are placed above level 0 (lsm/placement.py). Tables
    of minipaimon's earlier format read level 0 too (its vectors covered it)."""
    if not schema.primaryKeys or schema.legacyFormat:
        return False
    typed = option_values.Options(schema.options)
    return bool(typed["deletion-vectors.enabled"]) or typed["merge-engine"] == "first-row"
