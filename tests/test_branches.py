"""Branches (Paimon's layout ``branch/branch-<name>/{schema,snapshot,tag}``): reading a
branch, creating (from a tag, or empty), listing and deleting branches, time travel and
streams within a branch, names from users and from disk checked."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format.layout import TableLayout
from tests.helpers import SCHEMA, rows, sorted_ids


def _table(path: str, **options: str) -> mp.Table:
    return mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "2", **options})


def _tree(root: str) -> list[str]:
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(out)


def test_a_branch_from_a_tag_reads_the_tags_rows_and_shares_its_files(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 10))
    t.create_tag("t1")
    t.write(rows(10, 5))
    data_before = [f for f in _tree(t.path) if "bucket-" in f or f.startswith("manifest/")]
    br = t.create_branch("br", tag="t1")
    assert t.branches() == ["br"] and br.current_branch == "br" and t.current_branch == "main"
    assert sorted_ids(br.to_arrow()) == list(range(10))
    assert sorted_ids(t.to_arrow()) == list(range(15))
    # Paimon's layout: the tag, its snapshot and the schema under branch/branch-br; the
    # data files and manifests stay shared (none written by creating the branch)
    assert [f for f in _tree(t.path) if f.startswith("branch/")] == [
        "branch/branch-br/schema/schema-0", "branch/branch-br/snapshot/snapshot-1",
        "branch/branch-br/tag/tag-t1"]
    assert [f for f in _tree(t.path) if "bucket-" in f or f.startswith("manifest/")] == data_before
    assert br.tags() == {"t1": 1} and [s.id for s in br.snapshots()] == [1]


def test_writes_go_to_the_branch_only_and_ids_continue_from_its_snapshot(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 10))
    t.create_tag("t1")
    t.write(rows(10, 5))
    t.write(rows(15, 5))
    br = t.create_branch("br", "t1")
    assert br.write(rows(100, 3)) == 2  # the branch's snapshot 2, beside main's 2 and 3
    br.delete([("id", "<", 3)])
    assert sorted_ids(br.to_arrow()) == [*range(3, 10), 100, 101, 102]
    assert sorted_ids(t.to_arrow()) == list(range(20))
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert sorted_ids(t.branch("br").to_arrow()) == [*range(3, 10), 100, 101, 102]


def test_updates_merges_and_compactions_within_a_branch(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 6))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    assert br.update([("id", "<", 2)], set={"k": "changed"}) == 2
    result = br.merge(rows(4, 4), on=["id"]).when_matched_update_all().when_not_matched_insert_all().execute()
    assert (result.updated, result.inserted) == (2, 2)
    assert br.compact() is not None
    got = {r["id"]: r["k"] for r in br.to_arrow().to_pylist()}
    assert got == {0: "changed", 1: "changed", 2: "k2", 3: "k3", 4: "k4", 5: "k5", 6: "k6", 7: "k7"}
    assert {r["id"]: r["k"] for r in t.to_arrow().to_pylist()} == {i: f"k{i}" for i in range(6)}
    assert [s.commitKind for s in br.snapshots()] == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert [s.id for s in t.snapshots()] == [1]


def test_the_branch_option_of_open_table_reads_and_writes_the_branch(tmp_path):
    """Before branches: the option was ignored, so this read and wrote main."""
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 4))
    t.create_tag("t1")
    t.create_branch("br", "t1")
    t.write(rows(4, 4))
    br = mp.open_table(t.path, options={"branch": "br"})
    br.write(rows(50, 2))
    assert sorted_ids(br.to_arrow()) == [0, 1, 2, 3, 50, 51]
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == list(range(8))
    assert sorted_ids(mp.open_table(t.path, options={"branch": "main"}).to_arrow()) == list(range(8))
    with pytest.raises(mp.BranchNotFoundError, match="no branch 'nope'.*branches: br"):
        mp.open_table(t.path, options={"branch": "nope"})
    with pytest.raises(mp.TableNotFoundError):
        mp.open_table(str(tmp_path / "none"), options={"branch": "br"})


def test_an_empty_branch_has_the_latest_schema_and_no_snapshot(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 4))
    t.add_column("extra", pa.int32())
    e = t.create_branch("empty")
    assert e.latest_snapshot() is None and e.to_arrow().num_rows == 0
    assert e.schema() == t.schema()
    assert sorted(os.listdir(tmp_path / "t/branch/branch-empty/schema")) == ["schema-0", "schema-1"]
    data = rows(7, 2).append_column("extra", pa.array([1, 2], pa.int32()))
    assert e.write(data) == 1
    assert e.to_arrow().sort_by("id").column("extra").to_pylist() == [1, 2]
    assert sorted_ids(t.to_arrow()) == list(range(4))
    # schema changes of a branch are its own
    e.add_column("only_in_branch", pa.string())
    assert "only_in_branch" in e.schema().names and "only_in_branch" not in t.refresh().schema().names


def test_time_travel_tags_and_history_within_a_branch(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 2))
    t.create_tag("t1")
    t.write(rows(2, 2))  # main's 2
    br = t.create_branch("br", "t1")
    br.write(rows(10, 1))  # the branch's 2
    br.write(rows(11, 1))  # the branch's 3
    br.create_tag("b2", 2)
    assert sorted_ids(br.scan(snapshot_id=2).to_arrow()) == [0, 1, 10]
    assert sorted_ids(t.scan(snapshot_id=2).to_arrow()) == [0, 1, 2, 3]
    assert sorted_ids(br.scan(tag="b2").to_arrow()) == [0, 1, 10]
    assert sorted_ids(br.scan(tag="t1").to_arrow()) == [0, 1]
    assert "b2" not in t.tags()
    with pytest.raises(mp.SnapshotNotFoundError):
        br.scan(snapshot_id=4)
    ts = br.snapshot(2).timeMillis
    assert sorted_ids(br.scan(timestamp_ms=ts).to_arrow()) == [0, 1, 10]
    assert br.history().num_rows == 3
    assert sorted_ids(br.scan(incremental_between=(1, 3)).to_arrow()) == [10, 11]


def test_a_stream_within_a_branch_reads_its_snapshots_and_keeps_its_consumer_there(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 3))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    t.write(rows(3, 3))  # main only
    stream = br.stream(consumer_id="c1")
    first = list(stream)
    assert sorted(i for b in first for i in b.data.column("id").to_pylist()) == [0, 1, 2]
    for b in first:
        stream.commit(b)
    br.write(rows(20, 2))
    later = list(br.stream(consumer_id="c1"))
    assert sorted(i for b in later for i in b.data.column("id").to_pylist()) == [20, 21]
    assert "consumer-c1" in os.listdir(tmp_path / "t/branch/branch-br/consumer")
    assert t.consumers() == {} and br.consumers() == {"c1": 2}


def test_branch_names_are_checked_and_a_refused_call_changes_nothing(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 2))
    t.create_tag("t1")
    before = _tree(t.path)
    for bad in ["main", "123", "", "a/b", "..", ".", "../x", "x\x00", "a b", "é", "x" * 201, None]:
        with pytest.raises(mp.InvalidArgumentError, match="branch name"):
            t.create_branch(bad)  # type: ignore[arg-type]
        with pytest.raises(mp.InvalidArgumentError):
            t.branch(bad) if bad != "main" else t.delete_branch(bad)  # type: ignore[arg-type]
    with pytest.raises(mp.SnapshotNotFoundError):
        t.create_branch("br", tag="nope")
    t.create_branch("br", "t1")
    after = _tree(t.path)
    with pytest.raises(mp.InvalidArgumentError, match="already exists"):
        t.create_branch("br")
    with pytest.raises(mp.BranchNotFoundError):
        t.delete_branch("other")
    with pytest.raises(mp.InvalidArgumentError, match="main branch cannot be deleted"):
        t.delete_branch("main")
    assert _tree(t.path) == after and set(after) - set(before) == {
        "branch/branch-br/schema/schema-0", "branch/branch-br/snapshot/snapshot-1",
        "branch/branch-br/tag/tag-t1"}
    assert t.branch("main").current_branch == "main"


def test_delete_branch_removes_its_metadata_and_never_a_file_of_main(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 5))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    br.write(rows(9, 1))
    t.create_branch("other")
    files_of_main = {f for f in _tree(t.path) if not f.startswith("branch/")}
    t.delete_branch("br")
    assert t.branches() == ["other"]
    assert not (tmp_path / "t/branch/branch-br").exists()
    assert files_of_main <= set(_tree(t.path))
    assert sorted_ids(t.to_arrow()) == list(range(5))
    with pytest.raises(mp.BranchNotFoundError):
        t.branch("br")
    t.create_branch("br")  # the name is free again: an empty branch now
    assert t.branch("br").latest_snapshot() is None


def test_branch_directories_on_disk_are_untrusted(tmp_path):
    """A directory of branch/ whose name minipaimon cannot hold is no branch it opens or
    lists; one without a schema (an unfinished create or delete) neither, and delete_branch
    removes it."""
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 2))
    t.create_tag("t1")
    for name in ["branch-..", "branch-main", "branch-123", "branch-a b", "nobranch"]:
        os.makedirs(tmp_path / "t/branch" / name / "schema")
        (tmp_path / "t/branch" / name / "schema/schema-0").write_bytes(b"{}")
    os.makedirs(tmp_path / "t/branch/branch-half/snapshot")
    (tmp_path / "t/branch/branch-half/snapshot/snapshot-1").write_bytes(b"{}")
    from minipaimon_core.metadata.branches import BranchManager

    manager = BranchManager(t.io, t.layout)
    assert t.branches() == []
    assert manager.unreadable() == ["branch-..", "branch-123", "branch-a b", "branch-half", "branch-main"]
    with pytest.raises(mp.BranchNotFoundError):
        t.branch("half")
    with pytest.raises(mp.InvalidArgumentError, match="did not finish"):
        t.create_branch("half", "t1")
    t.delete_branch("half")
    assert not (tmp_path / "t/branch/branch-half").exists()
    assert "branch-half" not in manager.unreadable()


def test_a_branch_paimon_09_made_reads_older_schemas_from_main(tmp_path):
    """Paimon 0.9 copies only the schema of the branch's snapshot; files of that snapshot
    written with an older schema name a schema the branch reads from main."""
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 3))  # schema 0
    t.add_column("extra", pa.int32())
    t.write(rows(3, 2).append_column("extra", pa.array([7, 8], pa.int32())))  # schema 1
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    os.remove(tmp_path / "t/branch/branch-br/schema/schema-0")  # as Paimon 0.9 lays it out
    got = mp.open_table(t.path, options={"branch": "br"}).to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(5))
    assert got.column("extra").to_pylist() == [None, None, None, 7, 8]
    br.write(rows(9, 1).append_column("extra", pa.array([9], pa.int32())))
    assert sorted_ids(br.to_arrow()) == [0, 1, 2, 3, 4, 9]


@pytest.mark.parametrize("storage", ["local", "s3-moto", "azure"], indirect=True)
def test_branches_on_object_storage(storage):
    t = _table(storage.path("t"))
    t.write(rows(0, 4))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    br.write(rows(10, 2))
    t.write(rows(4, 1))
    assert t.branches() == ["br"]
    assert sorted_ids(mp.open_table(storage.path("t"), options={"branch": "br"}).to_arrow()) == [0, 1, 2, 3, 10, 11]
    assert sorted_ids(t.to_arrow()) == list(range(5))
    t.delete_branch("br")
    assert t.branches() == []
    assert not any("/branch/" in p for p in storage.list_all(storage.path("t")))


def test_layout_of_a_branch():
    layout = TableLayout("/w/t", "br")
    assert layout.snapshot_path(3) == "/w/t/branch/branch-br/snapshot/snapshot-3"
    assert layout.schema_path(0) == "/w/t/branch/branch-br/schema/schema-0"
    assert layout.tag_path("x") == "/w/t/branch/branch-br/tag/tag-x"
    assert layout.consumer_path("c") == "/w/t/branch/branch-br/consumer/consumer-c"
    assert layout.changelog_path(2) == "/w/t/branch/branch-br/changelog/changelog-2"
    assert layout.manifest_path("manifest-x-0") == "/w/t/manifest/manifest-x-0"
    assert layout.index_path("index-x-0") == "/w/t/index/index-x-0"
    assert layout.data_file_path("dt=a", 0, "data-x-0.parquet") == "/w/t/dt=a/bucket-0/data-x-0.parquet"
    assert layout.on_branch("main").snapshot_path(3) == "/w/t/snapshot/snapshot-3"
    assert TableLayout("/w/t").branch_dir("br") == layout.home


def test_the_readme_branches_block_runs_as_written(tmp_path, monkeypatch, capsys):
    from tests.test_readme_python import blocks

    monkeypatch.chdir(tmp_path)  # the block uses a relative "warehouse"
    (block,) = blocks("Branches")
    scope: dict = {}
    exec(compile(block, "README:Branches", "exec"), scope)
    out = capsys.readouterr().out
    assert "[{'id': 1, 'amount': 10.0}, {'id': 2, 'amount': 25.0}]" in out and "['audit']" in out
    orders = mp.open_table("warehouse/orders")
    assert orders.branches() == [] and [s.id for s in orders.snapshots()] == [1, 2, 3]


def test_a_branch_has_an_identity_of_its_own_for_streams(tmp_path):
    """Stream offsets are stamped with the table's identity: one of main's does not resume a
    stream of a branch (snapshot ids of one line mean nothing on another)."""
    from minipaimon_core.schema.schema import SchemaManager

    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 1))
    br = t.create_branch("br")
    main_id = SchemaManager(t.io, t.layout).table_id()
    assert SchemaManager(br.io, br.layout).table_id() == f"{main_id}@branch:br"
    assert br.stream().table_id != t.stream().table_id


def test_the_branches_system_table(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write(rows(0, 2))
    t.write(rows(2, 2))
    t.create_tag("t1", 1)
    t.create_branch("from_tag", "t1")
    t.create_branch("empty")
    got = t.system_table("branches").to_pylist()
    assert [(r["branch_name"], r["created_from_tag"], r["created_from_snapshot"]) for r in got] == [
        ("empty", None, None), ("from_tag", "t1", 1)]
    assert all(r["create_time"] is not None for r in got)
    assert t.branch("empty").system_table("branches").num_rows == 2
