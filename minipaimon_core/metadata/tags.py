"""Tags: named, pinned snapshots (``tag/tag-<name>``).

A tag file is the encoded snapshot it pins (the snapshot codec of
:mod:`minipaimon_core.format.snapshot`, versioned and checksummed), plus, for a tag with a
retention, Paimon's ``tagCreateTime`` / ``tagTimeRetained`` members
(:mod:`minipaimon_core.format.tag`). It is written only if absent, so creating a tag never
replaces another. Expiration, rollback and orphan cleanup keep every file a tag references
(:mod:`minipaimon_core.maintenance`).
"""

from __future__ import annotations

from datetime import datetime

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..format import legacy
from ..format import tag as tag_codec
from ..format.layout import TableLayout, keys_of
from ..format.snapshot import Snapshot
from ..format.tag import Tag
from ..io.fileio import FileIO


def decode_tag(data: bytes, path: str) -> Tag:
    """A tag file of either format (the earlier minipaimon one has no retention). Raises
    CorruptMetadataError."""
    return tag_codec.of(legacy.decode_snapshot(data, path)) if legacy.is_json(data) else tag_codec.decode(data, path)


class TagManager:
    """Creates, reads, lists and deletes the tags of one table."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def create(self, name: str, snapshot: Snapshot, time_retained_ms: int | None = None,
               create_time: datetime | None = None) -> None:
        """Pin ``snapshot`` under ``name``; with ``time_retained_ms``, the tag records
        ``create_time`` (a naive local datetime, required then) and is deleted by the
        post-commit tag expiration once that retention has passed.

        Raises InvalidArgumentError for a bad name or a tag that already exists.
        """
        data = tag_codec.encode(tag_codec.of(snapshot, create_time, time_retained_ms))
        if not self._io.write_if_absent(self._layout.tag_path(name), data):
            raise InvalidArgumentError(f"tag {name!r} already exists")

    def get(self, name: str) -> Snapshot:
        """The snapshot tag ``name`` pins (its members only, as Paimon's ``taggedSnapshot``).

        Raises SnapshotNotFoundError if there is no such tag, InvalidArgumentError for a bad
        name, CorruptMetadataError for a damaged tag file.
        """
        return self.tag(name).snapshot()

    def tag(self, name: str) -> Tag:
        """The tag ``name``: the snapshot it pins and its retention. Raises as :meth:`get`."""
        path = self._layout.tag_path(name)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}") from None
        return decode_tag(data, path)

    def exists(self, name: str) -> bool:
        return self._io.exists(self._layout.tag_path(name))

    def names(self) -> list[str]:
        """Names of every tag, sorted."""
        return keys_of("tag", self._io.list_names(self._layout.tag_dir))

    def snapshots(self) -> dict[str, Snapshot]:
        """Tag name -> the snapshot it pins, skipping tags deleted while listing."""
        return {name: tag.snapshot() for name, tag in self.tags().items()}

    def tags(self) -> dict[str, Tag]:
        """Tag name -> the tag, skipping tags deleted while listing."""
        out: dict[str, Tag] = {}
        for name in self.names():
            try:
                out[name] = self.tag(name)
            except SnapshotNotFoundError:
                continue
        return out

    def modified_time_ms(self, name: str) -> int:
        """When the tag file was last written (epoch ms): the order of several tags of one
        snapshot, as Paimon orders them. Raises FileNotFoundError if it is gone."""
        return self._io.modified_time_ms(self._layout.tag_path(name))

    def delete(self, name: str) -> None:
        """Delete tag ``name``. Raises SnapshotNotFoundError if there is none."""
        if not self._io.delete(self._layout.tag_path(name)):
            raise SnapshotNotFoundError(f"no tag {name!r} in {self._layout.where}")


__all__ = ["TagManager", "decode_tag"]
