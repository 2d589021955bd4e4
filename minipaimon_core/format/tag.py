"""Tag files (``tag/tag-<name>``): Paimon's ``Tag`` JSON, a snapshot plus two members.

A tag is the snapshot it pins (every member of :mod:`.snapshot`, in its order) followed by
two optional members of Paimon's ``org.apache.paimon.tag.Tag``, written only when the tag
has a retention (Paimon leaves both out otherwise, so readers older than 0.8 still read it):

* ``tagCreateTime``: when the tag was made, a Java ``LocalDateTime`` as Jackson writes it:
  ``[year, month, day, hour, minute, second, nanoOfSecond]`` in the writer's local time
  zone, trailing zero components left out (``[2024, 3, 5, 10, 0]`` is 10:00:00.0);
* ``tagTimeRetained``: how long it is kept after that, a Java ``Duration`` as decimal
  seconds (``86400.0``).

Paimon's committers delete a tag once ``tagCreateTime + tagTimeRetained`` has passed
(:mod:`minipaimon_core.maintenance.tag_expire`). A decoded tag is checked as a snapshot
(:func:`.snapshot.checked`), and its two members too: a malformed time or a negative
retention is a :class:`CorruptMetadataError`.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from ..errors import CorruptMetadataError
from . import json_file
from .snapshot import Snapshot, checked


class Tag(Snapshot, frozen=True, kw_only=True, omit_defaults=True):
    """A tag file: the pinned snapshot's members, then Paimon's two tag members."""

    tagCreateTime: list[int] | None = None
    tagTimeRetained: float | None = None

    def snapshot(self) -> Snapshot:
        """The pinned snapshot alone (Paimon's ``trimToSnapshot``)."""
        return Snapshot(**{f: getattr(self, f) for f in Snapshot.__struct_fields__})

    @property
    def create_time(self) -> datetime | None:
        """``tagCreateTime`` as a naive local datetime (None: no retention)."""
        return None if self.tagCreateTime is None else local_datetime(self.tagCreateTime, "tagCreateTime")

    @property
    def time_retained_ms(self) -> int | None:
        """``tagTimeRetained`` in milliseconds (None: kept until deleted)."""
        return None if self.tagTimeRetained is None else round(self.tagTimeRetained * 1000)


def of(snapshot: Snapshot, create_time: datetime | None = None, time_retained_ms: int | None = None) -> Tag:
    """The tag of ``snapshot``; with a retention, created at ``create_time`` (a naive local
    datetime) and kept ``time_retained_ms`` after it. Paimon writes both or neither."""
    fields = {f: getattr(snapshot, f) for f in Snapshot.__struct_fields__}
    if time_retained_ms is None:
        return Tag(**fields)
    if create_time is None:
        raise ValueError("a tag with a retention needs its create time")
    return Tag(**fields, tagCreateTime=local_datetime_array(create_time),
               tagTimeRetained=time_retained_ms / 1000)


def local_datetime_array(dt: datetime) -> list[int]:
    """A naive datetime as Jackson writes a Java ``LocalDateTime``: trailing zeros left out."""
    out = [dt.year, dt.month, dt.day, dt.hour, dt.minute]
    nanos = dt.microsecond * 1000
    if dt.second or nanos:
        out.append(dt.second)
        if nanos:
            out.append(nanos)
    return out


def local_datetime(array: list[int], member: str = "tagCreateTime", path: str = "") -> datetime:
    """The naive datetime of a Jackson ``LocalDateTime`` array (5 to 7 numbers; a finer
    than microsecond nanosecond is cut). Raises CorruptMetadataError for anything else."""
    if not 3 <= len(array) <= 7:
        raise CorruptMetadataError(f"{path}: {member} = {array!r} is not a date-time "
                                   "([year, month, day, hour, minute, second, nano])")
    year, month, day, hour, minute, second, nano = [*array, 0, 0, 0, 0][:7]
    try:
        if not 0 <= nano < 1_000_000_000:
            raise ValueError("nano of second out of range")
        return datetime(year, month, day, hour, minute, second, nano // 1000)
    except (ValueError, OverflowError):
        raise CorruptMetadataError(f"{path}: {member} = {array!r} is not a valid date-time") from None


def encode(tag: Tag) -> bytes:
    return json_file.encode(tag)


def decode(data: bytes, path: str) -> Tag:
    """Raises CorruptMetadataError for a damaged file or a member out of range (as a
    snapshot, plus the tag's two members), UnsupportedFeatureError for a newer version."""
    tag, checksummed = json_file.decode_checked(data, Tag, path)
    if not checksummed and tag.nextSequenceNumber is not None:
        tag = msgspec.structs.replace(tag, nextSequenceNumber=None)  # not ours: not trusted
    checked(tag, path)
    if tag.tagCreateTime is not None:
        local_datetime(tag.tagCreateTime, "tagCreateTime", path)
    if tag.tagTimeRetained is not None and not 0 <= tag.tagTimeRetained < 1e15:
        raise CorruptMetadataError(f"{path}: tagTimeRetained = {tag.tagTimeRetained!r} is not a "
                                   "duration in seconds (not negative)")
    return tag


__all__ = ["Tag", "decode", "encode", "local_datetime", "local_datetime_array", "of"]
