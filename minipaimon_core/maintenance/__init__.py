"""Table maintenance: compaction, the post-commit path, snapshot expiration, orphan file
cleanup, rollback, manifest rewrites.

Compaction executes each bucket as a streaming k-way merge (:mod:`.bucket_merge`).
Each operation works on a :class:`~.files.TableFiles` (file IO, layout, snapshot and
manifest readers, schema) and documents the order of its deletions, which is what keeps a
crash or a concurrent reader or writer safe.

May import: every layer below it, up to ``commit/`` (layer order: docs/format.md, "Code
layout"); never the ``table`` facade.
"""

from .expire import ExpireResult, expire_snapshots, maybe_expire
from .files import TableFiles
from .orphans import DEFAULT_SAFE_AGE_MS, OrphanResult, remove_orphan_files
from .rollback import RollbackResult, rollback_to

__all__ = [
    "DEFAULT_SAFE_AGE_MS",
    "ExpireResult",
    "OrphanResult",
    "RollbackResult",
    "TableFiles",
    "expire_snapshots",
    "maybe_expire",
    "remove_orphan_files",
    "rollback_to",
]
