"""The base manifest list of a new snapshot, and the one writer of partition-sorted manifests.

A commit's base list is base(N) + delta(N) (empty manifests dropped), then one of
(:func:`pick_merge`, a pure rule over the manifest metas, no IO):

```
 unclustered bytes >= max(manifest.full-compaction-threshold-size, all bytes / 10)?
   yes ─► FULL REWRITE: keep the clustered manifests that reach manifest.target-file-size,
   │      hold no DELETE and whose partition range is disjoint from the unclustered ones';
   │      merge the rest (ADD/DELETE pairs cancel), sort by (partition, bucket, level, name),
   │      cut at manifest.target-file-size: the new manifests are ``clustered``
   no ─► at least manifest.merge-min-count manifests below manifest.target-file-size?
          yes ─► SMALL MERGE: merge those, sorted and cut the same way (not ``clustered``)
          no  ─► the list as it is
```

"Unclustered" manifests are those not written by a full rewrite: commit deltas and small
merges; each spans every partition its commits touched. Cost: a commit is O(its own
changes) plus, rarely, a rewrite of O(unclustered + overlapping clustered manifests). The
rewrite runs only once the unclustered bytes reach a tenth of all manifest bytes (and at
least the threshold size), so between two rewrites of a table of S manifest bytes, commits
of d bytes each number at least S / 10d: the rewrite adds at most ~10x a commit's own work,
amortised, whatever the table's size. A filtered plan reads the unclustered manifests whole
(at most ~10 % of the bytes, or the threshold) and only the clustered manifests whose
partition range it may match.

Correctness needs none of this: a manifest's ``partitionStats`` are computed from its own
entries, so a plan prunes safely whatever the grouping. Kept manifests never hold the ADD of
a DELETE being merged: a DELETE has its ADD's partition, so the ADD's manifest overlaps the
unclustered partition range and is rewritten too (a DELETE left unmatched is written again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..format.manifest_file import ManifestEntry
from ..format.manifest_list import ManifestFileMeta
from ..format.options import Options
from ..format.snapshot import Snapshot
from ..schema.schema import TableSchema
from .manifest_io import ManifestIO, merge_entries

UNCLUSTERED_SHARE = 10  # a full rewrite once the unclustered bytes reach 1 / 10 of all bytes
_SAMPLE = 512  # entries encoded to estimate the bytes of one entry in a manifest


@dataclass(frozen=True)
class MergeLimits:
    """The options :func:`pick_merge` follows (bytes, bytes, count)."""

    target: int  # manifest.target-file-size
    full_threshold: int  # manifest.full-compaction-threshold-size
    min_count: int  # manifest.merge-min-count


@dataclass(frozen=True)
class MergePick:
    """``keep`` stays as it is; ``rewrite`` is merged, sorted and cut (``full``: into
    clustered manifests)."""

    keep: list[ManifestFileMeta]
    rewrite: list[ManifestFileMeta]
    full: bool = False


def pick_merge(metas: list[ManifestFileMeta], limits: MergeLimits) -> MergePick:
    """Which manifests of a new base list to rewrite (module docstring); pure."""
    unclustered = [m for m in metas if not m.clustered]
    loose = sum(m.fileSize for m in unclustered)
    total = sum(m.fileSize for m in metas)
    if unclustered and loose >= max(limits.full_threshold, total / UNCLUSTERED_SHARE):
        changed = union_ranges([column_ranges(m) for m in unclustered])
        keep = [m for m in metas if m.clustered and m.fileSize >= limits.target and not m.numDeletedFiles
                and not may_overlap(column_ranges(m), changed)]
        kept = {m.fileName for m in keep}
        return MergePick(keep, [m for m in metas if m.fileName not in kept], full=True)
    small = [m for m in metas if m.fileSize < limits.target]
    if len(small) >= limits.min_count:
        return MergePick([m for m in metas if m.fileSize >= limits.target], small)
    return MergePick(metas, [])


# One partition column's values in a manifest: (min, max, holds a null), min and max of the
# non-null values (None, None: only nulls); None: unknown (a list written before partition
# stats kept the range of the non-null values beside nulls).
Range = tuple[Any, Any, bool] | None


def column_ranges(meta: ManifestFileMeta) -> list[Range]:
    """Per partition column, the values of ``meta``'s entries."""
    stats, rows = meta.partitionStats, meta.numAddedFiles + meta.numDeletedFiles
    out: list[Range] = []
    for lo, hi, nulls in zip(stats.minValues, stats.maxValues, stats.nullCounts):
        if lo is None or hi is None:
            out.append((None, None, True) if nulls is not None and nulls >= rows else None)
        else:
            out.append((lo, hi, nulls is None or nulls > 0))
    return out


