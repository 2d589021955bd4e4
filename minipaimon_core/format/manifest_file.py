"""Manifest files (``manifest/manifest-<uuid>-<n>``): Paimon's ``ManifestEntry`` records.

An Avro object container of ``ManifestEntry`` records (``_VERSION`` 2, ``_KIND``,
``_PARTITION``, ``_BUCKET``, ``_TOTAL_BUCKETS``, ``_FILE``: a ``DataFileMeta``), as Paimon's
Java engine writes them (schema: :data:`ENTRY_SCHEMA`, the 2.x layout, which Paimon 0.9,
pypaimon and paimon-rust all read). Partition, min/max key and stats values are
``BinaryRow`` bytes (:mod:`.binary_row`) typed by :class:`RowTypes`.

The engine works on the structs of :mod:`.data_file_meta`, whose row values are decoded
into the *stats domain* (:mod:`minipaimon_core.expressions.stats`). Decoding Avro records and their rows in Python
costs ~20 us an entry, so a file minipaimon writes also carries its entries as a compact
msgpack payload in the container's header (``minipaimon.entries``, base64 text: every Avro
reader keeps header metadata, Paimon's ignore it); minipaimon reads that payload (~1.5 us an
entry) and falls back to the records for files other writers wrote. Both come from the same
structs in :func:`encode`, and the manifest list's digest of the whole file covers both.
Either way the decoded entries are checked (:func:`check_entries`, and the ranges of the
structs): a manifest is untrusted input.
"""

from __future__ import annotations

import base64
import datetime
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import zstandard

from ..errors import CorruptMetadataError, UnsupportedFeatureError
from . import avro, binary_row, typed_decode
from .avro import optional, required
from .bucket_names import POSTPONE_BUCKET
from .data_file_meta import (
    ADD,
    DELETE,
    FILE_SOURCE_APPEND,
    FILE_SOURCE_COMPACT,
    MAX_SEQUENCE,
    DataFileMeta,
    ManifestEntry,
    SimpleStats,
)
from .file_names import check_data_file_names, is_file_name

VERSION = 2  # the _VERSION of entries Paimon 0.9 .. 2.x write and read
PAYLOAD_KEY = "minipaimon.entries"


class RowTypes:
    """The Paimon types a table's manifest rows are encoded with: partition columns,
    trimmed primary-key columns (minKey/maxKey, key stats), and the fields of each schema
    (value stats of a file cover the fields of the schema it was written with)."""

    def __init__(self, partition: Sequence[str], keys: Sequence[str], key_positions: Sequence[int],
                 fields_of: Callable[[int], tuple[Sequence[str], Sequence[str]]]) -> None:
        """``key_positions``: where the trimmed key columns are among the current schema's
        fields; ``fields_of(schema_id)``: (names, types) of that schema's fields."""
        self.partition = list(partition)
        self.keys = list(keys)
        self.key_positions = list(key_positions)
        self.fields_of = fields_of


def _stats_schema(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [
        required("_MIN_VALUES", "bytes"), required("_MAX_VALUES", "bytes"),
        optional("_NULL_COUNTS", {"type": "array", "items": avro.nullable("long")})]}


