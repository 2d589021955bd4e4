"""The post-commit options by hand from Spark SQL (see minipaimon_spark.procedures):

```sql
SELECT * FROM minipaimon_expire_partitions('/data/orders', '30 d')   -- (…, true): dry run
SELECT * FROM minipaimon_auto_tags('/data/orders')                   -- (path, true): dry run
SELECT * FROM minipaimon_expire_tags('/data/orders')                 -- (path, '7d' [, dry_run])
```

``minipaimon_expire_partitions(path [, expiration_time [, dry_run]])``: as Paimon's
``expire_partitions`` procedure, with the table's ``partition.*`` options (an
``expiration_time`` of NULL: the table's ``partition.expiration-time``); one row per
partition dropped (or that would be). ``minipaimon_auto_tags`` and
``minipaimon_expire_tags``: one row per tag created or deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from minipaimon_spark.procedure_support import Args, Connection, analyzed, flag

TAG_ROWS = "tag string, action string, snapshot_id bigint, dry_run boolean"


def _tag_rows(result: Any) -> Iterator[tuple[Any, ...]]:
    for name, sid in result.created.items():
        yield name, "created", sid, result.dry_run
    for name in result.deleted:
        yield name, "deleted", None, result.dry_run


def post_commit_procedures(conn: Connection, table_arg: Callable[[Args], Any]) -> dict[str, Any]:
    """SQL name -> UDTF class of the post-commit procedures (``table_arg``: the table of a
    call's constant first argument, None if not a constant)."""

    def check_partitions(a: Args) -> None:
        from minipaimon_core.errors import InvalidArgumentError

        table = table_arg(a)
        expiration = a.value(1) if a.known(1) else None
        if table is not None and a.known(1) and expiration is None and \
                table.typed_options()["partition.expiration-time"] is None:
            raise InvalidArgumentError(f"{table.path} has no 'partition.expiration-time': give the expiration time")
        if table is not None and not table.partition_keys():
            raise InvalidArgumentError(f"{table.path} has no partitions to expire")
        if a.known(2):
            flag("dry_run", a.value(2))

    class ExpirePartitions:
        """``minipaimon_expire_partitions(path [, expiration_time [, dry_run]])``."""

        analyze = analyzed("partition string, snapshot_id bigint, dry_run boolean", check_partitions)

        def eval(self, path: str, expiration_time: str | None = None,
                 dry_run: bool = False) -> Iterator[tuple[Any, ...]]:
            r = conn.table(path).expire_partitions(expiration_time, dry_run=flag("dry_run", dry_run))
            for p in r.partitions:
                yield ",".join(f"{k}={v}" for k, v in p.items()), r.snapshot_id, r.dry_run

    def check_flag_at(i: int) -> Callable[[Args], None]:
        def check(a: Args) -> None:
            table_arg(a)
            if a.known(i):
                flag("dry_run", a.value(i))
        return check

    class AutoTags:
        """``minipaimon_auto_tags(path [, dry_run])``: tag.automatic-creation and tag
        retention now, as a commit runs them."""

        analyze = analyzed(TAG_ROWS, check_flag_at(1))

        def eval(self, path: str, dry_run: bool = False) -> Iterator[tuple[Any, ...]]:
            yield from _tag_rows(conn.table(path).create_auto_tags(dry_run=flag("dry_run", dry_run)))

    class ExpireTags:
        """``minipaimon_expire_tags(path [, older_than [, dry_run]])``: tags past their
        retention, and with ``older_than`` (an age such as '7d' or a date-time text) every
        tag created before it."""

        analyze = analyzed(TAG_ROWS, check_flag_at(2))

        def eval(self, path: str, older_than: str | None = None,
                 dry_run: bool = False) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            yield from _tag_rows(table.expire_tags(older_than=older_than, dry_run=flag("dry_run", dry_run)))

    return {"minipaimon_expire_partitions": ExpirePartitions, "minipaimon_auto_tags": AutoTags,
            "minipaimon_expire_tags": ExpireTags}


__all__ = ["post_commit_procedures"]
