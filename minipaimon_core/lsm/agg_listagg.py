"""``listagg`` with ``fields.<f>.distinct`` (Paimon 1.x's ``FieldListaggAgg``), vectorised.

Paimon folds the values of a key in merge order: blank values (null, empty or whitespace
only, Java's ``Character.isWhitespace``) are skipped; the first other value is the state as
it is; each later value is split by the delimiter (every token kept, empty ones too: Paimon's
``splitByWholeSeparatorPreserveAllTokens``; an empty delimiter splits by a space) and each
of its tokens that is not blank and not a token of the state yet is appended, after the
delimiter. So a key's result is its first value, then the new tokens of the others in the
order they first appear. States are such strings, so folding states again gives the same
result (a merge in pieces equals a merge at once).

Vectorised: all the tokens of all the rows at once, a token kept iff it is the first of its
(group, text) in merge order and not in a group's first value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .merge_groups import Groups

#: Java's ``Character.isWhitespace``: Unicode space separators but the no-break ones, and
#: a few ASCII controls
_BLANK = (r"^[\t\n\x0b\x0c\r\x1c-\x1f \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200a}"
          r"\x{2028}\x{2029}\x{205f}\x{3000}]*$")
_EMPTY = pa.scalar("", pa.large_string())


def blank(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Which values are null or blank (empty or whitespace only, as Java's ``isBlank``)."""
    matched = pc.match_substring_regex(values, _BLANK)
    return np.asarray(pc.fill_null(matched, True).to_numpy(zero_copy_only=False), dtype=bool)


def distinct_listagg(col: pa.ChunkedArray, g: Groups, use: np.ndarray, delimiter: str) -> pa.Array:
    """Per group of ``g``, the distinct ``listagg`` of the rows ``use`` marks (input order)
    of string column ``col`` (see the module docstring); null for a group without a value."""
    ngroups = len(g.starts)
    keep = (use & ~blank(col))[g.order]
    rows = g.order[keep]  # input rows, in merge order
    if not len(rows):
        return pa.nulls(ngroups, col.type)
    row_group = g.gid[keep]
    first_of_group = np.ones(len(rows), bool)
    first_of_group[1:] = row_group[1:] != row_group[:-1]
    values = pc.take(col, pa.array(rows, pa.int64())).cast(pa.large_string())
    lists = pc.split_pattern(values, delimiter or " ")
    tokens = pc.list_flatten(lists)
    parent = pc.list_parent_indices(lists).to_numpy()
    token_group = row_group[parent]
    # the first of each (group, text), in time (flatten) order
    order = pc.sort_indices(pa.table({"g": token_group, "t": tokens, "i": np.arange(len(tokens))}),
                            sort_keys=[("g", "ascending"), ("t", "ascending"), ("i", "ascending")]).to_numpy()
    first = np.ones(len(order), bool)
    if len(order) > 1:
        same_group = token_group[order][1:] == token_group[order][:-1]
        same_text = np.asarray(pc.equal(tokens.take(pa.array(order[1:])),
                                        tokens.take(pa.array(order[:-1]))).to_numpy(zero_copy_only=False), bool)
        first[1:] = ~(same_group & same_text)
    is_first = np.empty(len(order), bool)
    is_first[order] = first
    new = np.flatnonzero(is_first & ~first_of_group[parent] & ~blank(tokens))
    heads = _per_group(values, row_group[first_of_group], np.flatnonzero(first_of_group), ngroups)
    suffix = pa.repeat(_EMPTY, ngroups)
    if len(new):
        added = pa.table({"g": token_group[new], "t": tokens.take(pa.array(new))})
        joined = added.group_by("g", use_threads=False).aggregate([("t", "list")])  # time order
        tails = pc.binary_join(joined.column("t_list"), pa.scalar(delimiter, pa.large_string()))
        tail = _per_group(tails, joined.column("g").to_numpy(), np.arange(joined.num_rows), ngroups)
        suffix = pc.fill_null(pc.binary_join_element_wise(pa.scalar(delimiter, pa.large_string()), tail, _EMPTY),
                              _EMPTY)
    return pc.binary_join_element_wise(heads, suffix, _EMPTY).cast(col.type)


def _per_group(values: pa.Array | pa.ChunkedArray, groups: np.ndarray, at: np.ndarray, ngroups: int) -> pa.Array:
    """``values[at[i]]`` for group ``groups[i]``; null for the other groups."""
    where = np.full(ngroups, -1, np.int64)
    where[groups] = at
    return pc.take(values, pa.array(np.maximum(where, 0), mask=where < 0))


__all__ = ["blank", "distinct_listagg"]
