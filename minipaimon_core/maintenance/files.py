"""What a snapshot or tag references: the file sets maintenance reasons about.

A snapshot references its manifest lists (base, delta, changelog), the manifests in them,
the data files of its merged entries ("live" files), the changelog files of its
changelog manifests, and its index manifest with the deletion-vector index files in it. A
tag is a copy of a snapshot file and references the same.

Two rules of the commit protocol make cheap reasoning possible (see docs/format.md):

* file names are unique and a deleted data file is never added again, so a data file live
  in snapshot ``a`` and not in ``b > a`` was DELETEd by the delta of some snapshot in
  ``(a, b]``;
* base(N+1) = base(N) + delta(N) with small manifests merged, so a manifest that drops out
  of the base lists never comes back; likewise an index file replaced for its bucket.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptMetadataError
from ..format.layout import TableLayout
from ..format.manifest_file import ManifestEntry
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..metadata.context import HasContext
from ..metadata.deletion_vectors import DeletionVectorIO, index_file_names
from ..metadata.manifest_io import ManifestIO, live_adds
from ..metadata.snapshot_manager import SnapshotManager
from ..metadata.tags import TagManager
from ..schema.partition import PartitionSpec
from ..schema.schema import SchemaCache, SchemaManager, TableSchema


@dataclass
class TableFiles:
    """The narrow view of a table that maintenance needs (no Table object)."""

    io: FileIO
    layout: TableLayout
    snapshots: SnapshotManager
    manifests: ManifestIO
    schema: TableSchema
    vectors: DeletionVectorIO
    _paths: dict[tuple[Any, ...], str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, table: HasContext) -> TableFiles:
        """The files view of a table handle or context (its current schema)."""
        ctx = table.context()
        return cls(ctx.io, ctx.layout, ctx.snapshots, ctx.manifests, ctx.schema, ctx.vectors)

    @classmethod
    def of_line(cls, io: FileIO, layout: TableLayout) -> TableFiles:
        """The files view of the line (main or a branch) of ``layout``, read now. Raises
        TableNotFoundError if it has no schema."""
        schemas = SchemaCache(SchemaManager(io, layout))
        manifests = ManifestIO(io, layout, schemas)
        return cls(io, layout, SnapshotManager(io, layout), manifests, schemas.manager.latest(),
                   DeletionVectorIO(io, layout, manifests))

    # -- paths -------------------------------------------------------------------------------

    def entry_path(self, e: ManifestEntry) -> str:
        """Path of the data or changelog file of a manifest entry."""
        key = tuple(e.partition)
        if key not in self._paths:
            spec = PartitionSpec.of(self.schema)
            self._paths[key] = spec.path(list(e.partition))
        return self.layout.data_file_path(self._paths[key], e.bucket, e.file.fileName)

    def entry_paths(self, e: ManifestEntry) -> list[str]:
        """Paths of the data or changelog file of a manifest entry and of its extra files
        (a separate file index, ``<data file>.index``): one unit for expiration, orphan
        cleanup and rollback. Raises CorruptMetadataError for an extra file name that is
        not the file's own index (metadata is untrusted: no other path is ever derived)."""
        path = self.entry_path(e)
        if not e.file.extraFiles:
            return [path]
        out = [path]
        for name in e.file.extraFiles:
            if name != TableLayout.index_file_of(e.file.fileName):
                raise CorruptMetadataError(
                    f"data file {path} lists the extra file {name!r}: Paimon's only extra file "
                    f"of a data file is its index {TableLayout.index_file_of(e.file.fileName)!r}; "
                    "the manifest is damaged")
            out.append(path[:len(path) - len(e.file.fileName)] + name)
        return out

    # -- what a snapshot references ---------------------------------------------------------

    @staticmethod
    def lists_of(snap: Snapshot) -> list[str]:
        """Names of the manifest lists of ``snap``."""
        names = [snap.baseManifestList, snap.deltaManifestList]
        if snap.changelogManifestList:
            names.append(snap.changelogManifestList)
        return names

    def manifests_of(self, snap: Snapshot) -> set[str]:
        """Names of every manifest list and manifest ``snap`` references."""
        names = set(self.lists_of(snap))
        for lst in self.lists_of(snap):
            names.update(m.fileName for m in self.manifests.read_list(lst))
        return names

    def manifests_of_list(self, name: str | None) -> set[str]:
        """Names of manifest list ``name`` (if any) and of its manifests."""
        if name is None:
            return set()
        return {name, *(m.fileName for m in self.manifests.read_list(name))}

    def existing_lists(self, snap: Snapshot) -> list[str]:
        """The manifest lists of ``snap`` that exist (a long-lived changelog keeps some)."""
        return [n for n in self.lists_of(snap) if self.io.exists(self.layout.manifest_path(n))]

    def changelog_used_paths(self, changelog: Snapshot) -> set[str]:
        """What a long-lived changelog uses: its manifest lists still there and their
        manifests, its changelog files, and the files its delta names (a stream without a
        changelog producer reads those it adds; those it deletes are its expiration's to
        delete, so orphan cleanup leaves them to it, as Paimon's does)."""
        lists = self.existing_lists(changelog)
        paths: set[str] = set()
        for name in lists:
            paths |= self.manifest_paths(self.manifests_of_list(name))
        if changelog.changelogManifestList in lists:
            paths |= self.changelog_paths(changelog)
        if changelog.deltaManifestList in lists:
            for e in self.manifests.entries_of(self.manifests.read_list(changelog.deltaManifestList)):
                paths.update(self.entry_paths(e))
        return paths

    def live_paths(self, snap: Snapshot) -> set[str]:
        """Paths of the data files of ``snap`` and their extra files (file indexes): exactly
        what a full read of it opens."""
        metas = self.manifests.data_manifests(snap)
        adds = live_adds(self.manifests.entries_of(metas), f"snapshot {snap.id} of {self.layout.where}",
                         self.manifests.names_of(metas))
        return {p for e in adds for p in self.entry_paths(e)}

    def changelog_paths(self, snap: Snapshot) -> set[str]:
        """Paths of the changelog files ``snap`` added."""
        if not snap.changelogManifestList:
            return set()
        metas = self.manifests.read_list(snap.changelogManifestList)
        return {p for e in self.manifests.entries_of(metas) for p in self.entry_paths(e)}

    def index_paths(self, snap: Snapshot) -> set[str]:
        """Paths of the index manifest and deletion-vector index files of ``snap``."""
        return {self.layout.metadata_path(n) for n in index_file_names(self.vectors, snap)}

    def used_paths(self, snap: Snapshot) -> set[str]:
        """Exact file set of ``snap``: manifests, lists, live data files, changelog files,
        index files."""
        return (self.manifest_paths(self.manifests_of(snap)) | self.live_paths(snap)
                | self.changelog_paths(snap) | self.index_paths(snap))

    def collector(self) -> PathCollector:
        """A :class:`PathCollector` over this table's manifests."""
        return PathCollector(self)

    def manifest_paths(self, names: Iterable[str]) -> set[str]:
        return {self.layout.manifest_path(n) for n in names}

    # -- tags ----------------------------------------------------------------------------------

    def tags(self) -> dict[str, Snapshot]:
        """Tag name -> the snapshot it pins (tags deleted meanwhile are skipped)."""
        return TagManager(self.io, self.layout).snapshots()


class PathCollector:
    """The union of :meth:`TableFiles.used_paths` over many snapshots and tags."""

    def __init__(self, files: TableFiles) -> None:
        self._files = files
        self._seen: set[tuple[str, str]] = set()
        self.paths: set[str] = set()

    def add(self, snap: Snapshot) -> None:
        """Add the files ``snap`` uses. Raises CorruptMetadataError for a missing manifest."""
        key = (snap.baseManifestList, snap.deltaManifestList)
        if key not in self._seen:  # a tag of a retained snapshot adds nothing new
            self.paths |= self._files.used_paths(snap)
            self._seen.add(key)

    def add_changelog(self, changelog: Snapshot) -> None:
        """Add the files a long-lived changelog uses."""
        self.paths |= self._files.changelog_used_paths(changelog)
