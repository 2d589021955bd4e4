"""What the SQL procedures share: argument checks and analyze results (where tables are:
:mod:`minipaimon_spark.common.connection`).

Checks run twice: in each procedure's ``analyze`` (on the driver, when Spark analyzes the
query, for the arguments that are constants) and again in ``eval`` (on the executor).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


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
