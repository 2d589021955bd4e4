"""The aggregation merge engine, each function as a table of cases: the rows of one key in
merge order (kind, value) and what Paimon's Java engine 0.9 makes of them (its
``AggregateMergeFunction`` behind ``ReducerMergeFunctionWrapper``: a key with one row is
not merged). The interop tests (tests/interop/test_merge_engines_java.py) check the same
rules against the Java engine itself; these run without a JVM."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.lsm.merge_engines import (
    SEQUENCE,
    VALUE_KIND,
    MergeConfig,
    merge,
    prepare_input,
)

KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
ABSENT = "absent"  # the key has no row (a read drops a lone retraction)


def one_key(typ: pa.DataType, rows: list[tuple[str, Any]]) -> pa.Table:
    """Rows of key 1 in merge order (sequence numbers ascending)."""
    return pa.table({
        "id": pa.array([1] * len(rows), pa.int64()),
        "v": pa.array([v for _, v in rows], typ),
        SEQUENCE: pa.array(np.arange(len(rows)), pa.int64()),
        VALUE_KIND: pa.array([KINDS[k] for k, _ in rows], pa.int8()),
    })


def merged_value(fn: str, typ: pa.DataType, rows: list[tuple[str, Any]],
                 **options: str) -> Any:
    config = MergeConfig.from_options(["id"], {
        "merge-engine": "aggregation", "fields.v.aggregate-function": fn,
        **{f"fields.v.{k.replace('_', '-')}": v for k, v in options.items()}})
    out = merge(prepare_input(one_key(typ, rows), config), config, keep_deletes=False)
    if out.num_rows == 0:
        return ABSENT
    assert out.num_rows == 1 and out.column(VALUE_KIND).to_pylist() in ([0], [2])
    return out.column("v")[0].as_py()


D = Decimal
NAN = float("nan")
CASES: list[tuple[str, pa.DataType, list[tuple[str, Any]], Any, dict[str, str]]] = [
    # sum: retractions subtract; from the null state a retraction is the negation
    ("sum", pa.int64(), [("+I", 1), ("+I", 2), ("-U", 1)], 2, {}),
    ("sum", pa.int64(), [("-D", 5)], ABSENT, {}),  # one row: not merged, dropped by a read
    ("sum", pa.int64(), [("-D", 5), ("-D", 3)], -8, {}),  # merged: a visible negative sum
    ("sum", pa.int64(), [("-D", 5), ("+I", 3)], -2, {}),
    ("sum", pa.int64(), [("+I", None), ("+I", None)], None, {}),
    ("sum", pa.int64(), [("+I", None), ("-D", 4)], -4, {}),
    ("sum", pa.int64(), [("+I", 4), ("-D", None)], 4, {}),
    ("sum", pa.int8(), [("+I", 100), ("+I", 27)], 127, {}),
    ("sum", pa.int64(), [("+I", -(2**63)), ("+I", 2**63 - 1), ("+I", 1)], 0, {}),
    ("sum", pa.decimal128(10, 2), [("+I", D("1.25")), ("+I", D("2.50")), ("-U", D("0.75"))],
     D("3.00"), {}),
    ("sum", pa.decimal128(5, 2), [("+I", D("999.99")), ("+I", D("1.00"))], None, {}),
    ("sum", pa.float32(), [("+I", 0.1), ("+I", 0.2)], float(np.float32(0.1) + np.float32(0.2)),
     {}),
    ("sum", pa.int64(), [("+I", 5), ("-U", 5)], 5, {"ignore_retract": "true"}),
    # product: a retraction divides (integers truncate toward zero); from the null state a
    # retraction is the value itself (issue 32 item 13: Java 4.0, not 0.25)
    ("product", pa.int32(), [("+I", 2), ("+I", 3)], 6, {}),
    ("product", pa.int32(), [("+I", 7), ("-U", 2)], 3, {}),
    ("product", pa.int32(), [("+I", -7), ("-U", 2)], -3, {}),
    ("product", pa.float64(), [("-D", 4.0)], ABSENT, {}),
    ("product", pa.float64(), [("-D", 4.0), ("+I", 2.0)], 8.0, {}),
    ("product", pa.float64(), [("-D", 4.0), ("-D", 2.0)], 2.0, {}),
    ("product", pa.int64(), [("+I", None), ("-D", 3)], 3, {}),
    ("product", pa.int64(), [("+I", 3), ("-U", 2), ("+U", 4), ("-U", 4)], 1, {}),
    ("product", pa.decimal128(10, 2), [("+I", D("1.25")), ("+I", D("1.25")), ("+I", D("2.00"))],
     D("3.12"), {}),  # each step rounds half-up to the scale: 1.5625 -> 1.56
    ("product", pa.decimal128(5, 2), [("+I", D("999.99")), ("+I", D("10.00")), ("+I", D("2.00"))],
     D("2.00"), {}),  # an overflow is null; the next value starts anew
    ("product", pa.decimal128(10, 2), [("+I", D("7.00")), ("-U", D("2.00"))], D("3.50"), {}),
    # last_value / last_non_null_value: a retraction makes the value null (issue 32 item 13)
    ("last_value", pa.string(), [("+I", "a"), ("+I", None)], None, {}),
    ("last_value", pa.string(), [("+I", "a"), ("-D", "a")], None, {}),
    ("last_value", pa.string(), [("+I", "a"), ("-D", "b"), ("+I", "c")], "c", {}),
    ("last_value", pa.string(), [("+I", "a"), ("-D", "a")], "a", {"ignore_retract": "true"}),
    ("last_non_null_value", pa.string(), [("+I", "a"), ("+I", None)], "a", {}),
    ("last_non_null_value", pa.string(), [("+I", "a"), ("-U", "a")], None, {}),
    ("last_non_null_value", pa.string(), [("+I", "a"), ("-U", None)], "a", {}),
    ("last_non_null_value", pa.string(), [("-U", "x"), ("+I", None)], None, {}),
    ("last_non_null_value", pa.string(), [("-U", "x")], ABSENT, {}),
    # first_value / first_non_null_value: retractions only when ignored
    ("first_value", pa.int64(), [("+I", None), ("+I", 1)], None, {}),
    ("first_value", pa.int64(), [("+I", 2), ("+I", 1)], 2, {}),
    ("first_value", pa.int64(), [("-D", 9), ("+I", 1)], 1, {"ignore_retract": "true"}),
    ("first_value", pa.int64(), [("-D", 9)], ABSENT, {}),  # one row: never merged, no error
    ("first_non_null_value", pa.int64(), [("+I", None), ("+I", 1), ("+I", 2)], 1, {}),
    ("first_not_null_value", pa.int64(), [("+I", None), ("+I", 1)], 1, {}),  # legacy name
    # min / max: NaN is the largest float, as Java's Double.compare
    ("max", pa.float64(), [("+I", 1.0), ("+I", NAN)], NAN, {}),
    ("min", pa.float64(), [("+I", 1.0), ("+I", NAN)], 1.0, {}),
    ("min", pa.string(), [("+I", "b"), ("+I", None), ("+I", "a")], "a", {}),
    ("max", pa.date32(), [("+I", date(2024, 1, 2)), ("+I", date(2023, 1, 1))], date(2024, 1, 2), {}),
    ("max", pa.int32(), [("+I", 3), ("-U", 5)], 3, {"ignore_retract": "true"}),
    ("bool_and", pa.bool_(), [("+I", True), ("+I", None), ("+I", False)], False, {}),
    ("bool_or", pa.bool_(), [("+I", None), ("+I", None)], None, {}),
    ("listagg", pa.string(), [("+I", "a"), ("+I", None), ("+I", "b")], "a|b",
     {"list_agg_delimiter": "|"}),
    ("listagg", pa.string(), [("+I", "a"), ("-U", "a"), ("+I", "b")], "a,b",
     {"ignore_retract": "true"}),
]


@pytest.mark.parametrize(("fn", "typ", "rows", "want", "options"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_function_folds_as_paimon(fn: str, typ: pa.DataType, rows: list[tuple[str, Any]],
                                       want: Any, options: dict[str, str]) -> None:
    got = merged_value(fn, typ, rows, **options)
    if isinstance(want, float) and want != want:
        assert got != got, got  # NaN
    else:
        assert got == want


@pytest.mark.parametrize("fn", ["min", "max", "first_value", "first_non_null_value", "listagg",
                                "bool_and", "bool_or"])
def test_a_merged_retraction_of_a_function_without_one_raises(fn: str) -> None:
    typ = pa.bool_() if fn.startswith("bool") else pa.string()
    value = True if fn.startswith("bool") else "a"
    with pytest.raises(InvalidArgumentError, match=f"'v'.*'{fn}'.*ignore-retract"):
        merged_value(fn, typ, [("+I", value), ("-U", value)])
    assert merged_value(fn, typ, [("-U", value)]) == ABSENT  # alone it is never merged


def test_a_lone_row_passes_through_with_its_kind() -> None:
    """A compaction that keeps deletes keeps a key's one row as it is (-U stays -U, and
    sum's prepared value is not folded); reads and bottom-level compactions drop it."""
    config = MergeConfig.from_options(["id"], {"merge-engine": "aggregation",
                                               "fields.v.aggregate-function": "sum"})
    t = pa.table({"id": pa.array([1, 2, 2, 3], pa.int64()), "v": pa.array([5, 1, 2, 7], pa.int64()),
                  SEQUENCE: pa.array([0, 1, 2, 3], pa.int64()),
                  VALUE_KIND: pa.array([1, 3, 0, 2], pa.int8())})
    kept = merge(t, config, keep_deletes=True)
    assert kept.select(["id", "v", VALUE_KIND]).to_pylist() == [
        {"id": 1, "v": 5, VALUE_KIND: 1}, {"id": 2, "v": 1, VALUE_KIND: 0},
        {"id": 3, "v": 7, VALUE_KIND: 2}]
    assert merge(t, config, keep_deletes=False).column("id").to_pylist() == [2, 3]
    assert merge(kept, config, keep_deletes=False).equals(merge(t, config, keep_deletes=False))


