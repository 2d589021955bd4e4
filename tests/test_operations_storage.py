"""Operations on local disk and on S3 alike: expiration, time travel, tags, rollback and
orphan cleanup (the same test, parametrised over the storage)."""

from __future__ import annotations

import time

import minipaimon_core as mp
from tests.conftest import Storage
from tests.helpers import SCHEMA, rows, sorted_ids


def test_expire_tags_rollback_and_orphans(storage: Storage) -> None:
    t = mp.create_table(storage.path("t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "2"})
    for k in range(6):
        t.write(rows(k * 3, 3, "d1" if k % 2 else "d2"))
    expected = {s.id: sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) for s in t.snapshots()}
    t.create_tag("third", 3)
    result = t.expire_snapshots(retain_max=2)
    assert result.snapshots and [s.id for s in t.snapshots()] == [5, 6]
    assert sorted_ids(t.scan(tag="third").to_arrow()) == expected[3]  # the tag keeps its files
    assert sorted_ids(t.scan(snapshot_id=5).to_arrow()) == expected[5]
    rolled = t.rollback_to(tag="third")
    assert rolled.snapshot_id == 3 and sorted_ids(t.to_arrow()) == expected[3]
    t.delete_tag("third")
    assert t.tags() == {}
    assert t.write(rows(100, 1, "d1")) == 4
    # a crashed writer's file: no snapshot references it
    orphan = t.layout.data_file_path("dt=d1", 0, t.layout.new_data_file_name())
    t.io.write_bytes(orphan, b"left behind")
    cutoff = int(time.time() * 1000) + 1  # after the orphan was written, not in the future
    while int(time.time() * 1000) < cutoff:
        pass
    dry = t.remove_orphan_files(older_than_ms=cutoff, dry_run=True)
    assert orphan in dry.files and t.io.exists(orphan)
    done = t.remove_orphan_files(older_than_ms=cutoff)
    assert orphan in done.files and not t.io.exists(orphan)
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [*expected[3], 100]
