"""Issue 32 item 16: a stream's offsets belong to one table.

A checkpoint reused for another table (or for a table dropped and created again at the same
path) read snapshot ids of one table as positions in another and skipped rows without an
error (2 of 6 rows delivered). The connector objects first, driven as Spark drives them,
then the same through a real query.
"""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.errors import InvalidArgumentError  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402
from minipaimon_spark.stream.stream_offsets import TABLE_ID, TABLE_PATH  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def table_of(path: Path, commits: int, first_id: int = 0) -> mp.Table:
    """A table with ``commits`` snapshots of one row each (ids from ``first_id``)."""
    t = mp.create_table(str(path), SCHEMA)
    for i in range(commits):
        t.write(pa.table({"id": [first_id + i]}, schema=SCHEMA))
    return t


def stream(path: Path, **options: str) -> Any:
    ds = pickle.loads(pickle.dumps(MiniPaimonDataSource({"path": str(path), **options})))
    return ds.streamReader(ds.schema())


def ids_between(reader: Any, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    out: list[int] = []
    for p in reader.partitions(start, end):
        for b in pickle.loads(pickle.dumps(reader)).read(p):
            out += b.column("id").to_pylist()
    return sorted(out)


def checkpointed_end(path: Path) -> dict[str, Any]:
    """The end offset of a query that read the whole table at ``path`` (what Spark keeps)."""
    reader = stream(path)
    start = reader.initialOffset()
    end: dict[str, Any] = reader.latestOffset()
    ids_between(reader, start, end)
    return end


@pytest.mark.smoke
def test_offsets_name_their_table(tmp_path: Path) -> None:
    t = table_of(tmp_path / "a", 2)
    end = checkpointed_end(tmp_path / "a")
    assert end["snapshot"] == 2 and end[TABLE_PATH] == t.path and end[TABLE_ID]
    assert stream(tmp_path / "a").latestOffset(end)[TABLE_ID] == end[TABLE_ID]  # stable


@pytest.mark.smoke
def test_a_checkpoint_of_another_table_fails_naming_both(tmp_path: Path) -> None:
    table_of(tmp_path / "a", 4)
    end = checkpointed_end(tmp_path / "a")
    table_of(tmp_path / "b", 6, first_id=100)
    other = stream(tmp_path / "b")  # the query restarted on b with a's checkpoint
    other.initialOffset()
    for call in (lambda: other.latestOffset(end), lambda: other.partitions(end, end),
                 lambda: other.commit(end)):
        with pytest.raises(InvalidArgumentError) as err:
            call()
        message = str(err.value)
        assert str(tmp_path / "a") in message and str(tmp_path / "b") in message, message
        assert "checkpointLocation" in message and "\n" not in message


@pytest.mark.smoke
def test_a_table_dropped_and_created_again_is_another_table(tmp_path: Path) -> None:
    table_of(tmp_path / "a", 4)
    end = checkpointed_end(tmp_path / "a")
    shutil.rmtree(tmp_path / "a")
    table_of(tmp_path / "a", 6, first_id=100)
    with pytest.raises(InvalidArgumentError, match="created again since"):
        stream(tmp_path / "a").latestOffset(end)


@pytest.mark.smoke
def test_offsets_without_a_table_id_are_adopted(tmp_path: Path) -> None:
    """A checkpoint written before offsets named their table goes on, and its next offsets
    carry the identity."""
    table_of(tmp_path / "a", 4)
    old = {"snapshot": 2, "full": False, "splitIndex": 0}
    reader = stream(tmp_path / "a")
    end = reader.latestOffset(old)
    assert ids_between(reader, old, end) == [2, 3]
    assert end[TABLE_ID] == checkpointed_end(tmp_path / "a")[TABLE_ID]


@pytest.mark.smoke
def test_a_query_restarted_on_another_table_stops_instead_of_skipping(spark: Any, tmp_path: Path) -> None:
    """The issue's reproduction: a query read a (4 snapshots); restarted with the same
    checkpoint on b (6 one-row snapshots) it delivered b's snapshots 5 and 6 only."""
    from pyspark.errors import StreamingQueryException

    table_of(tmp_path / "a", 4)
    table_of(tmp_path / "b", 6, first_id=100)
    seen: list[int] = []

    def run(path: Path) -> Any:
        q = (spark.readStream.format("minipaimon").load(str(path)).writeStream
             .foreachBatch(lambda df, _: seen.extend(r.id for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        q.awaitTermination()
        return q

    run(tmp_path / "a")
    assert sorted(seen) == [0, 1, 2, 3]
    mp.open_table(str(tmp_path / "a")).write(pa.table({"id": [4]}, schema=SCHEMA))
    with pytest.raises(StreamingQueryException, match="checkpoint belongs to another table"):
        run(tmp_path / "b")
    assert sorted(seen) == [0, 1, 2, 3]  # nothing of b delivered


def test_the_python_consumer_stops_when_its_table_is_created_again(tmp_path: Path) -> None:
    t = table_of(tmp_path / "a", 2)
    python_stream = t.stream()
    assert sorted(i for b in python_stream for i in b.data.column("id").to_pylist()) == [0, 1]
    shutil.rmtree(tmp_path / "a")
    table_of(tmp_path / "a", 4, first_id=100)  # its snapshots 3 and 4 would be read next
    with pytest.raises(InvalidArgumentError, match="dropped and created again"):
        list(python_stream)
