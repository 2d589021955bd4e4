"""The table API a deltalake or pyiceberg user expects (issue 30): to_arrow / to_pandas,
count(), history(), a readable repr, dry runs of the maintenance that removes files, times
as ages or datetimes, and Paimon's option names for the keys."""

from __future__ import annotations

import datetime
import os
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format.manifest_file import ADD
from minipaimon_core.metadata.manifest_io import live_files
from tests.helpers import SCHEMA, rows, sorted_ids


def listing(root: str) -> dict[str, int]:
    """Every file under ``root`` with its size."""
    return {os.path.join(d, n): os.path.getsize(os.path.join(d, n))
            for d, _, names in os.walk(root) for n in names}


def hide_data_files(t: mp.Table) -> None:
    """Move every data file away: what is then still counted comes from metadata."""
    for e in live_files(t.manifests, t.latest_snapshot()):
        spec = t.context().partition_spec()
        path = t.layout.data_file_path(spec.path(list(e.partition)), e.bucket, e.file.fileName)
        os.rename(path, path + ".away")


def test_to_arrow_and_to_pandas(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]
    assert sorted(t.to_pandas()["id"].tolist()) == [0, 1, 2]


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["append", "append-dv"])
def test_count_of_an_append_table_comes_from_metadata(tmp_path: Path, options: dict[str, str]) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"], options=options)
    t.write(rows(0, 10, "d1"))
    t.write(rows(10, 5, "d2"))
    t.delete([("id", "<", 3)])
    assert t.count() == len(t.to_arrow()) == 12
    hide_data_files(t)
    assert t.count() == 12  # not a file read


@pytest.mark.parametrize("options", [{"bucket": "2"}, {"bucket": "2", "deletion-vectors.enabled": "true"},
                                     {"bucket": "1", "merge-engine": "partial-update",
                                      "partial-update.remove-record-on-delete": "true"}],
                         ids=["pk", "pk-dv", "partial-update"])
def test_count_of_a_primary_key_table_is_the_rows_a_read_returns(tmp_path: Path,
                                                                  options: dict[str, str]) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options=options)
    t.write(rows(0, 10))
    t.write(rows(5, 10))  # 5 keys updated, 5 new
    t.write(pa.table({"id": [1, 2], "k": [None] * 2, "v": [None] * 2, "dt": ["d1"] * 2,
                      "_row_kind": ["-D", "-D"]}, schema=SCHEMA.append(pa.field("_row_kind", pa.string()))))
    assert t.count() == len(t.to_arrow()) == 13
    t.compact()
    assert t.count() == 13
    if options.get("deletion-vectors.enabled"):  # exact retraction counts (scan.retraction_counts_trusted)
        hide_data_files(t)  # one sorted run per bucket, no retraction: from metadata
        assert t.count() == 13


def test_count_reads_row_kinds_where_a_zero_retraction_count_proves_nothing(tmp_path: Path) -> None:
    """pypaimon 2.1 records ``deleteRowCount`` 0 for files holding -D rows: without deletion
    vectors count() counts the +I/+U rows of a file read without a merge, as a read returns
    them (it counted the -D rows from the manifest before)."""
    import msgspec

    from tests import hostile

    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2, 3], "k": [None] * 3, "v": [None] * 3, "dt": ["d1"] * 3,
                      "_row_kind": ["-D", "+I", "-D"]}, schema=SCHEMA.append(pa.field("_row_kind", pa.string()))))
    hostile.rewrite_files(t, 1, lambda f: msgspec.structs.replace(f, deleteRowCount=0))
    t = mp.open_table(t.path)
    assert t.scan().plan()[0].raw_convertible
    assert t.count() == len(t.to_arrow()) == 1


