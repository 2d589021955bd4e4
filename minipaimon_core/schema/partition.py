"""Partitions: splitting written data by partition values, and naming their directories."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..expressions.sets import iter_positions_by_value
from ..expressions.stats import stat_to_string, to_stat
from ..format import legacy
from ..format import partition_path as paimon_paths
from ..format.table_schema import TableSchema

MAX_SEGMENT_BYTES = 255  # the longest file or directory name of common file systems


class PartitionSpec:
    """The partition columns of a table and their types (Arrow, and Paimon's)."""

    def __init__(self, keys: list[str], types: list[pa.DataType], paimon_types: list[str],
                 legacy_paths: bool = False,
                 default_name: str = paimon_paths.DEFAULT_PARTITION_NAME) -> None:
        self.keys = keys
        self.types = types
        self.paimon_types = paimon_types
        self.legacy_paths = legacy_paths
        self.default_name = default_name  # the directory value of a null (or blank) value

    @staticmethod
    def of(schema: TableSchema) -> PartitionSpec:
        """The table's partitions; a null value's directory is ``partition.default-name``
        (fixed at creation, as the directories already written are named by it)."""
        arrow = schema.arrow_schema()
        fields = {f.name: f for f in schema.fields}
        keys = list(schema.partitionKeys)
        default = schema.options.get("partition.default-name", paimon_paths.DEFAULT_PARTITION_NAME)
        return PartitionSpec(keys, [arrow.field(k).type for k in keys], [fields[k].row_type for k in keys],
                             schema.legacyFormat, default)

    def path(self, values: Sequence[Any]) -> str:
        """Relative directory of the partition with stats-domain ``values``: Paimon's
        ``k1=v1/k2=v2`` (:mod:`minipaimon_core.format.partition_path`; tables of the earlier
        format keep their directories).

        Raises InvalidArgumentError if a directory name (``key=escaped value``) would be
        longer than MAX_SEGMENT_BYTES, which file systems and object stores refuse, and
        UnsupportedFeatureError for a value Paimon cannot name (a binary partition value).
        """
        if self.legacy_paths:
            path = legacy.partition_path(
                self.keys, [stat_to_string(v, t) for v, t in zip(values, self.types)])
        else:
            path = paimon_paths.partition_path(self.keys, values, self.paimon_types, self.default_name)
        for key, segment in zip(self.keys, path.split("/")):
            if len(segment.encode()) > MAX_SEGMENT_BYTES:
                raise InvalidArgumentError(
                    f"partition column {key!r}: the value {str(segment)[len(key) + 1:][:40]!r}... "
                    f"makes a directory name of {len(segment.encode())} bytes after escaping "
                    f"(at most {MAX_SEGMENT_BYTES}); shorten or hash the value")
        return path

    def split(self, table: pa.Table) -> list[tuple[list[Any], pa.Table]]:
        """Split ``table`` into (partition values in the stats domain, rows) pairs, rows in
        input order within a partition.

        Vectorised: Arrow's hash group-by finds the row indices of each partition; one take
        puts the rows in partition order and each partition is a zero-copy slice of it (a
        take per partition costs ~0.1 ms each: 1,000 partitions, 0.1 s).
        """
        return [(values, rows) for values, rows, _ in self.split_at(table)]

    def split_at(self, table: pa.Table) -> list[tuple[list[Any], pa.Table, Positions]]:
        """:meth:`split`, with the :data:`Positions` of each partition's rows in ``table``."""
        if not self.keys:
            return [([], table, None)]
        ordered, groups, _, bounds, order = self._runs(table)
        if len(groups) == 1:
            return [(groups[0], table, None)]
        at = order.to_numpy()
        return [(values, ordered.slice(start, end - start), at[start:end])
                for values, start, end in zip(groups, bounds[:-1], bounds[1:])]

    def runs(self, table: pa.Table) -> tuple[pa.Table, list[list[Any]], list[str], list[int]]:
        """``table``'s rows in partition order (input order within a partition), the
        partitions' values in the stats domain, their directories (:meth:`path`), and the
        bounds of each one's run of rows (partition ``i``: rows ``bounds[i]:bounds[i + 1]``).
        The table has partition keys. Raises as :meth:`path` for a value that names no
        directory, before anything is written."""
        ordered, values, paths, bounds, _ = self._runs(table)
        return ordered, values, paths, bounds

    def _runs(self, table: pa.Table) -> tuple[pa.Table, list[list[Any]], list[str], list[int], pa.Array]:
        """:meth:`runs` and the row indices that put ``table`` in partition order."""
        if table.num_rows == 0:
            return table, [], [], [0], pa.array([], pa.int64())
        groups, order, bounds = group_order(table, self.keys)
        ordered = table.take(order) if len(groups) > 1 else table
        values = [[to_stat(v, t) for v, t in zip(group, self.types)] for group in groups]
        return ordered, values, [self.path(v) for v in values], bounds, order


def group_order(table: pa.Table, keys: list[str]) -> tuple[list[list[Any]], pa.Array, list[int]]:
    """The distinct values of ``keys`` (as Python values, in order of first appearance),
    the row indices grouped by them (input order within a group), and the bounds of each
    group in those indices (group ``i`` is ``order[bounds[i]:bounds[i + 1]]``)."""
    indexed = table.select(keys).append_column("__row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    grouped = indexed.group_by(keys, use_threads=False).aggregate([("__row", "list")])
    rows = grouped.column("__row_list").combine_chunks()
    key_values = [grouped.column(k).to_pylist() for k in keys]
    offsets = rows.offsets.to_numpy()
    return ([list(v) for v in zip(*key_values)], rows.values.slice(offsets[0], offsets[-1] - offsets[0]),
            (offsets - offsets[0]).tolist())


def group_indices(table: pa.Table, keys: list[str]) -> list[tuple[list[Any], pa.Array]]:
    """Distinct values of ``keys`` (as Python values) with the row indices holding each."""
    groups, order, bounds = group_order(table, keys)
    return [(values, order.slice(start, end - start)) for values, start, end in zip(groups, bounds[:-1], bounds[1:])]


Positions = np.ndarray | None
"""Where the rows of a part of a table are in that table: their row indices (int64), or
None where the part is the whole table, in order (a writer numbers a part's rows from
them, :mod:`minipaimon_core.write.kv_writer`)."""


def positions_within(outer: Positions, inner: Positions) -> Positions:
    """The positions in a table of rows at ``inner`` of its part at ``outer``."""
    if inner is None:
        return outer
    return inner if outer is None else outer[inner]


FEW_RUNS = 64
"""Up to this many runs of one bucket id, :func:`split_by_bucket` slices instead of copying."""


def split_by_bucket(table: pa.Table, buckets: np.ndarray) -> list[tuple[int, pa.Table]]:
    """Split rows by their bucket number (input order kept within a bucket), buckets
    ascending: :func:`iter_by_bucket`, every bucket's rows at once."""
    return [(b, rows) for b, rows, _ in iter_by_bucket(table, buckets)]


def iter_by_bucket(table: pa.Table, buckets: np.ndarray) -> Iterator[tuple[int, pa.Table, Positions]]:
    """:func:`split_by_bucket` with each bucket's :data:`Positions` in ``table``, a bucket's
    rows copied only when the iterator reaches it (a writer that writes each bucket before
    asking for the next reuses the memory of the last copy instead of holding a copy of
    every row). The buckets' rows are found before this returns. Where the ids come in few
    runs (one bucket: always; the new keys of a dynamic-bucket bulk load fill one bucket
    after another) the rows are zero-copy slices of ``table``; else one take a bucket."""
    if table.num_rows == 0:
        return iter(())
    runs = bucket_runs(buckets)
    if runs is not None:
        return (_slices(table, b, spans) for b, spans in runs.items())
    # positions found here are in range: no bounds check (~0.1 s of CPU at 16M rows)
    return ((b, pc.take(table, pa.array(at), boundscheck=False), at) for b, at in iter_positions_by_value(buckets))


_HEAD_ROWS = 4096


def bucket_runs(buckets: np.ndarray) -> dict[int, list[tuple[int, int]]] | None:
    """Each bucket id's runs ``(start, end)`` in ``buckets`` (not empty), ids ascending, where
    the ids change fewer than :data:`FEW_RUNS` times; None where they change more often.
    Hashed ids change at almost every row: a look at the first rows answers None without a
    pass over all of them (~0.1 s at 16M rows)."""
    head = buckets[:_HEAD_ROWS]
    if len(head) > 1 and int(np.count_nonzero(head[1:] != head[:-1])) >= FEW_RUNS:
        return None
    changes = buckets[1:] != buckets[:-1]
    if int(np.count_nonzero(changes)) >= FEW_RUNS:
        return None
    bounds = [0, *(np.flatnonzero(changes) + 1).tolist(), len(buckets)]
    runs: dict[int, list[tuple[int, int]]] = {}
    for start, end in zip(bounds, bounds[1:]):
        runs.setdefault(int(buckets[start]), []).append((start, end))
    return dict(sorted(runs.items()))


def _slices(table: pa.Table, bucket: int, spans: list[tuple[int, int]]) -> tuple[int, pa.Table, Positions]:
    """A bucket's rows that are the runs ``spans`` of ``table`` (zero-copy)."""
    if spans == [(0, table.num_rows)]:
        return bucket, table, None
    pieces = [table.slice(start, end - start) for start, end in spans]
    at = np.concatenate([np.arange(start, end, dtype=np.int64) for start, end in spans])
    return bucket, pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces), at


def partition_prefix(key: str, legacy_paths: bool = False) -> str:
    """The start of every directory name of partition column ``key`` (``<escaped key>=``)."""
    return (legacy.escape_segment(key) if legacy_paths else paimon_paths.escape(key)) + "="
