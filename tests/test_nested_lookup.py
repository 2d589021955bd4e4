"""Nested value columns (list, map, struct) with the lookup changelog producer compact and
produce changelog (issue 15, item 10: the lookup's semi-join refused non-key nested columns)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

import minipaimon_core as mp
from minipaimon_core.format.snapshot import COMPACT
from minipaimon_core.maintenance import TableFiles

NESTED = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("tags", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int64())),
    ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
])


def nested(i: int, tag: str) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "tags": [[tag, "z"]], "attrs": [[("a", i)]],
                     "point": [{"x": 1.0, "y": float(i)}]}, schema=NESTED)


def test_lookup_changelog_with_nested_value_columns(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), NESTED, primary_key=["id"], options={
        "changelog-producer": "lookup", "bucket": "1"})
    t.write(nested(1, "a"))
    assert t.last_after_commit is not None and t.last_after_commit.ok, t.last_after_commit
    t.write(nested(1, "b"))
    assert t.last_after_commit is not None and t.last_after_commit.ok, t.last_after_commit
    latest = t.latest_snapshot()
    assert latest.commitKind == COMPACT
    [path] = TableFiles.of(t).changelog_paths(latest)
    changes = pq.read_table(path)
    assert changes.column("_VALUE_KIND").to_pylist() == [1, 2]  # -U, +U
    assert changes.column("tags").to_pylist() == [["a", "z"], ["b", "z"]]
    assert t.to_arrow().column("tags").to_pylist() == [["b", "z"]]