def test_history_lists_what_each_commit_did(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(rows(0, 4, "d1"))
    t.new_commit("job").commit(_messages(t, rows(4, 2, "d2")), commit_identifier=9)
    t.delete([("id", "=", 0)])  # copy-on-write: one file of 4 rows replaced by one of 3
    t.restore(1)
    h = t.history()
    assert h.column("snapshot_id").to_pylist() == [4, 3, 2, 1]
    assert h.column("commit_kind").to_pylist() == ["OVERWRITE", "OVERWRITE", "APPEND", "APPEND"]
    assert h.column("commit_user").to_pylist()[2] == "job"
    assert h.column("commit_identifier").to_pylist()[2] == 9
    assert h.column("records_added").to_pylist() == [4, 3, 2, 4]
    assert h.column("records_removed").to_pylist() == [5, 4, 0, 0]
    assert h.column("files_added").to_pylist() == [1, 1, 1, 1]
    assert h.column("restored_from").to_pylist() == [1, None, None, None]
    committed = h.column("committed_at").to_pylist()[0]
    assert committed.tzinfo is not None and abs(committed - datetime.datetime.now(datetime.timezone.utc)).seconds < 600
    assert t.history(limit=1).num_rows == 1


def _messages(t: mp.Table, data: pa.Table) -> list[mp.CommitMessage]:
    w = t.new_write("job")
    w.write(data)
    return w.prepare_commit()


def test_repr_says_what_the_table_is(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "4"})
    assert "no snapshot yet" in repr(t)
    t.write(rows(0, 2))
    text = repr(t)
    assert text.startswith(f"Table({t.path!r})")
    assert "primary key (id, dt), bucket 4, partitioned by (dt)" in text
    assert "columns: id int64 not null, k string, v double, dt string" in text
    assert "latest snapshot 1 (APPEND, " in text
    assert "append table" in repr(mp.create_table(str(tmp_path / "a"), SCHEMA))


def test_rollback_dry_run_lists_what_would_go_and_changes_nothing(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(4):
        t.write(rows(i * 2, 2))
    t.create_tag("late", 4)
    before = listing(t.path)
    dry = t.rollback_to(2, dry_run=True)
    assert listing(t.path) == before
    assert dry.dry_run and dry.snapshots == [4, 3] and dry.tags == ["late"] and dry.files
    real = t.rollback_to(2)
    assert (real.snapshots, real.tags, real.files) == (dry.snapshots, dry.tags, dry.files)
    assert all(p not in listing(t.path) for p in dry.files)


def test_expire_dry_run_lists_what_would_go_and_changes_nothing(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"write-only": "true"})
    for i in range(5):
        t.write(rows(i, 1))
    t.compact()
    before = listing(t.path)
    dry = t.expire_snapshots(retain_max=1, dry_run=True)
    assert listing(t.path) == before
    assert dry.dry_run and dry.snapshots == [1, 2, 3, 4, 5] and dry.data_files and dry.manifests
    real = t.expire_snapshots(retain_max=1)
    assert (real.snapshots, real.files) == (dry.snapshots, dry.files) and not real.dry_run
    assert all(p not in listing(t.path) for p in dry.files)


def test_times_are_ages_or_aware_datetimes(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"write-only": "true"})
    for i in range(3):
        t.write(rows(i, 1))
    assert t.expire_snapshots(retain_min=1, older_than="1d").snapshots == []  # none a day old
    assert t.expire_snapshots(retain_min=1, older_than=datetime.timedelta(days=1)).snapshots == []
    with pytest.raises(mp.InvalidArgumentError, match="naive datetime"):
        t.expire_snapshots(older_than=datetime.datetime(2030, 1, 1))
    with pytest.raises(mp.InvalidArgumentError, match="no unit"):
        t.expire_snapshots(older_than="1700000000000")
    for zero in ({"older_than_ms": 0}, {"older_than": 0}):
        with pytest.raises(mp.InvalidArgumentError, match="nothing is older than 1970.*'0s'"):
            t.expire_snapshots(retain_min=1, **zero)  # type: ignore[arg-type]
        with pytest.raises(mp.InvalidArgumentError, match="nothing is older than 1970"):
            t.remove_orphan_files(**zero)  # type: ignore[arg-type]
    assert len(t.snapshots()) == 3
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=1)
    assert t.expire_snapshots(retain_min=1, older_than=future).snapshots == [1, 2]
    with pytest.warns(DeprecationWarning, match="older_than_ms is deprecated"):
        assert t.remove_orphan_files(older_than_ms=1_000_000_000_000, dry_run=True).files == []  # 2001
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert t.remove_orphan_files(older_than="0s", dry_run=True).files == []


