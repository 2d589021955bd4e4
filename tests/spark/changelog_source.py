"""A changelog source for the streaming restart tests: a primary-key table changed at random.

The table is (id, k, v) with primary key ``id``, ``bucket`` 2 and ``changelog-producer=input``,
so a stream with ``read.changelog=true`` delivers exactly the rows written, with their kinds.
:meth:`ChangelogSource.mutate` makes one random change — upserts (+I for new ids, +U for live
ones), deletes (-D of live ids) or a compaction (full or not, which adds no changelog) — and
keeps every change row it wrote in :attr:`ChangelogSource.changes`, the multiset a stream
from snapshot 1 must deliver exactly once. Used by ``test_stream_chaos.py`` (stops) and
``test_exactly_once.py`` (kills).
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa

import minipaimon_core as mp

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.int64())])
OPTIONS = {"bucket": "2", "changelog-producer": "input"}
Row = tuple[Any, ...]


class ChangelogSource:
    """The source table, its live ids and every change row written to it (id, k, v, kind)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.table = mp.create_table(path, SCHEMA, primary_key=["id"], options=OPTIONS)
        self.live: set[int] = set()
        self.changes: list[Row] = []

    def mutate(self, rng: random.Random) -> bool:
        """One random change: upserts (new and existing ids), deletes, or a compaction.
        Returns whether it wrote change rows (False: a compaction)."""
        roll = rng.random()
        if roll < 0.15:
            self.table.compact(full=rng.random() < 0.5)
            return False
        if roll < 0.4 and self.live:
            gone = rng.sample(sorted(self.live), min(len(self.live), rng.randint(1, 5)))
            self._write(gone, ["x"] * len(gone), [0] * len(gone), ["-D"] * len(gone))
            self.live.difference_update(gone)
            return True
        ids = sorted(set(rng.randint(0, 80) for _ in range(rng.randint(1, 20))))
        self._write(ids, [f"k{rng.randint(0, 3)}" for _ in ids], [rng.randint(0, 1000) for _ in ids],
                    ["+U" if i in self.live else "+I" for i in ids])
        self.live.update(ids)
        return True

    def _write(self, ids: list[int], ks: list[str], vs: list[int], kinds: list[str]) -> None:
        self.table.write(pa.table({"id": ids, "k": ks, "v": vs, "_row_kind": kinds}))
        self.changes += zip(ids, ks, vs, kinds)

    def rows(self) -> list[Row]:
        """The table's rows now, sorted by id."""
        return rows(self.path)


def rows(path: str) -> list[Row]:
    """The (id, k, v) rows of the table at ``path``, sorted by id."""
    data = mp.open_table(path).to_arrow().select(["id", "k", "v"]).sort_by("id")
    return list(zip(*data.to_pydict().values()))
