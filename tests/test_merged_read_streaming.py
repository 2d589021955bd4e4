"""Merged reads stream (read.merge_read): random histories of every merge engine, changelog
producer, deletion vectors and dynamic buckets, with every merged split streamed 3 rows a
table. The model test checks each commit's read against its dict model; then every split of
the final table read streamed equals the same split read whole (the in-memory merge), and
so do the rows ``dropped_rows`` (the native Spark read's merge) leaves out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.read import merge_read
from tests import test_pk_model as model

OPS = 300
CONFIGS = {**model.CONFIGS,
           "dynamic": model.Config("deduplicate", {"bucket": "-1", "dynamic-bucket.target-row-num": "30",
                                                   "write-only": "true"}, ("-D",)),
           "dedup-multi-file-levels": model.Config("deduplicate", {
               "bucket": "1", "target-file-size": "500 b", "num-sorted-run.compaction-trigger": "4"},
               ("-D", "-U"))}
# histories whose sorted runs pile up between compactions (others compact every write, or
# read their files alone: deletion vectors)
PILE_UP = {"dedup", "dedup-seq-expire-float", "partial-update-seq", "dynamic", "dedup-multi-file-levels"}


def _streamed(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    monkeypatch.setattr(merge_read, "STREAM_SPLIT_BYTES", -1 if on else 1 << 60)
    monkeypatch.setattr(merge_read, "BATCH_ROWS", 3)


def _sorted_rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: repr(sorted(r.items())))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_streamed_merged_reads_equal_the_whole_split_merge(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                           name: str) -> None:
    _streamed(monkeypatch, True)
    streamed_reads = []
    real = merge_read.streams

    def counted(files: Any) -> bool:
        streamed_reads.append(real(files))
        return streamed_reads[-1]

    monkeypatch.setattr(merge_read, "streams", counted)
    path = str(tmp_path / "t")
    model.run(path, CONFIGS[name], 11 + len(name), OPS)  # every commit's read against the model
    t = mp.open_table(path)
    for split in t.scan().plan():
        streamed = pa.Table.from_batches(list(t.read_split(split)), schema=t.schema())
        dropped = t.dropped_rows(split)
        _streamed(monkeypatch, False)
        whole = pa.Table.from_batches(list(t.read_split(split)), schema=t.schema())
        dropped_whole = t.dropped_rows(split)
        _streamed(monkeypatch, True)
        assert _sorted_rows(streamed) == _sorted_rows(whole)
        if dropped_whole is None:
            assert dropped is None
        else:
            assert dropped is not None and dropped.keys() == dropped_whole.keys()
            for name_, rows in dropped_whole.items():
                np.testing.assert_array_equal(dropped[name_], rows)
    if name in PILE_UP:
        assert sum(streamed_reads) >= 10, "the history left too few splits to merge"


def test_a_streamed_read_holds_a_table_per_run(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A merged read of 4 overlapping runs of 4,000 rows, 100 rows a table, yields batches
    of at most 4 x 100 rows: it never holds a run whole."""
    t = mp.create_table(str(tmp_path / "t"), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                        ("v", pa.int64())]),
                        primary_key=["id"], options={"bucket": "1", "write-only": "true",
                                                     "merge-engine": "partial-update"})
    rng = np.random.default_rng(4)
    for run in range(4):
        ids = np.sort(rng.choice(20_000, 4_000, replace=False))
        t.write(pa.table({"id": ids, "v": np.full(len(ids), run)}))
    monkeypatch.setattr(merge_read, "STREAM_SPLIT_BYTES", -1)
    monkeypatch.setattr(merge_read, "BATCH_ROWS", 100)
    [split] = t.scan().plan()
    sizes = [b.num_rows for b in t.read_split(split)]
    monkeypatch.setattr(merge_read, "STREAM_SPLIT_BYTES", 1 << 60)
    whole = t.scan().to_arrow()
    assert sum(sizes) == whole.num_rows and max(sizes) <= 400 and len(sizes) > 40
