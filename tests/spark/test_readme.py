"""The README runs as written: every ```python and ```sql block, top to bottom, in one
namespace and one working directory, as a reader pastes them (issue 38 item 16; before, each
section ran on its own with names the test put in, so a block using a name an earlier block
had bound to something else went unseen).

Fill-ins only where a block says so:

- a ``# given: name (what), ...`` line names what the block takes: the test makes exactly
  those (FILL_INS, per section) and nothing else;
- the placeholders of the object-store blocks: ``"..."`` for a key, and the example store
  (``http://127.0.0.1:8333``, the bucket or container ``lake``, Azurite's endpoint) become
  the test's own servers on 127.0.0.1; the cluster block's "settings from the AWS_*
  environment" are set;
- the SQL blocks' example tables ``/data/orders`` and ``/data/warehouse`` are the
  ``orders`` table and the ``warehouse`` the blocks before them made;
- relative paths inside Spark calls are made absolute: the shared session's Python workers
  run in the directory pytest started in, not this test's (a reader's session runs where
  the reader is).

Spark reads are lazy: each ``spark.read...`` expression a block leaves unassigned is
collected, and the streaming queries a block starts are run to the end of their input and
stopped. After some blocks the test checks what the block did (CHECKS).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from tests.azurite import AzuriteServer  # noqa: E402
from tests.s3_servers import S3Server  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"
_GIVEN = re.compile(r"^# given: (.*)$", re.M)


class Block:
    def __init__(self, section: str, index: int, language: str, code: str) -> None:
        self.section, self.index, self.language, self.code = section, index, language, code

    @property
    def key(self) -> tuple[str, int]:
        return self.section, self.index

    def given(self) -> list[str]:
        """The names of the ``# given:`` line: each item's first word (items are separated by
        commas outside parentheses)."""
        m = _GIVEN.search(self.code)
        if m is None:
            return []
        items, depth, current = [], 0, ""
        for ch in m.group(1):
            depth += (ch == "(") - (ch == ")")
            if ch == "," and depth == 0:
                items.append(current)
                current = ""
            else:
                current += ch
        return [item.split()[0] for item in [*items, current] if item.strip()]


def readme_blocks() -> list[Block]:
    """Every ```python and ```sql block, in order, with its ``## `` section and its index
    among the section's blocks of that language ("" for the text before the first heading)."""
    out: list[Block] = []
    head, *sections = README.read_text(encoding="utf-8").split("\n## ")
    for i, body in enumerate([head, *sections]):
        title = "" if i == 0 else body.split("\n", 1)[0]
        counts: dict[str, int] = {}
        for m in re.finditer(r"```(python|sql)\n(.*?)```", body, flags=re.S):
            language = m.group(1)
            out.append(Block(title, counts.get(language, 0), language, m.group(2)))
            counts[language] = counts.get(language, 0) + 1
    return out


ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()),
                    pa.field("dt", pa.string(), nullable=False)])


