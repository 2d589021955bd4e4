"""minipaimon's compaction of a table Paimon's Java engine 0.9 wrote with deletion vectors
keeps the deletes Java recorded only in its vectors (issue 38 item 1).

Java's lookup compaction (a write with an IOManager, as Flink and Spark write) drops a
``-D`` row as soon as it has marked the rows it deletes, so the vector is the only record
of the delete. Before the fix minipaimon read the table right (36 rows) and wrote into it
right (37), but its compaction, automatic after a write or explicit, merged the files
without their vectors: the deleted ids came back (41 rows), for Java's readers too. Fixed
and dynamic buckets (``HASH_DYNAMIC``); the core-only tests: tests/test_compaction_vectors.py.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.maintenance.compaction import bucket_units
from minipaimon_core.migrate import copy_table
from tests.interop import harness
from tests.interop.compare import differences
from tests.interop.data import KV, KeyModel, kv

pytestmark = pytest.mark.interop

TABLES = {"fixed": {"bucket": "2"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "15"}}
DELETED = [20, 21, 22, 23]


def test_compacting_a_java_table_keeps_the_deletes_its_vectors_record(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    model = KeyModel(("id",))
    batches = [kv(list(range(40)), "a"), kv(list(range(10)), "u"), kv(DELETED, "d", ["-D"] * len(DELETED))]
    b = harness.judge(harness.JAVA).batch(tmp_path / "java-write")
    for name, options in TABLES.items():
        b.create(wh, f"db.{name}", KV, primary_keys=["id"], options={**options, "deletion-vectors.enabled": "true"})
        for data in batches:
            b.commit(wh, f"db.{name}", data)
    b.run()
    for data in batches:
        model.apply(data)
    reads = harness.judge(harness.JAVA).batch(tmp_path / "java-read")
    jobs = {}
    for name in TABLES:
        t = mp.open_table(str(wh / "db.db" / name))
        # Java's compaction left no -D row: the vectors are the only record of the deletes
        assert not any(e.file.deleteRowCount for unit in bucket_units(t) for e in unit), name
        assert t.context().vectors.entries(t.latest_snapshot()), name
        assert differences(t.to_arrow(), model.table(KV)) is None, name  # 36 rows
        t.write(kv([100], "m"))  # and the automatic compaction after it
        expected = pa.concat_tables([model.table(KV), kv([100], "m")])
        assert differences(mp.open_table(t.path).to_arrow(), expected) is None, name  # 37 rows
        for strategy in ("minor", "full"):
            mp.open_table(t.path).compact(strategy=strategy)
            assert differences(mp.open_table(t.path).to_arrow(), expected) is None, (name, strategy)
        copy = str(tmp_path / f"copy-{name}")
        copy_table(t.path, copy)
        assert differences(mp.open_table(copy).to_arrow(), expected) is None, name
        jobs[name] = reads.read(wh, f"db.{name}")
    outcomes = reads.run()
    for name, job in jobs.items():  # and Java reads what minipaimon compacted as minipaimon does
        expected = pa.concat_tables([model.table(KV), kv([100], "m")])
        assert differences(outcomes[job].table(), expected) is None, name
