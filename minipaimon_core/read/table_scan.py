"""Planned reads of a table: :class:`TableScan`, and planning and reading over a context.

```
TableScan.plan()    metadata only: snapshot -> manifests -> picklable splits (Planner)
read_split(split)   one split -> Arrow batches (SplitReader: projection, merge, filter)
dropped_rows(split) the same read as positions of the files' rows it leaves out (engines
                    that merge by selecting rows; for Spark's own Parquet reader)
```
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from ..expressions import predicate
from ..format.kinds import SEQUENCE, VALUE_KIND
from ..format.manifest_file import DataFileMeta
from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from ..schema.schema import TableSchema
from .fallback import plan_fallback, read_context
from .file_read import read_file_as
from .read import SplitReader
from .scan import Planner, PlanStats, Split, SplitSizing

Fallback = tuple[TableContext, Snapshot | None]
"""A fallback branch's context and the snapshot of it a scan reads."""


def planner(ctx: TableContext) -> Planner:
    """A planner of ``ctx``'s table in its current schema (column positions of every schema
    by field id, so files of older schemas are pruned by their own statistics)."""
    positions: dict[int, dict[str, int]] = {}
    for sid in ctx.schemas.ids():
        s = ctx.schemas.get(sid)
        positions[sid] = {}
        by_id = {f.id: i for i, f in enumerate(s.fields)}
        for f in ctx.schema.fields:
            if f.id in by_id:
                positions[sid][f.name] = by_id[f.id]
    vectors = ctx.vectors if ctx.options["deletion-vectors.enabled"] else None
    return Planner(ctx.manifests, ctx.snapshots, ctx.schema, positions, vectors)


def travel(ctx: TableContext, snapshot: Snapshot | None) -> TableContext:
    """What a time-travel read of ``snapshot`` (by snapshot id, tag or time) plans and reads
    in: ``ctx`` with the snapshot's own schema, as Paimon reads it (columns under the names
    they had, columns added later absent, dropped ones present; that schema's options).

    The one rule of which schema a read uses, for ``Table.scan`` / ``Table.as_of`` and the
    Spark source: a time-travel read uses its snapshot's schema; every other read (the
    latest snapshot, incremental ranges, streams, diffs) uses the context's, the latest.
    A split carries the schema it was planned in, and ``Table.read_split`` reads it in it
    (:func:`planned_in`).
    """
    if snapshot is None or snapshot.schemaId == ctx.schema.id:
        return ctx
    return dataclasses.replace(ctx, schema=ctx.schemas.get(snapshot.schemaId))


def planned_in(ctx: TableContext, split: Split) -> TableContext:
    """``ctx`` in the schema ``split`` was planned in (its columns and filter name its
    fields): what ``Table.read_split`` reads a split in, so a time-travel scan's splits read
    in their snapshot's schema whichever handle reads them."""
    if split.schema_id == ctx.schema.id or split.branch is not None:
        return ctx  # a fallback branch's split: read in its branch's schema (read_split)
    return dataclasses.replace(ctx, schema=ctx.schemas.get(split.schema_id))


def read_split(ctx: TableContext, split: Split, with_kind: bool = False) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one split in ``ctx``'s schema (projected and filtered as planned);
    ``with_kind``: then each row's ``_VALUE_KIND`` (SplitReader.read). A split of a fallback
    branch is read with that branch's schemas and rules, in ``ctx``'s column types."""
    line = read_context(ctx, split)
    batches = SplitReader(line.io, line.layout, line.schemas, line.schema, line.vectors).read(split, with_kind)
    if line is ctx:
        return batches
    types = {f.name: f for f in ctx.schema.arrow_schema()}
    return (b.cast(pa.schema([types.get(f.name, f) for f in b.schema])) for b in batches)


def dropped_rows(ctx: TableContext, split: Split) -> dict[str, np.ndarray] | None:
    """What a read of ``split`` leaves out of its files' stored rows (SplitReader.dropped_rows)."""
    line = read_context(ctx, split)
    return SplitReader(line.io, line.layout, line.schemas, line.schema, line.vectors).dropped_rows(split)


