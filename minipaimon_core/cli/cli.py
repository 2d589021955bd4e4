"""The ``minipaimon`` command line: inspect and maintain a table.

```
minipaimon info      PATH
minipaimon snapshots PATH
minipaimon files     PATH [--snapshot N]
minipaimon schema    PATH [--id N]
minipaimon plan      PATH [--where "COL OP VALUE"]... [--snapshot N] [--parallelism N]
minipaimon system    PATH NAME [--snapshot N]     (any system table, e.g. manifests)
minipaimon compact   PATH [--minor]
minipaimon rewrite-manifests PATH                 (manifests clustered by partition)
minipaimon expire    PATH [--retain-max N] [--retain-min N] [--older-than TIME]
minipaimon orphans   PATH [--older-than TIME] [--dry-run]
minipaimon rollback  PATH (--snapshot N | --tag NAME)
minipaimon tag       create PATH NAME [--snapshot N] | delete PATH NAME | list PATH
minipaimon migrate   PATH                         (earlier minipaimon format -> Paimon's)
minipaimon delete    PATH --where "CONDITION" [--dry-run]
```

PATH is a table path (local, ``file:``, ``s3://``, ``az://`` or ``abfss://``), or ``namespace.table`` in the
warehouse given by ``--warehouse ROOT`` (before the command) or ``$MINIPAIMON_WAREHOUSE``.
``plan`` prints what planning a scan costs (manifests read / skipped, entries, files,
splits, time) and the splits; ``--where`` terms are ANDed, OP one of = != < <= > >= or
``COL is [not] null``, VALUE cast to the column's type. TIME is epoch milliseconds, an ISO date-time (``2024-05-01T12:00``, local time unless it has
an offset), or an age such as ``2d`` / ``36 h`` (that long before now). Long work
(compaction, orphan scan) draws a progress bar on stderr when stderr is a terminal, or
always with ``--progress``. ``delete`` deletes the rows a SQL condition selects
(``dt < '2025-01-01' AND status = 'void'``; the grammar is minipaimon_core.expressions.condition's) in
one commit; ``--dry-run`` prints what it would delete, per partition, and changes nothing.
Any error exits with status 1 and one line on stderr.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..catalog import WAREHOUSE_ENV, table_location
from ..dml.dml_preview import preview_delete
from ..errors import InvalidArgumentError, MiniPaimonError
from ..expressions.condition import parse_condition
from ..format import data_types
from ..format.options import parse_duration_ms
from ..maintenance.compaction import compact_table
from ..metadata.manifest_io import live_files
from ..migrate import migrate
from ..read.scan import PlanStats
from ..table import Table, open_table
from .cli_format import format_arrow, format_table, size_text, time_text
from .cli_progress import ProgressBar


def parse_time(text: str, now_ms: int | None = None) -> int:
    """TIME argument -> epoch ms (see module docs). Raises InvalidArgumentError."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        return now - parse_duration_ms(value)
    except ValueError:
        pass
    try:
        return int(datetime.datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError:
        raise InvalidArgumentError(
            f"cannot read time {text!r}: give epoch milliseconds, an ISO date-time or an age like '2d'"
        ) from None


# -- commands ------------------------------------------------------------------------------------


def cmd_info(t: Table, args: argparse.Namespace) -> str:
    snaps = t.snapshots()
    latest = snaps[-1] if snaps else None
    files = live_files(t.manifests, latest)
    schema = t.table_schema
    rows = [
        ("path", t.path),
        ("primary keys", ", ".join(schema.primaryKeys) or "(none: append table)"),
        ("partition keys", ", ".join(schema.partitionKeys) or "(none)"),
        ("bucket", schema.options.get("bucket", "-1")),
        ("schema id", schema.id),
        ("columns", len(schema.fields)),
        ("snapshots", f"{len(snaps)} (ids {snaps[0].id}..{snaps[-1].id})" if snaps else "0"),
        ("latest commit", f"{latest.commitKind} at {time_text(latest.timeMillis)}" if latest else ""),
        ("records", latest.totalRecordCount if latest else 0),
        ("data files", f"{len(files)} ({size_text(sum(e.file.fileSize for e in files))})"),
        ("tags", len(t.tags())),
        ("consumers", len(t.consumers())),
        ("full plan", _plan_cost(_planned(t))),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def _planned(t: Table) -> PlanStats:
    """The stats of planning a full scan on a fresh handle (nothing cached)."""
    scan = open_table(t.path, t.io).scan()
    scan.plan()
    return scan.stats


def _plan_cost(s: PlanStats) -> str:
    return (f"{s.seconds * 1000:.1f} ms: {s.manifests_read} of {s.manifests} manifests read "
            f"({s.manifests - s.manifests_read} skipped), {s.entries} entries, {s.files} files, "
            f"{s.splits} splits")


_TERM = re.compile(r"^\s*(\w+)\s*(=|!=|<>|<=|>=|<|>)\s*(.*?)\s*$")
_NULL_TERM = re.compile(r"^\s*(\w+)\s+is\s+(not\s+)?null\s*$", re.IGNORECASE)


def parse_where(terms: Sequence[str], schema: pa.Schema) -> list[Any] | None:
    """``["p = 3", "q is null"]`` -> a one-conjunction filter, values cast to the column type.

    Raises InvalidArgumentError naming the term that is malformed or names no column.
    """
    out: list[Any] = []
    for text in terms:
        m, n = _TERM.match(text), _NULL_TERM.match(text)
        match = n or m
        column = match.group(1) if match is not None else None
        if column is None or column not in schema.names:
            raise InvalidArgumentError(
                f"--where {text!r}: expected 'COLUMN OP VALUE' (OP one of = != < <= > >=) or "
                f"'COLUMN is [not] null' with a column of {schema.names}")
        if n is not None:
            out.append((column, "is not null" if n.group(2) else "is null", None))
            continue
        assert m is not None
        raw = m.group(3).strip("'\"")
        try:
            value = pa.array([raw]).cast(schema.field(column).type).to_pylist()[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise InvalidArgumentError(
                f"--where {text!r}: {raw!r} is not a {schema.field(column).type} value") from None
        out.append((column, "!=" if m.group(2) == "<>" else m.group(2), value))
    return out or None


def cmd_plan(t: Table, args: argparse.Namespace) -> str:
    scan = open_table(t.path, t.io).scan(filter=parse_where(args.where, t.schema()),
                                         snapshot_id=args.snapshot, parallelism=args.parallelism)
    splits = scan.plan()
    rows = [(str(s.partition), s.bucket, len(s.files), s.row_count, sum(f.fileSize for f in s.files),
             s.raw_convertible) for s in splits]
    return format_table(["partition", "bucket", "files", "records", "bytes", "raw"], rows) + \
        f"\n\nplan: {_plan_cost(scan.stats)}"


def cmd_snapshots(t: Table, args: argparse.Namespace) -> str:
    rows = [(s.id, s.schemaId, s.commitKind, time_text(s.timeMillis), s.commitUser, s.commitIdentifier,
             s.totalRecordCount, s.deltaRecordCount) for s in t.snapshots()]
    return format_table(["id", "schema", "kind", "committed", "user", "identifier", "records", "delta"], rows)


def cmd_files(t: Table, args: argparse.Namespace) -> str:
    files = t.system_table("files", args.snapshot)
    rows = [(f["partition"], f["bucket"], f["level"], f["record_count"], f["file_size_in_bytes"],
             f["schema_id"], f["file_path"].rsplit("/", 1)[-1]) for f in files.to_pylist()]
    return format_table(["partition", "bucket", "level", "records", "bytes", "schema", "file"], rows)


def cmd_schema(t: Table, args: argparse.Namespace) -> str:
    schema = t.schema_by_id(args.id) if args.id is not None else t.table_schema
    rows = [(f.id, f.name, str(data_types.to_arrow(f.type)), data_types.nullable(f.type),
             "PK" if f.name in schema.primaryKeys else "") for f in schema.fields]
    text = format_table(["field id", "name", "type", "nullable", "key"], rows)
    text += f"\n\nschema id {schema.id}; primary keys: {', '.join(schema.primaryKeys) or '-'}; "
    text += f"partition keys: {', '.join(schema.partitionKeys) or '-'}"
    if schema.options:
        text += "\n\n" + format_table(["option", "value"], sorted(schema.options.items()))
    return text


def cmd_system(t: Table, args: argparse.Namespace) -> str:
    return format_arrow(t.system_table(args.name, args.snapshot))


def cmd_compact(t: Table, args: argparse.Namespace, bar: ProgressBar) -> str:
    def progress(done: int, total: int) -> None:
        bar("compacting buckets", done, total)

    snap_id = compact_table(t, "minor" if args.minor else "full", progress=progress, raise_on_conflict=True)
    bar.close()
    return f"compacted: snapshot {snap_id}" if snap_id is not None else "nothing to compact"


def cmd_rewrite_manifests(t: Table, args: argparse.Namespace) -> str:
    r = t.rewrite_manifests()
    if r.snapshot_id is None:
        return "nothing to rewrite: the table has no snapshot"
    return (f"rewrote {r.manifests_before} manifests into {r.manifests_after} clustered by partition: "
            f"snapshot {r.snapshot_id}")


def cmd_expire(t: Table, args: argparse.Namespace) -> str:
    older = parse_time(args.older_than) if args.older_than is not None else None
    r = t.expire_snapshots(args.retain_max, args.retain_min, older)
    if not r.snapshots:
        return "nothing to expire"
    ids = f"{r.snapshots[0]}..{r.snapshots[-1]}" if len(r.snapshots) > 1 else str(r.snapshots[0])
    return (f"expired snapshots {ids}: deleted {len(r.data_files)} data files, "
            f"{len(r.changelog_files)} changelog files, {len(r.manifests)} manifest files")


def cmd_orphans(t: Table, args: argparse.Namespace, bar: ProgressBar) -> str:
    older = parse_time(args.older_than) if args.older_than is not None else None
    r = t.remove_orphan_files(older, dry_run=args.dry_run, progress=bar)
    bar.close()
    verb = "would delete" if r.dry_run else "deleted"
    lines = [p.removeprefix(t.layout.root + "/") for p in r.files]
    return "\n".join([*lines, f"{verb} {len(r.files)} orphan files ({size_text(r.bytes)})"])


def cmd_rollback(t: Table, args: argparse.Namespace) -> str:
    r = t.rollback_to(snapshot_id=args.snapshot, tag=args.tag)
    text = f"rolled back to snapshot {r.snapshot_id}: removed {len(r.snapshots)} snapshots"
    if r.tags:
        text += f", tags {', '.join(r.tags)}"
    return text + f" and {len(r.files)} files"


def cmd_tag(t: Table, args: argparse.Namespace) -> str:
    if args.tag_command == "create":
        t.create_tag(args.name, args.snapshot)
        return f"created tag {args.name} on snapshot {t.tags()[args.name]}"
    if args.tag_command == "delete":
        t.delete_tag(args.name)
        return f"deleted tag {args.name}"
    return format_arrow(t.system_table("tags"))


def cmd_delete(t: Table, args: argparse.Namespace) -> str:
    flt = parse_condition(args.where, t.schema())
    if args.dry_run:
        preview = preview_delete(t.context(), flt)
        rows = [(p or "(table)", n, files) for p, n, files in preview.partitions]
        files = "files marked (deletion vectors)" if preview.marks else "files rewritten"
        table = format_table(["partition", "rows", files], rows) + "\n\n" if rows else ""
        return f"{table}would delete {preview.rows} rows (dry run: nothing changed)"
    deleted = t.delete(flt)
    latest = t.latest_snapshot()
    return f"deleted {deleted} rows" + (f": snapshot {latest.id}" if deleted and latest else "")


def cmd_migrate(path: str) -> str:
    result = migrate(path)
    if not result.migrated:
        return f"{result.path} is in Apache Paimon's format already"
    lines = [f"migrated {result.path}: {result.files_reused} data files reused, "
             f"{result.rows_rewritten} rows rewritten"]
    if result.tags_dropped:
        lines.append(f"tags not carried over: {', '.join(result.tags_dropped)}")
    return "\n".join(lines)


# -- parsing ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="minipaimon", description="Inspect and maintain a minipaimon table.")
    p.add_argument("--progress", action="store_true", help="always draw progress bars on stderr")
    p.add_argument("--warehouse", help="catalog root: PATH may then be a namespace.table identifier "
                   f"(default: ${WAREHOUSE_ENV})")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help)
        c.add_argument("path", help="table path, or namespace.table with a warehouse")
        return c

    cmd("info", "summary of a table")
    cmd("snapshots", "list retained snapshots")
    cmd("files", "list data files").add_argument("--snapshot", type=int)
    cmd("schema", "show the (or one) schema").add_argument("--id", type=int)
    c = cmd("plan", "plan a scan: its splits and what planning cost")
    c.add_argument("--where", action="append", default=[], metavar="TERM",
                   help="'COL OP VALUE' or 'COL is [not] null' (repeat: AND)")
    c.add_argument("--snapshot", type=int)
    c.add_argument("--parallelism", type=int, help="size append splits for N readers")
    c = cmd("system", "print a system table")
    c.add_argument("name")
    c.add_argument("--snapshot", type=int)
    compact = cmd("compact", "compact every bucket into one sorted run (--minor: merge each "
                  "bucket's new level-0 files only)")
    compact.add_argument("--full", action="store_true", help="the default (kept for scripts)")
    compact.add_argument("--minor", action="store_true")
    cmd("rewrite-manifests", "rewrite the manifests clustered by partition (filtered plans skip more)")
    c = cmd("expire", "expire old snapshots")
    c.add_argument("--retain-max", type=int)
    c.add_argument("--retain-min", type=int)
    c.add_argument("--older-than", metavar="TIME")
    c = cmd("orphans", "remove orphan files")
    c.add_argument("--older-than", metavar="TIME", help="default: 1 day ago")
    c.add_argument("--dry-run", action="store_true")
    c = cmd("rollback", "roll back to a snapshot or tag")
    target = c.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=int)
    target.add_argument("--tag")
    cmd("migrate", "rewrite a table of minipaimon's earlier format into Apache Paimon's, "
        "in place (local disk; its latest rows, not its history)")
    c = cmd("delete", "delete the rows a SQL condition selects, in one commit")
    c.add_argument("--where", required=True, metavar="CONDITION",
                   help="e.g. \"dt < '2025-01-01' AND status = 'void'\" (AND / OR, no parentheses)")
    c.add_argument("--dry-run", action="store_true", help="print what would be deleted, change nothing")
    tag = sub.add_parser("tag", help="create, delete or list tags")
    tag_sub = tag.add_subparsers(dest="tag_command", required=True)
    create = tag_sub.add_parser("create")
    create.add_argument("path")
    create.add_argument("name")
    create.add_argument("--snapshot", type=int)
    delete = tag_sub.add_parser("delete")
    delete.add_argument("path")
    delete.add_argument("name")
    tag_sub.add_parser("list").add_argument("path")
    return p


_SIMPLE = {"info": cmd_info, "snapshots": cmd_snapshots, "files": cmd_files, "schema": cmd_schema,
           "plan": cmd_plan, "rewrite-manifests": cmd_rewrite_manifests,
           "system": cmd_system, "expire": cmd_expire, "rollback": cmd_rollback, "tag": cmd_tag,
           "delete": cmd_delete}
_LONG = {"compact": cmd_compact, "orphans": cmd_orphans}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    args = build_parser().parse_args(argv)
    bar = ProgressBar(sys.stderr, args.progress or sys.stderr.isatty())
    try:
        if args.command == "migrate":  # not opened first: a crashed migration may be mid-swap
            print(cmd_migrate(table_location(args.path, args.warehouse)))
            return 0
        table = open_table(table_location(args.path, args.warehouse))
        if args.command in _LONG:
            out = _LONG[args.command](table, args, bar)
        else:
            out = _SIMPLE[args.command](table, args)
    except (MiniPaimonError, OSError) as e:
        bar.close()
        message = " ".join(str(e).split()) or type(e).__name__
        print(f"minipaimon: error: {message}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
