"""Row-level changes on primary-key tables with ``sequence.field``: only what wins is
written and counted (:mod:`minipaimon_core.dml.dml`, merge_into, merge_units).

Paimon's rule, which the merge engines apply: a key's row is the one with the largest
sequence value (nulls first; ties: the later write), and a delete keeps the deleted row's
value, so it shadows later rows with lower values. A change written regardless would lose
rows (an update to a lower value wrote a ``-U`` with the old, higher value that beat its
``+U``: the row was gone) or report changes that never show. So, before anything is
written:

* an update (or merge update) whose new sequence value is lower than the row's stored one
  is dropped: the row keeps its values and is not counted (:func:`settle`);
* a merge insert of a key whose latest version is a delete with a higher sequence value is
  dropped and not counted (:func:`shadowed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..expressions import predicate
from ..format.kinds import SEQUENCE, VALUE_KIND, RowKind
from ..format.snapshot import Snapshot
from ..lsm.merge_engines import MergeConfig, merge
from ..metadata.context import TableContext
from ..read.read import SplitReader
from ..read.table_scan import TableScan
from .dml_write import Change
from .merge_keys import bounds_of, prune_filter


def sequence_field(ctx: TableContext) -> str | None:
    """The table's ``sequence.field`` (primary-key tables only), or None."""
    if not ctx.schema.primaryKeys:
        return None
    return MergeConfig.from_options(tuple(ctx.schema.primaryKeys), ctx.schema.options).sequence_field


def lower(new: pa.ChunkedArray | pa.Array, old: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Where ``new`` sorts before ``old`` in sequence order (nulls first)."""
    below = pc.or_kleene(pc.and_(pc.is_null(new), pc.is_valid(old)), pc.less(new, old))
    return np.asarray(pc.fill_null(below, False).to_numpy(zero_copy_only=False), dtype=bool)


def settle(ctx: TableContext, rows: pa.Table, change: Change) -> Change:
    """``change`` of ``rows`` without the updates whose new sequence value is lower than the
    row's stored one (``change`` itself if the table has no ``sequence.field``)."""
    field = sequence_field(ctx)
    if field is None or not change.updated.any():
        return change
    at = np.flatnonzero(change.updated)
    stale = lower(change.new_values.column(field), rows.column(field).take(pa.array(at)))
    if not stale.any():
        return change
    updated = change.updated.copy()
    updated[at[stale]] = False
    return Change(change.deleted, updated, change.new_values.filter(pa.array(~stale)), change.inserted)


def shadowed(ctx: TableContext, snapshot: Snapshot | None, inserts: pa.Table) -> np.ndarray:
    """Which of ``inserts`` a delete with a higher sequence value shadows: the latest
    version of their key at ``snapshot`` (deletes included, every level read, merged as the
    engine merges) is a ``-D`` whose sequence value is above the insert's."""
    out = np.zeros(inserts.num_rows, dtype=bool)
    field = sequence_field(ctx)
    if field is None or snapshot is None or inserts.num_rows == 0:
        return out
    keys = list(ctx.schema.primaryKeys)
    deletes = _latest_deletes(ctx, snapshot, inserts.select(keys), field)
    if deletes.num_rows == 0:
        return out
    at = pa.array(np.arange(inserts.num_rows, dtype=np.int64))
    probe = inserts.select([*keys, field]).rename_columns([*keys, "__new"]).append_column("__at", at)
    hit = probe.join(deletes.rename_columns([*keys, "__deleted"]), keys, join_type="inner")
    below = lower(hit.column("__new"), hit.column("__deleted"))
    out[hit.column("__at").to_numpy()[below]] = True
    return out


def _latest_deletes(ctx: TableContext, snapshot: Snapshot, keys: pa.Table, field: str) -> pa.Table:
    """Keys among ``keys`` whose latest version at ``snapshot`` is a delete, with its
    sequence value: the key, sequence and kind columns of the files that may hold them
    (pruned by the keys' bounds), rows of other keys dropped, merged keeping deletes."""
    names = keys.column_names
    dnf = predicate.normalize(prune_filter(names, bounds_of(keys, names)), ctx.schema.arrow_schema())
    reader = SplitReader(ctx.io, ctx.layout, ctx.schemas, ctx.schema, ctx.vectors)
    config = MergeConfig.from_options(tuple(names), ctx.schema.options)
    wanted = keys.group_by(names).aggregate([])
    buckets: dict[tuple[Any, ...], list[pa.Table]] = {}  # a bucket may come in several splits
    for split in TableScan(ctx, dnf, None, snapshot, None).plan():
        buckets.setdefault((tuple(split.partition), split.bucket), []).extend(
            t.join(wanted, names, join_type="inner")
            for t in reader.read_files(split, split.files, [*names, field, SEQUENCE, VALUE_KIND]))
    found = [merge(pa.concat_tables(parts), config, keep_deletes=True) for parts in buckets.values() if parts]
    if not found:
        return pa.table({**{n: keys.column(n).slice(0, 0) for n in names},
                         field: pa.nulls(0, ctx.schema.arrow_schema().field(field).type)})
    latest = pa.concat_tables(found)
    deleted = pc.is_in(latest.column(VALUE_KIND),  # a kept -U or -D (the winner's own kind)
                       pa.array([int(RowKind.UPDATE_BEFORE), int(RowKind.DELETE)], pa.int8()))
    live = latest.filter(pc.invert(deleted)).select(names)  # a key written again after its delete
    return latest.filter(deleted).join(live, names, join_type="left anti").select([*names, field])


__all__ = ["lower", "sequence_field", "settle", "shadowed"]
