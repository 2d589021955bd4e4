"""Tags: named, pinned snapshots (``tag/tag-<name>``).

A tag file is a byte-for-byte copy of the encoded snapshot it pins (the snapshot codec of
:mod:`minipaimon_core.format.snapshot`, versioned and checksummed), written only if absent, so
creating a tag never replaces another. Expiration, rollback and orphan cleanup keep every
file a tag references (:mod:`minipaimon_core.maintenance`).
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..format import snapshot as snapshot_codec
from ..format.layout import TableLayout, keys_of
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from .snapshot_manager import decode_snapshot


class TagManager:
    """Creates, reads, lists and deletes the tags of one table."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def create(self, name: str, snapshot: Snapshot) -> None:
        """Pin ``snapshot`` under ``name``.

        Raises InvalidArgumentError for a bad name or a tag that already exists.
        """
        if not self._io.write_if_absent(self._layout.tag_path(name), snapshot_codec.encode(snapshot)):
            raise InvalidArgumentError(f"tag {name!r} already exists")

    def get(self, name: str) -> Snapshot:
        """The snapshot tag ``name`` pins.

        Raises SnapshotNotFoundError if there is no such tag, InvalidArgumentError for a bad
        name, CorruptMetadataError for a damaged tag file.
        """
        path = self._layout.tag_path(name)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}") from None
        return decode_snapshot(data, path)

    def names(self) -> list[str]:
        """Names of every tag, sorted."""
        return keys_of("tag", self._io.list_names(self._layout.tag_dir))

    def snapshots(self) -> dict[str, Snapshot]:
        """Tag name -> the snapshot it pins, skipping tags deleted while listing."""
        out: dict[str, Snapshot] = {}
        for name in self.names():
            try:
                out[name] = self.get(name)
            except SnapshotNotFoundError:
                continue
        return out

    def delete(self, name: str) -> None:
        """Delete tag ``name``. Raises SnapshotNotFoundError if there is none."""
        if not self._io.delete(self._layout.tag_path(name)):
            raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}")


__all__ = ["TagManager"]
