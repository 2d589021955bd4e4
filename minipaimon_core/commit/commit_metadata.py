"""The manifest files of one commit attempt: delta manifest, new base list, delta list and
changelog list, written before the snapshot that references them (commit.py).

Nothing here is referenced until the attempt's snapshot is created: a caller that learns
the attempt lost deletes the names it was handed (``written``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CorruptDataFileError
from ..file_format.data_file import file_paths
from ..format.layout import TableLayout
from ..format.options import Options
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..metadata.commit_message import CommitEntries, CommitMessage
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


def make_durable(io: FileIO, layout: TableLayout, messages: Sequence[CommitMessage], written: Sequence[str]) -> None:
    """FileIO.sync of :func:`attempt_files`, before the create. Raises CorruptDataFileError
    when one of them is gone (deleted since it was written: the commit cannot stand)."""
    try:
        io.sync(attempt_files(layout, messages, written))
    except FileNotFoundError as e:
        raise CorruptDataFileError(
            f"{e.filename or e}: a file of this commit is gone before the commit (deleted by "
            "another process, or by orphan cleanup with a short older_than); nothing was "
            "committed: write the data again") from None


def attempt_files(layout: TableLayout, messages: Sequence[CommitMessage], written: Sequence[str]) -> list[str]:
    """The paths of the files a commit attempt's snapshot references that are new with it:
    the messages' new, compacted and changelog files (with their file indexes) and the
    metadata files the attempt wrote (``written``: manifests, manifest lists, index
    manifest and index files, by name). What FileIO.sync makes durable before the create."""
    data = [path for m in messages for f in (*m.newFiles, *m.compactAfter, *m.changelogFiles)
            for path in file_paths(layout, m.partitionPath, m.bucket, f)]
    return [*data, *(layout.metadata_path(name) for name in written)]


__all__ = ["ListsWritten", "attempt_files", "make_durable", "write_manifests"]
