"""The streaming k-way merge (lsm.streaming_merge) against the in-memory merge: seeded random
histories for every engine, runs cut into tiny tables so that a merge takes many steps, and
the result equal to ``merge`` of all rows at once (the present merge: the oracle)."""

from __future__ import annotations

import math
import random
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.format.manifest_file import DataFileMeta, SimpleStats
from minipaimon_core.lsm.key_range import disjoint_chains
from minipaimon_core.lsm.merge_engines import (
    DELETE,
    INSERT,
    SEQUENCE,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    VALUE_KIND,
    MergeConfig,
    merge,
    prepare_input,
)
from minipaimon_core.lsm.streaming_merge import key_chunks, merged_chunks
from tests.test_merge_engines import (
    COLUMNS,
    ENGINES,
    FUNCTIONS,
    RETRACTABLE,
    random_config,
    random_rows,
    to_table,
)

I, UB, UA, D = INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE  # noqa: E741 (Paimon's +I)


def cut(rng: random.Random, t: pa.Table, largest: int) -> list[pa.Table]:
    """``t`` as consecutive tables of 0..``largest`` rows (empty ones too)."""
    out, start = [], 0
    while start < t.num_rows:
        n = rng.randrange(0, largest + 1)
        out.append(t.slice(start, n))
        start += n
    return out


def runs_of(rng: random.Random, table: pa.Table, cfg: MergeConfig, count: int) -> list[pa.Table]:
    """``table`` split by sequence into ``count`` runs, oldest first, each merged with kept
    deletes as a writer or a compaction leaves it (one row per key, or -D then +I)."""
    seq = table.column(SEQUENCE).to_numpy()
    population = range(int(seq.max()) + 2) if len(seq) else range(1)
    cuts = sorted(rng.sample(population, min(count - 1, len(population))))
    bounds = [0, *cuts, 10**9]
    return [merge(table.filter(pa.array((seq >= lo) & (seq < hi))), cfg, keep_deletes=True)
            for lo, hi in zip(bounds, bounds[1:])]


def streamed(rng: random.Random, runs: list[pa.Table], cfg: MergeConfig, keep: bool) -> pa.Table:
    pieces = [cut(rng, r, rng.choice([1, 2, 3, 7])) for r in runs]
    out = list(merged_chunks(pieces, cfg, keep_deletes=keep))
    return pa.concat_tables(out) if out else runs[0].slice(0, 0)


def at_once(runs: list[pa.Table], cfg: MergeConfig, keep: bool) -> pa.Table:
    return merge(pa.concat_tables(runs), cfg, keep_deletes=keep)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(40))
def test_streamed_merge_equals_the_merge_at_once(engine: str, seed: int) -> None:
    rng = random.Random(seed * 15485863 + ENGINES.index(engine))
    kinds = rng.choice([[I], [I, UA], [I, UB, UA, D], [I, D]])
    rows = random_rows(rng, rng.randrange(1, 120), kinds, sf_monotone=True)
    has_retract = UB in kinds or D in kinds
    cfg = random_config(rng, engine, retractions=has_retract, piecewise=True)
    if engine in ("partial-update", "first-row") and has_retract and not cfg.ignore_delete and (
            engine == "first-row" or not cfg.partial_update_remove_on_delete):
        cfg = MergeConfig(**{**cfg.__dict__, "ignore_delete": True})
    table = prepare_input(to_table(rows), cfg)
    runs = runs_of(rng, table, cfg, rng.randrange(1, 6))
    for keep in (False, True):
        want = at_once(runs, cfg, keep)
        got = streamed(rng, runs, cfg, keep)
        assert got.to_pylist() == want.to_pylist(), f"config {cfg}, keep_deletes={keep}"


GROUPED = ["k", "x", "b", "s1", "c", "d", "s2"]  # partial-update with sequence groups s1: b; s2: c, d


def _grouped_rows(rng: random.Random, kinds: list[int]) -> pa.Table:
    n = rng.randrange(4, 90)
    rows = [{"k": rng.randrange(8), **{c: None if rng.random() < 0.25 else rng.randrange(5) for c in GROUPED[1:]},
             SEQUENCE: i, VALUE_KIND: rng.choice(kinds)} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=pa.schema([*[(c, pa.int64()) for c in GROUPED],
                                                        (SEQUENCE, pa.int64()), (VALUE_KIND, pa.int8())]))


