"""Merge engines: Paimon's documented examples, then seeded random rows against a dict
model (the model loops per row; it is the oracle, not product code), and the piecewise
property: merging in pieces with kept deletes equals merging everything at once."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError
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
    sort_by_key,
)

I, UB, UA, D = INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE  # noqa: E741 (Paimon's +I)


def rows_table(columns: dict[str, pa.DataType], rows: list[tuple[Any, ...]]) -> pa.Table:
    """Rows are (user values..., kind); sequence numbers are the row positions."""
    names = list(columns)
    data: dict[str, pa.Array] = {
        n: pa.array([r[i] for r in rows], t) for i, (n, t) in enumerate(columns.items())}
    data[SEQUENCE] = pa.array(range(len(rows)), pa.int64())
    data[VALUE_KIND] = pa.array([r[len(names)] for r in rows], pa.int8())
    return pa.table(data)


def user_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [c for c in table.column_names if c != SEQUENCE]
    return [tuple(r[c] for c in cols) for r in table.to_pylist()]


PRODUCT = {"id": pa.int64(), "price": pa.float64(), "sales": pa.int64(), "name": pa.string()}


# ------------------------------------------------------------------ documented examples


def test_deduplicate_keeps_the_latest_and_deletes() -> None:
    t = rows_table(PRODUCT, [(1, 1.0, 1, "a", I), (2, 2.0, 2, "b", I), (1, 1.5, 3, "c", UA),
                             (2, None, None, None, D), (3, 3.0, 3, "x", I)])
    cfg = MergeConfig(("id",))
    # the latest row with its own kind (a +U stays +U: Paimon's DeduplicateMergeFunction
    # returns the stored row, PrimaryKeySimpleTableTest.testAuditLog)
    assert user_rows(merge(t, cfg, keep_deletes=False)) == [
        (1, 1.5, 3, "c", UA), (3, 3.0, 3, "x", I)]
    kept = merge(t, cfg, keep_deletes=True)
    assert user_rows(kept) == [(1, 1.5, 3, "c", UA), (2, None, None, None, D), (3, 3.0, 3, "x", I)]
    retracted = rows_table(PRODUCT, [(1, 1.0, 1, "a", UA), (1, 1.0, 1, "a", UB)])
    assert user_rows(merge(retracted, cfg, keep_deletes=True)) == [(1, 1.0, 1, "a", UB)]
    assert merge(retracted, cfg, keep_deletes=False).num_rows == 0
    first = MergeConfig(("id",), engine="first-row")
    assert user_rows(merge(rows_table(PRODUCT, [(1, 1.0, 1, "a", UA), (1, 2.0, 2, "b", I)]), first,
                           keep_deletes=False)) == [(1, 1.0, 1, "a", UA)]
    assert kept.column(SEQUENCE).to_pylist() == [2, 3, 4]
    ignoring = MergeConfig(("id",), ignore_delete=True)
    assert user_rows(merge(t, ignoring, keep_deletes=False))[1] == (2, 2.0, 2, "b", I)


def test_sequence_field_orders_by_user_column() -> None:
    """A late write with an older update time does not win; null times sort first."""
    cols = {"id": pa.int64(), "v": pa.string(), "update_time": pa.int64()}
    t = rows_table(cols, [(1, "new", 20, I), (1, "old", 10, I), (1, "none", None, I)])
    cfg = MergeConfig.from_options(["id"], {"sequence.field": "update_time"})
    assert user_rows(merge(t, cfg, keep_deletes=False)) == [(1, "new", 20, I)]
    out = merge(t, MergeConfig(("id",), engine="first-row", sequence_field="update_time"),
                keep_deletes=False)
    assert user_rows(out) == [(1, "none", None, I)]
    assert out.column(SEQUENCE).to_pylist() == [2]  # the largest sequence of the key


def test_partial_update_fills_columns_from_different_writes() -> None:
    """Paimon docs: <1, 23.0, 10, NULL>, <1, NULL, NULL, 'This is a book'>, <1, 25.2, NULL,
    NULL> merge into <1, 25.2, 10, 'This is a book'>."""
    t = rows_table(PRODUCT, [(1, 23.0, 10, None, I), (1, None, None, "This is a book", I),
                             (1, 25.2, None, None, I)])
    cfg = MergeConfig.from_options(["id"], {"merge-engine": "partial-update"})
    assert user_rows(merge(t, cfg, keep_deletes=False)) == [(1, 25.2, 10, "This is a book", I)]


def test_partial_update_deletes() -> None:
    t = rows_table(PRODUCT, [(1, 1.0, 1, "a", I), (1, None, None, None, D), (1, None, 5, None, I),
                             (2, 2.0, 2, "b", I), (2, None, None, None, D),
                             (3, 3.0, 3, "c", I), (3, None, None, None, UB)])
    with pytest.raises(InvalidArgumentError, match="partial-update cannot accept delete"):
        merge(t, MergeConfig(("id",), engine="partial-update"), keep_deletes=False)
    ignoring = MergeConfig.from_options(
        ["id"], {"merge-engine": "partial-update", "ignore-delete": "true"})
    assert user_rows(merge(t, ignoring, keep_deletes=False)) == [
        (1, 1.0, 5, "a", I), (2, 2.0, 2, "b", I), (3, 3.0, 3, "c", I)]
    removing = MergeConfig.from_options(
        ["id"], {"merge-engine": "partial-update",
                 "partial-update.remove-record-on-delete": "true"})
    # key 1: the -D forgets price and name; key 2 is deleted; key 3 ignores the -U
    assert user_rows(merge(t, removing, keep_deletes=False)) == [
        (1, None, 5, None, I), (3, 3.0, 3, "c", I)]
    kept = merge(t, removing, keep_deletes=True)
    assert user_rows(kept) == [(1, None, None, None, D), (1, None, 5, None, I),
                               (2, None, None, None, D), (3, 3.0, 3, "c", I)]
    assert kept.column(SEQUENCE).to_pylist() == [1, 2, 4, 5]  # the dropped -U does not count


def test_aggregation_price_max_sales_sum() -> None:
    """Paimon docs: price max and sales sum: <1, 23.0, 15>, <1, 30.2, 20> -> <1, 30.2, 35>."""
    cols = {"id": pa.int64(), "price": pa.float64(), "sales": pa.int64()}
    t = rows_table(cols, [(1, 23.0, 15, I), (1, 30.2, 20, I), (2, 1.0, None, I)])
    cfg = MergeConfig.from_options(["id"], {
        "merge-engine": "aggregation", "fields.price.aggregate-function": "max",
        "fields.sales.aggregate-function": "sum"})
    assert user_rows(merge(t, cfg, keep_deletes=False)) == [(1, 30.2, 35, I), (2, 1.0, None, I)]


def test_aggregation_retractions() -> None:
    """An update arrives as -U of the old row and +U of the new one: sum and count follow."""
    cols = {"id": pa.int64(), "sales": pa.int64(), "n": pa.int64(), "price": pa.float64()}
    t = rows_table(cols, [(1, 10, 7, 1.0, I), (1, 10, 7, 1.0, UB), (1, 15, 7, 2.0, UA),
                          (2, 5, 1, 3.0, UB)])
    opts = {"merge-engine": "aggregation", "fields.sales.aggregate-function": "sum",
            "fields.n.aggregate-function": "count", "fields.price.aggregate-function": "max"}
    cfg = MergeConfig.from_options(["id"], opts)
    with pytest.raises(InvalidArgumentError, match="'price'.*'max'.*ignore-retract"):
        merge(prepare_input(t, cfg), cfg, keep_deletes=False)
    cfg = MergeConfig.from_options(["id"], {**opts, "fields.price.ignore-retract": "true"})
    out = merge(prepare_input(t, cfg), cfg, keep_deletes=False)
    # key 2 holds one row, a retraction: passed through unmerged, as Paimon does, so a read
    # drops it and a compaction that keeps deletes keeps it as it is
    assert user_rows(out) == [(1, 15, 1, 2.0, I)]
    kept = merge(prepare_input(t, cfg), cfg, keep_deletes=True)
    assert user_rows(kept) == [(1, 15, 1, 2.0, I), (2, 5, 1, 3.0, UB)]


def test_aggregation_functions() -> None:
    cols = {"id": pa.int64(), "s": pa.string(), "f": pa.string(), "l": pa.string(),
            "b": pa.bool_(), "o": pa.bool_(), "p": pa.float64(), "fv": pa.int64()}
    t = rows_table(cols, [(1, "x", None, "a", True, False, 2.0, None, I),
                          (1, None, "y", None, None, None, None, 7, I),
                          (1, "z", "w", "b", False, True, 4.0, 8, I)])
    cfg = MergeConfig.from_options(["id"], {
        "merge-engine": "aggregation",
        "fields.s.aggregate-function": "listagg", "fields.s.list-agg-delimiter": "|",
        "fields.f.aggregate-function": "first_non_null_value",
        "fields.l.aggregate-function": "last_value", "fields.b.aggregate-function": "bool_and",
        "fields.o.aggregate-function": "bool_or", "fields.p.aggregate-function": "product",
        "fields.fv.aggregate-function": "first_value"})
    assert user_rows(merge(t, cfg, keep_deletes=False)) == [
        (1, "x|z", "y", "b", False, True, 8.0, None, I)]


def test_first_row_keeps_the_first() -> None:
    t = rows_table(PRODUCT, [(1, 1.0, 1, "first", I), (1, 2.0, 2, "second", I),
                             (2, None, None, None, D), (2, 5.0, 5, "only", I)])
    with pytest.raises(InvalidArgumentError, match="first-row cannot accept"):
        merge(t, MergeConfig(("id",), engine="first-row"), keep_deletes=False)
    cfg = MergeConfig.from_options(["id"], {"merge-engine": "first-row",
                                            "ignore-delete": "true"})
    out = merge(t, cfg, keep_deletes=True)
    assert user_rows(out) == [(1, 1.0, 1, "first", I), (2, 5.0, 5, "only", I)]
    assert out.column(SEQUENCE).to_pylist() == [1, 3]


def test_string_and_composite_keys_sort_ascending() -> None:
    cols = {"p": pa.string(), "id": pa.int32(), "v": pa.int64()}
    t = rows_table(cols, [("b", 2, 1, I), ("a", 9, 2, I), ("b", 1, 3, I), ("a", 9, 4, I),
                          ("", 0, 5, I)])
    out = merge(t, MergeConfig(("p", "id")), keep_deletes=False)
    assert user_rows(out) == [("", 0, 5, I), ("a", 9, 4, I), ("b", 1, 3, I), ("b", 2, 1, I)]
    assert out.schema == t.schema


def is_single_run_sorted_unique(table: pa.Table, key_columns: Sequence[str]) -> bool:
    """True if the keys are strictly ascending: ``table`` is one sorted run with one row per
    key, so a merge has nothing to combine (only deletes to drop)."""
    n = table.num_rows
    if n < 2:
        return True
    ascending = np.zeros(n - 1, bool)  # decided: this pair is in strictly ascending order
    undecided = np.ones(n - 1, bool)  # all key columns so far are equal
    for name in key_columns:
        col = table.column(name)
        a, b = col.slice(0, n - 1), col.slice(1)
        lt = pc.fill_null(pc.less(a, b), False).to_numpy(zero_copy_only=False)
        eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        ascending |= undecided & lt
        undecided &= eq
    return bool(ascending.all())


def test_helpers_and_empty_input() -> None:
    cols = {"id": pa.int64(), "v": pa.int64()}
    t = rows_table(cols, [(3, 1, I), (1, 2, I), (1, 3, I)])
    assert sort_by_key(t, ["id"]).column("v").to_pylist() == [2, 3, 1]
    assert not is_single_run_sorted_unique(t, ["id"])
    assert not is_single_run_sorted_unique(sort_by_key(t, ["id"]), ["id"])
    merged = merge(t, MergeConfig(("id",)), keep_deletes=False)
    assert is_single_run_sorted_unique(merged, ["id"])
    two = pa.table({"a": [1, 1, 2], "b": ["x", "y", "a"]})
    assert is_single_run_sorted_unique(two, ["a", "b"])
    assert not is_single_run_sorted_unique(two, ["a"])
    empty = t.slice(0, 0)
    for engine in ("deduplicate", "partial-update", "aggregation", "first-row"):
        assert merge(empty, MergeConfig(("id",), engine=engine), keep_deletes=True).num_rows == 0


def test_bad_input_and_options() -> None:
    t = rows_table({"id": pa.int64(), "v": pa.int64()}, [(1, 1, I)])
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        merge(t, MergeConfig(("nope",)), keep_deletes=False)
    with pytest.raises(InvalidArgumentError, match="'ts'"):
        merge(t, MergeConfig(("id",), sequence_field="ts"), keep_deletes=False)
    bad = t.set_column(t.column_names.index(VALUE_KIND), VALUE_KIND, pa.array([7], pa.int8()))
    with pytest.raises(InvalidArgumentError, match="_VALUE_KIND"):
        merge(bad, MergeConfig(("id",)), keep_deletes=False)
    with pytest.raises(UnsupportedOptionError, match="merge-engine"):
        MergeConfig.from_options(["id"], {"merge-engine": "lsm-magic"})
    with pytest.raises(UnsupportedOptionError, match="fields.v.aggregate-function"):
        MergeConfig.from_options(["id"], {"fields.v.aggregate-function": "median"})
    with pytest.raises(UnsupportedOptionError, match="ignore-delete"):
        MergeConfig.from_options(["id"], {"ignore-delete": "yes"})
    with pytest.raises(UnsupportedOptionError, match="sequence-group"):
        MergeConfig.from_options(["id"], {"merge-engine": "partial-update",
                                          "fields.g.sequence-group": "v",
                                          "partial-update.remove-record-on-delete": "true"})
    with pytest.raises(UnsupportedOptionError, match="sequence.field"):
        MergeConfig.from_options(["id"], {"sequence.field": "a,b"})
    with pytest.raises(InvalidArgumentError):
        MergeConfig(())
    cfg = MergeConfig(("id",), engine="aggregation", aggregate_functions={"v": "bool_and"})
    two = rows_table({"id": pa.int64(), "v": pa.int64()}, [(1, 1, I), (1, 2, I)])
    with pytest.raises(UnsupportedOptionError, match="bool_and"):
        merge(two, cfg, keep_deletes=False)
    assert user_rows(merge(t, cfg, keep_deletes=False)) == [(1, 1, I)]  # one row: not merged
    legacy = MergeConfig.from_options(["id"], {"partial-update.ignore-delete": "TRUE"})
    assert legacy.ignore_delete


# ------------------------------------------------------------------ the dict model


RETRACTABLE = {"sum", "count", "product", "last_value", "last_non_null_value"}


def agg_step(fn: str, state: dict[str, Any], v: Any, retract: bool, delim: str) -> None:
    """One row of Paimon's fold of ``fn`` (state ``acc``, ``init``), as its FieldAggregator
    classes define ``agg`` and ``retract``."""
    acc = state.get("acc")
    if fn in ("sum", "count"):
        inc = (1 if v is not None else None) if fn == "count" else v
        if inc is not None:
            state["acc"] = (0 if acc is None else acc) + (-inc if retract else inc)
    elif fn == "product":
        if v is not None:  # from a null state the value itself, retracted or not
            state["acc"] = v if acc is None else (acc / v if retract else acc * v)
    elif fn == "last_value":
        state["acc"] = None if retract else v
    elif fn == "last_non_null_value":
        if v is not None:
            state["acc"] = None if retract else v
    elif fn == "first_value":
        if not state.get("init"):
            state.update(acc=v, init=True)
    elif fn == "first_non_null_value":
        if not state.get("init") and v is not None:
            state.update(acc=v, init=True)
    elif v is None:
        pass
    elif acc is None:
        state["acc"] = v
    elif fn == "min":
        state["acc"] = min(acc, v)
    elif fn == "max":
        state["acc"] = max(acc, v)
    elif fn == "bool_and":
        state["acc"] = acc and v
    elif fn == "bool_or":
        state["acc"] = acc or v
    elif fn == "listagg":
        state["acc"] = acc + delim + v


def model_merge(rows: list[dict[str, Any]], cfg: MergeConfig, keep_deletes: bool,
                value_cols: list[str]) -> list[dict[str, Any]]:
    """Paimon's per-row merge functions, one key at a time, in (sequence field, seq) order;
    partial-update and aggregation pass a key with one row through as it is."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in cfg.key_columns)].append(r)
    sf = cfg.sequence_field
    out: list[dict[str, Any]] = []
    for key in sorted(groups):
        rs = sorted(groups[key], key=lambda r: (
            (0, 0) if sf is None or r[sf] is None else (1, r[sf]), r[SEQUENCE]))
        if cfg.ignore_delete:
            rs = [r for r in rs if r[VALUE_KIND] in (I, UA)]
        if cfg.engine == "partial-update" and cfg.partial_update_remove_on_delete:
            rs = [r for r in rs if r[VALUE_KIND] != UB]
        if not rs:
            continue
        base = {k: v for k, v in zip(cfg.key_columns, key, strict=True)}
        max_seq = max(r[SEQUENCE] for r in rs)
        retract = [r[VALUE_KIND] in (UB, D) for r in rs]
        if len(rs) == 1 and cfg.engine in ("partial-update", "aggregation"):
            if not retract[0] or keep_deletes:
                counts = {c: int(rs[0][c] is not None) for c in value_cols
                          if cfg.engine == "aggregation" and cfg.function_of(c) == "count"}
                out.append({**rs[0], **counts})
            continue
        if any(retract) and (cfg.engine == "first-row" or (
                cfg.engine == "partial-update" and not cfg.partial_update_remove_on_delete)):
            raise InvalidArgumentError("model: delete rejected")
        if cfg.engine == "deduplicate":  # the stored row with its own kind, as Paimon's
            final = {**rs[-1], SEQUENCE: max_seq}  # DeduplicateMergeFunction returns it
        elif cfg.engine == "first-row":
            final = {**rs[0], SEQUENCE: max_seq}
        elif cfg.engine == "partial-update":
            acc: dict[str, Any] = {c: None for c in value_cols}
            deleted, delete_row = False, None
            for r, ret in zip(rs, retract, strict=True):
                if ret:
                    acc, deleted, delete_row = {c: None for c in value_cols}, True, r
                    continue
                deleted = False
                acc.update({c: r[c] for c in value_cols if r[c] is not None})
            if delete_row is not None and keep_deletes and not deleted:
                out.append({**delete_row, VALUE_KIND: D})
            final = {**base, **acc, SEQUENCE: max_seq, VALUE_KIND: D if deleted else I}
        else:
            values = {}
            for c in value_cols:
                fn = cfg.function_of(c)
                state: dict[str, Any] = {}
                for r, ret in zip(rs, retract, strict=True):
                    if ret and c in cfg.ignore_retract:
                        continue
                    if ret and fn not in RETRACTABLE:
                        raise InvalidArgumentError("model: cannot retract")
                    agg_step(fn, state, r[c], ret, cfg.listagg_delimiter.get(c, ","))
                values[c] = state.get("acc", 0 if fn == "count" else None)
            final = {**base, **values, SEQUENCE: max_seq, VALUE_KIND: I}
        if final[VALUE_KIND] in (UB, D) and not keep_deletes:
            continue
        if final[VALUE_KIND] == D and cfg.engine == "partial-update":
            final = {**base, **{c: None for c in value_cols}, **{
                k: v for k, v in final.items() if k in (SEQUENCE, VALUE_KIND)}}
        out.append(final)
    return out


