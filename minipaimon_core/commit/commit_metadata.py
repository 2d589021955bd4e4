"""The manifest files of one commit attempt: delta manifest, new base list, delta list and
changelog list, written before the snapshot that references them (commit.py).

Nothing here is referenced until the attempt's snapshot is created: a caller that learns
the attempt lost deletes the names it was handed (``written``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..format.options import Options
from ..format.snapshot import Snapshot
from ..metadata.commit_message import CommitEntries
from ..metadata.manifest_io import ManifestIO
from ..metadata.manifest_merge import next_base
from ..schema.schema import TableSchema


@dataclass(frozen=True)
class ListsWritten:
    """(name, size, digest) of each manifest list an attempt wrote (no changelog: Nones)."""

    base: tuple[str, int, str]
    delta: tuple[str, int, str]
    changelog: tuple[str | None, int | None, str | None]


def write_manifests(manifests: ManifestIO, schema: TableSchema, options: Options,
                    change: CommitEntries, latest: Snapshot | None, written: list[str]) -> ListsWritten:
    """Write the manifests and manifest lists of ``change`` on top of ``latest`` (every name
    appended to ``written`` as soon as it exists).

    The base list is base(N) + delta(N), merged or rewritten clustered by partition as
    :mod:`manifest_merge` decides: a commit costs O(files it changes)."""
    width = len(schema.partitionKeys)
    delta_meta = manifests.write_entries(change.entries, schema.id, width)
    written.append(delta_meta.fileName)
    base_metas = next_base(manifests, latest, options, schema, written)
    base = manifests.write_list(base_metas)
    written.append(base[0])
    delta = manifests.write_list([delta_meta])
    written.append(delta[0])
    changelog: tuple[str | None, int | None, str | None] = (None, None, None)
    if change.changelog:
        cl_meta = manifests.write_entries(change.changelog, schema.id, width)
        written.append(cl_meta.fileName)
        changelog = manifests.write_list([cl_meta])
        written.append(changelog[0])
    return ListsWritten(base, delta, changelog)


__all__ = ["ListsWritten", "write_manifests"]
