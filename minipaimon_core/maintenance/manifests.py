"""Rewriting a snapshot's manifests clustered by partition, so plans can skip most of them.

```
latest snapshot N ──► its live entries (base + delta merged: ADDs only)
                  ──► sorted by (partition, bucket, level, file name)
                  ──► cut into manifests that reach ``manifest.target-file-size``
                  ──► snapshot N+1 (COMPACT): the same files, new base list, empty delta
                      (created only if absent; a lost race is retried on the new latest)
```

Each manifest then covers a narrow partition range, and its ``partitionStats`` let a
filtered plan skip it unread (:meth:`Planner.prune_manifests`). Commits stay O(their own
changes): they append delta manifests to this base, and the rewrite is run when planning has
slowed (``t.rewrite_manifests()``, the ``minipaimon_rewrite_manifests`` SQL procedure).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from .. import manifest as manifest_codec
from .. import snapshot as snapshot_codec
from ..context import HasContext
from ..errors import CommitConflictError, ConflictReason
from ..kinds import CommitKind
from ..manifest import ManifestEntry
from ..manifest_io import merge_entries

_SAMPLE = 512  # entries encoded to estimate the bytes of one entry in a manifest


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
    options = ctx.options
    mio, snapshots, layout = ctx.manifests, ctx.snapshots, ctx.layout
    for _attempt in range(options["commit.max-retries"] + 1):
        latest = snapshots.latest()
        if latest is None:
            return RewriteResult(None, 0, 0)
        before = mio.data_manifests(latest)
        adds, _ = merge_entries(mio.entries_of(before))
        adds.sort(key=_order)
        written: list[str] = []
        metas = []
        width = len(ctx.schema.partitionKeys)
        for chunk in _chunks(adds, options["manifest.target-file-size"]):
            meta = mio.write_entries(chunk, ctx.schema.id, width)
            written.append(meta.fileName)
            metas.append(meta)
        base = mio.write_list(metas)
        delta = mio.write_list([])
        written += [base, delta]
        snap = msgspec.structs.replace(
            latest, id=latest.id + 1, baseManifestList=base, deltaManifestList=delta,
            commitUser=f"rewrite-manifests-{uuid.uuid4()}", commitIdentifier=0,
            commitKind=CommitKind.COMPACT, timeMillis=int(time.time() * 1000), deltaRecordCount=0,
            changelogManifestList=None, changelogRecordCount=None)
        if ctx.io.write_if_absent(layout.snapshot_path(snap.id), snapshot_codec.encode(snap)):
            snapshots.commit_latest_hint(snap.id)
            return RewriteResult(snap.id, len(before), len(metas))
        for name in written:  # lost the race: ours is garbage, theirs stands
            ctx.io.delete(layout.manifest_path(name))
    raise CommitConflictError(
        f"gave up rewriting the manifests of {ctx.path}: other writers kept committing; "
        "retry when the table is quieter or raise 'commit.max-retries'",
        ConflictReason.RETRIES_EXHAUSTED)


def _order(entry: ManifestEntry) -> tuple[Any, ...]:
    partition = tuple((v is not None, v) for v in entry.partition)
    return partition, entry.bucket, entry.file.level, entry.file.fileName


def _chunks(entries: list[ManifestEntry], target: int) -> list[list[ManifestEntry]]:
    """Runs of ``entries`` whose encoded manifests reach ``target`` bytes (all but the last),
    as a rolling writer closes a file once it is full. A rewritten manifest is therefore
    never "small" to a commit's small-manifest merge, which would otherwise fold the
    clustered manifests back into one manifest of every partition."""
    if not entries:
        return []
    sample = entries[:_SAMPLE]
    per_entry = max(1, len(manifest_codec.encode_entries(sample)) // len(sample))
    out: list[list[ManifestEntry]] = []
    start = 0
    while start < len(entries):
        end = min(len(entries), start + max(1, -(-target // per_entry)))
        while end < len(entries):
            missing = target - len(manifest_codec.encode_entries(entries[start:end]))
            if missing <= 0:
                break
            end = min(len(entries), end + max(1, -(-missing // per_entry)))
        out.append(entries[start:end])
        start = end
    return out