def _scenario(rng: random.Random, name: str) -> tuple[MergeConfig, pa.Table]:
    """Random rows and a config of one of the engines' options added since the merge first
    streamed (issues 38 and 39): each must merge step by step as it merges at once."""
    if name == "aggregation-remove-on-delete":  # a -D resets its key
        kinds = rng.choice([[I, D], [I, UA, D, D], [I, UB, UA, D]])
        keys = rng.choice([("id",), ("p", "id")])
        functions = {c: rng.choice([f for f in FUNCTIONS[c] if UB not in kinds or f in RETRACTABLE] or ["last_value"])
                     for c in COLUMNS if c not in keys}
        cfg = MergeConfig(key_columns=keys, engine="aggregation", aggregate_functions=functions,
                          aggregation_remove_on_delete=True, listagg_delimiter={"b": ","},
                          collect_distinct=frozenset({"b"}) if rng.random() < 0.5 else frozenset())
        return cfg, prepare_input(to_table(random_rows(rng, rng.randrange(1, 90), kinds, sf_monotone=True)), cfg)
    if name == "listagg-distinct":  # values holding the delimiter split into distinct elements
        rows = random_rows(rng, rng.randrange(1, 90), [I, UA], sf_monotone=True)
        for r in rows:
            r["b"] = rng.choice([None, "", "q", "q,r", "r,st", "st,q,q", ","])
        cfg = MergeConfig(key_columns=("id",), engine="aggregation", aggregate_functions={"b": "listagg"},
                          listagg_delimiter={"b": ","}, collect_distinct=frozenset({"b"}))
        return cfg, prepare_input(to_table(rows), cfg)
    if name == "remove-record-on-sequence-group":  # a -D winning group s2 removes the key
        cfg = MergeConfig.from_options(("k",), {
            "merge-engine": "partial-update", "fields.s1.sequence-group": "b", "fields.s2.sequence-group": "c,d",
            "partial-update.remove-record-on-sequence-group": "s2"})
        return cfg, _grouped_rows(rng, [I, I, UA, UB, D, D])
    if name == "first-last-value-in-groups":
        functions = {"b": rng.choice(["first_value", "last_value"]), "c": "first_value", "d": "last_value"}
        ignore = {"c"} | ({"b"} if functions["b"] == "first_value" else set()) | ({"d"} if rng.random() < 0.5 else set())
        cfg = MergeConfig.from_options(("k",), {
            "merge-engine": "partial-update", "fields.s1.sequence-group": "b", "fields.s2.sequence-group": "c,d",
            **{f"fields.{c}.aggregate-function": fn for c, fn in functions.items()},
            **{f"fields.{c}.ignore-retract": "true" for c in ignore}})
        return cfg, _grouped_rows(rng, rng.choice([[I], [I, I, UA, UB, D]]))
    assert name == "row-kinds"  # deduplicate / first-row keep a winner's own kind: +U stays +U
    engine = rng.choice(["deduplicate", "first-row"])
    kinds = [I, UA] if engine == "first-row" else [I, UA, UA, UB, D]
    cfg = MergeConfig(key_columns=rng.choice([("id",), ("p", "id")]), engine=engine,
                      sequence_field=rng.choice([None, "ts"]))
    return cfg, prepare_input(to_table(random_rows(rng, rng.randrange(1, 90), kinds, sf_monotone=False)), cfg)


SCENARIOS = ["aggregation-remove-on-delete", "listagg-distinct", "remove-record-on-sequence-group",
             "first-last-value-in-groups", "row-kinds"]


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("seed", range(25))
def test_the_options_of_every_engine_merge_streamed_as_at_once(name: str, seed: int) -> None:
    rng = random.Random(seed * 7727 + SCENARIOS.index(name))
    cfg, table = _scenario(rng, name)
    runs = runs_of(rng, table, cfg, rng.randrange(1, 6))
    for keep in (False, True):
        want = at_once(runs, cfg, keep)
        got = streamed(rng, runs, cfg, keep)
        assert got.to_pylist() == want.to_pylist(), f"config {cfg}, keep_deletes={keep}"
        if name == "row-kinds":  # each row as written, its kind too (its sequence: the key's largest)
            stored = {repr({k: v for k, v in r.items() if k != SEQUENCE}) for r in table.to_pylist()}
            assert all(repr({k: v for k, v in r.items() if k != SEQUENCE}) in stored for r in got.to_pylist())