_STRINGS = {"type": "array", "items": "string"}
FILE_SCHEMA: dict[str, Any] = {"type": "record", "name": "record__FILE", "fields": [
    required("_FILE_NAME", "string"), required("_FILE_SIZE", "long"), required("_ROW_COUNT", "long"),
    required("_MIN_KEY", "bytes"), required("_MAX_KEY", "bytes"),
    required("_KEY_STATS", _stats_schema("record__FILE__KEY_STATS")),
    required("_VALUE_STATS", _stats_schema("record__FILE__VALUE_STATS")),
    required("_MIN_SEQUENCE_NUMBER", "long"), required("_MAX_SEQUENCE_NUMBER", "long"),
    required("_SCHEMA_ID", "long"), required("_LEVEL", "int"), required("_EXTRA_FILES", _STRINGS),
    optional("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
    optional("_DELETE_ROW_COUNT", "long"), optional("_EMBEDDED_FILE_INDEX", "bytes"),
    optional("_FILE_SOURCE", "int"), optional("_VALUE_STATS_COLS", _STRINGS),
    optional("_EXTERNAL_PATH", "string"), optional("_FIRST_ROW_ID", "long"),
    optional("_WRITE_COLS", _STRINGS), optional("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
]}
ENTRY_SCHEMA: dict[str, Any] = {"type": "record", "name": "record", "namespace": avro.NAMESPACE, "fields": [
    required("_VERSION", "int"), required("_KIND", "int"), required("_PARTITION", "bytes"),
    required("_BUCKET", "int"), required("_TOTAL_BUCKETS", "int"), required("_FILE", FILE_SCHEMA)]}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MILLISECOND = datetime.timedelta(milliseconds=1)


# -- encoding ----------------------------------------------------------------------------------

def encode_stats(stats: SimpleStats, types: Sequence[str]) -> dict[str, Any]:
    """A SimpleStats record of ``stats`` over columns of ``types``."""
    return {"_MIN_VALUES": binary_row.encode(stats.minValues, types),
            "_MAX_VALUES": binary_row.encode(stats.maxValues, types),
            "_NULL_COUNTS": list(stats.nullCounts)}


def _key_stats(stats: SimpleStats, types: RowTypes) -> SimpleStats:
    pos = types.key_positions
    if not pos or len(stats.minValues) <= max(pos):
        return SimpleStats((None,) * len(types.keys), (None,) * len(types.keys), (None,) * len(types.keys))
    return SimpleStats(tuple(stats.minValues[i] for i in pos), tuple(stats.maxValues[i] for i in pos),
                       tuple(stats.nullCounts[i] for i in pos))


def _file_record(f: DataFileMeta, types: RowTypes) -> dict[str, Any]:
    _, value_types = types.fields_of(f.schemaId)
    keys = types.keys if f.minKey else []
    return {
        "_FILE_NAME": f.fileName, "_FILE_SIZE": f.fileSize, "_ROW_COUNT": f.rowCount,
        "_MIN_KEY": binary_row.encode(f.minKey, keys, reserve_nulls=True),
        "_MAX_KEY": binary_row.encode(f.maxKey, keys, reserve_nulls=True),
        "_KEY_STATS": encode_stats(_key_stats(f.valueStats, types), types.keys) if f.minKey
        else encode_stats(SimpleStats((), (), ()), []),
        "_VALUE_STATS": encode_stats(f.valueStats, value_types),
        "_MIN_SEQUENCE_NUMBER": f.minSequenceNumber, "_MAX_SEQUENCE_NUMBER": f.maxSequenceNumber,
        "_SCHEMA_ID": f.schemaId, "_LEVEL": f.level, "_EXTRA_FILES": list(f.extraFiles),
        "_CREATION_TIME": f.creationTime, "_DELETE_ROW_COUNT": f.deleteRowCount,
        "_EMBEDDED_FILE_INDEX": f.embeddedIndex, "_FILE_SOURCE": f.fileSource,
        "_VALUE_STATS_COLS": None, "_EXTERNAL_PATH": None, "_FIRST_ROW_ID": None,
        "_WRITE_COLS": None, "_WRITE_COLS_SEQUENCES": None,
    }


def encode(entries: Sequence[ManifestEntry], types: RowTypes, compression: str = "zstd",
           records: RecordCache | None = None, table: str = "") -> bytes:
    """A manifest file of ``entries``: Paimon's records, and minipaimon's payload of them.
    ``records`` keeps each entry's encoded record (under ``table``) for the next file that
    holds it again (a manifest merge or rewrite writes the same entries again)."""
    metadata = {PAYLOAD_KEY: encode_payload(list(entries))}
    if avro.codec_of(compression) not in avro.ENCODED_CODECS:
        return avro.write_container(ENTRY_SCHEMA, [_entry_record(e, types) for e in entries],
                                    compression, metadata)
    if records is None:
        encoded = [encode_record(e, types) for e in entries]
    else:
        encoded = [records.get(table, e) or records.put(table, e, encode_record(e, types))
                   for e in entries]
    return avro.write_encoded_container(ENTRY_SCHEMA, encoded, compression, metadata)


def _entry_record(e: ManifestEntry, types: RowTypes) -> dict[str, Any]:
    return {"_VERSION": VERSION, "_KIND": int(e.kind),
            # partitions and keys as Java's projections write them (a null wide decimal or
            # timestamp keeps its zeroed chunk): Java compares partitions by bytes
            "_PARTITION": binary_row.encode(e.partition, types.partition, reserve_nulls=True),
            "_BUCKET": e.bucket, "_TOTAL_BUCKETS": e.totalBuckets,
            "_FILE": _file_record(e.file, types)}


_LONG, _BYTES, _NULL, _SOME = avro.long_bytes, avro.bytes_bytes, avro.NULL_BRANCH, avro.VALUE_BRANCH
_VERSION_BYTES = _LONG(VERSION)
_EMPTY_ROW = _BYTES(binary_row.encode((), ()))
_EMPTY_STATS = _EMPTY_ROW + _EMPTY_ROW + _SOME + avro.EMPTY_ARRAY


def encode_record(e: ManifestEntry, types: RowTypes) -> bytes:
    """The Avro binary of :data:`ENTRY_SCHEMA` for ``e``, field by field from the structs
    (what fastavro writes for :func:`_entry_record`, ~4x faster)."""
    f = e.file
    _, value_types = types.fields_of(f.schemaId)
    if f.minKey:
        keys = types.keys
        min_key = _BYTES(binary_row.encode(f.minKey, keys, reserve_nulls=True))
        max_key = _BYTES(binary_row.encode(f.maxKey, keys, reserve_nulls=True))
        key_stats = _stats_bytes(_key_stats(f.valueStats, types), keys)
    else:  # an append file: no key, empty key stats
        min_key = max_key = _EMPTY_ROW
        key_stats = _EMPTY_STATS
    return b"".join([
        _VERSION_BYTES, _LONG(int(e.kind)),
        _BYTES(binary_row.encode(e.partition, types.partition, reserve_nulls=True)),
        _LONG(e.bucket), _LONG(e.totalBuckets), _BYTES(f.fileName.encode()), _LONG(f.fileSize),
        _LONG(f.rowCount), min_key, max_key, key_stats, _stats_bytes(f.valueStats, value_types),
        _LONG(f.minSequenceNumber), _LONG(f.maxSequenceNumber), _LONG(f.schemaId), _LONG(f.level),
        _strings(f.extraFiles), avro.optional_long(f.creationTime), avro.optional_long(f.deleteRowCount),
        _NULL if f.embeddedIndex is None else _SOME + _BYTES(f.embeddedIndex),
        avro.optional_long(f.fileSource),
        _NULL, _NULL, _NULL, _NULL, _NULL,  # _VALUE_STATS_COLS .. _WRITE_COLS_SEQUENCES: null
    ])


def _stats_bytes(stats: SimpleStats, types: Sequence[str]) -> bytes:
    counts = stats.nullCounts
    if not counts:
        tail = _SOME + avro.EMPTY_ARRAY
    else:
        tail = b"".join([_SOME, _LONG(len(counts)),
                         *(_NULL if c is None else _SOME + _LONG(c) for c in counts), avro.EMPTY_ARRAY])
    return b"".join([_BYTES(binary_row.encode(stats.minValues, types)),
                     _BYTES(binary_row.encode(stats.maxValues, types)), tail])


def _strings(values: Sequence[str]) -> bytes:
    if not values:
        return avro.EMPTY_ARRAY
    return b"".join([_LONG(len(values)), *(_BYTES(v.encode()) for v in values), avro.EMPTY_ARRAY])


class RecordCache:
    """Encoded entry records by table and entry, bounded by bytes (LRU; thread-safe). A
    file name is unique in its table and its file's stats and keys never change; the key
    holds the rest of the entry that a commit sets or changes: kind, bucket, level, sequence
    numbers (a retried commit numbers an append file anew), deleted rows, source."""

    def __init__(self, budget: int = 64 << 20) -> None:
        self._budget = budget
        self._used = 0
        self._records: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(table: str, e: ManifestEntry) -> tuple[Any, ...]:
        f = e.file  # with every field a committer sets (sequence numbers of append files)
        return (table, f.fileName, f.level, int(e.kind), e.bucket, e.totalBuckets, f.schemaId,
                f.minSequenceNumber, f.maxSequenceNumber, f.deleteRowCount, f.fileSource)

    def get(self, table: str, e: ManifestEntry) -> bytes | None:
        key = self._key(table, e)
        with self._lock:
            record = self._records.get(key)
            if record is not None:
                self._records.move_to_end(key)  # least recently used goes first
            return record

    def put(self, table: str, e: ManifestEntry, record: bytes) -> bytes:
        key = self._key(table, e)
        with self._lock:
            if key not in self._records:
                self._records[key] = record
                self._used += len(record)
                while self._used > self._budget:
                    self._used -= len(self._records.popitem(last=False)[1])
        return record


# -- the payload ------------------------------------------------------------------------------

_BIG_INT = 1  # msgpack ext: an integer beyond 64 bits (a 38-digit decimal's unscaled value)


def _big_ints(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _big_ints(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_big_ints(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
        return msgspec.msgpack.Ext(_BIG_INT, v.to_bytes(v.bit_length() // 8 + 1, "big", signed=True))
    return v


def _ext_hook(code: int, data: memoryview) -> Any:
    if code != _BIG_INT:
        raise msgspec.DecodeError(f"unknown msgpack extension type {code}")
    return int.from_bytes(data, "big", signed=True)


def encode_payload(entries: list[ManifestEntry]) -> str:
    try:
        packed = msgspec.msgpack.encode(entries)
    except OverflowError:
        packed = msgspec.msgpack.encode(_big_ints(msgspec.to_builtins(entries, builtin_types=(bytes,))))
    return base64.b64encode(zstandard.ZstdCompressor(level=3).compress(packed)).decode("ascii")


def decode_payload(text: str, path: str) -> list[ManifestEntry]:
    try:
        packed = zstandard.ZstdDecompressor().decompress(base64.b64decode(text, validate=True))
        return typed_decode.msgpack_decoder(list[ManifestEntry], _ext_hook).decode(packed)
    except (ValueError, msgspec.DecodeError, zstandard.ZstdError) as e:
        raise CorruptMetadataError(f"{path}: damaged minipaimon payload ({e})") from None


# -- decoding ---------------------------------------------------------------------------------

def decode(data: bytes, path: str, types: RowTypes) -> list[ManifestEntry]:
    """The entries of a manifest file. Raises CorruptMetadataError (damaged file, unknown
    version, a value out of its range, a file name that is not a plain data file name) or
    UnsupportedFeatureError (a Paimon feature minipaimon does not read)."""
    return decode_with_names(data, path, types)[0]


def decode_with_names(data: bytes, path: str, types: RowTypes) -> tuple[list[ManifestEntry], list[str]]:
    """:func:`decode`, and the entries' file names (in order; the names checked)."""
    payload = avro.read_header(data, path).get(PAYLOAD_KEY)
    if payload is not None:  # minipaimon's own file: its records are not decoded
        entries = decode_payload(payload, path)
    else:
        entries = [_entry(r, path, types) for r in avro.read_container(data, path).records]
    return entries, check_entries(entries, path)


def check_entries(entries: Sequence[ManifestEntry], path: str) -> list[str]:
    """What the struct types cannot say of decoded ``entries``: file names are plain data
    file names (vectorised). Returns the names; raises CorruptMetadataError naming ``path``."""
    names = [e.file.fileName for e in entries]
    check_data_file_names(names, path)
    bad = next((e.bucket for e in entries if e.bucket < 0 and e.bucket != POSTPONE_BUCKET), None)
    if bad is not None:  # the struct allows -2..: only -2 (postponed rows) is a bucket below 0
        raise CorruptMetadataError(f"{path}: an entry has the bucket {bad}, not a bucket (>= 0, or -2: "
                                   "postponed rows); the manifest is damaged")
    return names


def decode_stats(record: dict[str, Any] | None, names: Sequence[str], types: Sequence[str],
                 covered: Sequence[str] | None, path: str) -> SimpleStats:
    """Stats over all ``names`` of a SimpleStats record that covers ``covered`` columns
    (None: all of them, in order); columns it does not cover are unknown."""
    n = len(names)
    if record is None or (covered is None and _is_empty_row(record["_MIN_VALUES"])
                          and _is_empty_row(record["_MAX_VALUES"])):
        # an empty row where every column was meant: pypaimon writes primary-key value stats
        # as no columns (``_VALUE_STATS_COLS`` = []), a field Java 0.9's records drop when it
        # rewrites the entry; Java reads such stats as unknown, and so does this
        return SimpleStats((None,) * n, (None,) * n, (None,) * n)
    cols = list(names) if covered is None else list(covered)
    col_types = [types[list(names).index(c)] if c in names else "STRING" for c in cols]
    lo = binary_row.decode(record["_MIN_VALUES"], col_types)
    hi = binary_row.decode(record["_MAX_VALUES"], col_types)
    nulls = list(record.get("_NULL_COUNTS") or [None] * len(cols))
    if len(nulls) != len(cols):
        raise CorruptMetadataError(f"{path}: stats of {len(cols)} columns hold {len(nulls)} null counts")
    if covered is None:
        return SimpleStats(tuple(lo), tuple(hi), tuple(nulls))
    where = {c: i for i, c in enumerate(cols)}
    pick = [where.get(name) for name in names]
    return SimpleStats(tuple(None if i is None else lo[i] for i in pick),
                       tuple(None if i is None else hi[i] for i in pick),
                       tuple(None if i is None else nulls[i] for i in pick))


def _is_empty_row(data: bytes) -> bool:
    """Whether ``data`` is a BinaryRow of no fields (its arity prefix is 0)."""
    return len(data) >= 4 and int.from_bytes(data[:4], "big", signed=True) == 0


def _check_record(r: dict[str, Any], path: str) -> None:
    """The ranges of :class:`ManifestEntry` / :class:`DataFileMeta` on an Avro record."""
    f = r["_FILE"]
    bad = [name for name, value, ok in (
        ("_KIND", r["_KIND"], r["_KIND"] in (ADD, DELETE)),
        ("_BUCKET", r["_BUCKET"], r["_BUCKET"] >= 0 or r["_BUCKET"] == POSTPONE_BUCKET),  # -2: postponed
        ("_FILE_SIZE", f["_FILE_SIZE"], f["_FILE_SIZE"] >= 0),
        ("_ROW_COUNT", f["_ROW_COUNT"], f["_ROW_COUNT"] >= 0),
        ("_MIN_SEQUENCE_NUMBER", f["_MIN_SEQUENCE_NUMBER"], 0 <= f["_MIN_SEQUENCE_NUMBER"] < MAX_SEQUENCE),
        ("_MAX_SEQUENCE_NUMBER", f["_MAX_SEQUENCE_NUMBER"], 0 <= f["_MAX_SEQUENCE_NUMBER"] < MAX_SEQUENCE),
        ("_SCHEMA_ID", f["_SCHEMA_ID"], f["_SCHEMA_ID"] >= 0),
        ("_LEVEL", f["_LEVEL"], f["_LEVEL"] >= 0),
        ("_DELETE_ROW_COUNT", f.get("_DELETE_ROW_COUNT"), (f.get("_DELETE_ROW_COUNT") or 0) >= 0),
        ("_FILE_SOURCE", f.get("_FILE_SOURCE"), f.get("_FILE_SOURCE") in (None, FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT)),
        ("_EXTRA_FILES", f.get("_EXTRA_FILES"), all(map(is_file_name, f.get("_EXTRA_FILES") or ()))),
    ) if not ok]
    if bad:
        raise CorruptMetadataError(
            f"{path}: file {f['_FILE_NAME']!r} has {bad[0]} = {_describe(r, f, bad[0])}, outside its range: "
            "the manifest is damaged or was written by a broken writer; restore it or roll the table back")


def _describe(r: dict[str, Any], f: dict[str, Any], field: str) -> str:
    return repr(r[field] if field in r else f.get(field))


def _entry(r: dict[str, Any], path: str, types: RowTypes) -> ManifestEntry:
    if r.get("_VERSION") != VERSION:
        raise CorruptMetadataError(f"{path}: manifest entry version {r.get('_VERSION')} (expected {VERSION})")
    _check_record(r, path)
    f = r["_FILE"]
    for field, feature in (("_EXTERNAL_PATH", "data-file.external-paths"),
                           ("_WRITE_COLS", "data-evolution (files of some columns)")):
        if f.get(field) is not None:
            raise UnsupportedFeatureError(f"{path}: file {f['_FILE_NAME']} uses {feature}, which "
                                          "minipaimon does not read")
    names, value_types = types.fields_of(f["_SCHEMA_ID"])
    keys = types.keys if f["_MIN_KEY"][:4] != b"\x00\x00\x00\x00" else []
    created = f.get("_CREATION_TIME")
    if isinstance(created, datetime.datetime):
        aware = created if created.tzinfo else created.replace(tzinfo=datetime.timezone.utc)
        created = (aware - _EPOCH) // _MILLISECOND  # exact: a float of seconds loses a millisecond
    meta = DataFileMeta(
        fileName=f["_FILE_NAME"], fileSize=f["_FILE_SIZE"], rowCount=f["_ROW_COUNT"],
        minKey=tuple(binary_row.decode(f["_MIN_KEY"], keys)),
        maxKey=tuple(binary_row.decode(f["_MAX_KEY"], keys)),
        valueStats=decode_stats(f["_VALUE_STATS"], names, value_types, f.get("_VALUE_STATS_COLS"), path),
        minSequenceNumber=f["_MIN_SEQUENCE_NUMBER"], maxSequenceNumber=f["_MAX_SEQUENCE_NUMBER"],
        schemaId=f["_SCHEMA_ID"], level=f["_LEVEL"], creationTime=created or 0,
        deleteRowCount=f.get("_DELETE_ROW_COUNT"), fileSource=f.get("_FILE_SOURCE"),
        embeddedIndex=f.get("_EMBEDDED_FILE_INDEX"), extraFiles=tuple(f.get("_EXTRA_FILES") or ()))
    return ManifestEntry(r["_KIND"], tuple(binary_row.decode(r["_PARTITION"], types.partition)),
                         r["_BUCKET"], r["_TOTAL_BUCKETS"], meta)


__all__ = ["ADD", "DELETE", "ENTRY_SCHEMA", "FILE_SOURCE_APPEND", "FILE_SOURCE_COMPACT", "MAX_SEQUENCE",
           "DataFileMeta", "ManifestEntry", "RowTypes", "SimpleStats", "check_entries", "decode",
           "decode_with_names", "encode"]
