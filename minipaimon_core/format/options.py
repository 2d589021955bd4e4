"""Table and read options: the known names, their kinds, defaults and bounds; the one parser.

Every option value minipaimon reads goes through :class:`Options` (or :func:`validate`,
which parses every given value once), so an unknown name or a bad value raises
:class:`UnsupportedOptionError` naming the option, whether it is a table option (at
``create_table`` / ``set_options``, before anything is written) or a read option.
Options with a per-field part (``fields.<f>.aggregate-function``) are matched by pattern.
Checks that need the table's columns (``bucket-key`` inside the primary key, a
``sequence.field`` that is a column, aggregate functions that fit their column, ...) are in
:mod:`minipaimon_core.schema.table_options`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UnsupportedOptionError

_SIZE_UNITS = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_TIME_UNITS = {"ms": 1, "s": 1000, "min": 60_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_size(value: str) -> int:
    """``"128 mb"`` → bytes. A bare number is bytes. (Errors never show the value: an
    option's value may be a secret given to the wrong option.)"""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", value)
    if not m or m.group(2).lower() not in {"", *_SIZE_UNITS}:
        raise ValueError("not a size (a number of bytes, or with a unit: kb, mb, gb)")
    return int(m.group(1)) * _SIZE_UNITS.get(m.group(2).lower(), 1)


def parse_duration_ms(value: str) -> int:
    """``"1 h"`` / ``"30 s"`` / ``"500 ms"`` → milliseconds. A bare number is milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", value)
    if not m or m.group(2).lower() not in {"", *_TIME_UNITS}:
        raise ValueError("not a duration (milliseconds, or with a unit: ms, s, min, h, d)")
    return int(m.group(1)) * _TIME_UNITS.get(m.group(2).lower(), 1)


def _parse_bool(value: str) -> bool:
    if value.strip().lower() not in ("true", "false"):
        raise ValueError("not a boolean (true or false)")
    return value.strip().lower() == "true"


def _parse_int(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError("not an integer") from None


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
FILE_FORMATS = ("parquet", "orc", "avro")  # file.format: new data files (minipaimon_core.file_format)
INCREMENTAL_SCAN_MODES = ("auto", "delta", "changelog", "diff")
SCAN_MODES = ("latest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp", "default")
AGGREGATE_FUNCTIONS = (
    "sum", "min", "max", "count", "product", "last_value", "last_non_null_value",
    "first_value", "first_non_null_value", "first_not_null_value", "bool_and", "bool_or",
    "listagg", "collect", "merge_map", "nested_update",
)
PARTITION_EXPIRE_STRATEGIES = ("values-time", "update-time")
TAG_CREATION_MODES = ("none", "process-time", "watermark", "batch")
TAG_CREATION_PERIODS = ("daily", "hourly", "two-hours")  # Paimon 0.9's
TAG_PERIOD_FORMATTERS = ("with_dashes", "without_dashes")
#: Paimon's aggregate functions minipaimon does not implement (binary sketch and bitmap
#: states: no exact vectorised union in Python); a table using one is refused by name.
PAIMON_ONLY_FUNCTIONS = ("rbm32", "rbm64", "hll_sketch", "theta_sketch")


@dataclass(frozen=True)
class Spec:
    """One option: its kind (int, size, duration, bool, str), default as a user would write
    it (None: unset), the smallest allowed value of a number, the allowed strings, the
    largest allowed value of a number."""

    kind: str
    default: str | None
    minimum: int | None = None
    choices: tuple[str, ...] | None = None
    maximum: int | None = None


KNOWN: dict[str, Spec] = {
    "bucket": Spec("int", "-1", -2),  # -2: postponed buckets (primary-key tables, Paimon 1.x)
    "bucket-key": Spec("str", None),
    "target-file-size": Spec("size", "128 mb", 1),
    "write-buffer-size": Spec("size", "256 mb", 1),
    "write-buffer-spillable": Spec("bool", "true"),
    "file.compression": Spec("str", "zstd", choices=COMPRESSIONS),
    # zstd's level for new Parquet and Avro data files (pyarrow's ORC writer takes no level)
    "file.compression.zstd-level": Spec("int", "1", 1, maximum=22),
    "file.format": Spec("str", "parquet", choices=FILE_FORMATS),
    "manifest.merge-min-count": Spec("int", "30", 1),
    "manifest.target-file-size": Spec("size", "64 kb", 1),
    "manifest.full-compaction-threshold-size": Spec("size", "256 kb", 1),
    "commit.max-retries": Spec("int", "50", 0),
    "commit.timeout": Spec("duration", "300 s", 0),
    "commit.min-retry-wait": Spec("duration", "5 ms", 0),
    "commit.max-retry-wait": Spec("duration", "2 s", 0),
    "dynamic-partition-overwrite": Spec("bool", "false"),
    "partition.default-name": Spec("str", "__DEFAULT_PARTITION__"),  # schema/partition.py
    # dynamic buckets (bucket = -1 primary-key tables, minipaimon_core.dynamic)
    "dynamic-bucket.target-row-num": Spec("int", "2000000", 1),
    "dynamic-bucket.initial-buckets": Spec("int", None, 1),
    "dynamic-bucket.assigner-parallelism": Spec("int", None, 1),  # lanes (dynamic/routing.py)
    "dynamic-bucket.max-buckets": Spec("int", "-1", -1),  # -1: unbounded, as Paimon 1.x
    "cross-partition-upsert.index-ttl": Spec("duration", None, 0),
    "cross-partition-upsert.bootstrap-parallelism": Spec("int", "10", 1),
    "merge-engine": Spec("str", "deduplicate", choices=MERGE_ENGINES),
    "sequence.field": Spec("str", None),
    "ignore-delete": Spec("bool", "false"),
    "partial-update.ignore-delete": Spec("bool", "false"),  # Paimon's older names of
    "first-row.ignore-delete": Spec("bool", "false"),  # ignore-delete
    "deduplicate.ignore-delete": Spec("bool", "false"),
    "partial-update.remove-record-on-delete": Spec("bool", "false"),
    "aggregation.remove-record-on-delete": Spec("bool", "false"),  # Paimon 1.x (lsm/aggregation.py)
    "partial-update.remove-record-on-sequence-group": Spec("str", None),  # Paimon 1.x (lsm/partial_update.py)
    "fields.default-aggregate-function": Spec("str", "last_non_null_value", choices=AGGREGATE_FUNCTIONS),
    "changelog-producer": Spec("str", "none", choices=CHANGELOG_PRODUCERS),
    "deletion-vectors.enabled": Spec("bool", "false"),
    # a delete of a primary-key table always writes -D rows, never a metadata-only partition
    # drop (minipaimon_core.dml), so it always produces the changelog this option forces
    "delete.force-produce-changelog": Spec("bool", "false"),
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
    # long-lived changelog (minipaimon_core.metadata.changelog_manager): unset = the snapshot.* value
    "changelog.num-retained.min": Spec("int", None, 1),
    "changelog.num-retained.max": Spec("int", None, 1),
    "changelog.time-retained": Spec("duration", None, 0),
    "consumer.expiration-time": Spec("duration", None, 0),
    "streaming-read-overwrite": Spec("bool", "false"),
    "read.changelog": Spec("bool", "false"),
    "scan.mode": Spec("str", None, choices=SCAN_MODES),
    "scan.snapshot-id": Spec("int", None, 1),
    "scan.timestamp-millis": Spec("int", None, 0),
    "scan.tag-name": Spec("str", None),
    "scan.fallback-branch": Spec("str", None),  # minipaimon_core.read.fallback
    "incremental-between": Spec("str", None),
    "incremental-between-timestamp": Spec("str", None),
    "incremental-between-scan-mode": Spec("str", "auto", choices=INCREMENTAL_SCAN_MODES),
    "consumer-id": Spec("str", None),
    "source.split.target-size": Spec("size", "128 mb", 1),
    "source.split.open-file-cost": Spec("size", "4 mb", 0),
    "file-index.in-manifest-threshold": Spec("size", "500 b", 0),
    "file-index.read.enabled": Spec("bool", "true"),
    # post-commit options (minipaimon_core.maintenance.partition_expire, .tag_auto): as Paimon 0.9
    "partition.expiration-time": Spec("duration", None, 0),
    "partition.expiration-check-interval": Spec("duration", "1 h", 0),
    "partition.expiration-strategy": Spec("str", "values-time", choices=PARTITION_EXPIRE_STRATEGIES),
    "partition.timestamp-formatter": Spec("str", None),
    "partition.timestamp-pattern": Spec("str", None),
    "end-input.check-partition-expire": Spec("bool", "false"),
    "tag.automatic-creation": Spec("str", "none", choices=TAG_CREATION_MODES),
    "tag.creation-period": Spec("str", "daily", choices=TAG_CREATION_PERIODS),
    "tag.creation-delay": Spec("duration", "0 ms", 0),
    "tag.period-formatter": Spec("str", "with_dashes", choices=TAG_PERIOD_FORMATTERS),
    "tag.num-retained-max": Spec("int", None, 1),
    "tag.default-time-retained": Spec("duration", None, 0),
    "tag.automatic-completion": Spec("bool", "false"),
    "sink.watermark-time-zone": Spec("str", "UTC"),
    # postponed buckets (bucket = -2, minipaimon_core.maintenance.postpone), as Paimon 1.x
    "postpone.batch-write-fixed-bucket": Spec("bool", "true"),
    "postpone.default-bucket-num": Spec("int", None, 1),
    "postpone.target-row-num-per-bucket": Spec("int", None, 1),
    "postpone.target-size-per-bucket": Spec("size", "1 gb", 1),
    "postpone.batch-write-fixed-bucket.max-parallelism": Spec("int", "2048", 1),
}
# fields.<column>.<suffix>: the kind of each per-field option
FIELD_OPTIONS: dict[str, Spec] = {
    "aggregate-function": Spec("str", None, choices=AGGREGATE_FUNCTIONS),
    "ignore-retract": Spec("bool", "false"),
    "list-agg-delimiter": Spec("str", ","),
    "distinct": Spec("bool", "false"),  # collect, listagg
    "nested-key": Spec("str", None),  # nested_update: fields of the nested rows
    "sequence-group": Spec("str", None),  # fields.<s1,s2>.sequence-group = <f1,f2>
}
_FIELD_OPTION = re.compile(r"^fields\.(.+)\.([a-z-]+)$")

# Paimon's options for a table's keys (CoreOptions.PRIMARY_KEY / PARTITION): never stored
# as table options (minipaimon_core.schema.definition takes them out first), but the names a
# misspelt option is compared with too (primary_key -> 'primary-key'), each with what it is
# and create_table's argument of the same meaning.
PRIMARY_KEY = "primary-key"
PARTITION = "partition"
KEY_OPTIONS = {PRIMARY_KEY: ("primary key", "primary_key", "id,dt"),
               PARTITION: ("partition keys", "partition_by", "dt")}


# file-index.<type>.columns, file-index.<type>.<column>.<option> (minipaimon_core.file_format.file_index)
_FILE_INDEX_OPTION = re.compile(r"^file-index\.(bloom-filter|bitmap|bsi)\.(columns|.+\.(items|fpp))$")


def file_index_option(name: str) -> bool:
    """Whether ``name`` is a per-type file-index option (columns, a column's items / fpp)."""
    return _FILE_INDEX_OPTION.match(name) is not None


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
    if file_index_option(name):
        return Spec("str", None)
    raise unknown_option(name, [*KNOWN, *KEY_OPTIONS], "see docs/format.md, \"Options\", for the table "
                         f"options and fields.<column>.({'|'.join(FIELD_OPTIONS)})")


def unknown_option(name: str, known: Iterable[str], otherwise: str) -> UnsupportedOptionError:
    """The error for option ``name``, which is none of ``known``: it names the closest known
    option (``buckett`` -> did you mean 'bucket'?; for a key option, how to give the keys),
    else says ``otherwise`` (where the options are listed). The one wording of every unknown
    option, table, read or write."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else otherwise
    if close and close[0] in KEY_OPTIONS:
        what, argument, example = KEY_OPTIONS[close[0]]
        hint += (f" (a table's {what}: the option {close[0]!r} = {example!r}, or "
                 f"create_table(..., {argument}=[...]))")
    return UnsupportedOptionError(f"unknown option {name!r}; {hint}")


def zstd_level(options: Mapping[str, str]) -> int:
    """The zstd level of a table's new data files: ``file.compression.zstd-level`` of its
    raw ``options`` (Paimon's default 1). Raises UnsupportedOptionError outside 1..22."""
    value = options.get("file.compression.zstd-level")
    return 1 if value is None else int(parse("file.compression.zstd-level", value))


def parse(name: str, value: str) -> Any:
    """The typed value of option ``name`` given as ``value`` (bounds and choices checked).

    Raises:
        UnsupportedOptionError: unknown name, unparseable value, value out of bounds or not
            one of the allowed strings (the message names the option and what it takes,
            never the value given: it may be a secret given to the wrong option).
    """
    spec = spec_of(name)
    try:
        parsed = _PARSERS[spec.kind](value)
    except ValueError as e:
        raise UnsupportedOptionError(f"option {name!r}: {e}") from None
    if spec.minimum is not None and parsed < spec.minimum:
        raise UnsupportedOptionError(f"option {name!r} must be >= {spec.minimum}")
    if spec.maximum is not None and parsed > spec.maximum:
        raise UnsupportedOptionError(f"option {name!r} must be <= {spec.maximum}")
    if spec.choices is AGGREGATE_FUNCTIONS and parsed.strip().lower() in PAIMON_ONLY_FUNCTIONS:
        raise UnsupportedOptionError(
            f"option {name!r} = {parsed.strip().lower()!r}: Paimon's {parsed.strip().lower()} function keeps "
            "binary sketch/bitmap states that minipaimon does not implement; use one of "
            f"{', '.join(AGGREGATE_FUNCTIONS)}")
    if spec.choices is not None and parsed.strip().lower() not in spec.choices:
        raise UnsupportedOptionError(
            f"option {name!r} must be one of {', '.join(spec.choices)}")
    if spec.choices is not None:
        parsed = parsed.strip().lower()
    return parsed


def check_settable(options: Mapping[str, Any]) -> None:
    """Refuse values that a table may still have but that are never set anew (at
    ``create_table`` and ``set_options``; tables that have them stay readable and writable):
    the ``count`` aggregate function, which Apache Paimon removed (Java 0.9, pypaimon and
    paimon-rust refuse a table that uses it).

    Raises UnsupportedOptionError naming the option and what to use instead.
    """
    for name, value in options.items():
        if value is None:
            continue
        aggregate = name == "fields.default-aggregate-function" or (
            (f := field_option(name)) is not None and f[1] == "aggregate-function")
        if aggregate and _as_str(value).strip().lower() == "count":
            raise UnsupportedOptionError(
                f"option {name!r} = 'count': Apache Paimon no longer has the 'count' aggregate "
                "function (its engines refuse a table that uses it); count with 'sum' over a "
                "column of ones instead (write 1 in that column for every row)")


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
    clo = typed["changelog.num-retained.min"] if typed["changelog.num-retained.min"] is not None else lo
    chi = typed["changelog.num-retained.max"] if typed["changelog.num-retained.max"] is not None else hi
    if chi < clo:
        raise UnsupportedOptionError(
            f"option 'changelog.num-retained.max' ({chi}) must be >= 'changelog.num-retained.min' ({clo})")
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
