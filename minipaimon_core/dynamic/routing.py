"""Which (partition, bucket) each written row goes to, for every bucket mode: the one step
between numbering a primary-key writer's rows and buffering them (:mod:`minipaimon_core.write.kv_writer`).

* ``HASH_FIXED``: Paimon's hash of the bucket key modulo ``bucket``;
* ``HASH_DYNAMIC``: the bucket the partition's HASH index gives the key, new keys assigned
  (:class:`~.assigner.HashAssigner`); each part carries the key hashes it places (the
  committer adds them to the bucket's index file);
* ``CROSS_PARTITION``: :class:`~.cross_partition.CrossPartitionRouter` (rows may change
  partition, retractions are added); each part carries the 64-bit hashes of the keys it places.

A router is built for one writer from where the writer starts: ``base`` is the snapshot
its sequence numbers start on (Spark tasks of one job share it, so they assign alike), and
``overwrite`` says the write replaces what it writes (the table's index is not loaded: every
key is new, as Paimon's ``SimpleHashBucketAssigner`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..format.bucket_names import POSTPONE_BUCKET
from ..format.options import Options
from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from ..schema.bucket import (
    CROSS_PARTITION,
    HASH_DYNAMIC,
    POSTPONE_MODE,
    bucket_ids,
    bucket_mode,
    key_hashes,
)
from ..schema.partition import PartitionSpec, iter_by_bucket, positions_within
from ..schema.schema import TableSchema
from . import key_map
from .assigner import HashAssigner
from .cross_partition import CrossPartitionRouter, Routed
from .hash_index import HashIndexIO

Router = Callable[[pa.Table], Iterable[Routed]]
"""Rows to their (partition, bucket)s, each part with its rows' positions in the routed table
(the writer numbers rows by them, as in input order). Every check is made before it
returns; the rows of each (partition, bucket) may be copied only when the iterable reaches it."""


def _no_hashes() -> np.ndarray:
    return np.zeros(0, dtype=np.int32)


def fixed_router(schema: TableSchema) -> Router:
    """Rows of a fixed-bucket (or bucket-unaware) table by partition and bucket."""
    spec = PartitionSpec.of(schema)

    def route(table: pa.Table) -> Iterator[Routed]:
        # every partition's buckets found (and checked) before the first bucket is copied
        parts = [(values, at, iter_by_bucket(part, bucket_ids(part, schema)))
                 for values, part, at in spec.split_at(table)]
        return (Routed(tuple(values), bucket, rows, positions_within(at, within), _no_hashes())
                for values, at, pieces in parts for bucket, rows, within in pieces)
    return route


def lanes(options: Options) -> int:
    """How many of Paimon's bucket assigners a writer acts as (each owns the bucket ids of
    its lane: :mod:`.assigner`), counted as Paimon's Spark writer counts them:
    ``dynamic-bucket.assigner-parallelism`` (unset: 1, one writer), at most
    ``dynamic-bucket.initial-buckets`` when that is set (alone, it is the count) and at most
    ``dynamic-bucket.max-buckets`` when that bounds the buckets."""
    initial = options["dynamic-bucket.initial-buckets"]
    parallelism = options["dynamic-bucket.assigner-parallelism"]
    max_buckets = options["dynamic-bucket.max-buckets"]
    if parallelism is None:
        n = initial or 1
    else:
        n = min(initial, parallelism) if initial else parallelism
    return min(n, max_buckets) if max_buckets > 0 else n


def dynamic_router(schema: TableSchema, load: Callable[[tuple[Any, ...]], dict[int, np.ndarray]],
                   target: int, lanes: int, max_buckets: int = -1) -> Router:
    """Rows of a ``HASH_DYNAMIC`` table by partition and assigned bucket; ``load`` gives a
    partition's index files (bucket -> hashes) as of the writer's start."""
    spec = PartitionSpec.of(schema)
    assigner = HashAssigner(load, target, lanes, max_buckets)

    def route(table: pa.Table) -> Iterator[Routed]:
        # every partition's keys assigned (an error raised) before the first bucket is copied
        parts = []
        for values, part, at in spec.split_at(table):
            buckets, placed = assigner.route(tuple(values), key_hashes(part, schema), f"partition {values}")
            parts.append((tuple(values), at, iter_by_bucket(part, buckets), placed))
        return (Routed(values, bucket, rows, positions_within(at, within), placed[bucket])
                for values, at, pieces, placed in parts for bucket, rows, within in pieces)
    return route


def postpone_router(schema: TableSchema) -> Router:
    """Rows of a postponed-bucket table (``bucket`` = -2) by partition, all into bucket -2
    (``bucket-postpone``): a compaction puts them in real buckets (maintenance.postpone)."""
    spec = PartitionSpec.of(schema)

    def route(table: pa.Table) -> list[Routed]:
        return [Routed(tuple(values), POSTPONE_BUCKET, part, at, _no_hashes())
                for values, part, at in spec.split_at(table)]
    return route


def router_for(ctx: TableContext, base_id: int | None, overwrite: bool) -> Router:
    """The router of a writer of ``ctx``'s table starting on snapshot ``base_id``."""
    schema = ctx.schema
    mode = bucket_mode(schema)
    if mode == POSTPONE_MODE:
        return postpone_router(schema)
    if mode not in (HASH_DYNAMIC, CROSS_PARTITION):
        return fixed_router(schema)
    options = ctx.options
    target = options["dynamic-bucket.target-row-num"]
    n = lanes(options)
    base: Snapshot | None = None
    if base_id is not None and not overwrite:  # expired meanwhile: the latest (the commit checks)
        base = ctx.snapshots.try_get(base_id) or ctx.snapshots.latest()
    if mode == HASH_DYNAMIC:
        index = HashIndexIO(ctx.io, ctx.layout, ctx.vectors)
        return dynamic_router(schema, lambda partition: index.partition(base, partition), target, n,
                              options["dynamic-bucket.max-buckets"])
    # max-buckets bounds HASH_DYNAMIC only, as in Paimon (its GlobalIndexAssigner has none)
    ttl = options["cross-partition-upsert.index-ttl"]
    threads = options["cross-partition-upsert.bootstrap-parallelism"]
    router = CrossPartitionRouter(schema, lambda: key_map.build(ctx, base, ttl, threads),
                                  options["merge-engine"], target, n)
    return router.route


__all__ = ["Router", "Routed", "dynamic_router", "fixed_router", "lanes", "postpone_router",
           "router_for"]
