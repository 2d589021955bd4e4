"""Where a merge's rows lie, and the primary key its inserts must respect
(:mod:`minipaimon_core.dml.merge_into`, :mod:`minipaimon_core.dml.merge_units`).

* :func:`prune_filter` / :func:`bounds_of`: the target rows a source can match lie between
  the source's min and max of each join column; the planner prunes partitions and files by it.
* :func:`check_inserted_keys`: a primary-key merge that does not join on the whole primary
  key (``on="email"``) can meet, among its unmatched source rows, a key the table already
  holds under other join values. Written, that row would replace the stored one and be
  counted as an insert. As a SQL primary key would, such a merge is refused: no insert may
  repeat a key, nor carry a key the table holds at the merge's snapshot that the same merge
  does not delete. (Joined on the whole key, an existing key always matches: no check.)
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..expressions import predicate
from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from ..read.table_scan import TableScan

Bounds = dict[str, "tuple[Any, Any] | None"]  # join column -> (min, max); None: every value null
_SHOWN = 5  # keys named in an error


def prune_filter(on: list[str], bounds: Bounds) -> list[list[tuple[str, str, Any]]] | None:
    """Where the target rows the source can match lie: each join column between the
    source's min and max (a column missing from ``bounds``, e.g. nested, is not pruned)."""
    terms: list[tuple[str, str, Any]] = []
    for c in on:
        if c not in bounds:
            continue
        b = bounds[c]
        if b is None:
            return [[(c, "is null", None), (c, "is not null", None)]]  # nothing can match
        terms += [(c, ">=", b[0]), (c, "<=", b[1])]
    return [terms] if terms else None


def bounds_of(source: pa.Table, on: list[str]) -> Bounds:
    """Min and max of each join column of ``source`` (nested columns left out), in the
    filters' order: NaN is the top of a float column (a NaN matches a NaN in the join)."""
    out: Bounds = {}
    for c in on:
        col = source.column(c)
        if pa.types.is_nested(col.type):
            continue
        if col.null_count == len(col):
            out[c] = None
        else:
            mm = pc.min_max(col)  # skips NaN
            hi = mm["max"].as_py()
            if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
                hi = math.nan
            out[c] = (mm["min"].as_py(), hi)
    return out


def check_inserted_keys(ctx: TableContext, snapshot: Snapshot | None, on: list[str], inserts: pa.Table,
                        deleted: pa.Table) -> pa.Table | None:
    """Refuse inserts of a primary-key merge joined on ``on`` (not the whole key) that would
    replace a row (see the module docs); ``deleted``: the rows the merge deletes. Returns the
    inserted keys, which no commit after ``snapshot`` may write either (the caller's commit
    check), or None when there is nothing to check.

    Raises InvalidArgumentError naming the keys.
    """
    keys = list(ctx.schema.primaryKeys)
    if not keys or set(keys) <= set(on) or inserts.num_rows == 0:
        return None
    inserted = inserts.select(keys)
    counts = inserted.group_by(keys).aggregate([([], "count_all")])
    twice = counts.filter(pc.greater(counts.column("count_all"), 1))
    if twice.num_rows:
        raise InvalidArgumentError(
            f"{ctx.path}: the merge (joined on {on}, not on the primary key {keys}) would insert "
            f"primary key {_keys(twice.select(keys))} twice; de-duplicate the source")
    held = _held_keys(ctx, snapshot, inserted)
    if held.num_rows and deleted.num_rows:  # a key the same merge deletes may be inserted
        held = held.join(deleted.select(keys), keys, join_type="left anti")
    if held.num_rows:
        raise InvalidArgumentError(
            f"{ctx.path}: the merge is joined on {on}, not on the primary key {keys}, and its "
            f"not-matched rows would insert primary keys the table already has: "
            f"{_keys(held)}{' and more' if held.num_rows > _SHOWN else ''} ({held.num_rows} in all); an "
            "insert would replace those rows. Join on the primary key, or leave those rows "
            "out of the source")
    return inserted


def _held_keys(ctx: TableContext, snapshot: Snapshot | None, inserted: pa.Table) -> pa.Table:
    """The keys of ``inserted`` the table holds at ``snapshot``: a scan of the key columns,
    pruned to the inserted keys' bounds, joined exactly."""
    if snapshot is None:
        return inserted.slice(0, 0)
    keys = inserted.column_names
    dnf = predicate.normalize(prune_filter(keys, bounds_of(inserted, keys)), ctx.schema.arrow_schema())
    stored = TableScan(ctx, dnf, keys, snapshot, None).to_arrow()
    return inserted.join(stored, keys, join_type="inner").select(keys)


def _keys(table: pa.Table) -> str:
    return ", ".join(str(r) for r in table.slice(0, _SHOWN).to_pylist())


__all__ = ["Bounds", "bounds_of", "check_inserted_keys", "prune_filter"]
