"""One key in one bucket across the writers of one commit (dynamic-bucket tables).

Writers of one commit (the tasks of a Spark job, the units of a distributed merge) assign
new keys each on their own, from the same snapshot. Two that both see a new key may put it
in two buckets of its partition (one had filled a bucket to ``target-row-num`` first).
Before the commit's first attempt the committer reconciles them: each such key goes to the
lowest of its buckets, its rows moved there out of the other writers' (uncommitted) files,
which are rewritten without them. A cross-partition key that writers of one commit put in
two *partitions* cannot be reconciled (which partition is right depends on an order of
their rows that Spark does not define): that commit fails with ``CommitConflictError``
``BUCKET_ASSIGNMENT``, telling to repartition the data by the primary key.

Files are read and written only for messages holding such keys (none in the common case).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from ..errors import CommitConflictError, ConflictReason
from ..expressions.sets import distinct
from ..file_format.data_file import KEY_PREFIX, read_data_file, write_data_file
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta
from ..io.fileio import FileIO
from ..metadata.commit_message import CommitMessage, placed_bytes
from ..schema.bucket import HASH_DYNAMIC, key_hashes, key_hashes64
from ..schema.schema import SchemaCache

Moves = dict[int, np.ndarray]
"""Target bucket -> the hashes a message's rows must take there."""


def hash_dtype(mode: str) -> Any:
    """The dtype of :attr:`CommitMessage.keyHashes` in bucket mode ``mode``."""
    return np.int32 if mode == HASH_DYNAMIC else np.uint64


def moves(messages: Sequence[CommitMessage], mode: str) -> dict[int, Moves]:
    """Message index -> the hashes to move and where (pure). Raises CommitConflictError
    (cross-partition tables) for a key placed in two partitions."""
    dtype = hash_dtype(mode)
    placed = [(i, m) for i, m in enumerate(messages) if m.keyHashes]
    writers = {m.writerId for _, m in placed}
    if len(placed) < 2 or (len(writers) == 1 and "" not in writers):  # one writer never disagrees with itself
        return {}
    hashes = [m.key_hashes(dtype) for _, m in placed]
    h = np.concatenate(hashes)
    # only hashes written twice can disagree (rare): find them by one sort, look closer there
    s = np.sort(h)
    twice = distinct(s[1:][s[1:] == s[:-1]])
    if not len(twice):
        return {}
    near = np.flatnonzero(np.isin(h, twice, kind="sort"))
    # the message of each near hash (its index in ``placed``), from where each message's hashes end
    of = np.searchsorted(np.cumsum([len(x) for x in hashes]), near, side="right")
    part_ids: dict[tuple[Any, ...], int] = {}
    part = np.array([part_ids.setdefault(tuple(m.partition), len(part_ids)) for _, m in placed])[of]
    bucket = np.array([m.bucket for _, m in placed])[of]
    owner = np.array([i for i, _ in placed])[of]
    h = h[near]
    if mode != HASH_DYNAMIC:
        _refuse_two_partitions(h, part, list(part_ids))
    order = np.lexsort((bucket, h, part))  # by partition, hash, then bucket ascending
    h, part, bucket, owner = h[order], part[order], bucket[order], owner[order]
    first = np.ones(len(h), dtype=bool)
    first[1:] = (h[1:] != h[:-1]) | (part[1:] != part[:-1])
    target = bucket[np.maximum.accumulate(np.where(first, np.arange(len(h)), 0))]  # the lowest
    wrong = bucket != target
    out: dict[int, Moves] = defaultdict(dict)
    for i, t in set(zip(owner[wrong].tolist(), target[wrong].tolist())):
        mine = wrong & (owner == i) & (target == t)
        out[i][t] = distinct(h[mine])
    return dict(out)


