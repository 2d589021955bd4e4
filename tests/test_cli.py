"""The ``minipaimon`` console script, run for real in subprocesses.

Read-only commands run concurrently to keep the suite fast; commands that change the table
run one after another.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.cli.cli import format_table, parse_time
from tests.helpers import SCHEMA, rows, sorted_ids

SCRIPT = Path(sys.executable).parent / "minipaimon"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="run `pip install -e . --no-deps` first")


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def run(*args: str) -> tuple[int, str, str]:
    return finish(start(*args))


def run_all(*commands: tuple[str, ...]) -> list[tuple[int, str, str]]:
    return [finish(p) for p in [start(*c) for c in commands]]


@pytest.fixture
def table(tmp_path) -> mp.Table:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"],
                        options={"compaction.min.file-num": "2"})
    for k in range(4):
        t.write(rows(k * 3, 3, "d1" if k % 2 else "d2"))
    return t


def assert_aligned(text: str) -> None:
    """A header, a rule of dashes, rows whose columns start where the header's do."""
    lines = text.splitlines()
    assert set(lines[1].replace(" ", "")) == {"-"}
    starts = [i for i, ch in enumerate(lines[1]) if ch == "-" and (i == 0 or lines[1][i - 1] == " ")]
    for line in [lines[0], *lines[2:]]:
        for s in starts[1:]:
            assert line[s - 2 : s] == "  ", (line, s)


def test_every_command_on_one_table(table, tmp_path):
    # stage 1: read-only commands, an error, and tag creation, all at once
    info, snaps, files, schema, missing, tag_v1, tag_tmp = run_all(
        ("info", table.path),
        ("snapshots", table.path),
        ("files", table.path),
        ("schema", table.path),
        ("info", str(tmp_path / "nope")),
        ("tag", "create", table.path, "v1", "--snapshot", "2"),
        ("tag", "create", table.path, "tmp", "--snapshot", "1"),
    )
    fields = info_fields(info[1])
    assert info[0] == 0 and fields["snapshots"] == "4 (ids 1..4)" and fields["rows"].startswith("12 ")
    assert snaps[0] == 0 and len(snaps[1].splitlines()) == 2 + 4
    assert_aligned(snaps[1])
    assert files[0] == 0 and files[1].count("data-") == 4 and "dt=d1" in files[1]
    assert_aligned(files[1])
    assert schema[0] == 0 and "partition keys: dt" in schema[1] and "compaction.min.file-num" in schema[1]
    code, out, err = missing
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("minipaimon: error: no minipaimon table at ")
    assert tag_v1[1].strip() == "created tag v1 on snapshot 2" and tag_tmp[0] == 0

    # stage 2: compaction with a progress bar, and deleting a tag
    (code, out, err), deleted = run_all(("--progress", "compact", table.path, "--full"),
                                        ("tag", "delete", table.path, "tmp"))
    assert code == 0 and re.fullmatch(r"compacted 4 files \(\d\.\d KiB\) in 2 buckets into 2 files "
                                      r"\(\d\.\d KiB\): snapshot 5", out.strip()), out
    assert "compacting buckets" in err and "[##############################] 2/2" in err
    assert deleted[1].strip() == "deleted tag tmp"

    # stage 3: expiration, and listing tags
    (code, out, _), tags = run_all(("expire", table.path, "--retain-max", "1"), ("tag", "list", table.path))
    assert code == 0 and out.startswith("expired snapshots 1..4: deleted")
    assert tags[0] == 0 and tags[1].splitlines()[2].split()[:2] == ["v1", "2"]

    # stage 4: an orphan scan (dry run) finds the files of a writer that never committed
    crashed = table.new_write("crashed")
    crashed.write(rows(50, 2, "d1"))
    crashed.prepare_commit()
    old = time.time() - 2 * 86400
    for d, _, names in os.walk(table.path):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))
    code, out, err = run("--progress", "orphans", table.path, "--dry-run")
    assert code == 0 and "would delete 1 orphan files" in out and "reading snapshots" in err
    assert out.splitlines()[0].startswith("dt=d1/bucket-")

    # stage 5: rollback to the tag (its snapshot has expired: it is restored)
    code, out, _ = run("rollback", table.path, "--tag", "v1")
    assert code == 0 and out.startswith("rolled back to snapshot 2: removed 1 snapshots")
    t = mp.open_table(table.path)
    assert [s.id for s in t.snapshots()] == [2] and t.tags() == {"v1": 2}
    assert sorted_ids(t.to_arrow()) == list(range(6))


def info_fields(text: str) -> dict[str, str]:
    """``info``'s "key  value" lines as a dict."""
    return dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in text.splitlines() if line.strip())


