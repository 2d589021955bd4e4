"""File indexes (``file-index.*``): minipaimon writes the bloom filters of append data files
as Paimon 0.9 does, and refuses to write the index types it does not build.

Paimon 0.9 writes a data file's indexes for append tables only (its primary-key writer
writes none, measured) and its readers trust them: a scan skips a file whose embedded
index rules out an ``=`` / ``in`` filter, a raw read one whose ``<file>.index`` does. So a
file minipaimon writes into an indexed append table carries the same indexes, built the
same way, or a Paimon reader that trusts them would skip a file holding matching rows.
(A file with no index is never skipped: indexes only ever let readers skip.)

``bloom-filter`` (``BloomFilterFileIndex``, ``BloomFilter64``): ``items`` (default
1,000,000) and ``fpp`` (default 0.1) from ``file-index.bloom-filter.<column>.items`` /
``.fpp`` size the bit set (Paimon's rounding, bits a whole number of bytes); each distinct
non-null value is hashed to a 64-bit ``h`` and sets ``k`` bits: for ``i`` in 1..k, the
int32 ``lo(h) + i * hi(h)`` (flipped if negative) modulo the bit count. The hash
(``FastHash``): xxHash64 (seed 0) of the bytes of strings and binaries; Thomas Wang's
64-bit integer hash of integers, dates, times (milliseconds), timestamps (milliseconds up
to precision 3, else microseconds) and float/double bits (Java's canonical NaN). Paimon
refuses bloom filters of booleans, decimals and nested types, and so does minipaimon.

The index bytes (:mod:`.format.file_index`) go in ``DataFileMeta.embeddedIndex`` when at
most ``file-index.in-manifest-threshold`` (500 bytes), else into ``<data file>.index``
listed in ``extraFiles`` (which expiration, orphan cleanup and rollback treat as part of
the data file). ``bitmap`` and ``bsi`` indexes are read past (reads never need them) and
refused for writes by name.

Reading: a scan skips a file whose *embedded* bloom filters rule out every ``=`` / ``in``
value of the filter (:func:`may_match`, with ``file-index.read.enabled``, default true);
separate index files are not read while planning (reading them costs a request per file).

Speed: everything is vectorised except xxHash64 of strings, one call per distinct value in
a file (~0.2 us each).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from ..errors import CorruptMetadataError, UnsupportedFeatureError
from ..expressions.predicate import Term
from ..format import file_index as codec
from ..format.manifest_file import DataFileMeta
from ..format.options import parse_size

TYPES = ("bloom-filter", "bitmap", "bsi")
BLOOM = "bloom-filter"
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
DEFAULT_THRESHOLD = 500
_COLUMNS = re.compile(r"file-index\.([a-z-]+)\.columns")


def indexed_columns(options: Mapping[str, str]) -> dict[str, list[str]]:
    """Index type -> the columns ``file-index.<type>.columns`` names."""
    out: dict[str, list[str]] = {}
    for key, value in options.items():
        m = _COLUMNS.fullmatch(key)
        if m:
            out[m.group(1)] = [c.strip() for c in value.split(",") if c.strip()]
    return out


@dataclass(frozen=True)
class BloomSpec:
    column: str
    items: int
    fpp: float


def bloom_specs(options: Mapping[str, str]) -> list[BloomSpec]:
    """The bloom filters a data file of a table with ``options`` carries."""
    cols = indexed_columns(options).get(BLOOM, [])
    return [BloomSpec(c, int(options.get(f"file-index.{BLOOM}.{c}.items", DEFAULT_ITEMS)),
                      float(options.get(f"file-index.{BLOOM}.{c}.fpp", DEFAULT_FPP))) for c in cols]


def threshold(options: Mapping[str, str]) -> int:
    value = options.get("file-index.in-manifest-threshold")
    return DEFAULT_THRESHOLD if value is None else parse_size(value)


def check_writable(options: Mapping[str, str], schema: pa.Schema, path: str) -> None:
    """Raises UnsupportedFeatureError for an index minipaimon cannot write as Paimon does:
    a type other than bloom-filter, a nested (``map[key]``) column, a column that is not
    in the table, or a type Paimon cannot hash."""
    for index_type, columns in indexed_columns(options).items():
        if index_type != BLOOM:
            raise UnsupportedFeatureError(
                f"{path}: minipaimon reads tables with '{index_type}' file indexes "
                f"('file-index.{index_type}.columns') but does not write them (it writes "
                "bloom-filter indexes); write it with Paimon's engines, or drop the option")
        for column in columns:
            if column not in schema.names:
                raise UnsupportedFeatureError(
                    f"{path}: 'file-index.{BLOOM}.columns' names {column!r}, which is no top-level "
                    "column (indexes of map entries are not written by minipaimon)")
            _hasher(schema.field(column).type, column)


def _wang(key: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (Paimon's ``FastHash.getLongHash``), int64 wrapping."""
    key = key.astype(np.int64, copy=True)
    with np.errstate(over="ignore"):
        key = (~key) + (key << 21)
        key = key ^ (key >> 24)
        key = (key + (key << 3)) + (key << 8)
        key = key ^ (key >> 14)
        key = (key + (key << 2)) + (key << 4)
        key = key ^ (key >> 28)
        key = key + (key << 31)
    return key


