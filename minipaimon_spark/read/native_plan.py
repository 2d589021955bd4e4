"""Which splits ``minipaimon_spark.table`` hands to Spark's Parquet reader, and the files it
gives it: one owner of the routing, so the native part and the Python data source's part
(option ``scan.python-splits-only``) always split a plan the same way.

A split goes to Spark when its files are Parquet, named as Spark's listing keeps them (not
``_...``: :func:`listed_by_spark`), and its read is a *selection* of their
stored rows (``Table.dropped_rows``): no merge (with or without deletion vectors), or the
merge of an engine that keeps one stored row per key (``deduplicate``, ``first-row``).
Partial-update and aggregation merges, which build rows, and ORC/Avro files stay with the
Python source.

Costs paid on the driver when the DataFrame is made: a split with deletion vectors reads
its index file (metadata, cached); a merged split reads the key, sequence and kind columns
of its files and merges them (the core's merge, so exactly the rows a read keeps), splits
in parallel threads. That is proportional to the rows of the buckets that need a merge;
compacted buckets cost nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from minipaimon_core import file_format
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.lsm.merge_config import ROW_SELECTING_ENGINES, MergeConfig
from minipaimon_core.read.scan import retraction_counts_trusted
from minipaimon_core.schema.schema import TableSchema

if TYPE_CHECKING:
    import minipaimon_core as mp
    from minipaimon_core.read.scan import Split

METADATA = "_metadata"  # Spark's hidden column of file scans (row_index): no table column


@dataclass(frozen=True)
class NativeFile:
    """One Parquet file Spark reads: its name, its path as Spark names it, its size and the
    schema it was written with as its manifest records them, whether the read must leave out
    retraction rows by kind (-U/-D: a file of a split read without a merge, unless the table
    has deletion vectors and the file's manifest records zero of them, as the core's read and
    Paimon's raw reads trust there; a merge's dropped positions cover them), and the positions
    of its stored rows to leave out (None: none)."""

    name: str
    path: str
    size: int
    schema_id: int
    retractions: bool
    dropped: np.ndarray | None = None


def selects_rows(schema: TableSchema) -> bool:
    """Whether a merged split of a table of ``schema`` is a selection of stored rows."""
    if not schema.primaryKeys:
        return True
    return MergeConfig.from_options(tuple(schema.primaryKeys), schema.options).engine in ROW_SELECTING_ENGINES


def listed_by_spark(name: str) -> bool:
    """Whether Spark's file listing keeps a data file named ``name``: it leaves out names
    starting with '_' or '.' (its hidden files) silently, even where a path names the file,
    and Paimon's ``data-file.prefix`` may start a name with '_'."""
    return not name.startswith(("_", "."))


def spark_reads(split: Split, schema: TableSchema) -> bool:
    """Whether ``minipaimon_spark.table`` hands ``split`` (of a table read in ``schema``) to
    Spark's Parquet reader (see the module)."""
    if not all(file_format.extension_of(f.fileName) == "parquet" and listed_by_spark(f.fileName)
               for f in split.files):
        return False
    if split.reads_as_stored:
        return True
    if METADATA in schema.arrow_schema().names:  # Spark's row positions are not reachable
        return False
    return split.raw_convertible or selects_rows(schema)


def native_files(t: mp.Table, splits: list[Split], to_spark_path: Callable[[str], str]) -> list[NativeFile]:
    """The files of ``splits`` (all read by Spark) with the rows each read leaves out.

    Raises what reading the splits raises (a damaged file or vector, an expired snapshot).
    """
    # the core's rule for a file's zero retraction count; a merge's dropped positions cover
    # its retractions
    counts_trusted = retraction_counts_trusted(t.table_schema)

    def of(split: Split) -> list[NativeFile]:
        dropped = {} if split.reads_as_stored else t.dropped_rows(split)
        assert dropped is not None, "spark_reads routes only selections here"
        return [NativeFile(f.fileName, to_spark_path(t.layout.data_file_path(split.partition_path, split.bucket,
                                                                             f.fileName)),
                           f.fileSize, f.schemaId,
                           split.raw_convertible and not (counts_trusted and f.deleteRowCount == 0),
                           dropped.get(f.fileName))
                for f in split.files]

    costly = [s for s in splits if not s.raw_convertible]  # merges read files: in parallel
    found: dict[int, list[NativeFile]] = {}
    if len(costly) > 1:
        with ThreadPoolExecutor(max_workers=min(len(costly), os.cpu_count() or 1)) as pool:
            found = dict(zip(map(id, costly), pool.map(of, costly), strict=True))
    return [f for s in splits for f in (found[id(s)] if id(s) in found else of(s))]


def python_buckets(splits: list[Split]) -> str:
    """The buckets of ``splits`` (those the Python source reads) as the value of option
    ``scan.python-splits-only``."""
    return json.dumps(sorted({(s.partition_path, s.bucket) for s in splits}))


def parse_buckets(value: str) -> set[tuple[str, int]]:
    """The buckets :func:`python_buckets` encoded. Raises InvalidArgumentError."""
    try:
        return {(str(p), int(b)) for p, b in json.loads(value)}
    except (ValueError, TypeError) as e:
        raise InvalidArgumentError(f"option 'scan.python-splits-only' is not a list of buckets: {e}") from e


def python_reads(split: Split, schema: TableSchema, buckets: set[tuple[str, int]]) -> bool:
    """Whether the Python part of ``minipaimon_spark.table`` reads ``split`` of its own
    plan: a split of one of its ``buckets`` (:func:`parse_buckets`) and, of an append
    table, one Spark does not read (an append bucket can hold both kinds of split). By
    bucket, not by :func:`spark_reads` alone: a pushed filter that skips files can make a
    merged bucket of the native plan a split read as stored here."""
    if (split.partition_path, split.bucket) not in buckets:
        return False
    return bool(schema.primaryKeys) or not spark_reads(split, schema)


__all__ = ["METADATA", "NativeFile", "listed_by_spark", "native_files", "parse_buckets", "python_buckets", "python_reads",
           "selects_rows", "spark_reads"]
