"""The periods of automatic tags and their names (pure), as Paimon 0.9's ``TagPeriodHandler``.

``tag.creation-period`` ``daily`` names a tag ``2024-03-05`` (``20240305`` with
``tag.period-formatter`` = ``without_dashes``), ``hourly`` ``2024-03-05 10`` (``20240305
10``), ``two-hours`` ``2024-03-05 10`` (always with dashes). A tag is *automatic* when its
name parses back to a time (for ``daily`` only the text before the first space counts, so
``2024-03-05 10`` is a daily tag too); names are parsed leniently, as Paimon does (month 13
is January of the next year). Times are naive local datetimes; a period starts at a
multiple of its length counted on the local wall clock from 1970-01-01 00:00.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..schema.post_commit_options import PERIOD_MS

_EPOCH = datetime(1970, 1, 1)
_DAY = {True: re.compile(r"(\d{1,10})-(\d{2})-(\d{2})"), False: re.compile(r"(\d{1,10}?)(\d{2})(\d{2})")}
_HOUR = {True: re.compile(r"(\d{1,10})-(\d{2})-(\d{2}) (\d{2})"), False: re.compile(r"(\d{1,10}?)(\d{2})(\d{2}) (\d{2})")}


@dataclass(frozen=True)
class TagPeriod:
    """One ``tag.creation-period`` with its name format."""

    period: str  # daily | hourly | two-hours
    dashes: bool

    @property
    def length(self) -> timedelta:
        return timedelta(milliseconds=PERIOD_MS[self.period])

    def to_time(self, name: str) -> datetime | None:
        """The start of the period tag ``name`` stands for; None: not an automatic tag."""
        if self.period == "daily":
            m = _DAY[self.dashes].fullmatch(name.split(" ")[0])
        else:
            m = _HOUR[self.dashes or self.period == "two-hours"].fullmatch(name)
        if m is None or not m.group(1):
            return None
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hour = int(m.group(4)) if m.re.groups == 4 else 0
        try:  # lenient: fields past their range carry over
            return datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1) + timedelta(days=day - 1, hours=hour)
        except (ValueError, OverflowError):
            return None

    def is_auto(self, name: str) -> bool:
        return self.to_time(name) is not None

    def name(self, start: datetime) -> str:
        """The tag name of the period starting at ``start``."""
        sep = "-" if self.dashes or self.period == "two-hours" else ""
        day = f"{start.year}{sep}{start.month:02d}{sep}{start.day:02d}"
        return day if self.period == "daily" else f"{day} {start.hour:02d}"

    def previous(self, time: datetime) -> datetime:
        """The start of the period before the one ``time`` falls in (the tag a snapshot at
        ``time`` makes: the period that has just ended)."""
        ms = (time - _EPOCH) // timedelta(milliseconds=1)
        period = PERIOD_MS[self.period]
        start = (abs(ms) // period) * period * (1 if ms >= 0 else -1)  # Java's long division
        return _EPOCH + timedelta(milliseconds=start) - self.length

    def next(self, start: datetime) -> datetime:
        return start + self.length


__all__ = ["TagPeriod"]
