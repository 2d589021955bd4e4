"""The options Paimon's committer honours after each commit, parsed once and checked.

Partition expiration (``partition.expiration-time``, ``partition.expiration-check-interval``,
``partition.expiration-strategy``, ``partition.timestamp-formatter``,
``partition.timestamp-pattern``, ``end-input.check-partition-expire``) and automatic tags
(``tag.automatic-creation``, ``tag.creation-period``, ``tag.creation-delay``,
``tag.period-formatter``, ``tag.num-retained-max``, ``tag.default-time-retained``,
``tag.automatic-completion``, ``sink.watermark-time-zone``), as Paimon 0.9 reads them
(``CoreOptions``). :func:`check` is part of ``features.check_writable``: a value minipaimon
cannot honour exactly as Paimon does refuses writes with ``UnsupportedFeatureError`` naming
the option, never a silent difference.

Partition times are parsed as Paimon's ``PartitionTimeExtractor`` does: without a
formatter, ``y-M-d`` with an optional `` H:m:s[.fraction]`` (1-10 digit years, 1-2 digit
fields, lenient: month 13 is January of the next year), else a Java ``DateTimeFormatter``
pattern, of which minipaimon knows the letters ``y u M d H m s S`` and quoted or
punctuation literals (other letters are refused for writes: see :func:`java_pattern`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import UnsupportedFeatureError, UnsupportedOptionError
from ..format.options import Options
from ..format.table_schema import TableSchema

PARTITION_OPTIONS = ("partition.expiration-time", "partition.expiration-check-interval",
                     "partition.expiration-strategy", "partition.timestamp-formatter",
                     "partition.timestamp-pattern", "end-input.check-partition-expire")
TAG_OPTIONS = ("tag.automatic-creation", "tag.creation-period", "tag.creation-delay",
               "tag.period-formatter", "tag.num-retained-max", "tag.default-time-retained",
               "tag.automatic-completion", "sink.watermark-time-zone")

# Java DateTimeFormatter letters minipaimon parses: letter -> (regex of a run of n, field)
_FIELDS = {"y": "year", "u": "year", "M": "month", "d": "day", "H": "hour", "m": "minute",
           "s": "second", "S": "fraction"}


@dataclass(frozen=True)
class TimePattern:
    """A compiled Java ``DateTimeFormatter`` pattern: a regex with named groups."""

    source: str
    regex: re.Pattern[str]
    has_time: bool  # has an hour: parsed as a LocalDateTime, else a LocalDate at midnight


def java_pattern(pattern: str) -> TimePattern:
    """Compile Java ``DateTimeFormatter.ofPattern(pattern)`` for parsing (SMART resolver).

    Letters ``y``/``u`` (year: ``yy`` a 2-digit year of 2000-2099, else at least as many
    digits as letters, up to 10), ``M``, ``d``, ``H``, ``m``, ``s`` (1: 1-2 digits, 2: exactly 2),
    ``S`` (a fraction of that many digits); ``'text'`` and any non-letter are literals.

    Raises UnsupportedOptionError for any other letter (month names, week fields, zones,
    am/pm...), an unclosed quote or a field given twice.
    """
    out, seen, i = [], set(), 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise UnsupportedOptionError(f"pattern {pattern!r}: unclosed quote")
            out.append(re.escape(pattern[i + 1:end] or "'"))
            i = end + 1
            continue
        if not c.isalpha():
            out.append(re.escape(c))
            i += 1
            continue
        n = len(pattern) - i - len(pattern[i:].lstrip(c))
        field = _FIELDS.get(c)
        if field is None or field in seen or (field != "fraction" and n > 2 and field != "year"):
            raise UnsupportedOptionError(
                f"pattern {pattern!r}: {c * n!r} is not a pattern minipaimon parses as Java does "
                "(it knows yyyy, yy, MM, M, dd, d, HH, H, mm, m, ss, s, S.. and literals)")
        seen.add(field)
        if field == "year":
            digits = r"\d{2}" if n == 2 else rf"\d{{{n},10}}"
            out.append(f"(?P<year{'2' if n == 2 else ''}>{digits})")
        elif field == "fraction":
            out.append(rf"(?P<fraction>\d{{{n}}})")
        else:
            out.append(rf"(?P<{field}>\d{{1,2}})" if n == 1 else rf"(?P<{field}>\d{{2}})")
        i += n
    return TimePattern(pattern, re.compile("".join(out)), "hour" in seen)


_DEFAULT = re.compile(r"(?P<year>\d{1,10})-(?P<month>\d{1,2})-(?P<day>\d{1,2})"
                      r"(?: (?P<hour>\d{1,2}):(?P<minute>\d{1,2}):(?P<second>\d{1,2})(?:\.(?P<fraction>\d{1,9}))?)?")


def _lenient(g: dict[str, str | None]) -> datetime:
    """Paimon's default formatter resolves leniently: fields past their range carry over."""
    year, month = int(g["year"] or 0), int(g["month"] or 1)
    base = datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)
    frac = (g.get("fraction") or "0").ljust(9, "0")[:6]
    return base + timedelta(days=int(g["day"] or 1) - 1, hours=int(g.get("hour") or 0),
                            minutes=int(g.get("minute") or 0), seconds=int(g.get("second") or 0),
                            microseconds=int(frac))


