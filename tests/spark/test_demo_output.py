"""What the demo job (scripts/demo.sh, scripts/demo_job.py) prints about its table's
snapshots: the rows each snapshot holds, not the records its files hold (issue 32 item 26:
it printed ``rows=7`` for a table of 4 rows). No Spark session: the listing is plain core."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from minipaimon_spark.demo import snapshot_lines  # noqa: E402

ORDERS = pa.schema([pa.field("order_id", pa.int64(), nullable=False), ("customer", pa.string()),
                    ("amount", pa.float64()), pa.field("dt", pa.string(), nullable=False)])


def test_the_demo_prints_each_snapshots_rows(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "orders"), ORDERS, primary_key=["order_id", "dt"],
                        partition_by=["dt"], options={"bucket": "2"})
    t.write(pa.table({"order_id": [1, 2, 3, 4], "customer": ["alice", "bob", "carol", "dave"],
                      "amount": [12.5, 7.0, 30.0, 4.2], "dt": ["2026-11-01"] * 4}, schema=ORDERS))
    t.write(pa.table({"order_id": [2, 5, 4], "customer": ["bob", "erin", "dave"], "amount": [9.0, 15.0, 4.2],
                      "dt": ["2026-11-01"] * 3, "_row_kind": ["+U", "+I", "-D"]}))
    lines = snapshot_lines(t)
    assert len(lines) == 2
    assert "rows=4 " in lines[0] and "rows=4 " in lines[1]  # the demo's table: 4 rows, twice
    assert "records in files=7" in lines[1]  # what the files hold, named for what it is
