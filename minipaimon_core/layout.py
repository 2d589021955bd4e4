"""Every path of a table, built in one place.

```
<table>/
  schema/schema-<id>
  snapshot/snapshot-<id>, snapshot/LATEST, snapshot/EARLIEST
  manifest/manifest-<uuid>-<n>, manifest/manifest-list-<uuid>-<n>,
  manifest/index-manifest-<uuid>-<n>
  index/index-<uuid>-<n>                   (deletion vectors of one bucket)
  tag/tag-<name>
  consumer/consumer-<id>
  <p1>=<v1>/<p2>=<v2>/bucket-<n>/data-<uuid>-<k>.parquet
  <p1>=<v1>/.../bucket-<n>/changelog-<uuid>-<k>.parquet
```

These are Apache Paimon's names. Partition directories are built by
:class:`minipaimon_core.partition.PartitionSpec` (Paimon's escaping: no value can name a
path outside the table); tag and consumer names are checked to be plain names. Every name
built here is parsed here too (:func:`parse`, as leveldb's ``ParseFileName``); no other
module slices a file name. Hidden temp files (``.<name>.<uuid>.tmp``) of interrupted
atomic writes and store probes are named by :func:`temp_name`.

A table's metadata is untrusted input, so every file name read from it is checked where it
is decoded (:func:`check_file_name`, :func:`check_data_file_names`: the plain name of the
kind its field holds, never a separator, ``..``, a scheme or a NUL), and the path builders
below refuse such a name again (:func:`check_path_name`): no name from a manifest, index
manifest, snapshot or tag can make a read, write or maintenance path leave the table.
"""

from __future__ import annotations

import re
import uuid
from typing import NamedTuple

import numpy as np

from .errors import CorruptMetadataError, InvalidArgumentError

_NAME = re.compile(r"[A-Za-z0-9_\-.]{1,200}")  # fullmatch: "$" would pass a trailing "\n"
_TEMP_SUFFIX = ".tmp"
_EXPIRED_SUFFIX = ".expired"


def check_name(kind: str, name: str) -> str:
    """Return ``name`` if it is a plain file-name-safe name, else raise InvalidArgumentError."""
    if not _is_plain(name):
        raise InvalidArgumentError(
            f"invalid {kind} name {name!r}: use 1-200 letters, digits, '_', '-' or '.'"
        )
    return name


class ParsedName(NamedTuple):
    """A file name of the table split into its kind and key.

    Kinds and keys: ``schema`` / ``snapshot`` (the id, digits), ``tag`` / ``consumer`` (the
    plain name), ``manifest`` / ``manifest-list`` / ``index-manifest`` / ``index`` (the
    uuid), ``data`` / ``changelog`` (the ``<uuid>-<k>`` part), ``bucket`` (the bucket
    number of a ``bucket-<n>`` directory), ``temp`` (the hidden name between ``.`` and
    ``.tmp``), ``hint`` (``LATEST`` / ``EARLIEST``), ``expired`` (the id of a hidden
    ``.snapshot-<id>.expired`` marker).
    """

    kind: str
    key: str


_PARSE = [
    ("schema", re.compile(r"schema-(\d+)")),
    ("snapshot", re.compile(r"snapshot-(\d+)")),
    ("tag", re.compile(r"tag-(.+)")),
    ("consumer", re.compile(r"consumer-(.+)")),
    ("manifest-list", re.compile(r"manifest-list-(.+)")),
    ("index-manifest", re.compile(r"index-manifest-(.+)")),
    ("index", re.compile(r"index-(.+)")),
    ("manifest", re.compile(r"manifest-(.+)")),
    ("data", re.compile(r"data-(.+)\.parquet")),
    ("changelog", re.compile(r"changelog-(.+)\.parquet")),
    ("bucket", re.compile(r"bucket-(-?\d+)")),
    ("hint", re.compile(r"(LATEST|EARLIEST)")),
    ("expired", re.compile(r"\.snapshot-(\d+)\.expired")),
]