def _longs(arr: pa.Array) -> np.ndarray:
    if pa.types.is_time32(arr.type):
        arr = arr.cast(pa.int32())
    return np.asarray(arr.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _hasher(t: pa.DataType, column: str):  # type: ignore[no-untyped-def]
    """The function from a column's distinct non-null values to their 64-bit hashes."""
    is_ = pa.types
    if is_.is_string(t) or is_.is_large_string(t) or is_.is_binary(t) or is_.is_large_binary(t):
        def strings(a: pa.Array) -> np.ndarray:
            values = a.cast(pa.binary()).to_pylist()  # xxHash64 per distinct value
            return np.array([xxhash.xxh64_intdigest(v) for v in values], dtype=np.uint64).view(np.int64)
        return strings
    if is_.is_integer(t) or is_.is_date32(t):
        return lambda a: _wang(_longs(a.cast(pa.int32()) if is_.is_date32(t) else a))
    if is_.is_time(t):
        per = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}[t.unit]
        return lambda a: _wang(_longs(a) * per[0] // per[1])
    if is_.is_timestamp(t):
        # Paimon: milliseconds up to precision 3 (Arrow s, ms), else microseconds (us, ns)
        per = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1), "ns": (1, 1000)}[t.unit]
        return lambda a: _wang(np.floor_divide(_longs(a) * per[0], per[1]))
    if is_.is_float32(t):
        def floats(a: pa.Array) -> np.ndarray:
            bits = a.to_numpy(zero_copy_only=False).astype(np.float32).view(np.int32).astype(np.int64)
            bits[np.isnan(a.to_numpy(zero_copy_only=False))] = 0x7FC00000  # floatToIntBits
            return _wang(bits)
        return floats
    if is_.is_float64(t):
        def doubles(a: pa.Array) -> np.ndarray:
            values = a.to_numpy(zero_copy_only=False).astype(np.float64)
            bits = values.view(np.int64).copy()
            bits[np.isnan(values)] = 0x7FF8000000000000  # doubleToLongBits
            return _wang(bits)
        return doubles
    raise UnsupportedFeatureError(
        f"a bloom-filter file index of column {column!r} ({t}): Paimon hashes no such type "
        "(booleans, decimals and nested types have none); drop it from 'file-index.bloom-filter.columns'")


def bloom_shape(items: int, fpp: float) -> tuple[int, int]:
    """(bits, hash functions) of Paimon's ``BloomFilter64(items, fpp)``."""
    nb = min(int(-items * math.log(fpp) / (math.log(2) * math.log(2))), 2**31 - 1)
    bits = nb + (8 - nb % 8)
    return bits, max(1, math.floor(bits / items * math.log(2) + 0.5))