def test_paimon_key_options_define_the_keys(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA,
                        options={"primary-key": "id, dt", "partition": "dt", "bucket": "2"})
    assert t.primary_keys() == ["id", "dt"] and t.partition_keys() == ["dt"]
    assert "primary-key" not in t.options() and "partition" not in t.options()  # as Paimon stores them
    same = mp.create_table(str(tmp_path / "same"), SCHEMA, primary_key=["id"], options={"primary-key": "id"})
    assert same.primary_keys() == ["id"]
    with pytest.raises(mp.InvalidArgumentError, match="disagree"):
        mp.create_table(str(tmp_path / "bad"), SCHEMA, primary_key=["id"], options={"primary-key": "k"})
    with pytest.raises(mp.InvalidArgumentError, match="must list column names"):
        mp.create_table(str(tmp_path / "bad"), SCHEMA, options={"partition": " , "})
    assert not (tmp_path / "bad").exists()


def test_history_counts_match_the_delta_manifests(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(0, 3))
    t.write(rows(1, 3))
    t.compact()
    h = {r["snapshot_id"]: r for r in t.history().to_pylist()}
    for s in t.snapshots():
        entries = t.manifests.delta_entries(s)
        assert h[s.id]["records_added"] == sum(e.file.rowCount for e in entries if e.kind == ADD)
        assert h[s.id]["total_records"] == s.totalRecordCount
    assert h[3]["commit_kind"] == "COMPACT" and h[3]["records_removed"] == 6 and h[3]["records_added"] == 4


def test_scan_takes_paimons_time_travel_options(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 1))
    t.write(rows(1, 1))
    t.create_tag("first", 1)
    assert sorted_ids(t.scan(options={"scan.snapshot-id": "1"}).to_arrow()) == [0]
    assert sorted_ids(t.scan(options={"scan.tag-name": "first"}).to_arrow()) == [0]
    at = t.snapshot(1).timeMillis
    assert sorted_ids(t.scan(options={"scan.timestamp-millis": str(at)}).to_arrow()) == [0]
    with pytest.raises(mp.InvalidArgumentError, match="not both"):
        t.scan(snapshot_id=2, options={"scan.snapshot-id": "1"})
    with pytest.raises(mp.InvalidArgumentError, match="must be an integer"):
        t.scan(options={"scan.snapshot-id": "one"})


def test_time_travel_reads_the_snapshots_own_schema(tmp_path: Path) -> None:
    """Issue 38 item 6: after a rename and an added column, a read of snapshot 1 by id, tag
    or time gives snapshot 1's columns ['id', 'v'] (as Paimon and the Spark source do; was
    ['id', 'v2', 'x']); filters and columns name them; the splits of such a scan read in
    that schema through the table; other reads (latest, incremental, streams, diffs) stay in
    the latest schema, and audit_log at a snapshot follows the scan."""
    kv = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), kv, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=kv))
    t.create_tag("t1", 1)
    stream = t.stream()
    assert sum(b.data.num_rows for b in stream) == 2
    t.rename_column("v", "v2")
    t.add_column("x", pa.int32())
    t.write(pa.table({"id": [3], "v2": ["c"], "x": pa.array([7], pa.int32())}))
    at = t.snapshot(1).timeMillis
    for travel in ({"snapshot_id": 1}, {"tag": "t1"}, {"timestamp_ms": at},
                   {"options": {"scan.snapshot-id": "1"}}):
        got = t.scan(**travel).to_arrow()  # type: ignore[arg-type]
        assert got.column_names == ["id", "v"], travel
        assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert t.as_of(tag="t1").schema().names == ["id", "v"] and t.as_of().schema().names == ["id", "v2", "x"]
    assert t.scan(snapshot_id=1, filter=[("v", "=", "b")], columns=["v"]).to_arrow().to_pylist() == [{"v": "b"}]
    with pytest.raises(mp.InvalidArgumentError, match="'x'"):
        t.scan(snapshot_id=1, columns=["x"])
    splits = t.scan(snapshot_id=1).plan()
    assert [r for s in splits for b in t.read_split(s) for r in b.to_pylist()] == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert t.system_table("audit_log", snapshot_id=1).column_names == ["rowkind", "id", "v"]
    # not time travel: the latest schema
    assert t.to_arrow().column_names == ["id", "v2", "x"]
    assert t.system_table("audit_log").column_names == ["rowkind", "id", "v2", "x"]
    assert t.scan(incremental_between=(1, 2)).to_arrow().column_names == ["id", "v2", "x"]
    assert t.diff(1, 2).column_names == ["id", "v2", "x", "_row_kind"]
    assert [b.data.column_names for b in stream] == [["id", "v2", "x"]]
    # the latest snapshot by id is time travel too: its schema is the latest here
    assert t.scan(snapshot_id=2).to_arrow().column_names == ["id", "v2", "x"]
