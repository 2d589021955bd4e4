"""The process's shared thread pools, by name, made anew in a forked child (whose copy of
a pool has no threads, so a task submitted to it would wait forever).

The compute pools have one thread per core each. The ``io`` pool has :data:`IO_THREADS`
threads: its tasks are small storage calls (a marker's create, an object's DELETE) that
mostly wait, on an fsync or on a round trip, and run concurrently so that the waits
overlap (on a local disk the journal commits concurrent fsyncs together; on an object
store the requests are in flight at once).

A pool's tasks may wait only on tasks of pools named after it in :data:`ORDER`, so no
cycle of waiting threads can form."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# read: a split's files; write: files a row-level change writes (they wait on stats);
# filter: a table's columns; stats: a written part's column stats; io: storage calls.
ORDER = ("read", "write", "filter", "stats", "io")
IO_THREADS = 16

_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_LOCK = threading.Lock()


def pool(name: str) -> ThreadPoolExecutor:
    """The thread pool ``name`` (one of :data:`ORDER`) of this process."""
    if name not in ORDER:
        raise ValueError(f"unknown thread pool {name!r}")
    with _LOCK:
        found = _POOLS.get(name)
        if found is None or found[0] != os.getpid():
            workers = IO_THREADS if name == "io" else os.cpu_count() or 1
            found = _POOLS[name] = (os.getpid(), ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix=f"minipaimon-{name}"))
        return found[1]


def run_all(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``fn`` of each item, concurrently on the ``io`` pool (one item: in this thread);
    returns when every call has returned, so a failed call leaves none still running.
    Raises the first failure (in the items' order) once all are done. Interrupted while
    waiting, it cancels the calls not yet started (those running finish on their own).
    Not from a task of the ``io`` pool itself."""
    todo = list(items)
    if len(todo) <= 1:
        return [fn(item) for item in todo]
    futures = [pool("io").submit(fn, item) for item in todo]
    try:
        wait(futures)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    return [f.result() for f in futures]


def chunks(items: Sequence[T], n: int = IO_THREADS) -> list[Sequence[T]]:
    """``items`` cut into at most ``n`` runs of about equal length (for :func:`run_all`,
    one task a run: the calls of a run are made one after the other)."""
    k = min(n, len(items))
    return [items[i * len(items) // k:(i + 1) * len(items) // k] for i in range(k)]
