"""Bucket assignment as Paimon's writers do it: the same key lands in the same bucket.

The hash itself (Paimon's BinaryRow murmur3, vectorised) is tested against values Paimon's
Java engine computed in tests/format/test_bucket_hash.py; here: which columns are hashed,
``bucket = -1``, and that the buckets of a table's rows agree with Java's known answers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format import bucket_hash
from minipaimon_core.schema.bucket import bucket_ids, bucket_keys, num_buckets
from minipaimon_core.schema.partition import iter_by_bucket, split_by_bucket


def _schema(tmp_path, primary_key=None, partition_by=None, **options: str):
    s = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                   ("v", pa.string())])
    return mp.create_table(str(tmp_path / "t"), s, primary_key=primary_key, partition_by=partition_by,
                           options=options).table_schema


def test_the_bucket_key_is_the_primary_key_without_partition_columns(tmp_path):
    schema = _schema(tmp_path, ["id", "dt"], ["dt"], bucket="4")
    assert bucket_keys(schema) == ["id"] and num_buckets(schema) == 4


def test_bucket_key_option_wins(tmp_path):
    schema = _schema(tmp_path, None, None, bucket="3", **{"bucket-key": "v"})
    assert bucket_keys(schema) == ["v"]


def test_an_append_table_without_buckets_keeps_every_row_in_bucket_zero(tmp_path):
    schema = _schema(tmp_path)
    assert num_buckets(schema) == -1 and schema.options["bucket"] == "-1"
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "dt": ["a"] * 3, "v": ["x"] * 3})
    assert bucket_ids(rows, schema).tolist() == [0, 0, 0]


def test_one_bucket_puts_every_row_in_bucket_zero_without_hashing_keys(tmp_path, monkeypatch):
    schema = _schema(tmp_path, ["id"], None, bucket="1")

    def no_hash(*args, **kwargs):
        raise AssertionError("keys hashed for a one-bucket table")

    monkeypatch.setattr(bucket_hash, "bucket_hashes", no_hash)
    rows = pa.table({"id": pa.array([1, -7, 2**30], pa.int32()), "dt": ["a"] * 3, "v": ["x"] * 3})
    assert bucket_ids(rows, schema).tolist() == [0, 0, 0]


# Paimon 0.9's BinaryRow.hashCode of a one-INT row, and its buckets of 2 and 4 (Java)
JAVA = {0: (-300363099, 1, 3), 1: (1465514398, 0, 2), 2: (1340390384, 0, 0), 3: (-771300025, 1, 1),
        4: (1447522506, 0, 2), 5: (260196596, 0, 0), 100: (694654213, 1, 1), -1: (1133687267, 1, 3)}


@pytest.mark.parametrize("n", [2, 4])
def test_rows_land_in_the_buckets_paimon_puts_them_in(tmp_path, n):
    schema = _schema(tmp_path, ["id", "dt"], ["dt"], bucket=str(n))
    keys = list(JAVA)
    rows = pa.table({"id": pa.array(keys, pa.int32()), "dt": ["a"] * len(keys), "v": [None] * len(keys)})
    want = [JAVA[k][1 if n == 2 else 2] for k in keys]
    assert bucket_ids(rows, schema).tolist() == want
    hashes = bucket_hash.bucket_hashes([rows.column("id")], ["INT"])
    assert hashes.tolist() == [JAVA[k][0] for k in keys]


def test_buckets_are_java_remainders_of_negative_hashes():
    hashes = np.array([-7, -1, 0, 7, -(2**31)], dtype=np.int32)
    assert bucket_hash.buckets(hashes, 4).tolist() == [3, 1, 0, 3, 0]


def test_a_table_written_twice_keeps_each_key_in_one_bucket(tmp_path):
    s = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), s, primary_key=["k"], options={"bucket": "4"})
    keys = [f"key-{i}" for i in range(200)]
    t.write(pa.table({"k": keys, "v": list(range(200))}, schema=s))
    t.write(pa.table({"k": keys[::-1], "v": list(range(200))}, schema=s))
    seen: dict[str, set[int]] = {}
    for split in t.scan().plan():
        for f in split.files:
            rows = t.read_file_rows(split, f)
            for k in rows.column("k").to_pylist():
                seen.setdefault(k, set()).add(split.bucket)
    assert all(len(b) == 1 for b in seen.values()) and len(seen) == 200


@pytest.mark.parametrize("ids", [[3, 0, 3, 1, 0, 3], [-2, 5, -2, 0], [0, 40000, 7, 40000], [2, 2, 2]],
                         ids=["few", "negative", "far-apart", "one"])
def test_split_by_bucket_keeps_input_order_within_each_bucket(ids):
    table = pa.table({"row": list(range(len(ids)))})
    got = [(b, part.column("row").to_pylist()) for b, part in split_by_bucket(table, np.array(ids, np.int32))]
    want = [(b, [r for r, i in enumerate(ids) if i == b]) for b in sorted(set(ids))]
    assert got == want


@pytest.mark.parametrize("draw", [
    lambda r: r.integers(0, 8, 5000),                      # many runs, few ids: a compare per id
    lambda r: r.integers(-3, 40, 5000),                    # many ids: one radix argsort
    lambda r: r.choice([0, 7, 40000, -9], 5000),           # ids far apart: one argsort
    lambda r: np.repeat(r.permutation(30), r.integers(1, 200, 30)),  # few runs: slices
    lambda r: np.repeat(r.integers(0, 3, 63), 50),         # runs of one id repeated: slices joined
], ids=["few-ids", "many-ids", "far-apart", "runs", "repeated-runs"])
def test_split_by_bucket_on_every_path_is_a_stable_grouping(draw):
    """Every way split_by_bucket finds a bucket's rows (zero-copy slices of few runs, a compare
    per id, a radix or a plain argsort) gives each bucket's rows in input order, and
    iter_by_bucket their positions in the table (what a writer numbers them by)."""
    r = np.random.default_rng(7)
    for _ in range(5):
        ids = np.asarray(draw(r), dtype=np.int32)
        table = pa.table({"row": np.arange(len(ids)), "s": [f"v{i}" for i in range(len(ids))]})
        got = [(b, part.column("row").to_pylist(), part.column("s").to_pylist())
               for b, part in split_by_bucket(table, ids)]
        want = [(b, np.flatnonzero(ids == b).tolist(), [f"v{i}" for i in np.flatnonzero(ids == b)])
                for b in sorted(set(ids.tolist()))]
        assert got == want
        positions = [(b, np.arange(len(ids)) if at is None else at) for b, _, at in iter_by_bucket(table, ids)]
        assert [(b, at.tolist()) for b, at in positions] == [(b, rows) for b, rows, _ in want]
