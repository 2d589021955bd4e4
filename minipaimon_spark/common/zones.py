"""Spark's time zone rules at the border between Spark and a table.

Paimon's ``TIMESTAMP`` (no time zone; Arrow ``timestamp`` without tz) is Spark's
``TimestampNTZType`` (wall-clock time) and ``TIMESTAMP_LTZ`` (Arrow ``timestamp`` with tz)
is Spark's ``TimestampType`` (an instant), as in Paimon's Spark integration
(:mod:`minipaimon_spark.common.types`). A value crossing into a column of the other kind is
converted as Spark's ``CAST`` converts it, in the session time zone:

- ``TimestampType`` into ``TIMESTAMP``: ``CAST(ts AS TIMESTAMP_NTZ)``, the instant's
  wall-clock time in the zone (``2024-06-01 12:00`` in America/Los_Angeles stays 12:00);
- ``TimestampNTZType`` into ``TIMESTAMP_LTZ``: ``CAST(ntz AS TIMESTAMP)``, the wall-clock
  time in the zone (java.time's rules: a time in a spring-forward gap moves on by the gap's
  length, an ambiguous fall-back time takes the earlier offset).

The session zone reaches a task as the local property ``spark.sql.session.timeZone``
(Spark propagates the SQL settings a session has set to every task); a session that never
set it uses the JVM's default zone, which a batch shows in the zone of its ``TimestampType``
columns, else the machine's zone (``TZ``, ``/etc/localtime``), the JVM's own default.
Top-level columns only: a nested timestamp of the other kind is refused by the core's
schema check (SchemaMismatchError), never converted silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError

SESSION_TIME_ZONE = "spark.sql.session.timeZone"


def session_zone(schema: pa.Schema | None = None) -> str:
    """The Spark session time zone, in a task (see the module docs for the fallbacks).

    Raises InvalidArgumentError for a zone pyarrow cannot convert in.
    """
    from pyspark import TaskContext

    ctx = TaskContext.get()
    zone = ctx.getLocalProperty(SESSION_TIME_ZONE) if ctx is not None else None
    if not zone:
        aware = [f.type.tz for f in schema or [] if pa.types.is_timestamp(f.type) and f.type.tz]
        zone = str(aware[0]) if aware else machine_zone()
    return checked_zone(zone)


def machine_zone() -> str:
    """The zone of this machine, as the JVM finds its default: ``TZ``, else the zone
    ``/etc/localtime`` links to, else UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        return tz
    link = os.path.realpath("/etc/localtime")
    return link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else "UTC"


def wall_clock(column: Any, zone: str) -> Any:
    """``CAST(ts AS TIMESTAMP_NTZ)``: the wall-clock time in ``zone`` of each instant."""
    unit = column.type.unit
    return pc.local_timestamp(column.cast(pa.timestamp(unit, zone)))


def instant(column: Any, zone: str) -> Any:
    """``CAST(ntz AS TIMESTAMP)``: each wall-clock time in ``zone`` as an instant (UTC).

    The offset is the one in force just before the time (``nonexistent="earliest"`` lands
    just before a gap), so a gap's times move on by its length as java.time moves them.
    """
    unit = column.type.unit
    earliest = pc.assume_timezone(column, timezone=zone, ambiguous="earliest",
                                  nonexistent="earliest")
    offset = pc.subtract(pc.local_timestamp(earliest), earliest.cast(pa.timestamp(unit)))
    return pc.subtract(column, offset).cast(pa.timestamp(unit, "UTC"))


def checked_zone(zone: str) -> str:
    """``zone`` if pyarrow converts in it, else InvalidArgumentError naming it."""
    try:
        pa.scalar(0, pa.timestamp("us", zone)).cast(pa.timestamp("us"))
        pc.assume_timezone(pa.array([0], pa.timestamp("us")), timezone=zone)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        raise InvalidArgumentError(
            f"the Spark session time zone {zone!r} is not a zone pyarrow knows; set "
            f"{SESSION_TIME_ZONE} to a region (e.g. 'Europe/Berlin') or an offset ('+01:00')"
        ) from None
    return zone


class SparkTimes:
    """Converts the timestamp columns of written batches whose kind differs from the
    table's column (see the module docs); other batches pass through untouched."""

    def __init__(self, table_schema: pa.Schema) -> None:
        self._table = {f.name: f.type for f in table_schema if pa.types.is_timestamp(f.type)}
        self._zone: str | None = None
        self._last: pa.Schema | None = None
        self._plan: list[tuple[int, bool]] = []  # (column index, to the table's LTZ)

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self._last is None or not batch.schema.equals(self._last):
            self._last, self._plan = batch.schema, self._plan_of(batch.schema)
        if not self._plan:
            return batch
        if self._zone is None:
            self._zone = session_zone(batch.schema)
        columns = list(batch.columns)
        fields = list(batch.schema)
        for i, to_instant in self._plan:
            columns[i] = instant(columns[i], self._zone) if to_instant else wall_clock(columns[i], self._zone)
            fields[i] = fields[i].with_type(columns[i].type)
        return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields, batch.schema.metadata))

    def _plan_of(self, schema: pa.Schema) -> list[tuple[int, bool]]:
        plan = []
        for i, field in enumerate(schema):
            want = self._table.get(field.name)
            if want is not None and pa.types.is_timestamp(field.type) \
                    and bool(field.type.tz) != bool(want.tz):
                plan.append((i, bool(want.tz)))
        return plan

    def all(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield self(batch)


def align_source(source: Any, target: pa.Schema) -> Any:
    """A merge's source DataFrame with each column named like a timestamp column of the
    target but of the other kind cast in Spark (its own CAST, in the session zone), so
    conditions and values compare and write it as the target's kind."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    from minipaimon_spark.common.types import quoted

    casts = {}
    for field in source.schema.fields:
        if field.name not in target.names or not pa.types.is_timestamp(target.field(field.name).type):
            continue
        want = TimestampType() if target.field(field.name).type.tz else TimestampNTZType()
        if isinstance(field.dataType, (TimestampType, TimestampNTZType)) and field.dataType != want:
            casts[field.name] = F.col(quoted(field.name)).cast(want)
    return source.withColumns(casts) if casts else source


__all__ = ["SESSION_TIME_ZONE", "SparkTimes", "align_source", "checked_zone", "instant",
           "machine_zone", "session_zone", "wall_clock"]
