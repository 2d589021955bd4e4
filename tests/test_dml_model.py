"""Model-based test of row-level changes: random sequences of write / delete / update / merge /
compaction / expiration on append and primary-key tables, every merge engine that allows
them, with and without ``sequence.field``, compared with a plain Python model after every
operation. Values include NaN, which filters order above every number (issue 32 item 14);
sequence values go down as well as up (item 10: the larger wins, deletes included).
2,850 operations in all."""

from __future__ import annotations

import math
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
    pa.field("q", pa.int64()),  # the sequence.field of the *-sequence tables
    pa.field("f", pa.float64()),  # NaN, infinities, nulls
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
    "pk-sequence": (["id", "p"], {"bucket": "2", "sequence.field": "q"}, 250),
    "pk-sequence-deletion-vectors": (["id", "p"], {"bucket": "2", "deletion-vectors.enabled": "true",
                                                   "sequence.field": "q"}, 200),
    "pk-partial-update-sequence": (["id", "p"], {"bucket": "2", "merge-engine": "partial-update",
                                                 "partial-update.remove-record-on-delete": "true",
                                                 "sequence.field": "q"}, 200),
}
F_VALUES = [None, math.nan, -math.inf, -1.5, 0.0, 2.5, math.inf]


def _order(x: Any) -> Any:
    """Spark's order of non-null values: NaN above every number, equal to itself."""
    return (1, 0.0) if isinstance(x, float) and math.isnan(x) else (0, x)


def _holds(row: Row, term: tuple) -> bool:
    """SQL semantics of one filter term (a null never matches a comparison; NaN in order)."""
    col, op, value = term
    x = row[col]
    if op == "is null":
        return x is None
    if x is None:
        return False
    if op == "in":
        return any(_order(x) == _order(w) for w in value)
    a, b = _order(x), _order(value)
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


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
        lambda: [("f", rng.choice(["=", "!=", "<", "<=", ">", ">="]), rng.choice(F_VALUES[1:]))],
        lambda: [("f", "in", [math.nan, rng.choice(F_VALUES[2:])])],
        lambda: [("q", rng.choice(["<", ">="]), rng.randrange(0, 30))],
    ]
    if rng.random() < 0.02:
        return None  # every row
    return rng.choice(choices)()


def _random_rows(rng: random.Random, n: int) -> list[Row]:
    return [{"id": rng.randrange(40), "p": rng.choice("ab"), "v": rng.choice([None, *range(50)]),
             "s": rng.choice([None, "s0", "s1", "s2", "s3", "s4"]),
             "q": rng.choice([None, *range(30)]), "f": rng.choice(F_VALUES)} for _ in range(n)]


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _canonical(rows: list[Row]) -> list[tuple]:
    """Rows comparable with ==: NaN (never equal to itself) as the string "NaN"."""
    def cell(x: Any) -> Any:
        return "NaN" if isinstance(x, float) and math.isnan(x) else x
    return sorted((tuple(cell(r[c]) for c in COLUMNS) for r in rows),
                  key=lambda t: tuple((x is None, isinstance(x, str), x) for x in t))


def _seq_key(value: Any, seq: str | None) -> tuple:
    """A row's place in sequence order: nulls first; every row ties without a sequence.field."""
    return (0, 0) if seq is None or value is None else (1, value)


