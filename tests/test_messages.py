"""Messages that say what is wrong and what to do, never advice that misleads (issue 38
item 11): a live table under create_table, a number given as an age, a misspelt key
option, another format's directory opened as a table. (The object-store cases: no S3
credentials in tests/test_credentials.py, a store failing every snapshot create in
tests/test_storage_errors.py; the command line in tests/test_cli_ux.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows


def listing(root: Path) -> dict[str, int]:
    return {os.path.join(d, n): os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(root) for n in names}


def test_create_table_over_a_live_table_says_a_table_exists_there(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"])
    t.write(rows(0, 5))
    t.create_tag("v1")
    before = listing(tmp_path / "t")
    with pytest.raises(mp.TableAlreadyExistsError) as err:
        mp.create_table(str(tmp_path / "t"), SCHEMA)
    message = str(err.value)
    assert message == f"a table already exists at {t.path}: open it (open_table), or pick another path"
    assert "drop" not in message  # dropping it would destroy its data
    assert listing(tmp_path / "t") == before
    cat = mp.catalog(str(tmp_path / "wh"))
    cat.create_table("db.t", SCHEMA).write(rows(0, 1))
    with pytest.raises(mp.TableAlreadyExistsError, match="a table already exists"):
        cat.create_table("db.t", SCHEMA)


@pytest.mark.parametrize("method", ["remove_orphan_files", "expire_snapshots"])
@pytest.mark.parametrize("given", [{"older_than": 3600}, {"older_than": 86_400_000},
                                   {"older_than_ms": 3600}])
def test_a_number_of_seconds_as_older_than_is_refused_naming_the_unit(tmp_path: Path, method, given) -> None:
    """An int before 2000 as epoch milliseconds is a duration without its unit: refused (it
    would select nothing, 1970, with a warning hidden outside __main__), never guessed."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    orphan = Path(t.path) / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"x")
    os.utime(orphan, (1, 1))  # in 1970: even then it is not "older than 3600"
    value = next(iter(given.values()))
    with pytest.raises(mp.InvalidArgumentError) as err:
        getattr(t, method)(**given)
    message = str(err.value)
    assert f"{value} means 1970-01-0" in message and f"'{value}s' is {value} seconds ago" in message
    assert orphan.exists() and [s.id for s in t.snapshots()] == [1]
    assert t.remove_orphan_files(older_than=f"{value}s").files == [str(orphan)]  # as the message says


@pytest.mark.parametrize(("typo", "right", "argument"), [
    ("primary_key", "primary-key", "primary_key"), ("primary-keys", "primary-key", "primary_key"),
    ("partition_by", "partition", "partition_by"), ("partition-by", "partition", "partition_by")])
def test_a_misspelt_key_option_names_the_right_spelling(tmp_path: Path, typo, right, argument) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])
    column = "id" if right == "primary-key" else "dt"
    with pytest.raises(mp.UnsupportedOptionError) as err:
        mp.create_table(str(tmp_path / "t"), schema, options={typo: column})
    assert str(err.value).startswith(f"unknown option {typo!r}; did you mean {right!r}? ")
    assert f"create_table(..., {argument}=[...])" in str(err.value)
    assert not (tmp_path / "t").exists()
    t = mp.create_table(str(tmp_path / "t"), schema, options={right: column})  # the advice works
    assert (t.primary_keys() if right == "primary-key" else t.partition_keys()) == [column]


def test_a_delta_table_or_a_parquet_folder_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "delta" / "_delta_log").mkdir(parents=True)
    (tmp_path / "delta" / "_delta_log" / "00000000000000000000.json").write_text("{}")
    pq.write_table(pa.table({"a": [1]}), tmp_path / "delta" / "part-00000.parquet")
    (tmp_path / "parquet").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "parquet" / "part-0.parquet")
    (tmp_path / "hive" / "dt=2025-01-01").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1]}), tmp_path / "hive" / "dt=2025-01-01" / "part-0.parquet")
    (tmp_path / "empty").mkdir()
    expected = {"delta": "it is a Delta Lake table (it has _delta_log/), not an Apache Paimon table",
                "parquet": "it holds plain Parquet files, not a table: read them with pyarrow.dataset",
                "hive": "it holds partition directories (like 'dt=2025-01-01') but no table metadata"}
    for name, says in expected.items():
        before = listing(tmp_path / name)
        with pytest.raises(mp.TableNotFoundError) as err:
            mp.open_table(str(tmp_path / name))
        assert str(err.value).startswith(f"no minipaimon table at {tmp_path / name} (no schema file): {says}")
        assert listing(tmp_path / name) == before
    for name in ("empty", "missing"):  # nothing there: the plain message
        with pytest.raises(mp.TableNotFoundError) as err:
            mp.open_table(str(tmp_path / name))
        assert str(err.value) == f"no minipaimon table at {tmp_path / name} (no schema file)"
