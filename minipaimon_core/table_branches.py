"""Branches of a table, as Apache Paimon's (mixed into :class:`minipaimon_core.table.Table`;
the work is :mod:`minipaimon_core.metadata.branches` and
:mod:`minipaimon_core.maintenance.fast_forward`).

```python
t.create_tag("t1"); audit = t.create_branch("audit", tag="t1")   # or empty: create_branch("b")
audit.write(data); audit.to_arrow()                              # a branch is a table handle
open_table(path, options={"branch": "audit"})                    # the same, by Paimon's option
t.branches(); t.fast_forward("audit"); t.delete_branch("audit")
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .format.layout import TableLayout
from .io.fileio import FileIO
from .maintenance import fast_forward
from .metadata.branches import BranchManager
from .metadata.context import Clock
from .schema.features import check_migrated

if TYPE_CHECKING:
    from typing_extensions import Self

    from .schema.schema import TableSchema


class TableBranches:
    """The branches of a table: handles on them, creation, deletion, fast-forward."""

    path: str
    io: FileIO
    layout: TableLayout
    table_schema: TableSchema
    clock: Clock

    if TYPE_CHECKING:
        def __init__(self, path: str, io: FileIO | None = None, branch: str = ...,
                     clock: Clock | None = None) -> None: ...
        def _load_line(self) -> None: ...

    @property
    def current_branch(self) -> str:
        """The branch this handle reads and writes (``main`` unless opened on another)."""
        return self.layout.branch

    def branch(self, name: str) -> Self:
        """A handle on branch ``name`` of this table (``main``: the main branch): reads,
        writes, time travel, tags, streams and maintenance all work within it. Raises
        BranchNotFoundError, InvalidArgumentError (bad name). It keeps this handle's clock."""
        return type(self)(self.path, self.io, branch=name, clock=self.clock)

    def branches(self) -> list[str]:
        """The names of the table's branches other than main, sorted."""
        return BranchManager(self.io, self.layout).names()

    def create_branch(self, name: str, tag: str | None = None) -> Self:
        """Create branch ``name`` from tag ``tag`` of this handle's branch (the tag's
        snapshot becomes the branch's first; the files stay shared), or, without a tag, an
        empty branch with the current schema, as Paimon 0.9. Returns a handle on it.

        Raises InvalidArgumentError (bad name: not ``main``, not only digits; the branch
        exists), SnapshotNotFoundError (no such tag).
        """
        check_migrated(self.table_schema, self.path)
        BranchManager(self.io, self.layout).create(name, tag)
        return self.branch(name)

    def delete_branch(self, name: str) -> None:
        """Delete branch ``name``: its snapshots, schemas and tags; the files only it used
        are left to orphan cleanup (as Paimon). Raises BranchNotFoundError,
        InvalidArgumentError (``main``, the ``scan.fallback-branch`` of another branch)."""
        BranchManager(self.io, self.layout).delete(name)

    def fast_forward(self, name: str) -> None:
        """Make this handle's branch (main, usually) branch ``name``, as Paimon's
        ``fast_forward``: its snapshots, schemas and tags from the branch's first snapshot
        on are replaced by the branch's (minipaimon_core.maintenance.fast_forward). Must
        not run while writers commit to this branch. Raises BranchNotFoundError,
        InvalidArgumentError (this branch itself, a branch without snapshots). Other handles
        on this branch opened before cache schemas it replaced: open them again."""
        check_migrated(self.table_schema, self.path)
        fast_forward.fast_forward(self.io, self.layout, name)
        self._load_line()


__all__ = ["TableBranches"]
