"""The names of a table's files that its metadata holds: what a name read from a manifest,
manifest list, index manifest, snapshot or tag may be.

A file name a manifest, manifest list, index manifest, snapshot or tag holds is a plain
name: 1-255 of [A-Za-z0-9_.-], not hidden (no leading '.'), no '..' (so no separator, no
scheme, no NUL, no relative step). Metadata names start with their kind's prefix; data and
changelog files end with a data format's extension (Paimon's ``data-file.prefix`` /
``changelog-file.prefix`` may change their prefix, and ``file.suffix.include.compression``
adds ``.<compression>`` before the extension: both stay plain names).

The kind of a metadata name (its prefix) is checked by ``layout.check_file_name``; data and
changelog names, which manifests hold by the hundred thousand, are checked here, vectorised.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import CorruptMetadataError

FILE_NAME_PATTERN = r"(?!.*\.\.)[A-Za-z0-9_\-][A-Za-z0-9_\-.]{0,254}"  # (fullmatch)
_FILE = re.compile(FILE_NAME_PATTERN)
_NAME_BYTES = b"-._0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DATA_EXTENSIONS = (".parquet", ".orc", ".avro")
_EXTENSION_BYTES = [np.frombuffer(e.encode(), dtype=np.uint8) for e in DATA_EXTENSIONS]
_PAD = max(map(len, DATA_EXTENSIONS))  # separators before the first name: no gather leaves the bytes
_DOT, _SEP = ord("."), ord("/")
_TAIL = np.arange(-_PAD, 0)


def is_file_name(name: object) -> bool:
    """Whether ``name`` is a plain file name (see above): one path segment of the table."""
    return isinstance(name, str) and _FILE.fullmatch(name) is not None


def is_data_file_name(name: object) -> bool:
    """Whether ``name`` is a plain data or changelog file name (a data format's extension)."""
    return is_file_name(name) and str(name).endswith(DATA_EXTENSIONS)


def check_data_file_names(names: list[str], where: str) -> None:
    """Every name of ``names`` is a data or changelog file name (see :func:`check_file_name`).

    Vectorised over the joined names (NumPy over their bytes, ~50 ns a name): a manifest
    holds up to ~100k of them and is checked whenever it is decoded. Raises
    CorruptMetadataError naming the first bad name and ``where``."""
    bad = bad_data_file_names(names)
    if bad:
        raise CorruptMetadataError(
            f"{where}: holds the data file name {bad[0]!r}, which is not a plain data file "
            "name of the table (a path outside it?); the metadata is damaged or was written "
            "by a hostile or broken writer: restore it or roll the table back")


def bad_data_file_names(names: list[str]) -> list[object]:
    """The names among ``names`` that are not data or changelog file names ([] if none)."""
    if not names or _all_data_file_names(names):
        return []
    return [n for n in names if not is_data_file_name(n)]


def _all_data_file_names(names: list[str]) -> bool:
    try:
        raw = ("/" * _PAD + "/".join(names)).encode("utf-8", "replace")
    except TypeError:  # not a string among them
        return False
    if raw.translate(None, _NAME_BYTES) != b"/" * (_PAD + len(names) - 1) or raw.endswith(b"/"):
        return False  # a byte outside the class, a separator in a name, or an empty last name
    a = np.frombuffer(raw, dtype=np.uint8)
    dot_or_sep = (a == _DOT) | (a == _SEP)
    if np.any(dot_or_sep[_PAD:] & dot_or_sep[_PAD - 1:-1]):
        return False  # '..', a name starting with '.', or an empty name
    seps = np.flatnonzero(a == _SEP)[_PAD - 1:]  # the separator before each name
    ends = np.append(seps[1:], len(a))  # one past each name's last byte
    if int(np.max(ends - seps)) > 256:
        return False  # a name longer than 255
    tails = a[ends[:, None] + _TAIL]  # the last _PAD bytes of each name (or of the separators before)
    rest = np.ones(len(names), dtype=bool)
    for ext in _EXTENSION_BYTES:  # a table's files have one extension: mostly one pass
        rest &= ~(tails[:, _PAD - len(ext):] == ext).all(axis=1)
        if not rest.any():
            return True
    return False


__all__ = ["DATA_EXTENSIONS", "FILE_NAME_PATTERN", "bad_data_file_names", "check_data_file_names",
           "is_data_file_name", "is_file_name"]
