"""Every path of a table, built in one place.

```
<table>/
  schema/schema-<id>
  snapshot/snapshot-<id>, snapshot/LATEST, snapshot/EARLIEST
  changelog/changelog-<id>, changelog/LATEST, changelog/EARLIEST   (long-lived changelog)
  manifest/manifest-<uuid>-<n>, manifest/manifest-list-<uuid>-<n>,
  manifest/index-manifest-<uuid>-<n>
  index/index-<uuid>-<n>                   (deletion vectors of one bucket)
  tag/tag-<name>
  consumer/consumer-<id>
  branch/branch-<name>/{schema,snapshot,changelog,tag,consumer}/...   (a branch's own metadata)
  <p1>=<v1>/<p2>=<v2>/bucket-<n|postpone>/data-<uuid>-<k>.parquet   (or .orc, .avro: file.format)
  <p1>=<v1>/.../bucket-<n>/changelog-<uuid>-<k>.parquet
  <p1>=<v1>/.../bucket-<n>/data-<uuid>-<k>.parquet.index  (a data file's file index)
```

These are Apache Paimon's names. A branch keeps its schemas, snapshots, changelogs, tags and
consumers under ``branch/branch-<name>/`` and shares the table's manifests, index and data
files: a :class:`TableLayout` has a ``root`` (those) and a ``home`` (the metadata of its
branch; the root on main), so every operation works within a branch unchanged. Partition directories are built by
:class:`minipaimon_core.schema.partition.PartitionSpec` (Paimon's escaping: no value can name a
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

import hashlib
import re
import uuid
from typing import NamedTuple

from ..errors import CorruptMetadataError, InvalidArgumentError
from .branch_names import BRANCH_DIR_PREFIX, MAIN_BRANCH, check_branch_name, is_branch_name
from .bucket_names import TAG_NAME, bucket_dir_name
from .file_names import is_data_file_name, is_file_name

_NAME = re.compile(r"[A-Za-z0-9_\-.]{1,200}")  # fullmatch: "$" would pass a trailing "\n"
_TEMP_SUFFIX = ".tmp"
_EXPIRED_SUFFIX = ".expired"


def check_name(kind: str, name: str) -> str:
    """Return ``name`` if it is a plain file-name-safe name, else raise InvalidArgumentError."""
    if not _is_plain(name, kind):  # (a tag's may hold single inner spaces: bucket_names.TAG_NAME)
        raise InvalidArgumentError(f"invalid {kind} name {name!r}: use 1-200 letters, digits, "
                                   "'_', '-' or '.'")
    return name


class ParsedName(NamedTuple):
    """A file name of the table split into its kind and key.

    Kinds and keys: ``schema`` / ``snapshot`` (the id, digits), ``tag`` / ``consumer`` (the
    plain name), ``manifest`` / ``manifest-list`` / ``index-manifest`` / ``index`` (the
    uuid), ``data`` / ``changelog`` (the ``<uuid>-<k>`` part), ``data-index`` (a data
    file's separate file index ``<data file>.index``: the data file's ``<uuid>-<k>.<ext>``),
    ``long-lived-changelog`` (the id of ``changelog/changelog-<id>``), ``bucket`` (the bucket
    number of a ``bucket-<n>`` directory), ``temp`` (the hidden name between ``.`` and
    ``.tmp``), ``hint`` (``LATEST`` / ``EARLIEST``), ``expired`` (the id of a hidden
    ``.snapshot-<id>.expired`` marker), ``branch`` (a ``branch-<name>`` directory: the name).
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
    ("long-lived-changelog", re.compile(r"changelog-(\d+)")),
    ("data-index", re.compile(r"data-(.+\.(?:parquet|orc|avro))\.index")),
    ("data", re.compile(r"data-(.+)\.(?:parquet|orc|avro)")),
    ("changelog", re.compile(r"changelog-(.+)\.(?:parquet|orc|avro)")),
    ("bucket", re.compile(r"bucket-(-?\d+|postpone)")),
    ("branch", re.compile(r"branch-(.+)")),
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
        if kind in ("tag", "consumer") and not _is_plain(key, kind):
            return None
        if kind == "branch" and not is_branch_name(key):
            return None
        return ParsedName(kind, key)
    return None


def keys_of(kind: str, names: list[str]) -> list[str]:
    """The keys of the names of ``kind`` among ``names`` (a directory listing), sorted."""
    return sorted(p.key for p in map(parse, names) if p is not None and p.kind == kind)


_RECORD = re.compile(r"([0-9a-f]{40})-(\d+)-(APPEND|COMPACT|OVERWRITE)")


def user_key(user: str) -> str:
    """A commit user's name as a file-name-safe key (sha1 hex: users are any strings)."""
    return hashlib.sha1(user.encode()).hexdigest()


def is_temp_name(name: str) -> bool:
    """A hidden temp file of an interrupted atomic write or a store probe (``.<x>.tmp``)."""
    return name.startswith(".") and name.endswith(_TEMP_SUFFIX)


def temp_name(base: str) -> str:
    """A fresh hidden temp name beside the file ``base`` (its atomic write goes through it)."""
    return f".{base}.{uuid.uuid4().hex}{_TEMP_SUFFIX}"


def _is_plain(name: str, kind: str = "") -> bool:
    return bool((TAG_NAME if kind == "tag" else _NAME).fullmatch(name)) and set(name) != {"."}


