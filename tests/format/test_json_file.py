"""minipaimon's checksum of JSON metadata holds whatever the file's formatting (issue 32
item 15): a file re-saved by ``json.dumps(indent=2)`` or ``jq`` keeps its checksum member and
is still verified, so an edited value is refused, never read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError
from minipaimon_core.format import json_file
from minipaimon_core.format import snapshot as snapshot_codec
from minipaimon_core.format.snapshot import Snapshot
from tests.helpers import SCHEMA, rows

FIXTURES = Path(__file__).parent.parent / "fixtures"
SNAPSHOT = Snapshot(version=3, id=7, schemaId=1, baseManifestList="manifest-list-a",
                    deltaManifestList="manifest-list-b", commitUser="ü-user", commitIdentifier=3,
                    commitKind="APPEND", timeMillis=1700000000000, totalRecordCount=100,
                    deltaRecordCount=10, nextSequenceNumber=42, properties={"k": "v"})

RESAVES = {
    "indent": lambda doc: json.dumps(doc, indent=2),
    "ascii escapes": lambda doc: json.dumps(doc, indent=4, ensure_ascii=True),
    "raw utf-8, spaces": lambda doc: json.dumps(doc, ensure_ascii=False, separators=(", ", ": ")),
    "sorted keys (jq -S)": lambda doc: json.dumps(doc, indent=2, sort_keys=True),
    "checksum first": lambda doc: json.dumps({"checksum": doc["checksum"], **doc}, indent=1),
}


@pytest.mark.parametrize("resave", list(RESAVES), ids=list(RESAVES))
def test_a_re_saved_file_is_verified(resave: str) -> None:
    doc = json.loads(snapshot_codec.encode(SNAPSHOT))
    text = RESAVES[resave](doc).encode()
    assert json_file.decode_checked(text, Snapshot, "p") == (SNAPSHOT, True)
    edited = RESAVES[resave]({**doc, "schemaId": 0}).encode()
    with pytest.raises(CorruptMetadataError, match="checksum mismatch"):
        snapshot_codec.decode(edited, "p")


def test_files_without_a_checksum_are_read_unchecked_and_not_trusted() -> None:
    doc = json.loads(snapshot_codec.encode(SNAPSHOT))
    del doc["checksum"]
    snap = snapshot_codec.decode(json.dumps(doc, indent=2).encode(), "p")
    assert snap.schemaId == 1 and snap.nextSequenceNumber is None  # another writer's: computed
    doc["commitUser"] = 'a "checksum" in a value'
    assert snapshot_codec.decode(json.dumps(doc).encode(), "p").commitUser == doc["commitUser"]


def test_a_re_saved_snapshot_pointing_at_an_older_schema_is_refused(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    t.add_column("extra", pa.int64())
    t.write(rows(10, 2).append_column("extra", pa.array([7, 8], pa.int64())))
    path = Path(t.layout.snapshot_path(2))
    doc = json.loads(path.read_bytes())
    path.write_text(json.dumps(doc, indent=2))  # re-saved by hand: still verified, still read
    assert mp.open_table(t.path).to_arrow().column("extra").to_pylist() == [None, None, 7, 8]
    path.write_text(json.dumps({**doc, "schemaId": 0}, indent=2))
    with pytest.raises(CorruptMetadataError, match="checksum mismatch"):
        mp.open_table(t.path).to_arrow()


def test_files_of_earlier_versions_stay_verifiable(tmp_path: Path) -> None:
    """The earlier format (nulls written, version 1) and the first Paimon-format files, as
    they are and re-saved with indentation."""
    for name in ("legacy_tables/pk", "legacy_tables/append_text", "v1_decimal_table"):
        path = tmp_path / name
        shutil.copytree(FIXTURES / name, path)
        expected = sorted(map(repr, mp.open_table(str(path)).to_arrow().to_pylist()))
        for f in [*path.glob("snapshot/snapshot-*"), *path.glob("schema/schema-*")]:
            f.write_text(json.dumps(json.loads(f.read_bytes()), indent=2))
        assert sorted(map(repr, mp.open_table(str(path)).to_arrow().to_pylist())) == expected, name
        snap = next(path.glob("snapshot/snapshot-*"))
        doc = json.loads(snap.read_bytes())
        snap.write_text(json.dumps({**doc, "totalRecordCount": doc["totalRecordCount"] + 1}, indent=2))
        with pytest.raises(CorruptMetadataError, match="checksum mismatch"):
            list(mp.open_table(str(path)).snapshots())