def union_ranges(ranges: list[list[Range]]) -> list[Range]:
    """Per column, the range covering all of ``ranges``."""
    out: list[Range] = []
    for col in zip(*ranges):
        if any(r is None for r in col):
            out.append(None)
            continue
        known = [r for r in col if r is not None and r[0] is not None]
        nulls = any(r is not None and r[2] for r in col)
        try:
            out.append((min(r[0] for r in known), max(r[1] for r in known), nulls) if known
                       else (None, None, nulls))
        except TypeError:  # values of several types: unknown
            out.append(None)
    return out


def may_overlap(a: list[Range], b: list[Range]) -> bool:
    """Whether two manifests may hold a common partition: False only if in some column they
    share neither a null nor a value of their [min, max] ranges."""
    for x, y in zip(a, b):
        if x is None or y is None or (x[2] and y[2]):
            continue  # unknown, or both hold a null
        if x[0] is None or y[0] is None:
            return False  # one side holds only nulls, the other none
        try:
            if x[1] < y[0] or y[1] < x[0]:
                return False
        except TypeError:
            continue
    return True


def next_base(mio: ManifestIO, latest: Snapshot | None, options: Options, schema: TableSchema,
              written: list[str]) -> list[ManifestFileMeta]:
    """Base list of the snapshot after ``latest``: base(N) + delta(N), merged or rewritten
    clustered by partition as the options decide (:func:`new_base`; names of the manifests
    written are appended to ``written``)."""
    if latest is None:
        return []
    limits = MergeLimits(options["manifest.target-file-size"], options["manifest.full-compaction-threshold-size"],
                         options["manifest.merge-min-count"])
    return new_base(mio, mio.data_manifests(latest), limits, schema.id, len(schema.partitionKeys), written)


def new_base(mio: ManifestIO, metas: list[ManifestFileMeta], limits: MergeLimits, schema_id: int,
             partition_width: int, written: list[str]) -> list[ManifestFileMeta]:
    """The base list of a new snapshot from ``metas`` = base(N) + delta(N) (module docstring).
    Names of the manifests written are appended to ``written``."""
    metas = [m for m in metas if m.numAddedFiles or m.numDeletedFiles]
    pick = pick_merge(metas, limits)
    if not pick.rewrite:
        return pick.keep
    adds, deletes = merge_entries(mio.entries_of(pick.rewrite))
    return pick.keep + write_sorted(mio, adds + deletes, limits.target, schema_id, partition_width,
                                    pick.full, written)


def write_sorted(mio: ManifestIO, entries: list[ManifestEntry], target: int, schema_id: int,
                 partition_width: int, clustered: bool, written: list[str]) -> list[ManifestFileMeta]:
    """Write ``entries`` sorted by (partition, bucket, level, file name; null partition values
    first) into manifests cut at ``target`` bytes (all but the last reach it), so each covers
    a narrow partition range. Names written are appended to ``written`` as they are written."""
    out: list[ManifestFileMeta] = []
    for chunk, data in _chunks(mio, _sorted(entries), target):
        meta = mio.write_entries(chunk, schema_id, partition_width, clustered, data)
        written.append(meta.fileName)
        out.append(meta)
    return out


def _sorted(entries: list[ManifestEntry]) -> list[ManifestEntry]:
    """``entries`` in (partition, bucket, level, file name) order: grouped by partition, the
    partitions sorted once each, then each group (cheaper than a tuple key per entry)."""
    groups: dict[tuple[Any, ...], list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault(tuple(e.partition), []).append(e)
    out: list[ManifestEntry] = []
    for key in sorted(groups, key=lambda k: tuple((v is not None, v) for v in k)):
        group = groups[key]
        if len(group) > 1:
            group.sort(key=lambda e: (e.bucket, e.file.level, e.file.fileName))
        out.extend(group)
    return out


def _chunks(mio: ManifestIO, entries: list[ManifestEntry], target: int) -> list[tuple[list[ManifestEntry], bytes]]:
    """Runs of ``entries`` whose encoded manifests reach ``target`` bytes (all but the last),
    as a rolling writer closes a file once it is full, each with its encoding. A sorted
    manifest is therefore never "small" to the small-manifest merge, which would otherwise
    fold a clustered run back into one manifest of every partition."""
    if not entries:
        return []
    sample = entries[:_SAMPLE]
    per_entry = max(1, len(mio.encode_entries(sample)) // len(sample))
    out: list[tuple[list[ManifestEntry], bytes]] = []
    start = 0
    while start < len(entries):
        end = min(len(entries), start + max(1, -(-target // per_entry)))
        data = mio.encode_entries(entries[start:end])
        while end < len(entries) and len(data) < target:
            end = min(len(entries), end + max(1, -(-(target - len(data)) // per_entry)))
            data = mio.encode_entries(entries[start:end])
        out.append((entries[start:end], data))
        start = end
    return out
