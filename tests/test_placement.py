"""Where a new file of a table whose readers skip level 0 goes, and where a sorted load goes
(commit/placement.py): tables of cases over key ranges. ``max_level`` 5 (``num-levels``
6): levels 1..4 are the writers', 5 the compactions' (and sorted loads')."""

from __future__ import annotations

import pytest

from minipaimon_core.commit.placement import place, place_sorted_load

MAX = 5


def r(lo: int, hi: int) -> tuple[list[int], list[int]]:
    return ([lo], [hi])


CASES = [
    # (new files, existing ranges by level, expected levels)
    ("empty bucket: level 1", [r(1, 5)], {}, [1]),
    ("disjoint from level 1: joins it", [r(6, 9)], {1: [r(1, 5)]}, [1]),
    ("touching a boundary key overlaps", [r(5, 9)], {1: [r(1, 5)]}, [2]),
    ("overlaps levels 1 and 2: level 3", [r(2, 3)], {1: [r(1, 5)], 2: [r(0, 9)]}, [3]),
    ("a gap in level 1 is used", [r(6, 7)], {1: [r(1, 5), r(8, 9)], 2: [r(6, 6)]}, [1]),
    ("the bottom level is not the writers'", [r(1, 2)], {5: [r(100, 200)]}, [1]),
    ("levels 1..4 full: below the bottom", [r(1, 2)],
     {1: [r(0, 9)], 2: [r(0, 9)], 3: [r(0, 9)], 4: [r(0, 9)], 5: [r(0, 9)]}, [6]),
    ("levels 1..4 full, a free level below the bottom is reused", [r(1, 2)],
     {1: [r(0, 9)], 2: [r(0, 9)], 3: [r(0, 9)], 4: [r(0, 9)], 6: [r(5, 9)], 7: [r(0, 9)]}, [6]),
    ("every level taken: a new deepest one", [r(1, 2)],
     {1: [r(0, 9)], 2: [r(0, 9)], 3: [r(0, 9)], 4: [r(0, 9)], 6: [r(0, 9)]}, [7]),
    ("files of one commit see each other", [r(1, 5), r(3, 8), r(6, 9)], {}, [1, 2, 1]),
    ("an empty level below others is free", [r(1, 2)], {1: [r(0, 9)], 2: [], 3: [r(0, 9)]}, [2]),
]


@pytest.mark.parametrize(("new", "levels", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_placement(new, levels, want) -> None:
    assert place(new, levels, MAX) == want


def test_a_level_never_holds_overlapping_files() -> None:
    """Property: whatever the history, every level >= 1 stays one sorted run."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        levels: dict[int, list] = {}
        for _ in range(rng.randint(1, 30)):
            lo = rng.randint(0, 50)
            new = [r(lo, lo + rng.randint(0, 10))]
            (level,) = place(new, levels, MAX)
            assert level >= 1
            levels.setdefault(level, []).append(new[0])
        for ranges in levels.values():
            ordered = sorted((lo[0], hi[0]) for lo, hi in ranges)
            assert all(a[1] < b[0] for a, b in zip(ordered, ordered[1:]))


SORTED_LOADS = [
    # (new files of one bucket, the bucket's ranges by level, expected level of them all)
    ("empty bucket: the bottom", [r(1, 5), r(6, 9), r(10, 20)], {}, MAX),
    ("one file stays at level 0", [r(1, 5)], {}, 0),
    ("files in any order", [r(10, 20), r(1, 5)], {}, MAX),
    ("new files that overlap each other: level 0", [r(1, 5), r(5, 9)], {}, 0),
    ("a key range nothing holds: the bottom", [r(10, 15), r(16, 20)], {0: [r(1, 5)], MAX: [r(30, 40)]}, MAX),
    ("meets a level-0 file: level 0", [r(10, 15), r(16, 20)], {0: [r(15, 16)]}, 0),
    ("meets the bottom level: level 0", [r(10, 15), r(16, 20)], {MAX: [r(20, 30)]}, 0),
    ("meets a middle level: level 0", [r(10, 15), r(16, 20)], {2: [r(0, 10)]}, 0),
    ("a bucket deeper than num-levels: its deepest level", [r(1, 2), r(3, 4)], {MAX + 2: [r(5, 9)]}, MAX + 2),
    ("empty levels do not count", [r(1, 2), r(3, 4)], {MAX + 2: []}, MAX),
]


@pytest.mark.parametrize(("new", "levels", "want"), [c[1:] for c in SORTED_LOADS], ids=[c[0] for c in SORTED_LOADS])
def test_sorted_load_placement(new, levels, want) -> None:
    assert place_sorted_load(new, levels, MAX) == want
