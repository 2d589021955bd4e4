"""ORC and Avro data files (``file.format``): every table kind reads in ORC and Avro exactly
as the same operations give in Parquet; a table whose format changed reads each file in its
own format; schema evolution; what a format cannot hold is refused before anything is
committed. (Paimon's own engine reading and writing them: tests/interop/test_file_formats.py.)"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import (
    CorruptDataFileError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from minipaimon_core.stream.stream import changes_between
from tests.interop.data import types_rows, types_schema
from tests.interop.test_file_formats import orc_safe

FORMATS = ["orc", "avro"]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                    ("score", pa.float64()), ("n", pa.int32()), ("ts", pa.timestamp("us")),
                    pa.field("dt", pa.string(), nullable=False)])
KINDS: dict[str, dict[str, Any]] = {
    "append": {},
    "append-buckets": {"options": {"bucket": "2", "bucket-key": "id"}},
    "append-deletion-vectors": {"options": {"deletion-vectors.enabled": "true"}},
    "pk-deduplicate": {"pk": True, "options": {"bucket": "2"}},
    "pk-partial-update": {"pk": True, "options": {"bucket": "1", "merge-engine": "partial-update"}},
    "pk-aggregation": {"pk": True, "options": {"bucket": "1", "merge-engine": "aggregation",
                                                "fields.n.aggregate-function": "sum"}},
    "pk-first-row": {"pk": True, "options": {"bucket": "1", "merge-engine": "first-row"}},
    "pk-deletion-vectors": {"pk": True, "options": {"bucket": "2", "deletion-vectors.enabled": "true"}},
    "pk-changelog-input": {"pk": True, "options": {"bucket": "2", "changelog-producer": "input"}},
    "pk-changelog-lookup": {"pk": True, "options": {"bucket": "2", "changelog-producer": "lookup"}},
}


def batch(ids: list[int], tag: str, kinds: list[str] | None = None) -> pa.Table:
    t = pa.table({"id": ids, "name": [f"{tag}-{i}" if i % 5 else None for i in ids],
                  "score": [i / 3 if i % 7 else float("nan") for i in ids], "n": [i % 4 for i in ids],
                  "ts": [dt.datetime(2024, 1, 1, 0, 0, i % 60, i) for i in ids],
                  "dt": ["d1" if i % 2 else "d2" for i in ids]}, schema=SCHEMA)
    return t if kinds is None else t.append_column("_row_kind", pa.array(kinds))


def rows(t: pa.Table) -> list[str]:
    return sorted(map(repr, t.to_pylist()))


def extensions(path: str) -> set[str]:
    return {n.rsplit(".", 1)[-1] for _, _, names in os.walk(path) for n in names
            if n.startswith(("data-", "changelog-"))}


def make(path: Path, fmt: str, kind: str) -> mp.Table:
    spec = KINDS[kind]
    return mp.create_table(str(path), SCHEMA, primary_key=["id", "dt"] if spec.get("pk") else None,
                           partition_by=["dt"], options={**spec.get("options", {}), "file.format": fmt})


def operations(t: mp.Table, kind: str) -> list[Any]:
    """The same history for every format; returns what each step reads (and changes read)."""
    seen: list[Any] = []
    pk = KINDS[kind].get("pk")
    t.write(batch(list(range(40)), "a"))
    seen.append(rows(t.to_arrow()))
    if pk and kind not in ("pk-first-row", "pk-aggregation", "pk-partial-update"):
        t.write(batch(list(range(30, 60)), "b", ["-D" if i % 3 == 0 else "+I" for i in range(30, 60)]))
    else:
        t.write(batch(list(range(30, 60)), "b"))
    seen.append(rows(t.to_arrow()))
    if not pk:
        assert t.delete([("id", "<", 5)]) == 5
        seen.append(rows(t.to_arrow()))
    t.compact(full=True)
    seen.append(rows(t.to_arrow()))
    t.write(batch(list(range(55, 70)), "c"))
    seen.append(rows(t.to_arrow()))
    if "changelog" in kind:
        latest = t.latest_snapshot()
        assert latest is not None
        seen.append(rows(changes_between(t, 0, latest.id).drop_columns([])))
    return seen


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_table_kind_reads_in_orc_and_avro_as_in_parquet(tmp_path: Path, fmt: str, kind: str) -> None:
    want = operations(make(tmp_path / "parquet", "parquet", kind), kind)
    t = make(tmp_path / fmt, fmt, kind)
    got = operations(t, kind)
    assert got == want
    assert extensions(t.path) == {fmt}
    files = mp.open_table(t.path).system_table("files")
    assert set(files.column("file_format").to_pylist()) == {fmt}


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_type_table_round_trips(tmp_path: Path, fmt: str) -> None:
    data = types_rows([0, 1, 2, 3, 4, 5])
    if fmt == "orc":  # what ORC refuses (the tests below): beyond 2262, pre-1970 microseconds
        data = orc_safe(data)
    for pk in (None, ["id"]):
        t = mp.create_table(str(tmp_path / f"{fmt}-{bool(pk)}"), types_schema(), primary_key=pk,
                            options={"file.format": fmt, **({"bucket": "1"} if pk else {})})
        t.write(data)
        assert rows(mp.open_table(t.path).to_arrow()) == rows(data)
        assert extensions(t.path) == {fmt}


def test_a_table_whose_format_changed_reads_each_file_in_its_own_format(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "1"})
    t.write(batch(list(range(10)), "parquet"))
    t.set_options({"file.format": "orc"})
    t.write(batch(list(range(5, 15)), "orc"))
    t.set_options({"file.format": "avro"})
    t.write(batch(list(range(12, 20)), "avro"))
    assert extensions(t.path) == {"parquet", "orc", "avro"}
    want = {**{i: "parquet" for i in range(5)}, **{i: "orc" for i in range(5, 12)},
            **{i: "avro" for i in range(12, 20)}}
    got = mp.open_table(t.path).to_arrow()
    assert {r["id"]: (r["name"] or f"x-{r['id']}").split("-")[0] for r in got.to_pylist()} == \
        {i: (w if i % 5 else "x") for i, w in want.items()}
    t.compact(full=True)  # compaction writes the table's format now
    assert {n.rsplit(".", 1)[-1] for n in mp.open_table(t.path).system_table("files")
            .column("file_path").to_pylist()} == {"avro"}
    assert rows(mp.open_table(t.path).to_arrow()) == rows(got)


@pytest.mark.parametrize("fmt", FORMATS)
def test_schema_evolution_reads_old_orc_and_avro_files_by_field_id(tmp_path: Path, fmt: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "1", "file.format": fmt})
    t.write(batch([1, 2, 3], "a"))
    t.rename_column("name", "label")
    t.add_column("extra", pa.string())
    t.drop_column("score")
    t.alter_column_type("n", pa.int64())
    t.write(pa.table({"id": [3, 4], "label": ["new-3", "new-4"], "n": [2**40, 5],
                      "ts": [None, None], "dt": ["d1", "d2"], "extra": ["e3", None]}))
    got = {r["id"]: r for r in mp.open_table(t.path).to_arrow().to_pylist()}
    assert got[1] == {"id": 1, "label": "a-1", "n": 1, "ts": dt.datetime(2024, 1, 1, 0, 0, 1, 1),
                      "dt": "d1", "extra": None}
    assert got[3]["label"] == "new-3" and got[3]["n"] == 2**40 and got[3]["extra"] == "e3"
    assert list(mp.open_table(t.path).schema().names) == ["id", "label", "n", "ts", "dt", "extra"]


def test_an_old_paimon_schema_without_file_format_is_written_and_read_in_orc(tmp_path: Path) -> None:
    """Paimon schemas before version 3 default to ORC files (Paimon's default then)."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    schema_file = tmp_path / "t" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["version"] = 2
    doc.pop("checksum", None)
    schema_file.write_text(json.dumps(doc))
    t = mp.open_table(str(tmp_path / "t"))
    t.write(batch([1, 2], "a"))
    assert extensions(t.path) == {"orc"}
    assert rows(mp.open_table(t.path).to_arrow()) == rows(batch([1, 2], "a"))


def nothing_committed(t: mp.Table) -> None:
    assert mp.open_table(t.path).latest_snapshot() is None
    assert extensions(t.path) == set()


@pytest.mark.parametrize(("unit", "value", "named"), [
    ("ms", 253402300799000, "2262"),  # 9999-12-31: pyarrow reads ORC timestamps as nanoseconds
    ("us", -1, "before 1970"),  # paimon-rust and Java 0.9 fail on it as pyarrow writes it
    ("ms", -1500, "before 1970"),  # paimon-rust fails on it as pyarrow writes it
])
def test_an_orc_timestamp_a_reader_cannot_read_back_is_refused_and_nothing_committed(
        tmp_path: Path, unit: str, value: int, named: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                        ("ts", pa.timestamp(unit))]),
                        options={"file.format": "orc"})
    with pytest.raises(InvalidArgumentError, match=f"'ts'.*{named}"):
        t.write(pa.table({"id": [1, 2], "ts": pa.array([0, value], pa.timestamp(unit))}))
    nothing_committed(t)


