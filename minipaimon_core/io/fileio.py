"""The narrow file IO seam between the table format and a storage system.

Everything the format stores goes through a :class:`FileIO`: metadata (whole-file reads and
writes), data files (streams handed to Parquet), and the one atomic primitive the commit
protocol needs, :meth:`FileIO.write_if_absent`. File formats stay out of this module.

Paths are plain strings; every path is built by :mod:`minipaimon_core.format.layout`.

Failures: a missing file is ``FileNotFoundError`` (and False / [] where documented); any other
failure of the storage (EIO, ENOSPC, EACCES; an object store's 5xx) is a
:class:`~minipaimon_core.errors.StorageError` naming the path, never a raw ``OSError``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, NamedTuple, Protocol, TypeVar

import pyarrow as pa

from ..errors import InvalidArgumentError, StorageError
from ..format.layout import is_temp_name, temp_name
from .pools import chunks, run_all

F = TypeVar("F", bound=Callable[..., Any])


class FileStatus(NamedTuple):
    """One file of a directory listing."""

    name: str
    size: int
    modified_ms: int


class FileIO(Protocol):
    """What the table format needs from a storage system."""

    def read_bytes(self, path: str) -> bytes:
        """Return the whole file. Raises FileNotFoundError if absent."""
        ...

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a new file under a fresh, unique name (data files, manifests)."""
        ...

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data`` unless it exists.

        Returns False, writing nothing, when the file already exists. Either the whole file
        appears or none of it: a reader never sees a partial file. This is the commit point.
        """
        ...

    def replace(self, path: str, data: bytes) -> None:
        """Atomically replace the content of ``path`` (hint files, consumer files); not
        necessarily durable: after a crash the old content may be back."""
        ...

    def open_output(self, path: str) -> BinaryIO:
        """A writable binary stream for a new file with a unique name."""
        ...

    def open_input(self, path: str) -> BinaryIO:
        """A readable, seekable binary stream. Raises FileNotFoundError if absent."""
        ...

    def exists(self, path: str) -> bool: ...

    def list_names(self, directory: str) -> list[str]:
        """Names (not paths) of the entries (files and subdirectories) of ``directory``,
        hidden temp files excluded; [] if it does not exist."""
        ...

    def list_files(self, directory: str) -> list[FileStatus]:
        """The files (not subdirectories) directly in ``directory`` with their size and
        modification time, hidden temp files included (for orphan cleanup); [] if it does
        not exist. One listing call on an object store."""
        ...

    def delete(self, path: str) -> bool:
        """Delete a file; returns False if it did not exist."""
        ...

    def sync(self, paths: Sequence[str]) -> None:
        """Make the files at ``paths`` (written by ``write_bytes`` / ``open_output``, whose
        writes need not be durable) durable, with their directory entries: a committer calls
        it for the files a snapshot references before it creates the snapshot, so a power
        failure cannot leave a committed snapshot naming a lost or empty file. Returns when
        all are durable; a no-op where a write is durable when it returns (object stores)."""
        ...

    def delete_tree(self, directory: str) -> int:
        """Delete ``directory`` and everything under it (a dropped table); returns the
        number of files deleted, 0 if it did not exist."""
        ...

    def file_size(self, path: str) -> int: ...

    def modified_time_ms(self, path: str) -> int: ...


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_all(paths: Sequence[str]) -> None:
    """fsync each file or directory of ``paths``, one after the other."""
    for path in paths:
        _fsync_dir(path)  # an fsync through a read-only descriptor: a file's or a directory's


def _typed(what: str) -> Callable[[F], F]:
    """Turn an ``OSError`` of a LocalFileIO method on a path (its first argument) into a
    StorageError naming it; ``FileNotFoundError`` / ``FileExistsError`` pass (the callers'
    protocol), a NUL in the path is an InvalidArgumentError (not the OS's bare ValueError)."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(self: Any, path: str, *args: Any) -> Any:
            try:
                return fn(self, path, *args)
            except (FileNotFoundError, FileExistsError, StorageError):
                raise
            except OSError as e:
                raise StorageError(f"{what} {path} failed on the local disk: "
                                   f"{e.strerror or e} (errno {e.errno})") from e
            except ValueError as e:
                if "null" not in str(e):
                    raise
                raise InvalidArgumentError(f"{what} {path!r}: a path cannot hold a NUL character") from None
        return call  # type: ignore[return-value]
    return wrap


UNSAFE_NO_FSYNC_ENV = "MINIPAIMON_UNSAFE_NO_FSYNC"

#: bytes an output stream of a local file gathers before a write: Parquet's writer makes a
#: write and asks the position (an lseek) for every page header and page, ~30 system calls
#: for a small file, one of each with the buffer
_WRITE_BUFFER = 1 << 18


def fsync_from_environment() -> bool:
    """Whether a LocalFileIO fsyncs: True unless ``MINIPAIMON_UNSAFE_NO_FSYNC`` is 1 / true.

    Raises InvalidArgumentError for any other non-empty value (a typo must not leave a user
    believing fsync is off, or on)."""
    value = os.environ.get(UNSAFE_NO_FSYNC_ENV, "").strip().lower()
    if value in ("", "0", "false"):
        return True
    if value in ("1", "true"):
        return False
    raise InvalidArgumentError(
        f"{UNSAFE_NO_FSYNC_ENV}={os.environ[UNSAFE_NO_FSYNC_ENV]!r} is not valid: "
        "use 1 or true (commits not fsynced) or 0, false or unset (fsynced, the default)")


class LocalFileIO:
    """FileIO on a local (POSIX) file system.

    ``write_if_absent`` writes a temp file, fsyncs it, then ``os.link``s it to the target
    name: link fails with EEXIST if the target exists, so it is an atomic create-if-absent
    (never a rename over an existing file). The directory is fsynced after the link.
    ``write_bytes`` and ``open_output`` do not fsync: :meth:`sync` makes a commit's files
    durable together, before its snapshot is created.

    ``fsync=False`` (default: on, unless the environment sets ``MINIPAIMON_UNSAFE_NO_FSYNC=1``)
    skips every fsync and :meth:`sync`: commits stay atomic and a killed process loses
    nothing, but a power failure can. For scratch tables and test suites on slow disks.
    """

    def __init__(self, fsync: bool | None = None) -> None:
        self._fsync = fsync_from_environment() if fsync is None else fsync

    @_typed("reading")
    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def _write_temp(self, path: str, data: bytes, durable: bool = True) -> str:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, temp_name(os.path.basename(path)))
        with open(tmp, "wb") as f:
            f.write(data)
            if self._fsync and durable:
                f.flush()
                os.fsync(f.fileno())
        return tmp

    @_typed("writing")
    def write_bytes(self, path: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    @_typed("creating")
    def write_if_absent(self, path: str, data: bytes) -> bool:
        tmp = self._write_temp(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if self._fsync:
            _fsync_dir(os.path.dirname(path))
        return True

    @_typed("replacing")
    def replace(self, path: str, data: bytes) -> None:
        # Atomic (old or new content, never torn) but not fsynced: what is replaced (hints,
        # consumer progress) may be lost in a power failure and is then recomputed.
        tmp = self._write_temp(path, data, durable=False)
        os.replace(tmp, path)

    @_typed("writing")
    def open_output(self, path: str) -> BinaryIO:
        # the directory is made only when a stat finds it missing: a makedirs of an existing
        # one costs a failed mkdir and a stat, a failed open an Arrow error (~30 µs a file
        # of a write into 1,000 new partitions)
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            os.makedirs(directory, exist_ok=True)
        try:
            raw = pa.OSFile(path, "wb")
        except FileNotFoundError:  # removed since the stat (an empty directory cleaned up)
            os.makedirs(directory, exist_ok=True)
            raw = pa.OSFile(path, "wb")
        return pa.BufferedOutputStream(raw, _WRITE_BUFFER)  # type: ignore[return-value]

    @_typed("reading")
    def open_input(self, path: str) -> BinaryIO:
        # A native Arrow file, not a Python one: pyarrow 26 reading Parquet through a Python
        # file object can abort the interpreter at exit ("terminate called ...").
        return pa.OSFile(path, "rb")  # type: ignore[return-value]

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    @_typed("listing")
    def list_names(self, directory: str) -> list[str]:
        try:
            return [n for n in os.listdir(directory) if not is_temp_name(n)]
        except (FileNotFoundError, NotADirectoryError):
            return []

    @_typed("listing")
    def list_files(self, directory: str) -> list[FileStatus]:
        out = []
        try:
            with os.scandir(directory) as entries:
                for e in entries:
                    try:
                        if e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            out.append(FileStatus(e.name, st.st_size, int(st.st_mtime * 1000)))
                    except FileNotFoundError:
                        continue  # deleted while listing
        except (FileNotFoundError, NotADirectoryError):
            return []
        return out

    def rename_directory(self, src: str, dst: str) -> None:
        """Rename a directory (local disk only; object stores have no rename). The target
        must not exist."""
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        os.rename(src, dst)

    def delete_tree(self, directory: str) -> int:
        if not os.path.isdir(directory):
            return 0
        count = sum(len(files) for _, _, files in os.walk(directory))
        shutil.rmtree(directory)
        return count

    @_typed("deleting")
    def delete(self, path: str) -> bool:
        try:
            os.unlink(path)
            return True
        except FileNotFoundError:
            return False

    def sync(self, paths: Sequence[str]) -> None:
        # The files' contents, then each directory once; concurrently (the io pool), so the
        # journal commits the waits together instead of one after the other.
        if not self._fsync or not paths:
            return
        for group in (list(paths), sorted({os.path.dirname(p) for p in paths})):
            try:
                run_all(_fsync_all, chunks(group))
            except FileNotFoundError:
                raise
            except OSError as e:
                raise StorageError(f"syncing {len(group)} files of {os.path.dirname(group[0])} "
                                   f"failed on the local disk: {e.strerror or e} (errno {e.errno})") from e

    @_typed("reading the size of")
    def file_size(self, path: str) -> int:
        return os.path.getsize(path)

    @_typed("reading the time of")
    def modified_time_ms(self, path: str) -> int:
        return int(os.path.getmtime(path) * 1000)
