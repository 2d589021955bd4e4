"""Row-level difference between two snapshots of a table, without a changelog producer.

```
plan(from) ─┐  group splits by (partition, bucket); buckets whose file sets (and deletion
plan(to)  ──┴► vectors) are equal are skipped unread ──► read the other buckets at both snapshots (merged)
            ──► multiset difference of whole rows ──► +I added, -D removed
            ──► primary-key tables: a key both removed and added is one change: -U old, +U new
```

The result has every column of the table's current schema plus ``_row_kind``; unchanged
rows are absent. Rows are compared by value (null equals null, NaN equals NaN), so a
compaction or a rewrite that keeps the rows yields no change. The work is proportional to the
buckets whose files differ, not to the table.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidArgumentError
from .format.kinds import ROW_KIND_COLUMN, RowKind
from .read.read import SplitReader
from .read.scan import Split, resolve_snapshot
from .read.table_scan import TableScan
from .read.table_view import TableView
from .schema.schema import SchemaCache, SchemaManager

ROW_KIND = ROW_KIND_COLUMN
Endpoint = int | str | datetime.datetime
"""A snapshot id, a tag name, or a time (the latest snapshot at or before it)."""


def diff(table: TableView, start: Endpoint, end: Endpoint) -> pa.Table:
    """Rows that differ between snapshot ``start`` and snapshot ``end`` of ``table``.

    Raises:
        SnapshotNotFoundError / SnapshotExpiredError: an endpoint that does not exist (any
            more); InvalidArgumentError: an endpoint of another type.
    """
    before = _buckets(_plan(table, start))
    after = _buckets(_plan(table, end))
    schema = table.schema()
    reader = SplitReader(table.io, table.layout, SchemaCache(SchemaManager(table.io, table.layout)),
                         table.table_schema)
    old_parts, new_parts = [schema.empty_table()], [schema.empty_table()]
    for key in sorted(before.keys() | after.keys(), key=repr):
        old, new = before.get(key, []), after.get(key, [])
        changed = _file_names(old) ^ _file_names(new)
        if not changed and _vector_files(old) == _vector_files(new):
            continue
        # same files, other deletion vectors (an append table's row-level change): read whole
        keep = _changed_keys(reader, table.primary_keys(), old + new, changed) if changed else None
        if keep is not None:  # only the keys of the files that differ can differ
            kept_rows: dict[str, pa.Table] = {}  # a file both snapshots hold is read once
            old_parts += [reader.read_keys(s, keep, kept_rows) for s in old]
            new_parts += [reader.read_keys(s, keep, kept_rows) for s in new]
            continue
        old_parts += [_read(table, old, schema)]
        new_parts += [_read(table, new, schema)]
    return row_diff(pa.concat_tables(old_parts), pa.concat_tables(new_parts), table.primary_keys())


def _changed_keys(reader: SplitReader, keys: list[str], splits: list[Split], changed: set[str]
                  ) -> Callable[[pa.Table], pa.Array] | None:
    """For a primary-key bucket: a row filter selecting the keys found in the ``changed``
    files (the files of one snapshot's bucket that the other lacks), or None when a whole
    read is as cheap (an append table, or changed files holding more than a quarter of the
    bucket's rows)."""
    if not keys:
        return None
    files = {f.fileName: (s, f) for s in splits for f in s.files}
    total = sum(f.rowCount for s in splits for f in s.files) // 2 + 1
    if sum(files[n][1].rowCount for n in changed) * 4 > total:
        return None
    found = pa.concat_tables([reader.read_file(s, f, keys) for s, f in (files[n] for n in sorted(changed))])
    if len(keys) == 1:
        values = found.column(0).combine_chunks().unique()
        return lambda t: pc.is_in(t.column(keys[0]), value_set=values)

    def keep(t: pa.Table) -> pa.Array:  # composite key: rows whose key codes are among found's
        codes_t, codes_found = _row_codes(t.select(keys), found)
        _, ids = np.unique(np.concatenate([codes_t, codes_found]), axis=0, return_inverse=True)
        ids = ids.reshape(-1)
        return pa.array(np.isin(ids[:len(codes_t)], ids[len(codes_t):]))
    return keep


def row_diff(old: pa.Table, new: pa.Table, keys: list[str]) -> pa.Table:
    """The multiset difference ``new - old`` as +I and ``old - new`` as -D rows; with
    ``keys``, a key on both sides becomes a -U (old row), +U (new row) pair."""
    codes_old, codes_new = _row_codes(old, new)
    removed = _surplus(codes_old, codes_new)
    added = _surplus(codes_new, codes_old)
    out_old, out_new = old.take(pa.array(removed, pa.int64())), new.take(pa.array(added, pa.int64()))
    kind_old = np.full(len(removed), RowKind.DELETE.short, dtype=object)
    kind_new = np.full(len(added), RowKind.INSERT.short, dtype=object)
    if keys and len(removed) and len(added):
        key_old, key_new = _row_codes(out_old.select(keys), out_new.select(keys))
        kind_old[np.isin(_as_void(key_old), _as_void(key_new))] = RowKind.UPDATE_BEFORE.short
        kind_new[np.isin(_as_void(key_new), _as_void(key_old))] = RowKind.UPDATE_AFTER.short
    both = pa.concat_tables([
        out_old.append_column(ROW_KIND, pa.array(kind_old, pa.string())),
        out_new.append_column(ROW_KIND, pa.array(kind_new, pa.string())),
    ])
    if not keys or not both.num_rows:
        return both
    order = [RowKind.DELETE, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.INSERT]
    rank = pc.index_in(both.column(ROW_KIND), pa.array([k.short for k in order]))
    return both.append_column("__rank", rank).sort_by(
        [(k, "ascending") for k in keys] + [("__rank", "ascending")]).drop_columns(["__rank"])


def endpoint_snapshot_id(table: TableView, value: Endpoint) -> int:
    """The snapshot id ``value`` names: itself, a tag's snapshot, or the latest snapshot at
    or before a time (0 before the first one).

    Raises SnapshotNotFoundError (no such tag), InvalidArgumentError (another type).
    """
    kwargs = _endpoint(value)
    if "snapshot_id" in kwargs:
        return int(kwargs["snapshot_id"])
    if "tag" in kwargs:
        return table.tag_snapshot(kwargs["tag"]).id
    snap = table.snapshot_manager.earlier_or_equal_time(kwargs["timestamp_ms"])
    return 0 if snap is None else snap.id


def _plan(table: TableView, value: Endpoint) -> list[Split]:
    """The splits of endpoint ``value``'s snapshot, planned in the table's current schema
    (a diff compares rows in it, both endpoints alike; not a time-travel read)."""
    kwargs = _endpoint(value)
    tag = table.tag_snapshot(kwargs["tag"]) if "tag" in kwargs else None
    snap = resolve_snapshot(table.snapshot_manager, kwargs.get("snapshot_id"),
                            kwargs.get("timestamp_ms"), tag)
    return TableScan(table.context(), None, None, snap, None).plan()


def _endpoint(value: Endpoint) -> dict[str, Any]:
    if isinstance(value, bool) or not isinstance(value, (int, str, datetime.datetime)):
        raise InvalidArgumentError(
            f"a diff endpoint is a snapshot id, a tag name or a datetime, got {value!r}")
    if isinstance(value, int):
        return {"snapshot_id": value}
    if isinstance(value, str):
        return {"tag": value}
    if value.tzinfo is None:
        raise InvalidArgumentError(f"a diff endpoint time needs a time zone, got {value!r}")
    return {"timestamp_ms": int(value.timestamp() * 1000)}


def _buckets(splits: Iterable[Split]) -> dict[tuple[Any, ...], list[Split]]:
    out: dict[tuple[Any, ...], list[Split]] = defaultdict(list)
    for split in splits:
        out[(tuple(split.partition), split.bucket)].append(split)
    return out


def _file_names(splits: list[Split]) -> set[str]:
    return {f.fileName for s in splits for f in s.files}


def _vector_files(splits: list[Split]) -> dict[str, str]:
    """File name -> the index file holding its vector, for the files that have one."""
    return {f.fileName: s.deletion_index.fileName for s in splits if s.deletion_index is not None
            for f in s.files}


def _read(table: TableView, splits: list[Split], schema: pa.Schema) -> pa.Table:
    batches = [b for s in splits for b in table.read_split(s)]
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def _row_codes(a: pa.Table, b: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Per row, one int64 code per column such that two rows (of ``a`` or ``b``) have equal
    codes exactly when their values are equal (null = null, NaN = NaN)."""
    n = a.num_rows
    columns = []
    for name in a.column_names:
        joined = pa.chunked_array(a.column(name).chunks + b.column(name).chunks,
                                  type=a.schema.field(name).type).combine_chunks()
        columns.append(_codes(joined))
    matrix = np.stack(columns, axis=1) if columns else np.zeros((n + b.num_rows, 0), np.int64)
    return matrix[:n], matrix[n:]


def _codes(values: pa.Array) -> np.ndarray:
    if _hashable(values.type):
        if pa.types.is_floating(values.type):  # every NaN is one value
            values = pc.if_else(pc.is_nan(values), pa.scalar(float("nan"), values.type), values)
        encoded = pc.dictionary_encode(values, null_encoding="encode")
        return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
    # Nested values (list, map, struct) cannot be hashed by Arrow: compare them by their
    # Python form. Only the rows of buckets that changed get here.
    keyed = [repr(v) for v in values.to_pylist()]
    return _codes(pa.array(keyed, pa.string()))


def _hashable(arrow_type: pa.DataType) -> bool:
    return not (pa.types.is_nested(arrow_type) or pa.types.is_dictionary(arrow_type))


def _as_void(codes: np.ndarray) -> np.ndarray:
    """Rows of a code matrix as single comparable values (for np.isin and np.unique)."""
    codes = np.ascontiguousarray(codes)
    return codes.view(np.dtype((np.void, codes.dtype.itemsize * codes.shape[1]))).ravel()


def _surplus(mine: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Indices of rows of ``mine`` beyond the count of equal rows in ``other`` (multiset
    difference; the first occurrences are the ones matched)."""
    if not len(mine):
        return np.zeros(0, np.int64)
    if mine.shape[1] == 0:
        return np.arange(max(0, len(mine) - len(other)), len(mine), dtype=np.int64)
    both = _as_void(np.concatenate([mine, other]))
    _, group = np.unique(both, return_inverse=True)
    group = group.ravel()
    group_mine, group_other = group[: len(mine)], group[len(mine):]
    other_count = np.bincount(group_other, minlength=group.max() + 1)
    order = np.argsort(group_mine, kind="stable")
    sorted_groups = group_mine[order]
    starts = np.searchsorted(sorted_groups, sorted_groups, side="left")
    rank = np.empty(len(mine), np.int64)
    rank[order] = np.arange(len(mine)) - starts
    return np.flatnonzero(rank >= other_count[group_mine]).astype(np.int64)
