"""Table options: the known names, their defaults, and typed access.

Unknown option names and unparseable values are rejected with UnsupportedOptionError naming
the option, before anything is written. Options with a per-field part
(``fields.<f>.aggregate-function``) are matched by pattern.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
    if value.lower() not in ("true", "false"):
        raise ValueError(f"not a boolean: {value!r}")
    return value.lower() == "true"


_PARSERS: dict[str, Any] = {
    "int": int,
    "size": parse_size,
    "duration": parse_duration_ms,
    "bool": _parse_bool,
    "str": str,
}

# name -> (kind, default as the string a user would write; None = unset)
KNOWN: dict[str, tuple[str, str | None]] = {
    "bucket": ("int", "-1"),
    "bucket-key": ("str", None),
    "target-file-size": ("size", "128 mb"),
    "write-buffer-size": ("size", "256 mb"),
    "write-buffer-spillable": ("bool", "true"),
    "file.compression": ("str", "zstd"),
    "manifest.merge-min-count": ("int", "30"),
    "manifest.target-file-size": ("size", "8 mb"),
    "commit.max-retries": ("int", "50"),
    "commit.timeout": ("duration", "300 s"),
    "commit.min-retry-wait": ("duration", "5 ms"),
    "commit.max-retry-wait": ("duration", "2 s"),
    "dynamic-partition-overwrite": ("bool", "false"),
    "merge-engine": ("str", "deduplicate"),
    "sequence.field": ("str", None),
    "ignore-delete": ("bool", "false"),
    "partial-update.remove-record-on-delete": ("bool", "false"),
    "changelog-producer": ("str", "none"),
    "num-levels": ("int", "5"),
    "num-sorted-run.compaction-trigger": ("int", "5"),
    "num-sorted-run.stop-trigger": ("int", None),
    "compaction.max-size-amplification-percent": ("int", "200"),
    "compaction.size-ratio": ("int", "1"),
    "compaction.min.file-num": ("int", "5"),
    "compaction.max.file-num": ("int", "50"),
    "write-only": ("bool", "false"),
    "snapshot.num-retained.min": ("int", "10"),
    "snapshot.num-retained.max": ("int", "2147483647"),
    "snapshot.time-retained": ("duration", "1 h"),
    "consumer.expiration-time": ("duration", None),
    "streaming-read-overwrite": ("bool", "false"),
    "read.changelog": ("bool", "false"),
    "scan.mode": ("str", None),
    "scan.snapshot-id": ("int", None),
    "scan.timestamp-millis": ("int", None),
    "scan.tag-name": ("str", None),
    "incremental-between": ("str", None),
    "consumer-id": ("str", None),
    "source.split.target-size": ("size", "128 mb"),
}
_FIELD_OPTION = re.compile(r"^fields\.[^.]+\.(aggregate-function|ignore-retract|list-agg-delimiter)$")
MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")


def validate(options: Mapping[str, str]) -> dict[str, str]:
    """Check names and values; return the options as a plain ``dict[str, str]``.

    Raises:
        UnsupportedOptionError: an unknown name, or a value of the wrong kind.
    """
    out: dict[str, str] = {}
    for name, value in options.items():
        value = str(value).lower() if isinstance(value, bool) else str(value)
        if _FIELD_OPTION.match(name):
            if name.endswith("ignore-retract"):
                _check(name, "bool", value)
            out[name] = value
            continue
        if name not in KNOWN:
            raise UnsupportedOptionError(f"unknown table option {name!r}")
        _check(name, KNOWN[name][0], value)
        out[name] = value
    _check_choice(out, "merge-engine", MERGE_ENGINES)
    _check_choice(out, "changelog-producer", CHANGELOG_PRODUCERS)
    return out


def _check(name: str, kind: str, value: str) -> None:
    try:
        _PARSERS[kind](value)
    except ValueError as e:
        raise UnsupportedOptionError(f"option {name!r}: {e}") from None


def _check_choice(options: Mapping[str, str], name: str, choices: tuple[str, ...]) -> None:
    if name in options and options[name] not in choices:
        raise UnsupportedOptionError(f"option {name!r} must be one of {', '.join(choices)}; got {options[name]!r}")


class Options:
    """Typed, read-only view of a table's options with defaults applied."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.raw = dict(options)

    def get(self, name: str) -> Any:
        """Parsed value of a known option (its default if unset; None if it has none)."""
        kind, default = KNOWN[name]
        value = self.raw.get(name, default)
        return None if value is None else _PARSERS[kind](value)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)
