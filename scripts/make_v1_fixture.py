"""Build tests/fixtures/v1_decimal_table: a table whose manifests are format version 1.

It was generated with the code of commit 761d27a (before manifests could hold integers
beyond 64 bits), so tests/test_decimals.py can check that tables written by older versions
keep working. To rebuild it the same way:

    git worktree add /tmp/v1 761d27a
    PYTHONPATH=/tmp/v1 python scripts/make_v1_fixture.py tests/fixtures/v1_decimal_table
"""

from __future__ import annotations

import decimal
import sys

import pyarrow as pa

import minipaimon_core as mp

SCHEMA = pa.schema([
    pa.field("k", pa.int64(), nullable=False),
    ("d", pa.decimal128(38, 4)),
    ("s", pa.string()),
])


def main(path: str) -> None:
    t = mp.create_table(path, SCHEMA, primary_key=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": [1, 2], "d": [decimal.Decimal("1.5000"), decimal.Decimal("-2.2500")],
                      "s": ["a", "b"]}, schema=SCHEMA))
    t.write(pa.table({"k": [3], "d": [decimal.Decimal("99999999999.9999")], "s": ["c"]}, schema=SCHEMA))


if __name__ == "__main__":
    main(sys.argv[1])
