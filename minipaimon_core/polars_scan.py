"""``scan_polars``: a table as a lazy Polars frame whose projection and predicate reach
minipaimon's planner.

```python
import polars as pl
import minipaimon_core as mp

lf = mp.scan_polars("warehouse/orders")                      # or a Table; snapshot_id=, tag=,
                                                             # timestamp_ms= travel in time
lf.filter((pl.col("dt") == "2025-01-02") & (pl.col("amount") > 10)).select("id", "amount").collect()
```

Polars' IO-plugin route (``polars.io.plugins.register_io_source``): when the frame runs,
Polars hands the source the columns it needs and its predicate. The source turns what it
can of the predicate into the core's filter (minipaimon_core.expressions.polars_predicate:
comparisons with literals, ``is_in``, ``is_between``, null tests, ``&`` / ``|``), so the
planner prunes partitions and files by their statistics and reads primary-key ranges; reads
only the projected columns and those the predicate uses; streams the splits one at a time
(Arrow batches, as ``Table.scan(...).to_batches()``); and applies the whole predicate to each
batch with Polars itself. The rows are those of the eager read filtered in Polars.

Snapshot isolation: the snapshot (latest, or the one time travel names) is fixed when the
frame is made; every ``collect`` of it reads that snapshot.

Polars is not a dependency of minipaimon: ``scan_polars`` imports it when called and raises
:class:`~minipaimon_core.errors.InstallationError` (``pip install polars``) without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .errors import InstallationError, InvalidArgumentError
from .expressions import predicate as predicates
from .expressions.polars_predicate import to_dnf
from .table import Table, open_table


def scan_polars(source: str | Table, *, snapshot_id: int | None = None, tag: str | None = None,
                timestamp_ms: int | None = None, storage_options: dict[str, str] | None = None) -> Any:
    """A ``polars.LazyFrame`` of the table at ``source`` (a path or an open
    :class:`~minipaimon_core.table.Table`), at the latest snapshot or the one ``snapshot_id``,
    ``tag`` or ``timestamp_ms`` names (at most one). ``storage_options``: connection options
    (``s3.*``, ``azure.*``) for a path, as ``open_table`` takes them.

    Raises:
        InstallationError: Polars is not installed.
        TableNotFoundError: no table at ``source``.
        SnapshotNotFoundError: the time travel names no snapshot.
        InvalidArgumentError: more than one time travel argument, or a bad one.
    """
    pl = _polars()
    from polars.io.plugins import register_io_source

    table = open_table(source, options=storage_options) if isinstance(source, str) else source
    planned = table.scan(snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)  # checks, resolves
    pinned = planned.snapshot.id if planned.snapshot is not None else None
    arrow = table.schema()
    read = _Read(table, pinned, arrow)
    return register_io_source(
        read, schema=pl.from_arrow(arrow.empty_table()).schema, is_pure=True,
        explain_name="minipaimon", explain_detail=f"{table.path} @ snapshot {pinned}")


def _polars() -> Any:
    try:
        import polars
    except ImportError:
        raise InstallationError(
            "scan_polars needs Polars, which minipaimon does not install: pip install polars") from None
    return polars


class _Read:
    """The IO source of one frame: ``__call__`` is what Polars runs for each collect."""

    def __init__(self, table: Table, snapshot_id: int | None, schema: pa.Schema) -> None:
        self._table = table
        self._snapshot_id = snapshot_id
        self._schema = schema

    def __call__(self, with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                 batch_size: int | None) -> Iterator[Any]:
        import polars as pl

        wanted = list(with_columns) if with_columns is not None else list(self._schema.names)
        used = set(wanted) | (set(predicate.meta.root_names()) if predicate is not None else set())
        columns = [n for n in self._schema.names if n in used]
        if self._snapshot_id is None:  # the table had no snapshot when the frame was made
            return
        scan = self._table.scan(filter=self.filter_of(predicate), columns=columns, snapshot_id=self._snapshot_id)
        target = scan.output_schema()
        left = n_rows
        for batch in scan.to_batches():
            frame = pl.from_arrow(pa.Table.from_batches([batch]).cast(target))
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            frame = frame.select(wanted)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            step = batch_size or max(frame.height, 1)
            for start in range(0, frame.height, step):
                yield frame.slice(start, step)
            if left is not None and left <= 0:
                return

    def filter_of(self, predicate: Any) -> list[list[tuple[str, str, Any]]] | None:
        """The core filter of the part of ``predicate`` it can express (None: no pruning);
        terms the core refuses (a literal out of the column's range) are left out."""
        if predicate is None:
            return None
        try:
            tree = json.loads(predicate.meta.serialize(format="json"))
        except Exception:  # noqa: BLE001 - a Polars without the JSON form: no pruning
            return None
        groups = to_dnf(tree, self._schema)
        if groups is None:
            return None
        kept = []
        for group in groups:
            terms = []
            for term in group:
                try:
                    predicates.normalize([term], self._schema)
                except InvalidArgumentError:
                    continue  # left out: the group selects more, still sound
                terms.append(term)
            if not terms:
                return None  # a group of every row: the OR selects every row
            kept.append(terms)
        return kept


__all__ = ["scan_polars"]
