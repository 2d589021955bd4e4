"""A damaged data, changelog or manifest file is a typed error naming the file."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows


def _table(tmp_path: Path) -> mp.Table:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "changelog-producer": "input"})
    t.write(rows(0, 5))
    return t


def _files(t: mp.Table, prefix: str) -> list[Path]:
    return sorted(Path(t.path).rglob(f"{prefix}-*.parquet"))


@pytest.mark.parametrize("damage", ["truncate", "empty", "flip", "swap"])
@pytest.mark.parametrize("prefix", ["data", "changelog"])
def test_damaged_data_and_changelog_files(tmp_path, damage, prefix):
    t = _table(tmp_path)
    t.write(rows(5, 7))
    victim, other = _files(t, prefix)[:2]
    data = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "flip":  # inside the data page of a column every read takes
        import pyarrow.parquet as pq

        md = pq.ParquetFile(victim).metadata.row_group(0)
        col = next(md.column(i) for i in range(md.num_columns) if md.column(i).path_in_schema == "id")
        pos = col.data_page_offset + col.total_compressed_size - 4
        victim.write_bytes(data[:pos] + bytes([data[pos] ^ 0x10]) + data[pos + 1:])
    else:
        victim.write_bytes(other.read_bytes())
    with pytest.raises(mp.CorruptDataFileError, match=victim.name):
        if prefix == "data":
            mp.open_table(t.path).to_arrow()
        else:
            list(mp.open_table(t.path).stream(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                                       "read.changelog": "true"}))


def test_flipped_value_byte_is_caught_by_page_checksum(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("x", pa.int32())]), options={"file.compression": "none"})
    t.write(pa.table({"x": pa.array(range(1000), pa.int32())}))
    victim = _files(t, "data")[0]
    data = victim.read_bytes()
    i = data.find((500).to_bytes(4, "little"))  # a plain-encoded value in the page
    assert i > 0
    victim.write_bytes(data[:i] + bytes([data[i] ^ 1]) + data[i + 1:])
    with pytest.raises(mp.CorruptDataFileError, match=victim.name):
        t.to_arrow()


def decode_entries(data: bytes, path: str) -> list:
    return mp.open_table(_TABLES[0]).manifests.read_entries(Path(path).name)


_TABLES: list[str] = []


def _data_manifests(t: mp.Table) -> list[Path]:
    """The manifests of data files (a batch scan reads them; it never reads changelog manifests)."""
    found = []
    for p in sorted((Path(t.path) / "manifest").glob("manifest-*")):
        if "list" in p.name:
            continue
        entries = decode_entries(p.read_bytes(), str(p))
        if entries and not entries[0].file.fileName.startswith("changelog-"):
            found.append(p)
    return found


def test_manifest_replaced_by_another_valid_manifest(tmp_path):
    t = _table(tmp_path)
    _TABLES[:] = [t.path]
    t.write(rows(5, 3))
    t.write(rows(8, 1))
    manifests = _data_manifests(t)
    victim = manifests[0]
    other = next(p for p in manifests[1:] if p.read_bytes() != victim.read_bytes())
    victim.write_bytes(other.read_bytes())
    with pytest.raises(mp.CorruptMetadataError, match="does not match|was replaced"):
        for sid in (1, 2, 3):
            mp.open_table(t.path).scan(snapshot_id=sid).to_arrow()


def test_manifest_replaced_by_one_of_equal_size_and_counts(tmp_path):
    t = _table(tmp_path)
    _TABLES[:] = [t.path]
    victim = next(p for p in (Path(t.path) / "manifest").glob("manifest-*") if "list" not in p.name
                  and decode_entries(p.read_bytes(), str(p)) and "changelog" not in
                  decode_entries(p.read_bytes(), str(p))[0].file.fileName)
    entries = decode_entries(victim.read_bytes(), str(victim))
    f = entries[0].file
    for k in range(1, 20000):  # another creation time: same size, same counts, other content
        forged = t.manifests.encode_entries([msgspec.structs.replace(
            entries[0], file=msgspec.structs.replace(f, creationTime=f.creationTime + k))] + entries[1:])
        if len(forged) == len(victim.read_bytes()):
            break
    assert len(forged) == len(victim.read_bytes())
    victim.write_bytes(forged)
    with pytest.raises(mp.CorruptMetadataError, match="does not match"):
        mp.open_table(t.path).to_arrow()
