"""The README's Spark snippets (the opening lines, the Spark and Structured Streaming
sections, the Operations SQL), run as written (issue 16 item 18).

Each ```python block is executed in a namespace with the names the text around it assumes
(``spark``, ``path``, ``df``, ``changes``, ``src``, ``dst``, ``ckpt``, ``c``); the lazy
reads it builds are collected and the queries it starts are run, so every line really runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed ``## <section>``."""
    text = README.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_opening_lines_run_as_written(spark: Any, tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    path, dst, c = (str(tmp_path / n) for n in ("src", "dst", "ckpt"))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    mp.create_table(path, schema).write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    scope: dict[str, Any] = {"spark": spark, "path": path, "dst": dst, "c": c}
    exec(compile(code, "README:opening", "exec"), scope)
    (q,) = spark.streams.active
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    # the batch append, then the stream's first batch (the full table): each row twice
    assert sorted(mp.open_table(dst).to_arrow().column("id").to_pylist()) == [1, 1, 2, 2]


def test_spark_section_runs_as_written(spark: Any, tmp_path: Path) -> None:
    (code,) = blocks("Spark")
    path = str(tmp_path / "orders")
    df = spark.createDataFrame([(1, "d1", 1.0), (2, "d1", 2.0), (3, "d2", 3.0)], "id long, dt string, v double")
    changes = spark.createDataFrame([(1, "d1", 10.0, "+U"), (2, "d1", 0.0, "-D")],
                                    "id long, dt string, v double, _row_kind string")
    spark.createDataFrame([(4, "d2", 4.0)], "id long, dt string, v double").createOrReplaceTempView("new_orders")
    scope: dict[str, Any] = {"spark": spark, "path": path, "df": df, "changes": changes,
                             "minipaimon_spark": minipaimon_spark, "mp": mp}
    # The tag the snippet reads is made the way the Operations section shows, after the
    # snippet's writes: run the writes, tag, then the reads.
    writes, reads = code.split("\ndf = spark.read", 1)
    exec(compile(writes, "README:Spark", "exec"), scope)
    mp.open_table(path).create_tag("daily", 1)
    exec(compile("df = spark.read" + reads, "README:Spark", "exec"), scope)
    t = mp.open_table(path)
    assert t.primary_keys() == ["id", "dt"] and t.partition_keys() == ["dt"]
    for line in ("df = spark.read" + reads).splitlines():
        expr = line.split("#", 1)[0].strip()
        if expr.startswith("spark.read"):
            eval(expr, scope).collect()  # every read runs
    got = sorted(r.id for r in spark.read.format("minipaimon").load(path).collect())
    assert got == [1, 2, 3, 4]


def test_streaming_section_runs_as_written(spark: Any, tmp_path: Path) -> None:
    (code,) = blocks("Structured Streaming")
    src, dst, ckpt = (str(tmp_path / n) for n in ("src", "dst", "ckpt"))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    t = mp.create_table(src, schema, primary_key=["id"], options={"changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2, 3], "v": [1, 2, 3]}, schema=schema))
    scope: dict[str, Any] = {"spark": spark, "src": src, "dst": dst, "ckpt": ckpt}
    exec(compile(code, "README:Structured Streaming", "exec"), scope)
    q = scope["q"]
    try:
        q.processAllAvailable()
        t.write(pa.table({"id": [2, 3], "v": [20, 0], "_row_kind": ["+U", "-D"]}))
        q.processAllAvailable()
    finally:
        q.stop()
    assert mp.open_table(dst).to_arrow().sort_by("id").to_pydict() == {"id": [1, 2], "v": [1, 20]}
    assert "job-7" in t.consumers()


def test_sql_procedures_section_runs_as_written(spark: Any, tmp_path: Path) -> None:
    """The Operations section's SQL, with its example paths pointing at a real table and
    warehouse."""
    text = README.read_text(encoding="utf-8")
    body = text.split("\n## Operations\n", 1)[1].split("\n## ", 1)[0]
    (sql,) = re.findall(r"```sql\n(.*?)```", body, flags=re.S)
    warehouse = str(tmp_path / "warehouse")
    orders = mp.catalog(warehouse).create_table("sales.orders", pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]), primary_key=["id"])
    for i in range(6):
        orders.write(pa.table({"id": [i, i + 1], "v": [str(i)] * 2}))
    minipaimon_spark.register(spark)
    for line in sql.strip().splitlines():
        statement = line.split("--", 1)[0].strip()
        statement = (statement.replace("'/data/orders'", f"'{orders.path}'")
                     .replace("'/data/warehouse'", f"'{warehouse}'"))
        spark.sql(statement).collect()
    t = mp.open_table(orders.path)
    assert t.tags() == {} and t.latest_snapshot().commitKind == "COMPACT"  # type: ignore[union-attr]


def test_row_level_changes_sql_runs_as_written(spark: Any, tmp_path: Path) -> None:
    """The row-level changes section's SQL on a real orders table (its path replaced)."""
    text = README.read_text(encoding="utf-8")
    body = text.split("\n## Row-level changes: delete, update, merge\n", 1)[1].split("\n## ", 1)[0]
    (sql,) = re.findall(r"```sql\n(.*?)```", body, flags=re.S)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        pa.field("status", pa.string()), pa.field("amount", pa.int64())])
    orders = mp.create_table(str(tmp_path / "orders"), schema, partition_by=["dt"])
    orders.write(pa.table({"id": [1, 2, 3, 4], "dt": ["2024-12-31", "2024-12-31", "2025-01-02", "2025-01-02"],
                           "status": ["void", "open", "open", "open"], "amount": [1, 2, -3, 4]}, schema=schema))
    minipaimon_spark.register(spark)
    for line in sql.strip().splitlines():
        spark.sql(line.replace("'/data/orders'", f"'{orders.path}'")).collect()
    rows = sorted(mp.open_table(orders.path).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["status"], r["amount"]) for r in rows] == [(2, "open", 2), (3, "VOID", 0), (4, "open", 4)]


