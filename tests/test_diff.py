"""Row-level diff between two snapshots, checked against the difference of two full reads."""

from __future__ import annotations

import datetime
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio import LocalFileIO

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
    ("v", pa.int64()), ("f", pa.float64()), ("tags", pa.list_(pa.string())),
])
ENGINES = {
    "deduplicate": {},
    "partial-update": {"partial-update.remove-record-on-delete": "true"},
    "aggregation": {"fields.v.aggregate-function": "sum", "fields.f.aggregate-function": "max",
                    "fields.tags.aggregate-function": "last_value"},
    "first-row": {"ignore-delete": "true"},
}


def norm(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return tuple(value)
    return value


def as_rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(norm(v) for v in row.values()) for row in t.to_pylist()]


def expected_pk(old: pa.Table, new: pa.Table) -> Counter:
    before = {r[:2]: r for r in as_rows(old)}
    after = {r[:2]: r for r in as_rows(new)}
    out: Counter = Counter()
    for k in after.keys() - before.keys():
        out[(*after[k], "+I")] += 1
    for k in before.keys() - after.keys():
        out[(*before[k], "-D")] += 1
    for k in before.keys() & after.keys():
        if before[k] != after[k]:
            out[(*before[k], "-U")] += 1
            out[(*after[k], "+U")] += 1
    return out


def expected_append(old: pa.Table, new: pa.Table) -> Counter:
    a, b = Counter(as_rows(old)), Counter(as_rows(new))
    out: Counter = Counter()
    for row, n in (b - a).items():
        out[(*row, "+I")] += n
    for row, n in (a - b).items():
        out[(*row, "-D")] += n
    return out


def random_rows(rng: random.Random, n: int, keys: int) -> pa.Table:
    ids = [rng.randrange(keys) for _ in range(n)]
    return pa.table({
        "id": ids, "dt": [rng.choice(["a", "b"]) for _ in ids],
        "v": [rng.choice([None, rng.randrange(100)]) for _ in ids],
        "f": [rng.choice([None, float("nan"), -0.5, 0.25, float(rng.randrange(9))]) for _ in ids],
        "tags": [rng.choice([None, [], ["x"], ["x", None], ["y", "z"]]) for _ in ids],
    }, schema=SCHEMA)


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("seed", [1, 2])
def test_primary_key_diff_matches_two_full_reads(tmp_path: Path, engine: str, seed: int) -> None:
    rng = random.Random(seed)
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"],
                            partition_by=["dt"],
                            options={"bucket": "3", "merge-engine": engine, **ENGINES[engine]})
    for _step in range(25):
        op = rng.random()
        if op < 0.15 and table.latest_snapshot() is not None:
            table.compact(full=rng.random() < 0.5)
        elif op < 0.3 and engine in ("deduplicate", "partial-update"):
            gone = random_rows(rng, 3, 12).append_column("_row_kind", pa.array(["-D"] * 3))
            table.write(gone)
        elif op < 0.35 and len(table.snapshots()) > 4:
            table.expire_snapshots(retain_max=len(table.snapshots()) - 1)
        else:
            table.write(random_rows(rng, rng.randrange(1, 8), 12))
    ids = [s.id for s in table.snapshots()]
    for _ in range(15):
        a, b = rng.choice(ids), rng.choice(ids)
        got = Counter(as_rows(table.diff(a, b)))
        want = expected_pk(table.scan(snapshot_id=a).to_arrow(), table.scan(snapshot_id=b).to_arrow())
        assert got == want, (a, b)


@pytest.mark.parametrize("seed", [3, 4])
def test_append_diff_is_a_multiset_difference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    for _step in range(20):
        op = rng.random()
        if op < 0.15:
            table.compact(full=True)
        elif op < 0.25:
            table.write(random_rows(rng, 4, 5), mode="overwrite")
        else:
            table.write(random_rows(rng, rng.randrange(1, 6), 5))  # duplicates included
    ids = [s.id for s in table.snapshots()]
    for _ in range(15):
        a, b = rng.choice(ids), rng.choice(ids)
        got = Counter(as_rows(table.diff(a, b)))
        assert got == expected_append(table.scan(snapshot_id=a).to_arrow(),
                                      table.scan(snapshot_id=b).to_arrow()), (a, b)


