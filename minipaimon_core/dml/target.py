"""What a row-level change read: :class:`Target` (the rows of one snapshot, and for append
tables the files they came from), built by :func:`minipaimon_core.dml.dml.read_target` and
written by :mod:`minipaimon_core.dml.dml_write`. Plain data: it imports no other dml module,
so the reader and the writer of a change both depend on it and not on each other."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ..format.manifest_file import DataFileMeta
from ..format.snapshot import Snapshot
from ..read.scan import Split


@dataclass
class Target:
    """The rows a change reads from snapshot ``snapshot``: ``rows`` in the table's schema.
    Append tables: the live rows of the files that may hold a selected row, file
    ``files[i]`` holding rows ``offsets[i]:offsets[i + 1]``; with deletion vectors,
    ``positions[i]`` are those rows' positions in the file (None: every row, in order) and
    ``vectors[i]`` the fingerprint of its vector (append_vectors.fingerprint). Primary-key
    tables: merged rows."""

    snapshot: Snapshot | None
    rows: pa.Table
    files: list[tuple[Split, DataFileMeta]] = field(default_factory=list)
    offsets: list[int] = field(default_factory=lambda: [0])
    positions: list[np.ndarray | None] = field(default_factory=list)
    vectors: list[int] = field(default_factory=list)

    def add_file(self, split: Split, f: DataFileMeta, part: AppendFileRows) -> None:
        self.files.append((split, f))
        self.offsets.append(self.offsets[-1] + part.rows.num_rows)
        self.positions.append(part.positions)
        self.vectors.append(part.vector)


@dataclass(frozen=True)
class AppendFileRows:
    """The live rows of one append file, their positions in it (None: all rows) and the
    fingerprint of its deletion vector (0: none)."""

    rows: pa.Table
    positions: np.ndarray | None
    vector: int


__all__ = ["AppendFileRows", "Target"]
