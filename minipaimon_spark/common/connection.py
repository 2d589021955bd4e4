"""Where a Spark session finds tables: the connection options (``s3.*``, ``azure.*``) and
the warehouse of ``namespace.table`` names, from the session's ``spark.minipaimon.*``
settings or given by the caller. Used by the SQL procedures, ``minipaimon_spark.merge`` and
``MiniPaimonTable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONF_PREFIX = "spark.minipaimon."
WAREHOUSE_CONF = CONF_PREFIX + "warehouse"


@dataclass(frozen=True)
class Connection:
    """Where tables are: connection options (``s3.*``, ``azure.*``) and the warehouse of
    ``namespace.table`` identifiers. Pickled into every task; never logged."""

    options: dict[str, str] = field(default_factory=dict, repr=False)
    warehouse: str | None = None

    @staticmethod
    def of_session(spark: SparkSession, options: Mapping[str, str] | None = None) -> Connection:
        """The session's ``spark.minipaimon.*`` settings, overridden by ``options``."""
        from minipaimon_core.io.fileio_resolve import CONNECTION_OPTIONS

        found = {name: spark.conf.get(CONF_PREFIX + name, None) for name in CONNECTION_OPTIONS}
        given = {k.lower(): str(v) for k, v in (options or {}).items()}
        warehouse = given.pop("warehouse", None) or spark.conf.get(WAREHOUSE_CONF, None)
        return Connection({**{k: v for k, v in found.items() if v}, **given}, warehouse or None)

    def table(self, name: Any) -> Any:
        """Open the table ``name`` (a path or an identifier). Raises the core's typed errors."""
        import minipaimon_core as mp
        from minipaimon_core.catalog import table_location

        if not isinstance(name, str) or not name:
            raise mp.InvalidArgumentError(
                f"the first argument must be a table path or namespace.table, got {name!r}")
        return mp.open_table(table_location(name, self.warehouse, self.options), options=self.options)


__all__ = ["CONF_PREFIX", "WAREHOUSE_CONF", "Connection"]
