"""Partition escaping keeps every value inside the table and round-trips."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from minipaimon_core.layout import NULL_PARTITION, TableLayout, escape_segment, unescape_segment


@given(st.text())
def test_escaping_round_trips_and_is_one_safe_segment(value):
    seg = escape_segment(value)
    assert unescape_segment(seg) == value
    assert "/" not in seg and "\\" not in seg and "\x00" not in seg
    assert seg not in (".", "..")
    assert seg == "" or seg.isascii() and seg.isprintable()


def test_hostile_values_stay_under_the_table():
    layout = TableLayout("/warehouse/t")
    for value in ["..", ".", "../../etc", "/etc/passwd", "a\\b", "\x00", "%2F", "é", "\n", NULL_PARTITION]:
        path = layout.bucket_dir(TableLayout.partition_path(["p"], [value]), 0)
        norm = os.path.normpath(path)
        assert norm.startswith("/warehouse/t/"), (value, path)
        assert norm.count("/") == path.count("/"), (value, path)


def test_null_and_literal_default_partition_differ():
    assert TableLayout.partition_path(["p"], [None]) != TableLayout.partition_path(["p"], [NULL_PARTITION])
