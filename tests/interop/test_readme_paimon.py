"""The README's "Apache Paimon tables" snippets, run as written on a warehouse that Paimon's
Java engine wrote; then the Java engine reads the snapshot minipaimon's upsert made."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.interop import harness
from tests.interop.compare import differences

pytestmark = pytest.mark.interop

README = Path(__file__).resolve().parents[2] / "README.md"
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()),
                    pa.field("dt", pa.string(), nullable=False)])


def blocks(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_the_readme_reads_and_writes_a_warehouse_paimon_wrote(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = harness.judge(harness.JAVA)
    warehouse = tmp_path / "paimon-warehouse"  # the README's relative path, from tmp_path
    b = java.batch(tmp_path / "work")
    b.create(warehouse, "sales.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
             options={"bucket": "2"})
    b.commit(warehouse, "sales.orders", pa.table(
        {"id": [1, 2, 3, 4], "amount": [10.0, 20.0, 30.0, 40.0],
         "dt": ["2026-10-31", "2026-11-01", "2026-11-02", "2026-11-02"]}, schema=ORDERS))
    assert all(o.ok for o in b.run())
    python_block, spark_block = blocks("Apache Paimon tables")
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(compile(python_block, "README:Apache Paimon tables", "exec"), scope)
    assert sorted(scope["recent"].column("id").to_pylist()) == [2, 3, 4]
    orders: mp.Table = scope["orders"]
    assert [s.commitUser for s in orders.snapshots()][-1] != orders.snapshots()[0].commitUser
    minipaimon_rows = mp.open_table(orders.path).to_arrow()
    assert minipaimon_rows.num_rows == 4  # the upsert of an existing key adds no row

    # Spark's Python workers run in the JVM's working directory, not this test's: the
    # warehouse given as the absolute path a user's relative one means
    spark_block = spark_block.replace('"paimon-warehouse"', repr(str(warehouse)))
    scope = {"spark": spark}
    exec(compile(spark_block, "README:Apache Paimon tables (Spark)", "exec"), scope)
    assert differences(scope["df"].toArrow(), minipaimon_rows) is None

    b = java.batch(tmp_path / "work2")
    read = b.read(warehouse, "sales.orders")
    outcome = b.run()[read]
    assert outcome.ok, outcome.error
    assert differences(outcome.table(), minipaimon_rows) is None
