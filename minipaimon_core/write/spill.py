"""Spilling a primary-key writer's buffer to local disk, and merging the spilled runs.

```
buffer full ──► merge the bucket's rows (one sorted run) ──► Arrow IPC file, zstd, local temp
prepare_commit ──► runs of the bucket (spilled files + what is still buffered)
               ──► k-way merge in key-range chunks ──► one sorted run of level-0 files
```

A :class:`SpillDirectory` owns one temp directory (under the system temp dir, ``TMPDIR``)
and removes it when the writer commits, aborts, or is garbage-collected. The k-way merge is
vectorised (:mod:`minipaimon_core.lsm.streaming_merge`): each step takes, from every run,
the rows whose key is at most the smallest "last buffered key" among the runs, and merges
that chunk with the merge engine; every key's rows from every run are in the same chunk, so
the piecewise property of the engines makes the result equal to merging everything at once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.ipc as ipc

from ..errors import StorageError
from ..lsm.streaming_merge import key_chunks

SPILL_BATCH_ROWS = 65_536
_IPC_OPTIONS = ipc.IpcWriteOptions(compression="lz4")


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
    """Merge key-sorted runs into key-sorted merged chunks (every key in exactly one chunk),
    see :func:`minipaimon_core.lsm.streaming_merge.key_chunks`; ``merge`` merges a chunk
    (concatenated rows of several runs, in the order of ``runs``)."""
    for parts in key_chunks(runs, key_columns):
        present = [p for p in parts if p is not None]
        yield merge(pa.concat_tables(present) if len(present) > 1 else present[0])
