"""Snapshot files (``snapshot/snapshot-<id>``, and tags): Paimon's ``Snapshot`` JSON.

Members in Paimon's order (version 3): id, schema id, the base / delta / changelog manifest
lists with their sizes, the index manifest, commit user / identifier / kind, time, record
counts, watermark, statistics, properties; absent optional members are left out, as Java
writes them. minipaimon adds members Paimon's readers ignore (see docs/format.md):

* ``nextSequenceNumber``: the sequence number the next write starts from (above every
  row's ``_SEQUENCE_NUMBER`` in the table; a snapshot another writer made has none and it
  is computed from the files);
* ``minipaimonDigests``: xxhash64 (hex) of the manifest lists and the index manifest, each
  checked when read (another valid file under the name is refused);
* ``minipaimonReplayable``: true when the commit user may replay its identifiers (a fixed
  user): expiration records its last identifier (:mod:`minipaimon_core.commit.commit_dedupe`);
* ``checksum``: of the file itself (:mod:`.json_file`).

A decoded snapshot (or tag) is checked (:func:`checked`): Paimon's versions and commit kinds,
plain ``manifest-list-*`` / ``index-manifest-*`` names, no negative count or size, and a
``nextSequenceNumber`` only from a file minipaimon checksummed (another writer's is not
trusted: the next number is then computed from the files, as for Paimon's snapshots).
"""

from __future__ import annotations

import msgspec

from ..errors import CorruptMetadataError, UnsupportedFeatureError
from . import json_file
from .data_file_meta import MAX_SEQUENCE
from .kinds import CommitKind
from .layout import check_file_name

VERSION = 3
APPEND, COMPACT, OVERWRITE = CommitKind  # the values of Snapshot.commitKind
ANALYZE = "ANALYZE"  # Paimon's statistics-only commit: no file changes
COMMIT_KINDS = (APPEND, COMPACT, OVERWRITE, ANALYZE)  # Paimon's CommitKind


class Digests(msgspec.Struct, frozen=True, omit_defaults=True):
    base: str | None = None
    delta: str | None = None
    changelog: str | None = None
    index: str | None = None


class Snapshot(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    version: int  # always written (pypaimon requires it): VERSION
    id: int
    schemaId: int
    baseManifestList: str
    baseManifestListSize: int | None = None
    deltaManifestList: str
    deltaManifestListSize: int | None = None
    changelogManifestList: str | None = None
    changelogManifestListSize: int | None = None
    indexManifest: str | None = None
    commitUser: str
    commitIdentifier: int
    commitKind: str
    timeMillis: int
    totalRecordCount: int
    deltaRecordCount: int
    changelogRecordCount: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    nextRowId: int | None = None
    nextSequenceNumber: int | None = None
    minipaimonDigests: Digests | None = None
    minipaimonReplayable: bool | None = None

    # snake_case aliases for Python users
    @property
    def commit_kind(self) -> str:
        return self.commitKind

    @property
    def schema_id(self) -> int:
        return self.schemaId

    @property
    def index_manifest_digest(self) -> str | None:
        return self.minipaimonDigests.index if self.minipaimonDigests is not None else None


def encode(snapshot: Snapshot) -> bytes:
    return json_file.encode(snapshot)


def decode(data: bytes, path: str) -> Snapshot:
    """Raises CorruptMetadataError for a damaged file, one that is not a snapshot or holds a
    value out of its range (:func:`checked`), UnsupportedFeatureError for a newer version."""
    snap, checksummed = json_file.decode_checked(data, Snapshot, path)
    if not checksummed and snap.nextSequenceNumber is not None:
        snap = msgspec.structs.replace(snap, nextSequenceNumber=None)  # not ours: not trusted
    return checked(snap, path)


def checked(snap: Snapshot, path: str) -> Snapshot:
    """``snap`` (decoded from ``path``) if its values are in range, else CorruptMetadataError
    naming the member (UnsupportedFeatureError for a version newer than Paimon's 3)."""
    if snap.version > VERSION:
        raise UnsupportedFeatureError(
            f"{path}: snapshot format version {snap.version} is newer than the version {VERSION} "
            "minipaimon reads")
    bad = [(member, value) for member, value, ok in (
        ("version", snap.version, snap.version >= 1),
        ("id", snap.id, snap.id >= 1),
        ("schemaId", snap.schemaId, snap.schemaId >= 0),
        ("commitKind", snap.commitKind, snap.commitKind in COMMIT_KINDS),
        ("totalRecordCount", snap.totalRecordCount, snap.totalRecordCount >= 0),
        ("changelogRecordCount", snap.changelogRecordCount, (snap.changelogRecordCount or 0) >= 0),
        ("nextSequenceNumber", snap.nextSequenceNumber,
         snap.nextSequenceNumber is None or 0 <= snap.nextSequenceNumber <= MAX_SEQUENCE),
        *((member, size, size is None or size >= 0) for member, size in (
            ("baseManifestListSize", snap.baseManifestListSize),
            ("deltaManifestListSize", snap.deltaManifestListSize),
            ("changelogManifestListSize", snap.changelogManifestListSize))),
    ) if not ok]
    if bad:
        member, value = bad[0]
        raise CorruptMetadataError(
            f"{path}: {member} = {value!r} is not a valid value (commit kinds: "
            f"{', '.join(COMMIT_KINDS)}; counts, sizes and ids are not negative): the snapshot "
            "is damaged or was written by a broken writer; restore it or roll the table back")
    check_file_name("manifest-list", snap.baseManifestList, path)
    check_file_name("manifest-list", snap.deltaManifestList, path)
    if snap.changelogManifestList is not None:
        check_file_name("manifest-list", snap.changelogManifestList, path)
    if snap.indexManifest is not None:
        check_file_name("index-manifest", snap.indexManifest, path)
    return snap


__all__ = ["ANALYZE", "APPEND", "COMMIT_KINDS", "COMPACT", "OVERWRITE", "Digests", "Snapshot", "VERSION",
           "checked", "decode", "encode"]