class Model:
    """The table as the merge engines define it. Append: a list of rows. Primary key: every
    version written of each key, as (sequence value, write order, kind, row); a key's row is
    derived from them as the engine merges (versions ordered by sequence value, nulls first,
    then write order): deduplicate, the last version unless it is a delete; partial-update,
    per column the last non-null value of the versions after the last delete."""

    def __init__(self, key: list[str] | None, engine: str, seq: str | None) -> None:
        self.key = key
        self.engine = engine
        self.seq = seq
        self.appended: list[Row] = []
        self.versions: dict[tuple, list[tuple[tuple, int, str, Row]]] = {}
        self.writes = 0

    def _add(self, kind: str, row: Row) -> None:
        assert self.key
        self.writes += 1
        self.versions.setdefault(tuple(row[c] for c in self.key), []).append(
            (_seq_key(row[self.seq] if self.seq else None, self.seq), self.writes, kind, dict(row)))

    def _ordered(self, k: tuple) -> list[tuple[tuple, int, str, Row]]:
        return sorted(self.versions.get(k, []), key=lambda v: (v[0], v[1]))

    def _row(self, k: tuple) -> Row | None:
        versions = self._ordered(k)
        if self.engine != "partial-update":
            return None if not versions or versions[-1][2] in ("-D", "-U") else dict(versions[-1][3])
        last_delete = max((i for i, v in enumerate(versions) if v[2] == "-D"), default=-1)
        live = versions[last_delete + 1:]
        if not live:
            return None
        out = dict(live[-1][3])  # keys, and the sequence value of the last version
        for c in COLUMNS:
            if c not in self.key and c != self.seq:
                values = [v[3][c] for v in live if v[3][c] is not None]
                out[c] = values[-1] if values else None
        return out

    @property
    def rows(self) -> list[Row]:
        if not self.key:
            return self.appended
        return [r for k in self.versions if (r := self._row(k)) is not None]

    def _stale(self, new: Row, old: Row) -> bool:
        """An update the table does not make: its sequence value sorts below the row's."""
        return self.seq is not None and _seq_key(new[self.seq], self.seq) < _seq_key(old[self.seq], self.seq)

    def _shadowed(self, row: Row) -> bool:
        """An insert under a delete of its key with a higher sequence value."""
        assert self.key
        k = tuple(row[c] for c in self.key)
        versions = self._ordered(k)
        return bool(versions) and self._row(k) is None and _seq_key(row[self.seq] if self.seq else None,
                                                                    self.seq) < versions[-1][0]

    def write(self, new: list[Row]) -> None:
        if not self.key:
            self.appended += [dict(r) for r in new]
            return
        for r in new:
            self._add("+I", r)

    def delete(self, flt: list | None) -> int:
        if not self.key:
            keep = [r for r in self.appended if not _matches(r, flt)]
            n = len(self.appended) - len(keep)
            self.appended = keep
            return n
        gone = [r for r in self.rows if _matches(r, flt)]
        for r in gone:
            self._add("-D", r)  # the stored row, its sequence value included
        return len(gone)

    def _replace(self, old: Row, new: Row) -> bool:
        """Update ``old`` to ``new`` as the table does; whether it changed (was counted)."""
        if self._stale(new, old):
            return False
        if self.engine != "partial-update":
            self._add("-U", old)
        self._add("+U", new)
        return True

    def update(self, flt: list | None, fn: Callable[[Row], Row]) -> int:
        if not self.key:
            n = 0
            for i, r in enumerate(self.appended):
                if _matches(r, flt):
                    self.appended[i] = fn(dict(r))
                    n += 1
            return n
        return sum(self._replace(r, fn(dict(r))) for r in self.rows if _matches(r, flt))

    def merge(self, source: list[Row]) -> tuple[int, int, int]:
        """The merge of :func:`_merge`: on id and p, matched and source v larger -> update v,
        s and q; matched and source v is null -> delete; not matched -> insert all."""
        by_key = {(r["id"], r["p"]): r for r in source}
        matched_sources = set()
        updated = deleted = 0
        if not self.key:
            out = []
            for r in self.appended:
                s = by_key.get((r["id"], r["p"]))
                if s is not None:
                    matched_sources.add((r["id"], r["p"]))
                if s is not None and s["v"] is not None and r["v"] is not None and s["v"] > r["v"]:
                    out.append({**r, "v": s["v"], "s": s["s"], "q": s["q"]})
                    updated += 1
                elif s is not None and s["v"] is None:
                    deleted += 1
                else:
                    out.append(r)
            inserted = [dict(s) for k, s in by_key.items() if k not in matched_sources]
            self.appended = out + inserted
            return len(inserted), updated, deleted
        for r in self.rows:
            s = by_key.get((r["id"], r["p"]))
            if s is None:
                continue
            matched_sources.add((r["id"], r["p"]))
            if s["v"] is not None and r["v"] is not None and s["v"] > r["v"]:
                updated += self._replace(r, {**r, "v": s["v"], "s": s["s"], "q": s["q"]})
            elif s["v"] is None:
                self._add("-D", r)
                deleted += 1
        inserted = 0
        for k, s in by_key.items():
            if k not in matched_sources and not self._shadowed(s):
                self._add("+I", s)
                inserted += 1
        return inserted, updated, deleted


