"""Long-lived changelogs (``changelog/changelog-<id>``): a snapshot's JSON kept after the
snapshot expired, so streams and ``incremental-between`` still read its changes.

A table *decouples* its changelog from its snapshots when ``changelog.num-retained.max`` /
``.min`` or ``changelog.time-retained`` retain more than the ``snapshot.*`` options (each
defaults to its snapshot counterpart), as Paimon 0.9's ``CoreOptions
.changelogLifecycleDecoupled``. Snapshot expiration of such a table writes
``changelog-<id>`` (the snapshot file's bytes, Paimon's ``Changelog`` is the same JSON) and
the ``changelog/LATEST`` hint before deleting ``snapshot-<id>``, and leaves what the
changelog needs (:mod:`.maintenance.expire`); changelog expiration deletes them later
(:mod:`.maintenance.expire_changelog`). The ids present are one contiguous range below the
earliest snapshot; ``LATEST`` / ``EARLIEST`` are hints, the listing is the truth.

A changelog file is untrusted metadata like a snapshot file: decoded by the snapshot codec
(names it holds are checked there) and held to its own id.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from ..errors import CorruptMetadataError
from ..format import snapshot as snapshot_codec
from ..format.layout import TableLayout
from ..format.options import Options
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from .snapshot_manager import newest_at_or_before


@dataclass(frozen=True)
class Retention:
    """How long a table keeps snapshots and changelogs (Paimon's expire config)."""

    snapshot_min: int
    snapshot_max: int
    snapshot_time_ms: int
    changelog_min: int
    changelog_max: int
    changelog_time_ms: int

    @staticmethod
    def of(options: Options) -> Retention:
        smin, smax = options["snapshot.num-retained.min"], options["snapshot.num-retained.max"]
        stime = options["snapshot.time-retained"]

        def either(name: str, default: int) -> int:
            value = options[name]
            return default if value is None else value

        return Retention(smin, smax, stime, either("changelog.num-retained.min", smin),
                         either("changelog.num-retained.max", smax),
                         either("changelog.time-retained", stime))

    @property
    def decoupled(self) -> bool:
        """Whether changelogs outlive snapshots (Paimon's ``changelogLifecycleDecoupled``)."""
        return (self.changelog_max > self.snapshot_max or self.changelog_time_ms > self.snapshot_time_ms
                or self.changelog_min > self.snapshot_min)


class ChangelogManager:
    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def ids(self) -> list[int]:
        """Ids of the long-lived changelogs present, ascending."""
        found = (TableLayout.changelog_id_of(n) for n in self._io.list_names(self._layout.changelog_dir))
        return sorted(i for i in found if i is not None)

    def earliest_id(self) -> int | None:
        ids = self.ids()
        return ids[0] if ids else None

    def latest_id(self) -> int | None:
        ids = self.ids()
        return ids[-1] if ids else None

    def try_get(self, snapshot_id: int) -> Snapshot | None:
        """The long-lived changelog of ``snapshot_id``, or None. Raises CorruptMetadataError
        for a damaged file or one that holds another id."""
        path = self._layout.changelog_path(snapshot_id)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            return None
        snap = snapshot_codec.decode(data, path)
        if snap.id != snapshot_id:
            raise CorruptMetadataError(
                f"{path}: holds snapshot {snap.id}, not {snapshot_id} (a changelog file copied or "
                "renamed by hand); restore the right file or delete it")
        return snap

    def earlier_or_equal_time(self, time_ms: int) -> Snapshot | None:
        """The newest long-lived changelog committed at or before ``time_ms``."""
        return newest_at_or_before(self.ids(), self.try_get, time_ms)

    def commit(self, snapshot_id: int, snapshot_file: bytes) -> None:
        """Keep an expiring snapshot's file as its long-lived changelog (then the hint)."""
        self._io.replace(self._layout.changelog_path(snapshot_id), snapshot_file)
        with contextlib.suppress(OSError):
            self._io.replace(self._layout.changelog_latest_hint, str(snapshot_id).encode())

    def delete(self, snapshot_id: int) -> None:
        self._io.delete(self._layout.changelog_path(snapshot_id))

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        with contextlib.suppress(OSError):
            self._io.replace(self._layout.changelog_earliest_hint, str(snapshot_id).encode())

    def commit_latest_hint(self, snapshot_id: int) -> None:
        with contextlib.suppress(OSError):
            self._io.replace(self._layout.changelog_latest_hint, str(snapshot_id).encode())


__all__ = ["ChangelogManager", "Retention"]