def test_changed_row_is_a_update_pair_and_compaction_is_no_change(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"])
    table.write(pa.table({"id": [1, 2, 3], "dt": ["a"] * 3, "v": [1, 2, 3],
                          "f": [0.0] * 3, "tags": [["x"]] * 3}, schema=SCHEMA))
    table.write(pa.table({"id": [2, 4], "dt": ["a"] * 2, "v": [20, 4], "f": [0.0] * 2,
                          "tags": [["x"]] * 2}, schema=SCHEMA))
    table.write(pa.table({"id": [3], "dt": ["a"], "v": [None], "f": [None], "tags": [None],
                          "_row_kind": ["-D"]}, schema=SCHEMA.append(pa.field("_row_kind", pa.string()))))
    got = table.diff(1, 3)
    assert got.select(["id", "v", "_row_kind"]).to_pylist() == [
        {"id": 2, "v": 2, "_row_kind": "-U"}, {"id": 2, "v": 20, "_row_kind": "+U"},
        {"id": 3, "v": 3, "_row_kind": "-D"}, {"id": 4, "v": 4, "_row_kind": "+I"}]
    table.compact(full=True)
    assert table.diff(3, 4).num_rows == 0
    assert table.diff(4, 1).column("_row_kind").to_pylist() == ["-U", "+U", "+I", "-D"]


class CountingIO(LocalFileIO):
    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open_input(self, path: str) -> Any:
        self.opened.append(path)
        return super().open_input(path)


def test_diff_reads_only_the_buckets_that_changed(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], options={"bucket": "16"})
    table.write(random_rows(random.Random(5), 2000, 1000))
    table.write(pa.table({"id": [7], "dt": ["a"], "v": [1], "f": [1.0], "tags": [["n"]]}, schema=SCHEMA))
    io = CountingIO()
    changed = mp.open_table(path, io=io).diff(1, 2)
    data_files = {p for p in io.opened if p.endswith(".parquet")}
    assert len(data_files) <= 2  # the one bucket of key 7: its old file and its new file
    assert set(changed.column("_row_kind").to_pylist()) <= {"+I", "-U", "+U"}
    assert changed.filter(pc.not_equal(changed.column("_row_kind"), "-U")).column("id").to_pylist() == [7]


def test_endpoints_by_tag_and_time_and_typed_errors(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"])
    for i in range(3):
        table.write(pa.table({"id": [i], "dt": ["a"], "v": [i], "f": [0.0], "tags": [[]]}, schema=SCHEMA))
    table.create_tag("first", 1)
    at = datetime.datetime.fromtimestamp(table.snapshot(3).timeMillis / 1000, datetime.timezone.utc)
    assert table.diff("first", at).column("id").to_pylist() == [1, 2]
    table.expire_snapshots(retain_max=2)
    assert table.diff("first", 3).num_rows == 2  # the tag keeps its files
    with pytest.raises((mp.SnapshotExpiredError, mp.SnapshotNotFoundError)):
        table.diff(1, 3)
    with pytest.raises(mp.SnapshotNotFoundError):
        table.diff(2, 9)
    with pytest.raises(mp.SnapshotNotFoundError):
        table.diff("no-such-tag", 3)
    with pytest.raises(mp.InvalidArgumentError):
        table.diff(2.5, 3)  # type: ignore[arg-type]
    with pytest.raises(mp.InvalidArgumentError):
        table.diff(datetime.datetime(2024, 1, 1), 3)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_small_change_to_a_big_bucket_reads_only_its_keys_and_matches_full_reads(tmp_path: Path, engine: str) -> None:
    """A single-column key; the changed files hold few rows, so only their keys are merged."""
    schema = pa.schema([f for f in SCHEMA if f.name != "dt"])
    table = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                            options={"bucket": "2", "merge-engine": engine, **ENGINES[engine]})
    rng = random.Random(9)
    table.write(random_rows(rng, 600, 400).drop_columns(["dt"]))
    table.compact(full=True)
    start = table.latest_snapshot().id
    table.write(random_rows(rng, 5, 500).drop_columns(["dt"]))  # updates and new keys
    if engine in ("deduplicate", "partial-update"):
        table.write(random_rows(rng, 3, 400).drop_columns(["dt"]).append_column("_row_kind", pa.array(["-D"] * 3)))
    end = table.latest_snapshot().id
    got = Counter(as_rows(table.diff(start, end)))
    before = {r[0]: r for r in as_rows(table.scan(snapshot_id=start).to_arrow())}
    after = {r[0]: r for r in as_rows(table.scan(snapshot_id=end).to_arrow())}
    want = Counter([(*after[k], "+I") for k in after.keys() - before.keys()]
                   + [(*before[k], "-D") for k in before.keys() - after.keys()]
                   + [x for k in before.keys() & after.keys() if before[k] != after[k]
                      for x in ((*before[k], "-U"), (*after[k], "+U"))])
    assert got == want and len(want) >= (1 if engine == "first-row" else 4)
