"""fast_forward (main becomes a branch, as Paimon 0.9), ``scan.fallback-branch`` (partitions
main lacks read from another branch, as Paimon 0.9), and faults injected into every IO call
of create_branch, delete_branch and fast_forward."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.test_crash import FaultAt, InjectedFault

KEYED = {"bucket": "2"}


def _main_and_branch(path: str) -> tuple[mp.Table, mp.Table]:
    """main: 1 (ids 0..4), 2 (5..9) tagged t1, 3 (10..11), a column added, 4 (12) tagged
    late; br from t1: 3 (100), 4 (101), tagged b4."""
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options=KEYED)
    t.write(rows(0, 5))
    t.write(rows(5, 5))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    t.write(rows(10, 2))
    t.add_column("extra", pa.int32())
    t.write(rows(12, 1).append_column("extra", pa.array([1], pa.int32())))
    t.create_tag("late")
    br.write(rows(100, 1))
    br.write(rows(101, 1))
    br.create_tag("b4")
    return t, br


def test_fast_forward_makes_main_the_branch(tmp_path):
    t, br = _main_and_branch(str(tmp_path / "t"))
    t.fast_forward("br")
    assert sorted_ids(t.to_arrow()) == [*range(10), 100, 101]
    assert t.schema() == br.schema() and "extra" not in t.schema().names  # main's later schema gone
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    assert t.tags() == {"t1": 2, "b4": 4}  # main's tag of snapshot 4 went, the branch's came
    for sid in (2, 3, 4):
        assert sorted_ids(t.scan(snapshot_id=sid).to_arrow()) == sorted_ids(br.scan(snapshot_id=sid).to_arrow())
    assert sorted(os.listdir(tmp_path / "t/schema")) == ["schema-0"]
    assert t.branches() == ["br"]  # the branch stays
    # main goes on from the branch's state; the files only main's old snapshots used are orphans
    assert t.write(rows(200, 1)) == 5
    assert sorted_ids(t.to_arrow()) == [*range(10), 100, 101, 200]
    assert t.remove_orphan_files(older_than="0s").files  # main's snapshots 3 and 4's files
    assert sorted_ids(t.to_arrow()) == [*range(10), 100, 101, 200]
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101]
    assert sorted_ids(t.scan(tag="t1").to_arrow()) == list(range(10))


def test_fast_forward_to_an_empty_branch_written_into_replaces_all_of_main(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options=KEYED)
    t.write(rows(0, 3))
    t.write(rows(3, 3))
    e = t.create_branch("e")
    e.write(rows(50, 2))
    t.fast_forward("e")
    assert sorted_ids(t.to_arrow()) == [50, 51] and [s.id for s in t.snapshots()] == [1]
    assert t.write(rows(60, 1)) == 2


def test_fast_forward_refusals_change_nothing(tmp_path):
    t, br = _main_and_branch(str(tmp_path / "t"))
    t.create_branch("empty")
    files = sorted(p for d, _, fs in os.walk(t.path) for p in (os.path.join(d, f) for f in fs))
    with pytest.raises(mp.InvalidArgumentError, match="no snapshot"):
        t.fast_forward("empty")
    with pytest.raises(mp.BranchNotFoundError):
        t.fast_forward("nope")
    with pytest.raises(mp.InvalidArgumentError, match="itself"):
        br.fast_forward("br")
    with pytest.raises(mp.InvalidArgumentError, match="branch name"):
        t.fast_forward("../x")
    assert sorted(p for d, _, fs in os.walk(t.path) for p in (os.path.join(d, f) for f in fs)) == files
    # a branch fast-forwards to another line too (Paimon: the current branch becomes it)
    br.fast_forward("main")
    assert sorted_ids(br.to_arrow()) == sorted_ids(t.to_arrow())


def _states(t: mp.Table) -> dict[int, list[int]]:
    return {s.id: sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) for s in t.snapshots()}


@pytest.mark.parametrize("after", [False, True], ids=["error", "lost-answer"])
def test_a_fault_at_any_io_call_of_fast_forward_leaves_a_valid_state_and_a_rerun_finishes(tmp_path, after):
    base = str(tmp_path / "base")
    t, br = _main_and_branch(base)
    main_states, branch_states = _states(t), _states(br)
    allowed = [*main_states.values(), *branch_states.values()]
    _copy(base, str(tmp_path / "reference"))
    reference = mp.open_table(str(tmp_path / "reference"))
    reference.fast_forward("br")
    final = (_states(reference), reference.tags(), reference.schema())
    at = 1
    while True:
        path = str(tmp_path / f"t{at}")
        _copy(base, path)
        handle, io = _faulty(path, at, after)
        try:
            handle.fast_forward("br")
        except InjectedFault:
            pass
        else:
            if len(io.calls) < at:
                break  # every call was hit: the sweep is done
        again = mp.open_table(path)
        assert sorted_ids(again.to_arrow()) in allowed, at  # a state of main's or the branch's history
        for sid, ids in _states(again).items():
            assert ids in allowed, (at, sid)
        again.fast_forward("br")
        assert (_states(again), again.tags(), again.schema()) == final, at
        at += 1
    assert at > 10


def _faulty(path: str, at: int, after: bool = False) -> tuple[mp.Table, FaultAt]:
    """A handle on ``path`` whose IO faults at the ``at``-th call after it was opened."""
    io = FaultAt(mp.open_table(path).io, after=after)
    handle = mp.open_table(path, io=io)
    io.calls.clear()
    io.at = at
    return handle, io


def _copy(src: str, dst: str) -> None:
    import shutil

    shutil.copytree(src, dst)


@pytest.mark.parametrize("op", ["create-from-tag", "create-empty", "delete"])
def test_a_fault_at_any_io_call_of_create_or_delete_branch(tmp_path, op):
    """After a fault the branch exists whole, or not at all: then its directory (if any)
    stops deletions until delete_branch finishes it, and the call can be made again."""
    base = str(tmp_path / "base")
    t = mp.create_table(base, SCHEMA, primary_key=["id"], options=KEYED)
    t.write(rows(0, 4))
    t.add_column("extra", pa.int32())
    t.write(rows(4, 1).append_column("extra", pa.array([4], pa.int32())))
    t.create_tag("t1")  # a snapshot of schema 1: schemas 1 and 0 are copied
    if op == "delete":
        t.create_branch("br", "t1").write(rows(10, 1).append_column("extra", pa.array([1], pa.int32())))
    want = sorted_ids(t.to_arrow()) if op != "create-empty" else []
    at = 1
    while True:
        path = str(tmp_path / f"t{at}")
        _copy(base, path)
        handle, io = _faulty(path, at)
        try:
            if op == "delete":
                handle.delete_branch("br")
            else:
                handle.create_branch("br", "t1" if op == "create-from-tag" else None)
        except InjectedFault:
            pass
        else:
            if len(io.calls) < at:
                break
        again = mp.open_table(path)
        if "br" in again.branches():
            got = sorted_ids(again.branch("br").to_arrow())
            assert got == (want if op != "delete" else [0, 1, 2, 3, 4, 10]), at
        elif os.path.exists(os.path.join(path, "branch/branch-br")):
            with pytest.raises(mp.CorruptMetadataError, match="branch-br"):
                again.remove_orphan_files(older_than="0s")
            again.delete_branch("br")  # finishes the unfinished create or delete
        if op != "delete" and "br" not in again.branches():
            again.create_branch("br", "t1" if op == "create-from-tag" else None)
            assert sorted_ids(again.branch("br").to_arrow()) == want
        at += 1
    assert at > 3


# -- scan.fallback-branch ----------------------------------------------------------------------

PARTED = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("name", pa.string(), nullable=False),
                    ("amount", pa.int64())])


def _fallback_table(path: str) -> tuple[mp.Table, mp.Table]:
    """Paimon's docs example (manage-branches.md, "Batch Reading from Fallback Branch"):
    main partitioned by dt; a branch 'test' for the streaming job; main reads it where it
    lacks a partition."""
    t = mp.create_table(path, PARTED, primary_key=["dt", "name"], partition_by=["dt"], options={"bucket": "1"})
    test = t.create_branch("test")
    test.write(pa.table({"dt": ["20240725", "20240725", "20240726", "20240726"],
                         "name": ["apple", "peach", "cherry", "pear"], "amount": [4, 10, 3, 6]}, schema=PARTED))
    t.set_options({"scan.fallback-branch": "test"})
    t.write(pa.table({"dt": ["20240725", "20240725"], "name": ["apple", "banana"], "amount": [5, 7]}, schema=PARTED))
    return t, test


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names)))


def test_fallback_branch_reads_the_partitions_main_lacks(tmp_path):
    t, test = _fallback_table(str(tmp_path / "t"))
    want = [("20240725", "apple", 5), ("20240725", "banana", 7), ("20240726", "cherry", 3), ("20240726", "pear", 6)]
    assert _rows(t.to_arrow()) == want  # the rows Paimon's docs show
    assert t.count() == 4
    assert _rows(t.scan(filter=[("dt", "=", "20240726")]).to_arrow()) == want[2:]
    assert _rows(t.scan(columns=["name"]).to_arrow()) == [(r[1],) for r in sorted(want, key=lambda r: r[1])]
    assert {s.branch for s in t.scan().plan()} == {None, "test"}
    # the split of the fallback branch is picklable and read on its own (Spark's tasks)
    import pickle

    [fb_split] = [s for s in t.scan().plan() if s.branch == "test"]
    got = pa.Table.from_batches(list(mp.open_table(t.path).read_split(pickle.loads(pickle.dumps(fb_split)))))
    assert _rows(got) == want[2:]
    # time travel: the fallback branch as of main's snapshot's time
    t.write(pa.table({"dt": ["20240726"], "name": ["fig"], "amount": [1]}, schema=PARTED))
    assert _rows(t.to_arrow()) == [*want[:2], ("20240726", "fig", 1)]
    assert _rows(t.scan(snapshot_id=1).to_arrow()) == want
    # streams, the branch itself, and main after the option is reset read one branch
    assert _rows(test.to_arrow()) == [("20240725", "apple", 4), ("20240725", "peach", 10), *want[2:]]
    t.set_options({"scan.fallback-branch": None})
    assert _rows(t.to_arrow()) == [*want[:2], ("20240726", "fig", 1)] and t.count() == 3


def test_fallback_branch_options_are_checked(tmp_path):
    t, test = _fallback_table(str(tmp_path / "t"))
    for bad in ("nope", "main", "../x"):
        with pytest.raises(mp.InvalidArgumentError, match="fallback-branch"):
            t.set_options({"scan.fallback-branch": bad})
    test.set_options({"scan.fallback-branch": "main"})  # a branch may fall back to main
    assert _rows(test.to_arrow()) == _rows(test.branch("test").to_arrow())  # main has no other partition
    test.set_options({"scan.fallback-branch": None})
    test.add_column("more", pa.string())  # the fallback branch's columns no longer match
    with pytest.raises(mp.SchemaMismatchError, match="different columns"):
        t.to_arrow()
    keyless = mp.create_table(str(tmp_path / "k"), PARTED, partition_by=["dt"])
    other = keyless.create_branch("x")
    keyless.set_options({"scan.fallback-branch": "x"})
    other.write(pa.table({"dt": ["d"], "name": ["n"], "amount": [1]}, schema=PARTED))
    assert keyless.to_arrow().num_rows == 1  # a table without keys may fall back to any
    keyed = mp.create_table(str(tmp_path / "p"), PARTED, primary_key=["dt", "name"], partition_by=["dt"],
                            options={"bucket": "1"})
    keyed.create_branch("y")
    keyed.set_options({"scan.fallback-branch": "y"})
    keyed.branch("y").drop_column("amount")
    with pytest.raises(mp.SchemaMismatchError):
        keyed.to_arrow()


def test_a_handle_reads_main_right_after_its_fast_forward_replaced_a_schema(tmp_path):
    """main's schema 1 (an int column) and the branch's schema 1 (a string column) differ:
    the handle that fast-forwards forgets main's cached schemas."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options=KEYED)
    t.write(rows(0, 2))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    t.add_column("extra", pa.int32())
    t.write(rows(2, 1).append_column("extra", pa.array([5], pa.int32())))
    br.add_column("note", pa.string())
    br.write(rows(7, 1).append_column("note", pa.array(["n"])))
    assert t.to_arrow().num_rows == 3  # the handle has read main's schema 1
    t.fast_forward("br")
    got = t.to_arrow().sort_by("id")
    assert got.schema.names == [*SCHEMA.names, "note"] and got.column("note").to_pylist() == [None, None, "n"]
    assert t.write(rows(9, 1).append_column("note", pa.array(["x"]))) == 3
