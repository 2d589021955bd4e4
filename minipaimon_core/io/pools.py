"""The process's shared thread pools, by name: one thread per core each, made anew in a
forked child (whose copy of a pool has no threads, so a task submitted to it would wait
forever).

A pool's tasks may wait only on tasks of pools named after it in :data:`ORDER`, so no
cycle of waiting threads can form."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

# read: a split's files; write: files a row-level change writes (they wait on stats);
# filter: a table's columns; stats: a written part's column stats.
ORDER = ("read", "write", "filter", "stats")

_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_LOCK = threading.Lock()


def pool(name: str) -> ThreadPoolExecutor:
    """The thread pool ``name`` (one of :data:`ORDER`) of this process."""
    if name not in ORDER:
        raise ValueError(f"unknown thread pool {name!r}")
    with _LOCK:
        found = _POOLS.get(name)
        if found is None or found[0] != os.getpid():
            found = _POOLS[name] = (os.getpid(), ThreadPoolExecutor(
                max_workers=os.cpu_count() or 1, thread_name_prefix=f"minipaimon-{name}"))
        return found[1]
