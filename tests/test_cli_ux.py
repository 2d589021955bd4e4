"""The command line a new user expects (issue 30 item 5): ``--version``, ``--json`` on every
command that prints data (parsed here), options before or after the command, help on every
option, ``tables``, ``health``, ``restore``, human sizes, summaries with counts and bytes,
``info`` rows that a read returns, and deprecated spellings that still work with a warning.
Run for real through the installed console script, as tests/test_cli.py does.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.cli.cli import build_parser
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.test_cli import SCRIPT, run, run_all

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="run `pip install -e . --no-deps` first")


def as_json(result: tuple[int, str, str]) -> Any:
    code, out, err = result
    assert code == 0, err
    return json.loads(out)


def listing(root: str) -> dict[str, int]:
    return {os.path.join(d, n): os.path.getsize(os.path.join(d, n))
            for d, _, names in os.walk(root) for n in names}


def age(root: str, days: float = 2) -> None:
    old = time.time() - days * 86400
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))


@pytest.fixture
def pk_table(tmp_path: Path) -> mp.Table:
    """Three upserts of overlapping keys into a partitioned primary-key table."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "2"})
    t.write(rows(0, 6, "d1"))
    t.write(rows(3, 6, "d1"))
    t.write(rows(0, 4, "d2"))
    return t