class Reader:
    """The reader's session: the namespace the blocks share, the directory they run in, the
    servers that stand for the example stores, and the fill-ins."""

    def __init__(self, spark: Any, home: Path, s3: S3Server, azurite: AzuriteServer) -> None:
        self.spark, self.home, self.s3, self.azurite = spark, home, s3, azurite
        self.scope: dict[str, Any] = {}
        self.bucket = s3.create_bucket()
        self.container = azurite.create_container()

    # -- fill-ins ------------------------------------------------------------------------

    def opening_table(self) -> str:
        path = str(self.home / "opening")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
        mp.create_table(path, schema).write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
        return path

    def paimon_warehouse(self) -> None:
        """A warehouse with sales.orders, as the one Flink or Spark+Paimon writes (the
        interop test, tests/interop/test_readme_paimon.py, runs the block on Java's)."""
        orders = mp.catalog("paimon-warehouse").create_table(
            "sales.orders", ORDERS, primary_key=["id", "dt"], partition_by=["dt"], options={"bucket": "2"})
        orders.write(pa.table({"id": [1, 2, 3, 4], "amount": [10.0, 20.0, 30.0, 40.0],
                               "dt": ["2026-10-31", "2026-11-01", "2026-11-02", "2026-11-02"]}, schema=ORDERS))

    def spark_inputs(self) -> dict[str, Any]:
        spark = self.spark
        spark.createDataFrame([(4, "d2", 4.0)], "id long, dt string, v double").createOrReplaceTempView("new_orders")
        return {
            "df": spark.createDataFrame([(1, "d1", 1.0), (2, "d1", 2.0), (3, "d2", 3.0)],
                                        "id long, dt string, v double"),
            "changes": spark.createDataFrame([(1, "d1", 10.0, "+U"), (2, "d1", 0.0, "-D")],
                                             "id long, dt string, v double, _row_kind string"),
            "path": str(self.home / "spark-orders")}

    def fill_ins(self, block: Block) -> dict[str, Any]:
        """The values of the block's ``# given:`` names (a name None: made, not bound)."""
        by_section: dict[str, Callable[[], dict[str, Any]]] = {
            "": lambda: {"spark": self.spark, "path": self.opening_table(),
                         "dst": str(self.home / "opening-copy"), "c": str(self.home / "ckpt-opening")},
            "Apache Paimon tables": lambda: {"paimon-warehouse": self.paimon_warehouse()},
            "Spark": lambda: {**self.spark_inputs(), "new_orders": None},
            "Structured Streaming": lambda: {"ckpt": str(self.home / "ckpt-stream")},
            "Row-level changes: delete, update, merge": lambda: {"updates": self.spark.createDataFrame(
                [(3, "2025-01-02", "cancelled", 0), (4, "2025-01-02", "paid", 45), (9, "2025-01-03", "new", 90)],
                "id long, dt string, status string, amount long")},
        }
        given = block.given()
        made = by_section[block.section]() if given else {}
        assert sorted(given) == sorted(made), (block.key, given)  # exactly what the block names
        return {name: value for name, value in made.items() if value is not None}

    def placeholders(self, block: Block) -> str:
        """The code with the example stores, keys and example paths replaced (module docs)."""
        s3, az = self.s3, self.azurite
        code = (block.code.replace("http://127.0.0.1:8333", s3.endpoint)
                .replace("s3://lake/", f"s3://{self.bucket}/")
                .replace('"s3.access-key": "..."', f'"s3.access-key": {s3.access_key!r}')
                .replace('"s3.secret-key": "..."', f'"s3.secret-key": {s3.secret_key!r}')
                .replace("http://127.0.0.1:10000/devstoreaccount1", az.endpoint)
                .replace('"azure.account-key": "..."', f'"azure.account-key": {az.key!r}')
                .replace("az://lake/", f"az://{self.container}/")
                .replace("abfss://lake@", f"abfss://{self.container}@")
                .replace("'/data/orders'", repr(str(self.home / "orders")))
                .replace("'/data/warehouse'", repr(str(self.home / "warehouse"))))
        if "spark." in code:
            code = code.replace('"paimon-warehouse"', repr(str(self.home / "paimon-warehouse")))
        assert '"..."' not in code, block.key
        return code

    # -- running -------------------------------------------------------------------------

    def run(self, block: Block) -> None:
        code = self.placeholders(block)
        if block.language == "sql":
            for line in code.strip().splitlines():
                statement = line.split("--", 1)[0].strip()
                if statement:
                    self.spark.sql(statement).collect()
            return
        self.scope.update(self.fill_ins(block))
        where = f"README:{block.section or 'opening'}:{block.index}"
        exec(compile(code, where, "exec"), self.scope)
        for statement in ast.parse(code).body:  # lazy reads left unassigned: make them run
            text = ast.get_source_segment(code, statement) or ""
            if isinstance(statement, ast.Expr) and text.startswith("spark.read"):
                eval(compile(ast.Expression(statement.value), where, "eval"), self.scope).collect()
        for query in self.spark.streams.active:  # queries the block started: run, then stop
            try:
                query.processAllAvailable()
            finally:
                query.stop()

    def table(self, path: str | Path) -> mp.Table:
        return mp.open_table(str(path))


