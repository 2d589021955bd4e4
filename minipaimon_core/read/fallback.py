"""``scan.fallback-branch``: a batch read of a branch takes the partitions it lacks from
another branch, as Paimon 0.9's ``FallbackReadFileStoreTable``.

A table whose (current schema's) options name a fallback branch F is read as: the splits of
the scanned branch, then F's splits of the partitions the scanned branch's snapshot has no
file in. Typical use (Paimon's docs): a streaming job writes today's partitions into F, a
nightly batch job writes corrected partitions into main; readers of main see the batch
results where there are some, the streaming ones elsewhere.

* F must exist and have the same columns (names and types; nullability aside) and, if the
  scanned branch has a primary key, the same one (Paimon's checks);
* time travel: F is read at its snapshot current at the scanned snapshot's commit time
  (Paimon converts a snapshot id so, and hands a tag name to F as is; minipaimon converts a
  tag by its snapshot's time too); a read with no such snapshot of F takes nothing from F;
* which partitions the scanned branch has is decided by its snapshot's files, whatever the
  filter (Paimon takes the partitions of its filtered plan: a filter skipping every file
  of a partition there reads that partition from F);
* streams, ``incremental-between``, counts of rows of a branch without the option, and
  writes, deletes and merges see the scanned branch only (as Paimon's streaming reads).

Each split taken from F names it (``Split.branch``); reading it uses F's schemas and merge
rules (:func:`read_context`).
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgumentError, SchemaMismatchError
from ..expressions import predicate
from ..format.branch_names import FALLBACK_BRANCH
from ..format.snapshot import Snapshot
from ..metadata.branches import BranchManager
from ..metadata.context import TableContext
from ..metadata.manifest_io import live_files
from .scan import Planner, Split, SplitSizing


def fallback_context(ctx: TableContext) -> TableContext | None:
    """The context of the fallback branch of ``ctx``'s schema, None without one. Raises
    InvalidArgumentError (no such branch), SchemaMismatchError (other columns or keys)."""
    name = ctx.schema.options.get(FALLBACK_BRANCH)
    if not name or name == ctx.layout.branch:
        return None
    manager = BranchManager(ctx.io, ctx.layout)
    if not manager.exists(name):
        raise InvalidArgumentError(f"{ctx.layout.where}: option {FALLBACK_BRANCH!r} names the branch "
                                   f"{name!r}, which does not exist; create it or reset the option")
    fb = TableContext.load(ctx.path, ctx.io, manager.layout_of(name))
    mine = [(f.name, f.type) for f in ctx.schema.arrow_schema()]
    theirs = [(f.name, f.type) for f in fb.schema.arrow_schema()]
    if mine != theirs:
        raise SchemaMismatchError(
            f"{ctx.layout.where} and its {FALLBACK_BRANCH} {name!r} have different columns: "
            f"{ctx.schema.arrow_schema()} vs {fb.schema.arrow_schema()}")
    keys, fb_keys = list(ctx.schema.primaryKeys), list(fb.schema.primaryKeys)
    if keys and keys != fb_keys:
        raise SchemaMismatchError(
            f"{ctx.layout.where} has the primary key {keys}, its {FALLBACK_BRANCH} {name!r} "
            f"{fb_keys or 'none'}: Paimon reads a fallback branch only with the same key")
    return fb


def fallback_snapshot(main: TableContext, snapshot: Snapshot | None, travelled: bool,
                      fb: TableContext) -> Snapshot | None:
    """The snapshot of ``fb`` read beside ``snapshot`` of ``main``: its latest, or after time
    travel (``travelled``) the one current at ``snapshot``'s commit time."""
    if not travelled:
        return fb.snapshots.latest()
    if snapshot is None:
        return None
    return fb.snapshots.earlier_or_equal_time(snapshot.timeMillis)


def plan_fallback(main: TableContext, snapshot: Snapshot | None, fb: TableContext,
                  fb_snapshot: Snapshot | None, fb_planner: Planner, dnf: predicate.DNF | None,
                  columns: list[str] | None, sizing: SplitSizing | None) -> list[Split]:
    """The splits of ``fb_snapshot`` in the partitions ``snapshot`` of ``main`` has no file
    in, each naming ``fb``'s branch."""
    if fb_snapshot is None:
        return []
    have = {tuple(e.partition) for e in live_files(main.manifests, snapshot)}
    return [dataclasses.replace(s, branch=fb.layout.branch)
            for s in fb_planner.plan(fb_snapshot, dnf, columns, None, sizing)
            if tuple(s.partition) not in have]


def read_context(ctx: TableContext, split: Split) -> TableContext:
    """The context a split is read with: its branch's (a fallback split) or ``ctx``."""
    return ctx if split.branch is None else ctx.on_branch(split.branch)


__all__ = ["fallback_context", "fallback_snapshot", "plan_fallback", "read_context"]
