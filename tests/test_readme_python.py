"""The README's Python snippets without Spark (Python API, catalog, streaming consumer,
Operations), quick and on their own; tests/spark/test_readme.py runs every block of the
README in order, Spark's included (issue 38 item 16). And what the blocks import is what
installing gives, or what the block says to install.

The S3 snippets (Python API, and "Tables on S3-compatible storage") run against a real
S3-compatible server on 127.0.0.1 (moto), with only the endpoint and the bucket name
replaced by the server's; the Azure snippet against Azurite, with its endpoint, key and a
fresh container put in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.azurite import AzuriteServer
from tests.s3_servers import S3Server

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed ``## <section>`` (its subsections
    included)."""
    text = README.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_python_and_operations_snippets_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("polars")
    monkeypatch.chdir(tmp_path)  # the snippets use a relative "warehouse"
    api, arrow_streams, lazy, catalog, consumer, _s3, _azure = blocks("Python API")
    scope: dict[str, Any] = {}
    exec(compile(api, "README:Python API", "exec"), scope)
    t: mp.Table = scope["t"]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3] and t.count() == 3
    assert t.latest_snapshot().commitIdentifier == 7  # type: ignore[union-attr]
    assert "Table('warehouse/users')" in capsys.readouterr().out  # print(t)
    exec(compile(arrow_streams, "README:Polars and DuckDB", "exec"), scope)
    assert len(t.snapshots()) == 4 and t.count() == 3  # Polars' upsert
    exec(compile(lazy, "README:Polars, lazily", "exec"), scope)
    assert scope["lf"].filter(scope["pl"].col("dt") == "d1").collect().height == 2
    exec(compile(catalog, "README:catalog", "exec"), scope)
    assert mp.catalog("warehouse").list_tables("sales") == []
    # the consumer block as written: it opens the table above and creates its copy itself
    assert "src" not in scope and "dst" not in scope
    exec(compile(consumer, "README:consumer", "exec"), scope)
    copy = mp.open_table("warehouse/users_copy")
    assert copy.to_arrow().sort_by("id").equals(t.to_arrow().sort_by("id"))
    assert t.consumers() == {"copy": 5}  # every batch committed: next is the one after 4
    operations, post_commit = blocks("Operations")  # it opens the table of "Python API" itself
    exec(compile(operations, "README:Operations", "exec"), scope)
    t = mp.open_table(t.path)
    assert t.latest_snapshot().id == 2  # type: ignore[union-attr]  # rolled back (the restore too)
    assert t.schema().names == ["id", "name", "dt"] and t.tags() == {}
    assert t.options()["snapshot.num-retained.min"] == "5"
    exec(compile(post_commit, "README:Partition expiration and automatic tags", "exec"), scope)
    logs = mp.open_table("warehouse/logs")
    assert logs.to_arrow().column("dt").to_pylist() == ["29990101"] and len(logs.tags()) == 1


def test_object_storage_snippets_run_as_written_on_a_real_s3_server(
        moto_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    *_, create, _azure = blocks("Python API")
    (reopen,) = blocks("Running on a cluster and object storage")
    bucket = moto_server.create_bucket()
    for name, value in moto_server.env().items():  # "settings from the AWS_* environment"
        monkeypatch.setenv(name, value)

    def here(code: str) -> str:
        return code.replace("http://127.0.0.1:8333", moto_server.endpoint).replace("s3://lake/", f"s3://{bucket}/")

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    scope: dict[str, Any] = {"mp": mp, "schema": schema}
    exec(compile(here(create), "README:object storage", "exec"), scope)
    scope["t"].write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema))
    assert scope["t"].path == f"s3://{bucket}/wh/orders" and scope["t"].options()["bucket"] == "4"
    exec(compile(here(reopen), "README:Tables on S3-compatible storage", "exec"), scope)
    assert scope["t"].to_arrow().sort_by("id").column("id").to_pylist() == [1, 2]
    cat = scope["cat"]
    orders = cat.create_table("sales.orders", schema, primary_key=["id"])
    assert orders.path == f"s3://{bucket}/wh/sales.db/orders" and cat.list_tables("sales") == ["orders"]


def test_the_azure_snippet_runs_as_written_on_azurite(azurite_server: AzuriteServer) -> None:
    *_, azure = blocks("Python API")
    container = azurite_server.create_container()
    code = (azure.replace("http://127.0.0.1:10000/devstoreaccount1", azurite_server.endpoint)
            .replace('"..."', repr(azurite_server.key)).replace("az://lake/", f"az://{container}/")
            .replace("abfss://lake@", f"abfss://{container}@"))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    scope: dict[str, Any] = {"mp": mp, "schema": schema}
    exec(compile(code, "README:Azure", "exec"), scope)
    scope["t"].write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema))
    again = mp.open_table(f"az://{container}/wh/orders", options=scope["opts"])
    assert again.to_arrow().sort_by("id").column("id").to_pylist() == [1, 2]
    assert scope["t"].path == f"abfss://{container}@devstoreaccount1.dfs.core.windows.net/wh/orders"


def test_row_level_changes_snippet_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the snippet creates "orders" in the working directory
    code = blocks("Row-level changes: delete, update, merge")[0]
    scope: dict[str, Any] = {}
    exec(compile(code, "README:Row-level changes", "exec"), scope)
    result = scope["result"]
    assert (result.inserted, result.updated, result.deleted) == (1, 1, 0)
    rows = {r["id"]: r for r in mp.open_table("orders").to_arrow().to_pylist()}
    assert rows == {2: {"id": 2, "dt": "2025-01-02", "status": "paid", "amount": 20},
                    3: {"id": 3, "dt": "2025-01-02", "status": "void", "amount": 60},
                    4: {"id": 4, "dt": "2025-01-02", "status": "new", "amount": 40}}


# What a block may import: the standard library, minipaimon's dependencies (pyproject.toml),
# the spark extra's where the block uses Spark, and what the block says to pip install.
_DEPENDENCIES = {"minipaimon_core", "minipaimon_spark", "pyarrow", "numpy", "msgspec", "xxhash",
                 "zstandard", "obstore", "fastavro"}
_SPARK_EXTRA = {"pyspark", "pandas"}


def test_readme_blocks_import_what_installing_gives_or_say_what_to_install() -> None:
    """Issue 38 item 16: the Python API block imported polars, which neither `pip install
    minipaimon` nor the spark extra installs."""
    import ast
    import sys

    text = README.read_text(encoding="utf-8")
    for code in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(code))
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
        said = set(re.findall(r"pip install ([\w ]+)", code)[0].split()) if "pip install" in code else set()
        allowed = set(sys.stdlib_module_names) | _DEPENDENCIES | said | (_SPARK_EXTRA if "spark" in code else set())
        assert imported <= allowed, (sorted(imported - allowed), code[:200])
