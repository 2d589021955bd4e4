"""The command line's branches: ``minipaimon branch create|delete|list|fast-forward`` and
``--branch NAME`` on every other command (run in this process: ``cli.main``)."""

from __future__ import annotations

import json

import minipaimon_core as mp
from minipaimon_core.cli.cli import main
from tests.helpers import SCHEMA, rows, sorted_ids


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_branch_commands_and_the_branch_option(tmp_path, capsys):
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(0, 3))
    t.create_tag("t1")
    t.write(rows(3, 2))
    assert _run(capsys, "branch", "create", path, "audit", "--tag", "t1")[:2] == (
        0, "created branch audit (from tag t1)\n")
    assert _run(capsys, "branch", "create", path, "scratch")[0] == 0
    assert _run(capsys, "--json", "branch", "list", path)[1] == '["audit", "scratch"]\n'
    t.branch("audit").write(rows(10, 1))
    code, out, _ = _run(capsys, "snapshots", path, "--branch", "audit", "--json")
    assert code == 0 and [s["id"] for s in json.loads(out)] == [1, 2]
    code, out, _ = _run(capsys, "--branch", "audit", "tag", "create", path, "checked")
    assert code == 0 and t.branch("audit").tags() == {"t1": 1, "checked": 2} and "checked" not in t.tags()
    code, out, _ = _run(capsys, "branch", "fast-forward", path, "audit")
    assert code == 0 and "latest snapshot 2" in out
    assert sorted_ids(mp.open_table(path).to_arrow()) == [0, 1, 2, 10]
    assert _run(capsys, "branch", "delete", path, "scratch")[0] == 0
    assert _run(capsys, "branch", "list", path)[1] == "audit\n"
    code, _, err = _run(capsys, "snapshots", path, "--branch", "nope")
    assert code == 1 and "no branch 'nope'" in err
    code, _, err = _run(capsys, "branch", "create", path, "main")
    assert code == 1 and "invalid branch name 'main'" in err
    code, _, err = _run(capsys, "branch", "delete", path, "scratch")
    assert code == 1 and "no branch 'scratch'" in err
