"""No deletion in one line of a table (main or a branch) removes a file another line uses:
expiration (snapshots and long-lived changelogs), orphan cleanup, rollback, restore, tag
deletion, in main and in a branch. A model-based test drives random operations over main
and its branches (writes, deletes, compactions, tags, expirations, orphan cleanups,
rollbacks, branches created, deleted and fast-forwarded) against dicts, reading every
retained snapshot and tag of every line after each step."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.maintenance.files import TableFiles
from minipaimon_core.maintenance.lines import lines, used_by_line
from tests.helpers import SCHEMA, rows, sorted_ids


def _table(path: str, **options: str) -> mp.Table:
    return mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "2", **options})


def _missing(t: mp.Table) -> list[str]:
    """Files some line of the table uses that are not on disk ([] for a sound table)."""
    out = []
    for line in lines(TableFiles.of(t)):
        out += [p for p in used_by_line(line) if not os.path.exists(p)]
    return sorted(out)


def _branch_from_tag(tmp_path, **options: str) -> tuple[mp.Table, mp.Table]:
    """Main with a tag t1 (ids 0..9), a branch br from it written into (ids 100..102);
    main written on (10..19)."""
    t = _table(str(tmp_path / "t"), **options)
    t.write(rows(0, 5))
    t.write(rows(5, 5))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    br.write(rows(100, 3))
    t.write(rows(10, 5))
    t.write(rows(15, 5))
    return t, br


def test_orphan_cleanup_of_main_keeps_the_branchs_files_and_the_reverse(tmp_path):
    """Issue 38.2 (core): before, orphan cleanup deleted the branch's data file, manifests
    and manifest lists, and the branch could no longer be read."""
    t, br = _branch_from_tag(tmp_path)
    t.delete_tag("t1")
    result = t.remove_orphan_files(older_than="0s")
    assert result.files == []
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    assert br.remove_orphan_files(older_than="0s").files == []
    assert sorted_ids(t.to_arrow()) == list(range(20))
    assert _missing(t) == []
    # a file no line uses is still an orphan
    w = br.new_write("crashed")
    w.write(rows(500, 2))
    w.prepare_commit()
    assert len(br.remove_orphan_files(older_than="0s").files) >= 1
    assert _missing(t) == []


def test_expiring_main_keeps_the_files_of_the_branch_point_after_the_tag_is_gone(tmp_path):
    t, br = _branch_from_tag(tmp_path)
    t.compact()  # main rewrites the files of the branch point
    t.delete_tag("t1")
    result = t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")
    assert result.snapshots  # main expired the snapshots of the branch point
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    assert sorted_ids(br.scan(tag="t1").to_arrow()) == list(range(10))
    assert _missing(t) == []
    # and once the branch is gone, orphan cleanup takes what only it used
    t.delete_branch("br")
    assert t.remove_orphan_files(older_than="0s").files
    assert sorted_ids(t.to_arrow()) == list(range(20)) and _missing(t) == []


def test_expiring_a_branch_keeps_mains_files(tmp_path):
    """The branch compacts main's files of the branch point away and expires: main, which
    still reads them, keeps them."""
    t, br = _branch_from_tag(tmp_path)
    t.delete_tag("t1")
    br.delete_tag("t1")
    br.compact()
    br.write(rows(103, 1))
    result = br.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")
    assert result.snapshots and result.manifests
    assert sorted_ids(t.scan(snapshot_id=2).to_arrow()) == list(range(10))
    assert sorted_ids(t.to_arrow()) == list(range(20))
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102, 103]
    assert _missing(t) == []


def test_rollback_of_main_before_the_branch_point_keeps_the_branchs_files(tmp_path):
    t, br = _branch_from_tag(tmp_path)
    result = t.rollback_to(snapshot_id=1)
    assert result.snapshots == [4, 3, 2] and result.tags == ["t1"]
    assert sorted_ids(t.to_arrow()) == list(range(5))
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    assert _missing(t) == []
    # a rollback of the branch keeps main's files too
    br.write(rows(200, 1))
    br.rollback_to(snapshot_id=3)
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    assert _missing(t) == []


def test_restore_and_tag_deletion_keep_the_branchs_files(tmp_path):
    t, br = _branch_from_tag(tmp_path)
    t.restore(1)
    t.delete_tag("t1")
    assert sorted_ids(t.to_arrow()) == list(range(5))
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")
    t.remove_orphan_files(older_than="0s")
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    assert _missing(t) == []


def test_expiring_long_lived_changelogs_of_main_keeps_what_a_branch_uses(tmp_path):
    t, br = _branch_from_tag(tmp_path, **{"changelog-producer": "input", "changelog.num-retained.max": "3",
                                           "changelog.num-retained.min": "1"})
    t.delete_tag("t1")
    for i in range(4):
        t.write(rows(30 + i, 1))
    t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")  # snapshots, then changelogs
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102]
    changes = [i for b in br.stream(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
               for i in b.data.column("id").to_pylist()]
    assert sorted(changes) == [*range(5, 10), 100, 101, 102]  # the branch's changelog files
    assert _missing(t) == []


def test_a_branch_directory_minipaimon_cannot_read_stops_every_deletion(tmp_path):
    """A branch directory without a schema (Paimon: an abnormal branch, its orphan cleanup
    aborts) or with a name minipaimon cannot hold may name files: nothing is deleted."""
    t, br = _branch_from_tag(tmp_path)
    t.delete_tag("t1")
    os.makedirs(tmp_path / "t/branch/branch-odd name/snapshot")
    before = sorted(os.listdir(tmp_path / "t/manifest"))
    for call in (lambda: t.remove_orphan_files(older_than="0s"),
                 lambda: t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s"),
                 lambda: t.rollback_to(snapshot_id=1),
                 lambda: br.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")):
        with pytest.raises(mp.CorruptMetadataError, match="branch-odd name"):
            call()
    assert sorted(os.listdir(tmp_path / "t/manifest")) == before
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    os.rmdir(tmp_path / "t/branch/branch-odd name/snapshot")
    os.rmdir(tmp_path / "t/branch/branch-odd name")
    t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")
    assert sorted_ids(br.to_arrow()) == [*range(10), 100, 101, 102] and _missing(t) == []


def test_a_hostile_branch_snapshot_naming_a_file_outside_the_table_stops_deletions(tmp_path):
    """A branch's metadata is untrusted like main's: a snapshot naming a manifest list
    outside the table is refused where it is decoded; nothing inside or outside is deleted."""
    t, br = _branch_from_tag(tmp_path)
    outside = tmp_path / "outside"
    outside.write_text("keep me")
    import msgspec

    from minipaimon_core.format import snapshot as codec

    snap = tmp_path / "t/branch/branch-br/snapshot/snapshot-3"
    decoded = codec.decode(snap.read_bytes(), str(snap))
    snap.write_bytes(codec.encode(msgspec.structs.replace(decoded, baseManifestList="../../../outside")))
    before = sorted(p for d, _, fs in os.walk(tmp_path / "t") for p in (os.path.join(d, f) for f in fs))
    for call in (lambda: t.remove_orphan_files(older_than="0s"),
                 lambda: t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")):
        with pytest.raises(mp.CorruptMetadataError, match="outside"):
            call()
    assert outside.read_text() == "keep me"
    assert sorted(p for d, _, fs in os.walk(tmp_path / "t") for p in (os.path.join(d, f) for f in fs)) == before


def test_deleting_a_branch_read_as_the_fallback_is_refused(tmp_path):
    t, br = _branch_from_tag(tmp_path)
    t.set_options({"scan.fallback-branch": "br"})
    with pytest.raises(mp.InvalidArgumentError, match="scan.fallback-branch"):
        t.delete_branch("br")
    assert t.branches() == ["br"]


# -- model-based: random operations over main and its branches ---------------------------------

Model = dict[int, str]


class _Line:
    """A line of the table in the model: the state of each snapshot id, the tags."""

    def __init__(self, snaps: dict[int, Model] | None = None, tags: dict[str, tuple[int, Model]] | None = None):
        self.snaps: dict[int, Model] = dict(snaps or {})
        self.tags: dict[str, tuple[int, Model]] = dict(tags or {})

    def latest(self) -> Model:
        return self.snaps[max(self.snaps)] if self.snaps else {}


def _read(scan: mp.TableScan) -> Model:
    data = scan.to_arrow()
    return dict(zip(data.column("id").to_pylist(), data.column("k").to_pylist()))


def _check(t: mp.Table, model: dict[str, _Line]) -> None:
    assert sorted(["main", *t.branches()]) == sorted(model)
    for name, line in model.items():
        h = t.branch(name)
        assert _read(h.scan()) == line.latest(), name
        for s in h.snapshots():
            assert _read(h.scan(snapshot_id=s.id)) == line.snaps[s.id], (name, s.id)
        assert sorted(h.tags()) == sorted(line.tags), name
        for tag, (sid, state) in line.tags.items():
            assert h.tags()[tag] == sid and _read(h.scan(tag=tag)) == state, (name, tag)
    assert _missing(t) == []


def _record(h: mp.Table, line: _Line, before: int | None, state: Model) -> None:
    """The snapshots ``h`` committed since ``before`` (an APPEND and its COMPACT) hold ``state``."""
    latest = h.latest_snapshot()
    for sid in range((before or 0) + 1, (latest.id if latest else 0) + 1):
        line.snaps[sid] = dict(state)
    for sid in [s for s in line.snaps if latest is None or s > latest.id]:
        del line.snaps[sid]


def _step(t: mp.Table, model: dict[str, _Line], rnd: random.Random, n: int) -> str:
    name = rnd.choice(sorted(model))
    h, line = t.branch(name), model[name]
    before = h.latest_snapshot()
    op = rnd.choices(["write", "delete", "compact", "tag", "untag", "expire", "orphans", "rollback",
                      "branch", "unbranch", "ff"], [8, 2, 2, 2, 1, 2, 2, 1, 2, 1, 1])[0]
    state = line.latest()
    if op in ("write", "delete", "compact"):
        if op == "write":
            ids = rnd.sample(range(30), rnd.randint(1, 6))
            data = rows(0, len(ids)).set_column(0, "id", pa.array(ids, pa.int64()))
            data = data.set_column(1, "k", pa.array([f"v{n}-{i}" for i in ids]))
            h.write(data)
            state = {**state, **{i: f"v{n}-{i}" for i in ids}}
        elif op == "delete":
            cut = rnd.randint(0, 30)
            h.delete([("id", "<", cut)])
            state = {k: v for k, v in state.items() if k >= cut}
        else:
            h.compact()
        _record(h, line, before.id if before else None, state)
    elif op == "tag" and before is not None:
        tag = f"t{n}"
        h.create_tag(tag)
        line.tags[tag] = (before.id, dict(state))
    elif op == "untag" and line.tags:
        tag = rnd.choice(sorted(line.tags))
        h.delete_tag(tag)
        del line.tags[tag]
    elif op == "expire":
        h.expire_snapshots(retain_max=rnd.randint(1, 3), retain_min=1, older_than="0s")
    elif op == "orphans":
        h.remove_orphan_files(older_than="0s")
    elif op == "rollback" and before is not None:
        target = rnd.choice([s.id for s in h.snapshots()])
        h.rollback_to(snapshot_id=target)
        line.snaps = {s: v for s, v in line.snaps.items() if s <= target}
        line.tags = {k: v for k, v in line.tags.items() if v[0] <= target}
    elif op == "branch" and len(model) < 4:
        new = f"b{n}"
        if line.tags and rnd.random() < 0.7:
            tag = rnd.choice(sorted(line.tags))
            h.create_branch(new, tag)
            sid, tstate = line.tags[tag]
            model[new] = _Line({sid: tstate}, {tag: (sid, tstate)})
        else:
            h.create_branch(new)
            model[new] = _Line()
    elif op == "unbranch" and name != "main":
        t.delete_branch(name)
        del model[name]
    elif op == "ff" and name != "main" and line.snaps:
        first = min(s.id for s in h.snapshots())
        t.fast_forward(name)
        main = model["main"]
        main.snaps = {**{s: v for s, v in main.snaps.items() if s < first},
                      **{s: v for s, v in line.snaps.items() if s >= first}}
        main.tags = {**{k: v for k, v in main.tags.items() if v[0] < first}, **line.tags}
    else:
        return "noop"
    return f"{op}@{name}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_over_main_and_branches_match_a_model(tmp_path, seed):
    rnd = random.Random(seed)
    t = _table(str(tmp_path / "t"), **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "4",
                                        "num-sorted-run.compaction-trigger": "3"})
    model = {"main": _Line()}
    done = []
    for n in range(45):
        done.append(_step(t, model, rnd, n))
        _check(t, model)
    assert {d.split("@")[0] for d in done} >= {"write", "expire", "orphans", "branch", "tag"}, done
