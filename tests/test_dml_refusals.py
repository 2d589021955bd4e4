"""Row-level changes a table cannot take are refused with a typed error, and the table and
its files stay exactly as they were (issue 32 items 11, 19, 20, 21, 23)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.dml_preview import preview_delete
from minipaimon_core.errors import InvalidArgumentError, MiniPaimonError

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def listing(path: str) -> dict[str, bytes]:
    """Every file under the table, with its bytes."""
    return {os.path.relpath(os.path.join(d, n), path): Path(d, n).read_bytes()
            for d, _, names in os.walk(path) for n in names}


def refused(t: mp.Table, error: type[MiniPaimonError], call: Callable[[], Any], match: str = "") -> str:
    """``call`` raises ``error`` (matching ``match``) and leaves every file of ``t`` as it was."""
    before = listing(t.path)
    with pytest.raises(error, match=match) as e:
        call()
    assert listing(t.path) == before
    return str(e.value)


# -- item 21: an empty filter is not "every row" ----------------------------------------------

@pytest.mark.parametrize("pk", [None, ["id"]], ids=["append", "primary-key"])
@pytest.mark.parametrize("flt", [[], [[]], (), [[("id", "=", 1)], []]], ids=["[]", "[[]]", "()", "or-empty"])
def test_an_empty_filter_is_refused_everywhere_a_filter_is_taken(tmp_path, pk, flt) -> None:
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=pk, options={"bucket": "1"} if pk else None)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=KV))
    for call in (lambda: t.delete(flt), lambda: t.update(flt, set={"v": "x"}),
                 lambda: t.scan(filter=flt).to_arrow(), lambda: preview_delete(t.context(), flt)):
        message = refused(t, InvalidArgumentError, call, match="empty")
        assert "None" in message  # says how to select every row
    assert t.to_arrow().num_rows == 2
    assert t.delete(None) == 2  # None still means every row