def ids(t: mp.Table) -> list[int]:
    return sorted(t.to_arrow().column("id").to_pylist())


def rows_of(t: mp.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    data = t.to_arrow().select(columns).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


# What the test checks after a block (section, index of the block among its language's).
def check_opening(r: Reader, out: str) -> None:
    # the batch append, then the stream's first batch (the full table): each row twice
    assert ids(r.table(r.home / "opening-copy")) == [1, 1, 2, 2]


def check_paimon(r: Reader, out: str) -> None:
    assert sorted(r.scope["recent"].column("id").to_pylist()) == [2, 3, 4]
    assert r.table(r.scope["orders"].path).to_arrow().num_rows == 4  # an upsert adds no row


def check_paimon_spark(r: Reader, out: str) -> None:
    assert sorted(row.id for row in r.scope["df"].collect()) == [1, 2, 3, 4]


def check_api(r: Reader, out: str) -> None:
    t: mp.Table = r.scope["t"]
    assert ids(t) == [1, 2, 3] and t.count() == 3
    assert t.latest_snapshot().commitIdentifier == 7  # type: ignore[union-attr]
    assert "Table('warehouse/users')" in out  # print(t)


def check_arrow_streams(r: Reader, out: str) -> None:
    t: mp.Table = r.scope["t"]
    assert ids(t) == [1, 2, 3] and len(t.snapshots()) == 4  # Polars' upsert is snapshot 4


def check_catalog(r: Reader, out: str) -> None:
    assert mp.catalog("warehouse").list_tables("sales") == []  # created, renamed, dropped


def check_consumer(r: Reader, out: str) -> None:
    users = r.table("warehouse/users")
    assert rows_of(r.table("warehouse/users_copy"), ["id", "name", "dt"]) == rows_of(users, ["id", "name", "dt"])
    assert users.consumers() == {"copy": 5}  # every batch committed: next is the one after 4


def check_s3(r: Reader, out: str) -> None:
    t: mp.Table = r.scope["t"]
    assert t.path == f"s3://{r.bucket}/wh/orders" and t.options()["bucket"] == "4"


def check_azure(r: Reader, out: str) -> None:
    t: mp.Table = r.scope["t"]
    assert t.path == f"abfss://{r.container}@devstoreaccount1.dfs.core.windows.net/wh/orders"
    assert mp.open_table(f"az://{r.container}/wh/orders", options=r.scope["opts"]).options()["bucket"] == "4"


def check_spark(r: Reader, out: str) -> None:
    t = r.table(r.scope["path"])
    assert t.primary_keys() == ["id", "dt"] and t.partition_keys() == ["dt"]
    assert ids(t) == [1, 2, 3, 4]  # overwritten by df, then new_orders' row inserted


def check_streaming(r: Reader, out: str) -> None:
    source, sink = r.table(r.scope["path"]), r.table(r.scope["path"] + "_changes")
    assert rows_of(sink, ["id", "dt", "v"]) == rows_of(source, ["id", "dt", "v"])
    assert "job-7" in source.consumers()


def check_row_level(r: Reader, out: str) -> None:
    result = r.scope["result"]
    assert (result.inserted, result.updated, result.deleted) == (1, 1, 0)
    assert rows_of(r.table(r.home / "orders"), ["id", "status", "amount"]) == [
        (2, "paid", 20), (3, "void", 60), (4, "new", 40)]


def check_polars_lazy(r: Reader, out: str) -> None:
    pl = r.scope["pl"]
    assert r.scope["lf"].filter(pl.col("dt") == "d1").collect().height == 2


def check_minipaimon_table(r: Reader, out: str) -> None:
    """The ported delta-spark job: its changes, then the restore to before its merge."""
    t = r.table(r.home / "orders")
    assert rows_of(t, ["id", "status", "amount"]) == [(2, "paid2", 22), (3, "void", 60), (4, "new2", 44)]
    kinds = [s.commitKind for s in t.snapshots()]
    assert kinds[-3:] == ["APPEND", "OVERWRITE", "COMPACT"]  # the merge, the restore, the compaction
    merged = t.scan(snapshot_id=t.snapshots()[-3].id).to_arrow()
    assert rows_of_table(merged) == [(2, "paid2", 22), (4, "paid", 45), (9, "new", 90)]
    assert "num_inserted_rows" in out  # the merge's metrics, shown


def rows_of_table(data: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["status"], r["amount"]) for r in data.to_pylist())


