"""The commands of the ``minipaimon`` command line (minipaimon_core.cli.cli parses and runs them).

Each command returns an :class:`Output`: the text a person reads (aligned tables, human
sizes) and the data ``--json`` prints (plain JSON: numbers as numbers, sizes in bytes,
times as ISO 8601 UTC).
"""

from __future__ import annotations

import argparse
import datetime
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog
from ..dml.dml_preview import preview_delete
from ..expressions.condition import parse_condition
from ..expressions.times import datetime_of_ms, point_in_time_ms
from ..format import data_types
from ..format.manifest_file import ADD
from ..maintenance.compaction import compact_table
from ..maintenance.restore import target_snapshot
from ..metadata.manifest_io import live_files
from ..migrate import migrate
from ..read.scan import PlanStats
from ..table import Table, open_table
from .cli_format import format_arrow, format_table, size_text, time_text
from .cli_progress import ProgressBar
from .cli_where import parse_where


@dataclass(frozen=True)
class Output:
    """What a command prints: ``text`` for people, ``data`` for ``--json``."""

    text: str
    data: Any


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC (the JSON form of every time)."""
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")


def parse_time(text: str, now_ms: int | None = None) -> int:
    """A TIME argument (an age like ``2d``, or an ISO date-time, local time unless it has an
    offset) -> epoch ms. Bare epoch milliseconds still work with a deprecation warning; 0 is
    refused. Raises InvalidArgumentError."""
    from ..expressions.times import epoch_ms_deprecated

    value = text.strip()
    if value.isdigit():
        return epoch_ms_deprecated(int(value), "--older-than as epoch milliseconds",
                                   "--older-than with an age or a date-time")
    return point_in_time_ms(value, "--older-than", now_ms)


def rows_of(table: Any) -> list[dict[str, Any]]:
    """An Arrow table's rows for JSON: times as ISO text."""
    out = table.to_pylist()
    for row in out:
        for k, v in row.items():
            if isinstance(v, datetime.datetime):
                row[k] = v.isoformat(timespec="milliseconds")
    return out


# -- inspecting ---------------------------------------------------------------------------------


