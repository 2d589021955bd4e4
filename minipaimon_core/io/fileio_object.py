"""FileIO on an object store: S3 and S3-compatible stores, Azure Blob Storage / ADLS Gen2.

Two clients, each for what it does best:

* metadata (snapshots, manifests, schemas, hints, tags, consumers: small whole objects) goes
  through ``obstore`` (Rust ``object_store``): a GET, a PUT, a conditional PUT, a LIST;
* data files stream through a native ``pyarrow.fs`` filesystem (multipart upload, ranged
  reads); no data file is copied through Python ``bytes``.

The commit point, :meth:`ObjectStoreFileIO.write_if_absent`, is a PUT with
``If-None-Match: *`` (obstore ``mode="create"``)::

    PUT (create)  --200-->  True
        |--412 / already exists--> GET: same bytes as ours? True (our own retried PUT landed
        |                          first) : False (another writer won the race)
        '--timeout / connection error (outcome unknown)--> GET: present? same bytes : retry
                                   the conditional PUT (bounded); unreadable: StorageError

Fork: obstore's Rust runtime does not survive ``fork()`` (its threads are not copied; a
forked child's call waits on them forever). A child forked after this process used the
object store gets a StorageError at its first metadata call, naming ``spawn`` /
``forkserver``; pyarrow's filesystem (data files) does survive a fork, and such a child
exits promptly (:mod:`minipaimon_core.io.fileio_fork`).

There is no rename anywhere (on S3 a rename is copy + delete and not atomic). ``replace``
(hints, consumer progress) is a plain PUT, which replaces an object atomically.

Before the first conditional create on a bucket, each process checks once that the store
refuses a second create of the same key (:meth:`_check_conditional_create`); a store that
silently accepts it would lose snapshots (apache/paimon#5762), so writing is refused.

Paths are URIs ``<scheme>://<authority>/<key>``; the settings say which bucket (container)
an authority names (an Azure ``abfss`` authority is ``<container>@<account>.dfs...``). Listing a "directory" lists the prefix
``<key>/`` with the delimiter ``/`` (strongly consistent on S3 and Azure); an object's LastModified
is its modification time. Settings (endpoint, credentials) come from an
:class:`ObjectStoreSettings`; no message of this module contains a credential.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, Protocol, TypeVar

import obstore
import pyarrow.fs as pafs
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    NotFoundError,
    PreconditionError,
)

from ..errors import InvalidArgumentError, StorageError, redact_userinfo
from ..format.layout import is_temp_name, temp_name
from .fileio import FileStatus
from .fileio_fork import arrow_s3_in_use

T = TypeVar("T")
_UNKNOWN_OUTCOME_ATTEMPTS = 4
# the error codes of a store whose bucket (container) does not exist
_MISSING_BUCKET = (("NoSuchBucket", "bucket"), ("ContainerNotFound", "container"))


class ObjectStoreSettings(Protocol):
    """How to reach one kind of object store; a new store kind implements this."""

    @property
    def schemes(self) -> tuple[str, ...]:
        """URI schemes of this store kind, the first one canonical (``("s3", "s3a")``)."""
        ...

    def bucket_of(self, authority: str) -> str:
        """The bucket (container) a path's authority names. Raises InvalidArgumentError."""
        ...

    def make_store(self, bucket: str) -> Any:
        """An obstore store for ``bucket``."""
        ...

    def make_arrow_fs(self) -> pafs.FileSystem:
        """A pyarrow filesystem addressing objects as ``<bucket>/<key>``."""
        ...

    def describe(self) -> str:
        """Where the store is, for messages (never a credential)."""
        ...

    def redact(self, text: str) -> str:
        """``text`` with every credential value replaced by ``***``."""
        ...

    def identity(self) -> tuple[str, ...]:
        """Which store this is (for the once-per-process probe cache); no secrets."""
        ...

    def missing_credentials(self, detail: str) -> str | None:
        """What to give when ``detail`` (a client error) says no credentials were found
        (none were given and the store's credential chain came up empty), else None."""
        ...


_probed: dict[tuple[str, ...], bool] = {}
_probe_lock = threading.Lock()
_store_pid: int | None = None  # the process whose obstore runtime the stores use


