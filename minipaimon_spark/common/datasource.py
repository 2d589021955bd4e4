"""The data source as Spark names it, and how its errors reach a Spark user: in one line.

Spark reports an exception of a data source's driver-side methods (``schema()``,
``reader()``, ``writer()``, a reader's ``partitions()``) as its own error class followed by
the Python traceback. :func:`one_line_errors` raises a minipaimon error (a missing table, an
unknown option, data that does not fit) again from the method itself with its traceback
dropped, so what the user reads is Spark's framing, one frame line and the one-line
minipaimon error (``[PYTHON_DATA_SOURCE_ERROR] ...
minipaimon_core.errors.TableNotFoundError: no minipaimon table at /t``), before any task
runs. Other exceptions (bugs) keep their whole traceback.

Contract: importing this module must stay cheap (the standard library only): ``source.py``
imports it when Spark looks the source up in every new session, and the core's errors are
imported only when an exception is raised.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

SHORT_NAME = "minipaimon"  # spark.read.format(SHORT_NAME)
P = ParamSpec("P")
R = TypeVar("R")


def is_minipaimon_error(e: BaseException) -> bool:
    """Whether ``e`` is one of the core's typed errors (imported only when one is raised)."""
    from minipaimon_core.errors import MiniPaimonError

    return isinstance(e, MiniPaimonError)


def one_line_errors(method: Callable[P, R]) -> Callable[P, R]:
    """``method``, raising a minipaimon error again with its traceback dropped: Spark shows
    its own framing, this function's one frame and the error's line. Any other exception
    (a bug) keeps its whole traceback."""

    @functools.wraps(method)
    def reraised(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except Exception as error:
            if not is_minipaimon_error(error):
                raise
            raise error.with_traceback(None) from None

    return reraised


__all__ = ["SHORT_NAME", "is_minipaimon_error", "one_line_errors"]
