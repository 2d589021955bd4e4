"""Leaving rows out of Spark's scan of Parquet files by their positions, in the JVM.

Spark's Parquet scan (3.5+, so every supported version) has the hidden columns
``_metadata.row_index`` (a row's position in its file, whatever split of the file a task
reads), ``_metadata.file_name`` and ``_metadata.file_size``. The positions to drop become
one filter on the scan of a read's files, planned by Spark and evaluated per row in
generated code, with no join and no shuffle:

* per file with rows to drop a bitset, one bit per row up to the last dropped position's
  64-row word; all bitsets of the scan sit in a single-row local relation
  (``array<array<bigint>>``) that the filter reads as a scalar subquery (evaluated once per
  query; plans show a subquery, not the bits);
* the row's file picks its bitset: a balanced tree of comparisons of ``_metadata.file_size``
  with the sizes the manifests record (a long comparison per level; the file name's when two
  files of the scan have one size), whose leaves check that the name is the file's and raise
  an error for any other file (never a silent keep, even if a manifest's size is wrong); a
  file with no dropped row picks no bitset;
* ``coalesce(bit_get(get(bits[file], row_index >> 6), row_index % 64), 0) = 0`` keeps the
  row (no bitset, or a word past it: the row is kept).

The tree is one SQL expression (``F.expr``): building the condition costs a handful of
py4j calls, not one per node.

Measured (bench/bench_spark.py, 5M rows, a tenth marked): see bench/README.md. Per-file
scans made each read's DataFrame cost 0.1 s per file on the driver (py4j and analysis);
an anti-join of the positions on (file, row_index) was slower than the Python source, and
literal arrays put megabytes of numbers into every plan string. Routing by name (string
comparisons per row) cost 0.04-0.06 s more than by size on 5.5M rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

ROW_INDEX = "_metadata.row_index"
FILE_NAME = "_metadata.file_name"
FILE_SIZE = "_metadata.file_size"


@dataclass(frozen=True)
class ScannedFile:
    """A file of one Spark scan: its name, its size as its manifest records it, and the
    sorted, distinct positions of the rows to leave out (None or empty: none)."""

    name: str
    size: int
    dropped: np.ndarray | None


def bitset(positions: np.ndarray) -> np.ndarray:
    """The words (int64) of sorted, distinct ``positions`` up to the last one's: bit
    ``p % 64`` of word ``p // 64`` set for each ``p``."""
    p = positions.astype(np.uint64)
    words = np.zeros((int(p[-1]) >> 6) + 1, np.uint64)
    np.bitwise_or.at(words, (p >> np.uint64(6)).astype(np.int64), np.uint64(1) << (p & np.uint64(63)))
    return words.view(np.int64)


def keep_condition(spark: SparkSession, files: list[ScannedFile]) -> Column | None:
    """The condition on a scan of exactly ``files`` (names distinct), applied before any
    projection, that keeps the rows not at their file's dropped positions (see the module);
    None when no file has a row to drop."""
    from pyspark.sql import functions as F

    marked = [f for f in files if f.dropped is not None and len(f.dropped)]
    if not marked:
        return None
    slot_of = {f.name: i for i, f in enumerate(marked)}
    words = pa.array([[bitset(f.dropped) for f in marked]], pa.list_(pa.list_(pa.int64())))  # type: ignore[arg-type]
    bits = spark.createDataFrame(pa.table({"bits": words})).scalar()
    slot = F.expr(_slot_sql(files, slot_of))
    row = F.col(ROW_INDEX)
    word = F.get(F.get(bits, slot), F.shiftright(row, 6).cast("int"))
    return F.coalesce(F.bit_get(word, (row % 64).cast("int")), F.lit(0)) == 0


def _slot_sql(files: list[ScannedFile], slot_of: dict[str, int]) -> str:
    """SQL for the index into the bitsets of a row's file (NULL: a file with none), a tree on
    the file's size (or name, when sizes repeat) whose leaves check the name."""
    by_size = len({f.size for f in files}) == len(files)
    ordered = sorted(files, key=(lambda f: f.size) if by_size else (lambda f: f.name))

    def leaf(f: ScannedFile) -> str:
        slot = str(slot_of[f.name]) if f.name in slot_of else "CAST(NULL AS INT)"
        unknown = (f"raise_error(concat({_string('minipaimon: Spark read a file it was not given: ')}, "
                   f"{FILE_NAME}))")
        return f"CASE WHEN {FILE_NAME} = {_string(f.name)} THEN {slot} ELSE {unknown} END"

    def tree(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return leaf(ordered[lo])
        mid = (lo + hi) // 2
        test = f"{FILE_SIZE} < {ordered[mid].size}L" if by_size else f"{FILE_NAME} < {_string(ordered[mid].name)}"
        return f"CASE WHEN {test} THEN {tree(lo, mid)} ELSE {tree(mid, hi)} END"

    return tree(0, len(ordered))


def _string(text: str) -> str:
    """A Spark SQL string literal of ``text`` (the default parser unescapes backslashes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


__all__ = ["FILE_NAME", "FILE_SIZE", "ROW_INDEX", "ScannedFile", "bitset", "keep_condition"]
