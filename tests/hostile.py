"""Forging hostile metadata for tests: what a broken or hostile writer (or a damaged copy)
leaves in a table, written beside minipaimon's own files without its checks.

Each helper rewrites one snapshot of a table in place (its snapshot file replaced, new
manifests and lists beside the old ones, no digests: as another writer's snapshot), so the
table's history stays contiguous and only the named metadata holds the hostile name.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import msgspec
import xxhash
import zstandard

import minipaimon_core as mp
from minipaimon_core.format import avro, index_manifest, legacy, manifest_file, manifest_list
from minipaimon_core.format import snapshot as snapshot_codec
from minipaimon_core.format.manifest_file import ManifestEntry
from minipaimon_core.format.manifest_list import ManifestFileMeta
from minipaimon_core.format.snapshot import Snapshot


def replace_snapshot(t: mp.Table, snapshot_id: int, **changes: Any) -> Snapshot:
    """Rewrite snapshot ``snapshot_id`` with ``changes`` (digests dropped); the new one."""
    snap = t.snapshot_manager.get(snapshot_id)
    new = msgspec.structs.replace(snap, minipaimonDigests=None, baseManifestListSize=None,
                                  deltaManifestListSize=None, changelogManifestListSize=None, **changes)
    t.io.replace(t.layout.snapshot_path(snapshot_id), snapshot_codec.encode(new))
    return new


def rewrite_json(t: mp.Table, path: str, checksum: bool = True, **changes: Any) -> None:
    """Rewrite the JSON file ``path`` with ``changes``, checksummed as minipaimon writes
    (``checksum``) or without (as another writer's file)."""
    doc = msgspec.json.decode(t.io.read_bytes(path))
    doc.pop("checksum", None)
    doc.update(changes)
    body = msgspec.json.encode(doc)
    if checksum:
        body = body[:-1] + b',"checksum":"' + xxhash.xxh64_hexdigest(body).encode() + b'"}'
    t.io.replace(path, body)


def write_manifest(t: mp.Table, entries: list[ManifestEntry], records: bool = False) -> str:
    """A manifest of ``entries`` (``records``: Avro records only, as Paimon's engines write
    it; else with minipaimon's payload); its name."""
    types = t.manifests.row_types()
    if records:
        data = avro.write_container(manifest_file.ENTRY_SCHEMA,
                                    [manifest_file._entry_record(e, types) for e in entries])
    else:
        data = manifest_file.encode(entries, types)
    name = t.layout.new_manifest_name()
    t.io.write_bytes(t.layout.manifest_path(name), data)
    return name


def write_list(t: mp.Table, metas: list[ManifestFileMeta]) -> str:
    schema = t.table_schema
    data = manifest_list.encode(metas, schema.partitionKeys, t.manifests.row_types().partition)
    name = t.layout.new_manifest_list_name()
    t.io.write_bytes(t.layout.manifest_path(name), data)
    return name


def rename_files(t: mp.Table, snapshot_id: int, rename: Callable[[str], str], records: bool = False) -> None:
    """Rewrite the delta manifests of snapshot ``snapshot_id`` with every data file name
    ``n`` replaced by ``rename(n)``."""
    rewrite_files(t, snapshot_id, lambda f: msgspec.structs.replace(f, fileName=rename(f.fileName)), records)


def rewrite_files(t: mp.Table, snapshot_id: int, change: Callable[[Any], Any], records: bool = False) -> None:
    """Rewrite the delta manifests of snapshot ``snapshot_id`` with every data file's
    metadata ``f`` (a DataFileMeta) replaced by ``change(f)``."""
    snap = t.snapshot_manager.get(snapshot_id)
    metas = []
    for m in t.manifests.snapshot_list(snap, "delta"):
        entries = [msgspec.structs.replace(e, file=change(e.file)) for e in t.manifests.entries_of([m])]
        name = write_manifest(t, entries, records)
        size = t.io.file_size(t.layout.manifest_path(name))
        metas.append(msgspec.structs.replace(m, fileName=name, fileSize=size, fileDigest=None))
    replace_snapshot(t, snapshot_id, deltaManifestList=write_list(t, metas))


def rename_manifest(t: mp.Table, snapshot_id: int, name: str) -> None:
    """Rewrite snapshot ``snapshot_id`` whose delta list names its manifest ``name``."""
    snap = t.snapshot_manager.get(snapshot_id)
    metas = [msgspec.structs.replace(m, fileName=name, fileDigest=None)
             for m in t.manifests.snapshot_list(snap, "delta")]
    replace_snapshot(t, snapshot_id, deltaManifestList=write_list(t, metas))


def rename_index_file(t: mp.Table, snapshot_id: int, name: str) -> None:
    """Rewrite snapshot ``snapshot_id`` whose index manifest names its index file ``name``."""
    snap = t.snapshot_manager.get(snapshot_id)
    entries = [msgspec.structs.replace(e, fileName=name, digest=None) for e in t.vectors.entries(snap)]
    data = index_manifest.encode(entries, t.manifests.row_types().partition)
    manifest = t.layout.new_index_manifest_name()
    t.io.write_bytes(t.layout.manifest_path(manifest), data)
    replace_snapshot(t, snapshot_id, indexManifest=manifest)


# -- minipaimon's earlier format ------------------------------------------------------------

def legacy_binary(structs: Any) -> bytes:
    """An ``MPM`` file of ``structs`` (format/legacy.py, version 1)."""
    payload = zstandard.ZstdCompressor().compress(msgspec.msgpack.encode(structs))
    return struct.pack("<3sBQ", legacy.MAGIC, 1, xxhash.xxh64_intdigest(payload)) + payload


def legacy_rename_files(t: mp.Table, rename: Callable[[str], str]) -> None:
    """Rewrite the latest snapshot of a table of the earlier format with every data file
    name ``n`` replaced by ``rename(n)`` (in every manifest of its base and delta lists)."""
    snap = t.latest_snapshot()
    assert snap is not None
    lists = {}
    for member in ("baseManifestList", "deltaManifestList"):
        metas = []
        for m in t.manifests.read_list(getattr(snap, member)):
            entries = [msgspec.structs.replace(e, file=msgspec.structs.replace(e.file, fileName=rename(e.file.fileName)))
                       for e in t.manifests.read_entries(m.fileName)]
            name = t.layout.new_manifest_name()
            data = legacy_binary(entries)
            t.io.write_bytes(t.layout.manifest_path(name), data)
            metas.append(msgspec.structs.replace(m, fileName=name, fileSize=len(data), fileDigest=None))
        name = t.layout.new_manifest_list_name()
        t.io.write_bytes(t.layout.manifest_path(name), legacy_binary(metas))
        lists[member] = name
    rewrite_json(t, t.layout.snapshot_path(snap.id), **lists)
