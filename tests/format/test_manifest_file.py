"""Manifest records encoded by hand (format/manifest_file.encode_record) are the bytes
fastavro writes for the same record, and the containers framed around them are read by
fastavro as written; cached records never outlive what a commit changes."""

from __future__ import annotations

import io
import random

import fastavro
import msgspec
import pytest

from minipaimon_core.format import avro, manifest_file
from minipaimon_core.format.manifest_file import (
    ENTRY_SCHEMA,
    DataFileMeta,
    ManifestEntry,
    RecordCache,
    RowTypes,
    SimpleStats,
)

FIELDS = (["k", "s", "d", "ts"], ["BIGINT NOT NULL", "STRING", "DECIMAL(38, 4)", "TIMESTAMP(6)"])
PK_TYPES = RowTypes(["DATE", "STRING"], ["BIGINT NOT NULL"], [0], lambda _: FIELDS)
APPEND_TYPES = RowTypes(["DATE", "STRING"], [], [], lambda _: FIELDS)
PARSED = fastavro.parse_schema(ENTRY_SCHEMA)


def random_entry(rng: random.Random, primary_key: bool) -> ManifestEntry:
    def maybe(value: object) -> object:
        return None if rng.random() < 0.2 else value

    lo = (rng.randint(-2**40, 2**40), maybe("a" * rng.randint(0, 20)), maybe(rng.randint(-10**30, 10**30)),
          maybe(rng.randint(0, 2**50)))
    stats = SimpleStats(lo, lo, tuple(maybe(rng.randint(0, 10**6)) for _ in lo)) if rng.random() < 0.9 \
        else SimpleStats((None,) * 4, (None,) * 4, (None,) * 4)
    f = DataFileMeta(
        fileName=f"data-{rng.getrandbits(64):x}-0.parquet", fileSize=rng.randint(1, 2**40),
        rowCount=rng.randint(0, 10**9), minKey=(lo[0],) if primary_key else (),
        maxKey=(lo[0] + 5,) if primary_key else (), valueStats=stats,
        minSequenceNumber=rng.randint(0, 2**62), maxSequenceNumber=rng.randint(0, 2**62), schemaId=0,
        level=rng.randint(0, 7), creationTime=rng.randint(0, 2**42),
        extraFiles=tuple(f"x{i}" for i in range(rng.randint(0, 2))), deleteRowCount=maybe(rng.randint(0, 9)),
        embeddedIndex=maybe(rng.randbytes(rng.randint(0, 9))), fileSource=maybe(rng.randint(0, 1)))
    return ManifestEntry(kind=manifest_file.ADD if rng.random() < 0.7 else manifest_file.DELETE,
                         partition=(maybe(rng.randint(-9999, 99999)), maybe("p" * rng.randint(0, 12))),
                         bucket=rng.randint(-1, 300), totalBuckets=rng.randint(-1, 300), file=f)


@pytest.mark.parametrize("primary_key", [True, False])
def test_hand_encoded_records_are_fastavros_bytes(primary_key: bool) -> None:
    rng = random.Random(7)
    types = PK_TYPES if primary_key else APPEND_TYPES
    for _ in range(500):
        e = random_entry(rng, primary_key)
        want = io.BytesIO()
        fastavro.schemaless_writer(want, PARSED, manifest_file._entry_record(e, types))
        assert manifest_file.encode_record(e, types) == want.getvalue()


@pytest.mark.parametrize("compression", ["zstd", "none", "deflate"])
def test_containers_read_back_as_written_and_decode_without_the_payload(compression: str) -> None:
    rng = random.Random(11)
    entries = [random_entry(rng, True) for _ in range(700)]  # several blocks
    data = manifest_file.encode(entries, PK_TYPES, compression)
    records = list(fastavro.reader(io.BytesIO(data)))
    want = [fastavro.schemaless_reader(io.BytesIO(manifest_file.encode_record(e, PK_TYPES)), PARSED, None)
            for e in entries]
    assert records == want
    assert manifest_file.decode(data, "p", PK_TYPES) == entries  # minipaimon's payload
    without = avro.write_container(ENTRY_SCHEMA, records, compression)  # as Paimon writes it
    assert manifest_file.decode(without, "p", PK_TYPES) == entries


def test_a_cached_record_is_never_used_for_an_entry_a_commit_changed() -> None:
    rng = random.Random(3)
    cache = RecordCache()
    e = random_entry(rng, False)
    first = manifest_file.encode([e], APPEND_TYPES, records=cache, table="t")
    changed = [msgspec.structs.replace(e, file=msgspec.structs.replace(e.file, minSequenceNumber=1, maxSequenceNumber=2)),
               msgspec.structs.replace(e, kind=manifest_file.DELETE if e.kind == manifest_file.ADD else manifest_file.ADD),
               msgspec.structs.replace(e, file=msgspec.structs.replace(e.file, level=e.file.level + 1))]
    for other in changed:
        data = manifest_file.encode([other], APPEND_TYPES, records=cache, table="t")
        (record,) = fastavro.reader(io.BytesIO(data))
        assert manifest_file.decode(avro.write_container(ENTRY_SCHEMA, [record]), "p", APPEND_TYPES) == [other]
    assert manifest_file.encode([e], APPEND_TYPES, records=cache, table="t")[-200:] != b""
    assert list(fastavro.reader(io.BytesIO(first))) == list(fastavro.reader(io.BytesIO(
        manifest_file.encode([e], APPEND_TYPES, records=cache, table="t"))))


def test_the_cache_stays_within_its_budget() -> None:
    rng = random.Random(5)
    cache = RecordCache(budget=10_000)
    for _ in range(200):
        manifest_file.encode([random_entry(rng, True)], PK_TYPES, records=cache, table="t")
    assert 0 < cache._used <= 10_000


def test_the_cache_drops_the_least_recently_used_record_first() -> None:
    rng = random.Random(6)
    entries = [random_entry(rng, True) for _ in range(3)]
    records = [manifest_file.encode_record(e, PK_TYPES) for e in entries]
    cache = RecordCache(budget=len(records[0]) + len(records[1]) + len(records[2]) - 1)
    cache.put("t", entries[0], records[0])
    cache.put("t", entries[1], records[1])
    assert cache.get("t", entries[0]) == records[0]  # used again: now the newest
    cache.put("t", entries[2], records[2])  # over budget: entry 1, the least recently used, goes
    assert cache.get("t", entries[1]) is None
    assert cache.get("t", entries[0]) == records[0] and cache.get("t", entries[2]) == records[2]
