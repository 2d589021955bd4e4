"""Consumer files (``consumer/consumer-<id>``): the progress of a streaming reader.

A consumer file holds ``{"nextSnapshot": n}`` (Paimon's ``Consumer`` JSON, with minipaimon's
checksum member, see :mod:`minipaimon_core.format.json_file`): the
reader with that id has processed every snapshot before ``n``. Snapshot expiration keeps
snapshots ``>= n`` of every live consumer. A consumer whose file was not updated for
``consumer.expiration-time`` is expired (deleted) and no longer protects anything; without
that option consumers never expire.

The file is rewritten with an atomic replace, so a reader sees the old or the new content,
never a torn file.

A new reader *pins* its start (:meth:`ConsumerManager.pin`): it writes the file, then
checks that the snapshot is still there and unmarked (:meth:`SnapshotManager.keeps_pin`).
An expiration marks every id it will delete before it reads the consumers a second time,
and deletes nothing a consumer pins at that read; so either the check sees the mark (the
pin is refused and the file restored) or the expiration sees the pin (docs/format.md,
"Expiration order"). Until the check passed the file says ``pinUnchecked``: a reader
killed in between leaves a pin a restart checks again (:meth:`ConsumerManager.recheck`).
"""

from __future__ import annotations

import time
from typing import Annotated

import msgspec

from ..errors import InvalidArgumentError
from ..format import json_file
from ..format.layout import TableLayout, keys_of
from ..io.fileio import FileIO
from .snapshot_manager import SnapshotManager


class Consumer(msgspec.Struct, frozen=True, omit_defaults=True):
    """Progress of one streaming reader: the first snapshot it has not consumed yet.

    ``fullScanPending`` (minipaimon's own member, absent unless true; Paimon's readers
    ignore it): the reader starts with the full scan of ``nextSnapshot`` and has not
    committed it yet, so a restart reads that full scan again rather than its changes.
    """

    nextSnapshot: Annotated[int, msgspec.Meta(ge=1)]  # a snapshot id (decoding checks it)
    fullScanPending: bool = False
    #: minipaimon's own too: the reader wrote this start and has not checked yet that its
    #: snapshot survived expiration (module docs); a restart checks it again
    pinUnchecked: bool = False


def encode(consumer: Consumer) -> bytes:
    return json_file.encode(consumer)


def decode(data: bytes, path: str) -> Consumer:
    return json_file.decode(data, Consumer, path)


class ConsumerManager:
    """Reads, writes, lists and expires the consumer files of one table."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def read(self, consumer_id: str) -> Consumer | None:
        """The consumer ``consumer_id``, or None if it has none (or it was expired).

        Raises:
            InvalidArgumentError: ``consumer_id`` is not a plain name.
            CorruptMetadataError: the file is torn or altered.
        """
        path = self._layout.consumer_path(consumer_id)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            return None
        return decode(data, path)

    def write(self, consumer_id: str, next_snapshot: int, full_scan_pending: bool = False,
              unchecked: bool = False) -> None:
        """Record that ``consumer_id`` will read ``next_snapshot`` next (atomic replace); with
        ``full_scan_pending``, the full scan of that snapshot; ``unchecked``: a pin not
        checked yet (use :meth:`pin` to start a reader).

        Raises InvalidArgumentError for a bad id or a snapshot id below 1.
        """
        if next_snapshot < 1:
            raise InvalidArgumentError(f"nextSnapshot must be >= 1, got {next_snapshot}")
        self._io.replace(self._layout.consumer_path(consumer_id),
                         encode(Consumer(next_snapshot, full_scan_pending, unchecked)))

    def pin(self, consumer_id: str, next_snapshot: int, full_scan_pending: bool,
            snapshots: SnapshotManager) -> bool:
        """Start ``consumer_id`` at ``next_snapshot``: write the file, then check that
        expiration keeps the snapshot (module docs). True: pinned, expiration keeps it and
        every later one. False: it was expired or is being expired; the consumer file is as
        it was (none if there was none), so a refused pin holds back no expiration.

        Raises InvalidArgumentError for a bad id or a snapshot id below 1.
        """
        path = self._layout.consumer_path(consumer_id)
        try:
            before: bytes | None = self._io.read_bytes(path)
        except FileNotFoundError:
            before = None
        self.write(consumer_id, next_snapshot, full_scan_pending, unchecked=True)
        if snapshots.keeps_pin(next_snapshot):
            self.write(consumer_id, next_snapshot, full_scan_pending)
            return True
        if before is None:
            self.delete(consumer_id)
        else:
            self._io.replace(path, before)
        return False

    def recheck(self, consumer_id: str, snapshots: SnapshotManager) -> Consumer | None:
        """The consumer ``consumer_id`` for a reader resuming it: its pin checked now if it
        never was (its reader was killed between the pin and the check). None if there is
        none, or if its unchecked pin no longer holds: nothing was read from it, the file
        is deleted and the reader starts as a new one.

        Raises InvalidArgumentError (bad id), CorruptMetadataError (damaged file).
        """
        found = self.read(consumer_id)
        if found is None or not found.pinUnchecked:
            return found
        if not snapshots.keeps_pin(found.nextSnapshot):
            self.delete(consumer_id)
            return None
        self.write(consumer_id, found.nextSnapshot, found.fullScanPending)
        return Consumer(found.nextSnapshot, found.fullScanPending)

    def delete(self, consumer_id: str) -> bool:
        """Delete a consumer; returns False if it did not exist."""
        return self._io.delete(self._layout.consumer_path(consumer_id))

    def ids(self) -> list[str]:
        """Ids of every consumer file, sorted."""
        names = self._io.list_names(self._layout.consumer_dir)
        return keys_of("consumer", names)

    def consumers(self) -> dict[str, int]:
        """Consumer id -> nextSnapshot, for every consumer (skipping ones deleted meanwhile)."""
        out: dict[str, int] = {}
        for cid in self.ids():
            c = self.read(cid)
            if c is not None:
                out[cid] = c.nextSnapshot
        return out

    def min_next_snapshot(self) -> int | None:
        """The smallest nextSnapshot of all consumers, or None if there are none."""
        return min(self.consumers().values(), default=None)

    def expire(self, older_than_ms: int, dry_run: bool = False) -> list[str]:
        """Delete consumers whose file was last written before ``older_than_ms``; their ids
        (``dry_run``: the ids only, nothing deleted)."""
        expired = []
        for cid in self.ids():
            path = self._layout.consumer_path(cid)
            try:
                mtime = self._io.modified_time_ms(path)
            except FileNotFoundError:
                continue
            if mtime < older_than_ms and (dry_run or self._io.delete(path)):
                expired.append(cid)
        return expired

    def expire_by_options(self, expiration_ms: int | None, now_ms: int | None = None,
                          dry_run: bool = False) -> list[str]:
        """Apply ``consumer.expiration-time`` (``expiration_ms``; None: never expire)."""
        if expiration_ms is None:
            return []
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return self.expire(now - expiration_ms, dry_run)