# ------------------------------------------------------------------ random tables


COLUMNS = {"p": pa.string(), "id": pa.int64(), "a": pa.int64(), "b": pa.string(),
           "c": pa.float64(), "f": pa.bool_(), "ts": pa.int64()}
VALUE_COLS = ["a", "b", "c", "f", "ts"]
FUNCTIONS = {
    "a": ["sum", "count", "min", "max", "last_value", "last_non_null_value", "first_value",
          "first_non_null_value"],
    "b": ["listagg", "min", "max", "last_value", "last_non_null_value", "first_non_null_value"],
    "c": ["sum", "product", "min", "max", "last_non_null_value", "first_value"],
    "f": ["bool_and", "bool_or", "last_value", "first_non_null_value"],
    "ts": ["max", "last_non_null_value", "sum"],
    "p": ["listagg", "max", "last_value"],  # when not part of the key
}


def random_rows(rng: random.Random, n: int, kinds: list[int], sf_monotone: bool
                ) -> list[dict[str, Any]]:
    seqs = rng.sample(range(10 * n + 10), n)
    rows = []
    for seq in seqs:
        maybe: Callable[[Any], Any] = lambda v: None if rng.random() < 0.3 else v  # noqa: E731
        rows.append({
            "p": rng.choice(["x", "yy", ""]), "id": rng.randrange(6),
            "a": maybe(rng.randrange(-5, 6)), "b": maybe(rng.choice(["q", "r", "st", ""])),
            "c": maybe(rng.choice([0.5, 1.0, 2.0, -2.0, 4.0])), "f": maybe(rng.random() < 0.5),
            "ts": seq // 3 if sf_monotone else maybe(rng.randrange(8)),
            SEQUENCE: seq, VALUE_KIND: rng.choice(kinds),
        })
    return rows


