"""The ``bucket`` option between minipaimon and Paimon's engines (issue 32 item 9).

Paimon (since 0.8) reads a primary-key table without ``bucket`` as ``bucket = -1``: dynamic
buckets. A table Paimon's engines created without the option is read by minipaimon and never
written (writing it as one bucket put an updated key beside its old row in another bucket:
Java read 171 rows where its own write of the same batches gave 156). A table minipaimon
creates without the option names its bucket count in its schema, so Paimon's writers use
the same fixed buckets: upserts of the same keys by every writer leave one row per key.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import minipaimon_core as mp
from minipaimon_core.errors import UnsupportedFeatureError
from minipaimon_core.manifest_io import live_files
from tests.interop import harness
from tests.interop.compare import differences
from tests.interop.data import KV, KeyModel, kv

pytestmark = pytest.mark.interop


def listing(path: Path) -> dict[str, bytes]:
    return {os.path.join(d, n): Path(d, n).read_bytes() for d, _, names in os.walk(path) for n in names}


def test_a_table_paimon_created_without_bucket_is_read_not_written(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    b = harness.judge(harness.PYPAIMON).batch(tmp_path)
    b.create(wh, "db.dyn", KV, primary_keys=["id", "dt"])
    b.run()
    t = mp.open_table(str(wh / "db.db" / "dyn"))
    assert "bucket" not in t.options()
    before = listing(wh)
    for change in (lambda: t.write(kv([1, 2], "m")), lambda: t.delete(None),
                   lambda: t.merge(kv([1], "m"), on=["id", "dt"]).when_not_matched_insert_all().execute()):
        with pytest.raises(UnsupportedFeatureError, match="no 'bucket' option"):
            change()
    assert listing(wh) == before
    assert t.to_arrow().num_rows == 0


@pytest.mark.parametrize("writer", [harness.JAVA, harness.PYPAIMON])
def test_a_table_minipaimon_created_without_bucket_has_fixed_buckets_for_paimon(writer: str, tmp_path: Path) -> None:
    judge = harness.judge(writer)
    wh = tmp_path / "wh"
    t = mp.catalog(str(wh)).create_table("db.pk", KV, primary_key=["id", "dt"], partition_by=["dt"])
    model = KeyModel()
    first = kv(list(range(40)), "mini")
    t.write(first)
    model.apply(first)
    b = judge.batch(tmp_path)
    upsert = kv(list(range(0, 40, 3)) + [40, 41], writer)  # keys minipaimon wrote, and new ones
    b.commit(wh, "db.pk", upsert)
    read = b.read(wh, "db.pk")
    out = b.run()
    model.apply(upsert)
    want = model.table(KV)
    assert want.num_rows == 42
    assert differences(out[read].table(), want) is None  # one row per key: the same buckets
    t = mp.open_table(t.path)
    assert differences(t.to_arrow(), want) is None
    ctx = t.context()
    entries = live_files(ctx.manifests, ctx.snapshots.latest())
    assert {e.totalBuckets for e in entries} == {1} and {e.bucket for e in entries} == {0}
    assert len({e.file.fileName for e in entries}) >= 2  # both writers' files are live
