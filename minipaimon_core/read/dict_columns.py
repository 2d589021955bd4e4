"""String and binary columns read as Arrow dictionaries, and back to plain values.

A split read may take a column that a file stores dictionary-encoded as an Arrow
dictionary array of the declared type (``read.read_file_as``): the decode then costs the
indices and the distinct values only, and the merge's filters move 4-byte indices. A
result leaves the reader as the declared (plain) types: :func:`decoded`.
"""

from __future__ import annotations

import pyarrow as pa


def same_values(have: pa.DataType, want: pa.DataType) -> bool:
    """``have`` is ``want``, or an Arrow dictionary of ``want`` values."""
    return have.equals(want) or (pa.types.is_dictionary(have) and have.value_type.equals(want))


def plain(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """``col`` as plain values if it is a dictionary column."""
    return col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col


def decoded(t: pa.Table) -> pa.Table:
    """``t`` with every dictionary column as its plain values."""
    if not any(pa.types.is_dictionary(f.type) for f in t.schema):
        return t
    return t.cast(pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
                             for f in t.schema]))


def concat(tables: list[pa.Table]) -> pa.Table:
    """``tables`` (the same columns) concatenated; where files disagree on a column being a
    dictionary, as plain values."""
    first = tables[0].schema
    if all(t.schema.equals(first) for t in tables):
        return pa.concat_tables(tables)
    return pa.concat_tables([decoded(t) for t in tables])


__all__ = ["concat", "decoded", "plain", "same_values"]
