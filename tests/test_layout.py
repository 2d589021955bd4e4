"""Every name of a table is built and parsed in layout.py; partition directories (Paimon's
escaping) keep every value inside the table."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.format.layout import (
    ParsedName,
    TableLayout,
    is_temp_name,
    keys_of,
    parse,
    temp_name,
)
from minipaimon_core.schema.partition import PartitionSpec


@given(st.text())
@example("/" * 100)  # escaped: 300 bytes, refused
@example("0" * 27 + "\x1f0'0'0'0#0#0#0#0'0'0'0'0\x1f0\x1f0\x1f0\x1f0\x1f0/0/0/0\x1f0\x1f0\x1f0'0'0'0*0*0*0#0#0#0#0"
         "'0'0'0\x1f0\x1f0\x1f0\x1f0\x1f0\x1f0\x1f0\x1f0\x1f0'0'0'0\x1f0/0\x0fřřřřŚŚŞŞşş͠Ṱ")  # a CI draw: 257 bytes
def test_partition_directories_stay_one_segment_under_the_table(value):
    spec = PartitionSpec(["p"], [pa.string()], ["STRING"])
    try:
        relative = spec.path([value])
    except InvalidArgumentError as e:  # escaping can make a name longer than a file system's
        assert "at most 255" in str(e) and 3 * len(value.encode()) + len("p=") > 255, (value, e)
        return
    path = TableLayout("/warehouse/t").bucket_dir(relative, 0)
    norm = os.path.normpath(path)
    assert norm.startswith("/warehouse/t/") and norm.count("/") == path.count("/") == 4, (value, path)


def test_hostile_values_stay_under_the_table(tmp_path):
    schema = pa.schema([pa.field("p", pa.string()), pa.field("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, partition_by=["p"])
    values = ["..", ".", "../../etc", "/etc/passwd", "a\\b", "\x00", "%2F", "é", "\n", None, "x=y"]
    t.write(pa.table({"p": values, "v": list(range(len(values)))}, schema=schema))
    for f in Path(t.path).rglob("*.parquet"):
        assert f.resolve().is_relative_to((tmp_path / "t").resolve()), f
    got = {r["p"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {v: i for i, v in enumerate(values)}


def _name(path: str) -> str:
    return path.rsplit("/", 1)[1]


def test_every_built_name_parses_back_to_its_kind_and_key():
    layout = TableLayout("/t")
    manifest, manifest_list = layout.new_manifest_name(), layout.new_manifest_list_name()
    data, changelog = layout.new_data_file_name(), layout.new_data_file_name("changelog")
    cases = [
        (_name(layout.schema_path(7)), ParsedName("schema", "7")),
        (_name(layout.snapshot_path(12)), ParsedName("snapshot", "12")),
        (_name(layout.tag_path("v1.0")), ParsedName("tag", "v1.0")),
        (_name(layout.consumer_path("job-1")), ParsedName("consumer", "job-1")),
        (manifest, ParsedName("manifest", manifest[len("manifest") + 1:])),
        (manifest_list, ParsedName("manifest-list", manifest_list[len("manifest-list") + 1:])),
        (data, ParsedName("data", data[len("data") + 1:-len(".parquet")])),
        (changelog, ParsedName("changelog", changelog[len("changelog") + 1:-len(".parquet")])),
        (_name(layout.bucket_dir("", 3)), ParsedName("bucket", "3")),
        (_name(layout.bucket_dir("dt=x", -1)), ParsedName("bucket", "-1")),
        (_name(layout.latest_hint), ParsedName("hint", "LATEST")),
        (_name(layout.earliest_hint), ParsedName("hint", "EARLIEST")),
    ]
    for name, expected in cases:
        assert parse(name) == expected, name
    tmp = temp_name("snapshot-3")
    assert is_temp_name(tmp) and parse(tmp) is not None and parse(tmp).kind == "temp"
    assert parse(tmp).key.startswith("snapshot-3.")
    assert TableLayout.snapshot_id_of("snapshot-12") == 12


@pytest.mark.parametrize("name", [
    "snapshot-", "snapshot-x", "schema-1a", "tag-", "tag-..", "consumer-a/b", "data-x.csv",
    "bucket-", "README", "LATEST2", "manifest-",
])
def test_other_names_do_not_parse(name):
    assert parse(name) is None


def test_keys_of_picks_one_kind_sorted():
    names = ["tag-b", "tag-a", "snapshot-1", ".tag-c.0123.tmp", "tag-..", "consumer-a"]
    assert keys_of("tag", names) == ["a", "b"]
    assert keys_of("snapshot", names) == ["1"]


# File-name prefixes appear as string literals only in layout.py (issue 14 item 5): every
# other module builds and parses names through it. A string literal of code (f-string parts
# included; docstrings are prose, not code) that starts a name with such a prefix, or ends
# in ".tmp", anywhere else is a name built or sliced outside the layout.
_NAME_LITERAL = re.compile(r"(^|/)(tag|schema|consumer|snapshot)-\d*$|\.tmp$")


def _code_literals(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose]


def _offending(source: str) -> list[tuple[int, str]]:
    return [(line, text) for line, text in _code_literals(source) if _NAME_LITERAL.search(text)]


def test_file_name_literals_live_only_in_layout():
    root = Path(__file__).resolve().parent.parent
    hits = []
    for package in ("minipaimon_core", "minipaimon_spark"):
        for path in sorted((root / package).rglob("*.py")):
            if path.relative_to(root) == Path("minipaimon_core/format/layout.py"):
                continue
            hits += [f"{path.relative_to(root)}:{line}: {text!r}"
                     for line, text in _offending(path.read_text())]
    assert hits == []


def test_the_name_literal_check_sees_a_slice_or_a_build():
    assert _offending('names = [n[4:] for n in ls if n.startswith("tag-")]')
    assert _offending("path = f'{d}/schema-{i}'")
    assert _offending('tmp = f".{base}.{uuid}.tmp"')
    assert _offending('PREFIX = "consumer-"')
    assert not _offending('x = options["changelog-producer"]')
    assert not _offending('"""Docs may name ``tag/tag-<name>`` files."""')