@pytest.mark.parametrize("seed", range(60))
def test_an_integer_overflow_raises_streamed_as_at_once(seed: int) -> None:
    """Integer sum / product overflow raises InvalidArgumentError (issue 38 item 8) whether
    the merge runs at once or step by step; where none overflows both give the same rows."""
    rng = random.Random(seed)
    n = rng.randrange(2, 40)
    big = [(1 << 29), -(1 << 29), (1 << 30) + 7, (1 << 31) - 1, -(1 << 31)]
    small = [None, 1, -1, 2, 3]
    table = pa.table({"id": pa.array([rng.randrange(6) for _ in range(n)], pa.int64()),
                      "s": pa.array([rng.choice(big if rng.random() < 0.15 else small) for _ in range(n)], pa.int32()),
                      "m": pa.array([rng.choice([None, 1, -1, 2, 3, 5, 7, 11]) for _ in range(n)], pa.int8()),
                      SEQUENCE: pa.array(rng.sample(range(10 * n), n), pa.int64()),
                      VALUE_KIND: pa.array([rng.choice([I, I, UA, UB]) for _ in range(n)], pa.int8())})
    cfg = MergeConfig(("id",), engine="aggregation", aggregate_functions={"s": "sum", "m": "product"})
    try:
        runs = runs_of(rng, table, cfg, rng.randrange(1, 4))
    except InvalidArgumentError:
        return  # a run overflowed as it was written
    for keep in (False, True):
        try:
            want = at_once(runs, cfg, keep)
        except InvalidArgumentError as e:
            assert "overflows" in str(e)
            with pytest.raises(InvalidArgumentError, match="overflows"):
                streamed(rng, runs, cfg, keep)
            continue
        assert streamed(rng, runs, cfg, keep).to_pylist() == want.to_pylist()


@pytest.mark.parametrize("engine", ["partial-update", "first-row"])
def test_a_merge_that_refuses_retractions_refuses_them_streamed(engine: str) -> None:
    cfg = MergeConfig(("id",), engine=engine)
    rows = [{"p": "x", "id": i % 3, "a": i, "b": None, "c": None, "f": None, "ts": i,
             SEQUENCE: i, VALUE_KIND: D if i == 4 else I} for i in range(6)]
    table = to_table(rows)
    with pytest.raises(InvalidArgumentError):
        merge(table, cfg, keep_deletes=False)
    runs = [table.slice(0, 3).sort_by("id"), table.slice(3).sort_by("id")]
    with pytest.raises(InvalidArgumentError):
        list(merged_chunks([cut(random.Random(1), r, 1) for r in runs], cfg, keep_deletes=False))


KEY_TYPES: list[tuple[pa.DataType, Any]] = [
    (pa.int32(), lambda rng: rng.randrange(-50, 50)),
    (pa.timestamp("us", tz="UTC"), lambda rng: rng.randrange(0, 100) * 1_000_000),
    (pa.date32(), lambda rng: rng.randrange(0, 100)),
    (pa.string(), lambda rng: rng.choice(["", "a", "ab", "b", "é", "z", "zz", "\u4e2d"])),
    (pa.binary(), lambda rng: bytes([rng.randrange(0, 4)]) * rng.randrange(0, 3)),
    (pa.float64(), lambda rng: rng.choice([-1.5, -0.0, 1.0, 2.5, math.inf, -math.inf, math.nan])),
    (pa.decimal128(10, 2), lambda rng: __import__("decimal").Decimal(rng.randrange(-999, 999)) / 100),
    (pa.bool_(), lambda rng: rng.random() < 0.5),
]


@pytest.mark.parametrize("key_type,gen", KEY_TYPES, ids=[str(t) for t, _ in KEY_TYPES])
@pytest.mark.parametrize("composite", [False, True])
def test_steps_cut_every_key_type_as_arrow_sorts_it(key_type: pa.DataType, gen: Any, composite: bool) -> None:
    """Every key's rows of every run land in one step, the steps ascend in Arrow's order
    (NaN first, as the merge sorts), and the merge streamed equals the merge at once."""
    rng = random.Random(zlib.crc32(f"{key_type}-{composite}".encode()))  # not hash(): salted per process
    keys = ("k", "j") if composite else ("k",)
    cfg = MergeConfig(keys)
    for _ in range(20):
        n = rng.randrange(1, 80)
        data = {"k": pa.array([gen(rng) for _ in range(n)], key_type),
                "j": pa.array([rng.randrange(3) for _ in range(n)], pa.int64()),
                "v": pa.array(range(n), pa.int64()),
                SEQUENCE: pa.array(rng.sample(range(10 * n), n), pa.int64()),
                VALUE_KIND: pa.array([rng.choice([I, D]) for _ in range(n)], pa.int8())}
        table = pa.table(data)
        runs = runs_of(rng, table, cfg, rng.randrange(1, 5))
        pieces = [cut(rng, r, rng.choice([1, 2, 5])) for r in runs]
        steps = list(key_chunks(pieces, keys))
        # each run's slices, in order, are the run itself
        for i, run in enumerate(runs):
            parts = [s[i] for s in steps if s[i] is not None]
            got = pa.concat_tables(parts) if parts else run.slice(0, 0)
            assert repr(got.to_pylist()) == repr(run.to_pylist())  # NaN == NaN
        # no key in two steps, and steps ascend: merged at once, the steps' rows are in order
        step_of = []
        for n_step, s in enumerate(steps):
            for part in s:
                if part is not None:
                    step_of += [(_order(r, keys), n_step) for r in part.select(list(keys)).to_pylist()]
        by_key: dict[Any, set[int]] = {}
        for k, n_step in step_of:
            by_key.setdefault(k, set()).add(n_step)
        assert all(len(v) == 1 for v in by_key.values())
        in_key_order = [next(iter(by_key[k])) for k in sorted(by_key)]
        assert in_key_order == sorted(in_key_order)
        for keep in (False, True):
            assert repr(streamed(rng, runs, cfg, keep).to_pylist()) == repr(at_once(runs, cfg, keep).to_pylist())