def test_version_and_help_on_every_option() -> None:
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("minipaimon ") and out.split()[1][0].isdigit()
    missing = []

    def walk(parser: argparse.ArgumentParser, where: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{where} {name}")
            elif not (action.help or "").strip():
                missing.append(f"{where}: {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "minipaimon")
    assert missing == []


def test_options_go_before_or_after_the_command(pk_table: mp.Table, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    mp.catalog(warehouse).create_table("sales.orders", SCHEMA).write(rows(0, 2))
    after, before, by_name, by_name_after = run_all(
        ("info", pk_table.path, "--json"),
        ("--json", "info", pk_table.path),
        ("--warehouse", warehouse, "info", "sales.orders", "--json"),
        ("info", "sales.orders", "--warehouse", warehouse, "--json"),
    )
    (compact,) = run_all(("compact", pk_table.path, "--progress"))  # after the reads of the table
    assert as_json(after) == {**as_json(before), "full_plan": as_json(after)["full_plan"]}
    assert compact[0] == 0 and "compacting buckets" in compact[2] and compact[1].startswith("compacted ")
    assert as_json(by_name)["rows"] == as_json(by_name_after)["rows"] == 2


def test_info_rows_are_what_a_read_returns(pk_table: mp.Table) -> None:
    data = as_json(run("info", pk_table.path, "--json"))
    assert data["rows"] == len(pk_table.to_arrow()) == 13
    assert data["records_in_files"] == 16  # three ids written twice: two records until compaction
    code, out, _ = run("info", pk_table.path)
    assert "rows              13 (what a read returns)" in out and "records in files  16 (before merging" in out


def test_json_of_every_command_that_prints_data(pk_table: mp.Table, tmp_path: Path) -> None:
    path = pk_table.path
    pk_table.create_tag("v1", 1)
    (snaps, history, files, schema, plan, system, tags, health, preview, expire, rollback) = run_all(
        ("snapshots", path, "--json"), ("history", path, "--json"), ("files", path, "--json"),
        ("schema", path, "--json"), ("plan", path, "--json", "--where", "dt = 'd1'"),
        ("system", path, "options", "--json"), ("tag", "list", path, "--json"),
        ("health", path, "--json"), ("delete", path, "--where", "id < 2", "--dry-run", "--json"),
        ("expire", path, "--retain-max", "1", "--dry-run", "--json"),
        ("rollback", path, "--snapshot-id", "1", "--dry-run", "--json"))
    assert [s["id"] for s in as_json(snaps)] == [1, 2, 3]
    assert as_json(snaps)[0]["commit_time"].endswith("+00:00")
    assert [(h["snapshot_id"], h["records_added"]) for h in as_json(history)] == [(3, 4), (2, 6), (1, 6)]
    assert sum(f["records"] for f in as_json(files)) == 16 and {f["partition"] for f in as_json(files)} == {"dt=d1", "dt=d2"}
    assert [f["name"] for f in as_json(schema)["fields"]] == ["id", "k", "v", "dt"]
    d1_files = sum(f["partition"] == "dt=d1" for f in as_json(files))
    assert {s["partition"] for s in as_json(plan)["splits"]} == {"dt=d1"} and as_json(plan)["plan"]["files"] == d1_files
    assert {"key": "bucket", "value": "2"} in as_json(system)
    assert as_json(tags)[0]["tag_name"] == "v1"
    assert {c["check"] for c in as_json(health)} >= {"small files", "sorted runs", "expiration", "orphan files"}
    assert as_json(preview)["dry_run"] and as_json(preview)["rows"] == 4  # ids 0, 1 in d1 and d2
    assert {p["partition"]: p["rows"] for p in as_json(preview)["partitions"]} == {"dt=d1": 2, "dt=d2": 2}
    assert as_json(expire)["dry_run"] and as_json(expire)["snapshots"] == [1, 2] and as_json(expire)["bytes"] > 0
    assert as_json(rollback) == {"dry_run": True, "snapshot_id": 1, "snapshots_removed": [3, 2],
                                 "tags_removed": [], "files_removed": as_json(rollback)["files_removed"]}
    assert len(mp.open_table(path).snapshots()) == 3  # the dry runs changed nothing
    compact = as_json(run("compact", path, "--json"))
    buckets = {(f["partition"], f["bucket"]) for f in as_json(files)}
    assert compact["snapshot_id"] == 4 and compact["files_before"] == len(as_json(files))
    assert compact["files_after"] == compact["buckets"] == len(buckets)
    assert compact["bytes_before"] > compact["bytes_after"] > 0
    restore = as_json(run("restore", path, "--tag", "v1", "--json"))
    assert restore["restored_from"] == 1 and restore["snapshot_id"] == 5
    created, deleted = as_json(run("tag", "create", path, "v5", "--json")), as_json(run("tag", "delete", path, "v5", "--json"))
    assert created == {"tag": "v5", "snapshot_id": 5} and deleted == {"tag": "v5", "deleted": True}


def test_expire_and_compact_summaries_name_counts_and_bytes(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"write-only": "true"})
    for i in range(4):
        t.write(rows(i, 1))
    code, out, err = run("expire", t.path, "--retain-max", "1", "--dry-run")
    assert code == 0 and out.startswith("would expire snapshots 1..3: would delete 0 data files, 0 changelog "
                                        "files, 6 manifest files, 0 index files (")
    assert "KiB)" in out or " B)" in out
    before = listing(t.path)
    code, out, _ = run("expire", t.path, "--retain-max", "1")
    assert code == 0 and out.startswith("expired snapshots 1..3: deleted 0 data files")
    freed = sum(size for p, size in before.items() if p not in listing(t.path) and "/snapshot/" not in p)
    assert as_json(run("expire", t.path, "--retain-max", "1", "--json"))["snapshots"] == []
    assert freed > 0


def test_tables_lists_a_warehouse(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    cat = mp.catalog(warehouse)
    for name in ("sales.orders", "sales.items", "ops.logs"):
        cat.create_table(name, SCHEMA)
    every, one, nowhere = run_all(("tables", "--warehouse", warehouse, "--json"),
                                  ("--warehouse", warehouse, "tables", "sales"),
                                  ("tables",))
    assert [(d["namespace"], d["table"]) for d in as_json(every)] == [
        ("ops", "logs"), ("sales", "items"), ("sales", "orders")]
    assert as_json(every)[0]["path"] == cat.table_path("ops.logs")
    assert one[0] == 0 and "items" in one[1] and "logs" not in one[1]
    code, out, err = nowhere
    assert code == 1 and out == "" and err.count("\n") == 1 and "--warehouse" in err


def test_health_names_the_fix_and_the_fix_works(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "snapshot.num-retained.min": "1",
                                 "snapshot.num-retained.max": "2", "write-only": "true"})
    for i in range(6):  # six level-0 runs, four snapshots past retention
        t.write(rows(i, 3))
    crashed = t.new_write("crashed")
    crashed.write(rows(100, 2))
    crashed.prepare_commit()  # never committed: an orphan file
    age(t.path)
    code, out, _ = run("health", t.path)
    assert code == 0, out
    checks = {c["check"]: c for c in as_json(run("health", t.path, "--json"))}
    assert checks["sorted runs"]["value"] == 6 and "compact" in checks["sorted runs"]["action"]
    assert checks["small files"]["value"] == 6 and checks["small files"]["action"]
    assert checks["expiration"]["value"] == 4 and f"expire {t.path}" in checks["expiration"]["action"]
    assert checks["orphan files"]["value"] == 1 and f"orphans {t.path}" in checks["orphan files"]["action"]
    assert "-> minipaimon compact" in out
    assert checks["orphan files"]["detail"].startswith("1 file (")  # counted words agree with their number
    for fix in (("compact", t.path), ("expire", t.path), ("orphans", t.path, "--older-than", "0s")):
        assert run(*fix)[0] == 0
    checks = {c["check"]: c for c in as_json(run("health", t.path, "--json"))}
    assert all(c["action"] is None for c in checks.values()), checks
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == list(range(8))
    code, out, _ = run("health", t.path)
    assert "nothing to do" in out


def test_restore_from_the_command_line_keeps_history(pk_table: mp.Table) -> None:
    path = pk_table.path
    first = sorted_ids(pk_table.scan(snapshot_id=1).to_arrow())
    before = listing(path)
    code, out, _ = run("restore", path, "--snapshot-id", "1", "--dry-run")
    assert code == 0 and "would restore snapshot 1" in out and listing(path) == before
    code, out, _ = run("restore", path, "--snapshot-id", "1")
    assert code == 0 and out.startswith("restored snapshot 1 as snapshot 4: kept ")
    t = mp.open_table(path)
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4] and sorted_ids(t.to_arrow()) == first
    code, out, _ = run("restore", path, "--snapshot-id", "3")
    assert code == 0 and len(mp.open_table(path).to_arrow()) == 13


def test_deprecated_spellings_work_with_a_warning(pk_table: mp.Table) -> None:
    path = pk_table.path
    old_flag, old_where, zero, epoch = run_all(
        ("files", path, "--snapshot", "1", "--json"),
        ("plan", path, "--where", "dt = d1", "--where", "id >= 4", "--json"),
        ("orphans", path, "--older-than", "0", "--dry-run"),
        ("orphans", path, "--older-than", str(int(time.time() * 1000) - 86_400_000), "--dry-run"))
    assert len(as_json(old_flag)) == 2 and "warning: --snapshot is deprecated" in old_flag[2]
    assert {s["partition"] for s in as_json(old_where)["splits"]} == {"dt=d1"}
    assert "unquoted value is deprecated" in old_where[2] and "\"dt = 'd1'\"" in old_where[2]
    assert "several --where options are deprecated" in old_where[2]
    code, out, err = zero
    assert code == 1 and out == "" and "nothing is older than 1970" in err and "'0s'" in err
    assert epoch[0] == 0 and "epoch milliseconds is deprecated" in epoch[2]


def test_human_sizes_in_text_and_bytes_in_json(pk_table: mp.Table) -> None:
    text, data = run_all(("files", pk_table.path), ("files", pk_table.path, "--json"))
    assert " KiB" in text[1] and "size" in text[1].splitlines()[0]
    assert all(isinstance(f["bytes"], int) and f["bytes"] > 100 for f in as_json(data))


def test_a_json_table_round_trips_through_arrow(pk_table: mp.Table) -> None:
    snapshots = as_json(run("system", pk_table.path, "snapshots", "--json"))
    assert pa.Table.from_pylist(snapshots).num_rows == 3


def test_json_errors_are_json_on_stdout_with_type_message_and_status(pk_table: mp.Table, tmp_path: Path) -> None:
    """Issue 38 item 12: with --json every outcome parses: an error is
    {"error": {type, message, exit_code}} on stdout (and its line on stderr), status non-zero."""
    missing, missing_text, usage, bad_snapshot, bad_where, ok = run_all(
        ("info", str(tmp_path / "nope"), "--json"),
        ("info", str(tmp_path / "nope")),
        ("--json", "info"),
        ("restore", pk_table.path, "--snapshot-id", "99", "--json"),
        ("--json", "delete", pk_table.path, "--where", "nope = 1", "--dry-run"),
        ("snapshots", pk_table.path, "--json"))
    code, out, err = missing
    assert code == 1 and json.loads(out) == {"error": {
        "type": "TableNotFoundError", "exit_code": 1,
        "message": f"no minipaimon table at {tmp_path / 'nope'} (no schema file)"}}
    assert err.strip() == f"minipaimon: error: no minipaimon table at {tmp_path / 'nope'} (no schema file)"
    assert missing_text[0] == 1 and missing_text[1] == "" and missing_text[2] == err  # text mode as before
    code, out, err = usage
    assert code == 2 and json.loads(out) == {"error": {
        "type": "UsageError", "message": "the following arguments are required: path", "exit_code": 2}}
    code, out, _ = bad_snapshot
    assert code == 1 and json.loads(out)["error"]["type"] == "SnapshotNotFoundError"
    code, out, _ = bad_where
    error = json.loads(out)["error"]
    assert code == 1 and error["type"] == "InvalidArgumentError" and "nope" in error["message"]
    assert [s["id"] for s in as_json(ok)] == [1, 2, 3]  # a success prints only its data


def test_expire_and_orphans_with_an_age_print_no_deprecation_warning(pk_table: mp.Table) -> None:
    """Issue 38 item 11: the command's own calls used the deprecated older_than_ms."""
    expire, orphans, number = run_all(
        ("expire", pk_table.path, "--older-than", "2d", "--dry-run"),
        ("orphans", pk_table.path, "--older-than", "0s", "--dry-run"),
        ("orphans", pk_table.path, "--older-than", "3600", "--dry-run"))
    for code, _out, err in (expire, orphans):
        assert code == 0 and err == "", err
    code, out, err = number  # a duration without its unit is no epoch-millisecond time
    assert code == 1 and "'3600s' is 3600 seconds ago" in err and "deprecated" not in err
