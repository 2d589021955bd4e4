"""Branches: further lines of history of one table, as Apache Paimon 0.9's ``BranchManager``.

A branch ``b`` keeps its own schemas, snapshots, long-lived changelogs, tags and consumers
under ``branch/branch-b/`` (:class:`~minipaimon_core.format.layout.TableLayout` with
``branch="b"``); its manifests, index and data files are in the table's own folders, shared
with every other line: a branch made from a tag starts as a copy of the tag's snapshot and
references the main line's files. Every operation of a table works within a branch
unchanged (the layout decides where metadata goes); deletions keep what any other line uses
(:mod:`minipaimon_core.maintenance.lines`).

A branch *exists* when its directory holds a schema file (what Paimon's orphan cleanup
requires of every branch). Creating one writes the schema files last, so a branch
directory without a schema is a creation or deletion that did not finish: not a branch,
:meth:`BranchManager.unreadable` lists it and the deletions refuse to run while it is there
(its snapshots may name files), ``delete_branch`` removes it.

```
 create(b, tag)   tag/tag-<tag> and snapshot/snapshot-<id> copied from this line (the
                  snapshot from the tag where this line expired it), then the schemas
                  0..schemaId newest first (the newest makes the branch exist)
 create(b)        (no tag: an empty branch) the schemas 0..latest, newest first
 delete(b)        the schema files (the branch no longer exists), then its directory;
                  its data files are left to orphan cleanup, as Paimon does
```

Paimon 0.9 copies only the schema of the branch's snapshot (later versions copy 0..id, as
here); a branch's data files may name older schemas, which the branch then reads from the
main line (ids below a branch's first schema are shared history:
:class:`~minipaimon_core.schema.schema.SchemaManager`).
"""

from __future__ import annotations

from ..errors import BranchNotFoundError, CorruptMetadataError, InvalidArgumentError
from ..format import snapshot as snapshot_codec
from ..format.branch_names import (
    BRANCH_OPTION,
    FALLBACK_BRANCH,
    MAIN_BRANCH,
    check_branch_name,
    is_branch_dir_name,
)
from ..format.layout import TableLayout, branch_of_dir, keys_of
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..schema.schema import SchemaManager
from .snapshot_manager import SnapshotManager
from .tags import TagManager


