"""How a row-level change stores a value into a column of another type: the one owner of
that rule, for the two ways of writing a change.

* ``EXACT`` (``Table.update`` / ``Table.merge`` from Python): as ``write()`` stores a
  column (:func:`minipaimon_core.write.conform.column`): the column's type or a widening
  whose values all convert exactly, else ``SchemaMismatchError``; a literal is typed by
  its column.
* ``SPARK`` (``minipaimon_spark.merge``, and any Spark-facing API: the values are what a
  Spark user writes, ``b * 1.1`` into an INT column): Spark's store assignment
  (``spark.sql.storeAssignmentPolicy`` = ANSI, Spark's default) of a numeric value into a
  numeric column, as Paimon's Spark MERGE stores it, then the exact conversion:

  ==========================  =================================================================
  into                        a value of another numeric type
  ==========================  =================================================================
  TINYINT .. BIGINT           cut toward zero (``CAST(990.99 AS INT)`` = 990); a value out of
                              the type's range, NaN or an infinity: ``InvalidArgumentError``
                              (ANSI's overflow error), nothing written
  FLOAT, DOUBLE               the nearest value (Java's conversion)
  DECIMAL(p, s)               an integer or decimal rounded half away from zero (Java's
                              HALF_UP) to ``s`` digits; more than ``p`` digits:
                              ``InvalidArgumentError``; a float only if exact (Spark rounds
                              the double's shortest decimal text, which minipaimon does not
                              reproduce: refused rather than different)
  ==========================  =================================================================

  A literal is taken as the value it is (``1.5`` into an INT is 1). Other kinds (a string
  into a number, a number into a date) are not assigned by ANSI and stay refused.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..write import conform
from ..write.conform import Values

EXACT, SPARK = "exact", "spark"
POLICIES = (EXACT, SPARK)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def spark_cast(values: Values, to: pa.DataType, what: str) -> Values:
    """``values`` as Spark's ANSI store assignment puts them into a column of type ``to``
    (the module's table); values of another kind are returned as they are.

    Raises InvalidArgumentError for a value the column cannot hold (ANSI's overflow error).
    """
    have = values.type
    if have.equals(to) or not (_numeric(have) and _numeric(to)):
        return values
    try:
        if pa.types.is_floating(to):
            return pc.cast(values, to, safe=False)
        if pa.types.is_integer(to):
            if not pa.types.is_integer(have):
                values = pc.round(values, ndigits=0, round_mode="towards_zero")
            return pc.cast(values, to, safe=True)
        if pa.types.is_floating(have):  # Spark rounds the shortest decimal text of a double:
            return values  # not done here, so only an exact value is stored (conform)
        if pa.types.is_integer(have):
            values = pc.cast(values, pa.decimal128(38, 0))
        elif have.scale > to.scale:
            values = pc.round(values, ndigits=to.scale, round_mode="half_towards_infinity")  # Java HALF_UP
        return pc.cast(values, to, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidArgumentError(
            f"{what}: a value of type {have} does not fit {to} (Spark's store assignment fails "
            f"there, as ANSI SQL does): {e}") from None


def store(field: pa.Field, values: Values, what: str, policy: str = EXACT) -> Values:
    """``values`` stored as column ``field`` under ``policy`` (the module's rules), then
    converted and checked as ``write()`` does (:func:`conform.column`).

    Raises SchemaMismatchError (a value that does not fit), InvalidArgumentError (a null
    in a NOT NULL column; under SPARK a value out of the column's range)."""
    if policy == SPARK:
        values = spark_cast(values, field.type, what)
    return conform.column(field, values, what=what)


__all__ = ["EXACT", "POLICIES", "SPARK", "spark_cast", "store"]
