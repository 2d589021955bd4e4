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
  user): expiration records its last identifier (:mod:`minipaimon_core.commit_dedupe`);
* ``checksum``: of the file itself (:mod:`.json_file`).
"""

from __future__ import annotations

import msgspec

from ..kinds import CommitKind
from . import json_file

VERSION = 3
APPEND, COMPACT, OVERWRITE = CommitKind  # the values of Snapshot.commitKind
ANALYZE = "ANALYZE"  # Paimon's statistics-only commit: no file changes


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
    """Raises CorruptMetadataError for a damaged file or one that is not a snapshot."""
    return json_file.decode(data, Snapshot, path)


__all__ = ["ANALYZE", "APPEND", "COMPACT", "OVERWRITE", "Digests", "Snapshot", "VERSION", "decode", "encode"]
