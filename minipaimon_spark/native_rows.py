"""Leaving rows out of Spark's scan of one Parquet file by their positions, in the JVM.

Spark's Parquet scan (3.5+, so every supported version) has the hidden column
``_metadata.row_index``: a row's position in its file, whatever split of the file a task
reads. The positions to drop become a filter Spark plans itself, evaluated per row in
generated code, with no join and no shuffle:

* up to :data:`LISTED` positions: ``NOT row_index IN (...)``;
* more: a bitset, one bit per row from the first dropped position's 64-row word to the
  last, kept with the bitsets of every other file of the read in one single-row local
  relation (``array<array<bigint>>``) that the filter reads as a scalar subquery (its
  value is taken once per query; the plan shows a subquery, not the bits):
  ``coalesce(bit_get(get(get(bits, file), row_index >> 6 - first_word), row_index % 64), 0) = 0``.

Measured (bench/bench_spark.py, 5M rows, a tenth marked): see bench/README.md. An
anti-join of the positions on (file, row_index) was 3-6x slower than the Python source,
and literal arrays put megabytes of numbers into every plan string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

LISTED = 32
ROW_INDEX = "_metadata.row_index"


def bitset(positions: np.ndarray) -> tuple[int, np.ndarray]:
    """The first 64-row word of sorted, distinct ``positions`` and the words (int64) from it
    to the last position's, bit ``p % 64`` of word ``p // 64 - first`` set for each ``p``."""
    p = positions.astype(np.uint64)
    first = int(p[0]) >> 6
    words = np.zeros((int(p[-1]) >> 6) - first + 1, np.uint64)
    np.bitwise_or.at(words, (p >> np.uint64(6)).astype(np.int64) - first, np.uint64(1) << (p & np.uint64(63)))
    return first, words.view(np.int64)


def keep_conditions(spark: SparkSession, dropped: list[np.ndarray]) -> list[Column]:
    """Per file, the condition on its scan (before any projection) that keeps the rows not
    at its ``dropped`` positions (sorted, distinct, non-empty, within the file)."""
    from pyspark.sql import functions as F

    row = F.col(ROW_INDEX)
    sets = {i: bitset(p) for i, p in enumerate(dropped) if len(p) > LISTED}  # file -> (first, words)
    slot = {i: k for k, i in enumerate(sets)}  # file -> its bitset's index in the relation
    bits = None
    if sets:
        words = pa.array([[w for _, w in sets.values()]], pa.list_(pa.list_(pa.int64())))
        bits = spark.createDataFrame(pa.table({"bits": words})).scalar()
    out = []
    for i, positions in enumerate(dropped):
        if i not in sets:
            out.append(~row.isin([int(p) for p in positions]))
            continue
        assert bits is not None
        word_index = (F.shiftright(row, 6) - F.lit(sets[i][0])).cast("int")
        word = F.get(F.get(bits, F.lit(slot[i])), word_index)
        out.append(F.coalesce(F.bit_get(word, (row % 64).cast("int")), F.lit(0)) == 0)
    return out


__all__ = ["LISTED", "ROW_INDEX", "bitset", "keep_conditions"]
