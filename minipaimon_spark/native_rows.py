"""Leaving rows out of Spark's scan of Parquet files by their positions, in the JVM.

Spark's Parquet scan (3.5+, so every supported version) has the hidden columns
``_metadata.row_index`` (a row's position in its file, whatever split of the file a task
reads) and ``_metadata.file_name``. The positions to drop become one filter on the scan of
a read's files, planned by Spark and evaluated per row in generated code, with no join and
no shuffle:

* per file a bitset, one bit per row up to the last dropped position's 64-row word; all
  bitsets of the scan sit in a single-row local relation (``array<array<bigint>>``) that
  the filter reads as a scalar subquery (evaluated once per query; plans show a subquery,
  not the bits);
* the row's file picks its bitset: a balanced tree of comparisons of
  ``_metadata.file_name`` with the scan's file names (log2(files) string comparisons per
  row, each decided by the first differing bytes of two UUIDs), whose leaves check
  equality and raise an error for a name that is none of them (never a silent keep);
* ``coalesce(bit_get(get(bits[file], row_index >> 6), row_index % 64), 0) = 0`` keeps the
  row (a word past the bitset is null: the row is kept).

Measured (bench/bench_spark.py, 5M rows, a tenth marked): see bench/README.md. Per-file
scans made each read's DataFrame cost 0.1 s per file on the driver (py4j and analysis);
an anti-join of the positions on (file, row_index) was slower than the Python source, and
literal arrays put megabytes of numbers into every plan string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

ROW_INDEX = "_metadata.row_index"
FILE_NAME = "_metadata.file_name"


def bitset(positions: np.ndarray) -> np.ndarray:
    """The words (int64) of sorted, distinct ``positions`` up to the last one's: bit
    ``p % 64`` of word ``p // 64`` set for each ``p``."""
    p = positions.astype(np.uint64)
    words = np.zeros((int(p[-1]) >> 6) + 1, np.uint64)
    np.bitwise_or.at(words, (p >> np.uint64(6)).astype(np.int64), np.uint64(1) << (p & np.uint64(63)))
    return words.view(np.int64)


def keep_condition(spark: SparkSession, dropped: dict[str, np.ndarray]) -> Column:
    """The condition on a scan of the files named in ``dropped`` (file name -> sorted,
    distinct, non-empty positions within it), applied before any projection, that keeps
    the rows not at their file's positions (see the module)."""
    from pyspark.sql import functions as F

    names = sorted(dropped)
    words = pa.array([[bitset(dropped[n]) for n in names]], pa.list_(pa.list_(pa.int64())))
    bits = spark.createDataFrame(pa.table({"bits": words})).scalar()

    name = F.col(FILE_NAME)

    def slot(lo: int, hi: int) -> Column:  # the index in ``names`` of the row's file
        if hi - lo == 1:
            unknown = F.raise_error(F.concat(F.lit("minipaimon: Spark read a file it was not given: "), name))
            return F.when(name == F.lit(names[lo]), F.lit(lo)).otherwise(unknown)
        mid = (lo + hi) // 2
        return F.when(name < F.lit(names[mid]), slot(lo, mid)).otherwise(slot(mid, hi))

    row = F.col(ROW_INDEX)
    word = F.get(F.get(bits, slot(0, len(names))), F.shiftright(row, 6).cast("int"))
    return F.coalesce(F.bit_get(word, (row % 64).cast("int")), F.lit(0)) == 0


__all__ = ["FILE_NAME", "ROW_INDEX", "bitset", "keep_condition"]
