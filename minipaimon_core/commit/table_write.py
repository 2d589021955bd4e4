"""Writing a table: :class:`TableWrite` (buffer, write files, hand out commit messages) and
:func:`write_and_commit`, the one-commit write of ``Table.write``.

```
TableWrite.write(data) ... prepare_commit() -> [CommitMessage]   files owned by the caller
FileStoreCommit.commit(messages)            -> snapshot           (or abort: files deleted)
```
"""

from __future__ import annotations

import uuid
from typing import Any

from ..dynamic.routing import router_for
from ..errors import InvalidArgumentError
from ..metadata.commit_message import CommitMessage
from ..metadata.context import TableContext
from ..metadata.sequence import SequenceStart, start_of
from ..schema.features import check_writable
from ..write.append_writer import AppendWriter
from ..write.kv_writer import KeyValueWriter
from .commit import FileStoreCommit


class TableWrite:
    """A writer: buffers data, writes files, hands out commit messages. Not thread-safe.

    Ownership of files: a file belongs to this writer until ``prepare_commit`` hands out a
    message listing it; from then on it belongs to the caller, who commits the message or,
    if it was never committed, deletes its files with ``Table.new_commit(user).abort``.
    ``abort`` deletes only what this writer still owns, so it never touches a committed file.
    """

    def __init__(self, ctx: TableContext, commit_user: str, sequence: SequenceStart | None = None,
                 overwrite: bool = False) -> None:
        """``sequence``: where the rows' sequence numbers start (default: the table's next
        number at the latest snapshot; Spark tasks get theirs from the job's writer); dynamic
        buckets are assigned from the table as of that snapshot. ``overwrite``: the messages
        will be committed as an overwrite (dynamic buckets are then assigned afresh, the
        table's index not loaded; committing them otherwise is still correct)."""
        self.commit_user = commit_user
        schema = ctx.schema
        check_writable(schema, ctx.path)
        if schema.primaryKeys:
            start = sequence if sequence is not None else start_of(ctx.manifests, ctx.snapshots.latest())
            router = router_for(ctx, start.snapshot_id, overwrite)
            self._writer: AppendWriter | KeyValueWriter = KeyValueWriter(ctx.io, ctx.layout, schema, start, router)
        else:
            self._writer = AppendWriter(ctx.io, ctx.layout, schema)
        self._ctx = ctx

    def write(self, data: Any) -> None:
        """Write a Table / RecordBatch / RecordBatchReader / pandas DataFrame.

        Raises SchemaMismatchError or InvalidArgumentError for data that does not fit.
        """
        self._writer.write(data)

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush and return picklable commit messages for everything written since the last
        call; the caller owns their files from now on (see the class docs)."""
        return self._writer.prepare_commit()

    def abort(self) -> None:
        """Drop buffered data and delete the files written since the last ``prepare_commit``
        (never handed out, so never committed). Messages already handed out are untouched."""
        self._writer.close()
        owned = self._writer.prepare_commit()  # after close: only files flushed, not handed out
        ctx = self._ctx
        FileStoreCommit(ctx.io, ctx.layout, ctx.schema, self.commit_user).abort(owned)


def write_and_commit(ctx: TableContext, data: Any, mode: str) -> tuple[int | None, list[CommitMessage]]:
    """Write ``data`` and commit it as one snapshot under a fresh commit user; returns the
    snapshot id (None if nothing changed) and the committed messages.

    On failure before the commit the files written are deleted; on a failed commit they
    are deleted only if its snapshot is known not to have landed (an interrupted or unknown
    outcome leaves them: orphan cleanup removes them if it did not land).

    Raises:
        InvalidArgumentError: ``mode`` is not ``append`` or ``overwrite``; data that does
            not fit (or SchemaMismatchError).
        CommitConflictError: the commit could not be applied.
        CommitOutcomeUnknownError: the store did not answer whether the commit landed.
    """
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    user = str(uuid.uuid4())
    writer = TableWrite(ctx, user, overwrite=mode == "overwrite")
    committer = FileStoreCommit(ctx.io, ctx.layout, ctx.schema, user, fresh_user=True, manifests=ctx.manifests,
                                clock=ctx.clock)
    try:
        writer.write(data)
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    try:
        snap_id = committer.commit(messages, 0, overwrite=mode == "overwrite")
    except BaseException:
        if not committer.may_have_landed():  # else they may be the table's: never delete
            committer.abort(messages)
        raise
    return snap_id, messages


__all__ = ["TableWrite", "write_and_commit"]
