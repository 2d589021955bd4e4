"""What ``Table.delete(filter)`` would change, changing nothing: the dry run of
``minipaimon delete --dry-run``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..expressions import predicate
from ..metadata.context import TableContext
from .dml import check_changeable, delete_target, selected_rows


@dataclass(frozen=True)
class DeletePreview:
    """What :func:`delete` would do now: rows deleted in all, and per partition path (""
    for an unpartitioned table) the rows deleted and the files touched: rewritten (append
    tables, and primary-key tables whose deletes rewrite compacted files), or given deletion
    vectors (append tables with ``deletion-vectors.enabled``: ``marks``); 0 for the other
    primary-key tables, whose deletes are written as new rows."""

    rows: int
    partitions: list[tuple[str, int, int]]
    marks: bool = False


def preview_delete(ctx: TableContext, filter: Any) -> DeletePreview:
    """What ``delete(filter)`` would change on the latest snapshot, changing nothing."""
    check_changeable(ctx, deletes=True, updates=False, by_condition=True)
    dnf = predicate.normalize(filter, ctx.schema.arrow_schema())
    target = delete_target(ctx, dnf)
    selected = selected_rows(ctx, target, dnf)
    spec = ctx.partition_spec()
    per: dict[str, list[int]] = {}
    if target.files:
        for i, (split, _) in enumerate(target.files):
            n = int(selected[target.offsets[i]:target.offsets[i + 1]].sum())
            if n:
                counts = per.setdefault(split.partition_path, [0, 0])
                counts[0] += n
                counts[1] += 1
    elif selected.any():
        keys = list(ctx.schema.partitionKeys)
        rows = target.rows.filter(pa.array(selected))
        if keys:
            grouped = rows.group_by(keys).aggregate([([], "count_all")])
            for r in grouped.to_pylist():
                per[spec.path([r[k] for k in keys])] = [r["count_all"], 0]
        else:
            per[""] = [rows.num_rows, 0]
    marks = not ctx.schema.primaryKeys and bool(ctx.options["deletion-vectors.enabled"])
    return DeletePreview(int(selected.sum()), sorted((p, c[0], c[1]) for p, c in per.items()), marks)


__all__ = ["DeletePreview", "preview_delete"]
