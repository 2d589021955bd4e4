"""Bucket assignment, as Paimon's writers do it (fixed-bucket tables).

``bucket = abs(hash % num_buckets)`` (Java's remainder) where ``hash`` is Paimon's
``BinaryRow.hashCode()`` of the row's bucket-key values: the murmur3 hash (seed 42) of the
BinaryRow bytes (:func:`minipaimon_core.format.bucket_hash.bucket_hashes`, vectorised over
whole Arrow columns). The bucket key is ``bucket-key``, else the primary key without the
partition columns. So minipaimon and Paimon's engines put a key in the same bucket, and
both can write one table. ``bucket = -1`` (an append table without ``bucket-key``) keeps
every file in bucket 0.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .format import bucket_hash
from .format.table_schema import TableSchema
from .options import Options
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


def bucket_ids(table: pa.Table | pa.RecordBatch, schema: TableSchema) -> np.ndarray:
    """The bucket of every row of ``table`` (int64)."""
    n = num_buckets(schema)
    if n < 1:
        return np.zeros(table.num_rows, dtype=np.int64)
    keys = bucket_keys(schema)
    types = {f.name: f.row_type for f in schema.fields}
    hashes = bucket_hash.bucket_hashes([table.column(k) for k in keys], [types[k] for k in keys])
    return bucket_hash.buckets(hashes, n).astype(np.int64)


__all__ = ["bucket_ids", "bucket_keys", "num_buckets"]
