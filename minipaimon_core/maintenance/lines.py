"""What the lines of a table's history use: the one owner of "every file any branch, tag,
snapshot or long-lived changelog uses", for the maintenance that deletes files.

A table has a main line and its branches (:mod:`minipaimon_core.metadata.branches`), each
with its own snapshots, tags and changelogs, all sharing one set of manifests and data
files: a branch made from a tag references the main line's files, and after a
fast-forward main references the branch's. So a deletion within one line keeps what every
other line uses, whichever line it runs in:

* expiration (snapshots and long-lived changelogs) and rollback of a line keep
  :func:`used_by_other_lines` beside what the line itself keeps;
* orphan cleanup keeps :func:`used_by_all_lines`;
* tag deletion, ``delete_branch`` and ``fast_forward`` delete no data or manifest file.

A directory of ``branch/`` that Paimon takes for a branch and minipaimon cannot read (a
name it cannot hold, no schema file: an unfinished creation or deletion) may name files:
while there is one, these deletions refuse to run (CorruptMetadataError), as Paimon 0.9's
orphan cleanup aborts on a branch without a schema.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CorruptMetadataError
from ..format.branch_names import MAIN_BRANCH
from ..metadata.branches import BranchManager
from ..metadata.changelog_manager import ChangelogManager
from .files import TableFiles

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; total 0 means unknown."""


def _quiet(phase: str, done: int, total: int) -> None:
    return None


def lines(files: TableFiles) -> list[TableFiles]:
    """The files views of every line of the table (main first, then the branches by name),
    ``files`` itself for its own line. Raises CorruptMetadataError naming a branch
    directory minipaimon cannot read."""
    manager = BranchManager(files.io, files.layout)
    bad = manager.unreadable()
    if bad:
        raise CorruptMetadataError(
            f"{files.layout.branches_dir} holds {', '.join(bad)}: Paimon takes it for a branch, "
            "but it has no schema file (a branch creation or deletion that did not finish) or a "
            "name minipaimon cannot hold; its snapshots may use files, so nothing is deleted. "
            "Finish it with delete_branch(name), or remove the directory if it is no branch")
    out = []
    for name in [MAIN_BRANCH, *manager.names()]:
        if name == files.layout.branch:
            out.append(files)
        else:
            out.append(TableFiles.of_line(files.io, files.layout.on_branch(name)))
    return out


def used_by_line(files: TableFiles, progress: Progress = _quiet) -> set[str]:
    """Every file the line of ``files`` uses: its retained snapshots (and those committed
    while reading), its tags and its long-lived changelogs (manifest lists, manifests, live
    data files, changelog files, index files)."""
    collector = files.collector()
    for tag in files.tags().values():
        collector.add(tag)
    changelogs = ChangelogManager(files.io, files.layout)
    for cid in changelogs.ids():  # long-lived changelogs (snapshots expired before them)
        changelog = changelogs.try_get(cid)
        if changelog is not None:
            collector.add_changelog(changelog)
    start = files.snapshots.earliest_id()
    end = files.snapshots.latest_id()
    while start is not None and end is not None and start <= end:
        for sid in range(start, end + 1):
            snap = files.snapshots.try_get(sid)
            if snap is None:
                continue  # expired meanwhile
            try:
                collector.add(snap)
            except CorruptMetadataError:
                if files.snapshots.try_get(sid) is not None:
                    raise
            progress("reading snapshots", sid - start + 1, end - start + 1)
        start, end = end + 1, files.snapshots.latest_id()  # commits that landed meanwhile
    return collector.paths


def used_by_other_lines(files: TableFiles, progress: Progress = _quiet) -> set[str]:
    """Every file the lines other than that of ``files`` use (empty for a table without
    branches: one listing of ``branch/``). Raises CorruptMetadataError as :func:`lines`."""
    used: set[str] = set()
    for line in lines(files):
        if line is not files:
            used |= used_by_line(line, progress)
    return used


def used_by_all_lines(files: TableFiles, progress: Progress = _quiet) -> set[str]:
    """Every file any line of the table uses (what orphan cleanup keeps)."""
    return used_by_line(files, progress) | used_by_other_lines(files, progress)


__all__ = ["lines", "used_by_all_lines", "used_by_line", "used_by_other_lines"]