def parse_partition_time(text: str, formatter: TimePattern | None) -> datetime | None:
    """The naive local datetime Paimon's ``PartitionTimeExtractor`` reads from ``text``
    (None where Java raises ``DateTimeParseException``: the partition is not expired)."""
    if formatter is None:
        m = _DEFAULT.fullmatch(text)
        try:
            return _lenient(m.groupdict()) if m else None
        except (ValueError, OverflowError):
            return None
    m = formatter.regex.fullmatch(text)
    if m is None:
        return None
    g = m.groupdict()
    if "year" not in g and "year2" not in g or "month" not in g or "day" not in g:
        return None  # Java cannot make a date of it
    year = int(g["year"]) if "year" in g else 2000 + int(g["year2"])
    frac = (g.get("fraction") or "0").ljust(6, "0")[:6]
    try:
        return datetime(year, int(g["month"]), int(g["day"]), int(g.get("hour") or 0),
                        int(g.get("minute") or 0), int(g.get("second") or 0), int(frac))
    except (ValueError, OverflowError):
        return None  # SMART resolver: an invalid date fails to parse


def zone(name: str) -> tzinfo:
    """A Java ``ZoneId`` (``UTC``, ``Z``, ``+08:00``, ``GMT+8``, region ids) as a tzinfo.
    Raises UnsupportedOptionError for one Python cannot resolve."""
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", name.strip())
    if name.strip() in ("Z", "UTC", "GMT", "UT"):
        return timezone.utc
    if m:
        offset = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        return timezone(-offset if m.group(1) == "-" else offset)
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise UnsupportedOptionError(f"option 'sink.watermark-time-zone': {name!r} is not a time zone "
                                     "(UTC, +08:00 or a region id such as Asia/Shanghai)") from None


@dataclass(frozen=True)
class PartitionExpireConfig:
    """``partition.*`` expiration options; ``expiration_ms`` None: no expiration."""

    expiration_ms: int | None
    check_interval_ms: int
    strategy: str  # values-time | update-time
    formatter: TimePattern | None
    pattern: str | None
    end_input_check: bool

    @staticmethod
    def of(options: Options) -> PartitionExpireConfig:
        fmt = options["partition.timestamp-formatter"]
        return PartitionExpireConfig(
            options["partition.expiration-time"], options["partition.expiration-check-interval"],
            options["partition.expiration-strategy"], None if fmt is None else java_pattern(fmt),
            options["partition.timestamp-pattern"], options["end-input.check-partition-expire"])


@dataclass(frozen=True)
class TagConfig:
    """``tag.*`` options. ``mode``: none | process-time | watermark | batch."""

    mode: str
    period: str  # daily | hourly | two-hours
    delay_ms: int
    dashes: bool  # tag.period-formatter with_dashes
    num_retained_max: int | None
    default_time_retained_ms: int | None
    automatic_completion: bool
    watermark_zone: tzinfo

    @staticmethod
    def of(options: Options) -> TagConfig:
        return TagConfig(options["tag.automatic-creation"], options["tag.creation-period"],
                         options["tag.creation-delay"], options["tag.period-formatter"] == "with_dashes",
                         options["tag.num-retained-max"], options["tag.default-time-retained"],
                         options["tag.automatic-completion"], zone(options["sink.watermark-time-zone"]))


def check_values(options: Mapping[str, str]) -> None:
    """Raises UnsupportedOptionError naming the first post-commit option whose value
    minipaimon cannot honour as Paimon does: a bad value, a formatter letter it does not
    parse, a time zone Python cannot resolve, a creation delay of a whole period or more
    (which Paimon refuses too). At ``create_table`` and ``set_options``."""
    typed = Options(options)
    for name in (*PARTITION_OPTIONS, *TAG_OPTIONS):
        if name in options:
            typed.get(name)
    if "partition.timestamp-formatter" in options:
        try:
            java_pattern(typed["partition.timestamp-formatter"])
        except UnsupportedOptionError as e:
            raise UnsupportedOptionError(f"option 'partition.timestamp-formatter': {e}") from None
    zone(typed["sink.watermark-time-zone"])
    tags = TagConfig.of(typed)
    if tags.mode in ("process-time", "watermark") and tags.delay_ms >= PERIOD_MS[tags.period]:
        raise UnsupportedOptionError(
            f"option 'tag.creation-delay' must be shorter than one 'tag.creation-period' ({tags.period}), "
            "as Paimon requires")


def check(schema: TableSchema, path: str) -> None:
    """:func:`check_values` for a write: UnsupportedFeatureError naming the option (a table
    another engine configured), so an option is never left silently unapplied."""
    try:
        check_values(schema.options)
    except UnsupportedOptionError as e:
        raise UnsupportedFeatureError(
            f"{path}: a post-commit option cannot be honoured as Paimon does ({e}); writes are "
            "refused rather than leaving it unapplied") from None


PERIOD_MS = {"daily": 86_400_000, "hourly": 3_600_000, "two-hours": 7_200_000}

__all__ = ["PARTITION_OPTIONS", "PERIOD_MS", "PartitionExpireConfig", "TAG_OPTIONS", "TagConfig",
           "TimePattern", "check", "check_values", "java_pattern", "parse_partition_time", "zone"]
