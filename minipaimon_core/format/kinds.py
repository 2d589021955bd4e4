"""Named kinds, defined once: row kinds, manifest entry kinds, commit kinds, system columns.

The enum values are the on-disk encodings and never change:

===================  ============================================  =========================
enum                 values                                        stored as
===================  ============================================  =========================
:class:`RowKind`     INSERT 0 (+I), UPDATE_BEFORE 1 (-U),          ``_VALUE_KIND`` int8 in data
                     UPDATE_AFTER 2 (+U), DELETE 3 (-D)            files; ``_row_kind`` text
:class:`EntryKind`   ADD 0, DELETE 1                               ``kind`` of a manifest entry
:class:`CommitKind`  APPEND, COMPACT, OVERWRITE                    ``commitKind`` of a snapshot
===================  ============================================  =========================

Members equal (and msgspec encodes them as) their plain values, so files written before these
enums existed read the same.
"""

from __future__ import annotations

from enum import Enum, IntEnum

import pyarrow as pa

#: Hidden column of primary-key data files: the row's sequence number (int64).
SEQUENCE = "_SEQUENCE_NUMBER"
#: Hidden column of primary-key data files: the row's :class:`RowKind` (int8).
VALUE_KIND = "_VALUE_KIND"
#: The hidden columns of data files, never user columns.
SYSTEM_COLUMNS = (SEQUENCE, VALUE_KIND)
#: The user-facing row kind column (changelog reads and writes, diff): :data:`ROW_KIND_NAMES`.
ROW_KIND_COLUMN = "_row_kind"


class RowKind(IntEnum):
    """The kind of a row change (Paimon's ``RowKind``); the value is ``_VALUE_KIND``."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    @property
    def short(self) -> str:
        """The ``_row_kind`` text: ``+I``, ``-U``, ``+U`` or ``-D``."""
        return ROW_KIND_NAMES[self]


#: ``_row_kind`` texts indexed by :class:`RowKind` value.
ROW_KIND_NAMES = ("+I", "-U", "+U", "-D")


def row_kind_names() -> pa.Array:
    """:data:`ROW_KIND_NAMES` as an Arrow string array (``take`` it with ``_VALUE_KIND``)."""
    return pa.array(ROW_KIND_NAMES, pa.string())


class EntryKind(IntEnum):
    """The kind of a manifest entry: a file added to or deleted from a bucket."""

    ADD = 0
    DELETE = 1


class CommitKind(str, Enum):
    """The kind of a snapshot (``commitKind``); a ``str`` equal to its value (Python 3.10 has
    no ``StrEnum``: ``str()`` and f-strings give the value as well)."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


__all__ = [
    "ROW_KIND_COLUMN", "ROW_KIND_NAMES", "SEQUENCE", "SYSTEM_COLUMNS", "VALUE_KIND", "CommitKind",
    "EntryKind", "RowKind", "row_kind_names",
]
