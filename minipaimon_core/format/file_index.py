"""File indexes of data files (Paimon's ``FileIndexFormat``, version 1): one file's indexes,
embedded in its ``DataFileMeta`` (``_EMBEDDED_FILE_INDEX``) when small, else a file
``<data file>.index`` beside it, listed in the entry's ``_EXTRA_FILES``.

```
 int64 BE  magic 1493475289347502
 int32 BE  version (1)
 int32 BE  head length (magic through the redundant int below)
 int32 BE  number of columns
 per column:  UTF  column name (Java's writeUTF: uint16 BE length, modified UTF-8)
              int32 BE  number of indexes
              per index:  UTF  index type (bloom-filter, bitmap, bsi)
                          int32 BE  start of its bytes in the file (-1: empty index)
                          int32 BE  length of its bytes
 int32 BE  redundant length (0)
 the index bytes
```

A ``bloom-filter`` index (``BloomFilterFileIndex``): int32 BE number of hash functions,
then the bit set's bytes (bit ``i`` is bit ``i & 7`` of byte ``i >> 3``).
"""

from __future__ import annotations

import struct

from ..errors import CorruptMetadataError

MAGIC = 1493475289347502
VERSION = 1
EMPTY = -1


def _utf(text: str) -> bytes:
    """Java's ``DataOutput.writeUTF``: modified UTF-8 of the UTF-16 units, length first."""
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"name too long for a file index: {text[:40]!r}...")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_utf(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2: pos + 2 + n]
    if len(raw) != n:
        raise ValueError("truncated name")
    units = bytearray()
    i = 0
    while i < n:
        b = raw[i]
        if b < 0x80:
            c, i = b, i + 1
        elif b >> 5 == 0b110:
            c, i = ((b & 0x1F) << 6) | (raw[i + 1] & 0x3F), i + 2
        else:
            c, i = ((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F), i + 3
        units += struct.pack(">H", c)
    return units.decode("utf-16-be", "surrogatepass"), pos + 2 + n


def encode(indexes: dict[str, dict[str, bytes | None]]) -> bytes:
    """The file of ``indexes`` (column -> index type -> bytes, None: an empty index), in
    the order given."""
    names = b"".join(_utf(c) + b"".join(_utf(t) for t in types) for c, types in indexes.items())
    head_length = 8 + 4 + 4 + 4 + sum(len(t) for t in indexes.values()) * 8 + len(indexes) * 4 + 4 + len(names)
    head = [struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes))]
    body = bytearray()
    for column, types in indexes.items():
        head.append(_utf(column) + struct.pack(">i", len(types)))
        for index_type, data in types.items():
            if data is None:
                head.append(_utf(index_type) + struct.pack(">ii", EMPTY, 0))
            else:
                head.append(_utf(index_type) + struct.pack(">ii", head_length + len(body), len(data)))
                body += data
    head.append(struct.pack(">i", 0))
    out = b"".join(head)
    assert len(out) == head_length
    return out + bytes(body)


def decode(data: bytes, where: str) -> dict[str, dict[str, bytes | None]]:
    """Column -> index type -> bytes (None: empty) of a file index. Raises
    CorruptMetadataError (naming ``where``) for anything else."""
    try:
        magic, version, head_length, columns = struct.unpack_from(">qiii", data, 0)
        if magic != MAGIC:
            raise ValueError("not a file index (magic)")
        if version != VERSION:
            raise ValueError(f"file index version {version}")
        pos = 20
        out: dict[str, dict[str, bytes | None]] = {}
        for _ in range(columns):
            column, pos = _read_utf(data, pos)
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            types: dict[str, bytes | None] = {}
            for _ in range(count):
                index_type, pos = _read_utf(data, pos)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start == EMPTY:
                    types[index_type] = None
                elif start < head_length or length < 0 or start + length > len(data):
                    raise ValueError(f"index {column}/{index_type} at {start}+{length} outside the file")
                else:
                    types[index_type] = data[start:start + length]
            out[column] = types
        return out
    except (struct.error, ValueError, UnicodeDecodeError, IndexError) as e:
        raise CorruptMetadataError(f"{where}: damaged file index ({e})") from None


__all__ = ["MAGIC", "decode", "encode"]