def test_many_keys_fold_in_lockstep_where_product_retracts() -> None:
    """Keys of different lengths, some with retractions (folded row by row in lockstep),
    some without (one reduceat), give each its own Paimon fold."""
    rng = np.random.default_rng(7)
    ids, values, kinds, want = [], [], [], {}
    for key in range(200):
        n = int(rng.integers(1, 9))
        acc = None
        for _ in range(n):
            v = int(rng.choice([1, 2, 3, -2, 5]))
            retract = n > 1 and rng.random() < 0.3
            acc = v if acc is None else (int(acc / v) if retract else acc * v)
            ids.append(key)
            values.append(v)
            kinds.append(1 if retract else 0)
        want[key] = acc if n > 1 or not kinds[-1] else None
    t = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(values, pa.int64()),
                  SEQUENCE: pa.array(np.arange(len(ids)), pa.int64()),
                  VALUE_KIND: pa.array(kinds, pa.int8())})
    config = MergeConfig.from_options(["id"], {"merge-engine": "aggregation",
                                               "fields.v.aggregate-function": "product"})
    got = {r["id"]: r["v"] for r in merge(t, config, keep_deletes=False).to_pylist()}
    assert got == {k: v for k, v in want.items() if v is not None}


MIN = {pa.int8(): -(2**7), pa.int16(): -(2**15), pa.int32(): -(2**31), pa.int64(): -(2**63)}
MAX = {t: -m - 1 for t, m in MIN.items()}
#: Paimon's FieldAggregatorTest (apache/paimon#7992): testFieldSum{Byte,Short,Int,Long}Overflow,
#: testFieldSum*RetractOverflow, testFieldProduct*Overflow, testFieldProduct*RetractOverflow.
#: agg(acc, x) is a key's rows (+I acc, +I x); retract(acc, x) is (+I acc, -U x).
OVERFLOWS = [
    *[("sum", t, [("+I", MAX[t]), ("+I", 1)]) for t in MIN],
    *[("sum", t, [("+I", MIN[t]), ("+I", -1)]) for t in MIN],
    *[("sum", t, [("+I", MIN[t]), ("-U", 1)]) for t in MIN],
    *[("sum", t, [("+I", MAX[t]), ("-U", -1)]) for t in MIN],
    *[("sum", t, [("+I", None), ("-U", MIN[t])]) for t in MIN],  # retract(null, MIN) negates
    ("product", pa.int8(), [("+I", 64), ("+I", 2)]),
    ("product", pa.int8(), [("+I", -64), ("+I", 4)]),
    ("product", pa.int16(), [("+I", 1000), ("+I", 100)]),
    ("product", pa.int16(), [("+I", MIN[pa.int16()]), ("+I", 2)]),
    ("product", pa.int32(), [("+I", 100_000), ("+I", 100_000)]),
    ("product", pa.int32(), [("+I", MIN[pa.int32()]), ("+I", -1)]),
    ("product", pa.int64(), [("+I", MAX[pa.int64()]), ("+I", 2)]),
    ("product", pa.int64(), [("+I", MIN[pa.int64()]), ("+I", -1)]),
    *[("product", t, [("+I", MIN[t]), ("-U", -1)]) for t in MIN],
    # every step counts, as Java's fold: MAX + 1 fails although MAX + 1 - 1 would fit
    ("sum", pa.int32(), [("+I", MAX[pa.int32()]), ("+I", 1), ("-U", 1)]),
    ("count", pa.int8(), [("+I", 1)] * 128),
    ("product", pa.int64(), [("+I", 2**62), ("+I", 2), ("+I", -1)]),  # -2**63 fits, 2**63 not
]


