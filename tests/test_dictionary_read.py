"""Strings a data file stores dictionary-encoded are read as Arrow dictionaries and leave
every read as the declared type, with the same rows.

``dictionary_encoded`` picks the columns whose every row group is dictionary-encoded (not
one whose writer fell back to plain pages, nor a unique column minipaimon writes plain);
``read_file_as`` gives those as dictionaries when asked; table reads (append, raw and
merged primary-key splits, filters, projections, renamed columns, files that disagree on
the encoding) return plain strings equal to the rows written.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minipaimon_core as mp
from minipaimon_core.file_format.parquet import dictionary_encoded
from minipaimon_core.read import read as read_module

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("b", pa.binary()),
                    ("u", pa.string())])


def rows(ids, tag: str = "") -> pa.Table:
    return pa.table({"id": ids, "s": [f"cat{i % 5}{tag}" if i % 7 else None for i in ids],
                     "b": [bytes([i % 3]) for i in ids], "u": [f"unique-{i}{tag}" for i in ids]}, schema=SCHEMA)


def test_dictionary_encoded_names_the_columns_stored_so_in_every_row_group(tmp_path):
    t = rows(list(range(20_000)))
    path = str(tmp_path / "a.parquet")
    pq.write_table(t, path, use_dictionary=["s", "b"], row_group_size=5_000)
    assert dictionary_encoded(pq.read_metadata(path), ["s", "b", "u", "id"]) == ["s", "b"]
    assert dictionary_encoded(pq.read_metadata(path), ["u"]) == []
    fallback = str(tmp_path / "fallback.parquet")  # the dictionary outgrows its page: plain pages
    pq.write_table(t, fallback, use_dictionary=["u"], dictionary_pagesize_limit=4096)
    assert dictionary_encoded(pq.read_metadata(fallback), ["u"]) == []


def test_a_pk_file_read_asked_for_dictionaries_gives_them_for_dictionary_encoded_columns(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(list(range(5_000))))
    split = t.scan().plan()[0]
    reader = read_module.SplitReader(t.io, t.layout, t._schemas, t.table_schema)
    got = reader.read_file(split, split.files[0], ["id", "s", "b", "u"], {"s", "b", "u"})
    assert pa.types.is_dictionary(got.schema.field("s").type)
    assert pa.types.is_dictionary(got.schema.field("b").type)
    assert got.schema.field("u").type == pa.string()  # unique values: written plain
    assert read_module.decoded(got).equals(rows(list(range(5_000))))


def _check(table: mp.Table, expected: pa.Table, **scan) -> None:
    got = mp.open_table(table.path).scan(**scan).to_arrow().sort_by("id")
    assert got.schema == expected.schema
    assert got.equals(expected)


@pytest.mark.parametrize("kind", ["append", "pk-raw", "pk-merged"])
def test_reads_give_plain_strings_equal_to_the_rows(tmp_path, kind):
    options = {} if kind == "append" else {"bucket": "2", "write-only": "true"}
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=None if kind == "append" else ["id"],
                        options=options)
    t.write(rows(list(range(0, 3_000))))
    expected = rows(list(range(0, 3_000)))
    if kind != "pk-raw":
        # a second file: its strings differ (newer values), the same column plain in one
        # file (all unique) and a dictionary in the other
        newer = pa.table({"id": list(range(2_000, 4_000)), "s": [f"new-{i}" for i in range(2_000, 4_000)],
                          "b": [b"x"] * 2_000, "u": ["same"] * 2_000}, schema=SCHEMA)
        t.write(newer)
        old = expected.filter(pa.compute.less(expected.column("id"), 2_000)) if kind == "pk-merged" else expected
        expected = pa.concat_tables([old, newer]).sort_by("id")
        if kind == "pk-merged":
            assert any(not s.raw_convertible for s in t.scan().plan())
    _check(t, expected)
    _check(t, expected.select(["id", "s"]), columns=["id", "s"])
    want = expected.filter(pa.compute.equal(expected.column("s"), "cat3"))
    assert want.num_rows
    _check(t, want, filter=[("s", "=", "cat3")])


def test_a_renamed_string_column_reads_as_its_new_name(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(list(range(1_000))))
    t.rename_column("s", "label")
    got = mp.open_table(t.path).to_arrow().sort_by("id")
    assert got.schema.field("label").type == pa.string()
    assert got.column("label").to_pylist() == rows(list(range(1_000))).column("s").to_pylist()
