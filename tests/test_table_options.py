"""Option validation: every option that would make later writes fail is refused at
create_table and at set_options, by name, with UnsupportedOptionError (issue 15 items 5, 11,
13), and nothing is written."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format.options import Options, parse

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
    (PK, {"file.compression.zstd-level": "0"}, "file.compression.zstd-level"),
    (PK, {"file.compression.zstd-level": "23"}, "file.compression.zstd-level"),
    (PK, {"file.compression.zstd-level": "fast"}, "file.compression.zstd-level"),
    (PK, {"commit.max-retries": "-1"}, "commit.max-retries"),
    (PK, {"num-levels": "1"}, "num-levels"),
    (PK, {"snapshot.num-retained.min": "0"}, "snapshot.num-retained.min"),
    (PK, {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"},
     "snapshot.num-retained.max"),
    (PK, {"bucket": "0"}, "bucket"),
    (PK, {"write-only": "yes"}, "write-only"),
    (PK, {"fields.v.sequence-group": "s"}, "fields.v.sequence-group"),  # not partial-update
    (PK, {"merge-engine": "aggregation", "fields.v.aggregate-function": "collect"},
     "fields.v.aggregate-function"),  # collect needs an ARRAY
    (PK, {"merge-engine": "aggregation", "fields.l.aggregate-function": "merge_map"},
     "fields.l.aggregate-function"),  # merge_map needs a MAP
    (PK, {"merge-engine": "aggregation", "fields.l.aggregate-function": "nested_update"},
     "fields.l.aggregate-function"),  # nested_update needs an ARRAY of ROW
    (PK, {"merge-engine": "aggregation", "fields.l.aggregate-function": "last_value",
          "fields.l.distinct": "true"}, "fields.l.distinct"),
    (PK, {"merge-engine": "aggregation", "fields.l.aggregate-function": "collect",
          "fields.l.nested-key": "k"}, "fields.l.nested-key"),
    (PK, {"merge-engine": "aggregation", "fields.v.aggregate-function": "hll_sketch"},
     "fields.v.aggregate-function"),
    (PK, {"merge-engine": "partial-update", "fields.v.distinct": "true"}, "fields.v.distinct"),
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
                __import__("minipaimon_core.stream.stream", fromlist=["StreamScanner"]).StreamScanner(t, opts)
    with pytest.raises(mp.UnsupportedOptionError, match="target-file-size"):
        parse("target-file-size", "0")
    with pytest.raises(mp.UnsupportedOptionError, match="nope"):
        Options({}).get("nope")
    assert issubclass(mp.UnsupportedOptionError, mp.InvalidArgumentError)


@pytest.mark.parametrize(("typo", "meant"), [("buckett", "bucket"), ("merge_engine", "merge-engine"),
                                             ("sequence.fields", "sequence.field")])
def test_a_write_option_typo_says_which_option_was_meant(tmp_path, typo, meant):
    path = str(tmp_path / "t")
    with pytest.raises(mp.UnsupportedOptionError, match=f"did you mean {meant!r}") as e:
        mp.create_table(path, SCHEMA, primary_key=PK, options={typo: "x"})
    assert "commit.max-retries" not in str(e.value)  # no dump of every known name
    t = mp.create_table(path, SCHEMA, primary_key=PK)
    with pytest.raises(mp.UnsupportedOptionError, match=f"did you mean {meant!r}"):
        t.set_options({typo: "x"})
    with pytest.raises(mp.UnsupportedOptionError, match="unknown option 'zzzz'; see"):
        t.set_options({"zzzz": "1"})  # nothing close: where the options are listed
    assert mp.open_table(path).table_schema.id == 0


@pytest.mark.parametrize("opts", [{"fields.v.aggregate-function": "count"},
                                  {"fields.default-aggregate-function": "count"}])
def test_count_is_refused_at_create_and_set_options_naming_sum_of_ones(tmp_path, opts):
    """Paimon removed ``count``: Java 0.9, pypaimon and paimon-rust refuse such a table."""
    schema = SCHEMA.remove(5).remove(3)  # numeric columns only
    path = str(tmp_path / "t")
    with pytest.raises(mp.UnsupportedOptionError, match="'sum'") as e:
        mp.create_table(path, schema, primary_key=PK, options={"merge-engine": "aggregation", **opts})
    assert "column of ones" in str(e.value) and "count" in str(e.value)
    assert not os.path.exists(os.path.join(path, "schema", "schema-0"))
    t = mp.create_table(path, schema, primary_key=PK, options={"merge-engine": "aggregation",
                                                               "fields.v.aggregate-function": "sum"})
    with pytest.raises(mp.UnsupportedOptionError, match="column of ones"):
        t.set_options(opts)
    assert mp.open_table(path).table_schema.id == 0


def test_a_table_that_has_count_stays_readable_and_writable(tmp_path):
    """A table created with ``count`` before it was refused (its schema file says so)."""
    import json

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    schema_file = tmp_path / "t" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"]["fields.n.aggregate-function"] = "count"
    doc.pop("checksum", None)
    schema_file.write_text(json.dumps(doc))
    t = mp.open_table(t.path)
    t.write(pa.table({"id": [1, 1, 2], "n": [7, None, 5]}, schema=schema))
    t.write(pa.table({"id": [1], "n": [3]}, schema=schema))
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "n": 2}, {"id": 2, "n": 1}]
    t.add_column("w", pa.int64())  # other schema changes keep working
    t.set_options({"snapshot.num-retained.min": "3"})
    assert mp.open_table(t.path).options()["fields.n.aggregate-function"] == "count"