def parse(name: str) -> ParsedName | None:
    """The kind and key of a file name this module builds, None for any other name (tag and
    consumer names that are not plain names, see :func:`check_name`, are other names)."""
    if is_temp_name(name):
        return ParsedName("temp", name[1:-len(_TEMP_SUFFIX)])
    for kind, pattern in _PARSE:
        m = pattern.fullmatch(name)
        if m is None:
            continue
        key = m.group(1)
        if kind in ("tag", "consumer") and not _is_plain(key):
            return None
        return ParsedName(kind, key)
    return None


def keys_of(kind: str, names: list[str]) -> list[str]:
    """The keys of the names of ``kind`` among ``names`` (a directory listing), sorted."""
    return sorted(p.key for p in map(parse, names) if p is not None and p.kind == kind)


def is_temp_name(name: str) -> bool:
    """A hidden temp file of an interrupted atomic write or a store probe (``.<x>.tmp``)."""
    return name.startswith(".") and name.endswith(_TEMP_SUFFIX)


def temp_name(base: str) -> str:
    """A fresh hidden temp name beside the file ``base`` (its atomic write goes through it)."""
    return f".{base}.{uuid.uuid4().hex}{_TEMP_SUFFIX}"


def _is_plain(name: str) -> bool:
    return bool(_NAME.fullmatch(name)) and set(name) != {"."}


# -- names read from metadata -------------------------------------------------------------
# A file name a manifest, manifest list, index manifest, snapshot or tag holds is a plain
# name: 1-255 of [A-Za-z0-9_.-], not hidden (no leading '.'), no '..' (so no separator, no
# scheme, no NUL, no relative step). Metadata names start with their kind's prefix; data and
# changelog files end with a data format's extension (Paimon's ``data-file.prefix`` /
# ``changelog-file.prefix`` may change their prefix, and ``file.suffix.include.compression``
# adds ``.<compression>`` before the extension: both stay plain names).
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


def _is_kind(kind: str, name: object) -> bool:
    if not is_file_name(name):
        return False
    assert isinstance(name, str)
    if kind == "data":
        return name.endswith(DATA_EXTENSIONS)
    parsed = parse(name)
    return parsed is not None and parsed.kind == kind


def check_file_name(kind: str, name: object, where: str) -> str:
    """``name`` if it is a plain name of ``kind`` (``manifest``, ``manifest-list``,
    ``index-manifest``, ``index`` or ``data``), read from the metadata file
    ``where``. Raises CorruptMetadataError naming both."""
    if not _is_kind(kind, name):
        raise CorruptMetadataError(
            f"{where}: holds the {kind} file name {name!r}, which is not a plain {kind} file "
            "name of the table (a path outside it?); the metadata is damaged or was written "
            "by a hostile or broken writer: restore it or roll the table back")
    assert isinstance(name, str)
    return name


def check_data_file_names(names: list[str], where: str) -> None:
    """Every name of ``names`` is a data or changelog file name (see :func:`check_file_name`).

    Vectorised over the joined names (NumPy over their bytes, ~50 ns a name): a manifest
    holds up to ~100k of them and is checked whenever it is decoded. Raises
    CorruptMetadataError naming the first bad name and ``where``."""
    bad = bad_data_file_names(names)
    if bad:
        check_file_name("data", bad[0], where)


def bad_data_file_names(names: list[str]) -> list[object]:
    """The names among ``names`` that are not data or changelog file names ([] if none)."""
    if not names or _all_data_file_names(names):
        return []
    return [n for n in names if not _is_kind("data", n)]


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


def check_path_name(name: object) -> str:
    """``name`` if a path builder may join it under the table (a plain file name), else
    CorruptMetadataError: the second line of defence behind the decoders' checks."""
    if not is_file_name(name):
        raise CorruptMetadataError(
            f"refusing the file name {name!r}: not a plain file name of the table (a path "
            "outside it?); the table's metadata is damaged or hostile")
    assert isinstance(name, str)
    return name


def check_partition_path(partition_path: object) -> str:
    """``partition_path`` if it is a relative partition path (``k=v`` segments, as
    :class:`~minipaimon_core.partition.PartitionSpec` builds them), else CorruptMetadataError."""
    if not isinstance(partition_path, str) or (partition_path and not all(
            "=" in seg and seg not in (".", "..") and not any(c in seg for c in "\\\x00:")
            for seg in partition_path.split("/"))):
        raise CorruptMetadataError(
            f"refusing the partition path {partition_path!r}: not a partition directory of "
            "the table (k=v segments); the commit message or metadata is damaged or hostile")
    return partition_path