class BranchManager:
    """Lists, creates and deletes the branches of the table of ``layout`` (any of its
    lines: branches are made from the line ``layout`` is on)."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def _entries(self) -> list[str]:
        return sorted(n for n in self._io.list_names(self._layout.branches_dir) if is_branch_dir_name(n))

    def names(self) -> list[str]:
        """The branches (other than main) that exist, sorted."""
        out = []
        for entry in self._entries():
            name = branch_of_dir(entry)
            if name is not None and self._has_schema(name):
                out.append(name)
        return out

    def unreadable(self) -> list[str]:
        """The directories of ``branch/`` that Paimon takes for branches and minipaimon
        cannot read as one: a name it cannot hold (``branch-main``, digits only, other
        characters), or no schema file (an unfinished creation or deletion)."""
        return [entry for entry in self._entries()
                if (name := branch_of_dir(entry)) is None or not self._has_schema(name)]

    def exists(self, name: str) -> bool:
        """Whether branch ``name`` exists (``main`` always does). Raises
        InvalidArgumentError for a bad name."""
        return name == MAIN_BRANCH or self._has_schema(check_branch_name(name))

    def _has_schema(self, name: str) -> bool:
        return bool(keys_of("schema", self._io.list_names(self._layout.on_branch(name).schema_dir)))

    def layout_of(self, name: str) -> TableLayout:
        """The layout of existing branch ``name``. Raises BranchNotFoundError,
        InvalidArgumentError (bad name)."""
        if not self.exists(name):
            raise BranchNotFoundError(self._missing(name))
        return self._layout.on_branch(name)

    def _missing(self, name: str) -> str:
        names = self.names()
        return (f"no branch {name!r} in {self._layout.root} (branches: "
                f"{', '.join(names) if names else 'none'}); create it with create_branch")

    def create(self, name: str, tag: str | None = None) -> None:
        """Create branch ``name`` from tag ``tag`` of this line (its snapshot becomes the
        branch's first), or empty with this line's latest schema.

        Raises InvalidArgumentError (bad name, a branch or branch directory of that name
        exists), SnapshotNotFoundError (no such tag), CorruptMetadataError (damaged tag).
        """
        check_branch_name(name)
        target = self._layout.on_branch(name)
        if self._io.list_names(target.home):
            raise InvalidArgumentError(
                f"branch {name!r} already exists in {self._layout.root}" if self._has_schema(name) else
                f"{target.home} holds the files of a branch whose creation or deletion did not "
                f"finish: delete_branch({name!r}) first")
        schemas = SchemaManager(self._io, self._layout)
        if tag is None:
            top = schemas.latest().id
        else:
            snap = TagManager(self._io, self._layout).get(tag)
            self._io.replace(target.tag_path(tag), self._io.read_bytes(self._layout.tag_path(tag)))
            self._io.replace(target.snapshot_path(snap.id), self._snapshot_bytes(snap))
            top = snap.schemaId
        self._copy_schemas(schemas, target, top)

    def _snapshot_bytes(self, snap: Snapshot) -> bytes:
        """The file of ``snap`` as this line holds it, or ``snap`` encoded where this line
        expired it (a tag outlives its snapshot)."""
        live = SnapshotManager(self._io, self._layout).try_get(snap.id)
        if live is not None and live.baseManifestList == snap.baseManifestList:
            return self._io.read_bytes(self._layout.snapshot_path(snap.id))
        return snapshot_codec.encode(snap)

    def _copy_schemas(self, schemas: SchemaManager, target: TableLayout, top: int) -> None:
        """Copy this line's schemas ``top`` down to 0 (those it has or inherits) into
        ``target``; the first (``top``) makes the branch exist."""
        ids = sorted({top, *(i for i in schemas.schema_ids() if i <= top)}, reverse=True)
        for sid in ids:
            try:
                _, data = schemas.file_bytes(sid)
            except CorruptMetadataError:
                if sid == top:
                    raise
                continue  # a gap below the branch point: inherited from main when read
            if not self._io.write_if_absent(target.schema_path(sid), data) and sid == top:
                raise InvalidArgumentError(f"branch {target.branch!r} was created concurrently")

    def delete(self, name: str) -> None:
        """Delete branch ``name`` (or the files of its unfinished creation or deletion).

        Raises BranchNotFoundError, InvalidArgumentError (``main``, a bad name, or the
        branch another line reads as its ``scan.fallback-branch``)."""
        if name == MAIN_BRANCH:
            raise InvalidArgumentError("the main branch cannot be deleted (drop the table)")
        target = self._layout.on_branch(check_branch_name(name))
        if not self._io.list_names(target.home):
            raise BranchNotFoundError(self._missing(name))
        for line in [MAIN_BRANCH, *self.names()]:
            if line == name:
                continue
            try:
                options = SchemaManager(self._io, self._layout.on_branch(line)).latest().options
            except CorruptMetadataError:
                continue
            if options.get(FALLBACK_BRANCH) == name:
                raise InvalidArgumentError(
                    f"branch {name!r} is the {FALLBACK_BRANCH!r} of "
                    f"{'the main branch' if line == MAIN_BRANCH else f'branch {line!r}'}: "
                    f"reset that option first")
        for sid in SchemaManager(self._io, target).schema_ids():
            self._io.delete(target.schema_path(sid))  # from now on the branch does not exist
        self._io.delete_tree(target.home)


__all__ = ["BRANCH_OPTION", "FALLBACK_BRANCH", "BranchManager"]
