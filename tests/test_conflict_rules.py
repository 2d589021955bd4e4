"""The commit conflict rules as a table of cases: (base live files, compaction) -> outcome.

No table, no files: live entries and messages are built in memory (as delta-rs tests its
``ConflictChecker``). A file is ``name@level[lo..hi]`` in bucket 0 of partition ["p"]
unless a case says otherwise.
"""

from __future__ import annotations

import pickle

import pytest

from minipaimon_core.commit.conflicts import check_compaction, files_still_live, levels_disjoint
from minipaimon_core.errors import CommitConflictError, ConflictReason
from minipaimon_core.format.kinds import CommitKind, EntryKind
from minipaimon_core.format.manifest_file import DataFileMeta, ManifestEntry, SimpleStats
from minipaimon_core.lsm.key_range import find_overlap, key_order, overlaps
from minipaimon_core.metadata.commit_message import CommitMessage, entries_for

PART = ("p",)


def f(spec: str) -> DataFileMeta:
    """``name@level[lo..hi]`` (integer keys), e.g. ``a@1[0..9]``."""
    name, rest = spec.split("@")
    level, keys = rest.split("[")
    lo, hi = keys.rstrip("]").split("..")
    return DataFileMeta(fileName=name, fileSize=1, rowCount=1, minKey=(int(lo),), maxKey=(int(hi),),
                        valueStats=SimpleStats((), (), ()), minSequenceNumber=0,
                        maxSequenceNumber=0, schemaId=0, level=int(level), creationTime=0)


def live(*specs: str, bucket: int = 0) -> list[ManifestEntry]:
    return [ManifestEntry(EntryKind.ADD, PART, bucket, 1, f(s)) for s in specs]


def compaction(before: list[str], after: list[str], bucket: int = 0) -> CommitMessage:
    return CommitMessage(list(PART), "", bucket, 1, compactBefore=[f(s) for s in before],
                         compactAfter=[f(s) for s in after])


CASES = [
    # (base live files, compactions, primary key, expected reason or None)
    ("inputs live, output fills an empty level",
     live("a@0[0..5]", "b@0[3..9]"), [compaction(["a@0[0..5]", "b@0[3..9]"], ["c@4[0..9]"])],
     True, None),
    ("an input was compacted away by someone else",
     live("b@0[3..9]", "x@4[0..9]"), [compaction(["a@0[0..5]", "b@0[3..9]"], ["c@4[0..9]"])],
     True, ConflictReason.FILES_GONE),
    ("an input is live but at another level (moved by a concurrent compaction)",
     live("a@2[0..5]"), [compaction(["a@0[0..5]"], ["c@3[0..5]"])],
     True, ConflictReason.FILES_GONE),
    ("the output overlaps a file left in its level",
     live("a@0[0..5]", "k@2[4..7]"), [compaction(["a@0[0..5]"], ["c@2[0..5]"])],
     True, ConflictReason.LEVEL_OVERLAP),
    ("touching key ranges overlap (both hold the key)",
     live("a@0[0..5]", "k@2[5..7]"), [compaction(["a@0[0..5]"], ["c@2[0..5]"])],
     True, ConflictReason.LEVEL_OVERLAP),
    ("the output replaces the overlapping file it compacts",
     live("a@0[0..5]", "k@2[4..7]"), [compaction(["a@0[0..5]", "k@2[4..7]"], ["c@2[0..7]"])],
     True, None),
    ("disjoint ranges side by side in one level",
     live("a@0[0..5]", "k@2[6..7]"), [compaction(["a@0[0..5]"], ["c@2[0..5]"])],
     True, None),
    ("level 0 may overlap",
     live("a@0[0..5]", "k@0[4..7]"), [compaction(["a@0[0..5]"], ["c@0[0..5]"])],
     True, None),
    ("an overlap in another bucket is not ours",
     live("a@0[0..5]") + live("k@2[4..7]", bucket=1), [compaction(["a@0[0..5]"], ["c@2[0..5]"])],
     True, None),
    ("two messages of one commit overlapping each other",
     live("a@0[0..5]", "b@0[3..9]"),
     [compaction(["a@0[0..5]"], ["c@2[0..5]"]), compaction(["b@0[3..9]"], ["d@2[3..9]"])],
     True, ConflictReason.LEVEL_OVERLAP),
    ("append tables have no key ranges to keep disjoint",
     live("a@0[0..5]", "k@2[4..7]"), [compaction(["a@0[0..5]"], ["c@2[0..5]"])],
     False, None),
    ("append tables still need their inputs live",
     live(), [compaction(["a@0[0..5]"], ["c@0[0..5]"])],
     False, ConflictReason.FILES_GONE),
]


