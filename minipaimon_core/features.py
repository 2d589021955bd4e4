"""Which of Apache Paimon's features minipaimon reads and writes: the rest is refused by name.

A Paimon table may use features minipaimon does not implement. Reading one must never give
wrong rows, and writing one must never leave a commit other engines misread, so a table is
checked when it is opened (:func:`check_readable`) and before a write or compaction
(:func:`check_writable`); each refusal is an :class:`UnsupportedFeatureError` naming the
feature (and the option that turned it on).

Options minipaimon does not know are refused for writes unless listed in :data:`IGNORED`
(options that change nothing minipaimon reads or writes); for reads only the options that
change what the files mean are refused.
"""

from __future__ import annotations

from .errors import UnsupportedFeatureError
from .format.table_schema import TableSchema
from .options import KNOWN, field_option

# Paimon options that change nothing minipaimon reads or writes.
IGNORED = frozenset({
    "path", "type", "owner", "comment", "manifest.format", "manifest.compression",
    "file.compression.zstd-level", "file.block-size", "metadata.stats-mode",
    "metadata.stats-dense-store", "metadata.stats-keep-first-n-columns", "data-file.thin-mode",
    "write-buffer-for-append", "write-buffer-spill.max-disk-size", "write-buffer-spill.compression",
    "write-manifest-cache", "page-size", "parquet.enable.dictionary", "sort-spill-threshold",
    "sort-spill-buffer-size", "local-sort.max-num-file-handles", "spill-compression",
    "snapshot.expire.limit", "snapshot.expire.execution-mode", "snapshot.clean-empty-directories",
    "snapshot.watermark-idle-timeout", "tag.automatic-creation", "tag.creation-period",
    "tag.num-retained-max", "tag.default-time-retained", "partition.expiration-time",
    "partition.expiration-check-interval", "partition.timestamp-formatter",
    "partition.timestamp-pattern", "consumer.ignore-progress", "scan.plan-sort-partition",
    "lookup.cache-max-disk-size", "lookup.cache-max-memory-size", "lookup.cache-file-retention",
    "lookup-wait", "lookup.local-file-type", "changelog-producer.row-deduplicate",
    "full-compaction.delta-commits", "compaction.optimization-interval", "commit.force-compact",
    "commit.user-prefix", "dynamic-bucket.assigner-parallelism", "file-index.read.enabled", "streaming-read-mode", "continuous.discovery-interval",
    "scan.bounded.watermark", "sink.watermark-time-zone", "num-sorted-run.compaction-trigger",
})


def _feature(schema: TableSchema) -> str | None:
    """The first feature of ``schema`` that changes what the files mean, or None."""
    options = schema.options
    if schema.version < 3 and "file.format" not in options and not schema.legacyFormat:
        return "ORC data files (the default of Paimon schemas before version 3)"
    fmt = options.get("file.format", "parquet").lower()
    if fmt != "parquet":
        return f"{fmt.upper()} data files ('file.format' = '{fmt}'; minipaimon reads Parquet)"
    checks = [
        (options.get("deletion-vectors.bitmap64", "false").lower() == "true",
         "64-bit deletion vectors ('deletion-vectors.bitmap64')"),
        (options.get("deletion-vectors.merge-on-read", "false").lower() == "true",
         "'deletion-vectors.merge-on-read'"),
        (options.get("row-tracking.enabled", "false").lower() == "true", "row tracking ('row-tracking.enabled')"),
        (options.get("data-evolution.enabled", "false").lower() == "true",
         "data evolution ('data-evolution.enabled')"),
        (options.get("partition.legacy-name", "true").lower() != "true",
         "partition directories named by cast ('partition.legacy-name' = false)"),
        (options.get("partition.default-name", "__DEFAULT_PARTITION__") != "__DEFAULT_PARTITION__",
         "another 'partition.default-name'"),
        (options.get("bucket", "").strip() == "-2", "postponed buckets ('bucket' = -2)"),
        ("," in options.get("sequence.field", ""), "several sequence fields ('sequence.field')"),
        (options.get("bucket-function.type", "default").lower() != "default",
         f"bucket function '{options.get('bucket-function.type')}' ('bucket-function.type')"),
        (options.get("file-index.in-manifest-threshold") is not None or
         any(k.startswith("file-index.") and k != "file-index.read.enabled" for k in options),
         "file indexes ('file-index.*')"),
        (options.get("changelog.num-retained.max") is not None or
         options.get("changelog.time-retained") is not None,
         "long-lived changelog ('changelog.num-retained.*' / 'changelog.time-retained')"),
    ]
    for used, feature in checks:
        if used:
            return feature
    engine = options.get("merge-engine", "deduplicate").lower()
    if engine not in ("deduplicate", "partial-update", "aggregation", "first-row"):
        return f"the '{engine}' merge engine"
    for name in options:
        if name.startswith("fields.") and name.endswith((".sequence-group", ".nested-key",
                                                           ".distinct", ".count-limit")):
            return f"'{name}'"
    return None


def check_readable(schema: TableSchema, path: str) -> None:
    """Raises UnsupportedFeatureError if the table's files mean something minipaimon cannot
    read exactly."""
    feature = _feature(schema)
    if feature is not None:
        raise UnsupportedFeatureError(f"{path} uses {feature}, which minipaimon does not support")


def check_migrated(schema: TableSchema, path: str) -> None:
    """Raises UnsupportedFeatureError for a table of minipaimon's earlier format: it is read,
    never changed (no commit, schema change, tag, expiration or file removal)."""
    if schema.legacyFormat:
        raise UnsupportedFeatureError(
            f"{path} is in minipaimon's earlier format: it is read as before but not changed; "
            "run `minipaimon migrate PATH` (or minipaimon_core.migrate.migrate) once to "
            "rewrite it into Apache Paimon's format")


def check_writable(schema: TableSchema, path: str) -> None:
    """Raises UnsupportedFeatureError if minipaimon cannot write the table as Paimon would:
    an unreadable feature, the earlier minipaimon format, or an option minipaimon does not
    know. (Dynamic-bucket primary-key tables, ``bucket`` = -1, are written: see
    :mod:`minipaimon_core.dynamic`.)"""
    check_migrated(schema, path)
    check_readable(schema, path)
    unknown = sorted(k for k in schema.options
                     if k not in KNOWN and k not in IGNORED and field_option(k) is None)
    if unknown:
        raise UnsupportedFeatureError(
            f"{path} has options minipaimon does not implement: {', '.join(unknown)}; writing "
            "it could break what they promise")


__all__ = ["IGNORED", "check_migrated", "check_readable", "check_writable"]
