"""Names of bucket directories and postponed data files, and of tags (used by
:mod:`.layout`, which builds every path).

A bucket directory is ``bucket-<n>``, and ``bucket-postpone`` for Paimon 1.x's postponed
rows (bucket -2, :data:`POSTPONE_BUCKET`: rows of a ``bucket`` = -2 table not yet in a real
bucket). A postponed data file is named as Paimon's postpone writers name theirs,
``data--u-<writer>-s-<n>-w-<uuid>-0.<ext>``: Paimon's compaction replays the files of one
writer (the text up to ``-w-``; here one per process) in their creation order. A tag name
is a plain name that may also hold single inner spaces (Paimon's hourly automatic tags are
``2024-03-05 10``).
"""

from __future__ import annotations

import re
import uuid

POSTPONE_BUCKET = -2
POSTPONE_DIR = "postpone"
_WRITER = uuid.uuid4()  # this process, as the writer of its postponed files
TAG_NAME = re.compile(r"(?=.{1,200}$)[A-Za-z0-9_\-.]+(?: [A-Za-z0-9_\-.]+)*", re.DOTALL)  # fullmatch


def bucket_dir_name(bucket: int) -> str:
    """The directory of ``bucket`` (``bucket-<n>``, ``bucket-postpone`` for -2)."""
    return f"bucket-{POSTPONE_DIR if bucket == POSTPONE_BUCKET else bucket}"


def postponed_file_name(extension: str) -> str:
    """A new postponed data file's name (see the module docs)."""
    return f"data--u-{_WRITER}-s-0-w-{uuid.uuid4()}-0.{extension}"


__all__ = ["POSTPONE_BUCKET", "POSTPONE_DIR", "TAG_NAME", "bucket_dir_name", "postponed_file_name"]