def read_file_rows(ctx: TableContext, split: Split, file: DataFileMeta, with_kind: bool = False,
                   with_sequence: bool = False) -> pa.Table:
    """One data or changelog file of ``split`` as is (no merge), in the current schema,
    with ``_VALUE_KIND`` if ``with_kind`` and ``_SEQUENCE_NUMBER`` if ``with_sequence``."""
    names = (ctx.schema.arrow_schema().names + ([VALUE_KIND] if with_kind else [])
             + ([SEQUENCE] if with_sequence else []))
    return read_file_as(ctx.io, ctx.layout, ctx.schemas, ctx.schema, split.partition_path, split.bucket, file, names)


class TableScan:
    """A planned read of one snapshot (or an incremental range)."""

    def __init__(self, ctx: TableContext, dnf: predicate.DNF | None, columns: list[str] | None,
                 snapshot: Snapshot | None, incremental: tuple[int, int] | None,
                 sizing: SplitSizing | None = None, fallback: Fallback | None = None) -> None:
        """``fallback``: the ``scan.fallback-branch`` context and its snapshot to read the
        partitions ``snapshot`` lacks from (minipaimon_core.read.fallback)."""
        self._ctx = ctx
        self._fallback = fallback
        self._sizing = sizing
        self._dnf = dnf
        self._columns = columns
        self.snapshot = snapshot
        self._incremental = incremental
        self._splits: list[Split] | None = None
        self.stats = PlanStats()  # what plan() cost, once it ran

    def plan(self) -> list[Split]:
        """Picklable splits: one per (partition, bucket) of a primary-key table, append
        buckets cut by size (see ``minipaimon_core.read.scan``); reads metadata only."""
        if self._splits is None:
            plans = planner(self._ctx)
            start = time.perf_counter()
            self._splits = plans.plan(self.snapshot, self._dnf, self._columns, self._incremental,
                                      self._sizing)
            if self._fallback is not None:
                fb, fb_snapshot = self._fallback
                self._splits += plan_fallback(self._ctx, self.snapshot, fb, fb_snapshot, planner(fb),
                                              self._dnf, self._columns, self._sizing)
            self.stats = dataclasses.replace(plans.stats, seconds=time.perf_counter() - start)
        return self._splits

    @property
    def schema(self) -> TableSchema:
        """The schema the scan reads in (a time-travel scan: its snapshot's, see :func:`travel`)."""
        return self._ctx.schema

    def output_schema(self, with_kind: bool = False) -> pa.Schema:
        schema = self._ctx.schema.arrow_schema()
        if self._columns is not None:
            schema = pa.schema([schema.field(c) for c in self._columns])
        if with_kind:
            schema = schema.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
        return schema

    def to_batches(self, with_kind: bool = False) -> Iterator[pa.RecordBatch]:
        """Batches of every split, split by split (streaming, one split in memory);
        ``with_kind``: with each row's ``_VALUE_KIND`` last (SplitReader.read)."""
        for split in self.plan():
            yield from read_split(self._ctx, split, with_kind)

    def to_arrow(self, with_kind: bool = False) -> pa.Table:
        """The whole result (``with_kind``: as :meth:`to_batches`). Splits are read in
        parallel threads (Parquet decoding and the merge's sorts release the GIL); batches
        keep the plan's split order."""
        splits = self.plan()
        workers = min(len(splits), os.cpu_count() or 1)
        if workers <= 1:
            batches = list(self.to_batches(with_kind))
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = pool.map(lambda s: list(read_split(self._ctx, s, with_kind)), splits)
                batches = [b for part in parts for b in part]
        return pa.Table.from_batches(batches, schema=self.output_schema(with_kind))

    def to_pandas(self) -> Any:
        return self.to_arrow().to_pandas()

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.output_schema(), self.to_batches())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream protocol: ``pl.DataFrame(scan)``, ``duckdb.sql("... FROM
        scan")``, ``pa.table(scan)`` read the planned rows split by split (one in memory)."""
        return self.to_reader().__arrow_c_stream__(requested_schema)


__all__ = ["Fallback", "TableScan", "dropped_rows", "planned_in", "planner", "read_file_rows", "read_split",
           "travel"]
