"""Corruption sweep: damaged metadata and data files give correct results or a typed error.

Seeded: every case truncates, empties or bit-flips one file of a small table with every
kind of file (schema, snapshot, hints, manifest, manifest list, data, changelog, tag,
consumer; and a deletion-vector table's index manifests and index files), copies another
file of its kind over it, or swaps two files of a kind, runs every read and restores them. A read must return what the intact table
returns or raise a MiniPaimonError: never a raw exception, never wrong rows, never a hang
(a case taking over 10 s fails through SIGALRM).

Known gap, tolerated below: a *valid* snapshot saved under another one's name (a snapshot
is checked against its name, but its copy over a tag-pinned or expired one cannot be told
apart). Manifest lists are checked against the size and digest their snapshot recorded,
index files against their index manifest's digest, data files against the name in their
Parquet footer. Such a swap must still never raise a raw exception.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.file_format.parquet import ParquetFormat
from minipaimon_core.system_tables import SYSTEM_TABLES

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.float64())])
CASES = 400
TOLERATED_WRONG = {("snapshot", "copy"), ("snapshot", "swap")}
BUILDS = {"changelog": {"bucket": "2", "changelog-producer": "input"},
          "deletion-vectors": {"bucket": "2", "deletion-vectors.enabled": "true"}}


def _build(path: str, options: dict[str, str]) -> mp.Table:
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options=options)
    for i in range(3):
        ids = list(range(i * 3, i * 3 + 4 + i))
        t.write(pa.table({"id": ids, "v": [f"v{i}-{k}" for k in ids], "n": [k * 0.5 for k in ids]}, schema=SCHEMA))
    t.create_tag("t1", 1)
    t.compact(full=True)
    if "deletion-vectors.enabled" in options:  # vectors in the latest snapshot too
        t.write(pa.table({"id": [0, 5], "v": ["late0", "late5"], "n": [0.0, 2.5]}, schema=SCHEMA))
    s = t.stream("c1", options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    for batch in s:
        s.commit(batch)
        break
    return t


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def _reads(path: str) -> Iterator[tuple[str, Callable[[], Any]]]:
    """(name, read) pairs; each read returns something comparable with the intact table."""
    def table() -> mp.Table:
        return mp.open_table(path)
    yield "open_table", lambda: table().primary_keys()
    yield "to_arrow", lambda: _rows(table().to_arrow())
    yield "scan filtered", lambda: _rows(table().scan(filter=[("id", "<", 4)]).to_arrow())
    yield "time travel", lambda: _rows(table().scan(snapshot_id=1).to_arrow())
    yield "time travel 3", lambda: _rows(table().scan(snapshot_id=3).to_arrow())
    yield "tag", lambda: _rows(table().scan(tag="t1").to_arrow())
    yield "snapshots", lambda: [s.id for s in table().snapshots()]
    yield "stream", lambda: [_rows(b.data) for b in table().stream(
        options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.changelog": "true"})]
    for name in SYSTEM_TABLES:
        yield f"${name}", lambda name=name: table().system_table(name).num_rows


def _damage(rng: random.Random, victim: Path, others: list[Path]) -> str:
    data = victim.read_bytes()
    how = rng.choice(["truncate", "empty", "flip", "flip", "copy", "swap"])
    if how in ("copy", "swap") and not others:
        how = "flip"
    if how == "truncate" and len(data) > 1:
        cut = rng.randrange(1, len(data))
        victim.write_bytes(data[:cut])
        return f"truncate to {cut}"
    if how == "flip" and data:
        i = rng.randrange(len(data))
        bit = 1 << rng.randrange(8)
        victim.write_bytes(data[:i] + bytes([data[i] ^ bit]) + data[i + 1:])
        return f"flip byte {i} bit {bit}"
    if how == "copy" and others:
        other = rng.choice(others)
        victim.write_bytes(other.read_bytes())
        return f"copy of {other.name}"
    if how == "swap" and others:  # the caller restores both
        other = rng.choice(others)
        victim.write_bytes(other.read_bytes())
        other.write_bytes(data)
        return f"swap with {other.name}"
    victim.write_bytes(b"")
    return "empty"


def _kind(p: Path) -> str:
    name = p.name
    for prefix in ("manifest-list", "index-manifest", "manifest", "index", "data", "changelog",
                   "snapshot", "schema", "tag", "consumer"):
        if name.startswith(prefix):
            return prefix
    return "hint"


@pytest.fixture(scope="module", params=sorted(BUILDS))
def intact(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[str, dict[str, Any]]:
    path = str(tmp_path_factory.mktemp("sweep") / "t")
    _build(path, BUILDS[request.param])
    return path, {name: read() for name, read in _reads(path)}


def _alarm(*_: Any) -> None:
    raise TimeoutError("read hung on a damaged file")


def test_corruption_sweep(intact: tuple[str, dict[str, Any]]) -> None:
    path, expected = intact
    files = sorted(p for p in Path(path).rglob("*") if p.is_file())
    kinds = {_kind(p) for p in files}
    assert kinds >= {"manifest-list", "manifest", "data", "snapshot", "schema", "tag", "consumer",
                     "hint"}, kinds
    assert "changelog" in kinds or {"index-manifest", "index"} <= kinds, kinds
    rng = random.Random(15)
    failures: list[str] = []
    typed = 0
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in range(CASES):
            victim = files[case % len(files)] if case < len(files) else rng.choice(files)
            originals = {p: p.read_bytes() for p in files if _kind(p) == _kind(victim)}
            originals[victim] = victim.read_bytes()
            # copies and swaps within a kind (a valid file of another kind under this name,
            # e.g. a snapshot as a tag, is a different table state, not damage)
            others = [p for p in files if p != victim and _kind(p) == _kind(victim)]
            damage = _damage(rng, victim, others)
            try:
                for name, read in _reads(path):
                    signal.alarm(10)
                    try:
                        got = read()
                        if got != expected[name] and (_kind(victim), damage.split()[0]) not in TOLERATED_WRONG:
                            failures.append(f"{victim.relative_to(path)} {damage}: {name} gave wrong result")
                    except mp.MiniPaimonError:
                        typed += 1
                    except Exception as e:  # noqa: BLE001 - the point of the sweep
                        failures.append(f"{victim.relative_to(path)} {damage}: {name} raised "
                                        f"{type(e).__name__}: {str(e)[:120]}")
                    finally:
                        signal.alarm(0)
            finally:
                for p, data in originals.items():
                    p.write_bytes(data)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert typed > CASES // 2  # the damage was real and noticed
    assert not failures, f"{len(failures)} bad reads:\n" + "\n".join(failures[:40])



@pytest.mark.parametrize("column", ["_SEQUENCE_NUMBER", "_VALUE_KIND", "v"])
def test_a_data_file_read_without_a_column_is_corrupt_for_every_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str) -> None:
    """A bit flipped in a Parquet file can make pyarrow leave a requested column out of what
    it reads, with no error (the sweep found one: the stream raised KeyError). Every reader
    (scan, stream, compaction) must then raise CorruptDataFileError. The flip is modelled
    by dropping the column from what the Parquet reader returns."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.write(pa.table({"id": [2, 3], "v": ["c", "d"]}, schema=schema))

    def drop(table: pa.Table) -> pa.Table:
        return table.drop_columns([column]) if column in table.column_names else table

    read, read_batches = ParquetFormat.read, ParquetFormat.read_batches
    monkeypatch.setattr(ParquetFormat, "read", lambda *a, **k: (drop(read(*a, **k)[0]), read(*a, **k)[1]))
    monkeypatch.setattr(ParquetFormat, "read_batches", lambda *a, **k: (
        (lambda tables, named, rows: ((drop(x) for x in tables), named, rows))(*read_batches(*a, **k))))
    reads: list[Callable[[], Any]] = [
        lambda: [b.data for b in t.stream(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})],
        lambda: t.compact(full=True)]
    if column == "v":
        reads.append(t.to_arrow)
    else:  # a deletion-vector table's scan reads no system column: its rows are right
        assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}]
    for reader in reads:
        with pytest.raises(mp.CorruptDataFileError, match=f"lacks the column.*{column}"):
            reader()
