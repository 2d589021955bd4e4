"""A merge cut into pieces of the target that change independently, so that an engine (Spark:
``minipaimon_spark.merge``) can join the source in its own way and write files where the
rows are. No engine import: the pieces are picklable and each step is a plain function.

```
driver      plan_merge(ctx, clauses, on, bounds)             -> MergePlan: units + start
executors   unit_keys(plan, ctx, i)                          -> join columns of unit i + row numbers
            (the engine joins the source with the keys: matched rows carry unit and row)
executors   change_unit(plan, ctx, i, matched source rows)   -> UnitResult: files of unit i's change
executors   insert_rows_of(plan, ctx, unmatched rows, task)  -> UnitResult: files of inserted rows
driver      commit_units(ctx, plan, results)                 -> one commit (or the first error)
```

Each task opens the table itself (``ctx``) and the plan checks its schema is the plan's.

A unit is one data file of an append table (copy-on-write replaces it) or one (partition,
bucket) of a primary-key table (its merged rows; ``-D`` / ``-U`` / ``+U`` written through
the LSM). The clauses apply per unit exactly as :class:`~minipaimon_core.dml.merge_into.MergeBuilder`
applies them to the whole target (the same functions), and the commit makes the same checks:
replaced files still live (FILES_GONE), no key the merge removes written since the plan's
snapshot (ROWS_CHANGED). Primary-key writers of one merge share the plan's sequence start,
interleaved by unit (inserts after the units), so their rows never tie; a primary-key merge
must join on the whole primary key (each key is then changed by one unit only).

A core error in a task (a bad value, duplicate source rows) comes back in its
:class:`UnitResult`, so the driver raises it typed after deleting every task's files.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..commit.commit import FileStoreCommit
from ..errors import CommitConflictError, ConflictReason, InvalidArgumentError, MiniPaimonError
from ..expressions import predicate
from ..format.manifest_file import DataFileMeta
from ..metadata.commit_message import CommitMessage
from ..metadata.context import TableContext
from ..metadata.sequence import SequenceStart, start_of
from ..read.scan import Split
from ..read.table_scan import TableScan, read_split
from .dml import read_append_file
from .dml_sequence import settle, shadowed
from .dml_write import Change, commit_change, new_user, write_change
from .merge_into import Bounds, MergeResult, decide_matched, insert_rows, prune_filter
from .target import Target

UNIT, ROW = "__minipaimon_unit", "__minipaimon_row"


@dataclass(frozen=True)
class MergeUnit:
    """One piece of the target: ``file`` of ``split`` (append), or all of ``split`` (None:
    a primary-key bucket, read merged)."""

    split: Split
    file: DataFileMeta | None


@dataclass(frozen=True)
class MergePlan:
    """What every task of one merge attempt needs (picklable; small: file metadata only)."""

    path: str
    connection: dict[str, str] = field(repr=False)
    schema_id: int
    on: list[str]
    clauses: list[Any]  # merge_into._Clause
    snapshot_id: int | None
    units: list[MergeUnit]
    user: str
    sequence: SequenceStart | None  # primary-key tables: where the writers' numbers start

    def check(self, ctx: TableContext) -> TableContext:
        """``ctx`` (the table opened anew in a task), if its schema is still the plan's.

        Raises CommitConflictError (ROWS_CHANGED: the merge is planned again) if the schema
        changed since the plan.
        """
        if ctx.schema.id != self.schema_id:
            raise CommitConflictError(
                f"{self.path}: the schema changed while the merge ran (schema {self.schema_id} -> "
                f"{ctx.schema.id}); the merge is planned again", ConflictReason.ROWS_CHANGED)
        return ctx


@dataclass
class UnitResult:
    """What one task wrote (messages: files not committed yet) and changed, or the core
    error that stopped it (its files already deleted)."""

    messages: list[CommitMessage] = field(default_factory=list)
    removed_keys: pa.Table | None = None  # primary-key tables: keys deleted or updated
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    error: MiniPaimonError | None = None

    def to_bytes(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def from_bytes(data: bytes) -> UnitResult:
        result = pickle.loads(data)
        assert isinstance(result, UnitResult)
        return result


def plan_merge(ctx: TableContext, path: str, connection: dict[str, str], clauses: list[Any],
               on: list[str], bounds: Bounds) -> MergePlan:
    """The units of the latest snapshot a merge with ``clauses`` may change: pruned to the
    source's ``bounds`` on the join columns unless a by-source clause needs every row.

    Raises InvalidArgumentError: a primary-key merge not joined on the whole primary key.
    """
    keys = ctx.schema.primaryKeys
    if keys and not set(keys) <= set(on):
        raise InvalidArgumentError(
            f"{path}: a distributed merge into a primary-key table joins on the whole primary key "
            f"{keys}, not {on}")
    by_source = any(c.kind == "not_matched_by_source" for c in clauses)
    dnf = None if by_source else predicate.normalize(prune_filter(on, bounds), ctx.schema.arrow_schema())
    return plan_units(ctx, path, connection, clauses, on, dnf)


def plan_units(ctx: TableContext, path: str, connection: dict[str, str], clauses: list[Any],
               on: list[str], dnf: predicate.DNF | None) -> MergePlan:
    """The units of the latest snapshot whose rows ``dnf`` may select (every unit if None),
    for a change whose tasks apply ``clauses`` (``on``: what its rows were matched on, for
    messages); primary-key units read only the merged rows ``dnf`` selects."""
    keys = ctx.schema.primaryKeys
    snapshot = ctx.snapshots.latest()
    splits = TableScan(ctx, dnf, None, snapshot, None).plan() if snapshot is not None else []
    if keys:
        units = [MergeUnit(split, None) for split in splits]
    else:
        units = [MergeUnit(split, f) for split in splits for f in split.files]
    return MergePlan(path, dict(connection), ctx.schema.id, list(on), list(clauses),
                     snapshot.id if snapshot else None, units, new_user(),
                     start_of(ctx.manifests, snapshot) if keys else None)


def _unit_target(ctx: TableContext, unit: MergeUnit) -> Target:
    """The unit's live rows: a primary-key bucket merged, an append file through its vector."""
    arrow = ctx.schema.arrow_schema()
    if unit.file is None:
        return Target(None, pa.Table.from_batches(list(read_split(ctx, unit.split)), schema=arrow))
    part = read_append_file(ctx, unit.split, unit.file)
    target = Target(None, part.rows)
    target.add_file(unit.split, unit.file, part)
    return target


