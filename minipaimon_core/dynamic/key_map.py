"""Where each key of a cross-partition table is: key -> (partition, bucket).

Paimon keeps no such index on disk for ``CROSS_PARTITION`` tables; its writers build one
from the table when they start (``IndexBootstrap``: a read of the latest snapshot's keys,
bucket by bucket), and so does minipaimon (:func:`build`). The map holds, per key:

* a 64-bit hash of the key (:func:`minipaimon_core.schema.bucket.key_hashes64`), sorted, found
  with ``searchsorted``;
* the key's columns themselves, in the same order: a hash that matches is confirmed by
  comparing the key values, so two keys with one hash are never taken for one;
* the partition (an id into :attr:`KeyLocations.partitions`) and the bucket, int32 each.

Memory is 16 bytes per key plus the key's own bytes (an int64 key: 24 bytes, 24 MB for
1M keys; bench/bench_dynamic.py measures the build). New keys of a write go to a small
sorted level of their own, merged into the main one when it grows past an eighth of it, so
a write of many small batches costs O(batch) per batch, not O(table).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from ..read.scan import Split
from ..read.table_scan import planner, read_split
from ..schema.bucket import key_hashes64
from ..schema.schema import TableSchema


@dataclass
class _Level:
    """Keys sorted by ``hashes`` (uint64), with their ``keys`` (key columns), partition ids
    and buckets in the same order."""

    hashes: np.ndarray
    keys: pa.Table
    pids: np.ndarray
    buckets: np.ndarray

    @classmethod
    def sorted_from(cls, hashes: np.ndarray, keys: pa.Table, pids: np.ndarray, buckets: np.ndarray) -> _Level:
        order = np.argsort(hashes)
        return cls(hashes[order], keys.take(pa.array(order)), pids[order].astype(np.int32),
                   buckets[order].astype(np.int32))

    def find(self, hashes: np.ndarray, keys: pa.Table) -> np.ndarray:
        """The position of each key (``hashes`` and ``keys`` aligned) in this level, -1 if
        absent. Every candidate with an equal hash is compared by value."""
        found = np.full(len(hashes), -1, dtype=np.int64)
        if not len(self.hashes) or not len(hashes):
            return found
        lo = np.searchsorted(self.hashes, hashes, side="left")
        run = np.searchsorted(self.hashes, hashes, side="right") - lo
        j = 0
        while True:
            active = np.flatnonzero((run > j) & (found < 0))
            if not len(active):
                return found
            candidates = lo[active] + j
            same = _equal_rows(keys.take(pa.array(active)), self.keys.take(pa.array(candidates)))
            found[active[same]] = candidates[same]
            j += 1

    @property
    def nbytes(self) -> int:
        return self.hashes.nbytes + self.keys.nbytes + self.pids.nbytes + self.buckets.nbytes


def _equal_rows(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Row-wise equality of two tables with the same columns (no nulls: primary keys)."""
    same = np.ones(a.num_rows, dtype=bool)
    for name in a.column_names:
        eq = pc.equal(a.column(name), b.column(name).cast(a.column(name).type))
        same &= np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False), dtype=bool)
    return same