def test_the_ported_delta_spark_job_runs_as_written(spark: Any, tmp_path: Path) -> None:
    """The delta-spark job of the row-level changes section, its path replaced: each change
    equals the core's on a twin table, and the restore undoes the merge."""
    import pyarrow.compute as pc

    (code,) = blocks("Row-level changes: delete, update, merge")[1:]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        pa.field("status", pa.string()), pa.field("amount", pa.int64())])
    seed = pa.table({"id": [1, 2, 3, 4, 5], "dt": ["2025-01-01", "2025-01-02", "2025-01-02", "2025-01-03",
                                                  "2025-01-03"],
                     "status": ["open"] * 5, "amount": [10, 20, 30, 40, 55]}, schema=schema)
    orders, twin = (mp.create_table(str(tmp_path / n), schema, primary_key=["id", "dt"], partition_by=["dt"],
                                    options={"bucket": "2"}) for n in ("orders", "twin"))
    for t in (orders, twin):
        t.write(seed)
    updates = spark.createDataFrame([(2, "2025-01-02", "cancelled", 0), (3, "2025-01-02", "paid", 31),
                                     (9, "2025-01-03", "new", 90)], "id long, dt string, status string, amount long")
    scope: dict[str, Any] = {"spark": spark, "updates": updates}
    exec(compile(code.replace('"/data/orders"', repr(orders.path)), "README:MiniPaimonTable", "exec"), scope)
    twin.delete([("dt", "<", "2025-01-02")])
    twin.update([("id", "in", [2, 4])], set={"status": pc.binary_join_element_wise(pc.field("status"), "2", ""),
                                             "amount": pc.divide(pc.multiply(pc.field("amount"), 11), 10)})
    got = mp.open_table(orders.path)
    assert got.to_arrow().sort_by("id").equals(twin.to_arrow().sort_by("id"))  # the merge undone
    assert [s.commitKind for s in got.snapshots()][-3:] == ["APPEND", "OVERWRITE", "COMPACT"]
    merged = got.scan(snapshot_id=4).to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["status"], r["amount"]) for r in merged] == [
        (3, "paid", 31), (4, "open2", 44), (5, "stale", 55), (9, "new", 90)]


def test_installing_section_shows_the_error_a_missing_table_gives(spark: Any, tmp_path: Path) -> None:
    """The ```text block of "Installing" is what load() of a missing table raises (its path,
    the file's location and line number aside)."""
    text = README.read_text(encoding="utf-8")
    body = text.split("\n## Installing\n", 1)[1].split("\n## ", 1)[0]
    (shown,) = re.findall(r"```text\n(.*?)```", body, flags=re.S)
    missing = tmp_path / "nope"
    with pytest.raises(Exception) as info:
        spark.read.format("minipaimon").load(str(missing))

    def normal(message: str) -> list[str]:
        message = re.sub(r'File "[^"]*/minipaimon_spark/', 'File ".../minipaimon_spark/', message)
        return [line.rstrip() for line in re.sub(r"line \d+", "line N", message).strip().splitlines()]

    assert normal(str(info.value).replace(str(missing), "/data/nope")) == normal(shown)
