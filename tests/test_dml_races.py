"""Row-level changes racing writers, compaction and each other, on local disk and on S3
(SeaweedFS): no lost insert, no lost update, no resurrected row.

Each thread has its own table handle, as separate processes would. An updater adds 1 to
every row's ``v`` a fixed number of times, a deleter deletes initial keys one at a time, an
inserter adds new keys, a compactor compacts; at the end every initial key not deleted has
``v`` = the number of updates (none lost, none applied twice), no deleted key is back, every
inserted key is there once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from tests.conftest import Storage, _storage

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
INITIAL, UPDATES, DELETES, INSERTS = 24, 5, 6, 6

KINDS = {
    "append": (None, {"bucket": "2", "bucket-key": "id"}),
    "append-deletion-vectors": (None, {"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true"}),
    "primary-key": (["id"], {"bucket": "2"}),
    "deletion-vectors": (["id"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
}


@pytest.fixture(params=["local", "s3-seaweed"])
def race_storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


def _run(workers: dict[str, Callable[[], None]]) -> dict[str, BaseException]:
    errors: dict[str, BaseException] = {}
    start = threading.Barrier(len(workers))

    def wrap(name: str, work: Callable[[], None]) -> None:
        start.wait()
        try:
            work()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors[name] = e

    threads = [threading.Thread(target=wrap, args=item) for item in workers.items()]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not any(th.is_alive() for th in threads)
    return errors


@pytest.mark.parametrize("kind", list(KINDS))
def test_changes_racing_writers_compaction_and_each_other(race_storage: Storage, kind: str) -> None:
    key, options = KINDS[kind]
    path = race_storage.path("t")
    opts = {**race_storage.options, "commit.max-retries": "200", "commit.min-retry-wait": "1",
            "commit.max-retry-wait": "50"}
    mp.create_table(path, SCHEMA, primary_key=key, options={**options, **opts}).write(
        pa.table({"id": list(range(INITIAL)), "v": [0] * INITIAL}, schema=SCHEMA))

    def handle() -> mp.Table:
        return mp.open_table(path, options=race_storage.options)

    deleted = list(range(0, 2 * DELETES, 2))
    inserted = list(range(1000, 1000 + INSERTS))
    updates_done: list[int] = []

    def updater() -> None:
        t = handle()
        for _ in range(UPDATES):
            t.update(None, set={"v": pc.field("v") + 1})
            updates_done.append(1)

    def deleter() -> None:
        t = handle()
        for k in deleted:
            assert t.delete([("id", "=", k)]) == 1

    def inserter() -> None:
        t = handle()
        for k in inserted:
            t.write(pa.table({"id": [k], "v": [0]}, schema=SCHEMA))

    def compactor() -> None:
        t = handle()
        for _ in range(3):
            t.compact()

    def merger() -> None:  # another row-level change on the same rows: a merge touching odd keys
        t = handle()
        source = pa.table({"id": [1, 3, 5], "v": [0, 0, 0]}, schema=SCHEMA)
        for _ in range(2):
            t.merge(source, on="id").when_matched_update(set={"v": pc.field("target.v") + 100}).execute()

    errors = _run({"updater": updater, "deleter": deleter, "inserter": inserter,
                   "compactor": compactor, "merger": merger})
    assert not errors, errors
    rows = handle().to_arrow().to_pylist()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "a row is there twice"
    by_id = {r["id"]: r["v"] for r in rows}
    assert not set(deleted) & set(by_id), "a deleted row is back"
    assert set(inserted) <= set(by_id), "an insert was lost"
    for k in range(INITIAL):
        if k in deleted:
            continue
        bonus = 200 if k in (1, 3, 5) else 0
        assert by_id[k] == UPDATES + bonus, (k, by_id[k])
    for k in inserted:
        assert 0 <= by_id[k] <= UPDATES