def unit_keys(plan: MergePlan, ctx: TableContext, index: int) -> pa.Table | None:
    """The join columns of unit ``index``'s rows, with the unit and each row's number in it
    (``ctx``: the table, opened by the task); None if the schema changed since the plan
    (the unit's task and the commit then report the conflict, typed)."""
    if ctx.schema.id != plan.schema_id:
        return None
    rows = _unit_target(ctx, plan.units[index]).rows
    keys = rows.select(plan.on)
    keys = keys.append_column(UNIT, pa.array(np.full(rows.num_rows, index, dtype=np.int32)))
    return keys.append_column(ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64)))


def change_unit(plan: MergePlan, ctx: TableContext, index: int, matched: pa.Table) -> UnitResult:
    """Apply the matched and by-source clauses to unit ``index``; ``matched``: the source
    rows that matched one of its rows, each with that row's number in column ``ROW``
    (a null row number: no match, present only so that a by-source clause sees the unit)."""
    unit = plan.units[index]
    matched = matched.filter(matched.column(ROW).is_valid())
    t_rows = matched.column(ROW).to_numpy().astype(np.int64)
    source = matched.drop_columns([c for c in (UNIT, ROW) if c in matched.column_names])
    return _guarded(ctx, plan, lambda messages: _write_unit(plan.check(ctx), plan, index, unit, t_rows, source,
                                                            messages))


def _write_unit(ctx: TableContext, plan: MergePlan, index: int, unit: MergeUnit, t_rows: np.ndarray,
                source: pa.Table, messages: list[CommitMessage]) -> UnitResult:
    target = _unit_target(ctx, unit)
    rows = target.rows
    deleted, updated, values = decide_matched(ctx, plan.clauses, plan.on, rows, t_rows, source)
    change = settle(ctx, rows, Change(deleted, updated, values, ctx.schema.arrow_schema().empty_table()))
    if change.empty:
        return UnitResult()
    keys = write_change(ctx, target, change, plan.user, messages, _task_sequence(plan, index))
    return UnitResult(messages, keys, 0, int(change.updated.sum()), int(deleted.sum()))