def _order(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    out = []
    for k in keys:
        v = row[k]
        out.append((0, 0.0) if isinstance(v, float) and v != v else (1, v))
    return tuple(out)


def test_a_key_continuing_into_the_next_table_stays_in_one_step() -> None:
    """A run with a key's -D and +I rows (partial-update's kept delete) cut between them."""
    run = pa.table({"id": pa.array([1, 2, 2, 3], pa.int64()), SEQUENCE: pa.array([1, 5, 6, 2], pa.int64()),
                    VALUE_KIND: pa.array([I, D, I, I], pa.int8())})
    other = pa.table({"id": pa.array([2], pa.int64()), SEQUENCE: pa.array([3], pa.int64()),
                      VALUE_KIND: pa.array([I], pa.int8())})
    steps = list(key_chunks([[run.slice(0, 2), run.slice(2, 0), run.slice(2, 1), run.slice(3)], [other]],
                            ["id"]))
    where_2 = {i for i, s in enumerate(steps) for p in s if p is not None
               and 2 in p.column("id").to_pylist()}
    assert len(where_2) == 1
    got = sorted(r["id"] for s in steps for p in s if p is not None for r in p.to_pylist())
    assert got == [1, 2, 2, 2, 3]


def test_memory_is_a_table_per_run() -> None:
    """A step holds at most one table of each run (plus the rows of a key that continues):
    with 4 runs of 64-row tables no step exceeds 4 x 64 rows."""
    rng = np.random.default_rng(3)
    runs = []
    for _ in range(4):
        ids = np.sort(rng.choice(100_000, 5_000, replace=False)).astype(np.int64)
        t = pa.table({"id": ids, SEQUENCE: np.arange(len(ids), dtype=np.int64),
                      VALUE_KIND: np.zeros(len(ids), np.int8)})
        runs.append([t.slice(i, 64) for i in range(0, t.num_rows, 64)])
    sizes = [sum(p.num_rows for p in s if p is not None) for s in key_chunks(runs, ["id"])]
    assert sum(sizes) == 20_000 and max(sizes) <= 4 * 64


def _file(name: str, lo: int, hi: int) -> DataFileMeta:
    return DataFileMeta(fileName=name, fileSize=1, rowCount=1, minKey=(lo,), maxKey=(hi,),
                        valueStats=SimpleStats((), (), ()), minSequenceNumber=0, maxSequenceNumber=0,
                        schemaId=0, level=0, creationTime=0)


@pytest.mark.parametrize("runs,chains", [
    ([], []),
    ([["a"]], [["a"]]),
    ([["a"], ["b"], ["c"]], [["a", "b"], ["c"]]),  # a [0,9] b [20,29] disjoint; c [5,25] meets both
    ([["c"], ["a"], ["b"]], [["c"], ["a", "b"]]),
    ([["d", "e"], ["b"]], [["b", "d", "e"]]),  # a level's files and a file below them
    ([["a"], ["t"]], [["a"], ["t"]]),  # touching ends share a key: not joined
    ([["b"], ["a"]], [["a", "b"]]),  # a chain's files in key order
])
def test_disjoint_runs_are_read_as_one_chain(runs: list[list[str]], chains: list[list[str]]) -> None:
    files = {"a": _file("a", 0, 9), "b": _file("b", 20, 29), "c": _file("c", 5, 25), "d": _file("d", 40, 49),
             "e": _file("e", 50, 59), "t": _file("t", 9, 15)}
    got = disjoint_chains([[files[n] for n in run] for run in runs])
    assert [[f.fileName for f in c] for c in got] == chains
