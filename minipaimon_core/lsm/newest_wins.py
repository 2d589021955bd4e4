"""Deduplicate merge-on-read by probing keys instead of sorting rows: :func:`newest_wins`.

For the ``deduplicate`` engine with one key column and no ``sequence.field``, the version
of a key that wins is the one in the newest sorted run that holds it (LSM invariant: a
newer run holds newer versions). So a row survives iff it is live (+I/+U) and no newer run
holds its key; a -U/-D row shadows older ones but never shows (with ``ignore_delete`` it
neither shows nor shadows).

REQUIRES: ``runs`` newest first, each a list of file tables (same schema, user columns plus
``_VALUE_KIND``) with at most one row per key in each run — what every writer produces.

Probing, per file, so no run is re-sorted and nothing is concatenated before filtering:

* integer or temporal keys without nulls, every file's keys strictly ascending (checked,
  O(n)): only between files whose key ranges overlap, a flag per value of the file's key
  range where its keys are dense (O(n + m) for m newer keys), else binary search of the
  smaller side into the larger (O(m log n));
* any other key (or a file that is not sorted): Arrow's hash ``is_in`` against the keys of
  every newer run.

The output is the kept rows of each file, files in input order (not in key order: a read
needs none). Pure; no IO.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .merge_config import INSERT, UPDATE_AFTER, VALUE_KIND
from .merge_groups import int_values

# Keys spanning at most this many values per row are probed through a flag per value of
# their range (a byte each; 13x faster than binary search on 3 interleaved runs of 1.25M
# keys) rather than by binary search.
_DENSE_SPAN = 16


class _File:
    """One file's rows, live mask, and the keys it shadows older runs with."""

    def __init__(self, table: pa.Table, key: str, ignore_delete: bool) -> None:
        self.table = table
        kinds = table.column(VALUE_KIND).to_numpy()
        self.live: np.ndarray = (kinds == int(INSERT)) | (kinds == int(UPDATE_AFTER))
        self.keys = table.column(key)
        self.sorted_keys = _strictly_ascending(self.keys)
        self.ignore_delete = ignore_delete

    def probe(self) -> pa.ChunkedArray:
        """The keys that shadow older runs (deletes ignored: live keys only)."""
        return self.keys.filter(pa.array(self.live)) if self.ignore_delete else self.keys

    @functools.cached_property
    def sorted_probe(self) -> np.ndarray:
        """:meth:`probe` as ascending integers (REQUIRES sorted_keys)."""
        assert self.sorted_keys is not None
        return self.sorted_keys[self.live] if self.ignore_delete else self.sorted_keys


def _strictly_ascending(col: pa.ChunkedArray) -> np.ndarray | None:
    """The key values as integers if they are integer/temporal, not null and strictly
    ascending (sorted, one row per key); else None."""
    if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_temporal(col.type)):
        return None
    v = int_values(col)
    return v if len(v) < 2 or bool((v[1:] > v[:-1]).all()) else None


def newest_wins(runs: list[list[pa.Table]], key: str, ignore_delete: bool,
                filter_rows: Callable[[pa.Table, pa.Array], pa.Table] = pa.Table.filter) -> pa.Table:
    """The winning row of every live key of ``runs`` (see module doc), rows unsorted.
    ``filter_rows(table, mask)`` drops the rows of a file that do not win (a caller may
    filter columns concurrently)."""
    masks = winners(runs, key, ignore_delete)
    return pa.concat_tables([t if keep.all() else filter_rows(t, pa.array(keep))
                             for run, run_masks in zip(runs, masks) for t, keep in zip(run, run_masks)])


def winners(runs: list[list[pa.Table]], key: str, ignore_delete: bool) -> list[list[np.ndarray]]:
    """Which rows of each file of ``runs`` win (boolean masks, shaped as ``runs``). The
    tables need only the ``key`` and ``_VALUE_KIND`` columns, so a caller can read the
    other columns of a file afterwards, and only if some of its rows win."""
    files = [[_File(t, key, ignore_delete) for t in run] for run in runs]
    by_search = all(f.sorted_keys is not None for run in files for f in run)
    masks: list[list[np.ndarray]] = []
    newer: list[_File] = []
    for run in files:
        seen = None
        if newer and not by_search:
            seen = pa.chunked_array([c for n in newer for c in n.probe().chunks], newer[0].keys.type)
        run_masks = []
        for f in run:
            if not newer:
                shadow = None
            elif seen is not None:
                shadow = pc.is_in(f.keys, value_set=seen).to_numpy(zero_copy_only=False)
            else:
                shadow = _shadowed(f, newer)
            run_masks.append(f.live if shadow is None else f.live & ~shadow)
        masks.append(run_masks)
        newer.extend(run)
    return masks


def _shadowed(f: _File, newer: list[_File]) -> np.ndarray | None:
    """Which rows of ``f`` (sorted keys) a newer file's key shadows; None if none can."""
    keys = f.sorted_keys
    assert keys is not None
    if not len(keys):
        return None
    subs = []  # each newer file's keys within this file's key range
    for n in newer:
        probe = n.sorted_probe
        sub = probe[np.searchsorted(probe, keys[0]):np.searchsorted(probe, keys[-1], "right")]
        if len(sub) == len(keys) and np.array_equal(sub, keys):
            return np.ones(len(keys), bool)  # a newer file rewrote every key of this one
        if len(sub):
            subs.append(sub)
    if not subs:
        return None
    span = int(keys[-1]) - int(keys[0]) + 1
    if span <= _DENSE_SPAN * len(keys):  # dense keys: one flag per value of the range, O(n)
        base = keys[:1].astype(np.int64)  # offsets in int64: no narrow type overflows
        seen = np.zeros(span, bool)
        for sub in subs:
            seen[sub.astype(np.int64, copy=False) - base] = True
        return seen[keys.astype(np.int64, copy=False) - base]
    shadow = np.zeros(len(keys), bool)
    for sub in subs:
        if len(sub) <= len(keys):  # search the fewer values into the more
            pos = np.searchsorted(keys, sub)  # < len(keys): sub <= keys[-1]
            shadow[pos[keys[pos] == sub]] = True
        else:
            pos = np.minimum(np.searchsorted(sub, keys), len(sub) - 1)
            shadow |= sub[pos] == keys
    return shadow
