"""Paimon features minipaimon lacks: refused with a typed error that names them, on disk
nothing changes. Tables written by Paimon's engines carry such options in their schema;
here the schema file is edited as another engine would have written it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import UnsupportedFeatureError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
DATA = pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA)


def table_with_options(path: Path, options: dict[str, str], primary_key: bool = True) -> str:
    """A table with one snapshot whose schema-0 then also holds ``options`` (as Paimon's
    Java engine writes them: its JSON, edited)."""
    t = mp.create_table(str(path), SCHEMA, primary_key=["id"] if primary_key else None,
                        options={"bucket": "1"} if primary_key else None)
    t.write(DATA)
    schema_file = path / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"].update(options)
    doc.pop("checksum", None)  # another engine's schema file has none
    schema_file.write_text(json.dumps(doc, indent=2))
    return str(path)


def files_under(path: str) -> dict[str, bytes]:
    return {os.path.join(d, n): Path(d, n).read_bytes() for d, _, names in os.walk(path) for n in names}


UNREADABLE = [
    ({"file.format": "csv"}, "CSV data files"),
    ({"deletion-vectors.bitmap64": "true"}, "64-bit deletion vectors"),
    ({"row-tracking.enabled": "true"}, "row tracking"),
    ({"data-evolution.enabled": "true"}, "data evolution"),
    ({"sequence.field": "a,b"}, "several sequence fields"),
    ({"bucket-function.type": "mod"}, "bucket function 'mod'"),
    ({"merge-engine": "some-future-engine"}, "'some-future-engine' merge engine"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "hll_sketch"}, "hll_sketch"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "rbm64"}, "rbm64"),
    ({"merge-engine": "partial-update", "fields.v.sequence-group": "id"}, "primary-key column"),
    ({"merge-engine": "partial-update", "fields.default-aggregate-function": "sum"},
     "fields.default-aggregate-function"),
    ({"fields.v.count-limit": "3"}, "fields.v.count-limit"),
]


@pytest.mark.parametrize(("options", "named"), UNREADABLE, ids=[next(iter(o)) for o, _ in UNREADABLE])
def test_a_table_using_a_feature_minipaimon_lacks_is_refused_on_open(
        tmp_path: Path, options: dict[str, str], named: str) -> None:
    path = table_with_options(tmp_path / "t", options)
    before = files_under(path)
    with pytest.raises(UnsupportedFeatureError, match="does not support") as e:
        mp.open_table(path)
    assert named in str(e.value) and path in str(e.value)
    assert files_under(path) == before


def test_an_unknown_option_keeps_a_table_readable_but_not_writable(tmp_path: Path) -> None:
    path = table_with_options(tmp_path / "t", {"some.future.option": "x"})
    before = files_under(path)
    table = mp.open_table(path)
    assert table.to_arrow().sort_by("id").equals(DATA)
    for change in (lambda: table.write(DATA), lambda: table.compact(), lambda: table.rewrite_manifests()):
        with pytest.raises(UnsupportedFeatureError, match="some.future.option"):
            change()
    assert files_under(path) == before


def test_options_that_change_nothing_minipaimon_does_are_ignored(tmp_path: Path) -> None:
    path = table_with_options(tmp_path / "t", {"owner": "etl", "manifest.compression": "lz4",
                                               "snapshot.expire.limit": "5"})
    table = mp.open_table(path)
    table.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    assert table.to_arrow().num_rows == 3
