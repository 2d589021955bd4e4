"""A table's health: what slows reads or holds storage, each with the action that fixes it.

``Table.health()``, ``minipaimon health PATH`` and the ``health`` system table (Python and
Spark's ``path$health``) report the latest snapshot's:

================  ===================================================================  ======================
check             value                                                                action when
================  ===================================================================  ======================
small files       files below half of ``target-file-size`` in buckets holding           a bucket has two or
                  several (the compaction picker's notion of small)                    more
sorted runs       (primary key) the most sorted runs of one bucket: level-0 files      at the
                  plus non-empty levels; every run is merged by each read              ``num-sorted-run.
                                                                                       compaction-trigger``
level-0 files     (primary key) files not yet compacted; for tables whose reads        deletion vectors /
                  skip level 0 (deletion vectors, first-row) rows nobody sees yet      first-row: any
deletion vectors  the share of the rows of the data files their vectors mark           20 % or more
expiration        snapshots that expiration by the table options would remove now,     any
                  and the bytes of the files it would delete (a dry run)
orphan files      files no snapshot or tag uses, older than a day, and their bytes     any
================  ===================================================================  ======================

Everything comes from metadata, deletion-vector index files and one listing of the table
(the orphan scan): no data file is read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from ..format.manifest_file import ManifestEntry
from ..lsm.merge_config import skips_level0
from ..metadata.context import TableContext
from ..metadata.manifest_io import live_files
from . import expire, orphans
from .files import TableFiles

HEALTH_SCHEMA = pa.schema([("check", pa.string()), ("value", pa.float64()),
                           ("detail", pa.string()), ("action", pa.string())])
DV_RATIO_ACTION = 0.2  # a share of marked rows worth a full compaction


def size_text(n: int) -> str:
    """A byte count as text: B, KiB, MiB or GiB (what the CLI and health print)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)


@dataclass(frozen=True)
class Finding:
    """One check: its figure, what it means, and what to do (None: nothing)."""

    check: str
    value: float
    detail: str
    action: str | None = None


@dataclass(frozen=True)
class Health:
    """The findings of one table (``str()`` prints them as aligned text)."""

    path: str
    findings: list[Finding]

    @property
    def actions(self) -> list[str]:
        return [f.action for f in self.findings if f.action]

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pylist([vars(f) for f in self.findings], schema=HEALTH_SCHEMA)

    def __str__(self) -> str:
        width = max(len(f.check) for f in self.findings)
        lines = [f"{f.check.ljust(width)}  {f.detail}" + (f"\n{' ' * width}  -> {f.action}" if f.action else "")
                 for f in self.findings]
        return "\n".join(lines)


