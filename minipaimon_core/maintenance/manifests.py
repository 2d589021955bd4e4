"""Rewriting a snapshot's manifests clustered by partition, so plans can skip most of them.

```
latest snapshot N ──► its live entries (base + delta merged: ADDs only)
                  ──► sorted by (partition, bucket, level, file name)
                  ──► cut into manifests that reach ``manifest.target-file-size``
                  ──► snapshot N+1 (COMPACT): the same files, new base list, empty delta
                      (created only if absent; a lost race is retried on the new latest)
```

Each manifest then covers a narrow partition range, and its ``partitionStats`` let a
filtered plan skip it unread (:meth:`Planner.prune_manifests`). Commits do the same to the
base on their own, rarely (:mod:`minipaimon_core.metadata.manifest_merge`, which owns the sorting and
cutting); this explicit rewrite clusters everything now (``t.rewrite_manifests()``, CLI
``rewrite-manifests``, the ``minipaimon_rewrite_manifests`` SQL procedure).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import msgspec

from ..errors import CommitConflictError, ConflictReason
from ..format import snapshot as snapshot_codec
from ..format.kinds import CommitKind
from ..format.snapshot import VERSION as SNAPSHOT_VERSION
from ..format.snapshot import Digests
from ..metadata.context import HasContext, TableContext
from ..metadata.manifest_io import live_adds
from ..metadata.manifest_merge import write_sorted
from ..metadata.sequence import next_sequence
from ..schema.features import check_writable


@dataclass(frozen=True)
class RewriteResult:
    """The snapshot made (None: empty table) and the manifests before and after."""

    snapshot_id: int | None
    manifests_before: int
    manifests_after: int


def rewrite_manifests(table: HasContext) -> RewriteResult:
    """Rewrite the latest snapshot's manifests clustered by partition, in a new snapshot.

    Raises CommitConflictError when other writers won the race for the next snapshot id
    more than ``commit.max-retries`` times.
    """
    ctx = table.context()
    check_writable(ctx.schema, ctx.path)
    options = ctx.options
    mio, snapshots, layout = ctx.manifests, ctx.snapshots, ctx.layout
    for _attempt in range(options["commit.max-retries"] + 1):
        latest = snapshots.latest()
        if latest is None:
            return RewriteResult(None, 0, 0)
        before = mio.data_manifests(latest)
        adds = live_adds(mio.entries_of(before), f"snapshot {latest.id} of {ctx.path}")
        written: list[str] = []
        try:
            metas = write_sorted(mio, adds, options["manifest.target-file-size"], ctx.schema.id,
                                 len(ctx.schema.partitionKeys), True, written)
            base, base_size, base_digest = mio.write_list(metas)
            written.append(base)
            delta, delta_size, delta_digest = mio.write_list([])
            written.append(delta)
        except BaseException:  # a failed write: delete what this attempt wrote, nothing else
            _delete(ctx, written)
            raise
        digests = latest.minipaimonDigests or Digests()
        snap = msgspec.structs.replace(
            latest, version=SNAPSHOT_VERSION, id=latest.id + 1, baseManifestList=base,
            baseManifestListSize=base_size, deltaManifestList=delta, deltaManifestListSize=delta_size,
            commitUser=f"rewrite-manifests-{uuid.uuid4()}", commitIdentifier=0,
            commitKind=CommitKind.COMPACT, timeMillis=int(time.time() * 1000), deltaRecordCount=0,
            changelogManifestList=None, changelogManifestListSize=None, changelogRecordCount=None,
            nextSequenceNumber=next_sequence(mio, latest), minipaimonReplayable=None,
            minipaimonDigests=Digests(base_digest, delta_digest, None, digests.index))
        ctx.io.sync([layout.metadata_path(name) for name in written])  # durable before the create
        # from a create on, nothing it references is deleted unless it is known lost (a
        # snapshot created below the latest in an expired id is deleted by settle)
        if ctx.io.write_if_absent(layout.snapshot_path(snap.id), snapshot_codec.encode(snap)) \
                and snapshots.settle(snap, created=True):
            snapshots.commit_latest_hint(snap.id)
            return RewriteResult(snap.id, len(before), len(metas))
        _delete(ctx, written)  # lost the race: ours is garbage, theirs stands
    raise CommitConflictError(
        f"gave up rewriting the manifests of {ctx.path}: other writers kept committing; "
        "retry when the table is quieter or raise 'commit.max-retries'",
        ConflictReason.RETRIES_EXHAUSTED)



def _delete(ctx: TableContext, names: list[str]) -> None:
    for name in names:
        ctx.io.delete(ctx.layout.manifest_path(name))
