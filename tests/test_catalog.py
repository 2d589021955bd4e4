"""The warehouse catalog on local disk and on S3: namespaces, tables, drop, rename."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.conftest import Storage
from tests.helpers import SCHEMA, rows, sorted_ids


def test_create_list_open_and_drop_tables(storage: Storage) -> None:
    cat = mp.catalog(storage.path("wh"))
    assert cat.list_namespaces() == []
    orders = cat.create_table("sales.orders", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    orders.write(rows(0, 10))
    cat.create_table("sales.refunds", SCHEMA).write(rows(0, 3))
    cat.create_namespace("empty")
    assert cat.list_namespaces() == ["empty", "sales"]
    assert cat.list_tables("sales") == ["orders", "refunds"]
    assert cat.list_tables("empty") == []
    assert sorted_ids(cat.table("sales.orders").to_arrow()) == list(range(10))
    # the same table by path, as every path-taking tool opens it
    assert sorted_ids(mp.open_table(cat.table_path("sales.orders")).to_arrow()) == list(range(10))
    with pytest.raises(mp.TableAlreadyExistsError):
        cat.create_table("sales.orders", SCHEMA)
    with pytest.raises(mp.InvalidArgumentError):
        cat.drop_namespace("sales")  # still has tables
    assert cat.drop_table("sales.refunds") > 0
    assert cat.list_tables("sales") == ["orders"]
    assert not cat.table_exists("sales.refunds")
    with pytest.raises(mp.TableNotFoundError):
        cat.table("sales.refunds")
    cat.create_table("sales.refunds", SCHEMA)  # the name is free again
    cat.drop_namespace("empty")
    assert cat.list_namespaces() == ["sales"]


def test_drop_without_purge_keeps_the_data_files(storage: Storage) -> None:
    cat = mp.catalog(storage.path("wh"))
    cat.create_table("db.t", SCHEMA).write(rows(0, 5))
    path = cat.table_path("db.t")
    data = [p for p in storage.list_all(path) if p.endswith(".parquet")]
    cat.drop_table("db.t", purge=False)
    assert not cat.table_exists("db.t") and cat.list_tables("db") == []
    left = storage.list_all(path)
    assert sorted(left) == sorted(data)  # data only: no schema, snapshot or manifest


def test_rename_on_local_disk_and_refused_on_object_storage(storage: Storage) -> None:
    cat = mp.catalog(storage.path("wh"))
    cat.create_table("db.t", SCHEMA).write(rows(0, 4))
    if storage.kind == "local":
        cat.rename_table("db.t", "other.t2")
        assert cat.list_tables("db") == [] and cat.list_tables("other") == ["t2"]
        assert sorted_ids(cat.table("other.t2").to_arrow()) == [0, 1, 2, 3]
    else:
        with pytest.raises(mp.InvalidArgumentError, match="rename"):
            cat.rename_table("db.t", "other.t2")
        assert cat.list_tables("db") == ["t"]


@pytest.mark.parametrize("bad", ["orders", "a.b.c", "../x.t", "db.t/..", "", "db.", 7, "ns.t\n",
                                 "ns\n.t", "ns.t\r", "\nns.t"])
def test_bad_identifiers_are_typed_errors(tmp_path: object, bad: object) -> None:
    cat = mp.catalog(str(tmp_path))
    with pytest.raises(mp.InvalidArgumentError):
        cat.create_table(bad, SCHEMA)  # type: ignore[arg-type]
    assert list(cat.io.list_names(cat.warehouse)) == []


def test_missing_things_are_not_found(tmp_path: object) -> None:
    cat = mp.catalog(str(tmp_path))
    with pytest.raises(mp.TableNotFoundError):
        cat.list_tables("nope")
    with pytest.raises(mp.TableNotFoundError):
        cat.drop_table("nope.t")
    with pytest.raises(mp.InvalidArgumentError):
        mp.catalog(str(tmp_path), options={"bucket": "2"})  # not a connection option
    with pytest.raises(mp.InvalidArgumentError):
        mp.catalog("ftp://host/wh")


def test_partitioned_table_in_a_catalog_reads_back(storage: Storage) -> None:
    cat = mp.catalog(storage.path("wh"))
    t = cat.create_table("db.p", SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(0, 3, "a"), rows(3, 3, "b")]))
    assert sorted_ids(cat.table("db.p").scan(filter=[("dt", "=", "b")]).to_arrow()) == [3, 4, 5]


def test_cli_takes_identifiers_with_a_warehouse(tmp_path: object, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from minipaimon_core.cli.cli import main

    warehouse = str(tmp_path)
    mp.catalog(warehouse).create_table("db.t", SCHEMA).write(rows(0, 4))
    assert main(["--warehouse", warehouse, "snapshots", "db.t"]) == 0
    assert "APPEND" in capsys.readouterr().out
    monkeypatch.setenv("MINIPAIMON_WAREHOUSE", warehouse)
    assert main(["info", "db.t"]) == 0
    assert "db.db/t" in capsys.readouterr().out
    assert main(["info", "db.missing"]) == 1
    assert "no minipaimon table" in capsys.readouterr().err


def test_tag_and_consumer_names_with_a_trailing_newline_are_refused(tmp_path: object) -> None:
    t = mp.create_table(f"{tmp_path}/t", SCHEMA)
    t.write(rows(0, 2))
    with pytest.raises(mp.InvalidArgumentError):
        t.create_tag("gold\n")
    with pytest.raises(mp.InvalidArgumentError):
        t.stream(consumer_id="c\n")
    assert t.tags() == {} and t.consumers() == {}


def test_a_half_dropped_table_is_never_adopted_and_drop_finishes_it(storage: Storage) -> None:
    cat = mp.catalog(storage.path("wh"))
    cat.create_table("db.t", SCHEMA).write(rows(0, 5))
    path = cat.table_path("db.t")
    schema_files = [p for p in storage.list_all(path) if "/schema/" in p]
    for f in schema_files:  # a drop that stopped after its first steps kept snapshots
        cat.io.delete(f)
    with pytest.raises(mp.TableAlreadyExistsError, match="drop of it failed half-way"):
        cat.create_table("db.t", SCHEMA)
    assert cat.drop_table("db.t") > 0  # dropping again finishes it
    assert storage.list_all(path) == {}
    assert cat.create_table("db.t", SCHEMA).to_arrow().num_rows == 0


def test_drop_while_a_writer_writes_is_typed_and_never_leaves_an_adoptable_table(tmp_path: object) -> None:
    cat = mp.catalog(str(tmp_path))
    outcomes = set()
    for round_ in range(20):
        t = cat.create_table("db.t", SCHEMA)
        first, stop = threading.Event(), threading.Event()

        def write(t: mp.Table = t, first: threading.Event = first, stop: threading.Event = stop) -> None:
            i = 0
            while not stop.is_set():
                with contextlib.suppress(Exception):  # the writer's own fate is not the point
                    t.write(rows(i, 50))
                first.set()
                i += 50

        writer = threading.Thread(target=write)
        writer.start()
        first.wait(60)
        try:
            cat.drop_table("db.t")
            outcomes.add("dropped")
        except mp.StorageError:
            outcomes.add("storage error")
        finally:
            stop.set()
            writer.join()
        try:  # what the writer left after the drop is never taken for a new table
            fresh = cat.create_table("db.t", SCHEMA)
            assert fresh.to_arrow().num_rows == 0, round_
        except mp.TableAlreadyExistsError:
            outcomes.add("leftovers refused")
        if cat.table_exists("db.t") or os.path.exists(cat.table_path("db.t")):
            cat.drop_table("db.t") if cat.table_exists("db.t") else shutil.rmtree(cat.table_path("db.t"))
    assert outcomes  # every round ended in one of the typed outcomes


def test_rename_races_are_typed(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = mp.catalog(str(tmp_path))
    cat.create_table("db.a", SCHEMA).write(rows(0, 2))
    rename = type(cat.io).rename_directory

    def target_appears_first(self: object, src: str, dst: str) -> None:
        mp.create_table(dst, SCHEMA)  # another process took the name meanwhile
        rename(self, src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(type(cat.io), "rename_directory", target_appears_first)
    with pytest.raises(mp.TableAlreadyExistsError):
        cat.rename_table("db.a", "db.b")

    def source_goes_first(self: object, src: str, dst: str) -> None:
        shutil.rmtree(src)  # dropped by another process meanwhile
        rename(self, src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(type(cat.io), "rename_directory", source_goes_first)
    with pytest.raises(mp.TableNotFoundError):
        cat.rename_table("db.a", "db.c")
