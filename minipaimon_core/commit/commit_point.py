"""The commit point: creating a snapshot file, and settling what became of the create.

```
 create snapshot-(N+1) if absent ──► False ("exists"): lost, the attempt's files are garbage
        │ True, or the call failed (error, timeout: the outcome unknown)
        ▼
 look (SnapshotManager.settle): the id's expiry marker, the snapshot file
        ├─ ours, under an unmarked id, or the marker names ours ──► committed
        ├─ ours, the marker names another snapshot (created below the latest in an id
        │  expired before) ──► delete it: lost
        ├─ another snapshot, or none and no marker of ours ──► lost
        └─ the store fails ──► look again (capped backoff) until the commit's deadline,
                               at least OUTCOME_LOOK_SECONDS; then CommitOutcomeUnknownError
```

From the create call on, the attempt is *in doubt* until it is known lost: nothing it
references may be deleted (a committer that cleaned up after an error there deleted the
manifests of a commit that had landed; issue 32). An interrupt (KeyboardInterrupt) leaves
it in doubt.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterable

from ..errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    ConflictReason,
    MiniPaimonError,
    StorageError,
)
from ..format import snapshot as snapshot_codec
from ..format.layout import TableLayout
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..metadata.snapshot_manager import SnapshotManager

# The least time a committer keeps looking for the outcome of a create the store did not
# answer before it raises CommitOutcomeUnknownError (it also looks until commit.timeout).
OUTCOME_LOOK_SECONDS = 60


AGED_MS = 2000  # a commit losing the race for longer than this waits at most AGED_WAIT_MS
AGED_WAIT_MS = 200


def retry_wait(attempt: int, min_ms: float, max_ms: float, trying_ms: float = 0) -> float:
    """Milliseconds to wait before retry ``attempt`` (1-based) of a commit that has been
    trying for ``trying_ms``.

    Exponential from ``min_ms``, capped at ``max_ms``, times a jitter in [0.5, 1.5) that
    never passes ``max_ms`` (``commit.max-retry-wait`` is a bound), so contenders spread
    out and the losers of a crowd drop out for a while (throughput);
    but a commit trying for longer than AGED_MS waits at most AGED_WAIT_MS: it keeps
    retrying at a steady rate while the young ones back off for up to seconds, so no
    commit waits without bound while others land (issue 32: one commit of 8 writers lost
    37 times in 80 s while the others' p95 was 90 ms). Not faster than that: aged commits
    retrying at the minimum wait flood the store and every commit slows."""
    base = min(max_ms, min_ms * 2 ** min(attempt, 20))
    wait = random.uniform(max(min_ms, base / 2), min(max_ms, base * 1.5))
    if trying_ms > AGED_MS:
        wait = random.uniform(min_ms, max(min_ms, min(wait, AGED_WAIT_MS)))
    return wait


def gave_up(root: str, attempts: int, seconds: float, store_failures: int,
            last_failure: BaseException | None) -> MiniPaimonError:
    """The error of a commit that gave up after ``attempts`` lost creates (none landed, so
    nothing was committed): StorageError when the last one was lost to the store failing the
    create (``last_failure``; nobody else wrote), else CommitConflictError RETRIES_EXHAUSTED."""
    head = f"gave up committing to {root} after {attempts} attempts in {seconds:.1f} s: "
    if last_failure is not None:
        error = StorageError(
            head + f"the store failed to create the snapshot file {store_failures} times (the last: "
            f"{last_failure}); nothing was committed. Retry when the store is healthy")
        error.__cause__ = last_failure
        return error
    also = f" (and the store failed {store_failures} of the attempts)" if store_failures else ""
    return CommitConflictError(
        head + f"other writers kept winning the race for the next snapshot id{also}; raise "
        "'commit.max-retries' / 'commit.timeout' or reduce concurrent writers", ConflictReason.RETRIES_EXHAUSTED)


class CommitPoint:
    """Creates snapshots for one committer and settles each create (module docstring)."""

    def __init__(self, io: FileIO, layout: TableLayout, snapshots: SnapshotManager) -> None:
        self._io = io
        self._layout = layout
        self._snapshots = snapshots
        #: a create was tried and is not known lost: its files may be the table's
        self.in_doubt = False
        #: why the last create was lost when the store failed it (the call raised and the
        #: look found no snapshot of ours), not another writer; None after a lost race
        self.store_failure: BaseException | None = None

    def create(self, snap: Snapshot, deadline: float) -> bool:
        """Create ``snap`` if its id is free; True if it is committed.

        Raises:
            CommitOutcomeUnknownError: the store did not answer the looks until ``deadline``
                (``time.monotonic()``; at least OUTCOME_LOOK_SECONDS from now).
        """
        self.in_doubt = True
        self.store_failure = None
        try:
            created = self._io.write_if_absent(self._layout.snapshot_path(snap.id), snapshot_codec.encode(snap))
        except Exception as e:  # noqa: BLE001 - any failure of the call: the outcome is unknown
            landed = self._look(snap, deadline, e, created=False)
            self.store_failure = None if landed else e
        else:
            if not created:
                self.in_doubt = False
                return False
            landed = self._look(snap, deadline, None, created=True)
        self.in_doubt = landed
        return landed

    def after_landing(self, snap: Snapshot, garbage: Iterable[str]) -> None:
        """Best-effort steps after ``snap`` landed: the hints, and deleting ``garbage``
        (files of the attempt no snapshot references). A failure leaves garbage for orphan
        cleanup and is not raised: the commit stands."""
        self._snapshots.commit_latest_hint(snap.id)
        if snap.id == 1:
            self._snapshots.commit_earliest_hint(1)
        with contextlib.suppress(OSError):
            for path in garbage:
                self._io.delete(path)

    def _look(self, snap: Snapshot, deadline: float, error: BaseException | None, created: bool) -> bool:
        until = max(deadline, time.monotonic() + OUTCOME_LOOK_SECONDS)
        looks = 0
        while True:
            try:
                return self._snapshots.settle(snap, created)
            except OSError as e:  # StorageError too: the store still does not answer
                error = e
            looks += 1
            if time.monotonic() > until:
                raise CommitOutcomeUnknownError(self._layout.root, snap, error)
            time.sleep(retry_wait(looks, 10, 1000) / 1000)


__all__ = ["AGED_MS", "AGED_WAIT_MS", "OUTCOME_LOOK_SECONDS", "CommitPoint", "gave_up", "retry_wait"]