@pytest.mark.parametrize(("fn", "typ", "rows"), OVERFLOWS,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(OVERFLOWS)])
def test_an_integer_overflow_raises_as_current_paimon(fn: str, typ: pa.DataType,
                                                      rows: list[tuple[str, Any]]) -> None:
    """Paimon 0.9 wrapped (an INT sum of 2147483647 + 1 stored -2147483648); current Paimon
    fails, and so does minipaimon: no wrapped value is ever returned."""
    with pytest.raises(InvalidArgumentError, match=f"'v' with '{fn}'.*overflows.*alter_column_type"):
        merged_value(fn, typ, rows)


@pytest.mark.parametrize(("fn", "typ", "rows", "want"), [
    ("product", pa.int64(), [("+I", -(2**62)), ("+I", 2)], -(2**63)),  # the exact path, fits
    ("product", pa.int64(), [("+I", 2**40), ("+I", 0), ("+I", 2**40)], 0),  # 0 stops growth
    ("product", pa.int64(), [("+I", 3**39), ("-U", -3)], -(3**38)),
    ("product", pa.int64(), [("+I", 5), ("-U", MIN[pa.int64()])], 0),  # Java: 5 / MIN
    ("product", pa.int64(), [("+I", MIN[pa.int64()]), ("-U", MIN[pa.int64()])], 1),
    ("product", pa.int32(), [("+I", -7), ("-U", MIN[pa.int32()])], 0),
    ("sum", pa.int64(), [("-D", MIN[pa.int64()] + 1), ("+I", -1)], MAX[pa.int64()] - 1),
])
def test_integer_folds_near_the_ends_of_the_type(fn: str, typ: pa.DataType,
                                                 rows: list[tuple[str, Any]], want: int) -> None:
    assert merged_value(fn, typ, rows) == want


