"""Points in time as users give them, on every surface: an age or a datetime.

One rule for ``older_than`` (Python), ``--older-than`` (command line) and the SQL
procedures' time arguments, so no surface takes an integer whose unit it has to guess:

============================  ===============================================================
given                         means
============================  ===============================================================
``"2d"``, ``"36 h"``, ``"0s"``  an age: that long before now (units ms, s, min/m, h, d)
``datetime.timedelta``        an age
aware ``datetime``            that instant
``"2024-05-01T12:00+02:00"``  that instant; without an offset: local time (a text's only)
============================  ===============================================================

A naive ``datetime`` is refused (whose clock?), and so is a bare number: epoch milliseconds
(``older_than_ms=``, ``--older-than 1763900000000``) still work for one release with a
deprecation message, except numbers before 2000-01-01 (946684800000): ``older_than=3600`` or
``--older-than 0`` is a duration without its unit, which read as epoch milliseconds would
be 1970 and select nothing at all, so it is refused with the spelling to use (``'3600s'``).
"""

from __future__ import annotations

import datetime
import time
import warnings

from ..errors import InvalidArgumentError
from ..format.options import parse_duration_ms

PointInTime = str | datetime.datetime | datetime.timedelta
"""What ``older_than`` takes: an age (text or timedelta) or an aware datetime."""

_AGES = "an age such as '2d', '36 h' or '0s' (now)"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# Epoch-millisecond times before 2000-01-01: no table file is that old, so such a number is a
# duration given without its unit (older_than=3600), refused rather than read as 1970.
EARLIEST_EPOCH_MS = 946_684_800_000


def now_ms() -> int:
    return int(time.time() * 1000)


def epoch_ms(value: datetime.datetime) -> int:
    """An aware datetime as epoch milliseconds, exactly (floored; no float rounding)."""
    return (value - _EPOCH) // datetime.timedelta(milliseconds=1)


def datetime_of_ms(ms: int) -> datetime.datetime:
    """Epoch milliseconds as an aware UTC datetime, exactly (``epoch_ms`` gives ``ms`` back)."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


def point_in_time_ms(value: PointInTime, what: str, now: int | None = None) -> int:
    """``value`` as epoch milliseconds (see the module docs); ``what`` names the argument in
    errors.

    Raises InvalidArgumentError for anything else (a number, a naive datetime, a negative
    age, text that is neither an age nor an ISO date-time).
    """
    current = now_ms() if now is None else now
    if isinstance(value, datetime.timedelta):
        if value < datetime.timedelta(0):
            raise InvalidArgumentError(f"{what} must be an age of 0 or more, got {value!r}")
        return current - int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise InvalidArgumentError(
                f"{what}={value!r} is a naive datetime: give it a time zone "
                "(datetime(..., tzinfo=timezone.utc)) or give " + _AGES)
        return epoch_ms(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            raise InvalidArgumentError(
                f"{what}={value!r} has no unit: give {_AGES}, or a date-time")
        try:
            return current - parse_duration_ms(text)
        except ValueError:
            pass
        try:
            return int(datetime.datetime.fromisoformat(text).timestamp() * 1000)
        except ValueError:
            raise InvalidArgumentError(
                f"cannot read {what}={value!r}: give {_AGES}, or an ISO date-time "
                "('2024-05-01T12:00', local time unless it has an offset)") from None
    raise InvalidArgumentError(
        f"{what} takes {_AGES}, a timedelta or an aware datetime, got {value!r}"
        + (" (epoch milliseconds go to the deprecated older_than_ms)" if isinstance(value, int) else ""))


def duration_ms(value: str | datetime.timedelta, what: str) -> int:
    """A length of time (``"5 d"``, ``"36 h"``, a timedelta; as Paimon's ``time_retained``
    takes it) in milliseconds. Raises InvalidArgumentError for anything else (a bare
    number, a negative length)."""
    if isinstance(value, datetime.timedelta):
        if value < datetime.timedelta(0):
            raise InvalidArgumentError(f"{what} must be 0 or more, got {value!r}")
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, str) and not value.strip().isdigit():
        try:
            return parse_duration_ms(value)
        except ValueError:
            pass
    raise InvalidArgumentError(
        f"{what} takes a length of time such as '5 d', '36 h' or '30 min' (units ms, s, min/m, "
        f"h, d) or a timedelta, got {value!r}")


def epoch_ms_deprecated(value: int, what: str, instead: str, stacklevel: int = 3) -> int:
    """An epoch-millisecond time of a deprecated argument: warns (DeprecationWarning) that
    ``instead`` replaces it. ``what`` names the argument as given (``"older_than_ms"``).

    Raises InvalidArgumentError for a value before 2000-01-01 (EARLIEST_EPOCH_MS): a
    duration without its unit (``3600``) or ``0``, which would select nothing.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{what} takes {_AGES} or an aware datetime, got {value!r}")
    if value < EARLIEST_EPOCH_MS:
        when = datetime_of_ms(value).isoformat(timespec="milliseconds") if value >= 0 else "before 1970"
        seconds = f"'{value}s' is {value} seconds ago, " if value > 0 else ""
        raise InvalidArgumentError(
            f"{what} {value} means {when}: nothing is older than 1970, so nothing would be "
            f"selected. Give an age with its unit instead ({seconds}'1h', '2d'; '0s' selects "
            "everything up to now) or an aware datetime")
    warnings.warn(f"{what} is deprecated and will be removed in the next release: give {instead} "
                  f"({_AGES}, or an aware datetime)", DeprecationWarning, stacklevel=stacklevel)
    return value


def resolve_older_than(older_than: PointInTime | int | None, older_than_ms: int | None,
                       what: str = "older_than") -> int | None:
    """The epoch-millisecond time of ``older_than``, else of the deprecated
    ``older_than_ms`` (with its warning), else None. An ``int`` given as ``older_than``
    (where callers passed ``older_than_ms`` positionally) is taken as the deprecated one.
    Raises InvalidArgumentError."""
    if older_than is not None and older_than_ms is not None:
        raise InvalidArgumentError(f"give {what} or {what}_ms, not both")
    if isinstance(older_than, bool):
        raise InvalidArgumentError(f"{what} takes {_AGES} or an aware datetime, got {older_than!r}")
    if isinstance(older_than, int):
        # an epoch-millisecond time where the deprecated positional argument was
        return epoch_ms_deprecated(older_than, f"{what} as epoch milliseconds", f"{what}=",
                                   stacklevel=4)
    if older_than is not None:
        return point_in_time_ms(older_than, what)
    if older_than_ms is not None:
        return epoch_ms_deprecated(older_than_ms, f"{what}_ms", f"{what}=", stacklevel=4)
    return None


__all__ = ["EARLIEST_EPOCH_MS", "PointInTime", "datetime_of_ms", "duration_ms", "epoch_ms", "epoch_ms_deprecated",
           "now_ms", "point_in_time_ms", "resolve_older_than"]
