"""How a row-level change stores a value into a column of another type, by policy:

* ``EXACT`` (``Table.update`` / ``Table.merge`` from Python): as ``write()`` stores a
  column (:func:`minipaimon_core.write.conform.column`): the column's type or a widening
  whose values all convert exactly, else ``SchemaMismatchError``; a literal is typed by
  its column.
* ``SPARK`` (``minipaimon_spark.merge``, and any Spark-facing API: the values are what a
  Spark user writes, ``b * 1.1`` into an INT column): Spark's store assignment, as Spark
  SQL's INSERT and Paimon's Spark MERGE store a value
  (:mod:`minipaimon_core.expressions.store_assignment`, the one owner of that rule: 990.99
  into an INT is 990, out of range fails), then the exact conversion. A literal is taken as
  the value it is (``1.5`` into an INT is 1).
"""

from __future__ import annotations

import pyarrow as pa

from ..expressions.store_assignment import store_values
from ..write import conform
from ..write.conform import Values

EXACT, SPARK = "exact", "spark"
POLICIES = (EXACT, SPARK)


def store(field: pa.Field, values: Values, what: str, policy: str = EXACT) -> Values:
    """``values`` stored as column ``field`` under ``policy`` (the module's rules), then
    converted and checked as ``write()`` does (:func:`conform.column`).

    Raises SchemaMismatchError (a value that does not fit; under SPARK a type Spark's store
    assignment refuses), InvalidArgumentError (a null in a NOT NULL column; under SPARK a
    value out of the column's range)."""
    if policy == SPARK:
        values = store_values(values, field.type, what)
    return conform.column(field, values, what=what)


__all__ = ["EXACT", "POLICIES", "SPARK", "store"]
