"""Assigning keys to dynamic buckets (``HASH_DYNAMIC``), as Paimon's ``HashBucketAssigner``.

Per partition the writer holds the partition's index as of the snapshot it started on
(:class:`PartitionIndex`: the sorted hashes of each bucket, and their number). A row whose key hash is there goes to that bucket; the hashes new to the
partition, in the order they first arrive, fill buckets by :func:`fill`:

* a key's lane is ``abs(hash % n)`` with ``n`` lanes (:func:`minipaimon_core.dynamic.routing.lanes`:
  ``dynamic-bucket.initial-buckets`` and ``dynamic-bucket.assigner-parallelism``, as
  Paimon's Spark writer counts its assigners; default 1); lane ``a`` owns the buckets ``b``
  with ``b % n == a``, as Paimon's ``n`` assigners each own theirs, so a new partition
  starts with ``n`` buckets;
* within a lane, new keys go to the lowest own bucket holding fewer than
  ``dynamic-bucket.target-row-num`` hashes, then to new buckets (the lowest unused own ids),
  ``target`` keys each;
* bucket ids stay below ``dynamic-bucket.max-buckets`` (Paimon 1.x; -1: unbounded): once a
  lane has no id left, its further new keys go to its existing buckets, full or not, in
  turn (Paimon picks one at random: any is right, readers do not care where a key is);
* unbounded, ids stay below 32767 (Java's ``Short.MAX_VALUE``): a key that would need
  another is an :class:`InvalidArgumentError` (raise the target).

Everything is NumPy over whole batches, one sort of a batch's hashes (:mod:`.sets`) for
all (:meth:`HashAssigner.route`): the distinct hashes are looked up with ``searchsorted`` in
the sorted index, new ones ranked by first arrival, buckets filled by runs of ids up to each
bucket's room, and each bucket's distinct hashes grouped for its index file.
Memory: 8 bytes per key of each partition the writer touches (int32 hash, int32 bucket).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..expressions.sets import iter_positions_by_value, positions_by_value, sort_with_positions
from ..format import bucket_hash
from ..schema.partition import bucket_runs

MAX_BUCKETS = 32767  # Paimon's bucket ids are below Short.MAX_VALUE


_FEW_BUCKETS = 16  # up to this many, a partition's files are searched one by one


@dataclass
class _Run:
    """Sorted distinct hashes (int32) and the bucket of each (an int32 array, or one bucket
    for the whole run: a bucket's index file as read)."""

    hashes: np.ndarray
    buckets: np.ndarray | int


class PartitionIndex:
    """The key hashes of one partition, and ``counts``: the hashes each bucket's index holds.

    A partition of few buckets is searched file by file (each file's hashes are sorted as
    decoded: nothing to build); more are merged into one sorted run once. The keys a writer
    adds are a run of their own."""

    def __init__(self, files: dict[int, np.ndarray] | None = None) -> None:
        """``files``: bucket -> its index file's hashes (sorted, distinct). A hash in two
        buckets (an index damaged by writers of another engine) maps to the lowest."""
        files = files or {}
        self.counts: dict[int, int] = {b: len(h) for b, h in files.items()}
        self._added = _Run(np.zeros(0, np.int32), np.zeros(0, np.int32))
        if len(files) <= _FEW_BUCKETS:
            self._runs = [_Run(files[b], b) for b in sorted(files)]
            return
        # (hash, bucket) packed in an int64 and sorted: by hash, then the lowest bucket
        packed = np.concatenate([(files[b].astype(np.int64) << np.int64(32)) | np.int64(b) for b in sorted(files)])
        packed.sort()
        hashes = (packed >> np.int64(32)).astype(np.int32)
        first = np.ones(len(hashes), dtype=bool)
        first[1:] = hashes[1:] != hashes[:-1]
        self._runs = [_Run(hashes[first], (packed[first] & np.int64(0xFFFFFFFF)).astype(np.int32))]

    @property
    def empty(self) -> bool:
        """Whether the partition has no key hash at all (no index file, none added)."""
        return not self.counts and not len(self._added.hashes)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of each hash (int32), -1 where the partition does not have it."""
        q, position = sort_with_positions(hashes)  # searched in order, once sorted
        out = np.empty(len(hashes), dtype=np.int32)
        out[position] = self.lookup_sorted(q)
        return out

    def lookup_sorted(self, q: np.ndarray) -> np.ndarray:
        """:meth:`lookup` of hashes ``q`` given in ascending order."""
        out = np.full(len(q), -1, dtype=np.int32)
        runs = [run for run in [self._added, *self._runs] if len(run.hashes)]
        todo = np.arange(len(q)) if runs else q[:0]
        for run in runs:
            if not len(todo):
                break
            at = np.minimum(np.searchsorted(run.hashes, q[todo]), len(run.hashes) - 1)
            hit = run.hashes[at] == q[todo]
            found = todo[hit]
            out[found] = run.buckets if isinstance(run.buckets, int) else run.buckets[at[hit]]
            todo = todo[~hit]
        return out

    def add(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Record new ``hashes`` (distinct, none in the index yet; sorted or not) in ``buckets``."""
        if not len(hashes):
            return
        added = np.bincount(buckets)
        for b in np.flatnonzero(added).tolist():
            self.counts[b] = self.counts.get(b, 0) + int(added[b])
        if len(hashes) > 1 and not bool((hashes[1:] > hashes[:-1]).all()):
            hashes, order = sort_with_positions(hashes)
            buckets = buckets[order]
        buckets = buckets.astype(np.int32, copy=False)
        run = self._added
        assert not isinstance(run.buckets, int)
        if len(run.hashes):
            at = np.searchsorted(run.hashes, hashes)
            hashes, buckets = np.insert(run.hashes, at, hashes), np.insert(run.buckets, at, buckets)
        self._added = _Run(hashes, buckets)


def lanes_of(hashes: np.ndarray, lanes: int) -> np.ndarray:
    """The lane of each key hash: Java's ``Math.abs(hash % lanes)``."""
    if lanes == 1:
        return np.zeros(len(hashes), dtype=np.int32)
    return bucket_hash.buckets(hashes, lanes)  # the same remainder as a bucket's


def fill(counts: dict[int, int], lanes: np.ndarray, num_lanes: int, target: int,
         where: str = "", max_buckets: int = -1) -> np.ndarray:
    """Buckets for new keys arriving in order with lanes ``lanes`` (integers) into a partition
    whose buckets hold ``counts`` keys (updated in place). Pure but for ``counts``. With
    ``max_buckets`` > 0 (REQUIRES: ``num_lanes`` <= ``max_buckets``) no new id reaches it:
    keys past the room go to the lane's buckets in turn.

    Raises InvalidArgumentError if, unbounded, a key needs a bucket id past
    :data:`MAX_BUCKETS` (``where`` names the partition in the message)."""
    limit = MAX_BUCKETS if max_buckets < 0 else min(max_buckets, MAX_BUCKETS)
    if num_lanes == 1 or not len(lanes):
        present = [0] if len(lanes) else []
    else:
        present = np.flatnonzero(np.bincount(lanes, minlength=num_lanes)).tolist()
    out = np.empty(len(lanes) if len(present) > 1 else 0, dtype=np.int32)
    for lane in present:
        mine = np.flatnonzero(lanes == lane) if len(present) > 1 else slice(None)
        k = len(lanes) if isinstance(mine, slice) else len(mine)
        buckets = _fill_lane(counts, lane, k, num_lanes, target, limit, where, max_buckets)
        if isinstance(mine, slice):  # one lane: its buckets are all
            return buckets
        out[mine] = buckets
    return out


def _fill_lane(counts: dict[int, int], lane: int, k: int, num_lanes: int, target: int, limit: int,
               where: str, max_buckets: int) -> np.ndarray:
    """:func:`fill` of ``k`` new keys of one lane (ids below ``limit``): runs of bucket ids,
    so ``counts`` is updated from the run lengths, never by counting the keys."""
    own = sorted(b for b in counts if b % num_lanes == lane)
    open_ = [b for b in own if counts[b] < target]
    room = np.array([target - counts[b] for b in open_], dtype=np.int64)
    cum = np.cumsum(room)
    in_open = min(k, int(cum[-1]) if len(cum) else 0)
    ids, runs = open_, np.clip(in_open - (cum - room), 0, room).tolist()  # each open bucket in turn
    rest, over, every = k - in_open, 0, np.zeros(0, np.int32)
    if rest:
        needed = -(-rest // target)
        taken = set(own)
        fresh: list[int] = []
        b = lane
        while len(fresh) < needed and b < limit:
            if b not in taken:
                fresh.append(b)
            b += num_lanes
        if len(fresh) < needed and max_buckets < 0:
            raise InvalidArgumentError(
                f"the write needs more than {MAX_BUCKETS} buckets in {where or 'a partition'}"
                f" of a dynamic-bucket table (at most {target} keys each, "
                "'dynamic-bucket.target-row-num'); raise that option")
        room_fresh = min(rest, len(fresh) * target)
        ids, runs = [*ids, *fresh], [*runs, *np.clip(room_fresh - target * np.arange(len(fresh)), 0, target).tolist()]
        over = rest - room_fresh
        every = np.asarray(sorted([*own, *fresh]), np.int32)
    for b, run in zip(ids, runs):
        if run:
            counts[b] = counts.get(b, 0) + run
    buckets = np.repeat(np.asarray(ids, np.int32), runs)
    if over:  # past max-buckets: the lane's buckets in turn
        cycle = np.arange(len(every))
        for b, c in zip(every.tolist(), (over // len(every) + (cycle < over % len(every))).tolist()):
            counts[b] = counts.get(b, 0) + c
        buckets = np.concatenate([buckets, every[np.arange(over) % len(every)]])
    return buckets


class HashAssigner:
    """Buckets of rows of one writer (see the module docs). ``load(partition)`` gives the
    partition's index files (bucket -> hashes) as of the writer's start, or {} when the
    write replaces the partition (an overwrite)."""

    def __init__(self, load: Any, target: int, lanes: int, max_buckets: int = -1) -> None:
        self._load = load
        self._target = target
        self._lanes = lanes
        self._max_buckets = max_buckets
        self._partitions: dict[tuple[Any, ...], PartitionIndex] = {}

    def assign(self, partition: tuple[Any, ...], hashes: np.ndarray, where: str = "") -> np.ndarray:
        """The bucket of each row of ``partition`` whose key hashes are ``hashes`` (int32);
        new keys are remembered. Raises InvalidArgumentError (no bucket left)."""
        return self.route(partition, hashes, where)[0]

    def route(self, partition: tuple[Any, ...], hashes: np.ndarray,
              where: str = "") -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """:meth:`assign`, and the distinct hashes each bucket gets (ascending int32 arrays).

        One sort of the hashes serves all: the distinct hashes are looked up in order, the
        new ones ranked by first arrival (a row's position among first occurrences, no
        second sort) and grouped by bucket by a radix sort of their bucket ids."""
        index = self._partitions.get(partition)
        if index is None:
            index = self._partitions[partition] = PartitionIndex(self._load(partition))
        if index.empty and len(hashes) and _distinct(hashes):
            # a first load (no key in the partition yet, none twice): every row a new key in
            # order of arrival; nothing to look up, no positions to carry
            rows = fill({}, lanes_of(hashes, self._lanes), self._lanes, self._target, where, self._max_buckets)
            placed = _sorted_by_bucket(hashes, rows)
            self._partitions[partition] = PartitionIndex(placed)
            return rows, placed
        s, position = sort_with_positions(hashes)
        first = np.ones(len(s), dtype=bool)  # the first of each distinct hash, sorted order
        np.not_equal(s[1:], s[:-1], out=first[1:])
        once = bool(first.all())  # no key twice (the common case)
        distinct, first_at = (s, position) if once else (s[first], position[first])
        buckets = index.lookup_sorted(distinct)  # positions ascend among equals: first_at
        unknown = np.flatnonzero(buckets < 0)
        all_new = once and len(unknown) == len(hashes)
        if all_new:  # every row a new key: the rows are the keys in order of arrival
            rows = fill(dict(index.counts), lanes_of(hashes, self._lanes), self._lanes, self._target,
                        where, self._max_buckets)
            buckets = rows[position]
            index.add(distinct, buckets)
        elif len(unknown):
            arrived = np.zeros(len(hashes), dtype=bool)  # rows where a new key first occurs
            arrived[first_at[unknown]] = True
            new = hashes[arrived]  # in order of first arrival
            assigned = fill(dict(index.counts), lanes_of(new, self._lanes), self._lanes, self._target,
                            where, self._max_buckets)
            rank = np.cumsum(arrived) - 1  # at a first occurrence: its rank among them
            buckets[unknown] = assigned[rank[first_at[unknown]]]
            index.add(distinct[unknown], buckets[unknown])
        if not all_new:
            rows = np.empty(len(hashes), dtype=np.int32)
            rows[position] = buckets if once else buckets[np.cumsum(first) - 1]
        return rows, _by_bucket(distinct, buckets)


def _sorted_by_bucket(hashes: np.ndarray, buckets: np.ndarray) -> dict[int, np.ndarray]:
    """``hashes`` (distinct) grouped by their ``buckets``, each group sorted; a bucket that
    is a few runs of rows (one lane's keys fill one bucket after another) is cut from them."""
    runs = bucket_runs(buckets)
    if runs is None:
        return {b: np.sort(hashes[at]) for b, at in iter_positions_by_value(buckets)}
    return {b: np.sort(np.concatenate([hashes[start:end] for start, end in spans])) for b, spans in runs.items()}


def _distinct(hashes: np.ndarray) -> bool:
    """Whether no hash is in ``hashes`` twice (one sort, no positions)."""
    s = np.sort(hashes)
    return not bool((s[1:] == s[:-1]).any())


def _by_bucket(hashes: np.ndarray, buckets: np.ndarray) -> dict[int, np.ndarray]:
    """``hashes`` (ascending) grouped by their ``buckets`` (non-negative), each ascending."""
    if not len(hashes):
        return {}
    return {b: hashes[at] for b, at in positions_by_value(buckets)}


__all__ = ["MAX_BUCKETS", "HashAssigner", "PartitionIndex", "fill", "lanes_of"]
