"""Universal compaction picking, as Apache Paimon's ``UniversalCompaction``: a pure function.

The sorted runs of one bucket are given newest first: every level-0 file is a run (newest
first), then each non-empty level >= 1 is one run, levels ascending.  :func:`pick` checks,
in order, and returns the first unit found:

1. **Size amplification** (only with at least ``num-sorted-run.compaction-trigger`` runs):
   if ``sum(size of all runs but the last) * 100 >
   compaction.max-size-amplification-percent * size(last run)``, everything is merged
   into the max level (``num-levels - 1``).
2. **Size ratio** (same precondition): starting from the newest run, the next run joins
   while ``candidate_size * (100 + compaction.size-ratio) / 100 >= next_size``
   (compared exactly in integers); a unit needs at least two runs.
3. **Run count**: with more than ``trigger`` runs, the ``len(runs) - trigger + 1`` newest
   runs are candidates, grown further by rule 2's size test; they are always merged.

Output level of a unit of the ``k`` newest runs: the max level if it holds every run, else
the level just above the next run's (``runs[k].level - 1``).  A unit never outputs to
level 0: it then takes in further runs up to and including the first run of a level >= 1,
and outputs to that run's level (to the max level if that takes in every run).

Writes stall (``num-sorted-run.stop-trigger``, default trigger + 3) while a bucket has more
sorted runs than the stop trigger: see :func:`should_stop_writes`.

:func:`pick_for` chooses the strategy (a full compaction, every level-0 run for the
``lookup`` changelog producer, else :func:`pick`). Append tables have no sorted runs:
:func:`pick_append` picks their small files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError
from minipaimon_core.format.options import Options

__all__ = [
    "AppendFile", "CompactUnit", "PickerOptions", "SortedRun", "pick", "pick_append", "pick_for",
    "pick_full", "pick_level0", "pick_minor", "should_stop_writes",
]


@dataclass(frozen=True)
class SortedRun:
    """One sorted run: a level-0 file, or all files of one level >= 1."""

    level: int
    total_size: int
    files: tuple[str, ...] = ()  # opaque ids, passed through


@dataclass(frozen=True)
class CompactUnit:
    """Runs to merge into one run at ``output_level`` (newest first, as given to pick)."""

    output_level: int
    runs: tuple[SortedRun, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """The file ids of all runs of the unit."""
        return tuple(f for run in self.runs for f in run.files)


@dataclass(frozen=True)
class PickerOptions:
    """Options of universal compaction (Paimon names in comments).

    Raises (on construction):
        UnsupportedOptionError: a value out of range (names the option).
    """

    num_levels: int = 6  # num-levels (Paimon: num-sorted-run.compaction-trigger + 1)
    max_size_amplification_percent: int = 200  # compaction.max-size-amplification-percent
    size_ratio: int = 1  # compaction.size-ratio
    num_run_compaction_trigger: int = 5  # num-sorted-run.compaction-trigger
    num_run_stop_trigger: int | None = None  # num-sorted-run.stop-trigger (None: trigger + 3)

    def __post_init__(self) -> None:
        checks = [
            ("num-levels", self.num_levels, 2),
            ("compaction.max-size-amplification-percent", self.max_size_amplification_percent, 0),
            ("compaction.size-ratio", self.size_ratio, 0),
            ("num-sorted-run.compaction-trigger", self.num_run_compaction_trigger, 1),
        ]
        for key, value, minimum in checks:
            if value < minimum:
                raise UnsupportedOptionError(f"option {key!r} must be >= {minimum}")

    def for_levels(self, deepest: int) -> PickerOptions:
        """These options for a bucket whose deepest file is at level ``deepest``: Paimon
        takes the number of levels as the larger of ``num-levels`` and deepest + 1 (files
        placed below the bottom, lsm/placement.py, or written by a writer with more
        levels)."""
        return replace(self, num_levels=max(self.num_levels, deepest + 1))

    @property
    def max_level(self) -> int:
        """The bottom level, ``num_levels - 1``."""
        return self.num_levels - 1

    @property
    def stop_trigger(self) -> int:
        """Sorted runs past which writes wait for compaction (never below the trigger)."""
        stop = self.num_run_stop_trigger
        trigger = self.num_run_compaction_trigger
        return max(trigger, trigger + 3 if stop is None else stop)

    @staticmethod
    def from_options(options: Mapping[str, str]) -> PickerOptions:
        """Parse the Paimon options named in the field comments; absent ones take defaults.

        Raises:
            UnsupportedOptionError: a value is not an integer or out of range.
        """
        typed = Options(options)
        trigger = typed["num-sorted-run.compaction-trigger"]
        return PickerOptions(
            num_levels=typed["num-levels"] or trigger + 1,
            max_size_amplification_percent=typed["compaction.max-size-amplification-percent"],
            size_ratio=typed["compaction.size-ratio"],
            num_run_compaction_trigger=typed["num-sorted-run.compaction-trigger"],
            num_run_stop_trigger=typed["num-sorted-run.stop-trigger"],
        )


def pick(runs: Sequence[SortedRun], opts: PickerOptions) -> CompactUnit | None:
    """Pick the runs to compact now, or None (rules in the module docstring).

    Raises:
        InvalidArgumentError: runs out of order (level 0 first, then levels strictly
            ascending), a level outside ``0..num_levels-1``, or a negative size.
    """
    _check(runs, opts)
    trigger = opts.num_run_compaction_trigger
    if len(runs) >= trigger:
        older = sum(r.total_size for r in runs[:-1])
        if older * 100 > opts.max_size_amplification_percent * runs[-1].total_size:
            return CompactUnit(opts.max_level, tuple(runs))
        unit = _pick_by_size_ratio(runs, opts, 1)
        if unit is not None:
            return unit
    if len(runs) > trigger:
        return _pick_by_size_ratio(runs, opts, len(runs) - trigger + 1)
    return None


def pick_full(runs: Sequence[SortedRun], opts: PickerOptions) -> CompactUnit | None:
    """Everything into the max level; None if there are no runs or there is a single run
    already at the max level.

    Raises:
        InvalidArgumentError: as :func:`pick`.
    """
    _check(runs, opts)
    if not runs or (len(runs) == 1 and runs[0].level == opts.max_level):
        return None
    return CompactUnit(opts.max_level, tuple(runs))


STRATEGIES = ("full", "minor")
"""What an explicit compaction (``Table.compact``, the CLI, SQL, Spark) may ask for."""


def pick_for(runs: Sequence[SortedRun], opts: PickerOptions, *, strategy: str,
             level0: bool) -> CompactUnit | None:
    """The unit of one bucket: :func:`pick_full` for strategy ``full``, :func:`pick_minor`
    for ``minor``; for ``auto`` (after a commit) :func:`pick_level0` if ``level0`` (the
    ``lookup`` changelog producer), else :func:`pick`.

    Raises:
        InvalidArgumentError: as :func:`pick`, or an unknown strategy.
    """
    if strategy == "full":
        return pick_full(runs, opts)
    if strategy == "minor":
        return pick_minor(runs, opts)
    if strategy != "auto":
        raise InvalidArgumentError(f"unknown compaction strategy {strategy!r}: full or minor")
    return pick_level0(runs, opts) if level0 else pick(runs, opts)


@dataclass(frozen=True)
class AppendFile:
    """One data file of an append-table bucket, as :func:`pick_append` sees it."""

    name: str
    size: int
    min_sequence: int


def pick_append(files: Sequence[AppendFile], target_file_size: int, min_file_num: int,
                max_file_num: int, full: bool) -> tuple[str, ...] | None:
    """Names of the files of an append bucket to merge into one, oldest first, or None.

    Candidates are the files smaller than half of ``target_file_size`` (every file if
    ``full``), ordered by their first sequence number; at least ``min_file_num`` of them
    (two if ``full``) are needed, and at most the ``max_file_num`` oldest are taken.
    """
    small = sorted((f for f in files if full or f.size < target_file_size // 2),
                   key=lambda f: f.min_sequence)
    if len(small) < (2 if full else min_file_num):
        return None
    return tuple(f.name for f in small[:max_file_num])


def should_stop_writes(num_runs: int, stop_trigger: int) -> bool:
    """True while a bucket has more sorted runs than ``stop_trigger``: the writer must wait
    for a compaction before writing more (``PickerOptions.stop_trigger``)."""
    return num_runs > stop_trigger


def _pick_by_size_ratio(
    runs: Sequence[SortedRun], opts: PickerOptions, count: int
) -> CompactUnit | None:
    """Grow the ``count`` newest runs by the size-ratio test; a unit if >= 2 runs."""
    size = sum(r.total_size for r in runs[:count])
    while count < len(runs):
        nxt = runs[count].total_size
        if size * (100 + opts.size_ratio) < nxt * 100:
            break
        size += nxt
        count += 1
    return _create_unit(runs, opts.max_level, count) if count > 1 else None


def _create_unit(runs: Sequence[SortedRun], max_level: int, count: int) -> CompactUnit:
    if count == len(runs):
        output = max_level
    else:
        output = max(0, runs[count].level - 1)
    if output == 0:  # never output to level 0: take runs up to the first of a level >= 1
        while count < len(runs):
            count += 1
            if runs[count - 1].level != 0:
                output = runs[count - 1].level
                break
    if count == len(runs):
        output = max_level
    return CompactUnit(output, tuple(runs[:count]))


def _check(runs: Sequence[SortedRun], opts: PickerOptions) -> None:
    previous = 0
    for i, run in enumerate(runs):
        if run.total_size < 0:
            raise InvalidArgumentError(f"sorted run {i} has a negative size {run.total_size}")
        if not 0 <= run.level <= opts.max_level:
            raise InvalidArgumentError(
                f"sorted run {i} is at level {run.level}, outside 0..{opts.max_level} "
                f"('num-levels' = {opts.num_levels})")
        if run.level < previous or (run.level == previous and run.level > 0):
            raise InvalidArgumentError(
                f"sorted runs must be level-0 runs first, then levels strictly ascending; "
                f"run {i} at level {run.level} follows level {previous}")
        previous = run.level


def pick_minor(runs: Sequence[SortedRun], opts: PickerOptions) -> CompactUnit | None:
    """An explicit minor compaction: in a bucket of more than one sorted run, every level-0
    run into level >= 1 (:func:`pick_level0`); None for one run or an empty level 0."""
    if len(runs) < 2 or not any(r.level == 0 for r in runs):
        return None
    return pick_level0(runs, opts)


def pick_level0(runs: Sequence[SortedRun], opts: PickerOptions) -> CompactUnit | None:
    """Every level-0 run into level >= 1 (the ``lookup`` changelog producer compacts new
    data at each commit): the universal pick if it takes every level-0 run, else all
    level-0 runs (plus the next run when it sits at level 1); None when level 0 is empty."""
    count = sum(1 for r in runs if r.level == 0)
    unit = pick(runs, opts)
    if unit is not None and len(unit.runs) >= count:
        return unit
    return _create_unit(runs, opts.max_level, count) if count else None
