"""Spilling a primary-key writer's buffer to local disk, and merging the spilled runs.

```
buffer full ──► merge the bucket's rows (one sorted run) ──► Arrow IPC file, zstd, local temp
prepare_commit ──► runs of the bucket (spilled files + what is still buffered)
               ──► k-way merge in key-range chunks ──► one sorted run of level-0 files
```

A :class:`SpillDirectory` owns one temp directory (under the system temp dir, ``TMPDIR``)
and removes it when the writer commits, aborts, or is garbage-collected. The k-way merge is
vectorised: each step takes, from every run, the rows whose key is at most the smallest
"last buffered key" among the runs, and merges that chunk with the merge engine; every key's
rows from every run are in the same chunk, so the piecewise property of the engines makes
the result equal to merging everything at once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from ..errors import StorageError

SPILL_BATCH_ROWS = 65_536
_IPC_OPTIONS = ipc.IpcWriteOptions(compression="zstd")


class SpilledRun:
    """One key-sorted run in a local Arrow IPC file; read back batch by batch."""

    def __init__(self, path: str, rows: int) -> None:
        self.path = path
        self.rows = rows

    def batches(self) -> Iterator[pa.RecordBatch]:
        # Plain reads, not a memory map: mapped pages stay in the process's resident set
        # until the whole run is read, so RSS would grow with the spilled bytes.
        with pa.OSFile(self.path, "rb") as source:
            reader = ipc.open_stream(source)
            yield from reader


class SpillDirectory:
    """A private temp directory of spilled runs; ``cleanup`` (or garbage collection) removes it."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="minipaimon-spill-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, True)

    def spill(self, run: pa.Table, key_columns: Sequence[str]) -> SpilledRun:
        """Write a key-sorted table; batches never split the rows of one key."""
        path = os.path.join(self.path, f"run-{uuid.uuid4().hex}.arrows")
        try:
            with pa.OSFile(path, "wb") as sink, ipc.new_stream(sink, run.schema, options=_IPC_OPTIONS) as out:
                for start, stop in _cuts(run, key_columns):
                    out.write_table(run.slice(start, stop - start))
        except OSError as e:  # ENOSPC, EIO of the local temp directory
            raise StorageError(
                f"spilling the write buffer to {path} failed ({e}): free space in the temp "
                "directory (TMPDIR) or raise 'write-buffer-size'; nothing was committed") from e
        return SpilledRun(path, run.num_rows)

    def remove(self, run: SpilledRun) -> None:
        os.unlink(run.path)

    def cleanup(self) -> None:
        self._finalizer()


def _cuts(run: pa.Table, key_columns: Sequence[str]) -> list[tuple[int, int]]:
    """Batch ranges of about SPILL_BATCH_ROWS rows, each cut moved past a repeated key (a
    merged run repeats a key at most in adjacent rows)."""
    bounds = list(range(0, run.num_rows, SPILL_BATCH_ROWS)) + [run.num_rows]
    out, start = [], 0
    for cut in bounds[1:-1]:
        while cut < run.num_rows and _same_key(run, key_columns, cut - 1, cut):
            cut += 1
        if cut > start:
            out.append((start, cut))
            start = cut
    if run.num_rows > start:
        out.append((start, run.num_rows))
    return out


def _same_key(run: pa.Table, key_columns: Sequence[str], i: int, j: int) -> bool:
    return all(run.column(k)[i] == run.column(k)[j] for k in key_columns)


def merge_runs(runs: Sequence[Iterator[pa.Table]], key_columns: Sequence[str],
               merge: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
    """Merge key-sorted runs into key-sorted merged chunks (every key in exactly one chunk).

    ``runs`` yield tables sorted by ``key_columns`` that never split one key's rows across
    two tables; ``merge`` merges a chunk (concatenated rows of several runs).
    """
    sources = [_Run(r) for r in runs]
    sources = [s for s in sources if s.fill()]
    while sources:
        owner = min(range(len(sources)), key=lambda i: sources[i].last_key(key_columns))
        boundary = sources[owner].last_key(key_columns)
        parts = []
        for i, source in enumerate(sources):
            count = source.size() if i == owner else _count_at_most(source.buffer, key_columns, boundary)
            if count:
                parts.append(source.take(count))
        yield merge(pa.concat_tables(parts))
        sources = [s for s in sources if s.fill()]


class _Run:
    def __init__(self, tables: Iterator[pa.Table]) -> None:
        self._tables = tables
        self.buffer: pa.Table = pa.table({})

    def size(self) -> int:
        return self.buffer.num_rows

    def fill(self) -> bool:
        """Make the buffer non-empty; False when the run is exhausted."""
        while self.buffer.num_rows == 0:
            nxt = next(self._tables, None)
            if nxt is None:
                return False
            self.buffer = nxt
        return True

    def last_key(self, key_columns: Sequence[str]) -> tuple[Any, ...]:
        last = self.buffer.num_rows - 1
        return tuple(_sort_key(self.buffer.column(k)[last].as_py()) for k in key_columns)

    def take(self, count: int) -> pa.Table:
        head, self.buffer = self.buffer.slice(0, count), self.buffer.slice(count)
        return head


def _sort_key(value: Any) -> tuple[int, Any]:
    """Python order matching Arrow's sort of a key value (NaN after every number)."""
    if isinstance(value, float) and value != value:
        return (1, 0.0)
    return (0, value)


def _count_at_most(table: pa.Table, key_columns: Sequence[str], boundary: tuple[Any, ...]) -> int:
    """Rows of the key-sorted ``table`` whose key is <= ``boundary`` (a prefix of it)."""
    at_most: pa.Array | None = None
    equal_so_far: pa.Array | None = None
    for name, (nan_rank, value) in zip(key_columns, boundary):
        column = table.column(name)
        less, equal = _less_equal(column, nan_rank, value)
        term = less if equal_so_far is None else pc.and_(equal_so_far, less)
        at_most = term if at_most is None else pc.or_(at_most, term)
        equal_so_far = equal if equal_so_far is None else pc.and_(equal_so_far, equal)
    assert at_most is not None and equal_so_far is not None
    mask = np.asarray(pc.or_(at_most, equal_so_far).to_numpy(zero_copy_only=False), dtype=bool)
    return int(mask.size if mask.all() else np.argmin(mask))


def _less_equal(column: pa.ChunkedArray, nan_rank: int, value: Any) -> tuple[pa.Array, pa.Array]:
    """(column < value, column == value), with NaN equal to NaN and after every number."""
    if not pa.types.is_floating(column.type):
        scalar = pa.scalar(value, column.type)
        return pc.less(column, scalar), pc.equal(column, scalar)
    is_nan = pc.is_nan(column)
    if nan_rank:  # the boundary is NaN: every number is less
        return pc.invert(is_nan), is_nan
    scalar = pa.scalar(value, column.type)
    return pc.less(column, scalar), pc.equal(column, scalar)