def test_format_table_and_parse_time():
    text = format_table(["name", "n"], [("a", 1), ("longer", 123), ("b", None)])
    assert text.splitlines() == ["name      n", "------  ---", "a         1", "longer  123", "b"]
    with pytest.warns(DeprecationWarning, match="epoch milliseconds is deprecated"):
        assert parse_time("1700000000000") == 1700000000000
    with pytest.raises(mp.InvalidArgumentError, match="nothing is older than 1970"):
        parse_time("0")
    assert parse_time("2d", now_ms=3 * 86_400_000) == 86_400_000
    assert parse_time("2024-01-01T00:00:00+00:00") == 1704067200000
    with pytest.raises(mp.InvalidArgumentError, match="cannot read --older-than='yesterday-ish'"):
        parse_time("yesterday-ish")


def test_plan_prints_the_splits_and_what_planning_cost(table):
    full, one, ranged, parallel, bad_column, bad_value, info = run_all(
        ("plan", table.path),
        ("plan", table.path, "--where", "dt = 'd1'"),
        ("plan", table.path, "--where", "id >= 4 AND k is not null"),
        ("plan", table.path, "--where", "dt = 'd2'", "--parallelism", "2"),
        ("plan", table.path, "--where", "nope = 1"),
        ("plan", table.path, "--where", "id < one"),
        ("info", table.path),
    )
    assert full[0] == 0 and "4 of 4 manifests read (0 skipped), 4 entries, 4 files, 2 splits" in full[1]
    assert_aligned(full[1].split("\n\n")[0])
    assert one[0] == 0 and "2 of 4 manifests read (2 skipped), 2 entries, 2 files, 1 splits" in one[1]
    assert "dt=d1" in one[1] and "dt=d2" not in one[1]  # partitions as in files, delete, ...
    assert ranged[0] == 0 and "3 files, 2 splits" in ranged[1]  # ids 0-2 skipped by their stats
    assert parallel[0] == 0 and "2 files, 2 splits" in parallel[1]  # 2 small files for 2 readers
    for code, out, err in (bad_column, bad_value):
        assert code == 1 and out == "" and "--where" in err and err.count("\n") == 1
    assert "'nope' is not a column" in bad_column[2] and "--where" in bad_value[2]
    assert info[0] == 0 and "full plan" in info[1] and "4 of 4 manifests read" in info[1]


def test_rewrite_manifests_then_plan_reads_fewer(tmp_path):
    empty = mp.create_table(str(tmp_path / "empty"), SCHEMA)
    code, out, _ = run("rewrite-manifests", empty.path)
    assert code == 0 and "nothing to rewrite" in out
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"],
                        options={"manifest.target-file-size": "1 b"})  # one entry a manifest
    for k in range(3):  # every commit touches both partitions
        t.write(pa.concat_tables([rows(k * 4, 2, "d1"), rows(k * 4 + 2, 2, "d2")]))
    before = run("plan", t.path, "--where", "dt = 'd1'")
    code, out, _ = run("rewrite-manifests", t.path)
    after = run("plan", t.path, "--where", "dt = 'd1'")
    assert "3 of 3 manifests read (0 skipped)" in before[1]
    assert code == 0 and out.strip() == "rewrote 3 manifests into 6 clustered by partition: snapshot 4"
    assert "3 of 6 manifests read (3 skipped), 3 entries, 3 files" in after[1]
    assert sorted_ids(t.refresh().to_arrow()) == list(range(12))


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_delete_with_a_sql_condition_and_a_dry_run(tmp_path: Path, vectors: bool) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, partition_by=["dt"],
                        options={"deletion-vectors.enabled": "true"} if vectors else {})
    t.write(rows(0, 10, "d1"))
    t.write(rows(10, 10, "d2"))
    code, out, err = run("delete", path, "--where", "dt = 'd2' AND v < 7.5 OR id IN (1, 2)", "--dry-run")
    assert code == 0, err
    assert "dt=d1" in out and "dt=d2" in out and "would delete 7 rows" in out
    assert ("files marked (deletion vectors)" if vectors else "files rewritten") in out
    assert len(mp.open_table(path).snapshots()) == 2  # the dry run changed nothing
    code, out, err = run("delete", path, "--where", "dt = 'd2' AND v < 7.5 OR id IN (1, 2)")
    assert code == 0 and "deleted 7 rows" in out, err
    assert sorted_ids(mp.open_table(path).to_arrow()) == [0, *range(3, 10), *range(15, 20)]
    code, _, err = run("delete", path, "--where", "nope = 1")
    assert code == 1 and err.count("\n") == 1 and "'nope' is not a column" in err
    code, _, err = run("delete", path, "--where", "(id = 1)")
    assert code == 1 and "parentheses" in err
    assert len(mp.open_table(path).snapshots()) == 3
