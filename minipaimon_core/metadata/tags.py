"""Tags: named, pinned snapshots (``tag/tag-<name>`` under the branch's home).

A tag file is Paimon's ``Tag`` JSON (:mod:`minipaimon_core.format.tag`): the encoded
snapshot it pins, and with a retention time (``time_retained``) also when it was made
(``tagCreateTime``, ``tagTimeRetained``, as Java writes them). It is written only if
absent, so creating a tag never replaces another. Expiration, rollback and orphan cleanup
keep every file a tag references (:mod:`minipaimon_core.maintenance`); the post-commit tag
expiration (:mod:`minipaimon_core.maintenance.tag_auto`) deletes a tag once its retention
has passed, as Paimon's committers do.

Renaming writes the new name (if absent) with the old file's bytes, then deletes the old
name (Paimon renames the file; an object store has no rename): a crash between leaves both
names on the same snapshot, nothing lost; delete the old name to finish.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..format import legacy
from ..format import tag as tag_codec
from ..format.layout import TableLayout, keys_of
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from .snapshot_manager import decode_snapshot


@dataclass(frozen=True)
class TagInfo:
    """A tag: the snapshot it pins, and with a retention time when it was made (a naive
    local date-time, as Paimon records it) and for how long it is kept (milliseconds)."""

    name: str
    snapshot: Snapshot
    create_time: datetime.datetime | None = None
    time_retained_ms: int | None = None


class TagManager:
    """Creates, reads, lists, renames and deletes the tags of one table (or branch)."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def create(self, name: str, snapshot: Snapshot, time_retained_ms: int | None = None,
               create_time: datetime.datetime | None = None) -> None:
        """Pin ``snapshot`` under ``name``; with ``time_retained_ms`` the tag records
        ``create_time`` (a naive local date-time; now if not given) and is kept that long
        after it.

        Raises InvalidArgumentError for a bad name, a negative retention or a tag that
        already exists.
        """
        if time_retained_ms is not None and time_retained_ms < 0:
            raise InvalidArgumentError(f"a tag's time retained must be 0 or more, got {time_retained_ms} ms")
        data = tag_codec.encode(snapshot, create_time, time_retained_ms)
        if not self._io.write_if_absent(self._layout.tag_path(name), data):
            raise InvalidArgumentError(f"tag {name!r} already exists in {self._layout.where}")

    def get(self, name: str) -> Snapshot:
        """The snapshot tag ``name`` pins (its members only, as Paimon's ``taggedSnapshot``).

        Raises SnapshotNotFoundError if there is no such tag, InvalidArgumentError for a bad
        name, CorruptMetadataError for a damaged tag file.
        """
        return self.info(name).snapshot

    def info(self, name: str) -> TagInfo:
        """Tag ``name`` with its retention. Raises as :meth:`get`."""
        path = self._layout.tag_path(name)
        data = self._read(name, path)
        if legacy.is_json(data):  # minipaimon's earlier format: no retention
            return TagInfo(name, decode_snapshot(data, path))
        tag = tag_codec.decode(data, path)
        return TagInfo(name, tag_codec.trim(tag), tag_codec.create_time(tag, path),
                       tag_codec.time_retained_ms(tag, path))

    def exists(self, name: str) -> bool:
        return self._io.exists(self._layout.tag_path(name))

    def names(self) -> list[str]:
        """Names of every tag, sorted."""
        return keys_of("tag", self._io.list_names(self._layout.tag_dir))

    def infos(self) -> dict[str, TagInfo]:
        """Tag name -> the tag, skipping tags deleted while listing."""
        out: dict[str, TagInfo] = {}
        for name in self.names():
            try:
                out[name] = self.info(name)
            except SnapshotNotFoundError:
                continue
        return out

    def snapshots(self) -> dict[str, Snapshot]:
        """Tag name -> the snapshot it pins, skipping tags deleted while listing."""
        return {name: info.snapshot for name, info in self.infos().items()}

    def modified_time_ms(self, name: str) -> int:
        """When the tag file was last written (epoch ms): the order of several tags of one
        snapshot, as Paimon orders them. Raises FileNotFoundError if it is gone."""
        return self._io.modified_time_ms(self._layout.tag_path(name))

    def rename(self, name: str, new_name: str) -> None:
        """Rename tag ``name`` to ``new_name`` (Paimon's ``rename_tag``).

        Raises SnapshotNotFoundError if there is no tag ``name``, InvalidArgumentError for a
        bad name or if ``new_name`` is another tag already.
        """
        source, target = self._layout.tag_path(name), self._layout.tag_path(new_name)
        if name == new_name:
            raise InvalidArgumentError(f"tag {name!r} cannot be renamed to itself")
        data = self._read(name, source)
        if not self._io.write_if_absent(target, data):
            raise InvalidArgumentError(f"tag {new_name!r} already exists in {self._layout.where}")
        self._io.delete(source)

    def delete(self, name: str) -> None:
        """Delete tag ``name``. Raises SnapshotNotFoundError if there is none."""
        if not self._io.delete(self._layout.tag_path(name)):
            raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}")

    def delete_all(self, names: Sequence[str]) -> None:
        """Delete the tags ``names`` (Paimon's ``delete_tag`` of several). Every name is
        checked first: a missing one raises SnapshotNotFoundError and none is deleted.
        Nothing is read (a damaged tag can be deleted)."""
        for name in names:
            if not self._io.exists(self._layout.tag_path(name)):
                raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}")
        for name in dict.fromkeys(names):
            self._io.delete(self._layout.tag_path(name))

    def _read(self, name: str, path: str) -> bytes:
        try:
            return self._io.read_bytes(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}") from None


__all__ = ["TagInfo", "TagManager"]