@pytest.mark.parametrize("base, messages, primary_key, expected",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_conflict_rules(base: list[ManifestEntry], messages: list[CommitMessage], primary_key: bool,
                        expected: ConflictReason | None) -> None:
    conflict = check_compaction(base, messages, primary_key)
    assert (conflict.reason if conflict else None) == expected
    if conflict is not None:
        error = conflict.error()
        assert isinstance(error, CommitConflictError) and error.reason == expected
        assert pickle.loads(pickle.dumps(error)).reason == expected  # survives a Spark task


def test_rules_run_in_order_and_name_the_files() -> None:
    """A change with both a gone input and an overlap reports the gone input first."""
    base = live("k@2[4..7]")
    messages = [compaction(["a@0[0..5]"], ["c@2[0..5]"])]
    first = check_compaction(base, messages, True)
    assert first is not None and first.reason == ConflictReason.FILES_GONE and "'a'" in first.message
    overlap = levels_disjoint(base, messages, True)
    assert overlap is not None and "c and k" in overlap.message and "level 2" in overlap.message
    assert files_still_live(live("a@0[0..5]"), messages, True) is None


@pytest.mark.parametrize("specs, expected", [
    ([], None),
    (["a@1[0..5]"], None),
    (["a@1[0..5]", "b@1[6..9]"], None),
    (["b@1[6..9]", "a@1[0..5]", "c@1[5..5]"], ("a", "c")),
    (["a@1[0..9]", "b@1[3..4]"], ("a", "b")),
])
def test_find_overlap(specs: list[str], expected: tuple[str, str] | None) -> None:
    assert find_overlap([f(s) for s in specs]) == expected


def test_key_order_puts_none_first_and_overlaps_is_closed() -> None:
    assert key_order([None]) < key_order([0]) < key_order([1])
    assert key_order([1, None]) < key_order([1, "a"])
    file = f("a@1[3..5]")
    assert overlaps(file, key_order([5]), key_order([9]))
    assert overlaps(file, key_order([0]), key_order([3]))
    assert not overlaps(file, key_order([6]), key_order([9]))
    assert not overlaps(file, key_order([0]), key_order([2]))


def test_entries_for_each_commit_kind() -> None:
    """The pure step before the writes: what each kind of snapshot records."""
    new = CommitMessage(list(PART), "", 0, 1, newFiles=[f("n@0[0..1]")])
    old = live("o@0[0..9]")
    append = entries_for(CommitKind.APPEND, [new], 10)  # primary-key files keep their numbers
    assert [(e.kind, e.file.fileName, e.file.minSequenceNumber) for e in append.entries] == \
        [(EntryKind.ADD, "n", 0)]
    assert append.next_sequence == 10
    ahead = entries_for(CommitKind.APPEND, [new], 0)
    assert ahead.next_sequence == 1  # one above the highest number the snapshot holds
    rows = entries_for(CommitKind.APPEND, [new], 10, primary_key=False)  # append files: numbered on
    assert [(e.file.minSequenceNumber, e.file.maxSequenceNumber) for e in rows.entries] == [(10, 10)]
    assert rows.next_sequence == 11
    overwrite = entries_for(CommitKind.OVERWRITE, [new], 10, old)
    assert [(e.kind, e.file.fileName) for e in overwrite.entries] == \
        [(EntryKind.DELETE, "o"), (EntryKind.ADD, "n")]
    compact = entries_for(CommitKind.COMPACT, [compaction(["o@0[0..9]"], ["c@4[0..9]"])], 10)
    assert [(e.kind, e.file.fileName) for e in compact.entries] == \
        [(EntryKind.DELETE, "o"), (EntryKind.ADD, "c")]
    assert compact.next_sequence == 10  # outputs keep their effective numbers (here 0)
