"""Universal compaction picking as a table of cases: sorted runs in, compact unit out."""

from __future__ import annotations

import pytest

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError
from minipaimon_core.lsm.compaction_picker import (
    AppendFile,
    CompactUnit,
    PickerOptions,
    SortedRun,
    pick,
    pick_append,
    pick_for,
    pick_full,
    pick_level0,
    should_stop_writes,
)


def runs(*spec: tuple[int, int]) -> list[SortedRun]:
    """``(level, size)`` pairs, newest first; file ids name the position."""
    return [SortedRun(level, size, (f"f{i}",)) for i, (level, size) in enumerate(spec)]


def opts(amp: int = 200, ratio: int = 1, trigger: int = 5, levels: int = 5) -> PickerOptions:
    return PickerOptions(num_levels=levels, max_size_amplification_percent=amp,
                         size_ratio=ratio, num_run_compaction_trigger=trigger)


# (id, runs newest first, options, expected (output level, number of newest runs) or None)
CASES = [
    ("no runs", [], opts(), None),
    ("one run", [(0, 10)], opts(trigger=1), None),
    ("below trigger: nothing", [(0, 1), (0, 1), (0, 1), (4, 100)], opts(), None),
    ("size amplification: all to max level",
     [(0, 100), (0, 100), (0, 100), (0, 100), (4, 150)], opts(), (4, 5)),
    ("amplification exactly at the limit does not trigger; ratio does not either",
     [(0, 10), (0, 40), (0, 80), (0, 160), (4, 145)], opts(), None),
    ("size ratio: small newest runs merge, output just above the next run's level",
     [(0, 1), (0, 1), (0, 1), (3, 50), (4, 10_000)], opts(), (2, 3)),
    ("size ratio uses (100 + ratio) percent: 10 <= 9 * 1.2 joins, 10 > 9 * 1.1 does not",
     [(0, 9), (0, 10), (2, 1000), (3, 3000), (4, 100_000)], opts(ratio=20), (1, 2)),
    ("ratio 10: the second run is too big, and the run count is not above the trigger",
     [(0, 9), (0, 10), (2, 1000), (3, 3000), (4, 100_000)], opts(ratio=10), None),
    ("size ratio reaching the last run outputs to the max level",
     [(0, 1), (0, 1), (1, 2), (2, 4), (3, 8)], opts(amp=10_000), (4, 5)),
    ("run count: more runs than the trigger merges len - trigger + 1 newest",
     [(0, 1), (0, 100), (0, 10_000), (0, 10**6), (1, 10**8), (2, 10**10), (4, 10**12)],
     opts(), (1, 5)),
    ("run count: the 3 candidates grow by the size ratio to 4",
     [(0, 10), (0, 20), (0, 25), (0, 50), (2, 10**5), (3, 10**7), (4, 10**9)],
     opts(), (1, 4)),
    ("never output level 0: the unit takes runs up to the first level >= 1",
     [(0, 1), (0, 1), (0, 100), (1, 10_000), (2, 10**6), (4, 10**8)],
     opts(trigger=5), (1, 4)),
    ("all level 0 and run count: extends to every run, max level",
     [(0, 1), (0, 10), (0, 100), (0, 1000), (0, 10_000), (0, 100_000)], opts(), (4, 6)),
    ("Paimon's extreme case: tiny runs over huge ones still output to the max level",
     [(0, 1), (0, 1), (0, 1), (0, 1024), (0, 1024 * 1024)], opts(levels=6), (5, 5)),
    ("max level only, a single run: nothing to do", [(4, 10**9)], opts(trigger=1), None),
    ("one level-0 run over the max level (trigger 2, amplification)",
     [(0, 5), (4, 10)], opts(amp=25, trigger=2), (4, 2)),
    ("one level-0 run over the max level, small enough", [(0, 1), (4, 10)],
     opts(amp=25, trigger=2), None),
    ("level 0 to an empty level just above a higher level",
     [(0, 5), (0, 5), (3, 1000), (4, 10**6)], opts(trigger=3, amp=10_000), (2, 2)),
    ("trigger 1: a lone level-0 file ratio-merges with the next level",
     [(0, 10), (1, 10), (4, 1000)], opts(trigger=1, amp=10_000), (3, 2)),
    ("zero-size runs are ordinary", [(0, 0), (0, 0), (0, 0), (0, 0), (4, 0)], opts(), (4, 5)),
]


