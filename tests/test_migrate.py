"""Migrating tables of minipaimon's earlier format into Apache Paimon's.

The fixtures under ``tests/fixtures/legacy_tables`` were written by the last commit of the
earlier format (``scripts/make_legacy_fixtures.py``): a partitioned append table with a tag,
and a partitioned primary-key table with deletion vectors, a delete and an added column.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minipaimon_core as mp
from minipaimon_core import migrate as migrate_module
from minipaimon_core.cli.cli import main as cli
from minipaimon_core.errors import TableAlreadyExistsError, UnsupportedFeatureError
from minipaimon_core.migrate import copy_table, migrate
from tests.conftest import Storage

FIXTURES = Path(__file__).parent / "fixtures" / "legacy_tables"


@pytest.fixture(params=["append", "append_text", "pk"])
def legacy(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    path = tmp_path / request.param
    shutil.copytree(FIXTURES / request.param, path)
    yield str(path)


def sorted_rows(t: pa.Table) -> list[Any]:
    return sorted(map(repr, t.to_pylist()))


def files_under(path: str) -> dict[str, bytes]:
    out = {}
    for d, _, names in os.walk(path):
        for n in names:
            out[os.path.relpath(os.path.join(d, n), path)] = Path(d, n).read_bytes()
    return out


def test_a_legacy_table_is_read_but_not_written(legacy: str) -> None:
    table = mp.open_table(legacy)
    assert table.table_schema.legacyFormat and table.to_arrow().num_rows > 0
    before = files_under(legacy)
    with pytest.raises(UnsupportedFeatureError, match="migrate"):
        table.write(table.to_arrow().slice(0, 1))
    with pytest.raises(UnsupportedFeatureError, match="migrate"):
        table.compact()
    assert files_under(legacy) == before


def test_migrate_keeps_the_latest_rows_and_makes_a_writable_paimon_table(legacy: str) -> None:
    old = mp.open_table(legacy)
    want, schema, tags = old.to_arrow(), old.table_schema, old.tags()
    result = migrate(legacy)
    assert result.migrated and result.tags_dropped == sorted(tags)
    new = mp.open_table(legacy)
    assert not new.table_schema.legacyFormat
    assert new.to_arrow().schema == want.schema and sorted_rows(new.to_arrow()) == sorted_rows(want)
    assert [f.id for f in new.table_schema.fields] == [f.id for f in schema.fields]
    assert new.primary_keys() == list(schema.primaryKeys) and new.partition_keys() == list(schema.partitionKeys)
    assert [s.id for s in new.snapshots()] == [1] and new.tags() == {}
    assert not os.path.exists(legacy + ".migrating") and not os.path.exists(legacy + ".legacy")
    extra = want.slice(0, 1)
    new.write(extra)
    got = mp.open_table(legacy).to_arrow()
    if new.primary_keys():  # an upsert of an existing key
        assert sorted_rows(got) == sorted_rows(want)
    else:
        assert sorted_rows(got) == sorted_rows(pa.concat_tables([want, extra]))
    assert migrate(legacy) == migrate_module.MigrateResult(legacy, False)  # once only


def test_append_files_are_hard_linked_and_primary_key_files_rewritten(legacy: str) -> None:
    old_files = {p: os.stat(os.path.join(legacy, p)).st_ino
                 for p in files_under(legacy) if p.endswith(".parquet")}
    result = migrate(legacy)
    new_files = {p: os.stat(os.path.join(legacy, p)).st_ino
                 for p in files_under(legacy) if p.endswith(".parquet")}
    linked = {p for p, ino in new_files.items() if ino in set(old_files.values())}
    if legacy.endswith("append_text"):  # strings and dates only: plain encodings, kept
        assert result.files_reused == len(linked) == len(old_files) == 3 and result.rows_rewritten == 0
    else:  # primary-key layout, or integers in DELTA_BINARY_PACKED (Java 0.9 refuses it)
        assert result.files_reused == 0 and not linked
        assert result.rows_rewritten == (9 if legacy.endswith("pk") else 4)


def test_only_files_every_paimon_reader_takes_are_reused(tmp_path: Path) -> None:
    ints = pa.table({"i": pa.array([1, 2, 3], pa.int64()), "d": pa.array([1, 2, 3], pa.decimal128(5, 2))})
    cases = {
        "plain": ({"use_dictionary": False, "store_decimal_as_integer": True}, True),
        "dictionary": ({"store_decimal_as_integer": True}, True),
        "delta": ({"use_dictionary": False, "column_encoding": {"i": "DELTA_BINARY_PACKED"},
                   "store_decimal_as_integer": True}, False),
        "small decimal as bytes": ({}, False),
    }
    for name, (kwargs, want) in cases.items():
        path = str(tmp_path / f"{name}.parquet")
        pq.write_table(ints, path, **kwargs)
        assert migrate_module.paimon_reads(path) == want, name


class Crash(Exception):
    pass


@pytest.mark.parametrize("crash_at", ["copy", "first-rename", "second-rename"])
def test_a_migration_killed_at_any_step_finishes_when_run_again(
        legacy: str, crash_at: str, monkeypatch: pytest.MonkeyPatch) -> None:
    want = sorted_rows(mp.open_table(legacy).to_arrow())
    renames = []

    def failing_rename(src: str, dst: str) -> None:
        renames.append(src)
        if (crash_at == "first-rename" and len(renames) == 1) or \
                (crash_at == "second-rename" and len(renames) == 2):
            raise Crash(src)
        os.rename(src, dst)

    def failing_commit(*args: Any, **kwargs: Any) -> None:
        raise Crash("commit")

    if crash_at == "copy":
        monkeypatch.setattr(migrate_module.FileStoreCommit, "commit", failing_commit)
    monkeypatch.setattr(migrate_module, "_rename", failing_rename)
    with pytest.raises(Crash):
        migrate(legacy)
    monkeypatch.undo()
    if crash_at == "second-rename":
        assert not os.path.exists(legacy)  # between the renames: the table is briefly gone
    else:
        assert mp.open_table(legacy).table_schema.legacyFormat  # the old table, untouched
        assert sorted_rows(mp.open_table(legacy).to_arrow()) == want
    assert migrate(legacy).migrated != (crash_at == "second-rename")  # the swap only finishes
    table = mp.open_table(legacy)
    assert not table.table_schema.legacyFormat and sorted_rows(table.to_arrow()) == want
    assert sorted(os.listdir(os.path.dirname(legacy))) == [os.path.basename(legacy)]


def test_copy_table_writes_a_new_paimon_table(storage: Storage, tmp_path: Path) -> None:
    source = tmp_path / "pk"
    shutil.copytree(FIXTURES / "pk", source)
    want = sorted_rows(mp.open_table(str(source)).to_arrow())
    target = storage.path("copied")
    result = copy_table(str(source), target, storage.options or None)
    assert result.migrated and result.rows_rewritten == 9
    assert sorted_rows(mp.open_table(target, options=storage.options or None).to_arrow()) == want
    with pytest.raises(TableAlreadyExistsError):
        copy_table(str(source), target, storage.options or None)


def test_migrating_an_object_store_table_in_place_is_refused(object_storage: Storage) -> None:
    path = object_storage.path("t")
    mp.create_table(path, pa.schema([("a", pa.int64())]), options=object_storage.options)
    with pytest.raises(UnsupportedFeatureError, match="copy_table"):
        migrate(path, object_storage.options)


def test_the_cli_migrates(legacy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["migrate", legacy]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"migrated {legacy}:")
    assert ("tags not carried over: first" in out) == legacy.endswith("/append")
    assert cli(["migrate", legacy]) == 0
    assert "in Apache Paimon's format already" in capsys.readouterr().out
