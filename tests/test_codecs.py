"""Every metadata codec round-trips byte for byte and rejects damaged files."""

from __future__ import annotations

import msgspec
import pyarrow as pa
import pytest

from minipaimon_core.errors import CorruptMetadataError
from minipaimon_core.format import avro, index_manifest, manifest_file, manifest_list
from minipaimon_core.format import snapshot as snapshot_codec
from minipaimon_core.format import table_schema as schema_codec
from minipaimon_core.format.index_manifest import IndexFileEntry, VectorRange
from minipaimon_core.format.kinds import CommitKind, EntryKind, RowKind
from minipaimon_core.format.manifest_file import DataFileMeta, ManifestEntry, RowTypes, SimpleStats
from minipaimon_core.format.manifest_list import ManifestFileMeta
from minipaimon_core.format.snapshot import Digests, Snapshot
from minipaimon_core.schema.schema import build_schema

FIELDS = (["k", "s", "f", "b"], ["BIGINT NOT NULL", "STRING", "DOUBLE", "BYTES"])
TYPES = RowTypes(["DATE", "INT", "STRING"], ["BIGINT NOT NULL"], [0], lambda _: FIELDS)
FILE = DataFileMeta(
    fileName="data-abc-0.parquet", fileSize=123, rowCount=10, minKey=(1,), maxKey=(9,),
    valueStats=SimpleStats((1, None, 0.5, b"\x00"), (9, None, 2.5, b"\xff"), (0, 10, 1, 0)),
    minSequenceNumber=0, maxSequenceNumber=9, schemaId=0, level=1, creationTime=1700000000000,
    embeddedIndex=b"bloom",
)
ENTRY = ManifestEntry(kind=manifest_file.ADD, partition=(19723, 3, None), bucket=2, totalBuckets=4, file=FILE)
APPEND_FILE = msgspec.structs.replace(FILE, minKey=(), maxKey=(), embeddedIndex=None, extraFiles=("x.index",))
META = ManifestFileMeta("manifest-x", 99, 3, 1, SimpleStats((19000, 1, "a"), (19723, 3, "b"), (0, 0, 2)),
                        0, 3, 0, 2, 0, fileDigest=2**64 - 5, clustered=True)
INDEX = IndexFileEntry(0, (19723, 3, "x"), 1, "DELETION_VECTORS", "index-a-0", 42, 2,
                       (VectorRange("data-1-0.parquet", 1, 22, 1), VectorRange("data-2-0.parquet", 31, 30, 3)))
SNAPSHOT = Snapshot(
    version=3, id=7, schemaId=0, baseManifestList="manifest-list-a", deltaManifestList="manifest-list-b",
    baseManifestListSize=10, deltaManifestListSize=20,
    commitUser="u", commitIdentifier=3, commitKind="APPEND", timeMillis=1700000000000,
    totalRecordCount=100, deltaRecordCount=10, nextSequenceNumber=42, changelogManifestList=None,
    properties={"a": "b"}, minipaimonDigests=Digests("aa", "bb", None, None),
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
    ("schema", lambda: schema_codec.encode(SCHEMA), lambda b: schema_codec.encode(schema_codec.decode(b, "p"))),
    ("snapshot", lambda: snapshot_codec.encode(SNAPSHOT),
     lambda b: snapshot_codec.encode(snapshot_codec.decode(b, "p"))),
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
    assert schema_codec.decode(schema_codec.encode(SCHEMA), "p").arrow_schema() == SCHEMA.arrow_schema()


def _records_only(data: bytes) -> bytes:
    """A container with the same records and no minipaimon payload, as Paimon writes it."""
    container = avro.read_container(data, "p")
    return avro.write_container(container.schema, container.records)


@pytest.mark.parametrize("entries", [[ENTRY, ENTRY], [msgspec.structs.replace(ENTRY, file=APPEND_FILE)], []])
def test_manifest_entries_round_trip_through_the_payload_and_the_records(entries):
    types = TYPES if entries and entries[0].file.minKey else RowTypes(["DATE", "INT", "STRING"], [], [],
                                                                       lambda _: FIELDS)
    data = manifest_file.encode(entries, types)
    assert manifest_file.decode(data, "p", types) == entries
    assert manifest_file.decode(_records_only(data), "p", types) == entries  # Paimon's view


def test_manifest_list_and_index_manifest_round_trip():
    names = ["dt", "h", "s"]
    data = manifest_list.encode([META], names, TYPES.partition)
    assert manifest_list.decode(data, "p", names, TYPES.partition) == [META]
    data = index_manifest.encode([INDEX], TYPES.partition)
    assert index_manifest.decode(data, "p", TYPES.partition) == [INDEX]


@pytest.mark.parametrize("encode", [lambda: manifest_file.encode([ENTRY], TYPES),
                                    lambda: manifest_list.encode([META], ["a", "b", "c"], TYPES.partition)])
def test_truncated_avro_files_are_corrupt(encode):
    data = encode()
    for cut in (0, 1, len(data) // 2, len(data) - 1):
        with pytest.raises(CorruptMetadataError):
            manifest_file.decode(data[:cut], "p", TYPES)


def test_named_kinds_keep_their_on_disk_encodings():
    """Issue 14 item 7: the enums encode exactly as the plain values files already hold."""
    assert [int(k) for k in RowKind] == [0, 1, 2, 3]
    assert [k.short for k in RowKind] == ["+I", "-U", "+U", "-D"]
    assert (int(EntryKind.ADD), int(EntryKind.DELETE)) == (0, 1)
    assert [k.value for k in CommitKind] == ["APPEND", "COMPACT", "OVERWRITE"]
    assert f"{CommitKind.COMPACT}" == str(CommitKind.COMPACT) == "COMPACT"
    plain = msgspec.structs.replace(ENTRY, kind=0)
    assert manifest_file.decode(manifest_file.encode([msgspec.structs.replace(ENTRY, kind=EntryKind.ADD)],
                                                     TYPES), "p", TYPES) == [plain]
    for kind in CommitKind:
        named = msgspec.structs.replace(SNAPSHOT, commitKind=kind)
        stored = msgspec.structs.replace(SNAPSHOT, commitKind=kind.value)
        assert snapshot_codec.encode(named) == snapshot_codec.encode(stored)
        assert snapshot_codec.decode(snapshot_codec.encode(named), "p").commitKind == kind
