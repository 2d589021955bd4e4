"""Tag files (``tag/tag-<name>``): Paimon's ``Tag`` JSON, a snapshot's members and two more.

Paimon's ``Tag`` extends ``Snapshot`` with ``tagCreateTime`` and ``tagTimeRetained``, both
written only when the tag has a retention time (a tag without one is the snapshot's JSON,
as Java writes it: "do not write the tagCreateTime field" then, so readers older than 0.8
still read it). Jackson's ``JavaTimeModule`` writes them as:

* ``tagCreateTime``: a ``LocalDateTime`` as ``[year, month, day, hour, minute]``, then
  ``second`` if second or nanosecond is not zero, then ``nano`` if not zero
  (``[1969, 1, 1, 0, 0, 0, 123456789]``): the local wall-clock time of the writer's zone;
* ``tagTimeRetained``: a ``Duration`` as seconds with nine decimals (``5.000000000``).

minipaimon writes them so, reads any number for the duration, and checks both (a month of
13 or a negative duration is a damaged tag: ``CorruptMetadataError``). The snapshot part is
checked as a snapshot's (:func:`minipaimon_core.format.snapshot.checked`). Paimon's
committers delete a tag once ``tagCreateTime + tagTimeRetained`` has passed
(:mod:`minipaimon_core.maintenance.tag_auto`).
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import msgspec

from ..errors import CorruptMetadataError
from . import json_file
from .snapshot import Snapshot, checked


class Tag(Snapshot, frozen=True, kw_only=True, omit_defaults=True):
    """A tag file: the snapshot it pins and, with a retention time, when it was made."""

    tagCreateTime: list[int] | None = None
    tagTimeRetained: Any = None  # a number as read; written as msgspec.Raw (Java's digits)


def encode(snapshot: Snapshot, create_time: datetime.datetime | None = None,
           time_retained_ms: int | None = None) -> bytes:
    """The tag file pinning ``snapshot``; with ``time_retained_ms``, also ``create_time``
    (a naive local date-time, as Java's ``LocalDateTime.now()``; now if not given)."""
    if time_retained_ms is None:
        return json_file.encode(trim(snapshot))
    when = create_time or datetime.datetime.now()
    fields = {f: getattr(snapshot, f) for f in Snapshot.__struct_fields__}
    return json_file.encode(Tag(**fields, tagCreateTime=_local_date_time(when),
                                tagTimeRetained=msgspec.Raw(_duration(time_retained_ms))))


def decode(data: bytes, path: str) -> Tag:
    """Raises CorruptMetadataError for a damaged tag (or a value out of range),
    UnsupportedFeatureError for a newer snapshot version."""
    tag, checksummed = json_file.decode_checked(data, Tag, path)
    if not checksummed and tag.nextSequenceNumber is not None:
        tag = msgspec.structs.replace(tag, nextSequenceNumber=None)  # not ours: not trusted
    checked(tag, path)
    create_time(tag, path)
    time_retained_ms(tag, path)
    return tag


def trim(snapshot: Snapshot) -> Snapshot:
    """The snapshot a tag pins, without the tag's own members (Paimon's ``trimToSnapshot``)."""
    if type(snapshot) is Snapshot:
        return snapshot
    return Snapshot(**{f: getattr(snapshot, f) for f in Snapshot.__struct_fields__})


def create_time(tag: Tag, path: str = "tag") -> datetime.datetime | None:
    """``tagCreateTime`` as a naive local date-time (a finer than microsecond nanosecond is
    cut), or None. Raises CorruptMetadataError."""
    parts = tag.tagCreateTime
    if parts is None:
        return None
    try:
        if not 5 <= len(parts) <= 7:
            raise ValueError(f"{len(parts)} members")
        year, month, day, hour, minute, second, nano = [*parts, 0, 0][:7]
        if not 0 <= nano < 1_000_000_000:
            raise ValueError("nano of second out of range")
        return datetime.datetime(year, month, day, hour, minute, second, nano // 1000)
    except (ValueError, TypeError, OverflowError) as e:
        raise CorruptMetadataError(f"{path}: tagCreateTime {parts!r} is not a date-time ({e})") from None


def time_retained_ms(tag: Tag, path: str = "tag") -> int | None:
    """``tagTimeRetained`` in milliseconds (rounded down), or None. Raises CorruptMetadataError."""
    value = tag.tagTimeRetained
    if value is None:
        return None
    try:
        if isinstance(value, msgspec.Raw):
            value = bytes(value).decode("ascii")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("not a number of seconds")
        seconds = decimal.Decimal(str(value))
        if not seconds.is_finite() or seconds < 0:
            raise ValueError("not a duration of 0 or more")
        return int(seconds * 1000)
    except (ValueError, ArithmeticError, UnicodeDecodeError) as e:
        raise CorruptMetadataError(f"{path}: tagTimeRetained {value!r} is not a duration ({e})") from None


def duration_text(ms: int) -> str:
    """Java's ``Duration.toString()`` of ``ms`` milliseconds (``PT120H``, ``PT1H30M``,
    ``PT1.5S``, ``PT0S``): how Paimon's ``$tags`` table shows ``time_retained``."""
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    text = "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or millis or text == "PT":
        text += f"{seconds}" + (f".{millis:03d}".rstrip("0") if millis else "") + "S"
    return text


def _local_date_time(when: datetime.datetime) -> list[int]:
    parts = [when.year, when.month, when.day, when.hour, when.minute]
    nano = when.microsecond * 1000
    if when.second or nano:
        parts.append(when.second)
    if nano:
        parts.append(nano)
    return parts


def _duration(ms: int) -> bytes:
    return f"{ms // 1000}.{ms % 1000 * 1_000_000:09d}".encode()


__all__ = ["Tag", "create_time", "decode", "duration_text", "encode", "time_retained_ms", "trim"]
