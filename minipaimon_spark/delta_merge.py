"""``MiniPaimonTable.merge(source, condition)``: delta-spark's ``DeltaMergeBuilder``, same
names and signatures, conditions and values in Spark SQL (strings or Columns).

```python
(MiniPaimonTable.forPath(spark, path).alias("t")
    .merge(updates.alias("s"), "t.id = s.id")
    .whenMatchedUpdate(condition="s.v > t.v", set={"v": "s.v", "n": "t.n + 1"})
    .whenMatchedDelete(condition="s.deleted")
    .whenNotMatchedInsertAll()
    .whenNotMatchedBySourceDelete(condition="t.dt < '2025-01-01'")
    .execute())                       # one row: num_affected_rows, num_updated_rows, ...
```

Semantics are the core's merge (minipaimon_core.dml.merge_into, Delta's): a target row
matched by source rows goes to the first ``whenMatched*`` clause whose condition holds
(several source rows matching one target row are an error when there is a matched
clause); a source row matching no target row to the first ``whenNotMatched*`` clause
(over the source's columns; a column an insert does not name is null); a target row no
source row matches to the first ``whenNotMatchedBySource*`` clause (over the target's
columns). ``*All`` clauses take the source column of each target column's name (a
primary-key column is never updated). A primary-key table's inserts must not carry a key
it holds (unless the merge deletes it) when the condition is not the plain equality of its
whole key with the source's same-named columns.

The source is read more than once (its bounds, the matched rows, the inserts, and for an
unpinned primary-key merge its inserted keys): cache or checkpoint a source that could
change between reads (a nondeterministic one).

Everything is analyzed on the driver when ``execute()`` is called, before any task: the
condition (an unparsable one, an unknown column: InvalidArgumentError in one line), each
clause's condition and values, and each value against its column (Spark's store
assignment: SchemaMismatchError naming the column); see :mod:`.row_changes` for the jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import DecimalType, IntegralType, StringType, StructField, StructType

from minipaimon_core.dml.merge_keys import prune_filter
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_spark import store_assignment
from minipaimon_spark.row_changes import CLAUSE, KEY, Action, SparkChange, execute, value_name
from minipaimon_spark.spark_sql import analyzed, column_of, equalities

if TYPE_CHECKING:
    from minipaimon_spark.delta_table import MiniPaimonTable

METRICS = "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long"
_EXACT = (IntegralType, DecimalType, StringType)  # join values Spark compares as the core prunes


@dataclass
class _Clause:
    kind: str  # "matched", "not_matched", "not_matched_by_source"
    delete: bool
    condition: Any  # a Spark SQL string, a Column or None
    values: dict[str, Any] | None  # None: every column (update all / insert all)


@dataclass
class MiniPaimonMergeBuilder:
    """The clauses of a merge, in the order they are added; ``execute()`` runs it."""

    table: MiniPaimonTable
    source: Any
    condition: Any
    clauses: list[_Clause] = field(default_factory=list)

    def _add(self, kind: str, delete: bool, condition: Any, values: Any) -> MiniPaimonMergeBuilder:
        if values is not None and (not isinstance(values, dict) or not values):
            raise InvalidArgumentError(f"merge: set / values must be a non-empty dict, got {values!r}")
        self.clauses.append(_Clause(kind, delete, condition, values))
        return self

    def whenMatchedUpdate(self, condition: Any = None, set: dict[str, Any] | None = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        if set is None:
            raise InvalidArgumentError("merge: whenMatchedUpdate needs set={column: value}")
        return self._add("matched", False, condition, set)

    def whenMatchedUpdateAll(self, condition: Any = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        return self._add("matched", False, condition, None)

    def whenMatchedDelete(self, condition: Any = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        return self._add("matched", True, condition, None)

    def whenNotMatchedInsert(self, condition: Any = None, values: dict[str, Any] | None = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        if values is None:
            raise InvalidArgumentError("merge: whenNotMatchedInsert needs values={column: value}")
        return self._add("not_matched", False, condition, values)

    def whenNotMatchedInsertAll(self, condition: Any = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        return self._add("not_matched", False, condition, None)

    def whenNotMatchedBySourceUpdate(self, condition: Any = None, set: dict[str, Any] | None = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        if set is None:
            raise InvalidArgumentError("merge: whenNotMatchedBySourceUpdate needs set={column: value}")
        return self._add("not_matched_by_source", False, condition, set)

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> MiniPaimonMergeBuilder:  # noqa: N802
        return self._add("not_matched_by_source", True, condition, None)

    def execute(self) -> Any:
        """Apply the clauses in one commit; a one-row DataFrame of Delta's merge metrics
        (``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
        ``num_inserted_rows``).

        Raises:
            InvalidArgumentError: no clause, an unparsable condition or value, an unknown
                column (one line naming it), several source rows for one target row, an
                insert of a key the table holds.
            SchemaMismatchError: a value that does not fit its column.
            UnsupportedFeatureError: a change the merge engine cannot express.
            CommitConflictError: conflicts kept winning (``commit.max-retries``).
        """
        if not self.clauses:
            raise InvalidArgumentError("merge: add at least one when* clause before execute()")
        plan = _Planner(self)
        result = execute(self.table._spark, self.table._table, self.table._connection, plan.change())
        return self.table._spark.createDataFrame(
            [(result.inserted + result.updated + result.deleted, result.updated, result.deleted, result.inserted)],
            METRICS)


@dataclass
class _Checked:
    """A clause analyzed on the driver: its index among the clauses Spark picks from (target
    rows: matched then by-source; source rows: not-matched), its condition and values
    (output column, Column, its Spark type, the table column)."""

    clause: _Clause
    index: int
    condition: Any
    values: list[tuple[str, Any, Any, StructField]]


class _Planner:
    """A merge builder checked on the driver and turned into a :class:`SparkChange`."""

    def __init__(self, builder: MiniPaimonMergeBuilder) -> None:
        self.b = builder
        self.t = builder.table
        self.fields = self.t._spark_schema()
        self.keys = self.t._table.primary_keys()
        self.on = column_of(builder.condition, "merge condition")
        self.source = builder.source
        empty = self.t._aliased(self.t._empty())
        matched = analyzed(lambda: empty.join(self.source, self.on, "inner"), f"merge condition {builder.condition!r}")
        self.contexts = {"matched": matched, "not_matched": self.source, "not_matched_by_source": empty}
        self.actions: list[Action] = []
        self.checked: list[_Checked] = []
        for c in builder.clauses:  # target rows' clauses first: their index is the action's
            if c.kind != "not_matched":
                self.checked.append(self._check(c, len(self.actions)))
                self.actions.append(Action(c.delete, tuple(v[3].name for v in self.checked[-1].values)))
        inserts = [c for c in builder.clauses if c.kind == "not_matched"]
        self.checked += [self._check(c, k) for k, c in enumerate(inserts)]

    def of(self, kind: str) -> list[_Checked]:
        return [c for c in self.checked if c.clause.kind == kind]

    def _check(self, c: _Clause, index: int) -> _Checked:
        """Clause ``c`` analyzed in its context; its values checked against their columns."""
        where = self.contexts[c.kind]
        what = f"merge {c.kind.replace('_', ' ')} clause"
        condition = column_of(c.condition, f"{what} condition") if c.condition is not None else None
        if condition is not None:
            analyzed(lambda: where.where(condition), f"{what} condition {c.condition!r}")
        values = []
        for i, (name, (raw, value)) in enumerate(self._columns(c, what).items()):
            target = self.fields[name]
            source = _type_of(where, value, f"{what} value of {name!r}")
            store_assignment.check(source, target, what)
            store_assignment.check_constant(self.t._spark, raw, value, source, target)
            values.append((name if c.kind == "not_matched" else value_name(index, i), value, source, target))
        return _Checked(c, index, condition, values)

    def _columns(self, c: _Clause, what: str) -> dict[str, tuple[Any, Any]]:
        """Target column -> (the value as given, its Column) for clause ``c`` (``*All``: the
        source's columns of the same names; a primary-key column is never updated)."""
        from minipaimon_spark.types import quoted

        if c.delete:
            return {}
        if c.values is not None:
            out = {}
            for name, value in c.values.items():
                column = self.t._column(name, what)
                if c.kind != "not_matched" and column in self.keys:
                    raise InvalidArgumentError(
                        f"{what}: {column!r} is a primary-key column and cannot be set; delete the "
                        "row and insert the new one")
                out[column] = (value, column_of(value, f"{what} value of {column!r}"))
            return out
        names = [f.name for f in self.fields.fields if c.kind == "not_matched" or f.name not in self.keys]
        by_lower = {n.lower(): n for n in self.source.columns}
        missing = [n for n in names if n not in self.source.columns and n.lower() not in by_lower]
        if missing:
            raise InvalidArgumentError(f"{what}: *All needs source columns {missing} (the source has "
                                       f"{list(self.source.columns)})")
        columns = {n: self.source[quoted(n if n in self.source.columns else by_lower[n.lower()])] for n in names}
        return {n: (column, column) for n, column in columns.items()}

    # -- the change --------------------------------------------------------------------------

    def change(self) -> SparkChange:
        pairs = self._pairs()
        return SparkChange(
            self.actions,
            self._rows if self.actions else None,
            self._inserts if self.of("not_matched") else None,
            dnf=None if self.of("not_matched_by_source") or pairs is None else self._bounds(pairs),
            guard=not self._pinned_to_key(pairs),
            on=str(self.b.condition))

    def _rows(self, target: Any) -> Any:
        """Per target row the clause it takes (matched pairs all kept: the core refuses
        two source rows for one target row) and that clause's values; target rows no source
        row matches, where a by-source clause takes them."""
        from pyspark.sql import functions as F

        from minipaimon_core.dml.merge_units import ROW, UNIT

        t = self.t._aliased(target)
        keep = [t[UNIT], t[ROW], *[t[KEY.format(j)] for j in range(len(self.keys))]]
        parts = []
        for kind, how in (("matched", "inner"), ("not_matched_by_source", "left_anti")):
            clauses = self.of(kind)
            if not clauses:
                continue
            clause = _first([(c.index, c.condition) for c in clauses])
            values = [F.when(clause == c.index, store_assignment.stored(value, source, field)).alias(name)
                      for c in clauses for name, value, source, field in c.values]
            picked = t.join(self.source, self.on, how).select(*keep, clause.alias(CLAUSE), *values)
            parts.append(picked if kind == "matched" else picked.where(F.col(CLAUSE).isNotNull()))
        out = parts[0]
        for part in parts[1:]:
            out = out.unionByName(part, allowMissingColumns=True)
        return out

    def _inserts(self, target: Any) -> Any:
        """The rows the not-matched clauses insert, in the table's columns and types (a
        column a clause does not name: null)."""
        from pyspark.sql import functions as F

        clauses = self.of("not_matched")
        clause = _first([(c.index, c.condition) for c in clauses])
        columns = []
        for f in self.fields.fields:
            value = F.lit(None).cast(f.dataType)
            for c in reversed(clauses):
                given = [(v, s, t) for name, v, s, t in c.values if name == f.name]
                if given:
                    value = F.when(clause == c.index, store_assignment.stored(*given[0])).otherwise(value)
            columns.append(value.alias(f.name))
        unmatched = self.source.join(self.t._aliased(target), self.on, "left_anti")
        return unmatched.where(clause.isNotNull()).select(*columns)

    def _pairs(self) -> list[tuple[str, str]] | None:
        """(target column, source column) of each equality, if the condition is a
        conjunction of equalities of a target column with a source column."""
        terms = equalities(self.b.condition)
        if terms is None:
            return None
        alias = (self.t._alias or "").lower()
        names = {f.name for f in self.fields.fields}
        out = []
        for left, right in terms:
            sides = [_side(n, alias, names, list(self.source.columns)) for n in (left, right)]
            if sorted(s[0] for s in sides if s) != ["source", "target"]:
                return None
            sides.sort()  # ("source", ...) first
            out.append((sides[1][1], sides[0][1]))  # type: ignore[index]
        return out

    def _bounds(self, pairs: list[tuple[str, str]]) -> Any:
        """The target rows the source can match: each paired target column between the
        source column's min and max (one aggregate; types Spark and the core compare alike)."""
        from pyspark.sql import functions as F

        from minipaimon_spark.types import quoted

        schema: StructType = self.source.schema
        exact = [(t, s) for t, s in pairs
                 if isinstance(schema[s].dataType, _EXACT) and schema[s].dataType == self.fields[t].dataType]
        if not exact:
            return None
        row = self.source.agg(*[f(quoted(s)).alias(f"{i}_{k}") for i, (_, s) in enumerate(exact)
                                for k, f in (("min", F.min), ("max", F.max))]).collect()[0]
        bounds = {t: None if row[f"{i}_min"] is None else (row[f"{i}_min"], row[f"{i}_max"])
                  for i, (t, _) in enumerate(exact)}
        return prune_filter([t for t, _ in exact], bounds)

    def _pinned_to_key(self, pairs: list[tuple[str, str]] | None) -> bool:
        """Whether every insert keeps to the table's keys without a check: the condition is
        the equality of each key column with the source column of its name, and every
        insert is an ``InsertAll`` (an unmatched source row's key is then in no target row)."""
        if not self.keys or not self.of("not_matched"):
            return True
        if pairs is None or any(c.values is not None for c in self.b.clauses if c.kind == "not_matched"):
            return False
        paired = {t for t, s in pairs if t == s}
        return set(self.keys) <= paired


def _type_of(where: Any, value: Any, what: str) -> Any:
    """The Spark type of Column ``value`` over the DataFrame ``where``."""
    return analyzed(lambda: where.select(value.alias("v")), what).schema["v"].dataType


def _first(conditions: list[tuple[int, Any]]) -> Any:
    """CASE WHEN c0 THEN i0 WHEN c1 THEN i1 ... END: the first clause whose condition holds
    (a null condition does not), null if none."""
    from pyspark.sql import functions as F

    out = None
    for index, condition in conditions:
        holds = condition if condition is not None else F.lit(True)
        out = F.when(holds, F.lit(index)) if out is None else out.when(holds, F.lit(index))
    assert out is not None
    return out


def _side(name: list[str], alias: str, target: set[str], source: list[str]) -> tuple[str, str] | None:
    """Which side a column reference of a merge condition names, and the column."""
    if len(name) == 2 and alias and name[0].lower() == alias and name[1] in target:
        return ("target", name[1])
    if len(name) == 2 and name[1] in source and name[0].lower() != alias:
        return ("source", name[1])
    if len(name) == 1 and name[0] in target and name[0] not in source:
        return ("target", name[0])
    if len(name) == 1 and name[0] in source and name[0] not in target:
        return ("source", name[0])
    return None


__all__ = ["METRICS", "MiniPaimonMergeBuilder"]