def to_table(rows: list[dict[str, Any]]) -> pa.Table:
    schema = pa.schema([*COLUMNS.items(), (SEQUENCE, pa.int64()), (VALUE_KIND, pa.int8())])
    return pa.Table.from_pylist(rows, schema=schema)


def random_config(rng: random.Random, engine: str, retractions: bool, piecewise: bool
                  ) -> MergeConfig:
    keys = rng.choice([("id",), ("p", "id")])
    functions = {c: rng.choice(FUNCTIONS[c]) for c in COLUMNS if c not in keys}
    ignore = set()
    for c, fn in functions.items():
        if piecewise and retractions and fn == "first_value":
            functions[c] = "first_non_null_value"  # documented piecewise limit
        # piecewise limits, Paimon's too: a merged state cannot tell "reset to null" from
        # "no value" (last_non_null_value), and product retracts a null state to the value
        risky = fn not in RETRACTABLE or (piecewise and fn in ("last_non_null_value", "product"))
        if retractions and risky and (piecewise or rng.random() < 0.8):
            ignore.add(c)
    if engine != "aggregation":
        functions, ignore = {}, set()
    return MergeConfig(
        key_columns=keys, engine=engine,
        sequence_field=rng.choice([None, "ts"]) if engine in (
            "deduplicate", "first-row") or not piecewise else None,
        ignore_delete=rng.random() < 0.3,
        partial_update_remove_on_delete=rng.random() < 0.5,
        aggregate_functions=functions, ignore_retract=frozenset(ignore),
        listagg_delimiter={"b": rng.choice([",", "/"])},
    )