def cmd_info(t: Table, args: argparse.Namespace) -> Output:
    snaps = t.snapshots()
    latest = snaps[-1] if snaps else None
    files = live_files(t.manifests, latest)
    schema = t.table_schema
    size = sum(e.file.fileSize for e in files)
    plan = _planned(t)
    data = {
        "path": t.path, "primary_keys": list(schema.primaryKeys),
        "partition_keys": list(schema.partitionKeys), "bucket": int(schema.options.get("bucket", "-1")),
        "schema_id": schema.id, "columns": len(schema.fields), "snapshots": len(snaps),
        "earliest_snapshot": snaps[0].id if snaps else None, "latest_snapshot": latest.id if latest else None,
        "latest_commit_kind": latest.commitKind if latest else None,
        "latest_commit_time": iso(latest.timeMillis) if latest else None,
        "rows": t.count(), "records_in_files": latest.totalRecordCount if latest else 0,
        "data_files": len(files), "data_bytes": size, "tags": len(t.tags()), "consumers": len(t.consumers()),
        "full_plan": _plan_data(plan),
    }
    rows = [
        ("path", t.path),
        ("primary keys", ", ".join(schema.primaryKeys) or "(none: append table)"),
        ("partition keys", ", ".join(schema.partitionKeys) or "(none)"),
        ("bucket", data["bucket"]),
        ("schema id", schema.id),
        ("columns", len(schema.fields)),
        ("snapshots", f"{len(snaps)} (ids {snaps[0].id}..{snaps[-1].id})" if snaps else "0"),
        ("latest commit", f"{latest.commitKind} at {time_text(latest.timeMillis)}" if latest else ""),
        ("rows", f"{data['rows']:,} (what a read returns)"),
        ("records in files", f"{data['records_in_files']:,} (before merging: every version and delete "
                             "of a key until compaction)" if schema.primaryKeys else f"{data['records_in_files']:,}"),
        ("data files", f"{len(files)} ({size_text(size)})"),
        ("tags", data["tags"]),
        ("consumers", data["consumers"]),
        ("full plan", _plan_cost(plan)),
    ]
    width = max(len(k) for k, _ in rows)
    return Output("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows), data)


def _planned(t: Table) -> PlanStats:
    """The stats of planning a full scan on a fresh handle (nothing cached)."""
    scan = open_table(t.path, t.io).scan()
    scan.plan()
    return scan.stats


def _plan_data(s: PlanStats) -> dict[str, Any]:
    return {"milliseconds": round(s.seconds * 1000, 3), "manifests": s.manifests,
            "manifests_read": s.manifests_read, "entries": s.entries, "files": s.files, "splits": s.splits}


def _plan_cost(s: PlanStats) -> str:
    return (f"{s.seconds * 1000:.1f} ms: {s.manifests_read} of {s.manifests} manifests read "
            f"({s.manifests - s.manifests_read} skipped), {s.entries} entries, {s.files} files, "
            f"{s.splits} splits")


def cmd_plan(t: Table, args: argparse.Namespace) -> Output:
    scan = open_table(t.path, t.io).scan(filter=parse_where(args.where, t.schema()),
                                         snapshot_id=args.snapshot_id, parallelism=args.parallelism)
    splits = scan.plan()
    data: list[dict[str, Any]] = [{"partition": s.partition_path, "bucket": s.bucket, "files": len(s.files), "records": s.row_count,
             "bytes": sum(f.fileSize for f in s.files), "raw": s.raw_convertible} for s in splits]
    rows = [(d["partition"] or "(table)", d["bucket"], d["files"], d["records"], size_text(d["bytes"]), d["raw"])
            for d in data]
    text = format_table(["partition", "bucket", "files", "records", "size", "raw"], rows)
    return Output(text + f"\n\nplan: {_plan_cost(scan.stats)}", {"splits": data, "plan": _plan_data(scan.stats)})


def cmd_snapshots(t: Table, args: argparse.Namespace) -> Output:
    snaps = t.snapshots()
    data = [{"id": s.id, "schema_id": s.schemaId, "commit_kind": s.commitKind, "commit_time": iso(s.timeMillis),
             "commit_user": s.commitUser, "commit_identifier": s.commitIdentifier,
             "total_records": s.totalRecordCount, "delta_records": s.deltaRecordCount} for s in snaps]
    rows = [(s.id, s.schemaId, s.commitKind, time_text(s.timeMillis), s.commitUser, s.commitIdentifier,
             s.totalRecordCount, s.deltaRecordCount) for s in snaps]
    return Output(format_table(["id", "schema", "kind", "committed", "user", "identifier", "records",
                                "delta"], rows), data)


def cmd_history(t: Table, args: argparse.Namespace) -> Output:
    h = t.history(args.limit)
    rows = [(r["snapshot_id"], r["committed_at"].astimezone().strftime("%Y-%m-%d %H:%M:%S"), r["commit_kind"],
             r["commit_user"], r["files_added"], r["files_removed"], r["records_added"], r["records_removed"],
             "" if r["restored_from"] is None else f"restore of {r['restored_from']}")
            for r in h.to_pylist()]
    text = format_table(["id", "committed", "kind", "user", "files +", "files -", "records +", "records -",
                         "note"], rows)
    return Output(text, rows_of(h))


def cmd_files(t: Table, args: argparse.Namespace) -> Output:
    files = t.system_table("files", args.snapshot_id).to_pylist()
    data: list[dict[str, Any]] = [{"partition": f["partition"], "bucket": f["bucket"], "level": f["level"],
             "records": f["record_count"], "bytes": f["file_size_in_bytes"], "schema_id": f["schema_id"],
             "file": f["file_path"].rsplit("/", 1)[-1]} for f in files]
    rows = [(d["partition"] or "(table)", d["bucket"], d["level"], d["records"], size_text(d["bytes"]),
             d["schema_id"], d["file"]) for d in data]
    return Output(format_table(["partition", "bucket", "level", "records", "size", "schema", "file"], rows), data)


def cmd_schema(t: Table, args: argparse.Namespace) -> Output:
    schema = t.schema_by_id(args.id) if args.id is not None else t.table_schema
    fields = [{"id": f.id, "name": f.name, "type": str(data_types.to_arrow(f.type)),
               "nullable": data_types.nullable(f.type), "primary_key": f.name in schema.primaryKeys}
              for f in schema.fields]
    rows = [(f["id"], f["name"], f["type"], f["nullable"], "PK" if f["primary_key"] else "") for f in fields]
    text = format_table(["field id", "name", "type", "nullable", "key"], rows)
    text += f"\n\nschema id {schema.id}; primary keys: {', '.join(schema.primaryKeys) or '-'}; "
    text += f"partition keys: {', '.join(schema.partitionKeys) or '-'}"
    if schema.options:
        text += "\n\n" + format_table(["option", "value"], sorted(schema.options.items()))
    return Output(text, {"schema_id": schema.id, "fields": fields, "primary_keys": list(schema.primaryKeys),
                         "partition_keys": list(schema.partitionKeys), "options": dict(schema.options)})


def cmd_system(t: Table, args: argparse.Namespace) -> Output:
    table = t.system_table(args.name, args.snapshot_id)
    return Output(format_arrow(table), rows_of(table))


def cmd_health(t: Table, args: argparse.Namespace) -> Output:
    report = t.health()
    return Output(str(report) + ("" if report.actions else "\n\nnothing to do"), rows_of(report.to_arrow()))


def cmd_tables(catalog: Catalog, namespace: str | None) -> Output:
    spaces = [namespace] if namespace else catalog.list_namespaces()
    data = [{"namespace": ns, "table": name, "path": catalog.table_path(f"{ns}.{name}")}
            for ns in spaces for name in catalog.list_tables(ns)]
    rows = [(d["namespace"], d["table"], d["path"]) for d in data]
    return Output(format_table(["namespace", "table", "path"], rows), data)


# -- changing ------------------------------------------------------------------------------------


def cmd_compact(t: Table, args: argparse.Namespace, bar: ProgressBar) -> Output:
    def progress(done: int, total: int) -> None:
        bar("compacting buckets", done, total)

    snap_id = compact_table(t, "minor" if args.minor else "full", progress=progress, raise_on_conflict=True)
    bar.close()
    if snap_id is None:
        return Output("nothing to compact", {"snapshot_id": None})
    entries = t.manifests.delta_entries(t.snapshot(snap_id))
    before = [e for e in entries if e.kind != ADD]
    after = [e for e in entries if e.kind == ADD]
    data = {"snapshot_id": snap_id, "buckets": len({(tuple(e.partition), e.bucket) for e in entries}),
            "files_before": len(before), "bytes_before": sum(e.file.fileSize for e in before),
            "files_after": len(after), "bytes_after": sum(e.file.fileSize for e in after)}
    text = (f"compacted {data['files_before']} files ({size_text(data['bytes_before'])}) in "
            f"{data['buckets']} buckets into {data['files_after']} files "
            f"({size_text(data['bytes_after'])}): snapshot {snap_id}")
    return Output(text, data)


def cmd_rewrite_manifests(t: Table, args: argparse.Namespace) -> Output:
    r = t.rewrite_manifests()
    data = {"snapshot_id": r.snapshot_id, "manifests_before": r.manifests_before,
            "manifests_after": r.manifests_after}
    if r.snapshot_id is None:
        return Output("nothing to rewrite: the table has no snapshot", data)
    return Output(f"rewrote {r.manifests_before} manifests into {r.manifests_after} clustered by partition: "
                  f"snapshot {r.snapshot_id}", data)


def _sizes(t: Table, paths: list[str]) -> dict[str, int]:
    out = {}
    for p in paths:
        try:
            out[p] = t.io.file_size(p)
        except FileNotFoundError:
            continue
    return out


def _older_than(args: argparse.Namespace) -> datetime.datetime | None:
    """``--older-than`` as the aware datetime the table API takes (never the deprecated
    epoch-millisecond argument, whose warning is the user's to see only for their own input)."""
    return None if args.older_than is None else datetime_of_ms(parse_time(args.older_than))


def cmd_expire(t: Table, args: argparse.Namespace) -> Output:
    older = _older_than(args)
    plan = t.expire_snapshots(args.retain_max, args.retain_min, older_than=older, dry_run=True)
    sizes = _sizes(t, plan.files)  # before they go: the bytes the expiration frees
    r = plan if args.dry_run else t.expire_snapshots(args.retain_max, args.retain_min,
                                                     older_than=older)
    freed = sum(sizes.get(p, 0) for p in r.files)
    data = {"dry_run": args.dry_run, "snapshots": r.snapshots, "data_files": len(r.data_files),
            "changelog_files": len(r.changelog_files), "manifest_files": len(r.manifests),
            "index_files": len(r.index_files), "bytes": freed, "consumers": r.consumers}
    if not r.snapshots:
        return Output("nothing to expire", data)
    ids = f"{r.snapshots[0]}..{r.snapshots[-1]}" if len(r.snapshots) > 1 else str(r.snapshots[0])
    verb = "would expire" if args.dry_run else "expired"
    gone = "would delete" if args.dry_run else "deleted"
    return Output(f"{verb} snapshots {ids}: {gone} {len(r.data_files)} data files, {len(r.changelog_files)} "
                  f"changelog files, {len(r.manifests)} manifest files, {len(r.index_files)} index files "
                  f"({size_text(freed)})", data)


def cmd_orphans(t: Table, args: argparse.Namespace, bar: ProgressBar) -> Output:
    r = t.remove_orphan_files(older_than=_older_than(args), dry_run=args.dry_run, progress=bar)
    bar.close()
    verb = "would delete" if r.dry_run else "deleted"
    lines = [p.removeprefix(t.layout.root + "/") for p in r.files]
    return Output("\n".join([*lines, f"{verb} {len(r.files)} orphan files ({size_text(r.bytes)})"]),
                  {"dry_run": r.dry_run, "files": lines, "bytes": r.bytes})


def cmd_rollback(t: Table, args: argparse.Namespace) -> Output:
    r = t.rollback_to(snapshot_id=args.snapshot_id, tag=args.tag, dry_run=args.dry_run)
    verb = "would roll back" if r.dry_run else "rolled back"
    text = f"{verb} to snapshot {r.snapshot_id}: {'would remove' if r.dry_run else 'removed'} {len(r.snapshots)} snapshots"
    if r.tags:
        text += f", tags {', '.join(r.tags)}"
    return Output(text + f" and {len(r.files)} files", {
        "dry_run": r.dry_run, "snapshot_id": r.snapshot_id, "snapshots_removed": r.snapshots,
        "tags_removed": r.tags, "files_removed": len(r.files)})


def cmd_restore(t: Table, args: argparse.Namespace) -> Output:
    target: int | str = args.snapshot_id if args.snapshot_id is not None else args.tag
    if args.dry_run:
        snap = target_snapshot(t.context(), target)
        return Output(f"would restore snapshot {snap.id} as a new snapshot (dry run: nothing changed)",
                      {"dry_run": True, "restored_from": snap.id, "snapshot_id": None})
    r = t.restore(target)
    data = {"dry_run": False, "restored_from": r.restored_from, "snapshot_id": r.snapshot_id,
            "files_kept": r.files_kept, "files_copied": r.files_copied, "files_removed": r.files_removed,
            "bytes_copied": r.bytes_copied}
    if r.snapshot_id is None:
        return Output(f"the table already reads as snapshot {r.restored_from}: nothing to restore", data)
    return Output(f"restored snapshot {r.restored_from} as snapshot {r.snapshot_id}: kept {r.files_kept} "
                  f"files, copied {r.files_copied} ({size_text(r.bytes_copied)}), removed {r.files_removed}",
                  data)


def cmd_expire_partitions(t: Table, args: argparse.Namespace) -> Output:
    r = t.expire_partitions(args.expiration_time, args.timestamp_formatter, args.timestamp_pattern,
                            args.strategy, dry_run=args.dry_run)
    names = [",".join(f"{k}={v}" for k, v in p.items()) for p in r.partitions]
    data = {"dry_run": r.dry_run, "partitions": r.partitions, "snapshot_id": r.snapshot_id}
    if not names:
        return Output("no expired partitions", data)
    verb = "would drop" if r.dry_run else f"dropped (snapshot {r.snapshot_id})"
    return Output(f"{verb} {len(names)} partitions: {'; '.join(names)}", data)


def _tag_changes(r: Any) -> Output:
    """The tags a tag run created and deleted (``TagAutoResult``)."""
    data = {"dry_run": r.dry_run, "created": r.created, "deleted": r.deleted}
    would = "would " if r.dry_run else ""
    lines = [f"{would}create tag {n} on snapshot {sid}" for n, sid in r.created.items()]
    lines += [f"{would}delete tag {n}" for n in r.deleted]
    return Output("\n".join(lines) or "no tag to create or delete", data)


def cmd_tag(t: Table, args: argparse.Namespace) -> Output:
    if args.tag_command == "auto":
        return _tag_changes(t.create_auto_tags(dry_run=args.dry_run))
    if args.tag_command == "expire":
        return _tag_changes(t.expire_tags(older_than=_older_than(args), dry_run=args.dry_run))
    if args.tag_command == "create":
        t.create_tag(args.name, args.snapshot_id, args.time_retained)
        sid = t.tags()[args.name]
        return Output(f"created tag {args.name} on snapshot {sid}", {"tag": args.name, "snapshot_id": sid})
    if args.tag_command == "rename":
        t.rename_tag(args.name, args.new_name)
        return Output(f"renamed tag {args.name} to {args.new_name}", {"tag": args.new_name, "renamed_from": args.name})
    if args.tag_command == "delete":
        names = args.name
        t.delete_tag(names)  # all or none
        data = {"tag": names[0]} if len(names) == 1 else {"tags": names}
        return Output(f"deleted tag{'s' if len(names) > 1 else ''} {', '.join(names)}", {**data, "deleted": True})
    table = t.system_table("tags")
    return Output(format_arrow(table), rows_of(table))


def cmd_branch(t: Table, args: argparse.Namespace) -> Output:
    if args.branch_command == "create":
        t.create_branch(args.name, args.tag)
        start = f"from tag {args.tag}" if args.tag else "empty"
        return Output(f"created branch {args.name} ({start})", {"branch": args.name, "tag": args.tag})
    if args.branch_command == "delete":
        t.delete_branch(args.name)
        return Output(f"deleted branch {args.name}", {"branch": args.name, "deleted": True})
    if args.branch_command == "fast-forward":
        t.fast_forward(args.name)
        latest = t.latest_snapshot()
        sid = latest.id if latest else None
        return Output(f"fast-forwarded {t.current_branch} to branch {args.name}: latest snapshot {sid}",
                      {"branch": t.current_branch, "to": args.name, "snapshot_id": sid})
    names = t.branches()
    return Output("\n".join(names) if names else "no branches", names)


def cmd_delete(t: Table, args: argparse.Namespace) -> Output:
    flt = parse_condition(args.where, t.schema())
    if args.dry_run:
        preview = preview_delete(t.context(), flt)
        rows = [(p or "(table)", n, files) for p, n, files in preview.partitions]
        files = "files marked (deletion vectors)" if preview.marks else "files rewritten"
        table = format_table(["partition", "rows", files], rows) + "\n\n" if rows else ""
        data = {"dry_run": True, "rows": preview.rows,
                "partitions": [{"partition": p, "rows": n, "files": f} for p, n, f in preview.partitions]}
        return Output(f"{table}would delete {preview.rows} rows (dry run: nothing changed)", data)
    deleted = t.delete(flt)
    latest = t.latest_snapshot()
    sid = latest.id if deleted and latest else None
    return Output(f"deleted {deleted} rows" + (f": snapshot {sid}" if sid else ""),
                  {"dry_run": False, "rows": deleted, "snapshot_id": sid})


def cmd_migrate(path: str) -> Output:
    result = migrate(path)
    data = {"path": result.path, "migrated": result.migrated, "files_reused": result.files_reused,
            "rows_rewritten": result.rows_rewritten, "tags_dropped": result.tags_dropped}
    if not result.migrated:
        return Output(f"{result.path} is in Apache Paimon's format already", data)
    lines = [f"migrated {result.path}: {result.files_reused} data files reused, "
             f"{result.rows_rewritten} rows rewritten"]
    if result.tags_dropped:
        lines.append(f"tags not carried over: {', '.join(result.tags_dropped)}")
    return Output("\n".join(lines), data)