@pytest.mark.parametrize("typ", [pa.int32(), pa.int64()])
def test_random_integer_sums_fit_or_raise_as_exact_arithmetic(typ: pa.DataType) -> None:
    """Many keys of values near the type's ends, with retractions: each key's sum is Python's
    exact one, or the merge raises exactly when some key's running sum leaves the type."""
    rng = np.random.default_rng(11)
    lo, hi = MIN[typ], MAX[typ]
    outcomes = set()
    for _ in range(60):
        ids, values, kinds, over = [], [], [], False
        want: dict[int, int] = {}
        for key in range(3):
            n = int(rng.integers(2, 6))
            acc = None
            for _ in range(n):
                v = int(rng.choice([lo, hi, lo // 3, hi // 3, -1, 1, 0, 12345]))
                kind = int(rng.choice([0, 0, 1]))
                step = -v if kind else v
                acc = step if acc is None else acc + step
                over |= not lo <= acc <= hi
                ids.append(key)
                values.append(v)
                kinds.append(kind)
            want[key] = acc
        t = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(values, typ),
                      SEQUENCE: pa.array(np.arange(len(ids)), pa.int64()),
                      VALUE_KIND: pa.array(kinds, pa.int8())})
        config = MergeConfig.from_options(["id"], {"merge-engine": "aggregation",
                                                   "fields.v.aggregate-function": "sum"})
        outcomes.add(over)
        if over:
            with pytest.raises(InvalidArgumentError, match="overflows"):
                merge(t, config, keep_deletes=False)
        else:
            got = merge(t, config, keep_deletes=False)
            assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == want
    assert outcomes == {True, False}


def test_an_integer_retraction_by_zero_raises() -> None:
    with pytest.raises(InvalidArgumentError, match="divides"):
        merged_value("product", pa.int32(), [("+I", 3), ("-U", 0)])


def test_writing_retractions_a_function_cannot_take_is_refused(tmp_path: Any) -> None:
    import minipaimon_core as mp

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"], options={
        "merge-engine": "aggregation", "fields.v.aggregate-function": "max"})
    t.write(pa.table({"id": [1], "v": [3]}, schema=schema))
    with pytest.raises(InvalidArgumentError, match="fields.v.ignore-retract"):
        t.write(pa.table({"id": [1], "v": [3], "_row_kind": ["-U"]}))
    assert len(t.snapshots()) == 1 and t.to_arrow().to_pylist() == [{"id": 1, "v": 3}]


