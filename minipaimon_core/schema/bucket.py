"""Bucket assignment, as Paimon's writers do it (fixed-bucket tables), and the bucket mode
of a table (Paimon's ``BucketMode``).

``bucket = abs(hash % num_buckets)`` (Java's remainder) where ``hash`` is Paimon's
``BinaryRow.hashCode()`` of the row's bucket-key values: the murmur3 hash (seed 42) of the
BinaryRow bytes (:func:`minipaimon_core.format.bucket_hash.bucket_hashes`, vectorised over
whole Arrow columns). The bucket key is ``bucket-key``, else the primary key without the
partition columns. So minipaimon and Paimon's engines put a key in the same bucket, and
both can write one table. ``bucket = -1`` (an append table without ``bucket-key``) keeps
every file in bucket 0; on a primary-key table it means dynamic buckets, assigned from the
table's own index (:mod:`minipaimon_core.dynamic`).

Modes (:func:`bucket_mode`): ``HASH_FIXED`` (``bucket`` = N > 0), ``BUCKET_UNAWARE`` (an
append table with ``bucket`` = -1), ``HASH_DYNAMIC`` (a primary-key table with ``bucket`` =
-1 whose key holds every partition column: a key stays in its partition) and
``CROSS_PARTITION`` (``bucket`` = -1 and a key without some partition column: an update
may move a key to another partition).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..format import bucket_hash
from ..format.options import Options
from ..format.table_schema import TableSchema
from .table_options import names_in


def bucket_keys(schema: TableSchema) -> list[str]:
    """Columns hashed to pick a bucket: ``bucket-key``, else the trimmed primary key."""
    if keys := names_in(schema.options.get("bucket-key")):
        return keys
    return schema.trimmed_primary_keys


def num_buckets(schema: TableSchema) -> int:
    """The ``bucket`` option: N > 0 fixed buckets, -1 none (append) or dynamic (Paimon)."""
    buckets: int = Options(schema.options)["bucket"]
    return buckets


HASH_FIXED, HASH_DYNAMIC, CROSS_PARTITION, BUCKET_UNAWARE, POSTPONE_MODE = (
    "HASH_FIXED", "HASH_DYNAMIC", "CROSS_PARTITION", "BUCKET_UNAWARE", "POSTPONE_MODE")


def postponed(schema: TableSchema) -> bool:
    """Whether the table postpones buckets (``bucket`` = -2, Paimon 1.x): rows are written
    into the ``bucket-postpone`` directory (bucket -2) and reach real buckets, of a count
    chosen per partition, when compacted (:mod:`minipaimon_core.maintenance.postpone`)."""
    return num_buckets(schema) == -2


def cross_partition(schema: TableSchema) -> bool:
    """Whether the primary key leaves out a partition column (Paimon's cross-partition update)."""
    return bool(schema.primaryKeys) and not set(schema.partitionKeys) <= set(schema.primaryKeys)


def bucket_mode(schema: TableSchema) -> str:
    """The table's bucket mode (see the module docs)."""
    if num_buckets(schema) > 0:
        return HASH_FIXED
    if postponed(schema):
        return POSTPONE_MODE
    if not schema.primaryKeys:
        return BUCKET_UNAWARE
    return CROSS_PARTITION if cross_partition(schema) else HASH_DYNAMIC


def key_hashes(table: pa.Table | pa.RecordBatch, schema: TableSchema) -> np.ndarray:
    """Paimon's hash of each row's trimmed primary key (int32): what a HASH index holds."""
    keys = schema.trimmed_primary_keys
    types = {f.name: f.row_type for f in schema.fields}
    return bucket_hash.bucket_hashes([table.column(k) for k in keys], [types[k] for k in keys])


def key_hashes64(table: pa.Table | pa.RecordBatch, schema: TableSchema) -> np.ndarray:
    """A 64-bit hash of each row's trimmed primary key (uint64, :func:`bucket_hash.key_hashes64`)."""
    keys = schema.trimmed_primary_keys
    types = {f.name: f.row_type for f in schema.fields}
    return bucket_hash.key_hashes64([table.column(k) for k in keys], [types[k] for k in keys])


def bucket_ids(table: pa.Table | pa.RecordBatch, schema: TableSchema) -> np.ndarray:
    """The bucket of every row of ``table`` (int32)."""
    return bucket_ids_of(table, schema, num_buckets(schema))  # <= 1: one bucket, or assigned elsewhere


def bucket_ids_of(table: pa.Table | pa.RecordBatch, schema: TableSchema, n: int) -> np.ndarray:
    """The bucket of every row of ``table`` among ``n`` buckets (a postponed table's
    partition count: the hash of the bucket key modulo ``n``, as fixed buckets); int32."""
    if n <= 1:
        return np.zeros(table.num_rows, dtype=np.int32)
    keys = bucket_keys(schema)
    types = {f.name: f.row_type for f in schema.fields}
    hashes = bucket_hash.bucket_hashes([table.column(k) for k in keys], [types[k] for k in keys])
    return bucket_hash.buckets(hashes, n, in_place=True)


__all__ = ["BUCKET_UNAWARE", "CROSS_PARTITION", "HASH_DYNAMIC", "HASH_FIXED", "POSTPONE_MODE", "bucket_ids",
           "bucket_ids_of", "bucket_keys", "bucket_mode", "cross_partition", "key_hashes", "key_hashes64",
           "num_buckets", "postponed"]
