"""What the SQL procedures share: where tables are, argument checks, analyze results.

Checks run twice: in each procedure's ``analyze`` (on the driver, when Spark analyzes the
query, for the arguments that are constants) and again in ``eval`` (on the executor).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")
CONF_PREFIX = "spark.minipaimon."
WAREHOUSE_CONF = CONF_PREFIX + "warehouse"


@dataclass(frozen=True)
class Connection:
    """Where the procedures find tables: connection options (``s3.*``, ``azure.*``) and the warehouse
    of ``namespace.table`` identifiers. Pickled into every task; never logged."""

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


# -- argument checks (in analyze on the driver, and again in eval) ------------------------------


def flag(name: str, value: Any) -> bool:
    from minipaimon_core import InvalidArgumentError

    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be true or false, got {value!r}")
    return value


def integer(name: str, value: Any, minimum: int | None = None) -> int:
    from minipaimon_core import InvalidArgumentError

    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    return value


def endpoint(name: str, value: Any) -> int | str:
    from minipaimon_core import InvalidArgumentError

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidArgumentError(f"{name} must be a snapshot id or a tag name, got {value!r}")
    return value


def check_endpoint(table: Any, name: str, value: Any) -> None:
    """A snapshot id that exists, or a tag that exists. Raises SnapshotNotFoundError."""
    target = endpoint(name, value)
    if isinstance(target, str):
        table.tag_snapshot(target)
    else:
        table.snapshot(target)


def schema_of(ddl: str) -> Any:
    """A StructType of ``"name type, ..."`` (bigint, int, string, boolean): the analyze
    worker has no JVM to parse DDL."""
    from pyspark.sql.types import (
        BinaryType,
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    types = {"bigint": LongType(), "int": IntegerType(), "string": StringType(), "boolean": BooleanType(),
             "binary": BinaryType()}
    fields = [part.split() for part in ddl.split(",")]
    return StructType([StructField(n, types[t]) for n, t in fields])


class Args:
    """The constant values of analyze's arguments; a non-constant one is not checked there."""

    def __init__(self, args: tuple[Any, ...]) -> None:
        self._args = args

    def known(self, i: int) -> bool:
        return i < len(self._args) and bool(self._args[i].isConstantExpression)

    def value(self, i: int, default: Any = None) -> Any:
        return self._args[i].value if i < len(self._args) else default


def one_line_errors(check: Callable[[], T]) -> T:
    """Run an analyze-time ``check``; a minipaimon error reaches the user as one line.

    The analyze worker reports an exception with its traceback unless
    ``SPARK_HIDE_TRACEBACK`` is set when it formats it, and exits right after: setting it
    here shows the error class and message alone, and only for this error."""
    from minipaimon_core import MiniPaimonError

    try:
        return check()
    except MiniPaimonError:
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"
        raise


def analyzed(returns: str, check: Callable[[Args], None]) -> Callable[..., Any]:
    """An ``analyze`` that runs ``check`` on the constant arguments, then gives ``returns``."""

    def analyze(*args: Any) -> Any:
        from pyspark.sql.udtf import AnalyzeResult

        one_line_errors(lambda: check(Args(args)))
        return AnalyzeResult(schema=schema_of(returns))

    return staticmethod(analyze)  # type: ignore[return-value]
