"""Model-based test of row-level changes: random sequences of write / delete / update / merge /
compaction / expiration on append and primary-key tables, every merge engine that allows
them, compared with a plain Python model (a list of rows, or a dict by key) after every
operation. 2,200 operations in all."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import UnsupportedFeatureError

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("p", pa.string(), nullable=False),
    pa.field("v", pa.int32()),
    pa.field("s", pa.string()),
])
COLUMNS = SCHEMA.names
Row = dict[str, Any]

CONFIGS = {
    # name: (primary key, options, operations)
    "append": (None, {}, 450),
    "append-bucketed": (None, {"bucket": "2", "bucket-key": "id"}, 250),
    "append-deletion-vectors": (None, {"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true"}, 300),
    "pk-deduplicate": (["id", "p"], {"bucket": "2"}, 450),
    "pk-deletion-vectors": (["id", "p"], {"bucket": "2", "deletion-vectors.enabled": "true"}, 350),
    "pk-input-changelog": (["id", "p"], {"bucket": "1", "changelog-producer": "input"}, 250),
    "pk-partial-update": (["id", "p"], {"bucket": "2", "merge-engine": "partial-update",
                                        "partial-update.remove-record-on-delete": "true"}, 250),
    "pk-lookup-changelog": (["id", "p"], {"bucket": "1", "changelog-producer": "lookup"}, 200),
}


def _holds(row: Row, term: tuple) -> bool:
    """SQL semantics of one filter term (a null never matches a comparison)."""
    col, op, value = term
    x = row[col]
    if op == "is null":
        return x is None
    if x is None:
        return False
    if op == "in":
        return x in value
    return {"=": lambda: x == value, "<": lambda: x < value, ">=": lambda: x >= value}[op]()


def _matches(row: Row, flt: list | None) -> bool:
    if flt is None:
        return True
    return all(_holds(row, t) for t in flt)


def _random_filter(rng: random.Random) -> list | None:
    choices: list[Callable[[], list | None]] = [
        lambda: [("v", "<", rng.randrange(-5, 60))],
        lambda: [("v", ">=", rng.randrange(0, 60)), ("p", "=", rng.choice("ab"))],
        lambda: [("id", "in", [rng.randrange(40) for _ in range(4)])],
        lambda: [("s", "is null", None)],
        lambda: [("s", "=", f"s{rng.randrange(5)}")],
        lambda: [("p", "=", rng.choice("abc"))],
    ]
    if rng.random() < 0.02:
        return None  # every row
    return rng.choice(choices)()


def _random_rows(rng: random.Random, n: int) -> list[Row]:
    return [{"id": rng.randrange(40), "p": rng.choice("ab"), "v": rng.choice([None, *range(50)]),
             "s": rng.choice([None, "s0", "s1", "s2", "s3", "s4"])} for _ in range(n)]


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _canonical(rows: list[Row]) -> list[tuple]:
    return sorted((tuple(r[c] for c in COLUMNS) for r in rows),
                  key=lambda t: tuple((x is None, x) for x in t))


class Model:
    """The table's rows: a list (append) or a dict by key (primary key)."""

    def __init__(self, key: list[str] | None, engine: str) -> None:
        self.key = key
        self.engine = engine
        self.rows: list[Row] = []

    def _index(self) -> dict[tuple, int]:
        assert self.key
        return {tuple(r[k] for k in self.key): i for i, r in enumerate(self.rows)}

    def write(self, new: list[Row]) -> None:
        if not self.key:
            self.rows += [dict(r) for r in new]
            return
        for r in new:
            index = self._index()
            k = tuple(r[c] for c in self.key)
            if k in index:
                old = self.rows[index[k]]
                if self.engine == "partial-update":
                    old.update({c: v for c, v in r.items() if v is not None})
                else:
                    self.rows[index[k]] = dict(r)
            else:
                self.rows.append(dict(r))

    def delete(self, flt: list | None) -> int:
        keep = [r for r in self.rows if not _matches(r, flt)]
        n = len(self.rows) - len(keep)
        self.rows = keep
        return n

    def update(self, flt: list | None, fn: Callable[[Row], Row]) -> int:
        n = 0
        for i, r in enumerate(self.rows):
            if _matches(r, flt):
                self.rows[i] = fn(dict(r))
                n += 1
        return n

    def merge(self, source: list[Row]) -> tuple[int, int, int]:
        """The merge of :func:`_merge`: on id and p, matched and source v larger -> update v
        and s; matched and source v is null -> delete; not matched -> insert all."""
        by_key = {(r["id"], r["p"]): r for r in source}
        matched_sources = set()
        out, updated, deleted = [], 0, 0
        for r in self.rows:
            s = by_key.get((r["id"], r["p"]))
            if s is None:
                out.append(r)
                continue
            matched_sources.add((r["id"], r["p"]))
            if s["v"] is not None and r["v"] is not None and s["v"] > r["v"]:
                out.append({**r, "v": s["v"], "s": s["s"]})
                updated += 1
            elif s["v"] is None:
                deleted += 1
            else:
                out.append(r)
        inserted = [dict(s) for k, s in by_key.items() if k not in matched_sources]
        self.rows = out + inserted
        return len(inserted), updated, deleted


def _merge(t: mp.Table, source: list[Row]) -> mp.MergeResult:
    return (t.merge(_arrow(source), on=["id", "p"])
            .when_matched_update(set={"v": "source.v", "s": "source.s"},
                                 condition=pc.field("source.v") > pc.field("target.v"))
            .when_matched_delete(condition=pc.field("source.v").is_null())
            .when_not_matched_insert_all()
            .execute())