def as_dicts(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


ENGINES = ["deduplicate", "partial-update", "aggregation", "first-row"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(60))
def test_random_rows_match_the_model(engine: str, seed: int) -> None:
    rng = random.Random(seed * 7919 + ENGINES.index(engine))
    kinds = rng.choice([[I], [I, UA], [I, UB, UA, D], [I, I, I, D]])
    rows = random_rows(rng, rng.randrange(0, 60), kinds, sf_monotone=False)
    cfg = random_config(rng, engine, retractions=len(kinds) > 2, piecewise=False)
    table = prepare_input(to_table(rows), cfg)
    value_cols = [c for c in COLUMNS if c not in cfg.key_columns]
    for keep in (False, True):
        try:
            want = model_merge(rows, cfg, keep, value_cols)
        except InvalidArgumentError:
            with pytest.raises(InvalidArgumentError):
                merge(table, cfg, keep_deletes=keep)
            continue
        merged = merge(table, cfg, keep_deletes=keep)
        assert merged.schema == table.schema
        got = as_dicts(merged)
        cols = [*COLUMNS, SEQUENCE, VALUE_KIND]
        if engine in ("partial-update", "aggregation"):
            got = [{c: r[c] for c in cols} for r in got]
            want = [{c: r.get(c) for c in cols} for r in want]
        if engine == "partial-update":  # the non-key values of a -D row do not matter
            got = [r if r[VALUE_KIND] != D else {**r, **dict.fromkeys(value_cols)} for r in got]
            want = [r if r[VALUE_KIND] != D else {**r, **dict.fromkeys(value_cols)} for r in want]
        assert got == want, f"config {cfg}"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(60))
