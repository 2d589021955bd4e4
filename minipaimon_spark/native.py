"""``minipaimon_spark.table``: a read that hands Spark's own Parquet reader every file whose
rows the read returns as stored or a selection of them, and reads only the rest through the
Python data source, at the same snapshot.

```
 plan the snapshot (core, on the driver) ──► splits, routed by native_plan.spark_reads
   splits Spark reads: append tables; primary-key buckets whose files do not overlap; files
   with deletion vectors; buckets merged by deduplicate or first-row (the core picks the
   winning rows from the key, sequence and kind columns)
     └► per schema version: one scan of Spark's Parquet file source (several past 64
        files: _scans), one filter: rows left out
        by _metadata.file_size / file_name / row_index (native_rows: bitsets, in the
        JVM) and, where a file may hold retractions, kept row kinds (+I, +U)
        ─► if the version is not the table's: columns by field id onto the read schema
           (renamed: old name; added: null), cast
   the other splits (partial-update and aggregation merges, ORC and Avro files)
     └► spark.read.format("minipaimon") with ``scan.python-splits-only`` (their buckets)
        at the same snapshot
 unionByName ──► one DataFrame, same rows and schema as format("minipaimon")
```

Snapshot isolation: the native files are those of the planned snapshot, and the Python part
reads that snapshot (pinned by id, or by the same tag or time). Making the DataFrame reads
the deletion vectors of the files that have them and, for merged buckets, their key,
sequence and kind columns (on the driver, see native_plan), so errors of those reads (a
damaged file, an expired snapshot) are raised by this call. Object stores: Spark reads
``s3a://`` paths when the Hadoop AWS classes are on its classpath, and a table on an
``abfs://`` / ``abfss://`` path when the Hadoop Azure (ABFS) classes are (Spark's pip package
has neither; the user configures Hadoop's credentials); otherwise (an ``az://`` path too, and
on Spark Connect for object stores, and for column types Spark's Parquet reader reads
differently) the whole read goes through the Python data source, with a one-line notice for
object stores.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from minipaimon_core.format.kinds import VALUE_KIND, RowKind
from minipaimon_core.io.fileio_resolve import scheme_of
from minipaimon_spark.native_plan import (
    METADATA,
    NativeFile,
    native_files,
    python_buckets,
    spark_reads,
)
from minipaimon_spark.native_rows import ScannedFile, keep_condition
from minipaimon_spark.options import (
    COLUMNS,
    PYTHON_SPLITS_ONLY,
    SNAPSHOT_ID,
    TAG_NAME,
    TIMESTAMP_MILLIS,
    ReadOptions,
)
from minipaimon_spark.reader import open_at, read_changelog
from minipaimon_spark.source import SHORT_NAME
from minipaimon_spark.system import split_system_path
from minipaimon_spark.types import quoted, to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    import minipaimon_core as mp

S3A_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"
VERIFY_CHECKSUMS = "parquet.page.verify-checksum.enabled"  # a Hadoop option of the scan
# Spark's Parquet source by its class: the file source (DSv1), which has the _metadata
# column, whatever spark.sql.sources.useV1SourceList says ("parquet" may be DSv2 without it)
PARQUET_V1 = "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat"
# Spark's per-read options over session settings that would read a table's files otherwise
# than the core: spark.sql.files.ignore*Files (a missing or damaged file fails the read, never
# leaves its rows out) and spark.sql.parquet.*RebaseModeInRead (Paimon's dates and times are
# proleptic Gregorian: LEGACY shifted those before 1582 by days, EXCEPTION failed the read)
READ_AS_THE_CORE = {"ignoreMissingFiles": "false", "ignoreCorruptFiles": "false",
                    "datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}
ABFS_CLASS = "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem"
# Files one filtered scan tells apart (its condition's tree has a leaf a file): at 256 the
# generated code outgrew Java's 64 KB a method, and Spark fell back to interpreting the
# plan after seconds spent compiling (an ERROR in the log each query)
SCAN_LEAVES = 64
LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def table(spark: SparkSession, path: str, **options: Any) -> DataFrame:
    """The table at ``path`` (or a catalog name with option ``warehouse``) as a DataFrame,
    with the read options of ``format("minipaimon")`` (time travel, ``columns``, ...).

    Raises what ``format("minipaimon").load`` raises for bad options or a missing table.
    """
    raw = {str(k): str(v) for k, v in options.items()}
    python = spark.read.format(SHORT_NAME).options(**raw)
    read = ReadOptions.parse({"path": path, **raw})
    if read.incremental_between is not None or split_system_path(read.path)[1] is not None:
        return python.load(path)
    t = open_at(read)
    if read_changelog(raw, t) or not _spark_reads_natively(t.schema()):
        return python.load(path)
    splits = t.scan(**read.scan_kwargs()).plan()
    if any(s.branch is not None for s in splits):
        return python.load(path)  # partitions of a scan.fallback-branch: its own schemas and rules
    native = [s for s in splits if spark_reads(s, t.table_schema)]
    if not native:  # every split needs the Python source: the plain DataFrame, no union
        return python.load(path)
    to_spark_path = _spark_paths(spark, t.path)
    if to_spark_path is None:
        return python.load(path)
    snapshot = t.snapshot_manager.try_get(splits[0].snapshot_id)
    if snapshot is None or snapshot.schemaId != t.table_schema.id:
        return python.load(path)  # the schema changed after the snapshot (or it just expired)
    files = native_files(t, native, to_spark_path)
    if any(f.dropped is not None for f in files) and any(
            METADATA in t.schema_by_id(i).arrow_schema().names for i in {f.schema_id for f in files}):
        return python.load(path)  # a column named _metadata hides Spark's row positions
    if len({f.name for f in files}) < len(files):
        return python.load(path)  # keep_condition tells files apart by name (unique in Paimon)
    parts = [_read_files(spark, t, group) for group in _scans(files)]
    if len(native) < len(splits):
        whole = {k: v for k, v in raw.items() if k.lower() != COLUMNS}  # projected after the union
        rest = [s for s in splits if not spark_reads(s, t.table_schema)]
        python_part = spark.read.format(SHORT_NAME).options(**whole) \
            .option(PYTHON_SPLITS_ONLY, python_buckets(rest))
        if not {k.lower() for k in raw} & {SNAPSHOT_ID, TAG_NAME, TIMESTAMP_MILLIS}:
            python_part = python_part.option(SNAPSHOT_ID, str(snapshot.id))  # later commits must not show
        parts.append(python_part.load(path))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    if read.columns is not None:
        out = out.select(*[quoted(c) for c in read.columns])
    return out


def _scans(files: list[NativeFile]) -> list[list[NativeFile]]:
    """The files of each Spark scan of a read: one scan a schema version, or, for a version
    of more than :data:`SCAN_LEAVES` files, one of the files read as stored (no filter), one
    of those filtered by row kind only, and scans of at most :data:`SCAN_LEAVES` files with
    rows to leave out. (Splitting fewer files cost more than it saved: 0.39 -> 0.44 s for
    the 12 files of bench_spark's 3 sorted runs.)"""
    out = []
    for schema_id in sorted({f.schema_id for f in files}):
        version = [f for f in files if f.schema_id == schema_id]
        if len(version) <= SCAN_LEAVES:
            out.append(version)
            continue
        groups: dict[tuple[bool, bool], list[NativeFile]] = {}
        for f in version:
            groups.setdefault((f.dropped is not None and len(f.dropped) > 0, f.retractions), []).append(f)
        for (marked, _), group in sorted(groups.items()):
            step = SCAN_LEAVES if marked else len(group)
            out += [group[i:i + step] for i in range(0, len(group), step)]
    return out


def _read_files(spark: SparkSession, t: mp.Table, files: list[NativeFile]) -> DataFrame:
    """The rows of ``files`` (one schema version) a read keeps, in the read schema of ``t``:
    one scan, one filter (the dropped positions, and the row kinds where a file may hold
    retractions), one projection where the file schema differs from the table's.

    Spark's reader verifies the pages' CRC32 checksums, as the core's reads do (parquet-mr
    does not by default): a flipped bit fails the read instead of changing a value. And it
    reads as the core whatever the session says (:data:`READ_AS_THE_CORE`): no file
    skipped, no date rebased.

    Spark's reader is given the files' schema (their columns in the Python source's Spark
    types) rather than inferring one: with ``spark.sql.parquet.inferTimestampNTZ.enabled``
    off it would read a TIMESTAMP column's wall-clock times as instants, and the cast to
    TIMESTAMP_NTZ would then shift them by the session zone's offset.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, StructField, StructType

    file_schema = t.schema_by_id(files[0].schema_id)
    stored = StructType([StructField(f.name, to_spark_type(f.type)) for f in file_schema.arrow_schema()])
    kinds = bool(t.primary_keys()) and any(f.retractions for f in files)
    if kinds:
        stored = stored.add(StructField(VALUE_KIND, ByteType()))
    with _listed_by_the_driver(spark, files):
        df = spark.read.schema(stored).option(VERIFY_CHECKSUMS, "true").options(**READ_AS_THE_CORE) \
            .format(PARQUET_V1).load([_literal(f.path) for f in files])
    keep = keep_condition(spark, [ScannedFile(f.name, f.size, f.dropped) for f in files],
                          sizes_verified=any(f.dropped is not None for f in files) and _sizes_are_real(files))
    if kinds:
        live = F.col(VALUE_KIND).isin(int(RowKind.INSERT), int(RowKind.UPDATE_AFTER))
        keep = live if keep is None else keep & live
    if keep is not None:
        df = df.where(keep)  # on the scan itself, where _metadata is

    if file_schema.fields == t.table_schema.fields:  # same ids, names and types
        return df.drop(VALUE_KIND) if kinds else df
    by_id = {fld.id: fld.name for fld in file_schema.fields}
    columns = []
    for fld, arrow_field in zip(t.table_schema.fields, t.schema()):
        spark_type = to_spark_type(arrow_field.type)
        old = by_id.get(fld.id)
        column = F.col(quoted(old)) if old is not None else F.lit(None)
        columns.append(column.cast(spark_type).alias(fld.name))
    return df.select(*columns)


@contextlib.contextmanager
def _listed_by_the_driver(spark: SparkSession, files: list[NativeFile]) -> Iterator[None]:
    """Spark looks up more than ``spark.sql.sources.parallelPartitionDiscovery.threshold``
    (default 32) paths with a job of its own: for local files that job costs seconds where
    the driver takes a stat each (500 files: 1.3-2.9 s -> 0.1 s), so the threshold is
    raised while a scan of local files is made (the session's own setting back after)."""
    before = spark.conf.get(LISTING_THRESHOLD)
    if len(files) <= int(before or 32) or not all(f.path.startswith("file://") for f in files):
        yield
        return
    spark.conf.set(LISTING_THRESHOLD, str(len(files)))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(LISTING_THRESHOLD)
        else:
            spark.conf.set(LISTING_THRESHOLD, before)


def _literal(path: str) -> str:
    """``path`` as a pattern Hadoop's glob matches only by itself. Spark globs every path
    holding one of ``{}[]*?\\``: a table under ``t*`` also read the files of the same names
    under ``t2`` (a copy of it), one under ``t[1]`` failed. Escaped, each such character is
    literal. (Spark's option ``__globPaths__=false`` read each file twice for two such
    paths.) A read of one such file logs Spark's warning that the escaped path does not
    exist (its check for a streaming sink's metadata does not unescape): harmless."""
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path)


def _sizes_are_real(files: list[NativeFile]) -> bool:
    """Whether each file is on local disk with the size its manifest records (a stat each,
    microseconds); False for object stores, where it would cost a request per file."""
    if not all(f.path.startswith("file://") for f in files):
        return False
    try:
        return all(os.stat(f.path.removeprefix("file://")).st_size == f.size for f in files)
    except OSError:
        return False


def _spark_paths(spark: SparkSession, table_path: str) -> Callable[[str], str] | None:
    """How Spark's own reader names a data file of the table, or None when Spark cannot
    read the table's storage itself (then the Python source reads everything)."""
    if scheme_of(table_path) in (None, "file"):
        return lambda p: "file://" + os.path.abspath(p.removeprefix("file:").removeprefix("//"))
    scheme = scheme_of(table_path)
    if scheme in ("s3", "s3a"):
        if _has_class(spark, S3A_CLASS):
            return lambda p: "s3a://" + p.split("://", 1)[1]
        why = f"{S3A_CLASS} is not on its classpath"
    elif scheme in ("abfs", "abfss"):
        if _has_class(spark, ABFS_CLASS):
            return lambda p: p  # Hadoop's own name of the same object
        why = f"{ABFS_CLASS} is not on its classpath"
    else:  # az:// names no account Hadoop could use
        why = "Hadoop has no az:// file system; an abfss:// path names the same table"
    warnings.warn(f"minipaimon_spark.table: Spark cannot read {table_path} itself ({why}); "
                  "reading through the Python data source", stacklevel=3)
    return None


def _has_class(spark: SparkSession, name: str) -> bool:
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        jvm.java.lang.Class.forName(name)
    except Exception:
        return False
    return True


def _spark_reads_natively(schema: pa.Schema) -> bool:
    """Types Spark's Parquet reader reads as the Python source gives them (others: Python)."""
    def ok(t: pa.DataType) -> bool:
        if pa.types.is_timestamp(t):
            return t.unit in ("ms", "us")
        if pa.types.is_time(t) or pa.types.is_duration(t) or pa.types.is_unsigned_integer(t):
            return False
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return ok(t.value_type)
        if pa.types.is_struct(t):
            return all(ok(t.field(i).type) for i in range(t.num_fields))
        if pa.types.is_map(t):
            return ok(t.key_type) and ok(t.item_type)
        return True
    return all(ok(f.type) for f in schema)


__all__ = ["table"]