def _check_bucket(bucket: object) -> int:
    if not isinstance(bucket, int) or isinstance(bucket, bool):
        raise CorruptMetadataError(f"refusing the bucket {bucket!r}: not an integer")
    return bucket


class TableLayout:
    """Owner of every file name and path of one table rooted at ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") or "/"

    def _join(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    # schema
    @property
    def schema_dir(self) -> str:
        return self._join("schema")

    def schema_path(self, schema_id: int) -> str:
        return self._join("schema", f"schema-{schema_id}")

    # snapshots
    @property
    def snapshot_dir(self) -> str:
        return self._join("snapshot")

    def snapshot_path(self, snapshot_id: int) -> str:
        return self._join("snapshot", f"snapshot-{snapshot_id}")

    @property
    def latest_hint(self) -> str:
        return self._join("snapshot", "LATEST")

    @property
    def earliest_hint(self) -> str:
        return self._join("snapshot", "EARLIEST")

    def expired_marker_path(self, snapshot_id: int) -> str:
        """The hidden marker of an expired snapshot id (see snapshot_manager)."""
        return self._join("snapshot", f".snapshot-{snapshot_id}{_EXPIRED_SUFFIX}")

    @staticmethod
    def expired_id_of(name: str) -> int | None:
        """The id of an expiry marker's file name, or None for any other name."""
        parsed = parse(name)
        return int(parsed.key) if parsed is not None and parsed.kind == "expired" else None

    @staticmethod
    def snapshot_id_of(name: str) -> int | None:
        """The id of a ``snapshot-<id>`` file name, or None for any other name."""
        parsed = parse(name)
        return int(parsed.key) if parsed is not None and parsed.kind == "snapshot" else None

    # manifests
    @property
    def manifest_dir(self) -> str:
        return self._join("manifest")

    def manifest_path(self, name: str) -> str:
        return self._join("manifest", check_path_name(name))

    @staticmethod
    def new_manifest_name() -> str:
        return f"manifest-{uuid.uuid4()}-0"

    @staticmethod
    def new_manifest_list_name() -> str:
        return f"manifest-list-{uuid.uuid4()}-0"

    def metadata_path(self, name: str) -> str:
        """Path of a manifest, manifest list, index manifest or index file by its name."""
        parsed = parse(name)
        return self.index_path(name) if parsed is not None and parsed.kind == "index" \
            else self.manifest_path(name)

    # deletion-vector index files
    @property
    def index_dir(self) -> str:
        return self._join("index")

    def index_path(self, name: str) -> str:
        return self._join("index", check_path_name(name))

    @staticmethod
    def new_index_name() -> str:
        return f"index-{uuid.uuid4()}-0"

    @staticmethod
    def new_index_manifest_name() -> str:
        return f"index-manifest-{uuid.uuid4()}-0"

    # tags and consumers
    @property
    def tag_dir(self) -> str:
        return self._join("tag")

    def tag_path(self, name: str) -> str:
        return self._join("tag", f"tag-{check_name('tag', name)}")

    @property
    def consumer_dir(self) -> str:
        return self._join("consumer")

    def consumer_path(self, consumer_id: str) -> str:
        return self._join("consumer", f"consumer-{check_name('consumer', consumer_id)}")

    # data
    def partition_dir(self, partition_path: str) -> str:
        """Directory of a (possibly partial) relative partition path; the root for ``""``."""
        return self._join(partition_path) if partition_path else self.root

    @staticmethod
    def listed_path(directory: str, name: str) -> str:
        """Path of the entry ``name`` that listing ``directory`` returned (table walks)."""
        return f"{directory}/{name}"

    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        check_partition_path(partition_path)
        _check_bucket(bucket)
        if partition_path:
            return self._join(partition_path, f"bucket-{bucket}")
        return self._join(f"bucket-{bucket}")

    def data_file_path(self, partition_path: str, bucket: int, file_name: str) -> str:
        return f"{self.bucket_dir(partition_path, bucket)}/{check_path_name(file_name)}"

    @staticmethod
    def new_data_file_name(prefix: str = "data") -> str:
        return f"{prefix}-{uuid.uuid4()}-0.parquet"
