"""Apache Paimon's own row-level change scenarios (paimon-spark's DeleteFromTableTestBase,
UpdateTableTestBase, MergeIntoTableTestBase), expressed with minipaimon's API, for what
minipaimon refused before issue 39. Each test names the Paimon test it follows; the
expected rows are Paimon's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import minipaimon_core as mp
from minipaimon_core.system_tables import audit_log_between

ID_NAME_DT_HH = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                           pa.field("dt", pa.string(), nullable=False),
                           pa.field("hh", pa.string(), nullable=False)])


def _table(schema: pa.Schema, rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)


def _deletes_in_changelog(t: mp.Table) -> int:
    t = mp.open_table(t.path)
    changes = audit_log_between(t, 0, t.latest_snapshot().id)  # type: ignore[union-attr]
    return changes.column("rowkind").to_pylist().count("-D")


def test_delete_producer_changelog(tmp_path: Path) -> None:
    # paimon-spark DeleteFromTableTestBase.scala, "test delete producer changelog": with
    # 'delete.force-produce-changelog' a DELETE that drops whole partitions still writes its
    # -D rows into the changelog (Paimon counts them in T$audit_log: 1, then 3; minipaimon's
    # batch audit_log holds merged rows only, so its incremental audit log counts them)
    t = mp.create_table(str(tmp_path / "t"), ID_NAME_DT_HH, primary_key=["id", "dt", "hh"],
                        partition_by=["dt", "hh"],
                        options={"merge-engine": "deduplicate", "changelog-producer": "input",
                                 "delete.force-produce-changelog": "true"})
    t.write(_table(ID_NAME_DT_HH, [(1, "a", "2023-10-01", "12"), (2, "b", "2023-10-01", "12"),
                                   (3, "c", "2023-10-02", "12"), (4, "d", "2023-10-02", "13"),
                                   (5, "e", "2023-10-02", "14"), (6, "f", "2023-10-02", "15")]))
    t.delete([("name", "=", "a"), ("hh", "=", "12")])  # isn't a partition drop
    assert _deletes_in_changelog(t) == 1
    t.delete([("hh", "=", "12")])  # is a partition drop
    assert _deletes_in_changelog(t) == 3
