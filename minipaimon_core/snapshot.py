"""Snapshot files (``snapshot/snapshot-<id>``): the commit point of every change.

Field names follow Apache Paimon. ``nextSequenceNumber`` is minipaimon's own: the first
sequence number the next commit hands out (see docs/format.md, "Sequencing").
"""

from __future__ import annotations

import msgspec

from . import codec
from .kinds import CommitKind

APPEND, COMPACT, OVERWRITE = CommitKind  # the values of Snapshot.commitKind

# What expiration leaves in ``snapshot-<id>`` instead of deleting it: the id stays taken, so
# a commit that read snapshot id-1 before it expired can no longer create this id again
# (docs/format.md, "Expiration and in-flight commits"). Readers treat it as absent.
TOMBSTONE = b"expired\n"


class Snapshot(msgspec.Struct, frozen=True):
    version: int
    id: int
    schemaId: int
    baseManifestList: str
    deltaManifestList: str
    commitUser: str
    commitIdentifier: int
    commitKind: str
    timeMillis: int
    totalRecordCount: int
    deltaRecordCount: int
    nextSequenceNumber: int = 0
    changelogManifestList: str | None = None
    changelogRecordCount: int | None = None
    watermark: int | None = None
    properties: dict[str, str] | None = None
    # The snapshot's deletion vectors: an index manifest listing one index file per bucket
    # that has any (tables with 'deletion-vectors.enabled'); None when there are none.
    indexManifest: str | None = None
    # xxhash64 (hex) of the index manifest's bytes, checked when it is read (minipaimon's own;
    # absent in snapshots written before it existed)
    indexManifestDigest: str | None = None

    # snake_case aliases for Python users
    @property
    def commit_kind(self) -> str:
        return self.commitKind

    @property
    def schema_id(self) -> int:
        return self.schemaId


def encode(snapshot: Snapshot) -> bytes:
    return codec.encode_json(snapshot)


def decode(data: bytes, path: str) -> Snapshot:
    return codec.decode_json(data, Snapshot, path)
