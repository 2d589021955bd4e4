"""The ``minipaimon`` command line: inspect and maintain a table.

```
minipaimon info      PATH                         (rows, files, sizes, what a full plan costs)
minipaimon snapshots PATH
minipaimon history   PATH [--limit N]             (per snapshot: kind, user, files and records +/-)
minipaimon files     PATH [--snapshot-id N]
minipaimon schema    PATH [--id N]
minipaimon plan      PATH [--where CONDITION] [--snapshot-id N] [--parallelism N]
minipaimon system    PATH NAME [--snapshot-id N]  (any system table, e.g. manifests)
minipaimon health    PATH                         (small files, runs, vectors, expiry, orphans)
minipaimon tables    [NAMESPACE]                  (the tables of --warehouse)
minipaimon compact   PATH [--minor]
minipaimon rewrite-manifests PATH                 (manifests clustered by partition)
minipaimon expire    PATH [--retain-max N] [--retain-min N] [--older-than TIME] [--dry-run]
minipaimon orphans   PATH [--older-than TIME] [--dry-run]
minipaimon rollback  PATH (--snapshot-id N | --tag NAME) [--dry-run]
minipaimon restore   PATH (--snapshot-id N | --tag NAME) [--dry-run]
minipaimon tag       create PATH NAME [--snapshot-id N] [--time-retained LENGTH]
                     | rename PATH NAME NEW_NAME | delete PATH NAME [NAME ...] | list PATH
minipaimon tag       auto PATH [--dry-run]        (tag.automatic-creation & retention, now)
minipaimon tag       expire PATH [--older-than TIME] [--dry-run]   (tags past their retention)
minipaimon branch    create PATH NAME [--tag T] | delete PATH NAME | list PATH | fast-forward PATH NAME
minipaimon expire-partitions PATH [--expiration-time DURATION] [--timestamp-formatter F]
                     [--timestamp-pattern P] [--strategy values-time|update-time] [--dry-run]
minipaimon migrate   PATH                         (earlier minipaimon format -> Paimon's)
minipaimon delete    PATH --where CONDITION [--dry-run]
```

PATH is a table path (local, ``file:``, ``s3://``, ``az://`` or ``abfss://``), or
``namespace.table`` in the
warehouse given by ``--warehouse ROOT`` or ``$MINIPAIMON_WAREHOUSE``. The options
``--json`` (print the command's data as JSON), ``--progress`` and ``--warehouse`` go before
or after the command; so does ``--branch NAME``: the command works on that branch of the
table (Paimon's ``branch`` option; default ``main``). CONDITION is SQL (``dt = '2025-01-01' AND status = 'void' OR id IN
(1, 2)``; the grammar is minipaimon_core.expressions.condition's), the same for ``plan`` and
``delete``. TIME is an age (``2d``, ``36 h``, ``0s``: that long before now) or an ISO
date-time (``2024-05-01T12:00``, local time unless it has an offset). Long work
(compaction, orphan scan) draws a progress bar on stderr when stderr is a terminal, or
always with ``--progress``. Sizes are printed as KiB/MiB/GiB (bytes in ``--json``).
Deprecated spellings (``--snapshot``, epoch-millisecond times, unquoted ``--where``
values) still work with a warning on stderr. Any error exits with status 1 (a usage error:
2) and one line on stderr; with ``--json`` it is also printed on stdout as
``{"error": {"type": "TableNotFoundError", "message": "...", "exit_code": 1}}``, so a script
parses every outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, NoReturn

from ..catalog import WAREHOUSE_ENV, Catalog, table_location
from ..errors import InvalidArgumentError, MiniPaimonError
from ..table import Table, open_table
from . import cli_commands as c
from .cli_commands import Output, parse_time
from .cli_format import format_table
from .cli_progress import ProgressBar


def version() -> str:
    try:
        return metadata.version("minipaimon")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class _Deprecated(argparse.Action):
    """An option's earlier spelling: stores to the same place, warns once used."""

    def __init__(self, *args: Any, instead: str, **kwargs: Any) -> None:
        self.instead = instead
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        warnings.warn(f"{option_string} is deprecated and will be removed in the next release: "
                      f"use {self.instead}", DeprecationWarning, stacklevel=2)
        setattr(namespace, self.dest, values)


