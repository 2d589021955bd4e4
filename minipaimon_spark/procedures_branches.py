"""Branches from Spark SQL (see minipaimon_spark.procedures), as Paimon's ``sys.create_branch``,
``sys.delete_branch`` and ``sys.fast_forward``:

```sql
SELECT * FROM minipaimon_create_branch('/data/orders', 'audit', 'daily')  -- from a tag; or (path, name): empty
SELECT * FROM minipaimon_branches('/data/orders')                         -- one row per branch
SELECT * FROM minipaimon_fast_forward('/data/orders', 'audit')            -- main becomes the branch
SELECT * FROM minipaimon_delete_branch('/data/orders', 'audit')
```

Reads and writes of a branch take Paimon's ``branch`` option
(``spark.read.format("minipaimon").option("branch", "audit")``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from minipaimon_spark.procedure_support import Args, Connection, analyzed


def branch_procedures(conn: Connection, table_arg: Callable[[Args], Any]) -> dict[str, Any]:
    """SQL name -> UDTF class of the branch procedures; ``table_arg`` opens the table of a
    call's constant first argument (None if it is not a constant)."""

    def check_create(a: Args) -> None:
        from minipaimon_core import InvalidArgumentError
        from minipaimon_core.format.branch_names import check_branch_name

        table = table_arg(a)
        if a.known(1):
            check_branch_name(a.value(1))
        if table is None:
            return
        if a.known(1) and a.value(1) in table.branches():
            raise InvalidArgumentError(f"branch {a.value(1)!r} already exists in {table.path}")
        if a.known(2) and a.value(2) is not None:
            table.tag_snapshot(a.value(2))

    class CreateBranch:
        """``minipaimon_create_branch(path, name [, tag])``: a branch from tag ``tag`` (its
        snapshot the branch's first), or empty with the current schema; one row."""

        analyze = analyzed("branch string, tag string, snapshot_id bigint", check_create)

        def eval(self, path: str, name: str, tag: str | None = None) -> Iterator[tuple[Any, ...]]:
            branch = conn.table(path).create_branch(name, tag)
            latest = branch.latest_snapshot()
            yield name, tag, latest.id if latest is not None else None

    def check_existing(a: Args) -> None:
        table = table_arg(a)
        if table is not None and a.known(1):
            table.branch(a.value(1))  # BranchNotFoundError, or a bad name

    class DeleteBranch:
        """``minipaimon_delete_branch(path, name)``: delete a branch (its files are left to
        orphan cleanup); one row."""

        analyze = analyzed("branch string, deleted boolean", check_existing)

        def eval(self, path: str, name: str) -> Iterator[tuple[Any, ...]]:
            conn.table(path).delete_branch(name)
            yield name, True

    class FastForward:
        """``minipaimon_fast_forward(path, name)``: the table's main branch becomes branch
        ``name`` (its snapshots, schemas and tags from the branch's first snapshot on);
        one row: the latest snapshot after."""

        analyze = analyzed("branch string, snapshot_id bigint", check_existing)

        def eval(self, path: str, name: str) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            table.fast_forward(name)
            latest = table.latest_snapshot()
            yield name, latest.id if latest is not None else None

    class Branches:
        """``minipaimon_branches(path)``: one row per branch (main aside): its name and
        latest snapshot (null: none yet)."""

        analyze = analyzed("branch string, latest_snapshot_id bigint", lambda a: None if table_arg(a) else None)

        def eval(self, path: str) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            for name in table.branches():
                latest = table.branch(name).latest_snapshot()
                yield name, latest.id if latest is not None else None

    return {
        "minipaimon_create_branch": CreateBranch,
        "minipaimon_delete_branch": DeleteBranch,
        "minipaimon_fast_forward": FastForward,
        "minipaimon_branches": Branches,
    }


__all__ = ["branch_procedures"]
