"""Exiting a forked child of a process that used Arrow's S3 or Azure client.

Arrow's S3 client must be finalized before exit (``pyarrow.fs`` registers
``ensure_s3_finalized`` with :mod:`atexit`; without it the AWS SDK's static destructors
crash the process). In a child forked while a thread of the parent had an S3 request in
flight, that finalization waits forever for the request's lock, which no thread of the
child will release: the child hung at interpreter exit (issue 32 item 8). A child forked while Arrow's Azure
client had a request in flight hung at exit the same way (measured on Azurite).

The lock cannot be released and the finalization cannot be skipped in-process (the AWS
SDK's static destructors would run), so once this process has used Arrow's S3 client
(:func:`arrow_s3_in_use`), a forked child leaves the interpreter as ``multiprocessing``'s
forked children do: the exit handlers registered in the child run as usual, then this
one flushes logging and the standard streams and ends the process with ``os._exit`` and
the status it was exiting with (``sys.exit``'s code, 1 after an uncaught exception, else
0; a bare ``raise SystemExit(n)`` reads as 0). Exit handlers registered before the fork
(Arrow's S3 finalization among them) do not run in the child.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from typing import Any

_registered = False
_lock = threading.Lock()
_exit_code: list[int] = [0]


def arrow_s3_in_use() -> None:
    """Note that this process uses Arrow's S3 or Azure client (idempotent, cheap)."""
    global _registered
    if _registered:
        return
    with _lock:
        if not _registered:
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _registered = True


def _after_fork_in_child() -> None:
    def exit_without_finalizing() -> None:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, OSError, ValueError):
                stream.flush()
        os._exit(_exit_code[0])

    atexit.register(exit_without_finalizing)
    _track_exit_code()


def _track_exit_code() -> None:
    """Record the status the child exits with: ``sys.exit``'s code, 1 after an uncaught
    exception (what the interpreter itself would return)."""
    real_exit, real_hook = sys.exit, sys.excepthook

    def exit(code: Any = None) -> None:  # noqa: A001 - stands in for sys.exit
        _exit_code[0] = 0 if code is None else code if isinstance(code, int) else 1
        real_exit(code)

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        _exit_code[0] = 1
        real_hook(kind, value, tb)

    sys.exit = exit  # type: ignore[assignment]
    sys.excepthook = excepthook


__all__ = ["arrow_s3_in_use"]