def insert_rows_of(plan: MergePlan, ctx: TableContext, unmatched: pa.Table, task: int) -> UnitResult:
    """Apply the not-matched clauses to source rows that matched no target row (task
    ``task`` of the engine's insert stage) and write what they insert."""
    def write(messages: list[CommitMessage]) -> UnitResult:
        arrow = plan.check(ctx).schema.arrow_schema()
        inserts = insert_rows(plan.clauses, unmatched, arrow)
        if plan.snapshot_id is not None and inserts.num_rows:  # under a delete of a higher sequence
            inserts = inserts.filter(pa.array(~shadowed(ctx, ctx.snapshots.try_get(plan.snapshot_id)
                                                        or ctx.snapshots.latest(), inserts)))
        if inserts.num_rows == 0:
            return UnitResult()
        nothing = np.zeros(0, dtype=bool)
        change = Change(nothing, nothing, arrow.empty_table(), inserts)
        write_change(ctx, Target(None, arrow.empty_table()), change, plan.user, messages,
                     _task_sequence(plan, len(plan.units) + task))
        return UnitResult(messages, None, inserts.num_rows)
    return _guarded(ctx, plan, write)


def _task_sequence(plan: MergePlan, slot: int) -> SequenceStart | None:
    return plan.sequence.for_task(slot) if plan.sequence is not None else None


def _guarded(ctx: TableContext, plan: MergePlan, work: Any) -> UnitResult:
    """``work(messages)``; on a core error its files are deleted and the error returned."""
    messages: list[CommitMessage] = []
    try:
        result: UnitResult = work(messages)
        return result
    except MiniPaimonError as e:
        _abort(ctx, plan, messages)
        return UnitResult(error=e)
    except BaseException:
        _abort(ctx, plan, messages)
        raise


def _abort(ctx: TableContext, plan: MergePlan, messages: list[CommitMessage]) -> None:
    FileStoreCommit(ctx.io, ctx.layout, ctx.schema, plan.user, fresh_user=True).abort(messages)


def discard_units(ctx: TableContext, plan: MergePlan, results: list[UnitResult]) -> None:
    """Delete the files of ``results`` (never committed): a later stage of the engine failed."""
    _abort(ctx, plan, [m for r in results for m in r.messages])


def commit_units(ctx: TableContext, plan: MergePlan, results: list[UnitResult]) -> MergeResult:
    """One commit of every task's files on ``ctx`` (the table opened now); the first task
    error is raised instead (after every task's files are deleted).

    Raises:
        MiniPaimonError: a task's error (InvalidArgumentError, SchemaMismatchError, ...).
        CommitConflictError: FILES_GONE / ROWS_CHANGED (plan again and retry) or lost races.
    """
    messages = [m for r in results for m in r.messages]
    errors = [r.error for r in results if r.error is not None]
    if not errors and ctx.schema.id != plan.schema_id:
        errors.append(CommitConflictError(
            f"{plan.path}: the schema changed while the merge ran; the merge is planned again",
            ConflictReason.ROWS_CHANGED))
    if errors:
        _abort(ctx, plan, messages)
        raise errors[0]
    if messages:
        keys = [r.removed_keys for r in results if r.removed_keys is not None and r.removed_keys.num_rows]
        removed = pa.concat_tables(keys) if keys else None  # None: no key removed, nothing to check
        base = ctx.snapshots.try_get(plan.snapshot_id) if plan.snapshot_id is not None else None
        commit_change(ctx, base, plan.user, messages, removed)
    return MergeResult(sum(r.inserted for r in results), sum(r.updated for r in results),
                       sum(r.deleted for r in results))


__all__ = ["ROW", "UNIT", "MergePlan", "MergeUnit", "UnitResult", "change_unit", "commit_units",
           "discard_units", "insert_rows_of", "plan_merge", "plan_units", "unit_keys"]