class KeyLocations:
    """The key -> (partition, bucket) map of one writer (see the module docs), and the
    number of keys in each bucket (what new keys fill, ``dynamic-bucket.target-row-num``)."""

    def __init__(self, key_names: list[str], base: _Level | None = None,
                 partitions: list[tuple[Any, ...]] | None = None,
                 counts: dict[int, dict[int, int]] | None = None) -> None:
        self.key_names = key_names
        self.partitions: list[tuple[Any, ...]] = list(partitions or [])
        self._pid = {p: i for i, p in enumerate(self.partitions)}
        self.counts: dict[int, dict[int, int]] = {pid: dict(c) for pid, c in (counts or {}).items()}
        self._base = base
        self._delta: _Level | None = None

    def pid(self, partition: tuple[Any, ...]) -> int:
        """The id of ``partition`` (a new one for a partition not seen yet)."""
        found = self._pid.get(partition)
        if found is None:
            found = self._pid[partition] = len(self.partitions)
            self.partitions.append(partition)
        return found

    def __len__(self) -> int:
        return sum(len(lv.hashes) for lv in self._levels())

    def _levels(self) -> list[_Level]:
        return [lv for lv in (self._delta, self._base) if lv is not None]

    def _found(self, hashes: np.ndarray, keys: pa.Table
               ) -> tuple[list[tuple[_Level, np.ndarray, np.ndarray]], np.ndarray]:
        """Where the map holds ``keys``: per level holding some, newest first, (level, rows
        of ``keys``, their slots in it), each key in one level at most; and the rows it
        does not hold."""
        todo = np.arange(len(hashes))
        found = []
        for level in self._levels():
            if not len(todo):
                break
            at = level.find(hashes[todo], keys.take(pa.array(todo)))
            hit = at >= 0
            found.append((level, todo[hit], at[hit]))
            todo = todo[~hit]
        return found, todo

    def lookup(self, hashes: np.ndarray, keys: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """(partition id, bucket) of each key, -1 / -1 for keys not in the map."""
        pids = np.full(len(hashes), -1, dtype=np.int32)
        buckets = np.full(len(hashes), -1, dtype=np.int32)
        for level, rows, slots in self._found(hashes, keys)[0]:
            pids[rows] = level.pids[slots]
            buckets[rows] = level.buckets[slots]
        return pids, buckets

    def place(self, hashes: np.ndarray, keys: pa.Table, pids: np.ndarray, buckets: np.ndarray) -> None:
        """Record distinct keys at (``pids``, ``buckets``): keys in the map move there, the
        others are added. Bucket counts are the caller's (:attr:`counts`)."""
        found, todo = self._found(hashes, keys)
        for level, rows, slots in found:
            level.pids[slots] = pids[rows]
            level.buckets[slots] = buckets[rows]
        if not len(todo):
            return
        new = _Level.sorted_from(hashes[todo], keys.take(pa.array(todo)).select(self.key_names),
                                 pids[todo], buckets[todo])
        if self._delta is not None:
            new = _merge(self._delta, new)
        base_size = len(self._base.hashes) if self._base is not None else 0
        if self._base is None or len(new.hashes) * 8 > base_size:
            self._base, self._delta = (new if self._base is None else _merge(self._base, new)), None
        else:
            self._delta = new

    def fork(self) -> KeyLocations:
        """A copy a writer may change (the hashes and keys are shared, read-only)."""
        base = None
        if self._base is not None:
            base = _Level(self._base.hashes, self._base.keys, self._base.pids.copy(), self._base.buckets.copy())
        out = KeyLocations(self.key_names, base, self.partitions, self.counts)
        if self._delta is not None:
            d = self._delta
            out._delta = _Level(d.hashes, d.keys, d.pids.copy(), d.buckets.copy())
        return out


def _merge(a: _Level, b: _Level) -> _Level:
    keys = pa.concat_tables([a.keys, b.keys.cast(a.keys.schema)])
    return _Level.sorted_from(np.concatenate([a.hashes, b.hashes]), keys,
                              np.concatenate([a.pids, b.pids]), np.concatenate([a.buckets, b.buckets]))


# -- building the map from a table ------------------------------------------------------------

_cache: dict[tuple[str, int, int], KeyLocations] = {}
_cache_lock = threading.Lock()


def build(ctx: TableContext, snapshot: Snapshot | None, ttl_ms: int | None, threads: int) -> KeyLocations:
    """The map of the keys live in ``snapshot``: its merged rows' keys, split by split
    (``threads`` at once, ``cross-partition-upsert.bootstrap-parallelism``); with a TTL
    (``cross-partition-upsert.index-ttl``) the buckets whose files are all older are left
    out, as Paimon does (their keys may then be written twice). The last map built in this
    process is kept (Spark tasks on one worker share it) and forked for each writer."""
    schema = ctx.schema
    keys = list(schema.trimmed_primary_keys)
    if snapshot is None:
        return KeyLocations(keys)
    cache_key = (ctx.path, snapshot.id, schema.id)
    with _cache_lock:
        found = _cache.get(cache_key) if ttl_ms is None else None
    if found is not None:
        return found.fork()
    built = _build(ctx, snapshot, keys, ttl_ms, threads)
    if ttl_ms is None:
        with _cache_lock:
            _cache.clear()
            _cache[cache_key] = built
    return built.fork()


def _build(ctx: TableContext, snapshot: Snapshot, keys: list[str], ttl_ms: int | None, threads: int) -> KeyLocations:
    splits = planner(ctx).plan(snapshot, None, keys)
    if ttl_ms is not None:
        now = int(time.time() * 1000)
        splits = [s for s in splits if any(f.creationTime + ttl_ms >= now for f in s.files)]
    locations = KeyLocations(keys)
    for s in splits:
        locations.pid(tuple(s.partition))

    def read(split: Split) -> pa.Table:
        return pa.Table.from_batches(list(read_split(ctx, split)), schema=_key_schema(ctx.schema, keys))

    workers = max(1, min(threads, len(splits), os.cpu_count() or 1))
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            tables = list(pool.map(read, splits))
    else:
        tables = [read(s) for s in splits]
    if not splits:
        return locations
    sizes = np.array([t.num_rows for t in tables], dtype=np.int64)
    pids = np.repeat(np.array([locations.pid(tuple(s.partition)) for s in splits], np.int32), sizes)
    buckets = np.repeat(np.array([s.bucket for s in splits], np.int32), sizes)
    for s, n in zip(splits, sizes.tolist()):
        if n:
            per = locations.counts.setdefault(locations.pid(tuple(s.partition)), {})
            per[s.bucket] = per.get(s.bucket, 0) + n
    all_keys = pa.concat_tables(tables).combine_chunks()
    hashes = key_hashes64(all_keys, ctx.schema)
    locations._base = _Level.sorted_from(hashes, all_keys, pids, buckets)
    return locations


def _key_schema(schema: TableSchema, keys: list[str]) -> pa.Schema:
    arrow = schema.arrow_schema()
    return pa.schema([arrow.field(k) for k in keys])


__all__ = ["KeyLocations", "build"]
