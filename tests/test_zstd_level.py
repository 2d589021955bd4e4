"""``file.compression.zstd-level`` (Paimon's option, default 1): the zstd level of new
Parquet and Avro data files, so a table set to a higher level keeps the same rows in fewer
bytes. pyarrow's ORC writer takes no level: ORC files are written at the library's."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.metadata.manifest_io import live_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())])


def _rows(n: int) -> pa.Table:
    """Log lines: long repeats that zstd's higher levels find (unique, so no dictionary)."""
    lines = [f"user-{i % 997:04d} visited /catalog/item/{(i * 7919) % 100003} from 10.0.{i % 251}.{i % 13}"
             for i in range(n)]
    return pa.table({"id": np.arange(n), "s": lines}, schema=SCHEMA)


def _data_bytes(t: mp.Table) -> int:
    entries = live_files(t.manifests, t.latest_snapshot())
    return sum(e.file.fileSize for e in entries)


@pytest.mark.parametrize("fmt", ["parquet", "avro"])
@pytest.mark.parametrize("pk", [True, False])
def test_a_higher_zstd_level_stores_the_same_rows_in_fewer_bytes(tmp_path, fmt, pk):
    data = _rows(30_000)
    sizes = {}
    for level in ("1", "19"):
        t = mp.create_table(str(tmp_path / f"t{level}"), SCHEMA, primary_key=["id"] if pk else None,
                            options={"bucket": "1" if pk else "-1", "file.format": fmt,
                                     "file.compression.zstd-level": level})
        t.write(data)
        assert t.scan().to_arrow().sort_by("id").equals(data)
        sizes[level] = _data_bytes(t)
    assert sizes["19"] < sizes["1"] * 0.9, sizes


def test_the_level_is_read_when_files_are_written_so_a_changed_level_applies_to_new_files(tmp_path):
    data = _rows(30_000)
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"file.compression.zstd-level": "1"})
    t.write(data)
    first = _data_bytes(t)
    t.set_options({"file.compression.zstd-level": "19"})
    t.write(data)
    assert _data_bytes(t) - first < first * 0.9
    assert t.scan().to_arrow().num_rows == 2 * data.num_rows


def test_an_orc_table_takes_the_option_and_writes_at_the_librarys_level(tmp_path):
    data = _rows(5_000)
    sizes = []
    for level in ("1", "19"):
        t = mp.create_table(str(tmp_path / f"t{level}"), SCHEMA,
                            options={"file.format": "orc", "file.compression.zstd-level": level})
        t.write(data)
        assert t.scan().to_arrow().sort_by("id").equals(data)
        sizes.append(_data_bytes(t))
        assert all(name.endswith(".orc") for _, _, names in os.walk(t.path) for name in names
                   if name.startswith("data-"))
    assert sizes[0] == sizes[1]