def bloom_bytes(hashes: np.ndarray, items: int, fpp: float) -> bytes:
    """The serialized bloom filter of the 64-bit ``hashes``."""
    bits, k = bloom_shape(items, fpp)
    hashes = np.unique(hashes)
    lo = (hashes & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
    hi = ((hashes >> 32) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
    bitset = np.zeros(bits, dtype=bool)
    for i in range(1, k + 1):
        combined = (lo + i * hi + 2**31) % 2**32 - 2**31  # Java's int arithmetic
        combined = np.where(combined < 0, ~combined, combined)
        bitset[combined % bits] = True
    return k.to_bytes(4, "big", signed=True) + np.packbits(bitset, bitorder="little").tobytes()


def bloom_test(data: bytes, hashes: np.ndarray) -> np.ndarray:
    """For each hash, whether the serialized bloom filter ``data`` may hold it."""
    k = int.from_bytes(data[:4], "big", signed=True)
    bitset = np.unpackbits(np.frombuffer(data, dtype=np.uint8, offset=4), bitorder="little").astype(bool)
    bits = len(bitset)
    lo = (hashes & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
    hi = ((hashes >> 32) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
    out = np.ones(len(hashes), dtype=bool)
    for i in range(1, k + 1):
        combined = (lo + i * hi + 2**31) % 2**32 - 2**31
        combined = np.where(combined < 0, ~combined, combined)
        out &= bitset[combined % bits]
    return out


def _java_hash(text: str) -> int:
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h


def java_map_order(names: list[str]) -> list[str]:
    """``names`` in the order a ``java.util.HashMap`` of them iterates (Paimon's writer
    collects a file's indexes in one), so the index bytes equal Java's: by bucket of the
    spread ``String.hashCode``, insertion order within a bucket."""
    capacity = 16
    while len(names) > capacity * 0.75:
        capacity *= 2
    spread = {n: (_java_hash(n) ^ (_java_hash(n) >> 16)) & (capacity - 1) for n in names}
    return sorted(names, key=lambda n: spread[n])


class IndexBuilder:
    """The file index of one append data file, fed its parts as they are written."""

    def __init__(self, options: Mapping[str, str], schema: pa.Schema) -> None:
        self._specs = bloom_specs(options)
        self._hashers = {s.column: _hasher(schema.field(s.column).type, s.column) for s in self._specs}
        self._hashes: dict[str, list[np.ndarray]] = {s.column: [] for s in self._specs}
        self._threshold = threshold(options)

    @staticmethod
    def of(options: Mapping[str, str], schema: pa.Schema) -> IndexBuilder | None:
        """A builder if the table indexes its files, else None."""
        return IndexBuilder(options, schema) if indexed_columns(options).get(BLOOM) else None

    def add(self, part: pa.Table) -> None:
        for column, hasher in self._hashers.items():
            distinct = pc.drop_null(pc.unique(part.column(column).combine_chunks()))
            if len(distinct):
                self._hashes[column].append(hasher(distinct))

    def finish(self) -> tuple[bytes, bool]:
        """The index file's bytes, and whether they go into the manifest (else a file)."""
        specs = {s.column: s for s in self._specs}
        data = codec.encode({c: {BLOOM: bloom_bytes(
            np.concatenate(self._hashes[c]) if self._hashes[c] else np.zeros(0, np.int64),
            specs[c].items, specs[c].fpp)} for c in java_map_order(list(specs))})
        return data, len(data) <= self._threshold


def may_match(dnf: list[list[Term]], files: Sequence[DataFileMeta], schema_id: int) -> np.ndarray:
    """Per file, whether ``dnf`` may match it by the bloom filters embedded in its entry
    (the reading side of Paimon's index: an ``=`` / ``in`` term whose values the column's
    filter rules out excludes the file). Files of another schema than ``schema_id`` (column
    names may differ), without an index, and terms on other columns or ops may match."""
    keep = np.ones(len(files), dtype=bool)
    wanted = {t.column for clause in dnf for t in clause if t.op in ("=", "in")}
    if not wanted:
        return keep
    hashes: dict[int, np.ndarray | None] = {}  # by id() of the term (several per column)
    for i, f in enumerate(files):
        if f.embeddedIndex is None or f.schemaId != schema_id:
            continue
        try:
            index = codec.decode(f.embeddedIndex, f.fileName)
        except CorruptMetadataError:
            continue  # an index we cannot read only loses the skip
        blooms = {c: t.get(BLOOM) for c, t in index.items() if c in wanted and t.get(BLOOM)}
        if blooms and not any(all(_term_may_match(t, blooms, hashes) for t in clause) for clause in dnf):
            keep[i] = False
    return keep


def _term_may_match(t: Term, blooms: dict[str, bytes | None], hashes: dict[int, np.ndarray | None]) -> bool:
    bloom = blooms.get(t.column)
    if bloom is None or t.op not in ("=", "in"):
        return True
    key = id(t)
    if key not in hashes:
        values = t.value if t.op == "in" else pa.array([t.value.as_py()], t.value.type)
        values = pc.drop_null(values)
        try:
            hashes[key] = _hasher(values.type, t.column)(values) if len(values) else np.zeros(0, np.int64)
        except UnsupportedFeatureError:
            hashes[key] = None
    h = hashes[key]
    return h is None or bool(bloom_test(bloom, h).any())


__all__ = ["BLOOM", "IndexBuilder", "bloom_bytes", "bloom_shape", "bloom_specs", "bloom_test",
           "check_writable", "indexed_columns", "may_match"]
