"""The README's Python snippets (Python API, catalog, streaming consumer, Operations) run as
written, one after another in one namespace, as a reader would paste them.

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
    api, lazy, catalog, consumer, _s3, _azure = blocks("Python API")
    scope: dict[str, Any] = {}
    exec(compile(api, "README:Python API", "exec"), scope)
    t: mp.Table = scope["t"]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3] and t.count() == 3
    exec(compile(lazy, "README:Polars", "exec"), scope)
    assert scope["lf"].filter(scope["pl"].col("dt") == "d1").collect().height == 2
    assert t.latest_snapshot().commitIdentifier == 7  # type: ignore[union-attr]
    assert "Table('warehouse/users')" in capsys.readouterr().out  # print(t)
    exec(compile(catalog, "README:catalog", "exec"), scope)
    assert mp.catalog("warehouse").list_tables("sales") == []
    # the consumer block as written: it opens the table above and creates its copy itself
    assert "src" not in scope and "dst" not in scope
    exec(compile(consumer, "README:consumer", "exec"), scope)
    copy = mp.open_table("warehouse/users_copy")
    assert copy.to_arrow().sort_by("id").equals(t.to_arrow().sort_by("id"))
    assert t.consumers() == {"copy": 5}  # every batch committed: next is the one after 4
    (operations,) = blocks("Operations")
    exec(compile(operations, "README:Operations", "exec"), scope)
    t = mp.open_table(t.path)
    assert t.latest_snapshot().id == 2  # type: ignore[union-attr]  # rolled back (the restore too)
    assert t.schema().names == ["id", "name", "dt"] and t.tags() == {}
    assert t.options()["snapshot.num-retained.min"] == "5"


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


# Every ```python block of the README, by (section, index in it), and the test that runs it
# as written. A new block fails test_every_python_block_is_run_by_a_test until a test runs it.
RUN_BY = {
    ("", 0): "tests/spark/test_readme.py::test_opening_lines_run_as_written",
    ("Apache Paimon tables", 0): "tests/interop/test_readme_paimon.py::test_the_readme_reads_and_writes_a_warehouse_paimon_wrote",
    ("Apache Paimon tables", 1): "tests/interop/test_readme_paimon.py::test_the_readme_reads_and_writes_a_warehouse_paimon_wrote",
    ("Python API", 0): "tests/test_readme_python.py::test_python_and_operations_snippets_run_as_written",
    ("Python API", 1): "tests/test_readme_python.py::test_python_and_operations_snippets_run_as_written",
    ("Python API", 2): "tests/test_readme_python.py::test_python_and_operations_snippets_run_as_written",
    ("Python API", 3): "tests/test_readme_python.py::test_python_and_operations_snippets_run_as_written",
    ("Python API", 4): "tests/test_readme_python.py::test_object_storage_snippets_run_as_written_on_a_real_s3_server",
    ("Python API", 5): "tests/test_readme_python.py::test_the_azure_snippet_runs_as_written_on_azurite",
    ("Spark", 0): "tests/spark/test_readme.py::test_spark_section_runs_as_written",
    ("Structured Streaming", 0): "tests/spark/test_readme.py::test_streaming_section_runs_as_written",
    ("Row-level changes: delete, update, merge", 0):
        "tests/test_readme_python.py::test_row_level_changes_snippet_runs_as_written",
    ("Row-level changes: delete, update, merge", 1):
        "tests/spark/test_readme.py::test_the_ported_delta_spark_job_runs_as_written",
    ("Operations", 0): "tests/test_readme_python.py::test_python_and_operations_snippets_run_as_written",
    ("Running on a cluster and object storage", 0):
        "tests/test_readme_python.py::test_object_storage_snippets_run_as_written_on_a_real_s3_server",
}


def test_every_python_block_is_run_by_a_test() -> None:
    text = README.read_text(encoding="utf-8")
    head, *sections = text.split("\n## ")
    found = {("", i) for i in range(len(re.findall(r"```python\n", head)))}
    for section in sections:
        title = section.split("\n", 1)[0]
        found |= {(title, i) for i in range(len(re.findall(r"```python\n", section)))}
    assert found == set(RUN_BY)
    root = README.parent
    for target in set(RUN_BY.values()):
        path, name = target.split("::")
        assert f"def {name}(" in (root / path).read_text(encoding="utf-8"), target
