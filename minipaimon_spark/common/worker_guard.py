"""A clear error where a Spark worker's Python cannot import minipaimon.

Spark's Python workers (the driver-side planners and every executor's tasks) unpickle the
data source, its readers, writers and input partitions. Where the interpreter Spark runs
(``PYSPARK_PYTHON`` / ``spark.pyspark.python``) lacks the package, that unpickling fails
inside Spark's own code with ``ModuleNotFoundError: No module named 'minipaimon_spark'``
and nothing of ours runs to explain it.

So every object shipped to workers (:class:`ShippedToWorkers`) pickles as a call of
:func:`restore` with its state as bytes, and this module is pickled *by value* (cloudpickle,
which Spark uses): ``restore``'s own code travels with the object and runs where the package
may be missing, turning the import failure into one line that says what to do::

    ModuleNotFoundError: minipaimon is not installed in the Python that runs this Spark
    worker (/usr/bin/python3 on host w1: No module named 'minipaimon_spark'): install it on
    every node into the interpreter PYSPARK_PYTHON / spark.pyspark.python names ...

Keep this module free of minipaimon imports: ``restore`` must run with the standard
library and pyspark only.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

from pyspark import cloudpickle

OUR_PACKAGES = ("minipaimon_spark", "minipaimon_core", "pyspark_minipaimon")
MISSING = (
    "minipaimon is not installed in the Python that runs this Spark worker ({python} on host "
    "{host}: {error}): install it on every node (driver and executors) into the interpreter "
    "that PYSPARK_PYTHON / spark.pyspark.python names, the same path everywhere, or ship a "
    "packed environment with spark-submit --archives; see the README, 'Installing'")


def missing_message(error: ModuleNotFoundError) -> str | None:
    """The one-line explanation of ``error`` if it is a missing minipaimon module, else None."""
    import socket

    if (error.name or "").split(".")[0] not in OUR_PACKAGES:
        return None
    return MISSING.format(python=sys.executable, host=socket.gethostname(), error=error)


def restore(payload: bytes) -> Any:
    """Rebuild an object pickled by :meth:`ShippedToWorkers.__reduce__`.

    Raises ModuleNotFoundError with :data:`MISSING` where minipaimon cannot be imported.
    """
    import pickle

    try:
        cls, state = pickle.loads(payload)
    except ModuleNotFoundError as e:
        message = missing_message(e)
        if message is None:
            raise
        raise ModuleNotFoundError(message, name=e.name) from None
    obj = cls.__new__(cls)
    if hasattr(obj, "__setstate__"):
        obj.__setstate__(state)
    else:
        obj.__dict__.update(state)
    return obj


class ShippedToWorkers:
    """Mixin of every object Spark ships to a Python worker: it unpickles through
    :func:`restore`, so a worker without minipaimon says so in one line. The state is
    pickled with cloudpickle, as Spark would pickle the object itself (local functions
    included); ``pickle.loads`` reads it back wherever pyspark is installed."""

    def __reduce__(self) -> tuple[Any, ...]:
        getstate = getattr(self, "__getstate__", None)  # a class's own, or object's (3.11+)
        state = getstate() if getstate is not None else self.__dict__
        if state is None:  # object.__getstate__ of an instance with an empty __dict__
            state = {}
        payload = cloudpickle.dumps((type(self), state), protocol=pickle.HIGHEST_PROTOCOL)
        return restore, (payload,)


# Have cloudpickle (Spark's pickler) carry this module's code with what it pickles.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

__all__ = ["MISSING", "ShippedToWorkers", "missing_message", "restore"]
