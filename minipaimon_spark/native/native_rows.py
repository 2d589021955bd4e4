"""Leaving rows out of Spark's scan of Parquet files by their positions, in the JVM.

Spark's Parquet scan (3.5+, so every supported version) has the hidden columns
``_metadata.row_index`` (a row's position in its file, whatever split of the file a task
reads), ``_metadata.file_name`` and ``_metadata.file_size``. The positions to drop become
one filter on the scan of a read's files, planned by Spark and evaluated per row in
generated code, with no join and no shuffle:

* per file with rows to drop a bitset, one bit per row up to the last dropped position's
  64-row word; the bitsets of the scan, one after another, are one ``array<bigint>`` in a
  single-row local relation that the filter reads as a scalar subquery (evaluated once per
  query; plans show a subquery, not the bits);
* the row's file gives the row's word in that array (its file's first word plus
  ``row_index >> 6``; none past the file's bitset or for a file with no dropped row): a
  balanced tree of comparisons of ``_metadata.file_size`` with the sizes the manifests
  record, whose leaves check the file: its size where the caller verified that every
  file's real size is the recorded one and no two are equal (``sizes_verified``), else its
  name (then the tree compares names where two sizes repeat). A file the leaf does not
  recognise raises an error: never a silent keep or another file's rows;
* ``NOT bit_get(bits[word], row_index % 64) <=> 1`` keeps the row (a file's bitset
  starts at a word; no word: kept).

The tree is one SQL expression (``F.expr``): building the condition costs a handful of
py4j calls, not one per node.

Measured (bench/bench_spark.py, 5M rows, a tenth marked): see bench/README.md. Per-file
scans made each read's DataFrame cost 0.1 s per file on the driver (py4j and analysis);
an anti-join of the positions on (file, row_index) was slower than the Python source, and
literal arrays put megabytes of numbers into every plan string. A string comparison per
row (the name at the leaf) costs 0.05 s on 5.5M rows, the per-file array of arrays
(two lookups a row) up to 0.03 s more than one flat array.
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
    flags = np.zeros(((int(positions[-1]) >> 6) + 1) * 64, bool)
    flags[positions] = True
    return np.packbits(flags, bitorder="little").view("<i8")  # byte k of a word: flags 8k..8k+7


def keep_condition(spark: SparkSession, files: list[ScannedFile], sizes_verified: bool = False) -> Column | None:
    """The condition on a scan of exactly ``files`` (names distinct), applied before any
    projection, that keeps the rows not at their file's dropped positions (see the module);
    None when no file has a row to drop. ``sizes_verified``: the caller checked that each
    file's size on storage is ``size``."""
    from pyspark.sql import functions as F

    marked = [f for f in files if f.dropped is not None and len(f.dropped)]
    if not marked:
        return None
    sets = [bitset(f.dropped) for f in marked]  # type: ignore[arg-type]
    first_words = np.cumsum([0, *[len(b) for b in sets]])
    words_of = {f.name: (int(first_words[i]), len(sets[i])) for i, f in enumerate(marked)}
    words = pa.array([np.concatenate(sets)], pa.list_(pa.int64()))
    bits = spark.createDataFrame(pa.table({"bits": words})).scalar()
    by_size = sizes_verified and len({f.size for f in files}) == len(files)
    word = F.get(bits, F.expr(_word_sql(files, words_of, by_size)))
    bit = F.bit_get(word, F.expr(f"CAST({ROW_INDEX} % 64 AS INT)"))
    return ~bit.eqNullSafe(1)  # few py4j calls: each costs a round trip and, later, a release


def _word_sql(files: list[ScannedFile], words_of: dict[str, tuple[int, int]], by_size: bool) -> str:
    """SQL for the index of a row's word in the bitsets (NULL: none), a tree on the file's
    size whose leaves check the size (``by_size``) or the name (a tree on names where sizes
    repeat). A file's bitset starts at a word, so the row's bit in its word is its
    ``row_index % 64``."""
    distinct_sizes = len({f.size for f in files}) == len(files)
    ordered = sorted(files, key=(lambda f: f.size) if distinct_sizes else (lambda f: f.name))

    def leaf(f: ScannedFile) -> str:
        word = "CAST(NULL AS INT)"
        if f.name in words_of:
            first, count = words_of[f.name]
            word = f"CASE WHEN {ROW_INDEX} < {count * 64}L THEN CAST(shiftright({ROW_INDEX}, 6) + {first} AS INT) END"
        check = f"{FILE_SIZE} = {f.size}L" if by_size else f"{FILE_NAME} = {_string(f.name)}"
        unknown = (f"raise_error(concat({_string('minipaimon: Spark read a file it was not given: ')}, "
                   f"{FILE_NAME}))")
        return f"CASE WHEN {check} THEN {word} ELSE {unknown} END"

    def tree(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return leaf(ordered[lo])
        mid = (lo + hi) // 2
        test = (f"{FILE_SIZE} < {ordered[mid].size}L" if distinct_sizes
                else f"{FILE_NAME} < {_string(ordered[mid].name)}")
        return f"CASE WHEN {test} THEN {tree(lo, mid)} ELSE {tree(mid, hi)} END"

    return tree(0, len(ordered))


def _string(text: str) -> str:
    """A Spark SQL string literal of ``text`` (the default parser unescapes backslashes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


__all__ = ["FILE_NAME", "FILE_SIZE", "ROW_INDEX", "ScannedFile", "bitset", "keep_condition"]