@pytest.mark.parametrize(("fmt", "arrow_type", "named"), [
    ("avro", pa.timestamp("ns"), "precision above 6"),
    ("avro", pa.time64("us"), "precision above 3"),
    ("orc", pa.list_(pa.time32("ms")), "TIME inside a nested type"),  # pyarrow has no ORC type for it
])
def test_a_type_the_format_cannot_hold_is_refused_and_nothing_committed(
        tmp_path: Path, fmt: str, arrow_type: pa.DataType, named: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                        ("x", arrow_type)]),
                        options={"file.format": fmt})
    value = [1] if not pa.types.is_list(arrow_type) else [[1]]
    with pytest.raises(UnsupportedFeatureError, match=named):
        t.write(pa.table({"id": [1], "x": pa.array(value, arrow_type)}))
    nothing_committed(t)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_damaged_orc_or_avro_file_is_corrupt_not_wrong_rows(tmp_path: Path, fmt: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"file.format": fmt})
    t.write(batch(list(range(100)), "a"))
    (path,) = [os.path.join(d, n) for d, _, names in os.walk(t.path) for n in names if n.startswith("data-")]
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2: len(data) // 2 + 8] = b"\xff" * 8  # same size, damaged
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptDataFileError, match=os.path.basename(path)):
        mp.open_table(t.path).to_arrow()
