"""Text output of the ``minipaimon`` command: aligned tables, times and sizes."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..maintenance.health import size_text


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as aligned text: a header, a rule, numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
               for i in range(len(columns))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(columns), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def format_arrow(table: pa.Table, max_width: int = 60) -> str:
    rows = [[_shorten(v, max_width) for v in row.values()] for row in table.to_pylist()]
    return format_table(table.column_names, rows)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ", timespec="milliseconds")
    return str(v)


def _shorten(v: Any, width: int) -> Any:
    if isinstance(v, str) and len(v) > width:
        return v[: width - 3] + "..."
    return v


def time_text(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="seconds")



__all__ = ["format_arrow", "format_table", "size_text", "time_text"]
