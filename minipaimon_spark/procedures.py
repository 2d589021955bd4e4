"""Table maintenance from Spark SQL: procedures as Python table functions (UDTFs).

Spark gives Python data sources no catalog and no ``CALL``, but it runs Python UDTFs from
SQL, so every procedure is a table function that does its work and returns what it did:

```sql
SELECT * FROM minipaimon_compact('/data/orders')                 -- or (path, true): full
SELECT * FROM minipaimon_expire_snapshots('/data/orders', 10)
SELECT * FROM minipaimon_rollback('/data/orders', 5)             -- or a tag name: 'daily'
SELECT * FROM minipaimon_create_tag('/data/orders', 'daily')     -- or (path, name, snapshot)
SELECT * FROM minipaimon_delete_tag('/data/orders', 'daily')
SELECT * FROM minipaimon_remove_orphan_files('/data/orders', 1700000000000)  -- (…, true): dry run
SELECT * FROM minipaimon_diff('/data/orders', 3, 'daily')        -- rows changed, with _row_kind
SELECT * FROM minipaimon_tables('/data/warehouse')               -- the tables of a catalog
```

``minipaimon_spark.register(spark)`` registers them. Each runs once, in one Spark task (an
executor's Python worker, never the driver), and returns one or more result rows. Bad
arguments raise the core's typed errors (``InvalidArgumentError``, ``TableNotFoundError``,
...) whose one-line message ends Spark's error report.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.functions import udtf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _table(path: Any) -> Any:
    import minipaimon_core as mp

    if not isinstance(path, str) or not path:
        raise mp.InvalidArgumentError(f"the first argument must be a table path, got {path!r}")
    return mp.open_table(path)


def _flag(name: str, value: Any) -> bool:
    from minipaimon_core import InvalidArgumentError

    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be true or false, got {value!r}")
    return value


def _int(name: str, value: Any) -> int:
    from minipaimon_core import InvalidArgumentError

    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    return value


class Compact:
    """``minipaimon_compact(path [, full])``: compact every bucket, one COMPACT commit.

    One row: the new snapshot id (null if there was nothing to compact), the buckets
    compacted, and the data files replaced and written.
    """

    RETURNS = "snapshot_id bigint, buckets int, files_removed int, files_added int"

    def eval(self, path: str, full: bool = False) -> Iterator[tuple[Any, ...]]:
        from minipaimon_core.compaction import bucket_units, commit_compaction, compact_bucket

        table = _table(path)
        full = _flag("full", full)
        messages = [m for m in (compact_bucket(table, u, full) for u in bucket_units(table)) if m]
        snapshot_id = commit_compaction(table, messages, raise_on_conflict=True) if messages else None
        removed = sum(len(m.compactBefore) for m in messages)
        added = sum(len(m.compactAfter) for m in messages)
        yield snapshot_id, len(messages), removed, added


class ExpireSnapshots:
    """``minipaimon_expire_snapshots(path, retain_max)``: keep the newest ``retain_max``
    snapshots (tags and consumers still pin theirs); one row of counts."""

    RETURNS = ("snapshots_expired int, data_files_deleted int, changelog_files_deleted int, "
               "manifests_deleted int")

    def eval(self, path: str, retain_max: int) -> Iterator[tuple[Any, ...]]:
        result = _table(path).expire_snapshots(retain_max=_int("retain_max", retain_max))
        yield (len(result.snapshots), len(result.data_files), len(result.changelog_files),
               len(result.manifests))


class Rollback:
    """``minipaimon_rollback(path, snapshot_id | tag)``: an integer is a snapshot id, a string
    a tag name; newer snapshots, their tags and files go."""

    RETURNS = "snapshot_id bigint, snapshots_removed int, tags_removed int, files_deleted int"

    def eval(self, path: str, target: Any) -> Iterator[tuple[Any, ...]]:
        from minipaimon_core import InvalidArgumentError

        table = _table(path)
        if isinstance(target, str):
            result = table.rollback_to(tag=target)
        elif isinstance(target, int) and not isinstance(target, bool):
            result = table.rollback_to(snapshot_id=target)
        else:
            raise InvalidArgumentError(
                f"rollback target must be a snapshot id or a tag name, got {target!r}")
        yield result.snapshot_id, len(result.snapshots), len(result.tags), len(result.files)


class CreateTag:
    """``minipaimon_create_tag(path, name [, snapshot_id])``: tag the latest (or the given)
    snapshot."""

    RETURNS = "tag string, snapshot_id bigint"

    def eval(self, path: str, name: str, snapshot_id: Any = None) -> Iterator[tuple[Any, ...]]:
        table = _table(path)
        sid = None if snapshot_id is None else _int("snapshot_id", snapshot_id)
        table.create_tag(name, sid)
        yield name, table.tags()[name]


class DeleteTag:
    """``minipaimon_delete_tag(path, name)``: delete a tag; the row names what it pinned."""

    RETURNS = "tag string, snapshot_id bigint"

    def eval(self, path: str, name: str) -> Iterator[tuple[Any, ...]]:
        table = _table(path)
        snapshot_id = table.tag_snapshot(name).id
        table.delete_tag(name)
        yield name, snapshot_id


class RemoveOrphanFiles:
    """``minipaimon_remove_orphan_files(path, older_than_ms [, dry_run])``: one row per file
    that no snapshot or tag references and that was last modified before ``older_than_ms``
    (deleted, or only listed with ``dry_run``)."""

    RETURNS = "path string, dry_run boolean"

    def eval(self, path: str, older_than_ms: int, dry_run: bool = False) -> Iterator[tuple[Any, ...]]:
        result = _table(path).remove_orphan_files(older_than_ms=_int("older_than_ms", older_than_ms),
                                                  dry_run=_flag("dry_run", dry_run))
        for name in result.files:
            yield name, result.dry_run


class RewriteManifests:
    """``minipaimon_rewrite_manifests(path)``: cluster the manifests by partition (one new
    COMPACT snapshot with the same files); one row: the snapshot and the manifest counts."""

    RETURNS = "snapshot_id bigint, manifests_before int, manifests_after int"

    def eval(self, path: str) -> Iterator[tuple[Any, ...]]:
        result = _table(path).rewrite_manifests()
        yield result.snapshot_id, result.manifests_before, result.manifests_after


class Tables:
    """``minipaimon_tables(warehouse)``: one row per table of the warehouse catalog."""

    RETURNS = "namespace string, table string, path string"

    def eval(self, warehouse: str) -> Iterator[tuple[Any, ...]]:
        import minipaimon_core as mp

        if not isinstance(warehouse, str) or not warehouse:
            raise mp.InvalidArgumentError(f"the argument must be a warehouse path, got {warehouse!r}")
        catalog = mp.catalog(warehouse)
        for namespace in catalog.list_namespaces():
            for name in catalog.list_tables(namespace):
                yield namespace, name, catalog.table_path(f"{namespace}.{name}")


class Diff:
    """``minipaimon_diff(path, from, to)``: the rows that differ between two snapshots (each
    a snapshot id or a tag name): every column plus ``_row_kind`` (+I, -D, -U/+U pairs). The
    result schema is the table's, found when Spark analyzes the query."""

    @staticmethod
    def analyze(path: Any, start: Any, end: Any) -> Any:
        from pyspark.sql.types import StringType, StructField
        from pyspark.sql.udtf import AnalyzeResult

        from minipaimon_core.kinds import ROW_KIND_COLUMN
        from minipaimon_spark.types import to_spark_schema

        schema = to_spark_schema(_table(path.value).schema())
        return AnalyzeResult(schema=schema.add(StructField(ROW_KIND_COLUMN, StringType(), False)))

    def eval(self, path: str, start: Any, end: Any) -> Iterator[tuple[Any, ...]]:
        changes = _table(path).diff(_endpoint("from", start), _endpoint("to", end))
        for batch in changes.to_batches():
            yield from zip(*(column.to_pylist() for column in batch.columns))


def _endpoint(name: str, value: Any) -> int | str:
    from minipaimon_core import InvalidArgumentError

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidArgumentError(f"{name} must be a snapshot id or a tag name, got {value!r}")
    return value


PROCEDURES: dict[str, Any] = {  # SQL name -> UDTF class (its RETURNS is the result schema)
    "minipaimon_compact": Compact,
    "minipaimon_expire_snapshots": ExpireSnapshots,
    "minipaimon_rollback": Rollback,
    "minipaimon_create_tag": CreateTag,
    "minipaimon_delete_tag": DeleteTag,
    "minipaimon_remove_orphan_files": RemoveOrphanFiles,
    "minipaimon_diff": Diff,
    "minipaimon_tables": Tables,
    "minipaimon_rewrite_manifests": RewriteManifests,
}


def register_procedures(spark: SparkSession) -> None:
    """Register every procedure as a SQL table function of ``spark``."""
    for name, cls in PROCEDURES.items():
        returns = getattr(cls, "RETURNS", None)  # None: the schema comes from analyze()
        function: Any = udtf(cls, returnType=returns)  # a UserDefinedTableFunction
        spark.udtf.register(name, function)