def _merge(t: mp.Table, source: list[Row]) -> mp.MergeResult:
    return (t.merge(_arrow(source), on=["id", "p"])
            .when_matched_update(set={"v": "source.v", "s": "source.s", "q": "source.q"},
                                 condition=pc.field("source.v") > pc.field("target.v"))
            .when_matched_delete(condition=pc.field("source.v").is_null())
            .when_not_matched_insert_all()
            .execute())


UPDATES: list[tuple[Callable[[], dict], Callable[[Row], Row]]] = [
    (lambda: {"v": pc.field("v") + 1}, lambda r: {**r, "v": None if r["v"] is None else r["v"] + 1}),
    (lambda: {"s": "upd"}, lambda r: {**r, "s": "upd"}),
    (lambda: {"v": 7, "s": pc.field("p")}, lambda r: {**r, "v": 7, "s": r["p"]}),
    (lambda: {"q": pc.field("q") - 3, "s": "down"},  # a lower sequence value: no change there
     lambda r: {**r, "q": None if r["q"] is None else r["q"] - 3, "s": "down"}),
    (lambda: {"q": pc.field("q") + 2}, lambda r: {**r, "q": None if r["q"] is None else r["q"] + 2}),
    (lambda: {"f": pc.field("f") * -1.0}, lambda r: {**r, "f": None if r["f"] is None else r["f"] * -1.0}),
]


@pytest.mark.parametrize("config", list(CONFIGS))
def test_random_row_level_changes_match_the_model(tmp_path, config: str) -> None:
    key, options, operations = CONFIGS[config]
    rng = random.Random(f"dml-{config}")
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=key, partition_by=["p"],
                        options={**options, "snapshot.num-retained.min": "1",
                                 "snapshot.num-retained.max": "1000"})
    engine = options.get("merge-engine", "deduplicate")
    model = Model(key, engine, options.get("sequence.field"))
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
            if engine == "partial-update":  # a null set is refused there (its null means "keep")
                for r in source:
                    r["s"] = r["s"] or "m"
                    if "sequence.field" not in options:
                        r["q"] = 0 if r["q"] is None else r["q"]
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


def test_the_model_covers_at_least_2800_operations() -> None:
    assert sum(n for _, _, n in CONFIGS.values()) >= 2800


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
        t.update([("id", "=", 1)], set={"s": "y"})
    with pytest.raises(UnsupportedFeatureError, match=engine):
        _merge(t, [{"id": 1, "p": "a", "v": 5, "s": "z"}])
    assert [s.id for s in t.snapshots()] == before
    # inserts only: what the engine can take
    r = t.merge(_arrow([{"id": 2, "p": "a", "v": 3, "s": "n"}]), on=["id", "p"]) \
        .when_not_matched_insert_all().execute()
    assert r.inserted == 1 and sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]
    # and deletes by condition, which rewrite compacted files (dml/dml_rewrite.py)
    t.compact()
    assert t.delete([("id", "=", 1)]) == 1 and t.to_arrow().column("id").to_pylist() == [2]


def test_partial_update_refuses_a_merge_delete_without_remove_record_and_a_null_set(tmp_path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "p"],
                        options={"bucket": "1", "merge-engine": "partial-update"})
    t.write(_arrow([{"id": 1, "p": "a", "v": 1, "s": "x"}]))
    with pytest.raises(UnsupportedFeatureError, match="-D"):  # a delete by condition rewrites files
        t.merge(_arrow([{"id": 1, "p": "a", "v": 1, "s": "x"}]), on=["id", "p"]).when_matched_delete().execute()
    with pytest.raises(UnsupportedFeatureError, match="null"):
        t.update([("id", "=", 1)], set={"s": None})
    assert t.update([("id", "=", 1)], set={"s": "y"}) == 1
    assert t.to_arrow().to_pylist() == [{"id": 1, "p": "a", "v": 1, "s": "y", "q": None, "f": None}]
    assert len(t.snapshots()) == 2