def test_merging_in_pieces_equals_merging_at_once(engine: str, seed: int) -> None:
    """Split by sequence into oldest A, B, newest C; every way compaction can combine them
    (newest runs first, or older ones first) gives the all-at-once answer."""
    rng = random.Random(seed * 104729 + ENGINES.index(engine))
    kinds = rng.choice([[I], [I, UA], [I, UB, UA, D], [I, D]])
    rows = random_rows(rng, rng.randrange(1, 80), kinds, sf_monotone=True)
    has_retract = UB in kinds or D in kinds
    cfg = random_config(rng, engine, retractions=has_retract, piecewise=True)
    if engine in ("partial-update", "first-row") and has_retract and not cfg.ignore_delete and (
            engine == "first-row" or not cfg.partial_update_remove_on_delete):
        cfg = MergeConfig(**{**cfg.__dict__, "ignore_delete": True})
    table = prepare_input(to_table(rows), cfg)
    seq = np.array([r[SEQUENCE] for r in rows])
    c1, c2 = sorted(rng.sample(range(int(seq.max()) + 2), 2))
    pieces = [table.filter(pa.array((seq >= lo) & (seq < hi)))
              for lo, hi in [(0, c1), (c1, c2), (c2, 10**9)]]
    a, b, c = (p.slice(0) for p in pieces)

    def m(t: pa.Table, keep: bool) -> pa.Table:
        return merge(t, cfg, keep_deletes=keep)

    def cat(*ts: pa.Table) -> pa.Table:
        return pa.concat_tables(ts)

    want = as_dicts(m(table, False))
    assert as_dicts(m(cat(m(cat(a, b), True), c), False)) == want
    assert as_dicts(m(cat(a, m(cat(b, c), True)), False)) == want
    assert as_dicts(m(cat(m(a, True), m(cat(b, c), True)), False)) == want
    assert as_dicts(m(cat(m(cat(m(a, True), b), True), m(c, True)), False)) == want
    assert as_dicts(m(m(table, True), False)) == want
