"""Data source options: parsed once, validated with messages that name the option.

Spark hands options over as a case-insensitive dict whose keys arrive lower-cased. Read
options go to ``Table.scan``; write options split into the connector's own (``primary-key``
and ``partition``, Paimon's names for a table's keys, with ``partition-keys`` still taken
for ``partition``; ``dynamic-partition-overwrite``) and table options passed to
``create_table`` (the core rejects unknown names).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from minipaimon_core.catalog import table_location
from minipaimon_core.diff import Endpoint
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.format.branch_names import BRANCH_OPTION, MAIN_BRANCH, check_branch_name
from minipaimon_core.format.options import INCREMENTAL_SCAN_MODES, field_option, unknown_option
from minipaimon_core.format.options import KNOWN as TABLE_OPTIONS
from minipaimon_core.io.fileio_resolve import is_connection_option, normalize_path, scheme_of
from minipaimon_core.read.scan import SPLIT_OPTIONS
from minipaimon_core.schema.definition import PARTITION as PAIMON_PARTITION
from minipaimon_core.schema.definition import PRIMARY_KEY as PAIMON_PRIMARY_KEY
from minipaimon_core.stream.stream import SCAN_MODES
from minipaimon_core.system_tables import SYSTEM_TABLES

PATH = "path"
COLUMNS = "columns"
SNAPSHOT_ID = "scan.snapshot-id"
TIMESTAMP_MILLIS = "scan.timestamp-millis"
TAG_NAME = "scan.tag-name"
INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between-timestamp"
INCREMENTAL_MODE = "incremental-between-scan-mode"
# Plan only the splits minipaimon_spark.table does not hand to Spark's Parquet reader: the
# value names their buckets (native_plan.python_buckets), so that a pushed filter that
# skips files cannot move a bucket from one part to the other.
PYTHON_SPLITS_ONLY = "scan.python-splits-only"
PRIMARY_KEY = PAIMON_PRIMARY_KEY  # Paimon's option names for a table's keys
PARTITION = PAIMON_PARTITION
PARTITION_KEYS = "partition-keys"  # the connector's earlier name of 'partition', still taken
DYNAMIC_PARTITION_OVERWRITE = "dynamic-partition-overwrite"
MERGE_SCHEMA = "mergeschema"  # Spark's spelling is mergeSchema; keys arrive lower-cased
PARALLELISM = "scan.parallelism"  # the tasks a batch read's splits are sized for
BRANCH = BRANCH_OPTION  # Paimon's: the branch of the table a read or write uses (default main)

# Read-side options: ignored by writes (a temporary view passes its options to both).
READ_OPTIONS = frozenset({COLUMNS, SNAPSHOT_ID, TIMESTAMP_MILLIS, TAG_NAME, INCREMENTAL_BETWEEN,
                          INCREMENTAL_BETWEEN_TIMESTAMP, INCREMENTAL_MODE, PYTHON_SPLITS_ONLY, "scan.mode",
                          "consumer-id", PARALLELISM})
WAREHOUSE = "warehouse"
_BRANCH_SUFFIX = "branch_"  # Paimon's ``<table>$branch_<name>``
# Options Spark itself adds to a write (streaming sinks), and the catalog root: no table option.
SPARK_OPTIONS = frozenset({"checkpointlocation", "queryname", WAREHOUSE})

READ_CHANGELOG = "read.changelog"
# Streaming rate limits (Spark's spelling lower-cased; ``read.stream.`` prefix optional).
LIMIT_NAMES = ("maxsnapshotspertrigger", "maxfilespertrigger", "maxrowspertrigger")
# Every option a read accepts: the read options, the connector's write options and every
# table option (a temporary view hands its options to reads and writes alike), Spark's own.
KNOWN_OPTIONS = frozenset({
    PATH, COLUMNS, READ_CHANGELOG, PRIMARY_KEY, PARTITION, PARTITION_KEYS, DYNAMIC_PARTITION_OVERWRITE,
    MERGE_SCHEMA, BRANCH, *READ_OPTIONS, *SPARK_OPTIONS, *LIMIT_NAMES,
    *(f"read.stream.{n}" for n in LIMIT_NAMES), *(k.lower() for k in TABLE_OPTIONS),
})

_USE_INSTEAD = (
    "use CREATE TEMPORARY VIEW v USING minipaimon OPTIONS (path '/path/to/table') or "
    "spark.read.format('minipaimon').load(path) / df.write.format('minipaimon').save(path)"
)
NO_PATH_MESSAGE = (
    "minipaimon needs a 'path' option: Spark passes no options to Python data sources of "
    f"catalog tables (CREATE TABLE ... USING minipaimon); {_USE_INSTEAD}"
)
CATALOG_TABLE_MESSAGE = (
    "CREATE TABLE ... USING minipaimon cannot work: Spark passes no options to Python data "
    f"sources of catalog tables when they are read or written; {_USE_INSTEAD}"
)
# What Spark adds to the options of a catalog table (CREATE TABLE ... USING, measured on
# 4.0 and 4.3): the table's owner and provider properties.
_CATALOG_TABLE_KEYS = ("owner", "provider")


def normalized(options: Mapping[str, Any]) -> dict[str, str]:
    """Options with lower-case keys and string values, a branch named in the path (see
    :func:`split_branch_path`) moved to the ``branch`` option.

    Raises:
        InvalidArgumentError: the path names another branch than the ``branch`` option, or
            a branch by a name no branch can have.
    """
    out = {str(k).lower(): str(v) for k, v in options.items()}
    path, branch = split_branch_path(out.get(PATH, ""))
    if branch is not None:
        given = out.get(BRANCH, branch)
        if given != branch:
            raise InvalidArgumentError(
                f"the path names branch {branch!r} and the option 'branch' {given!r}: give one")
        out[PATH] = path
        if branch != MAIN_BRANCH:
            out[BRANCH] = branch
    return out


def check_known(options: Mapping[str, str]) -> None:
    """Reject option names no read or write knows (keys lower-cased, as Spark gives them).

    Raises:
        InvalidArgumentError: the options of a catalog table (CREATE TABLE ... USING
            minipaimon), pointing to temporary views.
        UnsupportedOptionError: naming the option, with the closest known name when there
            is one (``scan.snapshot_id`` -> ``scan.snapshot-id``).
    """
    if all(k in options for k in _CATALOG_TABLE_KEYS):
        raise InvalidArgumentError(CATALOG_TABLE_MESSAGE)
    for key in options:
        if key in KNOWN_OPTIONS or field_option(key) is not None or is_connection_option(key):
            continue
        raise unknown_option(key, KNOWN_OPTIONS,
                             "see the README for the read options (scan.mode, scan.snapshot-id, ...)")


def stream_limits(options: Mapping[str, str]) -> dict[str, int | None]:
    """The streaming rate limits (``max_snapshots``, ``max_files``, ``max_rows``): each
    ``read.stream.<name>`` or ``<name>``, a positive integer.

    Raises InvalidArgumentError naming the option with a bad value.
    """
    fields = ("max_snapshots", "max_files", "max_rows")
    return {field: _limit(options, name) for field, name in zip(fields, LIMIT_NAMES)}


def _limit(options: Mapping[str, str], name: str) -> int | None:
    key = f"read.stream.{name}" if f"read.stream.{name}" in options else name
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(f"option {key!r} must be a positive integer")
    return value


def table_path(options: Mapping[str, str]) -> str:
    """The table's root: the ``path`` option (``file:`` URIs, which Spark itself produces,
    become local paths; ``s3://`` stays), where ``namespace.table`` names a table of the
    catalog in the ``warehouse`` option (or ``$MINIPAIMON_WAREHOUSE`` on the driver and in
    the executors); a system table's ``$name`` suffix is kept (``shop.orders$snapshots``).
    Raises InvalidArgumentError (one line) when it is missing or names an unsupported
    scheme."""
    path = options.get(PATH, "").strip()
    if not path:
        raise InvalidArgumentError(NO_PATH_MESSAGE)
    base, system = split_system_path(path)
    root = normalize_path(table_location(base, options.get(WAREHOUSE) or None, options))
    if scheme_of(root) is None:  # as Spark's own sources: from the driver's directory, not a task's
        root = os.path.abspath(root)
    return root if system is None else f"{root}${system}"


def split_system_path(path: str) -> tuple[str, str | None]:
    """``/t$snapshots`` -> (``/t``, ``snapshots``); any other path -> (path, None).

    Only a known system-table name after the last ``$`` selects a system table, so a table
    directory whose name contains ``$`` (``/data/a$b``) is a plain table.
    """
    base, sep, name = path.rpartition("$")
    if sep and base and name in SYSTEM_TABLES:
        return base, name
    return path, None


def split_branch_path(path: str) -> tuple[str, str | None]:
    """Paimon's identifier of a branch: ``/t$branch_audit`` -> (``/t``, ``audit``), also
    before a system table's suffix (``shop.orders$branch_audit$snapshots`` ->
    (``shop.orders$snapshots``, ``audit``)); any other path -> (path, None).

    Raises InvalidArgumentError for a ``$branch_`` suffix whose name no branch can have
    (``main`` names the main branch)."""
    base, system = split_system_path(path)
    table, sep, suffix = base.rpartition("$")
    if not (sep and table and suffix.startswith(_BRANCH_SUFFIX)):
        return path, None
    name = suffix[len(_BRANCH_SUFFIX):]
    if name != MAIN_BRANCH:
        check_branch_name(name)
    return (table if system is None else f"{table}${system}"), name


def connection_options(options: Mapping[str, str]) -> dict[str, str]:
    """The storage connection options (``s3.*``, ``azure.*``) and the ``branch``: handed to
    ``open_table`` on the driver and, inside the pickled reader/writer objects, on the
    executors; never table options, never written."""
    return {k: v for k, v in options.items() if is_connection_option(k) or k == BRANCH}


def name_list(options: Mapping[str, str], key: str) -> list[str] | None:
    """A comma-separated option as a list of names (None when absent)."""
    raw = options.get(key)
    if raw is None:
        return None
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise InvalidArgumentError(f"option {key!r} must list column names")
    return names


def _partition_keys(options: Mapping[str, str]) -> list[str] | None:
    """``partition`` (Paimon's name) or ``partition-keys`` (the connector's earlier one).
    Raises InvalidArgumentError when both are given and differ."""
    paimon, ours = name_list(options, PARTITION), name_list(options, PARTITION_KEYS)
    if paimon is not None and ours is not None and paimon != ours:
        raise InvalidArgumentError(
            f"options {PARTITION!r} ({','.join(paimon)}) and {PARTITION_KEYS!r} ({','.join(ours)}) "
            "disagree: give the partition keys once, as 'partition'")
    return paimon if paimon is not None else ours


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be an integer") from None


def _bool_option(options: Mapping[str, str], key: str) -> bool | None:
    raw = options.get(key)
    if raw is None:
        return None
    if raw.strip().lower() not in ("true", "false"):
        raise InvalidArgumentError(f"option {key!r} must be true or false")
    return raw.strip().lower() == "true"


@dataclass(frozen=True)
class ReadOptions:
    """What a batch read asks of ``Table.scan``."""

    path: str
    snapshot_id: int | None = None
    timestamp_ms: int | None = None
    tag: str | None = None
    # endpoints of ``incremental-between`` (snapshot ids or tag names) or, from
    # ``incremental-between-timestamp``, epoch-millisecond times
    incremental_between: tuple[Endpoint, Endpoint] | None = None
    incremental_mode: str = "auto"
    python_splits_only: str | None = None  # the buckets, encoded by native_plan
    columns: list[str] | None = None
    connection: dict[str, str] = field(default_factory=dict, repr=False)
    parallelism: int | None = None
    split_options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> ReadOptions:
        """Raises InvalidArgumentError naming the option that is missing or malformed."""
        options = normalized(raw)
        check_known(options)
        stream_limits(options)  # a stream's options fail in schema(), where Spark reports well
        mode = options.get("scan.mode")
        if mode is not None and mode not in SCAN_MODES:
            raise InvalidArgumentError(
                f"option 'scan.mode' must be one of {', '.join(SCAN_MODES)}")
        travel = [k for k in (SNAPSHOT_ID, TIMESTAMP_MILLIS, TAG_NAME, INCREMENTAL_BETWEEN,
                              INCREMENTAL_BETWEEN_TIMESTAMP) if k in options]
        incremental_mode = options.get(INCREMENTAL_MODE, "auto")
        if incremental_mode not in INCREMENTAL_SCAN_MODES:
            raise InvalidArgumentError(f"option {INCREMENTAL_MODE!r} must be one of "
                                       f"{', '.join(INCREMENTAL_SCAN_MODES)}")
        if len(travel) > 1:
            raise InvalidArgumentError(f"give at most one of the options {', '.join(travel)}")
        return cls(
            path=table_path(options),
            snapshot_id=_int_option(options, SNAPSHOT_ID),
            timestamp_ms=_int_option(options, TIMESTAMP_MILLIS),
            tag=options.get(TAG_NAME),
            incremental_between=(_incremental(options.get(INCREMENTAL_BETWEEN))
                                 or _incremental_times(options.get(INCREMENTAL_BETWEEN_TIMESTAMP))),
            incremental_mode=incremental_mode,
            python_splits_only=options.get(PYTHON_SPLITS_ONLY),
            columns=name_list(options, COLUMNS),
            connection=connection_options(options),
            parallelism=_parallelism(options),
            split_options={k: options[k] for k in SPLIT_OPTIONS if k in options},
        )

    def scan_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``Table.scan``: time travel and split sizing (filter and
        columns apart). Without ``scan.parallelism`` the splits are sized for the cores the
        planning process sees: Spark tells a Python source nothing about its parallelism,
        and the planner runs on the driver, so this is ``local[*]``'s default parallelism
        and at most the driver's cores on a cluster (``source.split.target-size`` still caps
        every split, so big tables get many splits either way)."""
        return {
            "snapshot_id": self.snapshot_id,
            "timestamp_ms": self.timestamp_ms,
            "tag": self.tag,
            "incremental_between": self.incremental_between,
            "parallelism": self.parallelism or _cores(),
            "options": self.split_options,
        }


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _parallelism(options: Mapping[str, str]) -> int | None:
    value = _int_option(options, PARALLELISM)
    if value is not None and value < 1:
        raise InvalidArgumentError(f"option {PARALLELISM!r} must be a positive integer")
    return value


