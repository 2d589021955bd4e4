"""The README's Python snippets (Python API, catalog, streaming consumer, Operations) run as
written, one after another in one namespace, as a reader would paste them.

The object-storage snippet needs a server and credentials; the same calls are tested on
real S3 servers in tests/test_fileio_s3.py and tests/test_catalog.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import minipaimon_core as mp

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed ``## <section>`` (its subsections
    included)."""
    text = README.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_python_and_operations_snippets_run_as_written(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("polars")
    monkeypatch.chdir(tmp_path)  # the snippets use a relative "warehouse"
    api, catalog, consumer, _object_storage = blocks("Python API")
    scope: dict[str, Any] = {}
    exec(compile(api, "README:Python API", "exec"), scope)
    t: mp.Table = scope["t"]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert t.latest_snapshot().commitIdentifier == 7  # type: ignore[union-attr]
    exec(compile(catalog, "README:catalog", "exec"), scope)
    assert mp.catalog("warehouse").list_tables("sales") == []
    scope["src"] = t
    scope["dst"] = mp.create_table("copy", t.schema(), primary_key=["id", "dt"])
    exec(compile(consumer, "README:consumer", "exec"), scope)
    assert scope["dst"].to_arrow().sort_by("id").equals(t.to_arrow().sort_by("id"))
    (operations,) = blocks("Operations")
    exec(compile(operations, "README:Operations", "exec"), scope)
    t = mp.open_table(t.path)
    assert t.latest_snapshot().id == 2  # type: ignore[union-attr]  # rolled back, no write since
    assert t.schema().names == ["id", "name", "dt"] and t.tags() == {}
    assert t.options()["snapshot.num-retained.min"] == "5"