class ObjectStoreFileIO:
    """FileIO over an object store reached through ``settings``. Thread-safe."""

    def __init__(self, settings: ObjectStoreSettings) -> None:
        self.settings = settings
        self._stores: dict[str, Any] = {}
        self._arrow: pafs.FileSystem | None = None
        self._lock = threading.Lock()

    # -- addressing ----------------------------------------------------------------------------

    def split(self, path: str) -> tuple[str, str]:
        """``<scheme>://authority/key`` -> (bucket, key). Raises InvalidArgumentError."""
        scheme, sep, rest = path.partition("://")
        authority, _, key = rest.partition("/")
        if not sep or scheme.lower() not in self.settings.schemes or not authority:
            raise InvalidArgumentError(
                f"{redact_userinfo(path)!r} is not an object-store path of the form "
                f"{self.settings.schemes[0]}://bucket/key"
            )
        return self.settings.bucket_of(authority), key.strip("/")

    def _store(self, bucket: str) -> Any:
        global _store_pid
        if _store_pid != os.getpid():
            if _store_pid is not None:
                raise StorageError(
                    f"this process was forked from one that had used the object store at "
                    f"{self.settings.describe()}, and its client (obstore's Rust runtime) does "
                    "not survive fork(): start worker processes with the 'spawn' or "
                    "'forkserver' method (multiprocessing.set_start_method('spawn'), or "
                    "multiprocessing.get_context('forkserver')), or open tables only after "
                    "the fork")
            _store_pid = os.getpid()
        with self._lock:
            if bucket not in self._stores:
                self._stores[bucket] = self.settings.make_store(bucket)
            return self._stores[bucket]

    def _fs(self) -> pafs.FileSystem:
        with self._lock:
            if self._arrow is None:
                self._arrow = self.settings.make_arrow_fs()
            fs = self._arrow
        if not isinstance(fs, pafs.LocalFileSystem):
            arrow_s3_in_use()  # a forked child must not hang finalizing it (S3, Azure) at exit
        return fs

    def _call(self, what: str, path: str, fn: Callable[[], T]) -> T:
        """Run one store request; NotFound -> FileNotFoundError, other failures ->
        StorageError with a message free of credentials."""
        try:
            return fn()
        except NotFoundError:
            raise FileNotFoundError(path) from None
        except BaseError as e:
            raise self._error(what, path, e) from None
        except ValueError as e:  # obstore: "Could not parse path" (a '..' or empty segment)
            raise InvalidArgumentError(
                f"{what} {redact_userinfo(path)!r}: not a valid object path "
                f"({str(e).split(chr(10))[0]})") from None

    def _error(self, what: str, path: str, e: BaseException) -> StorageError:
        detail = str(e).split("\n\nDebug source:")[0]
        missing = next((kind for code, kind in _MISSING_BUCKET if code in detail), None)
        no_credentials = self.settings.missing_credentials(detail)
        if missing is not None:
            detail = (f"the {missing} {self.split(path)[0]!r} does not exist: create it first, "
                      f"or fix the path ({detail})")
        elif no_credentials is not None:
            detail = f"{no_credentials} (the client said: {detail})"
        return StorageError(self.settings.redact(f"{what} {path} failed on {self.settings.describe()}: {detail}"))

    # -- whole objects (metadata) -----------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        bucket, key = self.split(path)
        store = self._store(bucket)
        return self._call("reading", path, lambda: bytes(obstore.get(store, key).bytes()))

    def write_bytes(self, path: str, data: bytes) -> None:
        bucket, key = self.split(path)
        store = self._store(bucket)
        self._call("writing", path, lambda: obstore.put(store, key, data))

    def replace(self, path: str, data: bytes) -> None:
        # A plain PUT replaces the whole object atomically: readers see old or new bytes.
        self.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        bucket, key = self.split(path)
        self._check_conditional_create(bucket, key)
        store = self._store(bucket)
        last: BaseException | None = None
        for _ in range(_UNKNOWN_OUTCOME_ATTEMPTS):
            try:
                obstore.put(store, key, data, mode="create")
                return True
            except (AlreadyExistsError, PreconditionError):
                # 412. The client retries transient failures itself, so the object may be
                # our own earlier attempt: only other bytes mean another writer won.
                return self._read_back(store, path, key) == data
            except BaseError as e:  # timeout, reset, 5xx: the PUT may or may not have landed
                last = e
            try:
                current = self._read_back(store, path, key)
            except StorageError:
                continue  # still unreachable: try again, bounded
            if current is not None:
                return current == data
            # absent: our PUT did not land (or is still in flight: then one of the two
            # conditional creates fails with 412 and the read-back decides)
        assert last is not None
        raise self._error("conditional create (outcome unknown) of", path, last)

    def _read_back(self, store: Any, path: str, key: str) -> bytes | None:
        try:
            return self._call("reading back", path, lambda: bytes(obstore.get(store, key).bytes()))
        except FileNotFoundError:
            return None

    def _check_conditional_create(self, bucket: str, key: str) -> None:
        """Once per process and bucket: a second create of one key must be refused.

        The probe object is a hidden temp name beside ``key`` (``layout.temp_name``), deleted
        right after; orphan cleanup removes it should this process die in between.
        Raises StorageError if the store accepted the second create.
        """
        ident = (*self.settings.identity(), bucket)
        with _probe_lock:
            if _probed.get(ident):
                return
            store = self._store(bucket)
            parent = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
            probe = parent + temp_name("probe")
            where = f"{self.settings.schemes[0]}://{bucket}/{probe}"
            self._call("probing conditional create with", where,
                       lambda: obstore.put(store, probe, b"1", mode="create"))
            try:
                obstore.put(store, probe, b"2", mode="create")
                refused = False
            except (AlreadyExistsError, PreconditionError):
                refused = True
            except BaseError as e:
                raise self._error("probing conditional create with", where, e) from None
            finally:
                self._call("deleting probe", where, lambda: obstore.delete(store, probe))
            if not refused:
                raise StorageError(
                    f"the object store at {self.settings.describe()} (bucket {bucket!r}) "
                    "accepted a second conditional create (If-None-Match: *) of one key: "
                    "concurrent commits would silently overwrite each other's snapshots, so "
                    "minipaimon refuses to write there. Use a store with conditional writes "
                    "(AWS S3, MinIO, SeaweedFS, Ceph RGW recent versions, Azure Blob Storage)"
                )
            _probed[ident] = True

    # -- streams (data files) ---------------------------------------------------------------

    def open_output(self, path: str) -> BinaryIO:
        bucket, key = self.split(path)
        return self._fs().open_output_stream(f"{bucket}/{key}")  # type: ignore[return-value]

    def open_input(self, path: str) -> BinaryIO:
        bucket, key = self.split(path)
        try:
            return self._fs().open_input_file(f"{bucket}/{key}")  # type: ignore[return-value]
        except FileNotFoundError:
            raise FileNotFoundError(path) from None

    # -- listing and object attributes ------------------------------------------------------

    def exists(self, path: str) -> bool:
        try:
            self._head(path)
            return True
        except FileNotFoundError:
            return False

    def _head(self, path: str) -> dict[str, Any]:
        bucket, key = self.split(path)
        store = self._store(bucket)
        return self._call("reading attributes of", path, lambda: dict(obstore.head(store, key)))

    def _list(self, directory: str) -> dict[str, Any]:
        bucket, key = self.split(directory)
        store = self._store(bucket)
        prefix = key + "/" if key else ""
        return dict(self._call("listing", directory,
                               lambda: obstore.list_with_delimiter(store, prefix or None)))

    def list_names(self, directory: str) -> list[str]:
        listed = self._list(directory)
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in listed["common_prefixes"]]
        names += [o["path"].rsplit("/", 1)[-1] for o in listed["objects"]]
        return [n for n in names if not is_temp_name(n)]

    def list_files(self, directory: str) -> list[FileStatus]:
        return [
            FileStatus(o["path"].rsplit("/", 1)[-1], int(o["size"]),
                       int(o["last_modified"].timestamp() * 1000))
            for o in self._list(directory)["objects"]
        ]

    def sync(self, paths: Sequence[str]) -> None:
        pass  # an object is durable once its PUT (or multipart completion) answered

    def delete(self, path: str) -> bool:
        bucket, key = self.split(path)
        store = self._store(bucket)
        if not self.exists(path):  # S3 DELETE answers 204 whether or not the key existed
            return False
        try:
            self._call("deleting", path, lambda: obstore.delete(store, key))
        except FileNotFoundError:  # Azure answers 404: deleted meanwhile by another process
            return False
        return True

    def delete_tree(self, directory: str) -> int:
        bucket, key = self.split(directory)
        store = self._store(bucket)
        prefix = key + "/" if key else ""
        paths = [o["path"] for chunk in self._call("listing", directory,
                                                   lambda: list(obstore.list(store, prefix or None)))
                 for o in chunk]
        if paths:
            self._call("deleting", directory, lambda: obstore.delete(store, paths))
        return len(paths)

    def file_size(self, path: str) -> int:
        return int(self._head(path)["size"])

    def modified_time_ms(self, path: str) -> int:
        return int(self._head(path)["last_modified"].timestamp() * 1000)

    def __repr__(self) -> str:
        return f"ObjectStoreFileIO({self.settings.describe()})"
