"""Table and read options: the known names, their kinds, defaults and bounds; the one parser.

Every option value minipaimon reads goes through :class:`Options` (or :func:`validate`,
which parses every given value once), so an unknown name or a bad value raises
:class:`UnsupportedOptionError` naming the option, whether it is a table option (at
``create_table`` / ``set_options``, before anything is written) or a read option.
Options with a per-field part (``fields.<f>.aggregate-function``) are matched by pattern.
Checks that need the table's columns (``bucket-key`` inside the primary key, a
``sequence.field`` that is a column, aggregate functions that fit their column, ...) are in
:mod:`minipaimon_core.table_options`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import UnsupportedOptionError

_SIZE_UNITS = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_TIME_UNITS = {"ms": 1, "s": 1000, "min": 60_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_size(value: str) -> int:
    """``"128 mb"`` → bytes. A bare number is bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", value)
    if not m or m.group(2).lower() not in {"", *_SIZE_UNITS}:
        raise ValueError(f"not a size: {value!r}")
    return int(m.group(1)) * _SIZE_UNITS.get(m.group(2).lower(), 1)


def parse_duration_ms(value: str) -> int:
    """``"1 h"`` / ``"30 s"`` / ``"500 ms"`` → milliseconds. A bare number is milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", value)
    if not m or m.group(2).lower() not in {"", *_TIME_UNITS}:
        raise ValueError(f"not a duration: {value!r}")
    return int(m.group(1)) * _TIME_UNITS.get(m.group(2).lower(), 1)


def _parse_bool(value: str) -> bool:
    if value.strip().lower() not in ("true", "false"):
        raise ValueError(f"not a boolean (true or false): {value!r}")
    return value.strip().lower() == "true"


def _parse_int(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"not an integer: {value!r}") from None


_PARSERS: dict[str, Any] = {
    "int": _parse_int,
    "size": parse_size,
    "duration": parse_duration_ms,
    "bool": _parse_bool,
    "str": str,
}

MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "brotli", "none")
INCREMENTAL_SCAN_MODES = ("auto", "delta", "changelog", "diff")
SCAN_MODES = ("latest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp", "default")
AGGREGATE_FUNCTIONS = (
    "sum", "min", "max", "count", "product", "last_value", "last_non_null_value",
    "first_value", "first_non_null_value", "bool_and", "bool_or", "listagg",
)


@dataclass(frozen=True)
class Spec:
    """One option: its kind (int, size, duration, bool, str), default as a user would write
    it (None: unset), the smallest allowed value of a number, the allowed strings."""

    kind: str
    default: str | None
    minimum: int | None = None
    choices: tuple[str, ...] | None = None


KNOWN: dict[str, Spec] = {
    "bucket": Spec("int", "-1", -1),
    "bucket-key": Spec("str", None),
    "target-file-size": Spec("size", "128 mb", 1),
    "write-buffer-size": Spec("size", "256 mb", 1),
    "write-buffer-spillable": Spec("bool", "true"),
    "file.compression": Spec("str", "zstd", choices=COMPRESSIONS),
    "manifest.merge-min-count": Spec("int", "30", 1),
    "manifest.target-file-size": Spec("size", "64 kb", 1),
    "manifest.full-compaction-threshold-size": Spec("size", "256 kb", 1),
    "commit.max-retries": Spec("int", "50", 0),
    "commit.timeout": Spec("duration", "300 s", 0),
    "commit.min-retry-wait": Spec("duration", "5 ms", 0),
    "commit.max-retry-wait": Spec("duration", "2 s", 0),
    "dynamic-partition-overwrite": Spec("bool", "false"),
    # dynamic buckets (bucket = -1 primary-key tables, minipaimon_core.dynamic)
    "dynamic-bucket.target-row-num": Spec("int", "2000000", 1),
    "dynamic-bucket.initial-buckets": Spec("int", None, 1),
    "cross-partition-upsert.index-ttl": Spec("duration", None, 0),
    "cross-partition-upsert.bootstrap-parallelism": Spec("int", "10", 1),
    "merge-engine": Spec("str", "deduplicate", choices=MERGE_ENGINES),
    "sequence.field": Spec("str", None),
    "ignore-delete": Spec("bool", "false"),
    "partial-update.ignore-delete": Spec("bool", "false"),  # Paimon's older names of
    "first-row.ignore-delete": Spec("bool", "false"),  # ignore-delete
    "deduplicate.ignore-delete": Spec("bool", "false"),
    "partial-update.remove-record-on-delete": Spec("bool", "false"),
    "fields.default-aggregate-function": Spec("str", "last_non_null_value", choices=AGGREGATE_FUNCTIONS),
    "changelog-producer": Spec("str", "none", choices=CHANGELOG_PRODUCERS),
    "deletion-vectors.enabled": Spec("bool", "false"),
    "num-levels": Spec("int", None, 2),  # default: num-sorted-run.compaction-trigger + 1, as Paimon
    "num-sorted-run.compaction-trigger": Spec("int", "5", 1),
    "num-sorted-run.stop-trigger": Spec("int", None, 1),
    "compaction.max-size-amplification-percent": Spec("int", "200", 0),
    "compaction.size-ratio": Spec("int", "1", 0),
    "compaction.min.file-num": Spec("int", "5", 1),
    "compaction.max.file-num": Spec("int", "50", 1),
    "write-only": Spec("bool", "false"),
    "snapshot.num-retained.min": Spec("int", "10", 1),
    "snapshot.num-retained.max": Spec("int", "2147483647", 1),
    "snapshot.time-retained": Spec("duration", "1 h", 0),
    "consumer.expiration-time": Spec("duration", None, 0),
    "streaming-read-overwrite": Spec("bool", "false"),
    "read.changelog": Spec("bool", "false"),
    "scan.mode": Spec("str", None, choices=SCAN_MODES),
    "scan.snapshot-id": Spec("int", None, 1),
    "scan.timestamp-millis": Spec("int", None, 0),
    "scan.tag-name": Spec("str", None),
    "incremental-between": Spec("str", None),
    "incremental-between-timestamp": Spec("str", None),
    "incremental-between-scan-mode": Spec("str", "auto", choices=INCREMENTAL_SCAN_MODES),
    "consumer-id": Spec("str", None),
    "source.split.target-size": Spec("size", "128 mb", 1),
    "source.split.open-file-cost": Spec("size", "4 mb", 0),
}
# fields.<column>.<suffix>: the kind of each per-field option
FIELD_OPTIONS: dict[str, Spec] = {
    "aggregate-function": Spec("str", None, choices=AGGREGATE_FUNCTIONS),
    "ignore-retract": Spec("bool", "false"),
    "list-agg-delimiter": Spec("str", ","),
}
_FIELD_OPTION = re.compile(r"^fields\.(.+)\.([a-z-]+)$")


def field_option(name: str) -> tuple[str, str] | None:
    """``fields.<column>.<suffix>`` → (column, suffix) for a known suffix, else None."""
    m = _FIELD_OPTION.match(name)
    if m and m.group(2) in FIELD_OPTIONS:
        return m.group(1), m.group(2)
    return None


def spec_of(name: str) -> Spec:
    """The spec of option ``name``. Raises UnsupportedOptionError for an unknown name."""
    if name in KNOWN:
        return KNOWN[name]
    if (f := field_option(name)) is not None:
        return FIELD_OPTIONS[f[1]]
    if name.endswith(".sequence-group") and name.startswith("fields."):
        raise UnsupportedOptionError(f"option {name!r}: sequence groups are not supported")
    raise UnsupportedOptionError(
        f"unknown option {name!r}; known options: {', '.join(sorted(KNOWN))}, "
        f"fields.<column>.({'|'.join(FIELD_OPTIONS)})")


def parse(name: str, value: str) -> Any:
    """The typed value of option ``name`` given as ``value`` (bounds and choices checked).

    Raises:
        UnsupportedOptionError: unknown name, unparseable value, value out of bounds or not
            one of the allowed strings (the message names the option and what it takes).
    """
    spec = spec_of(name)
    try:
        parsed = _PARSERS[spec.kind](value)
    except ValueError as e:
        raise UnsupportedOptionError(f"option {name!r}: {e}") from None
    if spec.minimum is not None and parsed < spec.minimum:
        raise UnsupportedOptionError(f"option {name!r} must be >= {spec.minimum}, got {value!r}")
    if spec.choices is not None and parsed.strip().lower() not in spec.choices:
        raise UnsupportedOptionError(
            f"option {name!r} must be one of {', '.join(spec.choices)}; got {value!r}")
    if spec.choices is not None:
        parsed = parsed.strip().lower()
    return parsed


def _as_str(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def validate(options: Mapping[str, Any]) -> dict[str, str]:
    """Check every name and value (without the table's columns: see ``table_options``);
    return the options as a plain ``dict[str, str]``.

    Raises:
        UnsupportedOptionError: an unknown name, a bad value (names the option).
    """
    out: dict[str, str] = {}
    for name, value in options.items():
        out[name] = _as_str(value)
        parse(name, out[name])
    typed = Options(out)
    lo, hi = typed["snapshot.num-retained.min"], typed["snapshot.num-retained.max"]
    if hi < lo:
        raise UnsupportedOptionError(
            f"option 'snapshot.num-retained.max' ({hi}) must be >= 'snapshot.num-retained.min' ({lo})")
    if typed["commit.max-retry-wait"] < typed["commit.min-retry-wait"]:
        raise UnsupportedOptionError(
            "option 'commit.max-retry-wait' must be >= 'commit.min-retry-wait'")
    return out


class Options:
    """Typed, read-only view of table (or read) options with defaults applied.

    ``get`` parses with :func:`parse`, so a bad value raises UnsupportedOptionError naming
    the option; options built from a stored schema were validated when it was written.
    """

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.raw = {k: _as_str(v) for k, v in options.items()}

    def get(self, name: str) -> Any:
        """Parsed value of a known option (its default if unset; None if it has none)."""
        value = self.raw.get(name, spec_of(name).default)
        return None if value is None else parse(name, value)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)
