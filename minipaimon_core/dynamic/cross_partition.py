"""Routing the rows of a cross-partition table (``CROSS_PARTITION``: the primary key leaves
out a partition column, so an update may name another partition than the key's).

As Paimon's ``GlobalIndexAssigner`` does, per key of a written batch, with the key's place
before the batch (``L0``, from :class:`~.key_map.KeyLocations`) and the partitions of its
rows in input order:

=================  ===========================================  ==========================
merge engine       where the key ends up (partition)            which rows are written
=================  ===========================================  ==========================
deduplicate        the partition of its last row                the rows of that partition;
                                                                and a ``-D`` of the key in
                                                                ``L0`` if it moved
partial-update,    ``L0``'s partition (the key stays), else     all rows, their partition
aggregation        the partition of its first row               columns set to that one
first-row          ``L0``'s partition, else its first row's     the rows of that partition
                                                                (the others are ignored)
=================  ===========================================  ==========================

A key staying in ``L0``'s partition keeps its bucket; any other gets a new bucket there,
filled by ``dynamic-bucket.target-row-num`` (:func:`~.assigner.fill`, in order of arrival).
Within one batch only a key's rows in its final partition matter for ``deduplicate`` and
``first-row``: a key whose rows go partition A, B, A ends in A with its rows of A.

Vectorised: rows are grouped by key with one Arrow sort, each key is looked up once, and
the decisions above are NumPy over the keys.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..expressions.sets import distinct
from ..expressions.stats import to_stat
from ..format.kinds import VALUE_KIND, RowKind
from ..schema.bucket import key_hashes64
from ..schema.partition import PartitionSpec, Positions, group_indices
from ..schema.schema import TableSchema
from .assigner import fill, lanes_of
from .key_map import KeyLocations

_ROW = "__mp_row"


@dataclass(frozen=True)
class Routed:
    """Rows for one (partition, bucket), the hashes of the keys they place there (distinct)
    and of the keys they retract from there (a cross-partition key that moved away; its
    hash no longer belongs to the place, even if an earlier batch of the writer put it there)."""

    partition: tuple[Any, ...]
    bucket: int
    rows: pa.Table
    positions: Positions  # of ``rows`` in the routed table (the writer numbers them so)
    placed: np.ndarray
    retracted: np.ndarray | None = None


class CrossPartitionRouter:
    """Routes the batches of one writer. ``locations()`` builds the key map when first
    needed (the table's keys at the writer's start; an empty map for an overwrite)."""

    def __init__(self, schema: TableSchema, locations: Callable[[], KeyLocations], engine: str,
                 target: int, lanes: int) -> None:
        self._schema = schema
        self._spec = PartitionSpec.of(schema)
        self._keys = list(schema.trimmed_primary_keys)
        self._make = locations
        self._map: KeyLocations | None = None
        self._engine = engine
        self._target = target
        self._lanes = lanes

    def route(self, table: pa.Table) -> list[Routed]:
        """The rows of ``table`` (user columns, ``_VALUE_KIND`` if any: +I if not) by
        (partition, bucket); a retraction is at the position of the row that moved its key
        away. Raises InvalidArgumentError (a partition with no bucket left)."""
        if table.num_rows == 0:
            return []
        if VALUE_KIND not in table.column_names:  # the retractions get theirs
            table = table.append_column(VALUE_KIND, pa.array(np.zeros(table.num_rows, dtype=np.int8)))
        if self._map is None:
            self._map = self._make()
        where = self._map
        row_pid = self._row_partitions(table, where)
        # group rows by key: sorted by key, then input order
        n = table.num_rows
        keyed = table.select(self._keys).append_column(_ROW, pa.array(np.arange(n, dtype=np.int64)))
        order = pc.sort_indices(keyed, sort_keys=[(k, "ascending") for k in [*self._keys, _ROW]]).to_numpy()
        sorted_keys = keyed.select(self._keys).take(pa.array(order))
        starts = _group_starts(sorted_keys)
        group_of_sorted = np.cumsum(starts) - 1
        group = np.empty(n, dtype=np.int64)
        group[order] = group_of_sorted
        start_at = np.flatnonzero(starts)
        end_at = np.append(start_at[1:], n) - 1
        first_row, last_row = order[start_at], order[end_at]
        keys = sorted_keys.take(pa.array(start_at))
        hashes = key_hashes64(keys, self._schema)
        old_pid, old_bucket = where.lookup(hashes, keys)
        known = old_pid >= 0
        if self._engine == "deduplicate":
            final_pid = row_pid[last_row]
        else:
            final_pid = np.where(known, old_pid, row_pid[first_row]).astype(np.int32)
        stays = known & (old_pid == final_pid)
        final_bucket = np.where(stays, old_bucket, -1).astype(np.int32)
        moved = known & ~stays & (self._engine == "deduplicate")
        for pid, bucket in zip(old_pid[moved].tolist(), old_bucket[moved].tolist()):
            per = where.counts.setdefault(pid, {})
            per[bucket] = per.get(bucket, 0) - 1
        self._assign_new(where, ~stays, first_row, final_pid, final_bucket, hashes)
        where.place(hashes[~stays], keys.take(pa.array(np.flatnonzero(~stays))),
                    final_pid[~stays], final_bucket[~stays])
        # the rows each key keeps, where they go
        row_final = final_pid[group]
        if self._engine in ("deduplicate", "first-row"):
            keep = row_pid == row_final
            rows = table.filter(pa.array(keep))
            positions = np.flatnonzero(keep)
        else:
            keep = np.ones(n, dtype=bool)
            rows = self._set_partitions(table, row_final, row_pid != row_final, where)
            positions = np.arange(n, dtype=np.int64)
        out_pid = row_final[keep]
        out_bucket = final_bucket[group][keep]
        out_placed = np.ones(len(out_pid), dtype=bool)
        if moved.any():
            retract = self._set_partitions(table.take(pa.array(last_row[moved])), old_pid[moved],
                                           np.ones(int(moved.sum()), dtype=bool), where)
            kinds = pa.array(np.full(retract.num_rows, RowKind.DELETE, dtype=np.int8))
            retract = retract.set_column(retract.column_names.index(VALUE_KIND), VALUE_KIND, kinds)
            rows = pa.concat_tables([rows, retract.cast(rows.schema)])
            out_pid = np.concatenate([out_pid, old_pid[moved]])
            out_bucket = np.concatenate([out_bucket, old_bucket[moved]])
            out_placed = np.concatenate([out_placed, np.zeros(int(moved.sum()), dtype=bool)])
            positions = np.concatenate([positions, last_row[moved].astype(np.int64)])
        out_hash = np.concatenate([hashes[group][keep], hashes[moved]]) if moved.any() else hashes[group][keep]
        return _split(rows, positions, out_pid, out_bucket, out_placed, out_hash, where)

    def _row_partitions(self, table: pa.Table, where: KeyLocations) -> np.ndarray:
        """The partition id of each row (new partitions get ids)."""
        out = np.zeros(table.num_rows, dtype=np.int32)
        if not self._spec.keys:
            out[:] = where.pid(())
            return out
        for values, idx in group_indices(table, self._spec.keys):
            stat = [to_stat(v, t) for v, t in zip(values, self._spec.types)]
            self._spec.path(stat)  # refuse a too-long partition value before anything is written
            out[idx.to_numpy()] = where.pid(tuple(stat))
        return out

    def _assign_new(self, where: KeyLocations, new: np.ndarray, first_row: np.ndarray,
                    final_pid: np.ndarray, final_bucket: np.ndarray, hashes: np.ndarray) -> None:
        """Buckets for the keys that need one (``new``), partition by partition, in order of
        their first row."""
        todo = np.flatnonzero(new)
        if not len(todo):
            return
        todo = todo[np.argsort(first_row[todo])]  # distinct rows: no ties
        lanes = lanes_of((hashes[todo] >> np.uint64(32)).astype(np.uint32).view(np.int32), self._lanes)
        for pid in np.unique(final_pid[todo]).tolist():
            mine = final_pid[todo] == pid
            counts = where.counts.setdefault(pid, {})
            final_bucket[todo[mine]] = fill(counts, lanes[mine], self._lanes, self._target,
                                            f"partition {list(where.partitions[pid])}")

    def _set_partitions(self, rows: pa.Table, pids: np.ndarray, change: np.ndarray,
                        where: KeyLocations) -> pa.Table:
        """``rows`` with the partition columns of the rows in ``change`` set to partition
        ``pids`` (one id per row)."""
        if not change.any() or not self._spec.keys:
            return rows
        for i, name in enumerate(self._spec.keys):
            t = self._spec.types[i]
            values = _arrow_values([where.partitions[p][i] for p in range(len(where.partitions))], t)
            new = values.take(pa.array(pids))
            col = rows.column(name)
            merged = pc.if_else(pa.array(change), new, col.cast(t))
            at = rows.column_names.index(name)
            rows = rows.set_column(at, rows.schema.field(at), merged.cast(rows.schema.field(at).type))
        return rows


def _group_starts(sorted_keys: pa.Table) -> np.ndarray:
    """Whether each row of a key-sorted table starts a new key."""
    n = sorted_keys.num_rows
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    if n > 1:
        for name in sorted_keys.column_names:
            col = sorted_keys.column(name)
            differ = pc.not_equal(col.slice(1), col.slice(0, n - 1))
            starts[1:] |= np.asarray(pc.fill_null(differ, True).to_numpy(zero_copy_only=False), dtype=bool)
    return starts


def _arrow_values(values: list[Any], t: pa.DataType) -> pa.Array:
    """Stats-domain partition values (:func:`minipaimon_core.expressions.stats.to_stat`) as an Arrow
    array of the column's type."""
    if pa.types.is_date(t):
        return pa.array(values, pa.int32()).cast(t)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t):
        return pa.array(values, pa.int64()).cast(t)
    if pa.types.is_time32(t):
        return pa.array(values, pa.int32()).cast(t)
    if pa.types.is_decimal(t):
        return pa.array([None if v is None else decimal.Decimal(v).scaleb(-t.scale) for v in values], t)
    return pa.array(values, t)


def _split(rows: pa.Table, positions: np.ndarray, pids: np.ndarray, buckets: np.ndarray,
           placed: np.ndarray, hashes: np.ndarray, where: KeyLocations) -> list[Routed]:
    """``rows`` (at ``positions`` of the routed table) by (partition, bucket)."""
    code = (pids.astype(np.int64) << 32) | buckets.astype(np.int64)
    order = np.argsort(code)  # rows carry their positions: order within a bucket is free
    cuts = np.flatnonzero(np.diff(code[order])) + 1
    out = []
    for part in np.split(order, cuts):
        if not len(part):
            continue
        pid, bucket = int(pids[part[0]]), int(buckets[part[0]])
        mine = placed[part]
        out.append(Routed(where.partitions[pid], bucket, rows.take(pa.array(part)), positions[part],
                          distinct(hashes[part][mine]), distinct(hashes[part][~mine])))
    return out


__all__ = ["CrossPartitionRouter", "Routed"]