def check_row_level_sql(r: Reader, out: str) -> None:
    """The SQL procedures, Spark SQL expressions included (upper(status) where id % 3 = 0)."""
    assert rows_of(r.table(r.home / "orders"), ["id", "status", "amount"]) == [
        (2, "paid2", 22), (3, "VOID", 60), (4, "new2", 44)]


def check_operations(r: Reader, out: str) -> None:
    t = r.table("warehouse/users")
    assert t.latest_snapshot().id == 2  # type: ignore[union-attr]  # rolled back (the restore too)
    assert t.schema().names == ["id", "name", "dt"] and t.tags() == {}
    assert t.options()["snapshot.num-retained.min"] == "5"


def check_operations_sql(r: Reader, out: str) -> None:
    t = r.table(r.home / "orders")
    assert t.tags() == {} and t.latest_snapshot().commitKind == "COMPACT"  # type: ignore[union-attr]


def check_cluster(r: Reader, out: str) -> None:
    assert r.scope["t"].path == f"s3://{r.bucket}/wh/orders" and r.scope["t"].options()["bucket"] == "4"
    assert r.scope["cat"].list_namespaces() == []  # wh/orders is a table by path, in no namespace


CHECKS: dict[tuple[str, str, int], Callable[[Reader, str], None]] = {
    ("", "python", 0): check_opening,
    ("Apache Paimon tables", "python", 0): check_paimon,
    ("Apache Paimon tables", "python", 1): check_paimon_spark,
    ("Python API", "python", 0): check_api,
    ("Python API", "python", 1): check_arrow_streams,
    ("Python API", "python", 2): check_polars_lazy,
    ("Python API", "python", 3): check_catalog,
    ("Python API", "python", 4): check_consumer,
    ("Python API", "python", 5): check_s3,
    ("Python API", "python", 6): check_azure,
    ("Spark", "python", 0): check_spark,
    ("Structured Streaming", "python", 0): check_streaming,
    ("Row-level changes: delete, update, merge", "python", 0): check_row_level,
    ("Row-level changes: delete, update, merge", "python", 1): check_minipaimon_table,
    ("Row-level changes: delete, update, merge", "sql", 0): check_row_level_sql,
    ("Operations", "python", 0): check_operations,
    ("Operations", "sql", 0): check_operations_sql,
    ("Running on a cluster and object storage", "python", 0): check_cluster,
}


def test_every_readme_block_runs_in_order_as_written(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        moto_server: S3Server, azurite_server: AzuriteServer) -> None:
    pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)  # the blocks' relative paths ("warehouse/users", "orders")
    for name, value in moto_server.env().items():  # "settings from the AWS_* environment"
        monkeypatch.setenv(name, value)
    reader = Reader(spark, tmp_path, moto_server, azurite_server)
    blocks = readme_blocks()
    for block in blocks:
        capsys.readouterr()
        reader.run(block)
        check = CHECKS.get((block.section, block.language, block.index))
        if check is not None:
            check(reader, capsys.readouterr().out)
    assert {(b.section, b.language, b.index) for b in blocks} >= set(CHECKS)  # every check ran


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


def test_readme_blocks_are_found_in_order() -> None:
    """The block list the test above walks: every fenced python / sql block once, in the
    README's order, each section's blocks numbered from 0."""
    text = README.read_text(encoding="utf-8")
    blocks = readme_blocks()
    assert len(blocks) == len(re.findall(r"```(?:python|sql)\n", text))
    positions = [text.index(b.code) for b in blocks]
    assert positions == sorted(positions)