class UsageError(Exception):
    """A command line argparse refuses (exit status 2)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """Raises UsageError where argparse would print and exit, so that ``main`` reports it
    as every other error (as JSON with ``--json``). Subcommand parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def _common(suppress: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after it (after: no default, so the one
    given before the command stays)."""
    p = argparse.ArgumentParser(add_help=False)
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    p.add_argument("--json", action="store_true", **default,
                   help="print the command's data as JSON on stdout (sizes in bytes, times in UTC)")
    p.add_argument("--progress", action="store_true", **default,
                   help="always draw progress bars on stderr (default: when stderr is a terminal)")
    p.add_argument("--warehouse", metavar="ROOT", **default,
                   help=f"catalog root: PATH may then be a namespace.table identifier (default: ${WAREHOUSE_ENV})")
    p.add_argument("--branch", metavar="NAME", **default,
                   help="work on this branch of the table (default: main)")
    return p


def _snapshot_id(c: argparse.ArgumentParser, help: str, required: Any = None) -> None:
    target = required if required is not None else c
    target.add_argument("--snapshot-id", type=int, metavar="N", help=help)
    target.add_argument("--snapshot", type=int, dest="snapshot_id", metavar="N", action=_Deprecated,
                        instead="--snapshot-id", help="deprecated spelling of --snapshot-id")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="minipaimon", parents=[_common(False)],
                description="Inspect and maintain minipaimon (Apache Paimon) tables.")
    p.add_argument("--version", action="version", version=f"minipaimon {version()}",
                   help="print the version and exit")
    common = _common(True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help: str, path: bool = True, parent: Any = sub) -> argparse.ArgumentParser:
        c = parent.add_parser(name, help=help, description=help, parents=[common])
        if path:
            c.add_argument("path", help="table path, or namespace.table with a warehouse")
        return c

    cmd("info", "summary of a table: keys, snapshots, rows, files and sizes, what a full plan costs")
    cmd("snapshots", "list retained snapshots")
    cmd("history", "retained snapshots, newest first, with the files and records each added and "
        "removed").add_argument("--limit", type=int, metavar="N", help="show the N newest only")
    _snapshot_id(cmd("files", "list data files"), "files of snapshot N (default: the latest)")
    cmd("schema", "show the current schema (or another)").add_argument(
        "--id", type=int, metavar="N", help="show schema N instead of the current one")
    c = cmd("plan", "plan a scan: its splits and what planning cost")
    c.add_argument("--where", action="append", default=[], metavar="CONDITION",
                   help="SQL condition, as for delete: \"dt = '2025-01-01' AND id > 3\"")
    _snapshot_id(c, "plan snapshot N (default: the latest)")
    c.add_argument("--parallelism", type=int, metavar="N", help="size append splits for N readers")
    c = cmd("system", "print a system table")
    c.add_argument("name", help="snapshots, schemas, options, files, manifests, partitions, buckets, "
                   "tags, branches, consumers, audit_log, health or history")
    _snapshot_id(c, "the table at snapshot N where it depends on one (files, manifests, ...)")
    cmd("health", "small files, sorted runs, deletion vectors, what expiration and orphan cleanup "
        "would free, each with the command that fixes it")
    cmd("tables", "list the tables of the warehouse (--warehouse or $" + WAREHOUSE_ENV + ")",
        path=False).add_argument("namespace", nargs="?", help="only this namespace (default: all)")
    compact = cmd("compact", "compact every bucket into one sorted run (--minor: merge each "
                  "bucket's new level-0 files only)")
    compact.add_argument("--full", action="store_true", help="the default (kept for scripts)")
    compact.add_argument("--minor", action="store_true",
                         help="merge each bucket's level-0 (append: small) files only")
    cmd("rewrite-manifests", "rewrite the manifests clustered by partition (filtered plans skip more)")
    c = cmd("expire", "expire old snapshots and the files only they use")
    c.add_argument("--retain-max", type=int, metavar="N", help="keep at most N snapshots "
                   "(default: snapshot.num-retained.max)")
    c.add_argument("--retain-min", type=int, metavar="N", help="keep at least N snapshots "
                   "(default: snapshot.num-retained.min)")
    c.add_argument("--older-than", metavar="TIME", help="expire snapshots committed before TIME "
                   "(default: now - snapshot.time-retained)")
    c.add_argument("--dry-run", action="store_true", help="print what would be removed, change nothing")
    c = cmd("orphans", "remove files no snapshot or tag uses (crashed writers' debris)")
    c.add_argument("--older-than", metavar="TIME", help="only files last modified before TIME "
                   "(default: 1d)")
    c.add_argument("--dry-run", action="store_true", help="list them, delete nothing")
    for name, what in (("rollback", "make a snapshot or tag the latest again: newer snapshots, their "
                        "tags and files are deleted (Paimon's rollback)"),
                       ("restore", "commit a snapshot's or tag's data as a new snapshot, keeping "
                        "every snapshot and tag (Delta's restore)")):
        c = cmd(name, what)
        target = c.add_mutually_exclusive_group(required=True)
        _snapshot_id(c, "snapshot N", target)
        target.add_argument("--tag", metavar="NAME", help="the snapshot of tag NAME")
        c.add_argument("--dry-run", action="store_true", help="print what it would do, change nothing")
    cmd("migrate", "rewrite a table of minipaimon's earlier format into Apache Paimon's, "
        "in place (local disk; its latest rows, not its history)")
    c = cmd("delete", "delete the rows a SQL condition selects, in one commit")
    c.add_argument("--where", required=True, metavar="CONDITION",
                   help="e.g. \"dt < '2025-01-01' AND status = 'void'\" (AND / OR, no parentheses)")
    c.add_argument("--dry-run", action="store_true", help="print what would be deleted, change nothing")
    tag = cmd("tag", "create, rename, delete, list or expire tags", path=False)
    tag_sub = tag.add_subparsers(dest="tag_command", required=True, metavar="ACTION")
    create = cmd("create", "pin a snapshot under a name", parent=tag_sub)
    create.add_argument("name", help="the tag's name")
    _snapshot_id(create, "tag snapshot N (default: the latest)")
    create.add_argument("--time-retained", metavar="LENGTH",
                        help="keep the tag this long (e.g. '5 d', '36 h'; Paimon's time_retained)")
    rename = cmd("rename", "rename a tag", parent=tag_sub)
    rename.add_argument("name", help="the tag's name")
    rename.add_argument("new_name", help="its new name")
    cmd("delete", "delete tags", parent=tag_sub).add_argument("name", nargs="+", help="the tags' names")
    cmd("list", "list the tags", parent=tag_sub)
    cmd("auto", "create the tags tag.automatic-creation owes and delete those past "
        "tag.num-retained-max or their retention, as a commit does", parent=tag_sub).add_argument(
        "--dry-run", action="store_true", help="print what would change, change nothing")
    c = cmd("expire", "delete the tags whose retention (tag.default-time-retained) has passed",
            parent=tag_sub)
    c.add_argument("--older-than", metavar="TIME", help="also every tag created before TIME")
    c.add_argument("--dry-run", action="store_true", help="print what would go, change nothing")
    branch = cmd("branch", "create, delete, list or fast-forward to branches", path=False)
    branch_sub = branch.add_subparsers(dest="branch_command", required=True, metavar="ACTION")
    create = cmd("create", "create a branch from a tag (or empty, with the current schema)", parent=branch_sub)
    create.add_argument("name", help="the branch's name")
    create.add_argument("--tag", metavar="T", help="start from tag T (default: an empty branch)")
    cmd("delete", "delete a branch", parent=branch_sub).add_argument("name", help="the branch's name")
    cmd("list", "list the branches", parent=branch_sub)
    cmd("fast-forward", "make the table (--branch: that branch) the branch NAME",
        parent=branch_sub).add_argument("name", help="the branch to fast-forward to")
    c = cmd("expire-partitions", "drop the partitions older than partition.expiration-time (or "
            "--expiration-time), as Paimon's expire_partitions")
    c.add_argument("--expiration-time", metavar="DURATION", help="e.g. '30 d' (default: the option)")
    c.add_argument("--timestamp-formatter", metavar="F", help="a Java pattern, e.g. yyyyMMdd")
    c.add_argument("--timestamp-pattern", metavar="P", help="e.g. '$dt $hour:00:00'")
    c.add_argument("--strategy", choices=["values-time", "update-time"], help="how a partition's time is read")
    c.add_argument("--dry-run", action="store_true", help="print what would be dropped, change nothing")
    return p


_SIMPLE: dict[str, Callable[[Table, argparse.Namespace], Output]] = {
    "info": c.cmd_info, "snapshots": c.cmd_snapshots, "history": c.cmd_history, "files": c.cmd_files,
    "schema": c.cmd_schema, "plan": c.cmd_plan, "rewrite-manifests": c.cmd_rewrite_manifests,
    "system": c.cmd_system, "health": c.cmd_health, "expire": c.cmd_expire, "rollback": c.cmd_rollback,
    "restore": c.cmd_restore, "tag": c.cmd_tag, "delete": c.cmd_delete, "branch": c.cmd_branch,
    "expire-partitions": c.cmd_expire_partitions}
_LONG: dict[str, Callable[[Table, argparse.Namespace, ProgressBar], Output]] = {
    "compact": c.cmd_compact, "orphans": c.cmd_orphans}


def _run(args: argparse.Namespace, bar: ProgressBar) -> Output:
    if args.command == "tables":
        warehouse = args.warehouse or os.environ.get(WAREHOUSE_ENV)
        if not warehouse:
            raise InvalidArgumentError(f"tables needs a warehouse: give --warehouse ROOT or set ${WAREHOUSE_ENV}")
        return c.cmd_tables(Catalog(warehouse), args.namespace)
    if args.command == "migrate":  # not opened first: a crashed migration may be mid-swap
        return c.cmd_migrate(table_location(args.path, args.warehouse))
    table = open_table(table_location(args.path, args.warehouse),
                       options={"branch": args.branch} if args.branch else None)
    if args.command in _LONG:
        return _LONG[args.command](table, args, bar)
    return _SIMPLE[args.command](table, args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv  # known before parsing: a usage error is reported as JSON too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        try:
            try:
                args = build_parser().parse_args(argv)
            except UsageError as e:
                if not as_json:
                    e.parser.print_usage(sys.stderr)
                return _fail(e.parser.prog, "UsageError", str(e), 2, as_json)
            bar = ProgressBar(sys.stderr, args.progress or sys.stderr.isatty())
            try:
                out = _run(args, bar)
            except (MiniPaimonError, OSError) as e:
                bar.close()
                return _fail("minipaimon", type(e).__name__, " ".join(str(e).split()), 1, as_json)
            except Exception as e:  # a bug: its traceback follows, on stderr
                if as_json:
                    _fail("minipaimon", type(e).__name__, " ".join(str(e).split()), 1, True)
                raise
        finally:
            for w in caught:
                if issubclass(w.category, DeprecationWarning):
                    print(f"minipaimon: warning: {w.message}", file=sys.stderr)
    print(json.dumps(out.data, default=str) if args.json else out.text)
    return 0


def _fail(prog: str, kind: str, message: str, status: int, as_json: bool) -> int:
    """Report an error: one line on stderr and, with ``--json``, its JSON on stdout."""
    print(f"{prog}: error: {message or kind}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": {"type": kind, "message": message or kind, "exit_code": status}}))
    return status


__all__ = ["UsageError", "build_parser", "format_table", "main", "parse_time", "version"]


if __name__ == "__main__":
    sys.exit(main())
