"""Option validation: every option that would make later writes fail is refused at
create_table and at set_options, by name, with UnsupportedOptionError (issue 15 items 5, 11,
13), and nothing is written."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.options import Options, parse

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("g", pa.int64()),
                    ("v", pa.int64()), ("s", pa.string()), ("f", pa.float64()),
                    ("l", pa.list_(pa.int64()))])
PK = ["id", "g"]

BAD_CREATE = [  # (primary key, options, option named in the error)
    (PK, {"bucket": "2", "bucket-key": "v"}, "bucket-key"),
    (PK, {"bucket-key": "id,id"}, "bucket-key"),
    (PK, {"merge-engine": "aggregation", "fields.v.aggregate-function": "avg"},
     "fields.v.aggregate-function"),
    (PK, {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum"},
     "fields.s.aggregate-function"),
    (PK, {"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"},
     "fields.default-aggregate-function"),
    (PK, {"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"},
     "fields.nope.aggregate-function"),
    (PK, {"merge-engine": "aggregation", "fields.id.aggregate-function": "sum"},
     "fields.id.aggregate-function"),
    (PK, {"fields.v.aggregate-function": "sum"}, "fields.v.aggregate-function"),
    (PK, {"sequence.field": "nope"}, "sequence.field"),
    (PK, {"sequence.field": "v,f"}, "sequence.field"),
    (PK, {"sequence.field": "s"}, "sequence.field"),
    (PK, {"sequence.field": "id"}, "sequence.field"),
    (PK, {"file.compression": "bogus"}, "file.compression"),
    (PK, {"commit.max-retries": "-1"}, "commit.max-retries"),
    (PK, {"num-levels": "1"}, "num-levels"),
    (PK, {"snapshot.num-retained.min": "0"}, "snapshot.num-retained.min"),
    (PK, {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"},
     "snapshot.num-retained.max"),
    (PK, {"bucket": "0"}, "bucket"),
    (PK, {"write-only": "yes"}, "write-only"),
    (PK, {"fields.v.sequence-group": "s"}, "fields.v.sequence-group"),
    (None, {"bucket": "4"}, "bucket"),
    (None, {"bucket": "4", "bucket-key": "l"}, "bucket-key"),
    (None, {"sequence.field": "v"}, "sequence.field"),
    (None, {"merge-engine": "deduplicate"}, "merge-engine"),
    (None, {"changelog-producer": "input"}, "changelog-producer"),
    (None, {"fields.v.aggregate-function": "sum"}, "fields.v.aggregate-function"),
]


@pytest.mark.parametrize(("pk", "opts", "name"), BAD_CREATE)
def test_bad_options_are_refused_at_create_by_name(tmp_path, pk, opts, name):
    path = str(tmp_path / "t")
    with pytest.raises(mp.UnsupportedOptionError, match=name.replace(".", r"\.")):
        mp.create_table(path, SCHEMA, primary_key=pk, options=opts)
    assert not os.path.exists(path) or not os.listdir(path) or \
        not os.listdir(os.path.join(path, "schema"))


IMMUTABLE = {"bucket", "bucket-key", "merge-engine", "sequence.field"}


@pytest.mark.parametrize(("pk", "opts", "name"), [c for c in BAD_CREATE if not IMMUTABLE & set(c[1])])
def test_bad_options_are_refused_at_set_options_by_name(tmp_path, pk, opts, name):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=pk)
    with pytest.raises(mp.UnsupportedOptionError, match=name.replace(".", r"\.")):
        t.set_options(opts)
    assert mp.open_table(t.path).table_schema.id == 0


def test_good_options_are_accepted_and_writes_work(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=PK, options={
        "merge-engine": "aggregation", "fields.default-aggregate-function": "sum",
        "fields.s.aggregate-function": "max", "fields.l.aggregate-function": "last_value",
        "bucket": "2", "bucket-key": "id", "file.compression": "snappy"})
    rows = {"id": [1, 1], "g": [0, 0], "v": [2, 3], "s": ["a", "b"], "f": [0.5, 0.25],
            "l": [[1], [2]]}
    t.write(pa.table(rows, schema=SCHEMA))
    assert t.to_arrow().to_pylist() == [{"id": 1, "g": 0, "v": 5, "s": "b", "f": 0.75, "l": [2]}]
    a = mp.create_table(str(tmp_path / "a"), SCHEMA, options={"bucket": "2", "bucket-key": "g"})
    a.write(pa.table(rows, schema=SCHEMA))
    assert a.to_arrow().num_rows == 2


def test_setting_an_immutable_option_to_its_effective_value_is_no_change(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=PK)
    t.set_options({"merge-engine": "deduplicate", "bucket": "-1"})
    t.set_options({"merge-engine": "DEDUPLICATE"})
    with pytest.raises(mp.InvalidArgumentError, match="merge-engine"):
        t.set_options({"merge-engine": "first-row"})
    with pytest.raises(mp.InvalidArgumentError, match="bucket"):
        t.set_options({"bucket": "2"})


def test_schema_changes_keep_options_valid(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA.remove(5), primary_key=PK, options={
        "merge-engine": "aggregation", "fields.default-aggregate-function": "max"})
    with pytest.raises(mp.UnsupportedOptionError, match="fields.default-aggregate-function"):
        t.add_column("b", pa.list_(pa.int64()))  # max does not apply to a list
    assert "b" not in mp.open_table(t.path).schema().names


def test_read_options_are_parsed_by_the_same_layer(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=PK)
    for opts, name in (({"scan.snapshot-id": "x"}, "scan.snapshot-id"),
                       ({"scan.mode": "sideways"}, "scan.mode"),
                       ({"read.changelog": "maybe"}, "read.changelog")):
        with pytest.raises(mp.UnsupportedOptionError, match=name):
            t.stream_scanner(opts) if hasattr(t, "stream_scanner") else \
                __import__("minipaimon_core.stream", fromlist=["StreamScanner"]).StreamScanner(t, opts)
    with pytest.raises(mp.UnsupportedOptionError, match="target-file-size"):
        parse("target-file-size", "0")
    with pytest.raises(mp.UnsupportedOptionError, match="nope"):
        Options({}).get("nope")
    assert issubclass(mp.UnsupportedOptionError, mp.InvalidArgumentError)