def test_a_sum_overflow_fails_at_write_compaction_and_read(tmp_path: Any) -> None:
    """The issue's INT sum of 2147483647 + 1 (Paimon 0.9 stored -2147483648): refused when
    one write holds both rows (nothing on disk changes), and where they meet in a
    compaction or a read; widening the column reads the exact sum."""
    import minipaimon_core as mp

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})

    def rows(ids: list[int], values: list[int]) -> pa.Table:
        return pa.table({"id": ids, "v": values}, schema=schema)

    t.write(rows([1], [2**31 - 1]))
    files = sorted(p for p in (tmp_path / "t").rglob("*"))
    with pytest.raises(InvalidArgumentError, match="'v' with 'sum'.*INT sum overflows at 2147483647 \\+ 1"):
        t.write(rows([2, 2], [2**31 - 1, 1]))
    assert sorted(p for p in (tmp_path / "t").rglob("*")) == files and len(t.snapshots()) == 1
    t.write(rows([1], [1]))  # alone it fits: a write does not read the rows it meets later
    with pytest.raises(InvalidArgumentError, match="INT sum overflows at 2147483647 \\+ 1"):
        t.to_arrow()
    with pytest.raises(InvalidArgumentError, match="INT sum overflows"):
        t.compact(full=True)
    assert len(t.snapshots()) == 2 and t.count() == 1
    t.alter_column_type("v", pa.int64())
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": 2**31}]
    t.compact(full=True)
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": 2**31}]
