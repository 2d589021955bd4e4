"""Merge-on-read of a large split as a streaming k-way merge: bounded memory.

A primary-key split whose files hold more than :data:`STREAM_SPLIT_BYTES` is read run by
run in key order (:func:`~minipaimon_core.lsm.streaming_merge.key_chunks`): each run table
by table (:func:`~minipaimon_core.read.file_read.iter_file_as`), each key-aligned step
merged and handed on before the next is read, so a read holds about one table per sorted
run whatever the bucket holds. Smaller splits are read whole (:mod:`.read`), where reading
the files concurrently and probing keys before decoding other columns is faster.

The steps' rows are those of the whole-split merge: deduplicate with one key and no
``sequence.field`` keeps, per step, the rows :func:`~minipaimon_core.lsm.newest_wins.winners`
picks (the newest run holding a key wins); every other merge is ``merge`` of the step's
rows, runs oldest first. Pure but for the run readers it is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from ..format.manifest_file import DataFileMeta
from ..lsm.merge_engines import MergeConfig, merge
from ..lsm.newest_wins import winners
from ..lsm.streaming_merge import key_chunks

#: a split whose files hold more bytes than this (on disk) is merged as a stream
STREAM_SPLIT_BYTES = 64 << 20
#: rows of each table a streamed merge reads from a file
BATCH_ROWS = 65_536

__all__ = ["BATCH_ROWS", "STREAM_SPLIT_BYTES", "merged_steps", "streams"]


def streams(files: Sequence[DataFileMeta]) -> bool:
    """Whether a merged read of ``files`` streams (see module doc)."""
    return sum(f.fileSize for f in files) > STREAM_SPLIT_BYTES


def merged_steps(runs: Sequence[Iterator[pa.Table]], config: MergeConfig,
                 newest_wins: bool) -> Iterator[pa.Table]:
    """The merged rows of ``runs`` (oldest first, each key-sorted, with every column the
    merge needs and ``_VALUE_KIND``) step by step; ``newest_wins``: by probing keys
    (deduplicate, one key column, no ``sequence.field``), else by ``merge`` (deletes
    dropped). Columns the merge does not read (a row's file and position) pass through."""
    for parts in key_chunks(runs, config.key_columns):
        present = [p for p in parts if p is not None]
        if not newest_wins:
            out = merge(_concat(present), config, keep_deletes=False)
        else:
            newest_first = present[::-1]
            masks = winners([[p] for p in newest_first], config.key_columns[0], config.ignore_delete)
            kept = [p if m[0].all() else p.filter(pa.array(m[0])) for p, m in zip(newest_first, masks)]
            out = _concat([k for k in kept if k.num_rows] or kept[:1])
        if out.num_rows:
            yield out


def _concat(parts: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
