"""Every metadata codec round-trips byte for byte and rejects damaged files."""

from __future__ import annotations

import msgspec
import pyarrow as pa
import pytest

from minipaimon_core import codec, manifest
from minipaimon_core import snapshot as snapshot_codec
from minipaimon_core.errors import CorruptMetadataError
from minipaimon_core.kinds import CommitKind, EntryKind, RowKind
from minipaimon_core.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats
from minipaimon_core.schema import TableSchema, build_schema
from minipaimon_core.snapshot import Snapshot

FILE = DataFileMeta(
    fileName="data-abc-0.parquet", fileSize=123, rowCount=10, minKey=(1, "a"), maxKey=(9, "z"),
    valueStats=SimpleStats((1, None, 0.5, b"\x00"), (9, None, 2.5, b"\xff"), (0, 10, 1, 0)),
    minSequenceNumber=0, maxSequenceNumber=9, schemaId=0, level=1, creationTime=1700000000000,
    sequenceOffset=5, embeddedIndex=b"bloom",
)
ENTRY = ManifestEntry(kind=manifest.ADD, partition=("2024-01-01", 3, None), bucket=2, totalBuckets=4, file=FILE)
META = ManifestFileMeta("manifest-x", 99, 3, 1, SimpleStats(("a",), ("b",), (0,)), 0, 3, 0, 2, 0)
SNAPSHOT = Snapshot(
    version=1, id=7, schemaId=0, baseManifestList="manifest-list-a", deltaManifestList="manifest-list-b",
    commitUser="u", commitIdentifier=3, commitKind="APPEND", timeMillis=1700000000000,
    totalRecordCount=100, deltaRecordCount=10, nextSequenceNumber=42, changelogManifestList=None,
    properties={"a": "b"},
)
SCHEMA = build_schema(
    pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.decimal128(10, 2)),
        pa.field("ts", pa.timestamp("us", "UTC")), pa.field("l", pa.list_(pa.string())),
        pa.field("m", pa.map_(pa.string(), pa.int32())), pa.field("s", pa.struct([("a", pa.int8())])),
    ]),
    ["id"], None, {"bucket": "2"},
)

CODECS = [
    ("schema", lambda: codec.encode_json(SCHEMA), lambda b: codec.encode_json(codec.decode_json(b, TableSchema, "p"))),
    ("snapshot", lambda: snapshot_codec.encode(SNAPSHOT),
     lambda b: snapshot_codec.encode(snapshot_codec.decode(b, "p"))),
    ("manifest", lambda: manifest.encode_entries([ENTRY, ENTRY]),
     lambda b: manifest.encode_entries(manifest.decode_entries(b, "p"))),
    ("manifest-list", lambda: manifest.encode_manifest_list([META]),
     lambda b: manifest.encode_manifest_list(manifest.decode_manifest_list(b, "p"))),
]


@pytest.mark.parametrize("name,encode,roundtrip", CODECS, ids=[c[0] for c in CODECS])
def test_round_trip_is_byte_identical(name, encode, roundtrip):
    data = encode()
    assert roundtrip(data) == data


@pytest.mark.parametrize("name,encode,roundtrip", CODECS, ids=[c[0] for c in CODECS])
def test_truncated_file_is_corrupt(name, encode, roundtrip):
    data = encode()
    for cut in (0, 1, len(data) // 2, len(data) - 1):
        with pytest.raises(CorruptMetadataError):
            roundtrip(data[:cut])


@pytest.mark.parametrize("name,encode,roundtrip", CODECS, ids=[c[0] for c in CODECS])
def test_flipped_byte_is_corrupt(name, encode, roundtrip):
    data = bytearray(encode())
    for pos in (len(data) // 3, len(data) // 2, len(data) - 5):
        damaged = bytearray(data)
        damaged[pos] ^= 0x5A
        with pytest.raises(CorruptMetadataError):
            roundtrip(bytes(damaged))


def test_decoded_values_are_the_originals():
    assert snapshot_codec.decode(snapshot_codec.encode(SNAPSHOT), "p") == SNAPSHOT
    assert manifest.decode_entries(manifest.encode_entries([ENTRY]), "p") == [ENTRY]
    assert codec.decode_json(codec.encode_json(SCHEMA), TableSchema, "p").arrow_schema() == SCHEMA.arrow_schema()


def test_named_kinds_keep_their_on_disk_encodings():
    """Issue 14 item 7: the enums encode exactly as the plain values files already hold."""
    assert [int(k) for k in RowKind] == [0, 1, 2, 3]
    assert [k.short for k in RowKind] == ["+I", "-U", "+U", "-D"]
    assert (int(EntryKind.ADD), int(EntryKind.DELETE)) == (0, 1)
    assert [k.value for k in CommitKind] == ["APPEND", "COMPACT", "OVERWRITE"]
    assert f"{CommitKind.COMPACT}" == str(CommitKind.COMPACT) == "COMPACT"
    plain = msgspec.structs.replace(ENTRY, kind=0)
    assert manifest.encode_entries([msgspec.structs.replace(ENTRY, kind=EntryKind.ADD)]) == \
        manifest.encode_entries([plain])
    for kind in CommitKind:
        named = msgspec.structs.replace(SNAPSHOT, commitKind=kind)
        stored = msgspec.structs.replace(SNAPSHOT, commitKind=kind.value)
        assert snapshot_codec.encode(named) == snapshot_codec.encode(stored)
        assert snapshot_codec.decode(snapshot_codec.encode(named), "p").commitKind == kind
