"""Tags from Spark SQL: ``minipaimon_create_tag(path, name [, snapshot_id [,
time_retained]])``, ``minipaimon_rename_tag(path, name, new_name)`` and
``minipaimon_delete_tag(path, names)`` (one name or several, ``'a,b'``, as Paimon's
``delete_tag``); see minipaimon_spark.procedures."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from minipaimon_spark.procedure_support import Args, Connection, analyzed, integer


def tag_procedures(conn: Connection, table_arg: Callable[[Args], Any]) -> dict[str, Any]:
    """SQL name -> UDTF class of the tag procedures; ``table_arg`` opens the table of a
    call's constant first argument (None if it is not a constant)."""

    def check_create_tag(a: Args) -> None:
        from minipaimon_core import InvalidArgumentError
        from minipaimon_core.format.layout import check_name

        table = table_arg(a)
        if a.known(1):
            check_name("tag", a.value(1))
        if table is None:
            return
        if a.known(1) and a.value(1) in table.tags():
            raise InvalidArgumentError(
                f"tag {a.value(1)!r} already exists (on snapshot {table.tags()[a.value(1)]}); "
                "delete it first or pick another name")
        if a.known(3) and a.value(3) is not None:
            from minipaimon_core.expressions.times import duration_ms

            duration_ms(a.value(3), "time_retained")
        if a.known(2) and a.value(2) is not None:
            table.snapshot(integer("snapshot_id", a.value(2)))
        elif table.latest_snapshot() is None:
            raise InvalidArgumentError(f"{table.layout.where} has no snapshot to tag yet")

    class CreateTag:
        """``minipaimon_create_tag(path, name [, snapshot_id [, time_retained]])``: tag the
        latest (or the given: NULL for the latest) snapshot, kept ``time_retained`` ('5 d')."""

        analyze = analyzed("tag string, snapshot_id bigint", check_create_tag)

        def eval(self, path: str, name: str, snapshot_id: Any = None,
                 time_retained: Any = None) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            table.create_tag(name, None if snapshot_id is None else integer("snapshot_id", snapshot_id),
                             time_retained)
            yield name, table.tags()[name]

    def check_rename_tag(a: Args) -> None:
        from minipaimon_core import InvalidArgumentError
        from minipaimon_core.format.layout import check_name

        if a.known(2):
            check_name("tag", a.value(2))
        table = table_arg(a)
        if table is not None and a.known(1):
            table.tag_snapshot(a.value(1))
            if a.known(2) and a.value(2) in table.tags():
                raise InvalidArgumentError(f"tag {a.value(2)!r} already exists")

    class RenameTag:
        """``minipaimon_rename_tag(path, name, new_name)``: rename a tag (Paimon's
        ``rename_tag``); the row names it and what it pins."""

        analyze = analyzed("tag string, snapshot_id bigint", check_rename_tag)

        def eval(self, path: str, name: str, new_name: str) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            table.rename_tag(name, new_name)
            yield new_name, table.tag_snapshot(new_name).id

    def tag_names(value: str) -> list[str]:
        """Paimon's ``delete_tag`` argument: one name, or several separated by commas."""
        from minipaimon_core import InvalidArgumentError

        names = [n.strip() for n in str(value).split(",") if n.strip()]
        if not names:
            raise InvalidArgumentError(f"minipaimon_delete_tag names no tag: {value!r}")
        return names

    def check_delete_tag(a: Args) -> None:
        table = table_arg(a)
        if table is not None and a.known(1):
            for name in tag_names(a.value(1)):
                table.tag_snapshot(name)

    class DeleteTag:
        """``minipaimon_delete_tag(path, names)``: delete a tag, or several ('a,b', as
        Paimon's); a row per tag names what it pinned."""

        analyze = analyzed("tag string, snapshot_id bigint", check_delete_tag)

        def eval(self, path: str, names: str) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            doomed = tag_names(names)
            pinned = [table.tag_snapshot(name).id for name in doomed]
            table.delete_tag(doomed)
            yield from zip(doomed, pinned)

    return {"minipaimon_create_tag": CreateTag, "minipaimon_rename_tag": RenameTag,
            "minipaimon_delete_tag": DeleteTag}


__all__ = ["tag_procedures"]
