"""Long-lived changelog (``changelog.num-retained.*``, ``changelog.time-retained``): snapshots
expire into ``changelog/changelog-<id>``, whose changes streams and ``incremental-between``
still read; changelog expiration then deletes them with their files, by Paimon 0.9's rules
(``ExpireSnapshotsImpl``, ``ExpireChangelogImpl``). Java writing and reading such tables:
tests/interop/test_long_lived_changelog.py."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import SnapshotExpiredError
from minipaimon_core.metadata.changelog_manager import ChangelogManager
from minipaimon_core.stream.stream import StreamOffset, StreamScanner, changes_between

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
RETAIN = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
          "changelog.num-retained.max": "5"}


def batch(i: int) -> pa.Table:
    return pa.table({"id": [i, i + 1, 100], "v": [f"w{i}", f"w{i}", f"last{i}"]}, schema=SCHEMA)


def rows(t: pa.Table) -> list[Any]:
    return sorted(map(repr, t.to_pylist()))


def changelog_ids(t: mp.Table) -> list[int]:
    return ChangelogManager(t.io, t.layout).ids()


def orphans(path: str) -> list[str]:
    """Orphan cleanup over every file (all aged first: no wait for a safe age)."""
    for d, _, names in os.walk(path):
        for n in names:
            os.utime(os.path.join(d, n), (1, 1))
    return mp.open_table(path).remove_orphan_files(older_than_ms=int(time.time() * 1000)).files


def data_names(path: str) -> set[str]:
    return {n for _, _, names in os.walk(path) for n in names if n.endswith(".parquet")}


def reference(tmp_path: Path, options: dict[str, str], writes: int, pk: bool = True) -> mp.Table:
    """The same history with nothing expired: what the changes must read."""
    t = mp.create_table(str(tmp_path / "reference"), SCHEMA, primary_key=["id"] if pk else None,
                        options={**options, "snapshot.num-retained.min": "100",
                                 "snapshot.num-retained.max": "100"})
    for i in range(writes):
        t.write(batch(i))
    return t


@pytest.mark.parametrize("producer", ["input", "none"])
def test_changes_of_expired_snapshots_are_read_from_their_changelogs(tmp_path: Path, producer: str) -> None:
    options = {"bucket": "1", "changelog-producer": producer}
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={**options, **RETAIN})
    for i in range(8):
        t.write(batch(i))
        if i == 4:
            t.compact(full=True)  # a COMPACT snapshot deletes the APPEND files so far
    t = mp.open_table(t.path)
    ids = changelog_ids(t)
    snaps = [s.id for s in t.snapshots()]
    assert snaps == [8, 9] and ids == [5, 6, 7]  # latest 9, changelog.num-retained.max 5
    ref = reference(tmp_path, options, 0)
    for i in range(8):
        ref.write(batch(i))
        if i == 4:
            ref.compact(full=True)
    for start in (4, 5, 6):
        assert rows(changes_between(t, start, 9)) == rows(changes_between(ref, start, 9)), start
    with pytest.raises(SnapshotExpiredError):
        changes_between(t, 3, 9)  # changelog 4 expired
    if producer == "input":  # incremental-between-scan-mode=changelog reads the changelog files
        scanner = StreamScanner(t, {"read.changelog": "true"}, changes="changelog")
        ref_scanner = StreamScanner(ref, {"read.changelog": "true"}, changes="changelog")
        got = [b for s in scanner.plan(StreamOffset(4), StreamOffset(9)) for b in scanner.read(s)]
        want = [b for s in ref_scanner.plan(StreamOffset(4), StreamOffset(9)) for b in ref_scanner.read(s)]
        assert rows(pa.Table.from_batches(got)) == rows(pa.Table.from_batches(want))
    # a stream starting at an expired snapshot whose changelog is kept
    scanner = StreamScanner(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "5", "read.changelog": "true"})
    start = scanner.initial_offset()
    assert start == StreamOffset(4)
    assert rows(pa.Table.from_batches([b for s in scanner.plan(start, StreamOffset(9)) for b in scanner.read(s)])) \
        == rows(changes_between(ref, 4, 9))
    assert rows(t.to_arrow()) == rows(ref.to_arrow())


@pytest.mark.parametrize("producer", ["input", "none"])
def test_changelog_expiration_deletes_their_files_and_nothing_in_use(tmp_path: Path, producer: str) -> None:
    options = {"bucket": "1", "changelog-producer": producer}
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={**options, **RETAIN})
    for i in range(6):
        t.write(batch(i))
        if i == 2:
            t.compact(full=True)
    t = mp.open_table(t.path)
    before = data_names(t.path)
    assert changelog_ids(t)
    # orphan cleanup sees what the changelogs use: it deletes nothing
    assert orphans(t.path) == []
    assert data_names(t.path) == before
    t.set_options({"changelog.num-retained.max": "2"})  # snapshots and changelogs: 2 now
    t = mp.open_table(t.path)
    kept = changelog_ids(t)
    result = t.expire_snapshots()
    # Paimon keeps the latest changelog (changelog expiration needs an end)
    assert changelog_ids(t) == kept[-1:] and result.changelogs == kept[:-1]
    # what is left is exactly what the two retained snapshots use: nothing is an orphan
    assert orphans(t.path) == []
    ref = reference(tmp_path, options, 6)
    assert rows(t.to_arrow()) == rows(mp.open_table(ref.path).to_arrow())
    latest = t.latest_snapshot()
    assert latest is not None
    assert rows(changes_between(t, latest.id - 1, latest.id)) == \
        rows(changes_between(ref, ref.latest_snapshot().id - 1, ref.latest_snapshot().id))  # type: ignore[union-attr]
    assert len(data_names(t.path)) < len(before)


def test_a_table_without_decoupled_retention_writes_no_changelog_files(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "changelog-producer": "input",
                                 "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    for i in range(4):
        t.write(batch(i))
    assert changelog_ids(t) == [] and not (tmp_path / "t" / "changelog").exists()


def test_changelog_retention_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(mp.UnsupportedOptionError, match="changelog.num-retained.max"):
        mp.create_table(str(tmp_path / "t"), SCHEMA, options={"changelog.num-retained.min": "5",
                                                             "changelog.num-retained.max": "2"})


def all_files(path: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(path) for n in names}


@pytest.mark.parametrize("producer", ["input", "none"])
@pytest.mark.parametrize("snapshots_too", [False, True])
def test_a_dry_run_reports_what_expiration_removes_changelogs_included(tmp_path: Path, snapshots_too: bool,
                                                                       producer: str) -> None:
    """The dry run counts the changelogs the same run's snapshot expiration would write
    (here the latest changelog, which stays, is one of them)."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "changelog-producer": producer, **RETAIN})
    for i in range(7):
        t.write(batch(i))
        if i == 2:
            t.compact(full=True)
    t.set_options({"changelog.num-retained.max": "2",
                   **({"snapshot.num-retained.max": "1"} if snapshots_too else {})})
    t = mp.open_table(t.path)
    before, kept = all_files(t.path), changelog_ids(t)
    dry = t.expire_snapshots(dry_run=True)
    assert dry.dry_run and all_files(t.path) == before and changelog_ids(t) == kept  # nothing changed
    result = t.expire_snapshots()
    assert result.changelogs and bool(result.snapshots) == snapshots_too
    assert (dry.snapshots, dry.changelogs) == (result.snapshots, result.changelogs)
    assert sorted(dry.files) == sorted(result.files)
    assert before - all_files(t.path) >= set(result.files)