def health(ctx: TableContext, command: str = "minipaimon") -> Health:
    """The findings for the table of ``ctx`` at its latest snapshot; actions name the
    ``command`` line tool and the Python call that fix each."""
    files = TableFiles.of(ctx)
    entries = live_files(ctx.manifests, ctx.snapshots.latest())
    buckets: dict[tuple[object, ...], list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        buckets[(tuple(e.partition), e.bucket)].append(e)
    path = ctx.path
    found = [_small_files(ctx, buckets, path, command)]
    if ctx.schema.primaryKeys:
        found += _runs(ctx, buckets, path, command)
    found.append(_vectors(ctx, entries, path, command))
    found.append(_expiration(files, path, command))
    found.append(_orphans(files, path, command))
    return Health(path, found)


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _where(ctx: TableContext, key: tuple[object, ...]) -> str:
    partition, bucket = key
    prefix = ctx.partition_spec().path(list(partition))  # type: ignore[call-overload]
    return f"{prefix}/bucket-{bucket}" if prefix else f"bucket-{bucket}"


def _small_files(ctx: TableContext, buckets: dict[tuple[object, ...], list[ManifestEntry]],
                 path: str, command: str) -> Finding:
    limit = ctx.options["target-file-size"] // 2
    small = {k: sum(e.file.fileSize < limit for e in group) for k, group in buckets.items()}
    several = {k: n for k, n in small.items() if n >= 2}
    total = sum(several.values())
    if not several:
        return Finding("small files", 0, f"no bucket has several files below {size_text(limit)}")
    worst = max(several, key=lambda k: several[k])
    detail = (f"{_n(total, 'file')} below {size_text(limit)} in {_n(len(several), 'bucket')} "
              f"(most: {several[worst]} in {_where(ctx, worst)})")
    return Finding("small files", total, detail,
                   f"{command} compact {path} --minor (t.compact(strategy='minor')) merges them")


def _runs(ctx: TableContext, buckets: dict[tuple[object, ...], list[ManifestEntry]],
          path: str, command: str) -> list[Finding]:
    trigger = ctx.options["num-sorted-run.compaction-trigger"]
    runs = {k: sum(e.file.level == 0 for e in g) + len({e.file.level for e in g if e.file.level > 0})
            for k, g in buckets.items()}
    level0 = sum(e.file.level == 0 for g in buckets.values() for e in g)
    worst = max(runs, key=lambda k: runs[k], default=None)
    most = runs[worst] if worst is not None else 0
    behind = sum(n >= trigger for n in runs.values())
    detail = (f"at most {most} in one bucket ({_where(ctx, worst)}); {_n(behind, 'bucket')} at the "
              f"compaction trigger ({trigger})" if worst is not None else "no data files")
    fix = f"{command} compact {path} (t.compact()) merges every bucket into one sorted run"
    out = [Finding("sorted runs", most, detail, fix if behind else None)]
    hidden = skips_level0(ctx.schema)
    rows0 = sum(e.file.rowCount for g in buckets.values() for e in g if e.file.level == 0)
    if hidden:
        detail0 = f"{_n(level0, 'file')} ({_n(rows0, 'record')}) that reads skip until they are compacted"
    else:
        detail0 = f"{_n(level0, 'file')} ({_n(rows0, 'record')}) merged by every read"
    out.append(Finding("level-0 files", level0, detail0, fix if hidden and level0 else None))
    return out


def _vectors(ctx: TableContext, entries: Iterable[ManifestEntry], path: str, command: str) -> Finding:
    snap = ctx.snapshots.latest()
    marked = 0
    for entry in ctx.vectors.entries(snap):
        marked += sum(len(v) for v in ctx.vectors.vectors(entry).values())
    rows = sum(e.file.rowCount for e in entries)
    ratio = marked / rows if rows else 0.0
    if not ctx.options["deletion-vectors.enabled"]:
        return Finding("deletion vectors", 0.0, "off (deletion-vectors.enabled)")
    detail = f"{marked} of {rows} rows in data files marked deleted ({ratio:.0%})"
    action = (f"{command} compact {path} (t.compact()) rewrites the files without them"
              if ratio >= DV_RATIO_ACTION else None)
    return Finding("deletion vectors", ratio, detail, action)


def _sizes(files: TableFiles, paths: Iterable[str]) -> int:
    total = 0
    for p in paths:
        try:
            total += files.io.file_size(p)
        except FileNotFoundError:
            continue
    return total


def _expiration(files: TableFiles, path: str, command: str) -> Finding:
    would = expire.expire_snapshots(files, dry_run=True)
    if not would.snapshots:
        return Finding("expiration", 0, "nothing to expire by the table's retention options")
    freed = _sizes(files, would.files)
    detail = (f"{_n(len(would.snapshots), 'snapshot')} would expire, freeing {size_text(freed)} "
              f"in {_n(len(would.files), 'file')}")
    return Finding("expiration", len(would.snapshots), detail,
                   f"{command} expire {path} (t.expire_snapshots()); writes expire on their own "
                   "unless the table is write-only")


def _orphans(files: TableFiles, path: str, command: str) -> Finding:
    found = orphans.remove_orphan_files(files, dry_run=True)
    if not found.files:
        return Finding("orphan files", 0, "none older than a day")
    detail = f"{_n(len(found.files), 'file')} ({size_text(found.bytes)}) older than a day that nothing uses"
    return Finding("orphan files", len(found.files), detail,
                   f"{command} orphans {path} (t.remove_orphan_files()) deletes them")


__all__ = ["HEALTH_SCHEMA", "Finding", "Health", "health"]