def _incremental(raw: str | None) -> tuple[Endpoint, Endpoint] | None:
    """``'start,end'``: snapshot ids or tag names (start exclusive)."""
    if raw is None:
        return None
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidArgumentError(
            f"option {INCREMENTAL_BETWEEN!r} must be 'start,end' snapshot ids or tag names "
            "(start exclusive)"
        )
    start, end = (int(p) if p.isdigit() else p for p in parts)
    return start, end


def _incremental_times(raw: str | None) -> tuple[Endpoint, Endpoint] | None:
    """``'start,end'`` epoch milliseconds: the snapshots at or before each time."""
    if raw is None:
        return None
    try:
        start, end = (int(p.strip()) for p in raw.split(","))
    except ValueError:
        raise InvalidArgumentError(
            f"option {INCREMENTAL_BETWEEN_TIMESTAMP!r} must be 'start,end' epoch milliseconds"
        ) from None
    return (datetime.datetime.fromtimestamp(start / 1000, datetime.timezone.utc),
            datetime.datetime.fromtimestamp(end / 1000, datetime.timezone.utc))


@dataclass(frozen=True)
class WriteOptions:
    """What a batch write asks: the table definition (first write) and the commit mode."""

    path: str
    primary_key: list[str] | None
    partition_by: list[str] | None
    dynamic_partition_overwrite: bool | None
    table_options: dict[str, str]
    merge_schema: bool = False
    connection: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> WriteOptions:
        """Raises InvalidArgumentError naming the option that is missing or malformed."""
        options = normalized(raw)
        own = {PATH, PRIMARY_KEY, PARTITION, PARTITION_KEYS, DYNAMIC_PARTITION_OVERWRITE, MERGE_SCHEMA}
        table_options = {
            k: v for k, v in options.items()
            if k not in own and k not in READ_OPTIONS and k not in SPARK_OPTIONS
            and not is_connection_option(k) and k != BRANCH
        }
        return cls(
            path=table_path(options),
            primary_key=name_list(options, PRIMARY_KEY),
            partition_by=_partition_keys(options),
            dynamic_partition_overwrite=_bool_option(options, DYNAMIC_PARTITION_OVERWRITE),
            table_options=table_options,
            merge_schema=bool(_bool_option(options, MERGE_SCHEMA)),
            connection=connection_options(options),
        )
