"""Which of Apache Paimon's features minipaimon reads and writes: the rest is refused by name.

A Paimon table may use features minipaimon does not implement. Reading one must never give
wrong rows, and writing one must never leave a commit other engines misread, so a table is
checked when it is opened (:func:`check_readable`) and before a write or compaction
(:func:`check_writable`); each refusal is an :class:`UnsupportedFeatureError` naming the
feature (and the option that turned it on).

Options minipaimon does not know are refused for writes unless listed in :data:`IGNORED`
(options that change nothing minipaimon reads or writes); for reads only the options that
change what the files mean are refused.

Read and written (issue 27): Parquet, ORC and Avro data files (``file.format``, each file
by its extension: :mod:`.file_format`), bloom-filter file indexes (:mod:`.file_index`;
``bitmap`` / ``bsi`` are read past and refused for writes there), long-lived changelogs
(``changelog.*`` retention: :mod:`.changelog_manager`). Issue 39: postponed buckets
(``bucket`` = -2, :mod:`minipaimon_core.maintenance.postpone`; written with the engines
:func:`_check_postponed` allows) and the post-commit options (:mod:`.post_commit_options`:
applied after commits, refused where they cannot be). The table in docs/format.md,
"Versions and compatibility", lists them.
"""

from __future__ import annotations

from .. import file_format
from ..errors import UnsupportedFeatureError, UnsupportedOptionError
from ..file_format import file_index
from ..format.options import KNOWN, PAIMON_ONLY_FUNCTIONS, field_option, file_index_option
from ..format.table_schema import TableSchema
from ..lsm.merge_config import MergeConfig
from . import post_commit_options

# Paimon options that change nothing minipaimon reads or writes.
IGNORED = frozenset({
    "path", "type", "owner", "comment", "manifest.format", "manifest.compression",
    "file.block-size", "metadata.stats-mode",
    "metadata.stats-dense-store", "metadata.stats-keep-first-n-columns", "data-file.thin-mode",
    "write-buffer-for-append", "write-buffer-spill.max-disk-size", "write-buffer-spill.compression",
    "write-manifest-cache", "page-size", "parquet.enable.dictionary", "sort-spill-threshold",
    "sort-spill-buffer-size", "local-sort.max-num-file-handles", "spill-compression",
    "snapshot.expire.limit", "snapshot.expire.execution-mode", "snapshot.clean-empty-directories",
    "snapshot.watermark-idle-timeout", "consumer.ignore-progress", "scan.plan-sort-partition",
    "lookup.cache-max-disk-size", "lookup.cache-max-memory-size", "lookup.cache-file-retention",
    "lookup-wait", "lookup.local-file-type", "changelog-producer.row-deduplicate",
    "full-compaction.delta-commits", "compaction.optimization-interval", "commit.force-compact",
    "commit.user-prefix", "streaming-read-mode",
    "continuous.discovery-interval",
    "scan.bounded.watermark", "num-sorted-run.compaction-trigger",
})


def _feature(schema: TableSchema) -> str | None:
    """The first feature of ``schema`` that changes what the files mean, or None."""
    options = schema.options
    fmt = options.get("file.format", "parquet").strip().lower()
    if fmt not in file_format.NAMES:
        return f"{fmt.upper()} data files ('file.format' = '{fmt}'; minipaimon reads {', '.join(file_format.NAMES)})"
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
        (options.get("postpone.merge-on-read", "false").strip().lower() != "false",
         "postponed rows merged on read ('postpone.merge-on-read')"),
        ("," in options.get("sequence.field", ""), "several sequence fields ('sequence.field')"),
        (options.get("bucket-function.type", "default").lower() != "default",
         f"bucket function '{options.get('bucket-function.type')}' ('bucket-function.type')"),
    ]
    for used, feature in checks:
        if used:
            return feature
    engine = options.get("merge-engine", "deduplicate").lower()
    if engine not in ("deduplicate", "partial-update", "aggregation", "first-row"):
        return f"the '{engine}' merge engine"
    for name, value in options.items():
        if name.startswith("fields.") and name.endswith(".count-limit"):
            return f"'{name}'"
        if name.startswith("fields.") and name.endswith("aggregate-function") and \
                value.strip().lower() in PAIMON_ONLY_FUNCTIONS:
            return f"the aggregate function '{value.strip().lower()}' ('{name}')"
    if schema.primaryKeys:
        try:
            MergeConfig.from_options(tuple(schema.primaryKeys), options)
        except UnsupportedOptionError as e:
            return f"merge options minipaimon does not implement ({e})"
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
    an unreadable feature, the earlier minipaimon format, an option minipaimon does not
    know, or a file index it does not write. (Dynamic-bucket primary-key tables, ``bucket``
    = -1, are written: see :mod:`minipaimon_core.dynamic`.)"""
    check_migrated(schema, path)
    check_readable(schema, path)
    post_commit_options.check(schema, path)  # partition expiration, automatic tags
    _check_postponed(schema, path)
    if not schema.primaryKeys:  # Paimon 0.9 indexes append files only
        file_index.check_writable(schema.options, schema.arrow_schema(), path)
    unknown = sorted(k for k in schema.options if k not in KNOWN and k not in IGNORED
                     and field_option(k) is None and not file_index_option(k))
    if unknown:
        raise UnsupportedFeatureError(
            f"{path} has options minipaimon does not implement: {', '.join(unknown)}; writing "
            "it could break what they promise")


def _check_postponed(schema: TableSchema, path: str) -> None:
    """A postponed-bucket table (``bucket`` = -2) is written with the deduplicate,
    partial-update and aggregation engines, no changelog producer and no deletion vectors
    (what minipaimon's replay of postponed rows reproduces exactly)."""
    options = schema.options
    if options.get("bucket", "").strip() != "-2":
        return
    for name, value, allowed in (("merge-engine", "deduplicate", ("deduplicate", "partial-update", "aggregation")),
                                 ("changelog-producer", "none", ("none",)),
                                 ("deletion-vectors.enabled", "false", ("false",))):
        if options.get(name, value).strip().lower() not in allowed:
            raise UnsupportedFeatureError(
                f"{path} postpones buckets ('bucket' = -2) with {name!r} = {options[name]!r}: minipaimon "
                "writes postponed-bucket tables with the deduplicate, partial-update and aggregation "
                "engines, no changelog producer and no deletion vectors")


__all__ = ["IGNORED", "check_migrated", "check_readable", "check_writable"]