UPDATES: list[tuple[Callable[[], dict], Callable[[Row], Row]]] = [
    (lambda: {"v": pc.field("v") + 1}, lambda r: {**r, "v": None if r["v"] is None else r["v"] + 1}),
    (lambda: {"s": "upd"}, lambda r: {**r, "s": "upd"}),
    (lambda: {"v": 7, "s": pc.field("p")}, lambda r: {**r, "v": 7, "s": r["p"]}),
]


@pytest.mark.parametrize("config", list(CONFIGS))
def test_random_row_level_changes_match_the_model(tmp_path, config: str) -> None:
    key, options, operations = CONFIGS[config]
    rng = random.Random(f"dml-{config}")
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=key, partition_by=["p"],
                        options={**options, "snapshot.num-retained.min": "1",
                                 "snapshot.num-retained.max": "1000"})
    engine = options.get("merge-engine", "deduplicate")
    model = Model(key, engine)
    history: list[tuple[int, list[tuple]]] = []
    for step in range(operations):
        op = rng.choices(["write", "delete", "update", "merge", "compact", "expire"],
                         weights=[30, 20, 20, 20, 6, 4])[0]
        what = f"{config} step {step}: {op}"
        if op == "write":
            new = _random_rows(rng, rng.randrange(1, 8))
            if key:  # one row per key in one write (the last would win: keep it simple)
                new = list({(r["id"], r["p"]): r for r in new}.values())
            if engine == "partial-update":
                for r in new:
                    if r["v"] is None:
                        r["v"] = 0
            t.write(_arrow(new))
            model.write(new)
        elif op == "delete":
            flt = _random_filter(rng)
            assert t.delete(flt) == model.delete(flt), what
        elif op == "update":
            flt = _random_filter(rng)
            make, fn = rng.choice(UPDATES)
            if engine == "partial-update" and any(_matches(r, flt) and r["v"] is None for r in model.rows):
                flt = [("v", ">=", 0)] + (flt or [])  # v + 1 of a null would set a null
            assert t.update(flt, set=make()) == model.update(flt, fn), what
        elif op == "merge":
            source = list({(r["id"], r["p"]): r for r in _random_rows(rng, rng.randrange(1, 10))}.values())
            if engine == "partial-update":
                for r in source:
                    r["s"] = r["s"] or "m"
            if not key:
                # an append table may hold a key twice: the merge joins every copy
                pass
            got = _merge(t, source)
            assert (got.inserted, got.updated, got.deleted) == model.merge(source), what
        elif op == "compact":
            t.compact(strategy=rng.choice(["full", "minor"]))
        else:
            t.expire_snapshots(retain_max=rng.randrange(2, 6))
        assert _canonical(t.to_arrow().to_pylist()) == _canonical(model.rows), what
        latest = t.latest_snapshot()
        if latest is not None:
            history.append((latest.id, _canonical(model.rows)))
    # time travel: every retained snapshot still reads as the model did then
    retained = {s.id for s in t.snapshots()}
    checked = 0
    for sid, rows in history:
        if sid in retained:
            assert _canonical(t.scan(snapshot_id=sid).to_arrow().to_pylist()) == rows, (config, sid)
            checked += 1
    assert checked >= 2


def test_the_model_covers_at_least_2000_operations() -> None:
    assert sum(n for _, _, n in CONFIGS.values()) >= 2000


@pytest.mark.parametrize("engine,options", [
    ("first-row", {}),
    ("aggregation", {"fields.v.aggregate-function": "sum"}),
])
def test_engines_that_cannot_express_a_change_refuse_it_and_change_nothing(tmp_path, engine, options) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "p"],
                        options={"bucket": "1", "merge-engine": engine, **options})
    t.write(_arrow([{"id": 1, "p": "a", "v": 1, "s": "x"}]))
    before = [s.id for s in t.snapshots()]
    with pytest.raises(UnsupportedFeatureError, match=engine):
        t.delete([("id", "=", 1)])
    with pytest.raises(UnsupportedFeatureError, match=engine):
        t.update([("id", "=", 1)], set={"s": "y"})
    with pytest.raises(UnsupportedFeatureError, match=engine):
        _merge(t, [{"id": 1, "p": "a", "v": 5, "s": "z"}])
    assert [s.id for s in t.snapshots()] == before
    # inserts only: what the engine can take
    r = t.merge(_arrow([{"id": 2, "p": "a", "v": 3, "s": "n"}]), on=["id", "p"]) \
        .when_not_matched_insert_all().execute()
    assert r.inserted == 1 and sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_partial_update_refuses_a_delete_without_remove_record_and_a_null_set(tmp_path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "p"],
                        options={"bucket": "1", "merge-engine": "partial-update"})
    t.write(_arrow([{"id": 1, "p": "a", "v": 1, "s": "x"}]))
    with pytest.raises(UnsupportedFeatureError, match="remove-record-on-delete"):
        t.delete([("id", "=", 1)])
    with pytest.raises(UnsupportedFeatureError, match="null"):
        t.update([("id", "=", 1)], set={"s": None})
    assert t.update([("id", "=", 1)], set={"s": "y"}) == 1
    assert t.to_arrow().to_pylist() == [{"id": 1, "p": "a", "v": 1, "s": "y"}]
    assert len(t.snapshots()) == 2