def branch_of_dir(name: str) -> str | None:
    """The branch of a directory of ``branch/`` (``branch-<name>``), None for another name."""
    parsed = parse(name)
    return parsed.key if parsed is not None and parsed.kind == "branch" else None


def _is_kind(kind: str, name: object) -> bool:
    if not is_file_name(name):
        return False
    assert isinstance(name, str)
    if kind == "data":
        return is_data_file_name(name)
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
    :class:`~minipaimon_core.schema.partition.PartitionSpec` builds them), else CorruptMetadataError."""
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
    """Owner of every file name and path of one table rooted at ``root``, seen from one of
    its branches (``branch``; its metadata under :attr:`home`)."""

    def __init__(self, root: str, branch: str = MAIN_BRANCH) -> None:
        self.root = root.rstrip("/") or "/"
        self.branch = MAIN_BRANCH if branch == MAIN_BRANCH else check_branch_name(branch)
        self.home = self.root if self.is_main else self.branch_dir(self.branch)

    @property
    def is_main(self) -> bool:
        return self.branch == MAIN_BRANCH

    def on_branch(self, branch: str) -> TableLayout:
        """The same table seen from ``branch``. Raises InvalidArgumentError (bad name)."""
        return TableLayout(self.root, branch)

    @property
    def where(self) -> str:  # the table (and branch) for messages
        return self.root if self.is_main else f"{self.root} (branch {self.branch!r})"

    def _join(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    def _meta(self, *parts: str) -> str:
        return "/".join((self.home, *parts))

    # branches
    @property
    def branches_dir(self) -> str:
        return self._join("branch")

    def branch_dir(self, branch: str) -> str:
        """The metadata root of ``branch`` (``branch/branch-<name>``)."""
        return self._join("branch", f"{BRANCH_DIR_PREFIX}{check_branch_name(branch)}")

    # schema
    @property
    def schema_dir(self) -> str:
        return self._meta("schema")

    def schema_path(self, schema_id: int) -> str:
        return self._meta("schema", f"schema-{schema_id}")

    # snapshots
    @property
    def snapshot_dir(self) -> str:
        return self._meta("snapshot")

    def snapshot_path(self, snapshot_id: int) -> str:
        return self._meta("snapshot", f"snapshot-{snapshot_id}")

    @property
    def latest_hint(self) -> str:
        return self._meta("snapshot", "LATEST")

    @property
    def earliest_hint(self) -> str:
        return self._meta("snapshot", "EARLIEST")

    def expired_marker_path(self, snapshot_id: int) -> str:
        """The hidden marker of an expired snapshot id (see snapshot_manager)."""
        return self._meta("snapshot", f".snapshot-{snapshot_id}{_EXPIRED_SUFFIX}")

    @property
    def committed_dir(self) -> str:
        """Hidden directory of the records of expired commits of replayable commit users
        (minipaimon_core.commit.commit_dedupe)."""
        return self._meta("snapshot", ".committed")

    def committed_record_path(self, user: str, identifier: int, kind: str) -> str:
        """The record that ``user`` committed ``identifier`` (a commit of ``kind``)."""
        return self.committed_file(f"{user_key(user)}-{identifier}-{kind}")

    def committed_file(self, name: str) -> str:
        """Path of the record file ``name`` (a name listed in :attr:`committed_dir`)."""
        return self._meta("snapshot", ".committed", name)

    @staticmethod
    def committed_record_of(name: str) -> tuple[str, int, str] | None:
        """(user key, identifier, kind) of a record's file name, None for any other name."""
        m = _RECORD.fullmatch(name)
        return (m.group(1), int(m.group(2)), m.group(3)) if m is not None else None

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

    # long-lived changelogs (a snapshot's JSON kept after the snapshot expired)
    @property
    def changelog_dir(self) -> str:
        return self._meta("changelog")

    def changelog_path(self, snapshot_id: int) -> str:
        return self._meta("changelog", f"changelog-{snapshot_id}")

    @property
    def changelog_latest_hint(self) -> str:
        return self._meta("changelog", "LATEST")

    @property
    def changelog_earliest_hint(self) -> str:
        return self._meta("changelog", "EARLIEST")

    @staticmethod
    def changelog_id_of(name: str) -> int | None:
        """The id of a ``changelog-<id>`` file name of ``changelog/``, or None."""
        parsed = parse(name)
        return int(parsed.key) if parsed is not None and parsed.kind == "long-lived-changelog" else None

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
        return self._meta("tag")

    def tag_path(self, name: str) -> str:
        return self._meta("tag", f"tag-{check_name('tag', name)}")

    @property
    def consumer_dir(self) -> str:
        return self._meta("consumer")

    def consumer_path(self, consumer_id: str) -> str:
        return self._meta("consumer", f"consumer-{check_name('consumer', consumer_id)}")

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
            return self._join(partition_path, bucket_dir_name(bucket))
        return self._join(bucket_dir_name(bucket))

    def data_file_path(self, partition_path: str, bucket: int, file_name: str) -> str:
        return f"{self.bucket_dir(partition_path, bucket)}/{check_path_name(file_name)}"

    @staticmethod
    def index_file_of(data_file_name: str) -> str:
        """The name of a data file's separate file index (Paimon: ``<data file>.index``)."""
        return f"{data_file_name}.index"

    @staticmethod
    def new_data_file_name(prefix: str = "data", extension: str = "parquet") -> str:
        """A new data (``prefix`` ``data``) or changelog file name in a format's extension."""
        return f"{prefix}-{uuid.uuid4()}-0.{extension}"