def _refuse_two_partitions(h: np.ndarray, part: np.ndarray, partitions: list[tuple[Any, ...]]) -> None:
    order = np.lexsort((part, h))
    hs, ps = h[order], part[order]
    clash = np.flatnonzero((hs[1:] == hs[:-1]) & (ps[1:] != ps[:-1]))
    if len(clash):
        a, b = partitions[int(ps[clash[0]])], partitions[int(ps[clash[0] + 1])]
        raise CommitConflictError(
            f"writers of one commit put {len(distinct(hs[clash]))} key(s) in different "
            f"partitions (e.g. {list(a)} and {list(b)}): in a cross-partition table the rows of "
            "one key must reach one writer; repartition the data by the primary key before "
            "writing (Spark: df.repartition(*primary_key))", ConflictReason.BUCKET_ASSIGNMENT)


class Reconciler:
    """Rewrites the messages of one commit so that no key is in two buckets of a partition."""

    def __init__(self, io: FileIO, layout: TableLayout, schemas: SchemaCache, mode: str) -> None:
        self._io = io
        self._layout = layout
        self._schemas = schemas
        self._mode = mode

    def reconcile(self, messages: Sequence[CommitMessage], todo: dict[int, Moves]
                  ) -> tuple[list[CommitMessage], list[tuple[CommitMessage, CommitMessage]]]:
        """``messages`` with the rows ``todo`` (:func:`moves`) names moved, and the (original,
        rewritten) pairs of the messages it rewrote (an added message's original has no
        files), for cleanup: the rewritten files are garbage if the commit fails, the
        originals' once it lands."""
        out: list[CommitMessage] = []
        pairs: list[tuple[CommitMessage, CommitMessage]] = []
        for i, m in enumerate(messages):
            if i not in todo:
                out.append(m)
                continue
            kept, moved = self._split(m, todo[i])
            out.append(kept)
            pairs.append((m, kept))
            for extra in moved:
                out.append(extra)
                pairs.append((msgspec.structs.replace(extra, newFiles=[], changelogFiles=[]), extra))
        return out, pairs

    def _split(self, m: CommitMessage, where: Moves) -> tuple[CommitMessage, list[CommitMessage]]:
        """``m`` without the rows of the keys in ``where``, and a message per target bucket
        with them."""
        every = np.concatenate(list(where.values()))
        kept: dict[str, list[DataFileMeta]] = {"data": [], "changelog": []}
        moved: dict[int, dict[str, list[DataFileMeta]]] = defaultdict(lambda: {"data": [], "changelog": []})
        for prefix, files in (("data", m.newFiles), ("changelog", m.changelogFiles)):
            for f in files:
                rows = read_data_file(self._io, self._layout, m.partitionPath, m.bucket, f)
                rows = rows.select([n for n in rows.column_names if not n.startswith(KEY_PREFIX)])
                schema = self._schemas.get(f.schemaId)
                h = key_hashes(rows, schema) if self._mode == HASH_DYNAMIC else key_hashes64(rows, schema)
                going = np.isin(h, every, kind="sort")
                if not going.any():
                    kept[prefix].append(f)
                    continue
                if not going.all():
                    kept[prefix].append(self._write(m, m.bucket, rows.filter(pa.array(~going)), f, prefix))
                for bucket, hashes in where.items():
                    mine = np.isin(h, hashes, kind="sort")
                    if mine.any():
                        moved[bucket][prefix].append(self._write(m, bucket, rows.filter(pa.array(mine)), f, prefix))
        dtype = hash_dtype(self._mode)
        rest = m.key_hashes(dtype)
        rest = rest[~np.isin(rest, every, kind="sort")]
        out = msgspec.structs.replace(m, newFiles=kept["data"], changelogFiles=kept["changelog"],
                                      keyHashes=placed_bytes([rest]) if len(rest) else b"")
        extra = [msgspec.structs.replace(m, bucket=b, newFiles=files["data"], changelogFiles=files["changelog"],
                                         keyHashes=placed_bytes([where[b]]))
                 for b, files in sorted(moved.items())]
        return out, extra

    def _write(self, m: CommitMessage, bucket: int, rows: pa.Table, f: DataFileMeta, prefix: str) -> DataFileMeta:
        out = write_data_file(self._io, self._layout, m.partitionPath, bucket, rows,
                              schema=self._schemas.get(f.schemaId), level=f.level,
                              file_source=f.fileSource or 0, prefix=prefix)
        return msgspec.structs.replace(out, creationTime=f.creationTime)


__all__ = ["Reconciler", "hash_dtype", "moves"]