@pytest.mark.parametrize(("spec", "options", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_pick(spec: list[tuple[int, int]], options: PickerOptions,
              expected: tuple[int, int] | None) -> None:
    given = runs(*spec)
    unit = pick(given, options)
    if expected is None:
        assert unit is None
        return
    level, count = expected
    assert unit == CompactUnit(level, tuple(given[:count]))
    assert unit.files == tuple(f"f{i}" for i in range(count))


def simulate(sizes_per_flush: list[int], options: PickerOptions) -> list[list[int]]:
    """Flush level-0 files one by one, applying each picked unit; sizes after each flush."""
    state: list[SortedRun] = []
    history = []
    for size in sizes_per_flush:
        state = [SortedRun(0, size), *state]
        unit = pick(state, options)
        if unit is not None:
            merged = SortedRun(unit.output_level, sum(r.total_size for r in unit.runs))
            rest = state[len(unit.runs):]
            assert all(r.level > unit.output_level for r in rest)
            state = [merged, *rest]
        history.append([r.total_size for r in state])
    return history


def test_steady_flushes_stay_bounded() -> None:
    """Many equal flushes: the run count never exceeds the trigger, levels stay ordered."""
    options = opts()
    history = simulate([1] * 200, options)
    assert max(len(h) for h in history) <= options.num_run_compaction_trigger
    assert sum(history[-1]) == 200


def test_pick_full() -> None:
    o = opts()
    assert pick_full([], o) is None
    assert pick_full(runs((4, 100)), o) is None
    assert pick_full(runs((3, 100)), o) == CompactUnit(4, tuple(runs((3, 100))))
    several = runs((0, 1), (0, 2), (4, 100))
    assert pick_full(several, o) == CompactUnit(4, tuple(several))


def test_options_and_stop_trigger() -> None:
    assert PickerOptions.from_options({}) == PickerOptions()
    parsed = PickerOptions.from_options({
        "num-levels": "3", "compaction.max-size-amplification-percent": "50",
        "compaction.size-ratio": "2", "num-sorted-run.compaction-trigger": "4",
        "num-sorted-run.stop-trigger": "6"})
    assert parsed == PickerOptions(3, 50, 2, 4, 6)
    assert PickerOptions().stop_trigger == 8  # trigger + 3
    assert PickerOptions(num_run_compaction_trigger=5, num_run_stop_trigger=2).stop_trigger == 5
    assert not should_stop_writes(8, PickerOptions().stop_trigger)
    assert should_stop_writes(9, PickerOptions().stop_trigger)
    with pytest.raises(UnsupportedOptionError, match="num-levels"):
        PickerOptions.from_options({"num-levels": "1"})
    with pytest.raises(UnsupportedOptionError, match="compaction.size-ratio"):
        PickerOptions.from_options({"compaction.size-ratio": "a lot"})


def test_malformed_runs() -> None:
    with pytest.raises(InvalidArgumentError, match="level 5"):
        pick(runs((5, 1)), opts())
    with pytest.raises(InvalidArgumentError, match="strictly ascending"):
        pick(runs((1, 1), (0, 1)), opts())
    with pytest.raises(InvalidArgumentError, match="strictly ascending"):
        pick(runs((2, 1), (2, 1)), opts())
    with pytest.raises(InvalidArgumentError, match="negative"):
        pick_full(runs((0, -1)), opts())


@pytest.mark.parametrize("spec, strategy, level0, expected", [
    # full wins over the producer: everything into the max level
    ([(0, 1), (4, 100)], "full", True, "full"),
    # lookup producer: every level-0 run goes down although universal picks nothing
    ([(0, 1), (4, 100)], "auto", True, "level0"),
    # otherwise the universal pick (nothing for two small runs over a big one)
    ([(0, 1), (4, 100)], "auto", False, None),
    ([(0, 1), (0, 1), (0, 1), (0, 1), (0, 1)], "auto", False, "universal"),
    # an explicit minor compaction takes level 0 down where universal would wait
    ([(0, 1), (4, 100)], "minor", False, "level0"),
    ([(0, 1), (0, 1), (0, 1)], "minor", False, "level0"),
    # ... and does nothing for one run, or for runs that are all at levels >= 1
    ([(0, 1)], "minor", False, None),
    ([(3, 1), (4, 100)], "minor", False, None),
    ([], "full", False, None),
])
def test_pick_for_chooses_the_strategy(spec: list[tuple[int, int]], strategy: str, level0: bool,
                                       expected: str | None) -> None:
    r, o = runs(*spec), opts()
    by_name = {"full": pick_full(r, o), "level0": pick_level0(r, o), "universal": pick(r, o)}
    got = pick_for(r, o, strategy=strategy, level0=level0)
    assert got == (by_name[expected] if expected else None)
    assert expected is None or got is not None


def test_pick_for_refuses_an_unknown_strategy() -> None:
    with pytest.raises(InvalidArgumentError):
        pick_for(runs((0, 1)), opts(), strategy="medium", level0=False)


def files(*spec: tuple[int, int]) -> list[AppendFile]:
    """``(size, min_sequence)`` pairs; names are ``a<position>``."""
    return [AppendFile(f"a{i}", size, seq) for i, (size, seq) in enumerate(spec)]


@pytest.mark.parametrize("spec, min_num, max_num, full, expected", [
    # fewer small files than compaction.min.file-num: nothing
    ([(10, 1), (10, 2)], 3, 50, False, None),
    # enough small files: oldest first by sequence; a big file (>= target / 2) stays
    ([(10, 3), (60, 1), (10, 2), (10, 1)], 3, 50, False, ("a3", "a2", "a0")),
    # compaction.max.file-num caps the unit at the oldest files
    ([(10, 3), (10, 2), (10, 1)], 2, 2, False, ("a2", "a1")),
    # full: every file (big ones too), two are enough
    ([(60, 2), (70, 1)], 5, 50, True, ("a1", "a0")),
    ([(60, 2)], 5, 50, True, None),
])
def test_pick_append(spec: list[tuple[int, int]], min_num: int, max_num: int, full: bool,
                     expected: tuple[str, ...] | None) -> None:
    assert pick_append(files(*spec), 100, min_num, max_num, full) == expected
