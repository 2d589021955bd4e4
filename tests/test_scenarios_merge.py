"""Apache Paimon's own merge-engine scenarios (paimon-core's FieldAggregatorTest,
PartialUpdateMergeFunctionTest, AggregateMergeFunctionTest, PrimaryKeySimpleTableTest),
expressed with minipaimon's API, for what minipaimon refused before issue 39. Each test
names the Paimon test it follows; the expected values are Paimon's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.lsm.merge_engines import INSERT, SEQUENCE, VALUE_KIND, MergeConfig, merge


def fold(values: Sequence[Any], typ: pa.DataType, options: dict[str, str],
         kinds: Sequence[int] | None = None) -> Any:
    """The value of column ``f`` after merging the rows of one key holding ``values`` in
    order (FieldAggregatorTest's ``reduce``), under table ``options``."""
    n = len(values)
    table = pa.table({"k": pa.array([1] * n, pa.int32()), "f": pa.array(list(values), typ),
                      SEQUENCE: pa.array(range(n), pa.int64()),
                      VALUE_KIND: pa.array(kinds or [INSERT] * n, pa.int8())})
    out = merge(table, MergeConfig.from_options(("k",), options), keep_deletes=False)
    return out.column("f").to_pylist()[0]


def listagg(**extra: str) -> dict[str, str]:
    return {"merge-engine": "aggregation", "fields.f.aggregate-function": "listagg",
            **{f"fields.f.{k.replace('_', '-')}": v for k, v in extra.items()}}


@pytest.mark.parametrize("values,options,expected", [
    # testFieldListAggWithDefaultDelimiterAndDistinct
    (["user1", "user2", "user1", "user3"], listagg(distinct="true"), "user1,user2,user3"),
    # testFieldListAggWithCustomDelimiterAndEmptyStrings
    (["", ""], listagg(distinct="true", list_agg_delimiter=";"), ""),
    # testFieldListAggWithDefaultDelimiterAndDistinctWithMultiUser
    (["user1", "user2", "user1,user3"], listagg(distinct="true"), "user1,user2,user3"),
    # testFieldListAggWithDefaultDelimiterAndDistinctWithEmptyLeftUser
    (["", "user2", "user1,user3"], listagg(distinct="true"), "user2,user1,user3"),
    # testFieldListAggWithCustomDelimiterAndDistinctWithMultiKvString
    (["k1=v1;k2=v2", "k1=v1;k3=v3", ""], listagg(distinct="true", list_agg_delimiter=";"), "k1=v1;k2=v2;k3=v3"),
    # testFieldListAggWithCustomDelimiterDistinctMultiKvStringWithWhiteSpace
    (["k1=v1 k2=v2", " k1=v1  k3=v3", " "], listagg(distinct="true", list_agg_delimiter=" "), "k1=v1 k2=v2 k3=v3"),
    # testFieldListAggWithDefaultDelimiterAndDistinctWithMultiDuplicatedKvString
    (["k1=v1,k2=v2", "k1=v1,k2=v3", ""], listagg(distinct="true"), "k1=v1,k2=v2,k2=v3"),
])
def test_field_listagg_distinct(values: list[str], options: dict[str, str], expected: str) -> None:
    # paimon-core FieldAggregatorTest, the listagg tests named above. The test reduces the
    # values from the first one, so "" with "" is ""; a merge (Paimon's AggregateMergeFunction
    # as minipaimon's) folds from a null state, which a blank value leaves null
    got = fold(values, pa.string(), options)
    assert got == expected or (expected == "" and got is None)


def test_listagg_distinct_merges_alike_in_pieces(tmp_path: Path) -> None:
    # the table-level fold: rows of one key in several commits, compacted between, read as
    # Paimon's fold of them all at once
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("f", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["k"],
                        options={"bucket": "1", **listagg(distinct="true")})
    batches = [["a,b", None], ["b,c", "x"], [" ", "x,y"], ["a,d,c", "y,,z"]]
    for i, (v1, v2) in enumerate(batches):
        t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "f": [v1, v2]}, schema=schema))
        if i == 1:
            assert t.compact(full=True) is not None
    assert t.to_arrow().sort_by("k").to_pylist() == [{"k": 1, "f": "a,b,c,d"}, {"k": 2, "f": "x,y,z"}]
    assert t.compact(full=True) is not None
    assert mp.open_table(t.path).to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "f": "a,b,c,d"}, {"k": 2, "f": "x,y,z"}]
