"""Build tests/fixtures/legacy_tables: tables of minipaimon's earlier format (before it
adopted Apache Paimon's), for the tests that read and migrate them.

Generated with the code of commit e3357da (the last one writing that format):

    git worktree add /tmp/legacy e3357da
    PYTHONPATH=/tmp/legacy python scripts/make_legacy_fixtures.py tests/fixtures/legacy_tables
"""

from __future__ import annotations

import sys

import pyarrow as pa

import minipaimon_core as mp


def main(root: str) -> None:
    append = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                        pa.field("dt", pa.date32())])
    a = mp.create_table(f"{root}/append", append, partition_by=["dt"])
    a.write(pa.table({"id": [1, 2, 3], "name": ["a", "b/c", None],
                      "dt": pa.array([19723, 19723, 19724], pa.date32())}, schema=append))
    a.write(pa.table({"id": [4], "name": ["d"], "dt": pa.array([19724], pa.date32())}, schema=append))
    a.create_tag("first", 1)
    # no integer column: the earlier writer's DELTA_BINARY_PACKED encoding (which Paimon's
    # Java reader refuses) is not in its files, so migrate hard-links them
    text = pa.schema([("name", pa.string()), pa.field("dt", pa.date32())])
    x = mp.create_table(f"{root}/append_text", text, partition_by=["dt"])
    x.write(pa.table({"name": ["a", "b", None], "dt": pa.array([19723, 19724, 19724], pa.date32())},
                     schema=text))
    x.write(pa.table({"name": ["c"], "dt": pa.array([19723], pa.date32())}, schema=text))
    pk = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("p", pa.string(), nullable=False)])
    t = mp.create_table(f"{root}/pk", pk, primary_key=["id", "p"], partition_by=["p"],
                        options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": list(range(10)), "v": [f"v{i}" for i in range(10)], "p": ["x"] * 5 + ["y"] * 5},
                     schema=pk))
    t.write(pa.table({"id": [1, 7], "v": ["V1", "V7"], "p": ["x", "y"]}, schema=pk))
    t.write(pa.table({"id": [2], "v": [None], "p": ["x"], "_row_kind": ["-D"]}))
    t.add_column("extra", pa.int32())


if __name__ == "__main__":
    main(sys.argv[1])
